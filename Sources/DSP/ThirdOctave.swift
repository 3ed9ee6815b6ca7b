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
    /// Three sections per band.
    private var sections: [Biquad]
    /// Sum of squares per band since the last `takeLevels`.
    private var energy: [Double]
    private var count = 0

    public init(sampleRate: Double) {
        var centres: [Double] = []
        var sections: [Biquad] = []
        for x in -16...13 {
            let fm = 1000 * pow(10, Double(x) / 10)
            let f2 = fm * pow(10, 0.05)
            guard f2 < sampleRate / 2 * 0.999 else { continue }
            centres.append(fm)
            sections += ThirdOctaveBank.design(low: fm * pow(10, -0.05), high: f2, sampleRate: sampleRate).map(Biquad.init)
        }
        self.centres = centres
        self.sections = sections
        energy = Array(repeating: 0, count: centres.count)
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
        for b in 0..<centres.count {
            var s0 = sections[3 * b], s1 = sections[3 * b + 1], s2 = sections[3 * b + 2]
            var e = 0.0
            for x in samples {
                let y = s2.process(s1.process(s0.process(Double(x))))
                e += y * y
            }
            s0.flushDenormals()
            s1.flushDenormals()
            s2.flushDenormals()
            sections[3 * b] = s0
            sections[3 * b + 1] = s1
            sections[3 * b + 2] = s2
            energy[b] += e
        }
        count += samples.count
    }

    /// Each band's RMS level (dBFS) over the samples since the last call, into `levels`
    /// (`bandCount` values), then starts a new interval. Real-time safe.
    public mutating func takeLevels(into levels: UnsafeMutableBufferPointer<Float>) {
        for b in 0..<min(centres.count, levels.count) {
            levels[b] = count > 0 ? Decibels.fromPower(Float(energy[b] / Double(count))) : Decibels.floor
            energy[b] = 0
        }
        count = 0
    }
}
