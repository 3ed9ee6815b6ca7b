/// Errors of the DSP module: all are configuration errors found at setup.
public enum DSPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The FFT size is not a power of two in `FFTSize.range`.
    case invalidFFTSize(Int)
    /// The overlap is not in 0 ..< 1 or leaves a hop of less than one sample.
    case invalidOverlap(Double)
    /// A band's bounds are not 0 < low < high ≤ Nyquist.
    case invalidFrequencyRange(low: Double, high: Double, sampleRate: Double)
    /// The number of display bars is not in 1 ... 1024.
    case invalidBarCount(Int)
    /// The sample rate is not positive.
    case invalidSampleRate(Double)
    /// FFTW could not allocate or plan.
    case fftwFailure(String)
    /// The sample rate is outside `SampleRates.supported`.
    case unsupportedSampleRate(Int)

    public var description: String {
        switch self {
        case .invalidFFTSize(let n):
            return "FFT size \(n) is not a power of two from \(FFTSize.range.lowerBound) to \(FFTSize.range.upperBound)"
        case .invalidOverlap(let f):
            return "overlap \(f) is not in 0 ..< 1 (a fraction, e.g. 0.75 for 75 %)"
        case .invalidFrequencyRange(let lo, let hi, let sr):
            return "frequency range \(lo)–\(hi) Hz is not within 0 < low < high ≤ \(sr / 2) Hz (Nyquist)"
        case .invalidBarCount(let n):
            return "bar count \(n) is not in 1 ... 1024"
        case .invalidSampleRate(let sr):
            return "sample rate \(sr) Hz is not positive"
        case .fftwFailure(let what):
            return "FFTW failed: \(what)"
        case .unsupportedSampleRate(let sr):
            return "sample rate \(sr) Hz is not supported: jackvu meters "
                + "\(SampleRates.supported.lowerBound) to \(SampleRates.supported.upperBound) Hz (\(SampleRates.why))"
        }
    }
}

/// FFT sizes jackvu accepts.
public enum FFTSize {
    /// Powers of two from 256 to 65536.
    public static let range: ClosedRange<Int> = 256...65536
    /// The default, 4096 samples.
    public static let `default` = 4096

    /// Throws unless `n` is a power of two in `range`.
    public static func validate(_ n: Int) throws(DSPError) {
        guard range.contains(n), n & (n - 1) == 0 else { throw .invalidFFTSize(n) }
    }
}

/// Sample rates the meters honour.
public enum SampleRates {
    /// 8 kHz to 768 kHz. Below 8 kHz, BS.1770's K-weighting (a high shelf near 1.7 kHz,
    /// redesigned for each rate by the bilinear transform) loses its shape and, below about
    /// 3.4 kHz, its stability, and the PPM's 5 kHz calibration burst is past Nyquist; above
    /// 768 kHz (the highest rate of audio interfaces) the meters' set-up grows with the rate
    /// for no use (a header claiming 100 MHz would keep the PPM's calibration busy for minutes).
    public static let supported: ClosedRange<Int> = 8_000...768_000
    static let why = "the K-weighting filter and the PPM's calibration need at least 8 kHz; 768 kHz is the highest audio rate"

    /// Throws unless `rate` is in `supported`.
    public static func validate(_ rate: Int) throws(DSPError) {
        guard supported.contains(rate) else { throw .unsupportedSampleRate(rate) }
    }
}
