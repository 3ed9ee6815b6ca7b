import DSP
import XCTest

/// The gated readings in constant memory (`LoudnessHistogram`, and the meter past its first
/// hour) against the full computation over every block.
final class LoudnessHistogramTests: XCTestCase {
    private func power(_ lufs: Double) -> Double { LoudnessMeter.power(ofLUFS: lufs) }

    /// Programme-like, stepped, two-level, ramped and silence-interrupted block loudness: the
    /// histogram's integrated loudness and range agree with the full computation to 0.01 LU
    /// (the bound; 0.005 LU is the bin width).
    func testAgreesWithTheFullComputationToAHundredthOfALU() {
        var seeded = UInt64(12345)
        func random() -> Double {  // a fixed sequence (xorshift), not the system's
            seeded ^= seeded << 13; seeded ^= seeded >> 7; seeded ^= seeded << 17
            return Double(seeded % 1_000_000) / 1_000_000
        }
        var walk = -23.0
        let signals: [(String, [Double])] = [
            ("programme", (0..<20_000).map { _ in walk = min(-5, max(-60, walk + (random() - 0.5) * 1.5)); return walk }),
            ("stepped", (0..<6000).map { k in [-30, -14, -22, -18, -40][(k / 13) % 5] }),
            ("two levels", (0..<6000).map { k in k % 200 < 100 ? -20 : -36 }),
            ("ramp", (0..<6000).map { k in -60 + Double(k) / 6000 * 50 }),
            ("with silence", (0..<8000).map { k in k % 1000 < 300 ? -120 : -23 + sin(Double(k) / 50) * 6 }),
        ]
        for (name, lufs) in signals {
            let powers = lufs.map(power)
            var h = LoudnessHistogram()
            for p in powers { h.add(p) }
            print("histogram \(name): integrated off by \(abs(h.integrated() - LoudnessMeter.integrated(ofGatingBlocks: powers))) LU, "
                  + "range by \(abs(h.loudnessRange - LoudnessMeter.loudnessRange(ofShortTermPowers: powers))) LU")
            XCTAssertEqual(h.integrated(), LoudnessMeter.integrated(ofGatingBlocks: powers), accuracy: 0.01, name)
            XCTAssertEqual(h.loudnessRange, LoudnessMeter.loudnessRange(ofShortTermPowers: powers), accuracy: 0.01, name)
            XCTAssertEqual(h.blocks, powers.count, name)
        }
        // Nothing, or nothing above the absolute gate.
        var empty = LoudnessHistogram()
        XCTAssertEqual(empty.integrated(), LoudnessMeter.floor)
        XCTAssertEqual(empty.loudnessRange, 0)
        empty.add(power(-80))
        XCTAssertEqual(empty.integrated(), LoudnessMeter.floor)
        // A steady level reads exactly (one bin, its blocks equal).
        var steady = LoudnessHistogram()
        for _ in 0..<1000 { steady.add(power(-23)) }
        XCTAssertEqual(steady.integrated(), -23, accuracy: 1e-9)
        XCTAssertEqual(steady.loudnessRange, 0, accuracy: 1e-9)
        steady.removeAll()
        XCTAssertEqual(steady.count, 0)
        XCTAssertEqual(steady.integrated(), LoudnessMeter.floor)
    }

    /// The meter past its first hour reads the histogram: an hour and two minutes of a signal
    /// stepping between four levels at 8 kHz (fast to make), against the full computation over
    /// the meter's own logged 100 ms blocks (`LoudnessBlocks`).
    func testTheMeterPastItsFirstHourAgreesWithTheFullComputation() {
        let rate = 8000
        let meter = LoudnessMeter(sampleRate: rate, weights: [1])
        var blocks = LoudnessBlocks()
        var cursor = 0
        let n = rate / 10
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: n)
        defer { buffer.deallocate() }
        var phase = 0.0
        let step = 2 * Double.pi * 500 / Double(rate)
        for k in 0..<(3720 * 10) {
            let a = pow(10, [-30.0, -14, -22, -18][(k / 37) % 4] / 20)
            for i in 0..<n {
                buffer[i] = Float(a * sin(phase))
                phase += step
            }
            meter.process(frames: n, from: { _ in UnsafePointer(buffer) })
            meter.takeBlocks(after: &cursor) { power, index in blocks.add(power: power, index: index) }
        }
        XCTAssertFalse(meter.readingsExact, "past the hour: the histogram")
        print("meter past the hour: integrated off by \(abs(meter.integrated - blocks.integrated)) LU, range by \(abs(meter.loudnessRange - blocks.range)) LU")
        XCTAssertEqual(meter.integrated, blocks.integrated, accuracy: 0.01)
        XCTAssertEqual(meter.loudnessRange, blocks.range, accuracy: 0.01)
        meter.reset()
        XCTAssertTrue(meter.readingsExact)
        XCTAssertEqual(meter.integrated, LoudnessMeter.floor)
    }

    /// The coarse distribution: each block in its 1 LU bin from −70 LUFS (the edge's own bin:
    /// −23.0 is in [−23, −22)), blocks below the gate left out, those above the last edge in
    /// the last bin, percentages of the gated blocks.
    func testDistributionInOneLUBins() {
        var h = LoudnessHistogram()
        for (lufs, n) in [(-23.0, 3), (-33.2, 1), (-80.0, 4), (5.0, 1), (-22.999, 5)] {
            for _ in 0..<n { h.add(LoudnessMeter.power(ofLUFS: lufs)) }
        }
        var out = [Float](repeating: -1, count: 70)
        out.withUnsafeMutableBufferPointer { h.distribution(into: $0, binLU: 1) }
        XCTAssertEqual(out[47], 80, accuracy: 1e-4, "−23.0 and −22.999: 8 of the 10 gated blocks")
        XCTAssertEqual(out[36], 10, accuracy: 1e-4, "−33.2")
        XCTAssertEqual(out[69], 10, accuracy: 1e-4, "+5 LUFS in the last bin")
        XCTAssertEqual(out.reduce(0, +), 100, accuracy: 1e-3)
        XCTAssertEqual(out.filter { $0 != 0 }.count, 3)
        h.removeAll()
        out.withUnsafeMutableBufferPointer { h.distribution(into: $0, binLU: 1) }
        XCTAssertEqual(out, [Float](repeating: 0, count: 70))
    }
}
