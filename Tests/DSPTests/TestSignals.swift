import Foundation

/// Synthetic test signals: no audio hardware needed.
enum TestSignals {
    /// A sine of `frequency` Hz at `sampleRate`, `count` samples, peak `amplitude`, computed in
    /// double precision.
    static func sine(
        frequency: Double, sampleRate: Double, count: Int, amplitude: Double = 1, phase: Double = 0
    ) -> [Float] {
        (0..<count).map { i in
            Float(amplitude * sin(2 * Double.pi * frequency * Double(i) / sampleRate + phase))
        }
    }
}
