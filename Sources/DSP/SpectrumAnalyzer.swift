#if canImport(Glibc)
import Glibc
#endif

/// Settings of a `SpectrumAnalyzer`.
public struct SpectrumConfiguration: Equatable, Sendable {
    /// Sample rate of the signal, in Hz. Always the real one (the JACK server's): a wrong rate
    /// names A4 (440 Hz) as G#4 when the signal runs at 48 kHz and the analyzer assumes 44.1 kHz.
    public var sampleRate: Double
    /// FFT size in samples: a power of two from 256 to 65536.
    public var fftSize: Int
    /// Number of log-spaced display bars.
    public var barCount: Int
    /// Lower edge of the first bar, in Hz.
    public var minFrequency: Double
    /// Upper edge of the last bar, in Hz (clamped to Nyquist).
    public var maxFrequency: Double

    public init(
        sampleRate: Double, fftSize: Int = FFTSize.default, barCount: Int = 48,
        minFrequency: Double = 60, maxFrequency: Double = 18000
    ) {
        self.sampleRate = sampleRate
        self.fftSize = fftSize
        self.barCount = barCount
        self.minFrequency = minFrequency
        self.maxFrequency = maxFrequency
    }

    /// Throws the first invalid setting.
    public func validate() throws(DSPError) {
        guard sampleRate > 0, sampleRate.isFinite else { throw .invalidSampleRate(sampleRate) }
        try FFTSize.validate(fftSize)
        guard (1...1024).contains(barCount) else { throw .invalidBarCount(barCount) }
        guard minFrequency > 0, minFrequency < maxFrequency, minFrequency < sampleRate / 2 else {
            throw .invalidFrequencyRange(low: minFrequency, high: maxFrequency, sampleRate: sampleRate)
        }
    }
}

/// The strongest spectral peak of a frame.
public struct SpectralPeak: Equatable, Sendable {
    /// Interpolated frequency, in Hz.
    public var frequency: Double
    /// Its magnitude, normalised by the FFT size (a full-scale sine reads about 0.25 through
    /// the Hann window).
    public var magnitude: Float
    /// Nearest note, nil below 30 Hz.
    public var note: Note?
}

/// FFT spectrum of one frame: log-spaced display bars and the peak frequency with its note.
///
/// The pipeline is the original app's: Hann window → FFT → magnitudes normalised by the FFT
/// size → bars on −80 ... 0 dB mapped to 0 ... 1 — but calibrated as an engineer reads an
/// analyser: a sine reads its peak level in dBFS on the bar that holds it. A bar's level is
/// the larger of its band's power and its strongest bin, each scaled to a sine's peak: the
/// band power Σ m² of a sine of peak A is (A/2)²·3/8 (one side of the spectrum, the Hann
/// window's mean square 3/8), so A = √(Σ m² · 32/3) — exact wherever the sine lies, once the
/// bar holds the window's main lobe; a bar narrower than that (one bin, at low frequencies)
/// reads its strongest bin m = A/4 (one side, the Hann window's coherent gain ½) — exact at
/// a bin centre, at most 1.42 dB low between bins (the Hann window's scalloping loss). Noise
/// reads its band power, as a sine of the same power would. (The original averaged the
/// magnitudes: a −18 dBFS sine peaked near −38 dB.) The
/// peak is refined between bins with the exact ratio estimator for the Hann window
/// (Grandke 1983), `δ = (2α − 1) / (α + 1)` with `α` the larger neighbour over the peak bin,
/// which is unbiased for an isolated sine (the original reported the bin centre, ±½ bin).
///
/// One thread at a time; `analyze` is real-time safe, `init` is not.
public final class SpectrumAnalyzer: @unchecked Sendable {
    // @unchecked Sendable: all buffers belong to the instance; one thread uses it at a time.

    public let configuration: SpectrumConfiguration
    /// Display range of the bars, in dB: −80 dB maps to 0, 0 dB to 1.
    public static let barRange: ClosedRange<Float> = -80...0
    /// Peaks weaker than a sine at this level (dBFS) count as silence: no peak, no note.
    public static let silenceThreshold: Float = -100

    private let fft: RealFFT
    /// Hann window, `fftSize` samples.
    private let window: UnsafeMutableBufferPointer<Float>
    /// Normalised magnitudes of bins 0 ..< fftSize/2.
    private let magnitudeStorage: UnsafeMutableBufferPointer<Float>
    /// Bar values, 0 ... 1.
    private let barStorage: UnsafeMutableBufferPointer<Float>
    /// Each bar's first and last bin (inclusive).
    private let barBins: [(lo: Int, hi: Int)]
    /// Minimum normalised peak magnitude that is not silence.
    private let peakThreshold: Float

    /// The last frame's bars, `barCount` values in 0 ... 1.
    public var bars: UnsafeBufferPointer<Float> { UnsafeBufferPointer(barStorage) }
    /// The last frame's normalised magnitudes, bins 0 ..< fftSize/2.
    public var magnitudes: UnsafeBufferPointer<Float> { UnsafeBufferPointer(magnitudeStorage) }
    /// The last frame's peak, nil for silence.
    public private(set) var peak: SpectralPeak?

    /// Plans the FFT and precomputes the window and the bars' bins. Not real-time safe.
    public init(configuration: SpectrumConfiguration) throws(DSPError) {
        try configuration.validate()
        self.configuration = configuration
        let n = configuration.fftSize
        fft = try RealFFT(size: n)
        window = .allocate(capacity: n)
        Window.hann(into: window)
        magnitudeStorage = .allocate(capacity: n / 2)
        magnitudeStorage.initialize(repeating: 0)
        barStorage = .allocate(capacity: configuration.barCount)
        barStorage.initialize(repeating: 0)
        barBins = SpectrumAnalyzer.barBins(configuration)
        peakThreshold = Decibels.toAmplitude(SpectrumAnalyzer.silenceThreshold) / 4
    }

    deinit {
        window.deallocate()
        magnitudeStorage.deallocate()
        barStorage.deallocate()
    }

    /// The original app's log-spaced bars: bar i spans 10^(logMin + i·step) ... 10^(logMin + (i+1)·step)
    /// and covers bins Int(fLow/sr·N) ... max(that, Int(fHigh/sr·N)), clamped to the spectrum.
    static func barBins(_ c: SpectrumConfiguration) -> [(lo: Int, hi: Int)] {
        let n = Double(c.fftSize)
        let half = c.fftSize / 2
        let logMin = log10(c.minFrequency)
        let logMax = log10(min(c.maxFrequency, c.sampleRate / 2))
        return (0..<c.barCount).map { i in
            let fLow = pow(10, logMin + Double(i) / Double(c.barCount) * (logMax - logMin))
            let fHigh = pow(10, logMin + Double(i + 1) / Double(c.barCount) * (logMax - logMin))
            let lo = min(half - 1, max(0, Int(fLow / c.sampleRate * n)))
            let hi = min(half - 1, max(lo, Int(fHigh / c.sampleRate * n)))
            return (lo, hi)
        }
    }

    /// Analyses one frame: `frame.count` samples, the most recent last. A shorter frame is
    /// zero-padded at the end, a longer one truncated to its first `fftSize` samples (the
    /// original app's behaviour). Updates `bars`, `magnitudes` and `peak`. Real-time safe.
    public func analyze(_ frame: UnsafeBufferPointer<Float>) {
        let n = configuration.fftSize
        let count = min(frame.count, n)
        let input = fft.input
        // Window into the FFT input; zero-pad the rest.
        Vector.multiply(
            UnsafeBufferPointer(rebasing: frame.prefix(count)),
            UnsafeBufferPointer(window), result: input)
        if count < n {
            Vector.fill(UnsafeMutableBufferPointer(rebasing: input[count...]), with: 0)
        }
        fft.forward()
        Vector.magnitudes(
            interleaved: UnsafeBufferPointer(fft.output), scale: 1 / Float(n),
            result: magnitudeStorage)
        computeBars()
        peak = findPeak()
    }

    /// A sine of peak A: its band power Σ m² is A²·3/32, its strongest bin at most A/4.
    static let bandPowerToPeak: Float = 32 / 3
    static let binToPeak: Float = 4

    private func computeBars() {
        let mags = magnitudeStorage
        let lo = SpectrumAnalyzer.barRange.lowerBound
        let span = SpectrumAnalyzer.barRange.upperBound - lo
        for (i, bins) in barBins.enumerated() {
            let slice = UnsafeBufferPointer(rebasing: mags[bins.lo...bins.hi])
            let band = (Vector.sumOfSquares(slice) * SpectrumAnalyzer.bandPowerToPeak).squareRoot()
            let strongest = Vector.maxMagnitude(slice) * SpectrumAnalyzer.binToPeak
            let db = Decibels.fromAmplitude(max(band, strongest), floor: -180)
            barStorage[i] = min(1, max(0, (db - lo) / span))
        }
    }

    /// The level a bar shows, dBFS (a sine's peak level), from its value 0 ... 1.
    public static func barLevel(_ value: Float) -> Float {
        barRange.lowerBound + value * (barRange.upperBound - barRange.lowerBound)
    }

    private func findPeak() -> SpectralPeak? {
        let mags = UnsafeBufferPointer(magnitudeStorage)
        // Skip DC; the last bin has no right neighbour.
        guard let (k, m) = Vector.maxIndex(mags, in: 1..<(mags.count - 1)), m >= peakThreshold
        else { return nil }
        let left = mags[k - 1], right = mags[k + 1]
        var delta: Double
        if right >= left {
            let alpha = Double(right / m)
            delta = (2 * alpha - 1) / (alpha + 1)
        } else {
            let alpha = Double(left / m)
            delta = -(2 * alpha - 1) / (alpha + 1)
        }
        delta = min(0.5, max(-0.5, delta))
        let frequency = (Double(k) + delta) * configuration.sampleRate / Double(configuration.fftSize)
        return SpectralPeak(frequency: frequency, magnitude: m, note: Note(frequency: frequency))
    }
}

extension SpectrumAnalyzer {
    /// The result of `process(_:)`.
    public struct Result: Sendable {
        public var bars: [Float]
        /// Peak frequency in Hz, 0 for silence.
        public var peakFrequency: Double
        /// Note name of the peak, `—` for silence or below 30 Hz (as in the original app).
        public var note: String
        public var peak: SpectralPeak?
    }

    /// Convenience for tests and tools: analyses `buffer` and returns copies of the results.
    /// Not real-time safe (allocates the result).
    public func process(_ buffer: [Float]) -> Result {
        buffer.withUnsafeBufferPointer { analyze($0) }
        return Result(
            bars: Array(bars), peakFrequency: peak?.frequency ?? 0,
            note: peak?.note?.name ?? "—", peak: peak)
    }
}
