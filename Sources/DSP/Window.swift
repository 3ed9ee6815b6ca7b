#if canImport(Glibc)
import Glibc
#endif

/// Analysis windows.
public enum Window {
    /// Writes the periodic ("DFT-even") Hann window of length `result.count`:
    /// `w[n] = 0.5 - 0.5 * cos(2πn / N)`, the form vDSP calls `hanningDenormalized`.
    /// Its coherent gain is 0.5: a sine of amplitude A peaks at A·N/4 in the spectrum.
    /// Real-time safe, but meant for setup.
    public static func hann(into result: UnsafeMutableBufferPointer<Float>) {
        let n = result.count
        for i in 0..<n {
            result[i] = Float(0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n)))
        }
    }
}
