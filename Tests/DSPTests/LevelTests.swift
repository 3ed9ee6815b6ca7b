import DSP
import XCTest

final class LevelTests: XCTestCase {
    func testFullScaleSineReadsMinus3dBRMSAnd0dBPeak() {
        // 997 Hz: not a sub-multiple of the sample rate, so every phase is visited.
        let signal = TestSignals.sine(frequency: 997, sampleRate: 48000, count: 48000, phase: 0.3)
        // A full-scale sine reaches ±1 only between samples: take the peak at a phase that hits it.
        let level = signal.withUnsafeBufferPointer { BlockLevel($0) }
        XCTAssertEqual(level.rmsDBFS, -3.0103, accuracy: 0.01)
        XCTAssertEqual(level.peakDBFS, 0, accuracy: 0.01)
    }

    func testHalfScaleSineAndSilence() {
        let signal = TestSignals.sine(frequency: 1000, sampleRate: 48000, count: 4800, amplitude: 0.5)
        let level = signal.withUnsafeBufferPointer { BlockLevel($0) }
        XCTAssertEqual(level.rmsDBFS, -6.0206 - 3.0103, accuracy: 0.01)
        XCTAssertEqual(level.peakDBFS, -6.0206, accuracy: 0.01)
        let silence = [Float](repeating: 0, count: 512).withUnsafeBufferPointer { BlockLevel($0) }
        XCTAssertEqual(silence.rmsDBFS, Decibels.floor)
        XCTAssertEqual(silence.peakDBFS, Decibels.floor)
    }

    func testBallisticsRiseHoldFall() {
        var b = Ballistics(holdTime: 0.5, fallRate: 20)
        XCTAssertEqual(b.update(-10, elapsed: 0.1), -10)  // instant rise
        XCTAssertEqual(b.update(-40, elapsed: 0.3), -10)  // holding (0.2 s left)
        XCTAssertEqual(b.update(-40, elapsed: 0.3), -12, accuracy: 1e-9)  // 0.2 s hold, 0.1 s at 20 dB/s
        XCTAssertEqual(b.update(-40, elapsed: 1.0), -32, accuracy: 1e-9)
        XCTAssertEqual(b.update(-40, elapsed: 1.0), -40, accuracy: 1e-9)  // caught by the input
        XCTAssertEqual(b.update(-5, elapsed: 0.01), -5)  // rises again at once
        var noHold = Ballistics(holdTime: 0, fallRate: 10)
        noHold.update(0, elapsed: 0.1)
        XCTAssertEqual(noHold.update(-100, elapsed: 0.5), -5, accuracy: 1e-9)
        noHold.reset()
        XCTAssertEqual(noHold.value, Double(Decibels.floor))
    }

    func testMeterScale() {
        let s = MeterScale()
        XCTAssertEqual(s.displayValue(0), 1)
        XCTAssertEqual(s.displayValue(-60), 0)
        XCTAssertEqual(s.displayValue(-30), 0.5)
        XCTAssertEqual(s.displayValue(-90), 0)
        XCTAssertEqual(s.displayValue(6), 1)
        XCTAssertEqual(MeterScale(floor: -40).displayValue(-10), 0.75)
    }

    func testNoteNames() {
        XCTAssertEqual(Note(frequency: 440)?.name, "A4")
        XCTAssertEqual(Note(frequency: 261.6256)?.name, "C4")
        XCTAssertEqual(Note(frequency: 261.6256)?.midi, 60)
        XCTAssertEqual(Note(frequency: 27.5)?.name, nil)  // below 30 Hz
        XCTAssertEqual(Note(frequency: 32.703)?.name, "C1")
        XCTAssertEqual(Note(frequency: 4186.01)?.name, "C8")
        XCTAssertEqual(Note(frequency: 466.16)?.name, "A#4")
        XCTAssertEqual(Note(midi: 0).name, "C-1")
        XCTAssertEqual(Note(midi: 69).nominalFrequency(), 440, accuracy: 1e-9)
        XCTAssertEqual(Note(frequency: 440 * pow(2, -0.49 / 12))!.cents, -49, accuracy: 1e-6)
    }
}
