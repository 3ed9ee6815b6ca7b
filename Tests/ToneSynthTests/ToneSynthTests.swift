import ToneSynth
import XCTest

final class ToneSynthTests: XCTestCase {
    private func render(_ synth: ToneSynth, _ n: Int, rate: Double = 48000) -> [Float] {
        var out = [Float](repeating: .nan, count: n)
        out.withUnsafeMutableBufferPointer { _ = synth.render(into: $0, sampleRate: rate) }
        return out
    }

    private func maxStep(_ x: [Float]) -> Float {
        zip(x.dropFirst(), x).map { abs($0 - $1) }.max() ?? 0
    }

    /// Start, a chord change and a stop are ramps: no sample-to-sample step larger than the
    /// steepest slope of the sines themselves (A·2πf/fs), which a click (a jump) would exceed.
    func testNoClicksOnStartChangeAndStop() {
        let a = 0.5
        let synth = ToneSynth(rampSeconds: 0.02)
        synth.apply(ToneRequest(frequencies: [440], amplitude: a, generation: 1))
        let start = render(synth, 4800)
        XCTAssertEqual(start[0], 0)
        synth.apply(ToneRequest(frequencies: [660], amplitude: a, generation: 2))
        let change = render(synth, 4800)
        synth.apply(ToneRequest(frequencies: [], amplitude: 0, generation: 3))
        let stop = render(synth, 2400)
        let all = start + change + stop
        let slope = Float(a * 2 * Double.pi * 660 / 48000) * 1.05
        XCTAssertLessThanOrEqual(maxStep(all), slope)
        XCTAssertEqual(stop.suffix(1000).map(abs).max(), 0, "silent after the fade-out")
        // After its ramp the tone is at full amplitude.
        XCTAssertEqual(Double(start.suffix(2000).map(abs).max()!), a, accuracy: 0.001)
    }

    /// The same stop without a ramp would be a jump: check the test can see one.
    func testAnAbruptStopWouldBeSeen() {
        let synth = ToneSynth(rampSeconds: 1 / 48000)  // one-sample "ramp"
        synth.apply(ToneRequest(frequencies: [440], amplitude: 0.5, generation: 1))
        let a = render(synth, 1117)  // stop near a peak of the sine (phase ≈ 1.5 rad)
        synth.apply(ToneRequest(frequencies: [], amplitude: 0, generation: 2))
        let b = render(synth, 100)
        XCTAssertGreaterThan(maxStep(a + b), 0.1)
    }

    func testChordLevelsAndFrequencies() {
        let synth = ToneSynth(rampSeconds: 0.001)
        synth.apply(ToneRequest(frequencies: [220, 330], amplitude: 0.25, generation: 1))
        _ = render(synth, 480)  // past the ramp
        let x = render(synth, 48000)
        let rms = (x.map { Double($0) * Double($0) }.reduce(0, +) / Double(x.count)).squareRoot()
        // Two uncorrelated sines of amplitude A: RMS = A.
        XCTAssertEqual(rms, 0.25, accuracy: 0.001)
        XCTAssertLessThanOrEqual(x.map(abs).max()!, 0.5 + 1e-6)
        // The frequencies: a correlation with each partial (one second: the bins are 1 Hz
        // apart) finds amplitude 0.25 at 220 and 330 Hz and nothing at their neighbours or at
        // 110 Hz (what the sum repeats at).
        func amplitude(_ f: Double) -> Double {
            var c = 0.0, s = 0.0
            for (i, v) in x.enumerated() {
                let phase = 2 * Double.pi * f * Double(i) / 48000
                c += Double(v) * cos(phase)
                s += Double(v) * sin(phase)
            }
            return 2 * (c * c + s * s).squareRoot() / Double(x.count)
        }
        XCTAssertEqual(amplitude(220), 0.25, accuracy: 0.002)
        XCTAssertEqual(amplitude(330), 0.25, accuracy: 0.002)
        for f in [110.0, 219, 221, 329, 331, 440, 550] {
            XCTAssertLessThan(amplitude(f), 0.002, "nothing at \(f) Hz")
        }
    }

    func testSingleSineRMSAndFrequency() {
        let synth = ToneSynth(rampSeconds: 0.001)
        synth.apply(ToneRequest(frequencies: [1000], amplitude: 1, generation: 1))
        _ = render(synth, 480, rate: 44100)
        let x = render(synth, 44100, rate: 44100)
        let rms = (x.map { Double($0) * Double($0) }.reduce(0, +) / Double(x.count)).squareRoot()
        XCTAssertEqual(20 * log10(rms), -3.0103, accuracy: 0.01)
        let upward = zip(x.dropFirst(), x).filter { $1 < 0 && $0 >= 0 }.count
        XCTAssertEqual(upward, 1000, accuracy: 1)
    }
}
