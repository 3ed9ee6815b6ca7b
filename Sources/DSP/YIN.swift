#if canImport(Glibc)
import Glibc
#endif
import CFFTW

/// A pitch estimate by YIN.
public struct YINEstimate: Equatable, Sendable {
    /// Fundamental frequency, Hz.
    public var frequency: Double
    /// 1 − the cumulative-mean-normalised difference at the chosen period: near 1 for a clean
    /// periodic signal, low for noise.
    public var confidence: Double
    /// The nearest note.
    public var note: Note?
}

/// Fundamental-frequency estimation by YIN (de Cheveigné & Kawahara, JASA 2002): the
/// difference function over an integration window of `window` samples (computed through an
/// FFT autocorrelation), its cumulative-mean normalisation, the first dip below `threshold`
/// (else the global minimum), a check that no multiple of that period has a far deeper dip
/// (a harmonic louder than the fundamental), and parabolic interpolation of the period. Unlike the FFT peak
/// it names a note by its period, so a tone whose second harmonic is louder than its
/// fundamental is still named right.
///
/// Frames are `2 × window` samples; periods up to `window` samples are searched, i.e.
/// frequencies from sampleRate / window up to `maxFrequency`. One thread at a time;
/// `estimate` does not allocate.
public final class YINPitch: @unchecked Sendable {
    // @unchecked Sendable: owned by one thread at a time.

    public let sampleRate: Double
    public let window: Int
    public let threshold: Double
    /// Shortest period searched, samples (from maxFrequency).
    private let minPeriod: Int
    /// FFT of size 4 × window for the cross-correlation.
    private let fftA: RealFFT
    private let fftB: RealFFT
    private let inverse: fftwf_plan
    /// Difference function, then its normalised form; `window` values.
    private let d: UnsafeMutablePointer<Double>
    /// Running sum of squares of the frame, `2 × window + 1` values.
    private let prefix: UnsafeMutablePointer<Double>

    /// Not real-time safe (plans FFTs, allocates).
    public init(sampleRate: Double, window: Int, threshold: Double = 0.15, maxFrequency: Double = 4000) throws(DSPError) {
        self.sampleRate = sampleRate
        self.window = window
        self.threshold = threshold
        minPeriod = max(2, Int(sampleRate / maxFrequency))
        // 2w points are enough: r(τ) for τ < w sums x_j·x_{j+τ} with j + τ ≤ 2w − 2, so the
        // circular correlation never wraps (4w, the usual zero padding for a full linear
        // correlation, did twice the work).
        fftA = try RealFFT(size: 2 * window)
        fftB = try RealFFT(size: 2 * window)
        inverse = RealFFT.planInverse(size: 2 * window, from: fftB.output.baseAddress!, to: fftB.input.baseAddress!)
        d = .allocate(capacity: window)
        prefix = .allocate(capacity: 2 * window + 1)
    }

    deinit {
        RealFFT.destroy(inverse)
        d.deallocate()
        prefix.deallocate()
    }

    /// Estimates the fundamental of `frame` (its first `2 × window` samples; zero-padded if
    /// shorter); nil for silence. Real-time safe.
    public func estimate(_ frame: UnsafeBufferPointer<Float>) -> YINEstimate? {
        let w = window, n = 2 * w
        let count = min(frame.count, 2 * w)
        // Energy prefix sums.
        prefix[0] = 0
        for j in 0..<(2 * w) {
            let x = j < count ? Double(frame[j]) : 0
            prefix[j + 1] = prefix[j] + x * x
        }
        guard prefix[2 * w] > 1e-10 else { return nil }
        // r(τ) = Σ_{j<w} x_j·x_{j+τ}: FFT of a = x[0..<w] (zero-padded) and b = x[0..<2w], both
        // 2w points; r = IFFT(conj(A)·B).
        let a = fftA.input, b = fftB.input
        for j in 0..<n {
            a[j] = j < w && j < count ? frame[j] : 0
            b[j] = j < count ? frame[j] : 0
        }
        fftA.forward()
        fftB.forward()
        let A = fftA.output, B = fftB.output
        for k in 0...(n / 2) {
            let ar = A[2 * k], ai = A[2 * k + 1], br = B[2 * k], bi = B[2 * k + 1]
            B[2 * k] = ar * br + ai * bi
            B[2 * k + 1] = ar * bi - ai * br
        }
        fftwf_execute(inverse)  // fftB.output → fftB.input, scaled by n
        let r = fftB.input
        let scale = 1 / Double(n)
        // d(τ) = E(0..w) + E(τ..τ+w) − 2 r(τ); d'(τ) = d(τ)·τ / Σ_{k≤τ} d(k).
        let e0 = prefix[w]
        d[0] = 1
        var running = 0.0
        for tau in 1..<w {
            let et = prefix[tau + w] - prefix[tau]
            let dt = max(0, e0 + et - 2 * Double(r[tau]) * scale)
            running += dt
            d[tau] = running > 0 ? dt * Double(tau) / running : 1
        }
        // First dip below the threshold (then down to its local minimum), else the minimum.
        var best = -1
        var tau = minPeriod
        while tau < w - 1 {
            if d[tau] < threshold {
                while tau + 1 < w - 1 && d[tau + 1] < d[tau] { tau += 1 }
                best = tau
                break
            }
            tau += 1
        }
        if best < 0 {
            best = minPeriod
            for t in minPeriod..<(w - 1) where d[t] < d[best] { best = t }
        }
        // A dip at a fraction of the true period (a harmonic much louder than the
        // fundamental: a trumpet's third partial) is shallow next to the dip at the period
        // itself. When the chosen dip is not near perfect, prefer a multiple of it whose dip
        // is far deeper (below 0.3 of it): that multiple is the period.
        if d[best] > 0.02 {
            for multiple in 2...5 {
                let centre = best * multiple
                guard centre + 2 < w - 1 else { break }
                var candidate = centre - 2
                for t in (centre - 2)...(centre + 2) where d[t] < d[candidate] { candidate = t }
                if d[candidate] < 0.3 * d[best] {
                    best = candidate
                    break
                }
            }
        }
        // Parabolic interpolation around the minimum.
        var period = Double(best)
        if best > 1 && best < w - 1 {
            let l = d[best - 1], c = d[best], rr = d[best + 1]
            let denominator = l - 2 * c + rr
            if denominator > 0 { period += 0.5 * (l - rr) / denominator }
        }
        let f = sampleRate / period
        return YINEstimate(frequency: f, confidence: max(0, min(1, 1 - d[best])), note: Note(frequency: f))
    }

    /// Convenience for tests: estimates `samples`. Not real-time safe.
    public func estimate(_ samples: [Float]) -> YINEstimate? {
        samples.withUnsafeBufferPointer { estimate($0) }
    }
}
