#if canImport(Glibc)
import Glibc
#endif

/// True-peak level: the largest absolute value of the signal between its samples, read off an
/// interpolation of it 16× oversampled (below 192 kHz; the samples themselves from 192 kHz).
/// Read it in dBTP with `Decibels.fromAmplitude`.
///
/// ITU-R BS.1770-4 Annex 2 asks for at least 4× oversampling with an interpolation filter of
/// the kind it publishes (48 taps, 4 phases), and allows better ones. That filter's passband
/// ripples ±0.1 dB up to 20 kHz (−1.8 dB at 22 kHz), so it reads pink noise up to 0.15 dB low,
/// and 4× points alone can miss a peak between them by up to 0.47 dB at 20 kHz
/// (1 − cos(π·20/192)). This meter uses a longer filter and more phases: a Kaiser-windowed sinc
/// (β 5.65) of 16 phases × 24 taps, flat within 0.01 dB to 20 kHz at 48 kHz (−0.8 dB at
/// 22 kHz, −6 dB at 24 kHz), images at least 58 dB down from 28 kHz. Every sample is taken at
/// 4× (phases 0, 4, 8, 12; phase 0 is the sample itself, 12 samples late), and where a 4× value
/// comes within `refineRatio` of the peak so far, the other twelve phases too. A band-limited
/// signal cannot rise between two 4× points by more than that ratio allows (Bernstein:
/// |x″| ≤ ω²·max|x|, so over half a 4× step at the Nyquist frequency it rises at most
/// (π/4)²/8 ≈ 7.7 % of the peak), so the result is the 16× peak. Against ideal 16×
/// interpolation (by FFT) it reads within 0.01 dB on pink noise band-limited to 20 kHz and on
/// the EBU Tech 3341 true-peak cases (`LoudnessTests.testTruePeakAgainstA16TimesReference`).
///
/// One thread at a time; `process` is real-time safe.
public final class TruePeakMeter: @unchecked Sendable {
    // @unchecked Sendable: owned by one thread at a time.

    /// Phases of the interpolation filter (the oversampling), and taps per phase.
    static let phaseCount = 16, taps = 24
    /// The filter, phase-major: `phases[p][k]` weighs x[n − k] for the output at n + p/16
    /// (12 samples late). Phase 0 is exactly the identity; each phase sums to exactly 1 (DC is
    /// read exactly).
    static let phases: [[Float]] = {
        let l = phaseCount, n = taps, centre = l * n / 2
        let beta = 5.65
        func besselI0(_ x: Double) -> Double {
            var sum = 1.0, term = 1.0, k = 1.0
            while term > 1e-12 * sum { term *= (x / (2 * k)) * (x / (2 * k)); sum += term; k += 1 }
            return sum
        }
        return (0..<l).map { p in
            if p == 0 { return (0..<n).map { $0 == n / 2 ? 1 : 0 } }
            let raw = (0..<n).map { k -> Double in
                let j = Double(l * k + p - centre) / Double(l)  // time from the centre, samples
                let r = Double(l * k + p - centre) / Double(centre)  // −1 … 1 across the window
                let window = besselI0(beta * (1 - r * r).squareRoot()) / besselI0(beta)
                return sin(Double.pi * j) / (Double.pi * j) * window
            }
            let sum = raw.reduce(0, +)
            return raw.map { Float($0 / sum) }
        }
    }()
    /// Above this fraction of the peak so far (its reciprocal: 1 / 1.1 ≈ 0.91), a frame's 4×
    /// values send it to all sixteen phases. 1.1 is above the 1.083 that a band-limited signal
    /// can rise between 4× points (see the type's comment).
    static let refineRatio: Float = 1.1
    /// Samples processed per inner pass (the scratch buffer's size past the history).
    static let chunk = 1024

    /// Oversampling factor: 16, or 1 from 192 kHz.
    public let factor: Int
    public let channels: Int
    /// Tap k of phases 0, 4, 8 and 12, as one vector.
    private let coarse: [SIMD4<Float>]
    /// Tap k of all sixteen phases, as one vector.
    private let fine: [SIMD16<Float>]
    /// Per channel: the last 23 input samples, then room for a chunk.
    private let scratch: UnsafeMutablePointer<Float>
    /// Largest |oversampled value| per channel since the start or reset (linear).
    private let maxPeaks: UnsafeMutablePointer<Float>
    /// Largest |oversampled value| per channel since the last `takeRecentPeak` (linear).
    private let recentPeaks: UnsafeMutablePointer<Float>
    /// Largest |sample| per channel since the start (linear), a by-product of the block scan.
    private let samplePeaks: UnsafeMutablePointer<Float>
    /// Largest |oversampled value| per channel of the latest `process` call (linear): what the
    /// meter ports show, every period.
    private let latestPeaks: UnsafeMutablePointer<Float>
    /// Per group of 8 channels (`process(frames:channels:count:from:)`): 23 frames of history,
    /// then room for a chunk, the group's channels side by side.
    private let laneScratch: UnsafeMutablePointer<SIMD8<Float>>
    /// The sixteen phases' taps, phase-major (`taps` per phase).
    private let phaseTaps: UnsafeMutablePointer<Float>

    /// Not real-time safe (allocates).
    public init(sampleRate: Int, channels: Int) {
        factor = sampleRate < 192000 ? TruePeakMeter.phaseCount : 1
        self.channels = channels
        let h = TruePeakMeter.phases, n = TruePeakMeter.taps
        coarse = (0..<n).map { k in SIMD4(h[0][k], h[4][k], h[8][k], h[12][k]) }
        fine = (0..<n).map { k in
            var v = SIMD16<Float>()
            for p in 0..<16 { v[p] = h[p][k] }
            return v
        }
        let stride = TruePeakMeter.taps - 1 + TruePeakMeter.chunk
        scratch = .allocate(capacity: channels * stride)
        scratch.initialize(repeating: 0, count: channels * stride)
        maxPeaks = .allocate(capacity: channels)
        maxPeaks.initialize(repeating: 0, count: channels)
        recentPeaks = .allocate(capacity: channels)
        recentPeaks.initialize(repeating: 0, count: channels)
        samplePeaks = .allocate(capacity: channels)
        samplePeaks.initialize(repeating: 0, count: channels)
        latestPeaks = .allocate(capacity: channels)
        latestPeaks.initialize(repeating: 0, count: channels)
        let groups = (channels + 7) / 8
        laneScratch = .allocate(capacity: groups * stride)
        laneScratch.initialize(repeating: SIMD8(), count: groups * stride)
        phaseTaps = .allocate(capacity: TruePeakMeter.phaseCount * n)
        for (p, phase) in h.enumerated() { for k in 0..<n { phaseTaps[p * n + k] = phase[k] } }
    }

    deinit {
        scratch.deallocate()
        maxPeaks.deallocate()
        recentPeaks.deallocate()
        samplePeaks.deallocate()
        latestPeaks.deallocate()
        laneScratch.deallocate()
        phaseTaps.deallocate()
    }

    /// Feeds `frames` frames; `source(c)` points at channel c's samples. Real-time safe.
    /// Takes over `other`'s maxima (across a change of sample rate).
    public func continueFrom(_ other: TruePeakMeter) {
        for c in 0..<min(channels, other.channels) { maxPeaks[c] = max(maxPeaks[c], other.maxPeaks[c]) }
    }

    public func process(frames: Int, from source: (Int) -> UnsafePointer<Float>) {
        for c in 0..<channels { process(frames: frames, from: source(c), channel: c) }
    }

    /// Feeds channel `c` alone (each channel's state is its own: channels may be fed from
    /// different threads at once). Real-time safe.
    public func process(frames: Int, from input: UnsafePointer<Float>, channel c: Int) {
        let history = TruePeakMeter.taps - 1
        let stride = history + TruePeakMeter.chunk
        do {
            let buffer = scratch + c * stride
            // Blocks that cannot beat the peak so far are skipped (`oversampledPeak`): with the
            // latest call's own peak wanted (the meter ports), "so far" starts at this call.
            var peak: Float = tracksLatest ? 0 : recentPeaks[c]
            var samplePeak = samplePeaks[c]
            var done = 0
            while done < frames {
                let n = min(TruePeakMeter.chunk, frames - done)
                (buffer + history).update(from: input + done, count: n)
                if factor == 1 {
                    let m = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer + history, count: n))
                    peak = max(peak, m)
                    samplePeak = max(samplePeak, m)
                } else {
                    peak = oversampledPeak(buffer, count: n, atLeast: peak, samplePeak: &samplePeak)
                }
                // Keep the last `history` samples for the next pass.
                buffer.update(from: buffer + n, count: history)
                done += n
            }
            latestPeaks[c] = peak
            recentPeaks[c] = max(recentPeaks[c], peak)
            samplePeaks[c] = samplePeak
            maxPeaks[c] = max(maxPeaks[c], peak)
        }
    }

    /// Feeds channels `first ..< first + count` (at most 8, `first` a multiple of 8) together,
    /// side by side in the lanes of SIMD8 vectors: every tap one vector multiply-add for all of
    /// them. The same values as channel by channel (the same operations in the same order,
    /// lane by lane), without the skipping of quiet blocks; faster when every period's peak is
    /// wanted (`tracksLatest`, the live meters). A channel is fed either way, not both.
    /// Groups of channels may be fed from different threads at once. Real-time safe.
    public func process(frames: Int, channels first: Int, count: Int, from source: (Int) -> UnsafePointer<Float>) {
        precondition(first % 8 == 0 && count >= 1 && count <= 8 && first + count <= channels)
        let history = TruePeakMeter.taps - 1
        let x = laneScratch + (first / 8) * (history + TruePeakMeter.chunk)
        var bases = SIMD8<Int>()
        for l in 0..<count { bases[l] = Int(bitPattern: source(l)) }
        var latest = SIMD8<Float>(), sample = SIMD8<Float>()
        let h = phaseTaps, n = TruePeakMeter.taps
        var done = 0
        while done < frames {
            let m = min(TruePeakMeter.chunk, frames - done)
            for i in 0..<m {
                var v = SIMD8<Float>()
                for l in 0..<count { v[l] = UnsafePointer<Float>(bitPattern: bases[l])![done + i] }
                x[history + i] = v
                var a = v
                a.replace(with: -a, where: a .< 0)
                sample.replace(with: a, where: a .> sample)
            }
            if factor == 1 {
                latest.replace(with: sample, where: sample .> latest)
            } else {
                // As `oversampledPeak`, lane by lane: phases 0, 4, 8, 12, and all sixteen for
                // the lanes whose 4× values (or the next frame's phase 0, x[n − 11]) come
                // within `refineRatio` of their peak so far.
                let ratio = TruePeakMeter.refineRatio
                for i in history..<(history + m) {
                    var coarseMax = SIMD8<Float>()
                    for p in Swift.stride(from: 0, to: 16, by: 4) {
                        var acc = peakTap(h + p * n, x, i, n)
                        acc.replace(with: -acc, where: acc .< 0)
                        coarseMax.replace(with: acc, where: acc .> coarseMax)
                    }
                    var next = x[i - (n / 2 - 1)]
                    next.replace(with: -next, where: next .< 0)
                    var reach = coarseMax
                    reach.replace(with: next, where: next .> reach)
                    let refine = reach * ratio .> latest
                    if any(refine) {
                        var fineMax = coarseMax
                        for p in 0..<16 where p % 4 != 0 {
                            var acc = peakTap(h + p * n, x, i, n)
                            acc.replace(with: -acc, where: acc .< 0)
                            fineMax.replace(with: acc, where: acc .> fineMax)
                        }
                        coarseMax.replace(with: fineMax, where: refine)
                    }
                    latest.replace(with: coarseMax, where: coarseMax .> latest)
                }
            }
            for k in 0..<history { x[k] = x[m + k] }
            done += m
        }
        for l in 0..<count {
            let c = first + l
            latestPeaks[c] = latest[l]
            recentPeaks[c] = max(recentPeaks[c], latest[l])
            maxPeaks[c] = max(maxPeaks[c], latest[l])
            samplePeaks[c] = max(samplePeaks[c], sample[l])
        }
    }

    /// One phase's output for the 8 lanes at frame `i` of `x`: Σ_k taps[k]·x[i − k], in the
    /// order `oversampledPeak` sums (tap 0 first).
    @inline(__always)
    private func peakTap(_ taps: UnsafeMutablePointer<Float>, _ x: UnsafeMutablePointer<SIMD8<Float>>, _ i: Int, _ n: Int) -> SIMD8<Float> {
        var acc = taps[0] * x[i]
        for k in 1..<n { acc += taps[k] * x[i - k] }
        return acc
    }

    /// Σ|h_p[k]| of the largest phase: no interpolated value can exceed this times the largest
    /// |x| under the filter, which lets whole blocks be skipped when they cannot beat the
    /// peak found so far (an exact bound, not an approximation).
    private static let maxAbsGain: Float = {
        phases.map { $0.reduce(0) { $0 + abs($1) } }.max()! * 1.0001
    }()

    /// The larger of `floor` and the largest |y| over the oversampled values of `count` new
    /// samples, which follow 23 samples of history in `buffer` (4× everywhere, 16× where a
    /// frame comes within `refineRatio` of the peak so far). Blocks of 64 outputs are
    /// skipped when the largest |x| under the filter (bounded by the maxima of this block's
    /// and the previous block's inputs) times `maxAbsGain` cannot beat the peak so far.
    @inline(__always)
    private func oversampledPeak(_ buffer: UnsafeMutablePointer<Float>, count: Int, atLeast floor: Float,
                                 samplePeak: inout Float) -> Float
    {
        let history = TruePeakMeter.taps - 1
        let block = 64
        let gain = TruePeakMeter.maxAbsGain, ratio = TruePeakMeter.refineRatio
        var peak = floor
        var previousMax = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer, count: history))
        var start = 0
        while start < count {
            let n = min(block, count - start)
            let blockMax = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer + history + start, count: n))
            samplePeak = max(samplePeak, blockMax)
            if max(previousMax, blockMax) * gain > peak {
                for i in start..<(start + n) {
                    // x[n − k] for k = 0 … 23 is buffer[history + i − k].
                    let newest = buffer + history + i
                    var acc = coarse[0] * newest[0]
                    for k in 1..<TruePeakMeter.taps { acc += coarse[k] * newest[-k] }
                    acc.replace(with: -acc, where: acc .< 0)
                    var value = Vector.largest(acc)
                    // The next frame's phase 0 is x[n − 11]: the segment up to it is this
                    // frame's phases 13 … 15.
                    if max(value, abs(newest[-(TruePeakMeter.taps / 2 - 1)])) * ratio > peak {
                        var all = fine[0] * newest[0]
                        for k in 1..<TruePeakMeter.taps { all += fine[k] * newest[-k] }
                        all.replace(with: -all, where: all .< 0)
                        value = all.max()
                    }
                    peak = max(peak, value)
                }
            }
            previousMax = blockMax
            start += n
        }
        return peak
    }

    /// Largest |sample| of channel `c` since the start (linear). Real-time safe.
    public func samplePeak(channel c: Int) -> Float { samplePeaks[c] }

    /// Largest true peak of channel `c` since the start or reset (linear). Real-time safe.
    public func maxPeak(channel c: Int) -> Float { maxPeaks[c] }

    /// Largest true peak of channel `c` since the last call (linear), and starts a new
    /// interval. Real-time safe.
    /// Largest |oversampled value| of channel `c` in the frames of the latest `process` call
    /// (with `tracksLatest`; else at least that).
    public func latestPeak(channel c: Int) -> Float { latestPeaks[c] }

    /// Whether `latestPeak` must be exact (the live meter ports), which costs the skipping of
    /// quiet blocks across calls; a file summary leaves it off.
    public var tracksLatest = false

    public func takeRecentPeak(channel c: Int) -> Float {
        let p = recentPeaks[c]
        recentPeaks[c] = 0
        return p
    }

    /// Forgets the maxima (not the filter history). Real-time safe.
    public func reset() {
        for c in 0..<channels {
            maxPeaks[c] = 0
            recentPeaks[c] = 0
        }
    }
}
