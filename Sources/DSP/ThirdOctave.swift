#if canImport(Glibc)
import Glibc
#endif

/// 1/3-octave band levels with the IEC 61260-1 base-10 bands: centre frequencies
/// f_m = 1000 · 10^(x/10) Hz for x = −16 … 13 (nominally 25 Hz … 20 kHz), band edges
/// f_m · 10^(∓1/20). Each band is a 6th-order Butterworth band-pass (three biquads) designed
/// by the bilinear transform with the edges pre-warped, so the response is −3 dB exactly at
/// the band edges and 0 dB at the centre. Bands whose upper edge is not below the Nyquist
/// frequency are left out. One channel; real-time safe after init.
public struct ThirdOctaveBank: Sendable {
    /// Nominal centre frequencies of all 30 bands (IEC 61260-1 Annex E), Hz.
    public static let nominalCentres: [Double] = [
        25, 31.5, 40, 50, 63, 80, 100, 125, 160, 200, 250, 315, 400, 500, 630, 800, 1000, 1250,
        1600, 2000, 2500, 3150, 4000, 5000, 6300, 8000, 10000, 12500, 16000, 20000,
    ]

    /// The exact centre frequencies of the bands kept at this sample rate, Hz.
    public let centres: [Double]
    /// The bands two by two in SIMD2 lanes (the last lane of an odd count is a silent copy),
    /// three sections per group: all groups advance together sample by sample, so the
    /// filters' recursions overlap instead of running one band after another.
    private var sections: [LaneSection]
    /// Sum of squares per group since the last `takeLevels`.
    private var energy: [SIMD2<Double>]
    private var count = 0

    /// One biquad section for two bands (transposed direct form II), coefficients and state.
    struct LaneSection: Sendable {
        var b0, b1, b2, a1, a2: SIMD2<Double>
        var s1 = SIMD2<Double>(), s2 = SIMD2<Double>()

        init(_ x: BiquadCoefficients, _ y: BiquadCoefficients) {
            b0 = SIMD2(x.b0, y.b0)
            b1 = SIMD2(x.b1, y.b1)
            b2 = SIMD2(x.b2, y.b2)
            a1 = SIMD2(x.a1, y.a1)
            a2 = SIMD2(x.a2, y.a2)
        }

        @inline(__always)
        mutating func process(_ x: SIMD2<Double>) -> SIMD2<Double> {
            let y = b0 * x + s1
            s1 = b1 * x - a1 * y + s2
            s2 = b2 * x - a2 * y
            return y
        }
    }

    public init(sampleRate: Double) {
        var centres: [Double] = []
        var designs: [[BiquadCoefficients]] = []
        for x in -16...13 {
            let fm = 1000 * pow(10, Double(x) / 10)
            let f2 = fm * pow(10, 0.05)
            guard f2 < sampleRate / 2 * 0.999 else { continue }
            centres.append(fm)
            designs.append(ThirdOctaveBank.design(low: fm * pow(10, -0.05), high: f2, sampleRate: sampleRate))
        }
        self.centres = centres
        let groups = (centres.count + 1) / 2
        var sections: [LaneSection] = []
        for g in 0..<groups {
            let a = designs[2 * g], b = designs[min(2 * g + 1, designs.count - 1)]
            for k in 0..<3 { sections.append(LaneSection(a[k], b[k])) }
        }
        self.sections = sections
        energy = Array(repeating: SIMD2<Double>(), count: groups)
    }

    /// Number of bands kept.
    public var bandCount: Int { centres.count }

    /// A 6th-order Butterworth band-pass from `low` to `high` Hz as three biquads, each
    /// normalised to unit gain at the centre.
    static func design(low: Double, high: Double, sampleRate fs: Double) -> [BiquadCoefficients] {
        // Pre-warped analogue edges, centre and bandwidth.
        let w1 = 2 * fs * tan(Double.pi * low / fs)
        let w2 = 2 * fs * tan(Double.pi * high / fs)
        let w0 = (w1 * w2).squareRoot()
        let bw = w2 - w1
        let order = 3
        var result: [BiquadCoefficients] = []
        // The three poles of the 3rd-order Butterworth low-pass prototype (left half plane);
        // the low-pass to band-pass transform s → (s² + w0²) / (bw·s) maps each to two.
        var bandPoles: [(re: Double, im: Double)] = []
        for k in 0..<order {
            let theta = Double.pi * Double(2 * k + order + 1) / Double(2 * order)
            let p = (re: cos(theta), im: sin(theta))  // left half plane
            // s = (p·bw ± sqrt((p·bw)² − 4·w0²)) / 2
            let a = (re: p.re * bw, im: p.im * bw)
            let disc = (re: a.re * a.re - a.im * a.im - 4 * w0 * w0, im: 2 * a.re * a.im)
            let mag = (disc.re * disc.re + disc.im * disc.im).squareRoot().squareRoot()
            let ang = atan2(disc.im, disc.re) / 2
            let root = (re: mag * cos(ang), im: mag * sin(ang))
            bandPoles.append((re: (a.re + root.re) / 2, im: (a.im + root.im) / 2))
            bandPoles.append((re: (a.re - root.re) / 2, im: (a.im - root.im) / 2))
        }
        // Keep one pole of each conjugate pair (upper half plane).
        let upper = bandPoles.filter { $0.im > 1e-9 }
        for pole in upper.prefix(3) {
            // Bilinear: z = (2fs + s) / (2fs − s).
            let num = (re: 2 * fs + pole.re, im: pole.im)
            let den = (re: 2 * fs - pole.re, im: -pole.im)
            let d2 = den.re * den.re + den.im * den.im
            let z = (re: (num.re * den.re + num.im * den.im) / d2, im: (num.im * den.re - num.re * den.im) / d2)
            // Denominator (1 − z·q)(1 − z̄·q) = 1 − 2Re(z) q + |z|² q², zeros at ±1: 1 − q².
            var c = BiquadCoefficients(b0: 1, b1: 0, b2: -1, a1: -2 * z.re, a2: z.re * z.re + z.im * z.im)
            // The digital centre frequency that the pre-warped w0 stands for.
            let g = c.magnitude(at: fs / Double.pi * atan(w0 / (2 * fs)), sampleRate: fs)
            c.b0 /= g
            c.b2 /= g
            result.append(c)
        }
        return result
    }

    /// Feeds samples. Real-time safe.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        let groups = energy.count
        sections.withUnsafeMutableBufferPointer { sec in
            energy.withUnsafeMutableBufferPointer { e in
                for x in samples {
                    let v = SIMD2<Double>(repeating: Double(x))
                    for g in 0..<groups {
                        let y = sec[3 * g + 2].process(sec[3 * g + 1].process(sec[3 * g].process(v)))
                        e[g] += y * y
                    }
                }
                for i in 0..<sec.count {  // flush denormals left by silence
                    let tiny = SIMD2<Double>(repeating: 1e-30)
                    sec[i].s1.replace(with: 0, where: sec[i].s1 .< tiny .& sec[i].s1 .> -tiny)
                    sec[i].s2.replace(with: 0, where: sec[i].s2 .< tiny .& sec[i].s2 .> -tiny)
                }
            }
        }
        count += samples.count
    }

    /// Each band's RMS level (dBFS) over the samples since the last call, into `levels`
    /// (`bandCount` values), then starts a new interval. Real-time safe.
    public mutating func takeLevels(into levels: UnsafeMutableBufferPointer<Float>) {
        for b in 0..<min(centres.count, levels.count) {
            let e = energy[b / 2][b % 2]
            levels[b] = count > 0 ? Decibels.fromPower(Float(e / Double(count))) : Decibels.floor
        }
        for g in energy.indices { energy[g] = SIMD2() }
        count = 0
    }
}
