import XCTest

@testable import Analysis

/// The server watchdog's logic on a made-up clock (the live test, WatchdogTests, stops a real
/// jackd).
final class ServerWatchdogTests: XCTestCase {
    private let ms = 1_000_000

    func testTheThresholdIsFourPeriodsAtLeastASecondAndAHalf() {
        XCTAssertEqual(ServerWatchdog.threshold(periodSeconds: 256.0 / 48000), 1.5)
        XCTAssertEqual(ServerWatchdog.threshold(periodSeconds: 16384.0 / 48000), 1.5)
        XCTAssertEqual(ServerWatchdog.threshold(periodSeconds: 32768.0 / 48000), 4 * 32768.0 / 48000, accuracy: 1e-12)
        XCTAssertEqual(ServerWatchdog.threshold(periodSeconds: 0), 1.5)
    }

    /// Cycles every 5 ms, then none: stalled once past 1.5 s (not at 1.49 s), said once;
    /// the first cycle clears it, with the stall's length.
    func testStallsOnceAfterTheThresholdAndClearsOnTheFirstCycle() {
        var w = ServerWatchdog(cycles: 0, now: 0)
        var cycles = 0, now = 0
        for _ in 0..<100 {
            now += 5 * ms
            cycles += 1
            XCTAssertNil(w.observe(cycles: cycles, now: now, connected: true, freewheeling: false, periodSeconds: 0.005))
        }
        let last = now
        var changes: [ServerWatchdog.Change] = []
        while now < last + 3000 * ms {
            now += 10 * ms
            if let c = w.observe(cycles: cycles, now: now, connected: true, freewheeling: false, periodSeconds: 0.005) { changes.append(c) }
            if now - last <= 1490 * ms { XCTAssertFalse(w.stalled, "at \(now - last) ns") }
        }
        XCTAssertEqual(changes.count, 1)
        guard case .stalled(let quiet)? = changes.first else { return XCTFail("\(changes)") }
        XCTAssertEqual(quiet, 1.51, accuracy: 0.011)
        XCTAssertTrue(w.stalled)
        now += 10 * ms
        XCTAssertEqual(w.observe(cycles: cycles + 1, now: now, connected: true, freewheeling: false, periodSeconds: 0.005),
                       .responding(seconds: 3.01))
        XCTAssertFalse(w.stalled)
    }

    /// A gone server is not a stalled one (and going away ends a stall); freewheeling never
    /// stalls; a new client has 5 s for its first cycle; a long period stretches the time.
    func testGoneFreewheelingAndLongPeriods() {
        var w = ServerWatchdog(cycles: 5, now: 0)
        for t in 1...300 { XCTAssertNil(w.observe(cycles: 5, now: t * 10 * ms, connected: false, freewheeling: false, periodSeconds: 0.005)) }
        // (A cycle when it is back, then freewheeling.)
        for t in 301...600 { XCTAssertNil(w.observe(cycles: 6, now: t * 10 * ms, connected: true, freewheeling: true, periodSeconds: 0.005)) }
        XCTAssertNil(w.observe(cycles: 6, now: 7400 * ms, connected: true, freewheeling: false, periodSeconds: 0.005))
        XCTAssertNotNil(w.observe(cycles: 6, now: 7600 * ms, connected: true, freewheeling: false, periodSeconds: 0.005))
        XCTAssertEqual(w.observe(cycles: 6, now: 7700 * ms, connected: false, freewheeling: false, periodSeconds: 0.005), .responding(seconds: 1.7))

        // Before a client's first cycle: 5 s.
        var fresh = ServerWatchdog(cycles: 0, now: 0)
        XCTAssertNil(fresh.observe(cycles: 0, now: 4900 * ms, connected: true, freewheeling: false, periodSeconds: 0.005))
        XCTAssertEqual(fresh.observe(cycles: 0, now: 5100 * ms, connected: true, freewheeling: false, periodSeconds: 0.005), .stalled(seconds: 5.1))

        // 32768 frames at 48 kHz: four periods are 2.73 s.
        var long = ServerWatchdog(cycles: 0, now: 0)
        XCTAssertNil(long.observe(cycles: 1, now: 0, connected: true, freewheeling: false, periodSeconds: 32768.0 / 48000))
        XCTAssertNil(long.observe(cycles: 1, now: 2700 * ms, connected: true, freewheeling: false, periodSeconds: 32768.0 / 48000))
        XCTAssertNotNil(long.observe(cycles: 1, now: 2800 * ms, connected: true, freewheeling: false, periodSeconds: 32768.0 / 48000))
    }
}
