#if canImport(Glibc)
import Glibc
#endif

/// The K-weighting of ITU-R BS.1770-4 (§2.1): a high-frequency shelving pre-filter (the
/// acoustic effect of the head) followed by the "RLB" high-pass.
///
/// BS.1770 publishes both sections' coefficients for 48 kHz only, and its K-weighting is
/// that filter's response. At 48 kHz the sections here are the published ones: from the
/// analogue parameters that reproduce them (the parametrisation libebur128 uses) — the shelf
/// at f0 = 1681.97 Hz, gain +4.00 dB, Q = 0.7072; the high-pass at f0 = 38.135 Hz, Q = 0.5003 —
/// through the bilinear transform with pre-warping, which gives BS.1770's Table 1 and Table 2
/// to 1e-8 (a unit test checks it).
///
/// At any other rate the same formula (what libebur128 and ffmpeg do) departs from the 48 kHz
/// response: the high-pass's numerator (1, −2, 1), fixed as published, leaves its pass-band
/// gain 1 + k/Q + k² depending on the rate (+0.26 dB at 8 kHz against +0.04 dB at 48 kHz), and
/// the shelf's pre-warping bends it near the Nyquist frequency: 0.50 dB at 8 kHz, 0.08 dB at
/// 22.05 kHz, 0.05 dB at 384 kHz, so an 8 kHz file read 0.2 LU louder than the same content
/// at 48 kHz. Here the high-pass stays the formula's (numerator 1, −2, 1, so its lanes keep
/// their shape) and the shelf is **fitted** so that the two sections together match the 48 kHz
/// K-weighting's magnitude: a Levenberg–Marquardt least-squares fit of the shelf's five
/// coefficients, from the formula's, to the 48 kHz response in dB at 400 log-spaced
/// frequencies from 20 Hz to 20 kHz or 0.995 of the Nyquist frequency. The residual, largest
/// |dB| from 20 Hz to 20 kHz or the Nyquist frequency (`KWeightingRatesTests` prints it): 0.026
/// dB at 8 kHz (at 3996 Hz), 0.009 at 11.025, 0.002 at 16, 0.0005 at 22.05, under 0.0001
/// from 32 to 384 kHz; the loudness of band-limited pink content within 0.001 LU of 48 kHz's.
public enum KWeighting {
    /// Stage 1: the shelving pre-filter at `sampleRate` Hz: BS.1770's at 48 kHz, else fitted
    /// (`fittedShelf`) so that the cascade matches BS.1770's 48 kHz response.
    public static func shelf(sampleRate: Double) -> BiquadCoefficients {
        sampleRate == 48000 ? formulaShelf(sampleRate: sampleRate) : fittedShelf(sampleRate: sampleRate)
    }

    /// The shelf from the analogue parameters by the bilinear transform (BS.1770's at 48 kHz;
    /// libebur128's and ffmpeg's at every rate).
    public static func formulaShelf(sampleRate: Double) -> BiquadCoefficients {
        let f0 = 1681.974450955533
        let gainDB = 3.999843853973347
        let q = 0.7071752369554196
        let k = tan(Double.pi * f0 / sampleRate)
        let vh = pow(10, gainDB / 20)
        let vb = pow(vh, 0.4996667741545416)
        let a0 = 1 + k / q + k * k
        return BiquadCoefficients(
            b0: (vh + vb * k / q + k * k) / a0,
            b1: 2 * (k * k - vh) / a0,
            b2: (vh - vb * k / q + k * k) / a0,
            a1: 2 * (k * k - 1) / a0,
            a2: (1 - k / q + k * k) / a0)
    }

    /// Stage 2: the RLB high-pass at `sampleRate` Hz (numerator 1, −2, 1 as published).
    public static func highPass(sampleRate: Double) -> BiquadCoefficients {
        let f0 = 38.13547087602444
        let q = 0.5003270373238773
        let k = tan(Double.pi * f0 / sampleRate)
        let a0 = 1 + k / q + k * k
        return BiquadCoefficients(
            b0: 1, b1: -2, b2: 1,
            a1: 2 * (k * k - 1) / a0,
            a2: (1 - k / q + k * k) / a0)
    }

    /// BS.1770's K-weighting (the 48 kHz cascade) at `frequency` Hz, dB.
    public static func referenceDB(at frequency: Double) -> Double {
        20 * log10(formulaShelf(sampleRate: 48000).magnitude(at: frequency, sampleRate: 48000)
            * highPass(sampleRate: 48000).magnitude(at: frequency, sampleRate: 48000))
    }

    /// The cascade at `sampleRate` (`shelf`, `highPass`) at `frequency` Hz, dB.
    public static func responseDB(at frequency: Double, sampleRate: Double) -> Double {
        20 * log10(shelf(sampleRate: sampleRate).magnitude(at: frequency, sampleRate: sampleRate)
            * highPass(sampleRate: sampleRate).magnitude(at: frequency, sampleRate: sampleRate))
    }

    /// The shelf whose cascade with `highPass(sampleRate:)` best matches BS.1770's 48 kHz
    /// response (least squares in dB, Levenberg–Marquardt from `formulaShelf`). Falls back to
    /// the formula's shelf should the fit not improve on it or not be stable (it always does
    /// and is, from 8 to 384 kHz). About a millisecond; not real-time safe.
    public static func fittedShelf(sampleRate fs: Double) -> BiquadCoefficients {
        let start = formulaShelf(sampleRate: fs)
        let count = 400
        let low = 20.0, high = min(20_000, 0.995 * fs / 2)
        guard high > low * 2 else { return start }
        // Per frequency: cos ω, sin ω, cos 2ω, sin 2ω, and what the shelf must add in dB (the
        // 48 kHz cascade less this rate's high-pass).
        var c1 = [Double](), s1 = [Double](), c2 = [Double](), s2 = [Double](), want = [Double]()
        let hp = highPass(sampleRate: fs)
        for i in 0..<count {
            let f = low * pow(high / low, Double(i) / Double(count - 1))
            let w = 2 * Double.pi * f / fs
            c1.append(cos(w)); s1.append(sin(w)); c2.append(cos(2 * w)); s2.append(sin(2 * w))
            want.append(referenceDB(at: f) - 20 * log10(hp.magnitude(at: f, sampleRate: fs)))
        }
        func residuals(_ p: [Double]) -> [Double] {
            (0..<count).map { i in
                let nr = p[0] + p[1] * c1[i] + p[2] * c2[i], ni = p[1] * s1[i] + p[2] * s2[i]
                let dr = 1 + p[3] * c1[i] + p[4] * c2[i], di = p[3] * s1[i] + p[4] * s2[i]
                return 10 * log10((nr * nr + ni * ni) / (dr * dr + di * di)) - want[i]
            }
        }
        func cost(_ r: [Double]) -> Double { r.reduce(0) { $0 + $1 * $1 } }
        var p = [start.b0, start.b1, start.b2, start.a1, start.a2]
        var r = residuals(p)
        let startCost = cost(r)
        var lambda = 1e-3
        for _ in 0..<200 {
            // The Jacobian by forward differences, then the damped normal equations.
            var jacobian = [[Double]](repeating: [Double](repeating: 0, count: 5), count: count)
            for k in 0..<5 {
                let h = 1e-7 * max(1, abs(p[k]))
                var q = p
                q[k] += h
                let rq = residuals(q)
                for i in 0..<count { jacobian[i][k] = (rq[i] - r[i]) / h }
            }
            var jtj = [[Double]](repeating: [Double](repeating: 0, count: 5), count: 5)
            var jtr = [Double](repeating: 0, count: 5)
            for i in 0..<count {
                for a in 0..<5 {
                    jtr[a] += jacobian[i][a] * r[i]
                    for b in 0..<5 { jtj[a][b] += jacobian[i][a] * jacobian[i][b] }
                }
            }
            var improved = false
            while lambda < 1e12 {
                var m = jtj
                for a in 0..<5 { m[a][a] *= 1 + lambda }
                guard let step = solve(m, jtr.map { -$0 }) else { lambda *= 10; continue }
                let candidate = zip(p, step).map { $0 + $1 }
                let rc = residuals(candidate)
                if cost(rc) < cost(r) {
                    let gain = cost(r) - cost(rc)
                    p = candidate
                    r = rc
                    lambda = max(lambda / 10, 1e-12)
                    improved = gain > 1e-15 * max(1e-30, cost(r))
                    break
                }
                lambda *= 10
            }
            if !improved { break }
        }
        // Stable (both poles inside the unit circle) and better, or the formula's.
        let stable = abs(p[4]) < 1 && abs(p[3]) < 1 + p[4]
        guard stable, cost(r) < startCost, p.allSatisfy(\.isFinite) else { return start }
        return BiquadCoefficients(b0: p[0], b1: p[1], b2: p[2], a1: p[3], a2: p[4])
    }

    /// Solves the 5×5 system `m·x = v` (Gaussian elimination with partial pivoting); nil when
    /// singular.
    private static func solve(_ m: [[Double]], _ v: [Double]) -> [Double]? {
        var a = m, b = v
        let n = b.count
        for col in 0..<n {
            guard let pivot = (col..<n).max(by: { abs(a[$0][col]) < abs(a[$1][col]) }), abs(a[pivot][col]) > 1e-300 else { return nil }
            a.swapAt(col, pivot)
            b.swapAt(col, pivot)
            for row in (col + 1)..<n {
                let f = a[row][col] / a[col][col]
                for k in col..<n { a[row][k] -= f * a[col][k] }
                b[row] -= f * b[col]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for row in stride(from: n - 1, through: 0, by: -1) {
            var s = b[row]
            for k in (row + 1)..<n { s -= a[row][k] * x[k] }
            x[row] = s / a[row][row]
        }
        return x.allSatisfy(\.isFinite) ? x : nil
    }
}
