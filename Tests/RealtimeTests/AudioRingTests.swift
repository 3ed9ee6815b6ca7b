#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Realtime
import XCTest

final class AudioRingTests: XCTestCase {
    func testCapacityRoundsUpToPowerOfTwo() {
        XCTAssertEqual(AudioRing(channels: 1, minimumCapacity: 1000).capacity, 1024)
        XCTAssertEqual(AudioRing(channels: 2, minimumCapacity: 1024).capacity, 1024)
        XCTAssertEqual(AudioRing(channels: 1, minimumCapacity: 1).capacity, 1)
    }

    /// Every wrap offset: for each start position in the ring and each block length, the
    /// frames come out as they went in, on every channel, in one or two regions.
    func testEveryWrapOffset() {
        let capacity = 16
        for channels in [1, 3] {
            for start in 0..<capacity {
                for length in 1...capacity {
                    let ring = AudioRing(channels: channels, minimumCapacity: capacity)
                    // Move both indices to `start`.
                    let filler = [Float](repeating: -1, count: capacity)
                    filler.withUnsafeBufferPointer { f in
                        XCTAssertTrue(ring.reserve(frames: start))
                        for c in 0..<channels { ring.copyIn(channel: c, from: f.baseAddress!, frames: start) }
                        ring.commit(frames: start)
                        ring.consume(frames: start)
                    }
                    let blocks = (0..<channels).map { c in (0..<length).map { Float(c * 1000 + $0) } }
                    XCTAssertTrue(ring.reserve(frames: length))
                    for c in 0..<channels {
                        blocks[c].withUnsafeBufferPointer {
                            ring.copyIn(channel: c, from: $0.baseAddress!, frames: length)
                        }
                    }
                    ring.commit(frames: length)
                    XCTAssertEqual(ring.readableFrames, length)
                    for c in 0..<channels {
                        let (first, second) = ring.regions(channel: c, frames: length)
                        XCTAssertEqual(first.count, min(length, capacity - start))
                        XCTAssertEqual(first.count + second.count, length)
                        XCTAssertEqual(Array(first) + Array(second), blocks[c], "start \(start) length \(length)")
                        var out = [Float](repeating: 0, count: length)
                        out.withUnsafeMutableBufferPointer { ring.copyOut(channel: c, into: $0) }
                        XCTAssertEqual(out, blocks[c])
                    }
                    ring.consume(frames: length)
                    XCTAssertEqual(ring.readableFrames, 0)
                    XCTAssertEqual(ring.overruns, 0)
                }
            }
        }
    }

    func testFullRingDropsTheBlockAndCountsIt() {
        let ring = AudioRing(channels: 1, minimumCapacity: 8)
        let block: [Float] = [1, 2, 3, 4, 5]
        XCTAssertTrue(ring.reserve(frames: 5))
        block.withUnsafeBufferPointer { ring.copyIn(channel: 0, from: $0.baseAddress!, frames: 5) }
        ring.commit(frames: 5)
        XCTAssertFalse(ring.reserve(frames: 5))  // only 3 free
        XCTAssertEqual(ring.overruns, 1)
        XCTAssertEqual(ring.overrunFrames, 5)
        XCTAssertEqual(ring.readableFrames, 5)  // what was there is intact
        ring.consume(frames: 5)
        XCTAssertTrue(ring.reserve(frames: 8))
    }

    /// Where the gaps are: blocks dropped back to back leave one gap, at the write index
    /// they were dropped at; a gap after some frames were read and more written is another
    /// place; more places than the ring remembers since the last look: nil.
    func testTheGapsArePlacedWhereTheBlocksWereDropped() {
        let ring = AudioRing(channels: 1, minimumCapacity: 8)
        let block = [Float](repeating: 1, count: 8)
        func write(_ n: Int) -> Bool {
            guard ring.reserve(frames: n) else { return false }
            block.withUnsafeBufferPointer { ring.copyIn(channel: 0, from: $0.baseAddress!, frames: n) }
            ring.commit(frames: n)
            return true
        }
        var seen = 0
        XCTAssertEqual(ring.gaps(since: &seen), [])
        XCTAssertTrue(write(6))
        XCTAssertFalse(write(4))
        XCTAssertFalse(write(4))
        XCTAssertEqual(ring.overruns, 2)
        XCTAssertEqual(ring.gaps(since: &seen), [6])
        XCTAssertEqual(ring.gaps(since: &seen), [])
        ring.consume(frames: 3)
        XCTAssertTrue(write(4))
        XCTAssertFalse(write(4))
        XCTAssertEqual(ring.gaps(since: &seen), [10])
        for _ in 0...AudioRing.gapSlots {
            ring.consume(frames: ring.readableFrames)
            XCTAssertTrue(write(8))
            XCTAssertFalse(write(1))
        }
        XCTAssertNil(ring.gaps(since: &seen), "more places than the ring remembers")
        XCTAssertEqual(ring.gaps(since: &seen), [])
    }

    /// A producer thread writes a counting sequence in blocks of varying size (dropping blocks
    /// when the ring is full, as the process callback does); a consumer thread reads in varying
    /// amounts and sometimes stalls. Sequence number s is split over two channels (low and high
    /// 20 bits), so channel alignment is checked too. Every sample must arrive in order, and
    /// the gaps must add up to the overrun count. JACKVU_STRESS=1 runs it 50 times longer.
    func testTwoThreadStress() {
        let long = ProcessInfo.processInfo.environment["JACKVU_STRESS"] == "1"
        let total = long ? 200_000_000 : 4_000_000
        let ring = AudioRing(channels: 2, minimumCapacity: 4096)
        let done = ManagedAtomicFlag()

        let producer = Thread {
            let low = UnsafeMutablePointer<Float>.allocate(capacity: 1024)
            let high = UnsafeMutablePointer<Float>.allocate(capacity: 1024)
            defer { low.deallocate(); high.deallocate() }
            var next = 0
            var rng: UInt64 = 12345
            while next < total {
                rng = rng &* 6364136223846793005 &+ 1442695040888963407
                let n = min(total - next, 1 + Int(rng >> 54))  // 1 ... 1024
                if ring.reserve(frames: n) {
                    for i in 0..<n {
                        low[i] = Float((next + i) & 0xFFFFF)
                        high[i] = Float((next + i) >> 20)
                    }
                    ring.copyIn(channel: 0, from: low, frames: n)
                    ring.copyIn(channel: 1, from: high, frames: n)
                    ring.commit(frames: n)
                }  // else: dropped and counted by the ring
                next += n
                usleep(20)  // roughly paced, like a period clock
            }
            done.set()
        }

        var received = 0
        var expected = 0  // next sequence number if nothing were dropped
        var gaps = 0
        var orderViolations = 0
        var rng: UInt64 = 999
        let low = UnsafeMutableBufferPointer<Float>.allocate(capacity: 4096)
        let high = UnsafeMutableBufferPointer<Float>.allocate(capacity: 4096)
        defer { low.deallocate(); high.deallocate() }
        producer.start()
        while true {
            let finished = done.isSet
            let available = ring.readableFrames
            if available == 0 {
                if finished { break }
                continue
            }
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let n = min(available, 1 + Int(rng >> 52))  // 1 ... 4096
            if rng >> 59 == 0 { usleep(300) }  // stall now and then so the ring overruns
            ring.copyOut(channel: 0, into: UnsafeMutableBufferPointer(rebasing: low[0..<n]))
            ring.copyOut(channel: 1, into: UnsafeMutableBufferPointer(rebasing: high[0..<n]))
            for i in 0..<n {
                let s = Int(high[i]) << 20 | Int(low[i])
                if s < expected { orderViolations += 1 } else { gaps += s - expected }
                expected = s + 1
            }
            ring.consume(frames: n)
            received += n
        }
        gaps += total - expected  // blocks dropped at the very end
        XCTAssertEqual(orderViolations, 0)
        XCTAssertEqual(gaps, ring.overrunFrames, "every gap is a counted overrun")
        XCTAssertEqual(received + ring.overrunFrames, total)
        XCTAssertGreaterThan(received, total / 100)
        print("ring stress: \(received) frames received, \(ring.overrunFrames) dropped in \(ring.overruns) blocks")
    }
}

/// A flag set by one thread and read by another.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let counter = Counter()
    func set() { counter.store(1) }
    var isSet: Bool { counter.count == 1 }
}

/// A warning that repeats every period is said once per interval, with a count of the rest.
final class RepeatedWarningTests: XCTestCase {
    func testOncePerIntervalWithTheCountHeldBack() {
        var w = RepeatedWarning(seconds: 10)
        let s = 1_000_000_000
        XCTAssertEqual(w.occurred(at: 5 * s), 0, "the first at once")
        XCTAssertNil(w.occurred(at: 5 * s + 1))
        XCTAssertNil(w.occurred(at: 14 * s))
        XCTAssertEqual(w.occurred(at: 15 * s), 2, "ten seconds on, with the two held back")
        XCTAssertNil(w.occurred(at: 24 * s))
        XCTAssertEqual(w.occurred(at: 100 * s), 1)
        // 1000 periods of overload in 5 s: one line.
        var lines = 0
        for i in 0..<1000 where w.occurred(at: 200 * s + i * 5_000_000) != nil { lines += 1 }
        XCTAssertEqual(lines, 1)
    }
}
