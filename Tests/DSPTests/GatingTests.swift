import Foundation
import XCTest

@testable import DSP

/// Signals whose answer depends on each gate and percentile, with the answers computed here
/// independently of the meter (a mean of the powers that a gate lets through, a sorted list's
/// MATLAB-indexed percentile): a −8 or −12 LU relative gate instead of −10, a −72 LUFS absolute
/// gate instead of −70, an LRA relative gate of −25 instead of −20, or the 15th percentile
/// instead of the 10th would each fail here, though the EBU cases cannot tell them apart.
/// Then `--gating`'s three forms through the meter on a sine of two levels.
final class GatingTests: XCTestCase {
    private func p(_ lufs: Double) -> Double { pow(10, (lufs + 0.691) / 10) }
    private func lufs(_ power: Double) -> Double { -0.691 + 10 * log10(power) }
    private func repeated(_ levels: [Double], _ n: Int) -> [Double] { levels.flatMap { Array(repeating: p($0), count: n) } }
    /// BS.1770's gating written out plainly: blocks above `absolute`, then above the mean of
    /// those `relative` LU down.
    private func gated(_ blocks: [Double], absolute: Double = -70, relative: Double) -> Double {
        let a = blocks.filter { lufs($0) > absolute }
        let threshold = lufs(a.reduce(0, +) / Double(a.count)) + relative
        let r = a.filter { lufs($0) > threshold }
        return lufs(r.reduce(0, +) / Double(r.count))
    }

    /// Three levels, −20, −33 and −35.5 LUFS, 100 blocks each: the mean of all is −24.5 LUFS, so
    /// a −10 LU gate (−34.5) keeps −20 and −33, a −8 LU gate (−32.5) only −20, a −12 LU gate
    /// (−36.5) all three.
    func testTheRelativeGateIsTenLUBelow() {
        let blocks = repeated([-20, -33, -35.5], 100)
        let expected = lufs((p(-20) + p(-33)) / 2)
        XCTAssertEqual(LoudnessMeter.integrated(ofGatingBlocks: blocks), expected, accuracy: 1e-9)
        XCTAssertEqual(gated(blocks, relative: -10), expected, accuracy: 1e-9, "the plain computation agrees")
        // What the wrong gates would read: each at least 0.4 LU away.
        XCTAssertGreaterThan(abs(gated(blocks, relative: -8) - expected), 0.4)
        XCTAssertGreaterThan(abs(gated(blocks, relative: -12) - expected), 0.4)
        // A settable relative gate (`--gating relative:LU`) is that gate.
        XCTAssertEqual(LoudnessMeter.integrated(ofGatingBlocks: blocks, relativeLU: -12), gated(blocks, relative: -12), accuracy: 1e-9)
        XCTAssertEqual(LoudnessMeter.integrated(ofGatingBlocks: blocks, relativeLU: -8), lufs(p(-20)), accuracy: 1e-9)
        // Past the first hour the histogram answers, with the same gates.
        var h = LoudnessHistogram()
        for x in blocks { h.add(x) }
        XCTAssertEqual(h.integrated(), expected, accuracy: 0.01)
        XCTAssertEqual(h.integrated(relativeLU: -12), gated(blocks, relative: -12), accuracy: 0.01)
    }

    /// −60, −69 and −71 LUFS, 100 blocks each: the relative gate (about −73.7) lets all
    /// through, so only the −70 LUFS absolute gate leaves −71 out; a −72 LUFS one would not.
    func testTheAbsoluteGateIsMinus70LUFS() {
        let blocks = repeated([-60, -69, -71], 100)
        let expected = lufs((p(-60) + p(-69)) / 2)
        XCTAssertEqual(LoudnessMeter.integrated(ofGatingBlocks: blocks), expected, accuracy: 1e-9)
        XCTAssertGreaterThan(abs(gated(blocks, absolute: -72, relative: -10) - expected), 1)
        // Ungated (BS.1770-1) is the mean of everything.
        var b = LoudnessBlocks()
        for (i, x) in blocks.enumerated() { b.add(power: x, index: i + 1) }
        XCTAssertEqual(b.integrated(.bs1770_1), lufs(blocks.reduce(0, +) / Double(blocks.count)), accuracy: 1e-9)
        XCTAssertEqual(b.integrated(.bs1770_4), b.integrated, accuracy: 1e-12)
    }

    /// MATLAB's percentile of a sorted list (1-based round((n − 1)·p/100 + 1), half away from 0).
    private func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted[Int((Double(sorted.count - 1) * p / 100 + 1).rounded(.toNearestOrAwayFromZero)) - 1]
    }

    /// A ramp of short-term loudness from −40 to −20 LUFS in 0.02 LU steps (1001 values): the
    /// 10th percentile −38.0, the 95th −21.0, LRA 17.0 LU; the 15th would read 16.0, the 90th 16.0.
    func testLoudnessRangeIsThe95thMinusThe10thPercentile() {
        let ramp = (0...1000).map { p(-40 + Double($0) * 0.02) }
        XCTAssertEqual(LoudnessMeter.loudnessRange(ofShortTermPowers: ramp), 17.0, accuracy: 1e-9)
        let sorted = ramp.map(lufs).sorted()
        XCTAssertEqual(percentile(sorted, 95) - percentile(sorted, 10), 17.0, accuracy: 1e-9, "the plain computation agrees")
        XCTAssertEqual(percentile(sorted, 95) - percentile(sorted, 15), 16.0, accuracy: 1e-9)
        var h = LoudnessHistogram()
        for x in ramp { h.add(x) }
        XCTAssertEqual(h.loudnessRange, 17.0, accuracy: 0.01, "the histogram's reading")
    }

    /// The ramp −30 … −20 LUFS (1001 values) and 500 values at −45 LUFS: the LRA's relative gate
    /// (20 LU below the mean of the values above −70: about −45.4) keeps −45, which then is the
    /// 10th percentile; a gate of −19 LU would leave it out (the LRA 5 LU or more smaller).
    /// And the absolute gate: a ramp −69.5 … −60 with values at −70.5 LUFS leaves them out.
    func testTheLoudnessRangeGates() {
        let powers = (0...1000).map { p(-30 + Double($0) * 0.01) } + Array(repeating: p(-45), count: 500)
        func lra(_ xs: [Double], absolute: Double = -70, relative: Double = -20) -> Double {
            let a = xs.filter { lufs($0) >= absolute }
            let threshold = lufs(a.reduce(0, +) / Double(a.count)) + relative
            let sorted = a.filter { lufs($0) >= threshold }.map(lufs).sorted()
            return percentile(sorted, 95) - percentile(sorted, 10)
        }
        let expected = lra(powers)
        XCTAssertEqual(LoudnessMeter.loudnessRange(ofShortTermPowers: powers), expected, accuracy: 1e-9)
        XCTAssertGreaterThan(abs(lra(powers, relative: -19) - expected), 5, "the −45 LUFS values decide the 10th percentile")
        let quiet = (0...950).map { p(-69.5 + Double($0) * 0.01) } + Array(repeating: p(-70.5), count: 300)
        let expectedQuiet = lra(quiet)
        XCTAssertEqual(LoudnessMeter.loudnessRange(ofShortTermPowers: quiet), expectedQuiet, accuracy: 1e-9)
        XCTAssertGreaterThan(abs(lra(quiet, absolute: -71) - expectedQuiet), 0.5)
    }

    /// `--gating` through the meter: a 1 kHz sine, 10 s at −20 dBFS then 10 s at −40 dBFS.
    /// BS.1770 says a 0 dBFS 1 kHz sine on one channel reads −3.01 LKFS, so the halves read
    /// −23.01 and −43.01 LUFS (to the filter's thousandths of a dB at 1 kHz). The expected
    /// readings come from the 400 ms blocks such a signal has (every 100 ms; the three across
    /// the change hold 3/4, 1/2 and 1/4 of the loud half) gated here: BS.1770-4 leaves the quiet
    /// half out (below the mean of about −26.0 less 10 LU), a −25 LU gate keeps it, and
    /// BS.1770-1 (ungated) is the mean power of the whole, −26.0 LUFS.
    func testTheGatingOptionsThroughTheMeter() {
        let fs = 48000
        var x = [Float](repeating: 0, count: 20 * fs)
        for i in x.indices { x[i] = Float((i < 10 * fs ? 0.1 : 0.01) * sin(2 * Double.pi * 1000 * Double(i) / Double(fs))) }
        func measure(_ gating: Gating) -> Double {
            let m = LoudnessMeter(sampleRate: fs, weights: [1])
            m.gating = gating
            x.withUnsafeBufferPointer { b in m.process(frames: b.count) { _ in b.baseAddress! } }
            return m.integrated
        }
        let loud = p(-3.01 - 20.0), quiet = p(-3.01 - 40.0)
        let blocks = (1...197).map { k -> Double in
            let end = 0.3 + 0.1 * Double(k)
            let f = min(1, max(0, (10 - (end - 0.4)) / 0.4))
            return f * loud + (1 - f) * quiet
        }
        XCTAssertEqual(measure(.bs1770_4), gated(blocks, relative: -10), accuracy: 0.01)
        XCTAssertEqual(measure(.relative(-25)), gated(blocks, relative: -25), accuracy: 0.01)
        XCTAssertEqual(measure(.bs1770_1), lufs((loud + quiet) / 2), accuracy: 0.01)
        XCTAssertGreaterThan(abs(gated(blocks, relative: -10) - gated(blocks, relative: -25)), 2, "the two gates differ here")
        XCTAssertEqual(measure(.relative(-10)), measure(.bs1770_4), accuracy: 1e-12)
    }

    func testTheOptionParses() throws {
        XCTAssertEqual(try Gating.parse("bs1770-4"), .bs1770_4)
        XCTAssertEqual(try Gating.parse("BS1770-1"), .bs1770_1)
        XCTAssertEqual(try Gating.parse("ungated"), .bs1770_1)
        XCTAssertEqual(try Gating.parse("relative:-8"), .relative(-8))
        XCTAssertEqual(try Gating.parse("relative:-10"), .bs1770_4)
        XCTAssertEqual(Gating.relative(-8).description, "relative:-8")
        XCTAssertEqual(Gating.relative(-7.5).description, "relative:-7.5")
        for bad in ["relative:5", "relative:-41", "relative:x", "relative:nan", "bs1770-2x", ""] {
            XCTAssertThrowsError(try Gating.parse(bad), bad)
        }
    }
}
