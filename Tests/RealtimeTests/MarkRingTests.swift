import Foundation
import Realtime
import XCTest

/// The marks the process callback leaves for the worker where the audio of cycles it missed
/// joins what came before (`MarkRing`).
final class MarkRingTests: XCTestCase {
    private func takeAll(_ ring: MarkRing, _ taken: inout Int, before end: Int = .max) -> [MarkRing.Take] {
        var out: [MarkRing.Take] = []
        while let t = ring.next(after: &taken, before: end) { out.append(t) }
        return out
    }

    /// Marks come out in order, each once, only when before the end asked for; more than the
    /// slots between two takes: the loss first, with the oldest mark still held as its bound,
    /// then the marks held.
    func testMarksInOrderAndTheLossOfTheOldestToldWithItsBound() {
        let ring = MarkRing(slots: 4)
        var taken = ring.count
        XCTAssertNil(ring.next(after: &taken, before: .max))
        for p in [100, 200, 300] { ring.mark(p) }
        XCTAssertEqual(takeAll(ring, &taken, before: 250), [.mark(100), .mark(200)])
        XCTAssertEqual(takeAll(ring, &taken, before: 250), [], "300 is not before 250: it stays")
        XCTAssertEqual(takeAll(ring, &taken), [.mark(300)])
        XCTAssertEqual(taken, 3)
        // Seven more with four slots: 400, 500, 600 are written over.
        for p in stride(from: 400, through: 1000, by: 100) { ring.mark(p) }
        XCTAssertEqual(takeAll(ring, &taken, before: 900), [.lost(before: 700), .mark(700), .mark(800)])
        XCTAssertEqual(takeAll(ring, &taken), [.mark(900), .mark(1000)])
        XCTAssertEqual(taken, ring.count)
    }

    /// Two threads, as jackvu runs it: a marker makes 300,000 marks at increasing positions
    /// (none waits), the taker takes as it can and is held up now and then. Every mark is either taken, exactly
    /// and in order, or lies in a loss's stretch (after the last mark taken, before the loss's
    /// bound); no mark is taken that was not made — a slot read while written over would show
    /// as one out of order or out of place.
    func testEveryMarkIsTakenOrCoveredByALossBetweenTwoThreads() {
        let ring = MarkRing(slots: 8)
        let total = 300_000
        let position: @Sendable (Int) -> Int = { 3 * $0 + 1 }
        let done = DispatchSemaphore(value: 0)
        Thread {
            for n in 0..<total {
                ring.mark(position(n))
                if n % 64 == 0 { sched_yield() }
            }
            done.signal()
        }.start()
        var taken = 0, last = 0, covered = 0, marks = 0, losses = 0, bad = 0
        let deadline = Date().addingTimeInterval(120)
        while taken < total && Date() < deadline {
            guard let t = ring.next(after: &taken, before: .max) else { sched_yield(); continue }
            switch t {
            case .mark(let p):
                // The mark after the last one taken or covered, exactly.
                if p != position(marks + covered) { bad += 1 }
                marks += 1
                last = p
                // The worker is held up now and then (a loaded machine): marks are lost.
                if marks % 997 == 0 { usleep(200) }
            case .lost(let before):
                // Every mark from the next one to `before` (exclusive) is covered.
                let first = marks + covered
                guard before > last, (before - 1) % 3 == 0, (before - 1) / 3 > first else { bad += 1; continue }
                covered += (before - 1) / 3 - first
                losses += 1
            }
        }
        done.wait()
        XCTAssertEqual(bad, 0)
        XCTAssertEqual(marks + covered, total, "every mark taken or covered (\(marks) taken, \(covered) in \(losses) losses)")
        XCTAssertEqual(taken, total)
        XCTAssertGreaterThan(losses, 0, "the taker fell behind at times")
    }
}
