import DSP
import Outputs
import XCTest

@testable import Analysis

/// The labels of maxima a fault set, on made-up updates (the live test, FaultLabelsLiveTests,
/// provokes xruns and stops sources under a real sine).
final class FaultLabelsTests: XCTestCase {
    /// 1 kHz updates of 1024 frames at 48 kHz, 256-frame periods, a 4096-frame block.
    private func labels() -> FaultLabels {
        FaultLabels(channels: 1, programmes: 1, sampleRate: 48000, periodFrames: 256, blockFrames: 4096)
    }

    private func update(_ l: inout FaultLabels, end: Int, peak: Float, held: inout Float) -> Snapshot {
        var s = Snapshot(channels: 1, barCount: 1)
        held = max(held, peak)
        s.channels[0].truePeakDBTP = peak
        s.channels[0].maxTruePeakDBTP = held
        l.label(&s, through: end)
        return s
    }

    func testAMaximumAFaultSetIsLabelledAndTheCleanOneKept() {
        var l = labels()
        var held: Float = -200
        var end = 0
        // Clean sine at −18 dBTP for 100 updates.
        for _ in 0..<100 {
            end += 1024
            XCTAssertNil(update(&l, end: end, peak: -18, held: &held).channels[0].maxTruePeakFault)
        }
        // An xrun, and a click of −12 dBTP in the next update: labelled, the clean max −18.
        l.fault(.xrun, at: end + 512)
        end += 1024
        let clicked = update(&l, end: end, peak: -12, held: &held)
        XCTAssertEqual(clicked.channels[0].maxTruePeakFault, MaximumFault(cause: .xrun, clean: -18))
        XCTAssertEqual(clicked.maxTruePeakFault(programme: 0), MaximumFault(cause: .xrun, clean: -18))
        // The fault's stretch ends a block and two periods after it; the sine's peaks go on
        // counting for the clean maximum after it.
        for _ in 0..<10 {
            end += 1024
            _ = update(&l, end: end, peak: -17, held: &held)
        }
        XCTAssertEqual(update(&l, end: end + 1024, peak: -17, held: &held).channels[0].maxTruePeakFault, MaximumFault(cause: .xrun, clean: -17))
        end += 1024
        // A louder clean peak takes over: the maximum is the programme's own again.
        end += 1024
        XCTAssertNil(update(&l, end: end, peak: -6, held: &held).channels[0].maxTruePeakFault)
        // A reset (the held maximum falls) starts again.
        held = -200
        end += 1024
        XCTAssertNil(update(&l, end: end, peak: -20, held: &held).channels[0].maxTruePeakFault)
    }

    /// Loudness maxima: the momentary window reaches 0.4 s past the fault, the short-term 3 s;
    /// a connection change labels them but not the peaks (the worker leaves the channel's
    /// peaks out already).
    func testLoudnessWindowsAndConnectionChanges() {
        var l = labels()
        var s = Snapshot(channels: 1, barCount: 1)
        func step(_ end: Int, momentary: Double, shortTerm: Double, peak: Float = -18) -> Snapshot {
            s.programmes[0].loudness.momentary = momentary
            s.programmes[0].loudness.maxMomentary = max(s.programmes[0].loudness.maxMomentary, momentary)
            s.programmes[0].loudness.shortTerm = shortTerm
            s.programmes[0].loudness.maxShortTerm = max(s.programmes[0].loudness.maxShortTerm, shortTerm)
            s.channels[0].truePeakDBTP = peak
            s.channels[0].maxTruePeakDBTP = max(s.channels[0].maxTruePeakDBTP, peak)
            l.label(&s, through: end)
            return s
        }
        for k in 1...50 { _ = step(k * 1024, momentary: -23, shortTerm: -23) }
        l.fault(.connection, at: 50 * 1024, peaks: false)
        // 0.3 s later (updates of 1024 frames go on) the momentary window still holds the step;
        // a peak then is not labelled.
        var end = 50 * 1024
        func until(_ frame: Int) { while end + 1024 < frame { end += 1024; _ = step(end, momentary: -23, shortTerm: -23) } }
        until(50 * 1024 + 14_400)
        end += 1024
        let early = step(end, momentary: -20, shortTerm: -22.5, peak: -10)
        XCTAssertEqual(early.programmes[0].loudness.maxMomentaryFault, MaximumFault(cause: .connection, clean: -23))
        XCTAssertEqual(early.programmes[0].loudness.maxShortTermFault, MaximumFault(cause: .connection, clean: -23))
        XCTAssertNil(early.channels[0].maxTruePeakFault, "a connection change labels no peak")
        // 1 s later the momentary window has passed it; the short-term one has not.
        until(50 * 1024 + 48_000)
        end += 1024
        let later = step(end, momentary: -19, shortTerm: -22)
        XCTAssertNil(later.programmes[0].loudness.maxMomentaryFault)
        XCTAssertEqual(later.programmes[0].loudness.maxShortTermFault?.cause, .connection)
        until(50 * 1024 + 4 * 48_000)
        end += 1024
        let after = step(end, momentary: -19, shortTerm: -21)
        XCTAssertNil(after.programmes[0].loudness.maxShortTermFault)
    }
}

extension FaultLabelsTests {
    /// The updates near a fault of either cause carry it as `blockFault` (the log marks their
    /// blocks), from the fault's update to a block and two periods after it, and no others.
    func testUpdatesNearAFaultOfEitherCauseMarkTheirBlocks() {
        var l = labels()
        var held: Float = -200
        var end = 0
        for _ in 0..<10 {
            end += 1024
            XCTAssertNil(update(&l, end: end, peak: -18, held: &held).blockFault)
        }
        for cause in [FaultCause.connection, .xrun] {
            l.fault(cause, at: end + 512, peaks: cause == .xrun)
            var marked = 0
            for _ in 0..<20 {
                end += 1024
                if let f = update(&l, end: end, peak: -18, held: &held).blockFault {
                    XCTAssertEqual(f, cause)
                    marked += 1
                }
            }
            // 512 frames into the first update, then 4096 + 2 × 256: five more updates reached.
            XCTAssertEqual(marked, 6, "\(cause)")
        }
    }
}

extension FaultLabelsTests {
    /// The audio after the last update (the stop's, which no update labels): a fault labels it
    /// while its reach (the blocks': 4096 + 2 × 256 frames) is in it, and not after.
    func testTheAudioAfterTheLastUpdateTakesAFaultThatReachesIt() {
        var l = labels()
        var held: Float = -200
        var end = 0
        for _ in 0..<10 {
            end += 1024
            _ = update(&l, end: end, peak: -18, held: &held)
        }
        XCTAssertNil(l.tailFault(through: end + 300))
        for cause in [FaultCause.xrun, .connection] {
            l.fault(cause, at: end + 200, peaks: cause == .xrun)
            XCTAssertEqual(l.tailFault(through: end + 300), cause)
            // Four updates on (4096 frames: still within the reach), then one past it.
            for _ in 0..<4 {
                end += 1024
                _ = update(&l, end: end, peak: -18, held: &held)
            }
            XCTAssertEqual(l.tailFault(through: end + 300), cause)
            end += 1024
            _ = update(&l, end: end, peak: -18, held: &held)
            XCTAssertNil(l.tailFault(through: end + 300), "\(cause)")
        }
    }

    /// Updates of 1024 frames with these true peaks (the held maximum rising with them), then a
    /// fault of `cause` noticed at the last one's end: the label of the update after.
    private func labelAfter(_ peaks: [Float], _ cause: FaultCause) -> MaximumFault? {
        var l = labels()
        var held: Float = -200
        var end = 0
        for peak in peaks {
            end += 1024
            _ = update(&l, end: end, peak: peak, held: &held)
        }
        l.fault(cause, at: end, peaks: cause == .xrun)
        return update(&l, end: end + 1024, peak: -18, held: &held).channels[0].maxTruePeakFault
    }

    /// An xrun noticed late (its notification came after the audio it disturbed was published,
    /// as on a loaded machine): the maximum that rose in an earlier update — a click 5 updates
    /// (107 ms) back, beyond the fault's own stretch (a block and two periods) — is labelled
    /// once the xrun is seen, and its update leaves the clean maximum; a maximum older than the
    /// lateness a notification may have (1 s: 48,000 frames) stays the programme's own; a
    /// connection change (marked by the callback in its own cycle) reaches back no further.
    func testALateXrunLabelsTheMaximumItsAudioSetAlready() {
        let steady = [Float](repeating: -18, count: 100)
        let recent = steady + [-12] + [Float](repeating: -18, count: 5)
        XCTAssertGreaterThan(6 * 1024, 4096 + 2 * 256)
        XCTAssertEqual(labelAfter(recent, .xrun), MaximumFault(cause: .xrun, clean: -18))
        XCTAssertGreaterThan(50 * 1024, Int(FaultLabels.xrunLateness * 48000) + 2 * 256)
        XCTAssertNil(labelAfter(steady + [-12] + [Float](repeating: -18, count: 50), .xrun))
        XCTAssertNil(labelAfter(recent, .connection))
    }
}

extension FaultLabelsTests {
    /// Two faults of different causes close together keep each its own reach: a connection
    /// change (peaks left out by the worker) just after an xrun leaves the peak's label the
    /// xrun's; and one noticed after an xrun but lying before it in the audio (the callback
    /// marked it in frames the xrun's notification came after) does not cut the xrun's
    /// momentary reach (0.4 s and two periods: 19,712 frames) short.
    func testFaultsOfTwoCausesKeepTheirOwnReach() {
        var l = labels()
        var s = Snapshot(channels: 1, barCount: 1)
        var end = 0
        func step(peak: Float = -18, momentary: Double = -23) -> Snapshot {
            end += 1024
            s.channels[0].truePeakDBTP = peak
            s.channels[0].maxTruePeakDBTP = max(s.channels[0].maxTruePeakDBTP, peak)
            s.programmes[0].loudness.momentary = momentary
            s.programmes[0].loudness.maxMomentary = max(s.programmes[0].loudness.maxMomentary, momentary)
            l.label(&s, through: end)
            return s
        }
        for _ in 0..<100 { _ = step() }
        l.fault(.xrun, at: end + 100)
        l.fault(.connection, at: end + 1000, peaks: false)
        _ = step()
        // The click in the next update is within the xrun's peak reach (4096 + 2 × 256).
        XCTAssertEqual(step(peak: -12).channels[0].maxTruePeakFault, MaximumFault(cause: .xrun, clean: -18))

        l = labels()
        s = Snapshot(channels: 1, barCount: 1)
        end = 0
        for _ in 0..<100 { _ = step() }
        let x = end + 512
        l.fault(.xrun, at: x)
        l.fault(.connection, at: x - 1024, peaks: false)
        // Up to the update from x + 18,944 through x + 19,968: the connection's momentary reach
        // ends at x + 18,688, the xrun's at x + 19,712.
        while end + 1024 < x + 19_968 { _ = step() }
        XCTAssertEqual(end, x + 18_944)
        let rose = step(momentary: -20)
        XCTAssertEqual(rose.programmes[0].loudness.maxMomentaryFault?.cause, .xrun)
    }
}
