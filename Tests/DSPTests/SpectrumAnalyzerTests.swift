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

    func testBarsRiseWhereTheToneIs() throws {
        let a = try analyzer(sampleRate: 48000)
        let result = a.process(TestSignals.sine(frequency: 1000, sampleRate: 48000, count: 4096))
        let loudest = result.bars.indices.max { result.bars[$0] < result.bars[$1] }!
        // Bar edges are log-spaced from 60 Hz to 18 kHz: find the bar containing 1 kHz.
        let step = log10(18000.0 / 60) / 48
        let expected = Int(log10(1000.0 / 60) / step)
        XCTAssertLessThanOrEqual(abs(loudest - expected), 1)
        // The bar averages its ~11 bins, of which the tone fills about 3: about −26 dB → 0.67.
        XCTAssertGreaterThan(result.bars[loudest], 0.6)
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
