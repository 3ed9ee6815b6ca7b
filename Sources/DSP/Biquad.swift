#if canImport(Glibc)
import Glibc
#endif

/// Coefficients of a second-order IIR section, normalised so that a0 = 1:
/// `y[n] = b0·x[n] + b1·x[n−1] + b2·x[n−2] − a1·y[n−1] − a2·y[n−2]`.
public struct BiquadCoefficients: Equatable, Sendable {
    public var b0, b1, b2, a1, a2: Double

    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        (self.b0, self.b1, self.b2, self.a1, self.a2) = (b0, b1, b2, a1, a2)
    }

    /// Magnitude of the frequency response at `frequency` Hz for `sampleRate`.
    public func magnitude(at frequency: Double, sampleRate: Double) -> Double {
        let w = 2 * Double.pi * frequency / sampleRate
        // H(e^jw) = (b0 + b1 z^-1 + b2 z^-2) / (1 + a1 z^-1 + a2 z^-2)
        let (c1, s1, c2, s2) = (cos(w), -sin(w), cos(2 * w), -sin(2 * w))
        let nr = b0 + b1 * c1 + b2 * c2, ni = b1 * s1 + b2 * s2
        let dr = 1 + a1 * c1 + a2 * c2, di = a1 * s1 + a2 * s2
        return ((nr * nr + ni * ni) / (dr * dr + di * di)).squareRoot()
    }
}

/// A second-order IIR section with its state (transposed direct form II, double precision).
/// Real-time safe.
public struct Biquad: Sendable {
    public var coefficients: BiquadCoefficients
    /// The two state variables of the transposed direct form II.
    private var s1 = 0.0, s2 = 0.0

    public init(_ coefficients: BiquadCoefficients) {
        self.coefficients = coefficients
    }

    /// Filters one sample. Real-time safe.
    @inline(__always)
    public mutating func process(_ x: Double) -> Double {
        let c = coefficients
        let y = c.b0 * x + s1
        s1 = c.b1 * x - c.a1 * y + s2
        s2 = c.b2 * x - c.a2 * y
        return y
    }

    /// Clears the state (and flushes denormals). Real-time safe.
    public mutating func reset() {
        s1 = 0
        s2 = 0
    }

    /// Flushes tiny state values to zero, so silence does not leave denormals behind.
    @inline(__always)
    public mutating func flushDenormals() {
        if abs(s1) < 1e-30 { s1 = 0 }
        if abs(s2) < 1e-30 { s2 = 0 }
    }

}
