#if canImport(Glibc)
import Glibc
#endif

/// The K-weighting of ITU-R BS.1770-4 (§2.1): a high-frequency shelving pre-filter (the
/// acoustic effect of the head) followed by the "RLB" high-pass.
///
/// BS.1770 publishes both sections' coefficients for 48 kHz only. For every sample rate they
/// are derived here from the analogue parameters that reproduce those published values (the
/// same parametrisation libebur128 uses): the shelf at f0 = 1681.97 Hz, gain +4.00 dB,
/// Q = 0.7072; the high-pass at f0 = 38.135 Hz, Q = 0.5003; both through the bilinear
/// transform with pre-warping. At 48 kHz this gives BS.1770's Table 1 and Table 2 to 1e-8
/// (a unit test checks it).
public enum KWeighting {
    /// Stage 1: the shelving pre-filter at `sampleRate` Hz.
    public static func shelf(sampleRate: Double) -> BiquadCoefficients {
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
}
