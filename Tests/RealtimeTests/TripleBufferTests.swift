import Foundation
import Realtime
import XCTest

final class TripleBufferTests: XCTestCase {
    func testReaderSeesLatestPublished() {
        let buffer = TripleBuffer { [Int](repeating: 0, count: 4) }
        XCTAssertFalse(buffer.refresh())
        buffer.withBack { $0[0] = 1 }
        buffer.publish()
        buffer.withBack { $0[0] = 2 }
        buffer.publish()
        XCTAssertTrue(buffer.refresh())
        XCTAssertEqual(buffer.withFront { $0[0] }, 2)
        XCTAssertFalse(buffer.refresh())
        XCTAssertEqual(buffer.withFront { $0[0] }, 2)
    }

    /// The writer fills each value with one sequence number throughout; the reader must never
    /// see a torn value (two numbers in one value) and never go backwards.
    func testNoTornOrStaleReadsUnderConcurrency() {
        let size = 256
        let rounds = 200_000
        let buffer = TripleBuffer { [Int](repeating: 0, count: size) }
        let finished = ManagedAtomicFlag()
        let writer = Thread {
            for n in 1...rounds {
                buffer.withBack { v in
                    for i in 0..<size { v[i] = n }
                }
                buffer.publish()
            }
            finished.set()
        }
        writer.start()
        var last = 0
        var torn = 0
        var backwards = 0
        var reads = 0
        while !finished.isSet || buffer.refresh() {
            guard buffer.refresh() else { continue }
            reads += 1
            buffer.withFront { v in
                let n = v[0]
                if v.contains(where: { $0 != n }) { torn += 1 }
                if n < last { backwards += 1 }
                last = n
            }
        }
        buffer.refresh()
        XCTAssertEqual(torn, 0)
        XCTAssertEqual(backwards, 0)
        XCTAssertEqual(buffer.withFront { $0[0] }, rounds)
        XCTAssertGreaterThan(reads, 0)
    }

    func testAtomicFloatArrayAndCounter() {
        let a = AtomicFloatArray(count: 3, initial: 0.5)
        XCTAssertEqual(a[2], 0.5)
        a[1] = -3.25
        XCTAssertEqual(a[1], -3.25)
        let c = Counter()
        c.add()
        c.add(4)
        XCTAssertEqual(c.count, 5)
        c.raise(to: 3)
        XCTAssertEqual(c.count, 5)
        c.raise(to: 9)
        XCTAssertEqual(c.count, 9)
    }

    func testWakeSignal() {
        let s = WakeSignal()
        XCTAssertFalse(s.wait(timeout: 0.01))
        s.signal()
        XCTAssertTrue(s.wait(timeout: 1))
    }
}
