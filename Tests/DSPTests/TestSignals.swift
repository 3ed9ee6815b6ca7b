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

    /// Feeds `signals` (of the same length) in pieces of the sizes given, in turn:
    /// `body(pointers, frames, step)` with each channel's samples at the piece and the piece's
    /// number (from 1).
    static func inPieces(_ signals: [[Float]], sizes: [Int], _ body: (_ pointers: [UnsafePointer<Float>], _ frames: Int, _ step: Int) -> Void) {
        let n = signals[0].count
        // Copies that live as long as the loop (an array's buffer pointer is valid only inside
        // its withUnsafeBufferPointer).
        let buffers = signals.map { s -> UnsafeMutablePointer<Float> in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: s.count)
            p.initialize(from: s, count: s.count)
            return p
        }
        defer { for b in buffers { b.deallocate() } }
        var offset = 0, step = 0
        while offset < n {
            let m = min(sizes[step % sizes.count], n - offset)
            step += 1
            body(buffers.map { UnsafePointer($0 + offset) }, m, step)
            offset += m
        }
    }
}
