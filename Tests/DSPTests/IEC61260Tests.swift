import DSP
import Foundation
import XCTest

/// The 1/3-octave bands against IEC 61260-1:2014's class 1 acceptance limits on relative
/// attenuation (Table 1), every band kept at 44.1, 48 and 96 kHz, in both implementations (the
/// double-precision `ThirdOctaveBank` and the SIMD `ThirdOctaveLanes` the live client runs):
/// a sine at each of the table's normalised frequencies Ω, measured as the band's steady-state
/// level relative to the sine's.
///
/// The breakpoints are the standard's octave ones G^x (x = 0, ±1/8, ±1/4, ±3/8, ±1/2, ±1, ±2,
/// ±3, ±4; base ten, G = 10^(3/10)) mapped to a 1/b-octave filter by its formula
/// Ω = 1 + (G^(1/2b) − 1)/(G^(1/2) − 1) · (G^x − 1) for x > 0 and 1/Ω(−x) below the centre.
/// Class 1 limits on the response (−attenuation), dB: inside the band (x ≤ 1/2) at most
/// +0.3; at least −0.3, −0.4, −0.6, −1.3, −5.0 at x = 0, 1/8, 1/4, 3/8, 1/2; just outside the
/// band edge at most −2.0; at x = 1, 2, 3, 4 at most −17.5, −42, −61, −70 (and −70 beyond).
/// Frequencies at or above the input's Nyquist frequency are not tested (the standard's
/// limits for sampled-data filters stop there).
final class IEC61260Tests: XCTestCase {
    private static let G = pow(10, 0.3)
    /// (x, lowest response, highest response) per breakpoint of the upper side.
    private static let limits: [(x: Double, low: Double, high: Double)] = [
        (0, -0.3, 0.3), (1.0 / 8, -0.4, 0.3), (1.0 / 4, -0.6, 0.3), (3.0 / 8, -1.3, 0.3), (1.0 / 2, -5.0, 0.3),
        (1, -.infinity, -17.5), (2, -.infinity, -42), (3, -.infinity, -61), (4, -.infinity, -70),
    ]

    /// Ω for breakpoint x of a 1/3-octave filter (x ≥ 0; the lower side is 1/Ω).
    static func omega(_ x: Double) -> Double {
        let b = 3.0
        return 1 + (pow(G, 1 / (2 * b)) - 1) / (pow(G, 0.5) - 1) * (pow(G, x) - 1)
    }

    func testTheBreakpointsAreTheStandards() {
        // The band edge is G^(1/6) (x = 1/2), and the published one-third-octave ratios.
        XCTAssertEqual(IEC61260Tests.omega(0.5), pow(IEC61260Tests.G, 1.0 / 6), accuracy: 1e-12)
        for (x, ratio) in [(1.0, 1.29437), (2.0, 1.88173), (3.0, 3.05365), (4.0, 5.39195)] {
            XCTAssertEqual(IEC61260Tests.omega(x), ratio, accuracy: 2e-4, "x = \(x)")
        }
    }

    /// Each band's response at each test frequency: `run` measures the levels (dBFS) of all
    /// bands for a sine at `frequency` (peak 1, so 0 dB response reads −3.0103 dBFS).
    private func check(rate: Double, name: String, run: ([(frequency: Double, centre: Double)]) -> [[Float]]) {
        let centres = ThirdOctaveBank(sampleRate: rate).centres
        var tests: [(band: Int, frequency: Double, low: Double, high: Double)] = []
        for (band, fm) in centres.enumerated() {
            for l in IEC61260Tests.limits {
                for side in l.x == 0 ? [1.0] : [1.0, -1.0] {
                    let f = side > 0 ? fm * IEC61260Tests.omega(l.x) : fm / IEC61260Tests.omega(l.x)
                    guard f < rate / 2 * 0.999 else { continue }
                    tests.append((band, f, l.low, l.high))
                    if l.x == 0.5 {  // just outside the edge: at most −2 dB
                        let outside = side > 0 ? f * 1.0001 : f / 1.0001
                        if outside < rate / 2 * 0.999 { tests.append((band, outside, -.infinity, -2.0)) }
                    }
                }
            }
        }
        var worst = (margin: Double.infinity, what: "")
        var failures = 0
        let levels = run(tests.map { ($0.frequency, centres[$0.band]) })
        for (i, t) in tests.enumerated() {
            let response = Double(levels[i][t.band]) + 3.0103
            let margin = min(response - t.low, t.high - response)
            if margin < worst.margin {
                worst = (margin, "band \(t.band) (\(Int(centres[t.band].rounded())) Hz) at \(t.frequency) Hz: \(response) dB in [\(t.low), \(t.high)]")
            }
            if margin < 0 {
                failures += 1
                if failures <= 10 { XCTFail("\(name) at \(rate) Hz: band \(Int(centres[t.band].rounded())) Hz, \(t.frequency) Hz: response \(response) dB, class 1 allows \(t.low) … \(t.high)") }
            }
        }
        print("IEC 61260-1 class 1, \(name) at \(Int(rate)) Hz: \(tests.count) points, smallest margin \(worst.margin) dB (\(worst.what))")
    }

    /// Steady-state levels of a sine at `frequency` for the band at `centre`: settle for six
    /// of the band's time constants (1/bandwidth; at least 0.1 s), then measure over at least
    /// 12 periods of the tone (at least 0.1 s).
    private static func durations(_ frequency: Double, centre: Double, rate: Double) -> (settle: Int, measure: Int) {
        (Int(rate * max(0.1, 6 / (0.2316 * centre))), Int(rate * max(0.1, 12 / frequency)))
    }

    private static func sine(_ frequency: Double, rate: Double, from start: Int, count: Int) -> [Float] {
        (start..<(start + count)).map { Float(sin(2 * Double.pi * frequency * Double($0) / rate)) }
    }

    func testTheDoublePrecisionBankMeetsClass1() {
        for rate in [44100.0, 48000.0, 96000.0] {
            check(rate: rate, name: "ThirdOctaveBank") { points in
                points.map { (f, centre) in
                    var bank = ThirdOctaveBank(sampleRate: rate)
                    let (settle, measure) = IEC61260Tests.durations(f, centre: centre, rate: rate)
                    var levels = [Float](repeating: 0, count: bank.bandCount)
                    IEC61260Tests.sine(f, rate: rate, from: 0, count: settle).withUnsafeBufferPointer { bank.process($0) }
                    levels.withUnsafeMutableBufferPointer { bank.takeLevels(into: $0) }
                    IEC61260Tests.sine(f, rate: rate, from: settle, count: measure).withUnsafeBufferPointer { bank.process($0) }
                    levels.withUnsafeMutableBufferPointer { bank.takeLevels(into: $0) }
                    return levels
                }
            }
        }
    }

    func testTheLanesMeetClass1() {
        for rate in [44100.0, 48000.0, 96000.0] {
            check(rate: rate, name: "ThirdOctaveLanes") { points in
                // Eight tones at once, one per channel lane.
                var out: [[Float]] = []
                for group in stride(from: 0, to: points.count, by: 8) {
                    let some = points[group..<min(group + 8, points.count)]
                    let fs = some.map(\.frequency)
                    var lanes = ThirdOctaveLanes(channels: fs.count, sampleRate: rate)
                    let durations = some.map { IEC61260Tests.durations($0.frequency, centre: $0.centre, rate: rate) }
                    let settle = durations.map(\.settle).max()!, measure = durations.map(\.measure).max()!
                    var levels = [[Float]](repeating: [Float](repeating: 0, count: lanes.bandCount), count: fs.count)
                    for (start, count) in [(0, settle), (settle, measure)] {
                        let tones = fs.map { IEC61260Tests.sine($0, rate: rate, from: start, count: count) }
                        let pointers = tones.map { t in t.withUnsafeBufferPointer { UnsafeMutablePointer(mutating: $0.baseAddress!) } }
                        withExtendedLifetime(tones) {
                            lanes.process(frames: count, from: { UnsafePointer(pointers[$0]) })
                        }
                        lanes.takeLevels { c, b, level in levels[c][b] = level }
                    }
                    out += levels
                }
                return out
            }
        }
    }
}
