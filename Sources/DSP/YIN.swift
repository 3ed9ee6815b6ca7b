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
        // A dip at a fraction of the true period (a harmonic much louder than the fundamental:
        // a trumpet's third partial, a bassoon's second) is shallow next to the dip at the
        // period itself. When the chosen dip is not near perfect, prefer a multiple of it whose
        // dip is far deeper (below 0.3 of it): that multiple is the period. Except an even
        // multiple when what twice the period adds is mostly one sinusoid: that is an organ's
        // 16′ rank under the note, not the note's fundamental.
        if d[best] > 0.02 {
            // (Whether the octave below is a rank is asked only of an even multiple that
            // would be taken: most hops never need it.)
            var rank: Bool?
            func octaveIsARank() -> Bool {
                if let rank { return rank }
                let r = 2 * best + 2 < w - 1
                    && sineFraction(period: 2 * best, shift: best, frame: frame, count: count) >= Self.jumpMaxSineFraction
                rank = r
                return r
            }
            for multiple in 2...5 {
                let centre = best * multiple
                guard centre + 2 < w - 1 else { break }
                var candidate = centre - 2
                for t in (centre - 2)...(centre + 2) where d[t] < d[candidate] { candidate = t }
                if d[candidate] < 0.3 * d[best]
                    && (multiple % 2 == 1 || !octaveIsARank()) {
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
        // An organ's 16′ (or 32′) rank: the signal repeats only every `best` samples, but all
        // it adds to a tone of half that period is one near-sinusoid an octave below. The note
        // played is the 8′ pitch, as organists name it: step down an octave while that holds.
        // The confidence stays that of the full period, which the signal does repeat at.
        let confidence = max(0, min(1, 1 - d[best]))
        var octaves = 0
        var full = best
        while let half = subOctaveHalf(of: full, frame: frame, count: count) {
            full = half
            octaves += 1
        }
        let f = sampleRate / period * Double(1 << octaves)
        return YINEstimate(frequency: f, confidence: confidence, note: Note(frequency: f))
    }

    /// Below this normalised difference at half the period, the tone an octave up carries at
    /// least about half the energy (a sub-octave partial of energy fraction e gives d′ ≈ 2e).
    static let subOctaveMaxDifference = 1.0
    /// At least this fraction of what the half period leaves out must be one sinusoid at the
    /// full period: a 16′ rank (its third harmonic about 15 dB or more below it; TimGM6mb's
    /// drawbar organ 0.99–1.00). A real tone at the full period has odd harmonics above its
    /// fundamental: on 600 frames of 14 other instruments, those with d′ < 1 at the half
    /// period reached at most 0.94 (an oboe's G#5), and a 220 Hz tone with a third harmonic
    /// 6 dB down gives 0.8. (PitchSetTests; BENCHMARKS.md.)
    static let subOctaveMinSineFraction = 0.97

    /// The half period, when `period` is a sub-octave rank under a tone of half that period;
    /// else nil. Fits one sinusoid of period `period` to r(n) = x(n) − x(n + period / 2) over
    /// the integration window (least squares, so windows of any length are exact for it).
    private func subOctaveHalf(of period: Int, frame: UnsafeBufferPointer<Float>, count: Int) -> Int? {
        let centre = period / 2
        guard centre - 2 >= minPeriod else { return nil }
        var half = centre - 2
        for t in (centre - 2)...(centre + 2) where d[t] < d[half] { half = t }
        guard d[half] < Self.subOctaveMaxDifference else { return nil }
        return sineFraction(period: period, shift: half, frame: frame, count: count) >= Self.subOctaveMinSineFraction ? half : nil
    }

    /// Twice a good period is taken only when what it adds is a tone (a bassoon's weak
    /// fundamental with its third and fifth: 0.1–0.4), not mostly one sinusoid (a 16′ rank
    /// with a third harmonic 10–25 dB down: 0.7–0.84 on TimGM6mb's church organ).
    static let jumpMaxSineFraction = 0.6

    /// The fraction of r(n) = x(n) − x(n + shift) over the integration window that one
    /// sinusoid of period `period` explains (least squares, so windows of any length are exact
    /// for it): near 1 when all that repeats at `period` and not at `shift` is one partial.
    private func sineFraction(period: Int, shift: Int, frame: UnsafeBufferPointer<Float>, count: Int) -> Double {
        let w = window
        let half = shift
        // cos/sin by rotation (no libm call per sample), then the 2 × 2 normal equations.
        let omega = 2 * Double.pi / Double(period)
        let (stepS, stepC) = (sin(omega), cos(omega))
        var (c, s) = (1.0, 0.0)
        var energy = 0.0, rc = 0.0, rs = 0.0, cc = 0.0, ss = 0.0, cs = 0.0
        for n in 0..<w {
            let a = n < count ? Double(frame[n]) : 0
            let b = n + half < count ? Double(frame[n + half]) : 0
            let r = a - b
            energy += r * r
            rc += r * c; rs += r * s
            cc += c * c; ss += s * s; cs += c * s
            (c, s) = (c * stepC - s * stepS, s * stepC + c * stepS)
        }
        guard energy > 0 else { return 0 }
        let determinant = cc * ss - cs * cs
        guard determinant > 1e-9 * cc * ss else { return 0 }
        // Energy of the fitted sinusoid: [rc rs]·G⁻¹·[rc rs]ᵀ.
        let fitted = (ss * rc * rc - 2 * cs * rc * rs + cc * rs * rs) / determinant
        return fitted / energy
    }

    /// Convenience for tests: estimates `samples`. Not real-time safe.
    public func estimate(_ samples: [Float]) -> YINEstimate? {
        samples.withUnsafeBufferPointer { estimate($0) }
    }
}
