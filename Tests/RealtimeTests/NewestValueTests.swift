import Foundation
import Realtime
import XCTest

/// The one-value mailbox: the newest value wins, a replaced one is reported, a take empties it;
/// across two threads every value taken is one that was put, in order, and none is taken twice.
final class NewestValueTests: XCTestCase {
    func testTheNewestWinsAndAReplacementIsReported() {
        let box = NewestValue<Int>()
        XCTAssertNil(box.take())
        XCTAssertFalse(box.put(1))
        XCTAssertTrue(box.put(2), "1 was not taken")
        XCTAssertEqual(box.take(), 2)
        XCTAssertNil(box.take())
        XCTAssertFalse(box.put(3))
        XCTAssertEqual(box.take(), 3)
    }

    func testTwoThreads() {
        let box = NewestValue<Int>()
        let count = 200_000
        let producer = Thread {
            var replaced = 0
            for i in 1...count where box.put(i) { replaced += 1 }
            _ = replaced
        }
        producer.start()
        var last = 0, taken = 0
        while last < count {
            if let v = box.take() {
                XCTAssertGreaterThan(v, last, "values come in order, each once")
                last = v
                taken += 1
            }
        }
        XCTAssertEqual(last, count, "the last value put is taken")
        XCTAssertGreaterThan(taken, 0)
    }
}
