import Foundation
import Realtime
import Synchronization
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

    /// Two threads, as jackvu runs it: a producer pushes 200,000 packets of 1–64 bytes
    /// (a sequence number and bytes derived from it; pushing again while full), the consumer
    /// pops them: every one arrives, intact and in order.
    func testPacketsCrossBetweenTwoThreadsIntactAndInOrder() {
        let q = PacketQueue(minimumCapacity: 1024)
        let total = 200_000
        let done = DispatchSemaphore(value: 0)
        Thread {
            for n in 0..<total {
                let length = 4 + n % 61
                var packet = [UInt8](repeating: 0, count: length)
                withUnsafeBytes(of: UInt32(n).littleEndian) { for i in 0..<4 { packet[i] = $0[i] } }
                for i in 4..<length { packet[i] = UInt8(truncatingIfNeeded: n &* 31 &+ i) }
                while !q.push(packet) { sched_yield() }
            }
            done.signal()
        }.start()
        var received = 0, bad = 0
        let deadline = Date().addingTimeInterval(120)
        while received < total && Date() < deadline {
            guard let (a, b) = q.peek() else { sched_yield(); continue }
            let packet = Array(a) + Array(b)
            let n = packet.count >= 4 ? Int(UInt32(packet[0]) | UInt32(packet[1]) << 8 | UInt32(packet[2]) << 16 | UInt32(packet[3]) << 24) : -1
            var expected = n == received && packet.count == 4 + n % 61
            if expected { for i in 4..<packet.count where packet[i] != UInt8(truncatingIfNeeded: n &* 31 &+ i) { expected = false } }
            if !expected { bad += 1 }
            q.pop()
            received += 1
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(received, total)
        XCTAssertEqual(bad, 0, "packets out of order or damaged")
        XCTAssertNil(q.peek())
    }

    /// Two threads: a writer stores 500,000 anchors (frame n, n × 10 µs) while a reader loads:
    /// every load is a pair stored together (never a torn frame/time), and frames never go
    /// back.
    func testClockAnchorIsNeverTornBetweenTwoThreads() {
        let anchor = ClockAnchor()
        let finished = Atomic<Bool>(false), reading = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread {
            while !reading.load(ordering: .acquiring) { sched_yield() }  // overlap the reader
            for n in 1...500_000 { anchor.store(frame: n, microseconds: UInt64(n) * 10) }
            finished.store(true, ordering: .releasing)
            done.signal()
        }.start()
        var loads = 0, torn = 0, backwards = 0, last = 0
        reading.store(true, ordering: .releasing)
        while !finished.load(ordering: .acquiring) || loads == 0 {
            guard let a = anchor.load() else { continue }
            loads += 1
            if a.microseconds != UInt64(a.frame) * 10 { torn += 1 }
            if a.frame < last { backwards += 1 }
            last = a.frame
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertGreaterThan(loads, 0)
        print("ClockAnchor: \(loads) loads while 500,000 stores ran")
        XCTAssertEqual(torn, 0, "torn anchors in \(loads) loads")
        XCTAssertEqual(backwards, 0)
        XCTAssertEqual(anchor.load()?.frame, 500_000)
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
