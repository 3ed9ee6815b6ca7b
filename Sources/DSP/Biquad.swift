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

/// Biquads with the same coefficients run side by side in SIMD lanes (a channel per lane
/// through the same filter: 2, 4 or 8 of them), in direct form I (state is kept per form, so a
/// filter is either a `Biquad` or a lane of a `BiquadLanes` for its whole life):
/// `y = b0·x + b1·x1 + b2·x2 − a1·y1 − a2·y2`. Only `a1·y1` sits on the loop-carried path (a
/// multiply and an add), so it runs about a third faster than the transposed form, whose
/// recursion passes through two adds and a multiply; and the lanes' recursions are
/// independent, so a vector wider than the machine's runs as several chains at once.
/// Real-time safe.
struct BiquadLanes<V: SIMD & Sendable>: Sendable where V.Scalar == Double {
    let b0, b1, b2, a1, a2: V
    /// The look-ahead coefficients a1² − a2 and a1·a2 (`process2`).
    let c1, c2: V
    /// Previous inputs and outputs.
    var x1 = V(), x2 = V(), y1 = V(), y2 = V()

    /// Every lane with coefficients `c`, at rest.
    init(_ c: BiquadCoefficients) {
        b0 = V(repeating: c.b0)
        b1 = V(repeating: c.b1)
        b2 = V(repeating: c.b2)
        a1 = V(repeating: c.a1)
        a2 = V(repeating: c.a2)
        c1 = V(repeating: c.a1 * c.a1 - c.a2)
        c2 = V(repeating: c.a1 * c.a2)
    }

    @inline(__always)
    mutating func process(_ x: V) -> V {
        let partial = b0 * x + b1 * x1 + b2 * x2 - a2 * y2  // off the recursion's critical path
        return recurse(partial, x)
    }

    /// The same for a numerator of exactly (1, −2, 1), as the RLB high-pass has: three
    /// multiplies fewer.
    @inline(__always)
    mutating func processHighPass(_ x: V) -> V {
        let partial = (x - x1) - (x1 - x2) - a2 * y2
        return recurse(partial, x)
    }

    /// Two samples at once, each output from the outputs of the previous pair (look-ahead:
    /// `y[n+1] = P[n+1] − a1·P[n] + (a1² − a2)·y[n−1] + a1·a2·y[n−2]`, with
    /// `P[n] = b0·x[n] + b1·x[n−1] + b2·x[n−2]`), so the recursion's critical path is one
    /// multiply and two adds per two samples instead of per sample. The same filter (the
    /// identity is exact; the rounding differs in the last bits).
    @inline(__always)
    mutating func process2(_ xa: V, _ xb: V) -> (V, V) {
        let pa = b0 * xa + b1 * x1 + b2 * x2
        let pb = b0 * xb + b1 * xa + b2 * x1
        return recurse2(pa, pb, xa, xb)
    }

    /// `process2` for a numerator of exactly (1, −2, 1).
    @inline(__always)
    mutating func processHighPass2(_ xa: V, _ xb: V) -> (V, V) {
        let pa = (xa - x1) - (x1 - x2)
        let pb = (xb - xa) - (xa - x1)
        return recurse2(pa, pb, xa, xb)
    }

    @inline(__always)
    private mutating func recurse2(_ pa: V, _ pb: V, _ xa: V, _ xb: V) -> (V, V) {
        let ya = pa - (a1 * y1 + a2 * y2)
        let yb = (pb - a1 * pa) + (c1 * y1 + c2 * y2)
        x2 = xa
        x1 = xb
        y2 = ya
        y1 = yb
        return (ya, yb)
    }

    @inline(__always)
    private mutating func recurse(_ partial: V, _ x: V) -> V {
        let y = partial - a1 * y1
        x2 = x1
        x1 = x
        y2 = y1
        y1 = y
        return y
    }

    /// Flushes tiny state values to zero, so silence does not leave denormals behind.
    mutating func flushDenormals() {
        func flushed(_ v: V) -> V {
            let tiny = V(repeating: 1e-30)
            return v.replacing(with: 0, where: v .< tiny .& v .> -tiny)
        }
        (x1, x2, y1, y2) = (flushed(x1), flushed(x2), flushed(y1), flushed(y2))
    }
}
