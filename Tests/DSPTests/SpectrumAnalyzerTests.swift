import DSP
import XCTest

/// The original app's own test cases (SpectrumAnalyzerTests.swift in origins/000), kept with
/// their tolerances, plus tighter checks that jackvu's sub-bin interpolation adds.
final class SpectrumAnalyzerTests: XCTestCase {
    private func analyzer(sampleRate: Double, fftSize: Int = 4096) throws -> SpectrumAnalyzer {
        try SpectrumAnalyzer(
            configuration: SpectrumConfiguration(sampleRate: sampleRate, fftSize: fftSize, barCount: 48))
    }

    // MARK: - Peak frequency detection

    func testA440At44100() throws {
        let result = try analyzer(sampleRate: 44100).process(
            TestSignals.sine(frequency: 440, sampleRate: 44100, count: 4096))
        XCTAssertEqual(result.peakFrequency, 440, accuracy: 12)
        XCTAssertEqual(result.note, "A4")
    }

    func testA440At48000() throws {
        let result = try analyzer(sampleRate: 48000).process(
            TestSignals.sine(frequency: 440, sampleRate: 48000, count: 4096))
        XCTAssertEqual(result.peakFrequency, 440, accuracy: 12)
        XCTAssertEqual(result.note, "A4")
    }

    func testMiddleC() throws {
        let result = try analyzer(sampleRate: 44100).process(
            TestSignals.sine(frequency: 261.63, sampleRate: 44100, count: 4096))
        XCTAssertEqual(result.peakFrequency, 261.63, accuracy: 12)
        XCTAssertEqual(result.note, "C4")
        XCTAssertEqual(result.peak?.note?.midi, 60)
    }

    // MARK: - Sample-rate mismatch (regression test)

    func testSampleRateMismatchProducesWrongNote() throws {
        // The bug: analyzer told 44100 while the signal runs at 48000 → 440 Hz reads ~404 Hz.
        let wrong = try analyzer(sampleRate: 44100)
        let result = wrong.process(TestSignals.sine(frequency: 440, sampleRate: 48000, count: 4096))
        XCTAssertNotEqual(result.note, "A4")
        XCTAssertEqual(result.peakFrequency, 440 * 44100 / 48000, accuracy: 1)
    }

    func testCorrectSampleRateFixesNote() throws {
        let right = try analyzer(sampleRate: 48000)
        let result = right.process(TestSignals.sine(frequency: 440, sampleRate: 48000, count: 4096))
        XCTAssertEqual(result.note, "A4")
    }

    // MARK: - Silence and edge cases

    func testSilenceReturnsNoNote() throws {
        let result = try analyzer(sampleRate: 44100).process([Float](repeating: 0, count: 4096))
        XCTAssertEqual(result.note, "—")
        XCTAssertNil(result.peak)
        XCTAssertEqual(result.peakFrequency, 0, accuracy: 1)
        XCTAssertEqual(result.bars.count, 48)
        XCTAssertTrue(result.bars.allSatisfy { $0 >= 0 && $0 <= 1 })
    }

    func testShortBufferPadsToFFTSize() throws {
        let result = try analyzer(sampleRate: 44100).process(
            TestSignals.sine(frequency: 440, sampleRate: 44100, count: 1024))
        XCTAssertEqual(result.peakFrequency, 440, accuracy: 20)
        XCTAssertEqual(result.note, "A4")
        XCTAssertEqual(result.bars.count, 48)
    }

    func testBelowThirtyHertzHasNoNote() throws {
        let result = try analyzer(sampleRate: 48000, fftSize: 16384).process(
            TestSignals.sine(frequency: 25, sampleRate: 48000, count: 16384))
        XCTAssertEqual(result.peakFrequency, 25, accuracy: 1)
        XCTAssertEqual(result.note, "—")
    }

    // MARK: - Note mapping: chromatic scale

    func testChromaticScale() throws {
        let expected: [(Double, String)] = [
            (261.63, "C4"), (277.18, "C#4"), (293.66, "D4"), (311.13, "D#4"),
            (329.63, "E4"), (349.23, "F4"), (369.99, "F#4"), (392.00, "G4"),
            (415.30, "G#4"), (440.00, "A4"), (466.16, "A#4"), (493.88, "B4"),
        ]
        let a = try analyzer(sampleRate: 44100)
        for (frequency, name) in expected {
            let result = a.process(TestSignals.sine(frequency: frequency, sampleRate: 44100, count: 4096))
            XCTAssertEqual(result.note, name, "\(frequency) Hz should be \(name)")
            XCTAssertEqual(result.peak?.note?.cents ?? 99, 0, accuracy: 2, "\(frequency) Hz")
        }
    }

    // MARK: - Sub-bin accuracy (jackvu's addition)

    func testPeakWithinHalfHertzFrom50HzTo15kHz() throws {
        for sampleRate in [44100.0, 48000.0] {
            let a = try analyzer(sampleRate: sampleRate)
            // Log-spaced frequencies, deliberately off bin centres, plus the range's ends.
            var frequencies = (0..<60).map { 50 * pow(300, Double($0) / 59) * 1.0013 }
            frequencies += [50, 15000, 1000, 997]
            for f in frequencies {
                for phase in [0.0, 1.1] {
                    let signal = TestSignals.sine(
                        frequency: f, sampleRate: sampleRate, count: 4096, amplitude: 0.5, phase: phase)
                    let result = a.process(signal)
                    XCTAssertEqual(
                        result.peakFrequency, f, accuracy: 0.5, "\(f) Hz at \(sampleRate) Hz, phase \(phase)")
                }
            }
        }
    }

    func testCentsDeviation() throws {
        // 30 cents above A4.
        let f = 440 * pow(2, 0.30 / 12)
        let result = try analyzer(sampleRate: 48000).process(
            TestSignals.sine(frequency: f, sampleRate: 48000, count: 4096))
        XCTAssertEqual(result.note, "A4")
        XCTAssertEqual(result.peak?.note?.cents ?? 0, 30, accuracy: 2)
    }

    // MARK: - Bars

    /// Calibrated as an analyser: a −18 dBFS sine reads −18 dB on its bar — within 0.05 dB
    /// wherever it lies in a bar wider than the window's main lobe, and in a one-bin bar at a
    /// bin centre; between bins of a one-bin bar no more than the Hann window's 1.42 dB
    /// scalloping loss low; never above its level. Pink-ish noise reads its band power.
    func testASineReadsItsPeakLevel() throws {
        let a = try analyzer(sampleRate: 48000)
        let edges = (0...48).map { 60 * pow(18000.0 / 60, Double($0) / 48) }
        func reading(_ frequency: Double) -> (bar: Int, dB: Float) {
            let result = a.process(TestSignals.sine(frequency: frequency, sampleRate: 48000, count: 4096, amplitude: pow(10, -18.0 / 20)))
            let bar = edges.lastIndex { $0 <= frequency }!
            return (bar, SpectrumAnalyzer.barLevel(result.bars[bar]))
        }
        let bin = 48000.0 / 4096
        // Mid-bar in wide bars (≥ 5 bins), on and off the bin grid.
        for frequency in [997.0, 1000.0, 2500.3, 5000.0, 10_031.0, 15_000.0] {
            let bar = edges.lastIndex { $0 <= frequency }!
            let mid = (edges[bar] * edges[bar + 1]).squareRoot()
            let f = mid + (frequency - frequency.rounded(.down))  // near the bar's centre
            XCTAssertGreaterThan(edges[bar + 1] - edges[bar], 5 * bin)
            XCTAssertEqual(reading(f).dB, -18, accuracy: 0.05, "\(f) Hz")
        }
        // One-bin bars at low frequencies: exact at a bin centre, within the scalloping loss between.
        for k in [6, 8, 10] {
            XCTAssertEqual(reading(Double(k) * bin).dB, -18, accuracy: 0.05, "bin \(k)")
            let between = reading((Double(k) + 0.5) * bin).dB
            XCTAssertLessThanOrEqual(between, -18 + 0.05)
            XCTAssertGreaterThanOrEqual(between, -18 - 1.45)
        }
        // White noise of RMS r in a bar: its power there, scaled as a sine's peak
        // (√2 · RMS in band), i.e. band RMS + 3.01 dB, within 1.5 dB for one frame.
        var seed: UInt64 = 12345
        print("testASineReadsItsPeakLevel: noise seed \(seed)")
        let noise: [Float] = (0..<4096).map { _ in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52) * 0.1
        }
        let result = a.process(noise)
        let variance = 0.1 * 0.1 / 3.0  // uniform in ±0.1
        let bar = 40, width = edges[bar + 1] - edges[bar]
        let bandRMS = (variance * width / 24000).squareRoot()
        XCTAssertEqual(Double(SpectrumAnalyzer.barLevel(result.bars[bar])), 20 * log10(bandRMS * 2.0.squareRoot()), accuracy: 1.5)
    }

    func testBarsRiseWhereTheToneIs() throws {
        let a = try analyzer(sampleRate: 48000)
        let result = a.process(TestSignals.sine(frequency: 1000, sampleRate: 48000, count: 4096))
        let loudest = result.bars.indices.max { result.bars[$0] < result.bars[$1] }!
        // Bar edges are log-spaced from 60 Hz to 18 kHz: find the bar containing 1 kHz.
        let step = log10(18000.0 / 60) / 48
        let expected = Int(log10(1000.0 / 60) / step)
        XCTAssertLessThanOrEqual(abs(loudest - expected), 1)
        // A full-scale sine reads 0 dB: the top of the bar.
        XCTAssertEqual(result.bars[loudest], 1, accuracy: 0.002)
        XCTAssertLessThan(result.bars[0], 0.3)
    }

    func testInvalidConfigurationsThrow() {
        XCTAssertThrowsError(try analyzer(sampleRate: 48000, fftSize: 1000))
        XCTAssertThrowsError(try analyzer(sampleRate: 48000, fftSize: 128))
        XCTAssertThrowsError(try analyzer(sampleRate: 48000, fftSize: 131072))
        XCTAssertThrowsError(
            try SpectrumAnalyzer(configuration: .init(sampleRate: 48000, barCount: 0)))
        XCTAssertThrowsError(
            try SpectrumAnalyzer(
                configuration: .init(sampleRate: 48000, minFrequency: 500, maxFrequency: 100)))
        XCTAssertNoThrow(try analyzer(sampleRate: 48000, fftSize: 256))
        XCTAssertNoThrow(try analyzer(sampleRate: 48000, fftSize: 65536))
    }
}
