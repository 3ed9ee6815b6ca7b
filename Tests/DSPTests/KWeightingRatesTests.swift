import Foundation
import XCTest

@testable import DSP

/// K-weighting at every rate from 8 to 384 kHz against BS.1770's 48 kHz response: the
/// fitted shelf's residual in dB, and the same band-limited content reading the same
/// integrated loudness through the meter at each rate as at 48 kHz within 0.02 LU (the formula
/// libebur128 and ffmpeg use read an 8 kHz file 0.24 LU louder).
final class KWeightingRatesTests: XCTestCase {
    static let rates = [8000, 11025, 16000, 22050, 32000, 44100, 88200, 96000, 192000, 384000]

    /// The largest departure from the 48 kHz response, 20 Hz to 20 kHz or the Nyquist
    /// frequency, dB.
    private func residual(_ fs: Double, shelf: BiquadCoefficients) -> Double {
        let hp = KWeighting.highPass(sampleRate: fs)
        let high = min(20_000, 0.999 * fs / 2)
        return (0...2000).map { i -> Double in
            let f = 20 * pow(high / 20, Double(i) / 2000)
            return abs(20 * log10(shelf.magnitude(at: f, sampleRate: fs) * hp.magnitude(at: f, sampleRate: fs)) - KWeighting.referenceDB(at: f))
        }.max()!
    }

    func testTheFittedShelfMatchesThe48kHzResponse() {
        XCTAssertEqual(KWeighting.shelf(sampleRate: 48000), KWeighting.formulaShelf(sampleRate: 48000), "48 kHz: BS.1770's own")
        var lines: [String] = []
        for fs in KWeightingRatesTests.rates.map(Double.init) {
            let fitted = residual(fs, shelf: KWeighting.shelf(sampleRate: fs))
            let formula = residual(fs, shelf: KWeighting.formulaShelf(sampleRate: fs))
            lines.append("\(Int(fs)) Hz: \(String(format: "%.4f", fitted)) dB (the formula's \(String(format: "%.4f", formula)))")
            XCTAssertLessThan(fitted, fs < 11025 ? 0.03 : 0.01, "\(fs) Hz")
            XCTAssertLessThan(fitted, formula, "\(fs) Hz: no worse than the formula")
        }
        print("K-weighting residual against 48 kHz: " + lines.joined(separator: "; "))
    }

    /// 40 tones of equal amplitude, log-spaced from 25 Hz to 0.45 fs or 20 kHz (pink-like),
    /// with fixed random phases, 1 s, at `fs`.
    private func tones(_ fs: Int, upTo high: Double) -> [Float] {
        var phases: [Double] = []
        var seed: UInt64 = 0x2545F4914F6CDD1D
        for _ in 0..<40 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            phases.append(Double(seed >> 11) / Double(1 << 53) * 2 * Double.pi)
        }
        var out = [Double](repeating: 0, count: fs)
        for t in 0..<40 {
            let f = 25 * pow(high / 25, Double(t) / 39)
            let w = 2 * Double.pi * f / Double(fs)
            let (cw, sw) = (cos(w), sin(w))
            var (re, im) = (cos(phases[t]), sin(phases[t]))
            for i in 0..<fs {
                out[i] += 0.01 * im
                (re, im) = (re * cw - im * sw, re * sw + im * cw)
            }
        }
        return out.map(Float.init)
    }

    private func integrated(_ x: [Float], _ fs: Int) -> Double {
        let m = LoudnessMeter(sampleRate: fs, weights: [1])
        x.withUnsafeBufferPointer { b in m.process(frames: b.count) { _ in b.baseAddress! } }
        return m.integrated
    }

    func testTheSameContentReadsTheSameLoudnessAtEveryRate() {
        var lines: [String] = []
        var references: [Double: Double] = [:]
        for fs in KWeightingRatesTests.rates {
            let high = min(0.45 * Double(fs), 20_000)
            let reference = references[high] ?? integrated(tones(48000, upTo: high), 48000)
            references[high] = reference
            let reading = integrated(tones(fs, upTo: high), fs)
            lines.append("\(fs) Hz: \(String(format: "%+.4f", reading - reference)) LU")
            XCTAssertEqual(reading, reference, accuracy: 0.02, "\(fs) Hz against 48 kHz")
        }
        print("K-weighting: the same content against 48 kHz: " + lines.joined(separator: "; "))
    }
}
