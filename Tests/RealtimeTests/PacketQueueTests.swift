import Realtime
import XCTest

/// The packet queue between the output thread and the process callback.
final class PacketQueueTests: XCTestCase {
    /// Packets of every length cross every wrap position intact and in order; a full queue
    /// drops and counts.
    func testPacketsWrapIntactAndFullQueueDrops() {
        let q = PacketQueue(minimumCapacity: 256)
        XCTAssertEqual(q.capacity, 256)
        var expected: [[UInt8]] = []
        var next: UInt8 = 0
        for round in 0..<500 {
            let length = 1 + round % 37
            let packet = (0..<length).map { _ in next &+= 1; return next }
            if q.push(packet) { expected.append(packet) }
            if round % 3 != 0, let (a, b) = q.peek() {
                XCTAssertEqual(Array(a) + Array(b), expected.removeFirst())
                q.pop()
            }
        }
        while let (a, b) = q.peek() {
            XCTAssertEqual(Array(a) + Array(b), expected.removeFirst())
            q.pop()
        }
        XCTAssertTrue(expected.isEmpty)
        XCTAssertGreaterThan(q.droppedPackets, 0, "the producer outran the consumer")
        XCTAssertFalse(q.push([UInt8](repeating: 1, count: 300)), "larger than the queue")
    }

    /// The clock anchor returns what was stored last, and nothing before the first store.
    func testClockAnchor() {
        let anchor = ClockAnchor()
        XCTAssertNil(anchor.load())
        anchor.store(frame: 256, microseconds: 1_000_000)
        anchor.store(frame: 512, microseconds: 1_005_333)
        XCTAssertEqual(anchor.load()?.frame, 512)
        XCTAssertEqual(anchor.load()?.microseconds, 1_005_333)
    }
}
