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
/// 4× (phases 0, 4, 8, 12; phase 0 is the sample itself, 12 samples late); then, once per
/// chunk, all sixteen phases are taken around each crest of the 4× values (a value not below
/// its neighbours) that can reach the chunk's peak: one whose parabola through it and its
/// neighbours, plus 2 %, tops the peak (a sinusoid's parabola is at most 0.85 % low, at the
/// Nyquist frequency), or for a crest at phase 0, whose left neighbour is in the frame before,
/// one within 10 % of the peak (a band-limited signal rises at most (π/4)²/8 ≈ 7.7 % of its
/// peak over half a 4× step: Bernstein's |x″| ≤ ω²·max|x|). Against ideal 16× interpolation
/// (a 1,024-tap Kaiser sinc in Double) it reads within 0.01 dB on pink noise band-limited to
/// 20 kHz, the EBU Tech 3341 true-peak cases and 19.2 kHz bursts whose crests all fall
/// halfway between 4× points (`LoudnessTests.testTruePeakAgainstA16TimesReference`).
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
    /// A crest at phase 0, or any 4× value, within this ratio of the peak is looked at more
    /// closely: 1.1 is above the 1.083 that a band-limited signal can rise between 4× points
    /// (see the type's comment).
    static let refineRatio: Float = 1.1
    /// The margin on a crest's parabola (`reach`): twice the worst case of a sinusoid at the
    /// Nyquist frequency.
    static let parabolaMargin: Float = 1.02
    /// Samples kept from one pass to the next: one frame's window (`taps`, x[n] … x[n − 23])
    /// plus the frame before it (a crest at phase 0 takes the previous frame's phases too).
    static let history = taps
    /// Samples processed per inner pass (the scratch buffer's size past the history).
    static let chunk = 1024

    /// Oversampling factor: 16, or 1 from 192 kHz.
    public let factor: Int
    public let channels: Int
    /// Tap k of phases 0, 4, 8 and 12, as one vector.
    private let coarse: [SIMD4<Float>]
    /// Tap k of all sixteen phases, as one vector.
    private let fine: [SIMD16<Float>]
    /// Per channel: the last 24 input samples, then room for a chunk.
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
    /// Per group of 8 channels (`process(frames:channels:count:from:)`): 24 frames of history,
    /// then room for a chunk, the group's channels side by side.
    private let laneScratch: UnsafeMutablePointer<SIMD8<Float>>
    /// The sixteen phases' taps, phase-major (`taps` per phase).
    private let phaseTaps: UnsafeMutablePointer<Float>
    /// Per channel, `chunk` entries: the |4× values| of each frame of a chunk (phases 0, 4, 8,
    /// 12), for `oversampledPeak`'s second pass.
    private let coarseValues: UnsafeMutablePointer<SIMD4<Float>>
    /// The same per group of 8 channels, lane by lane (4 vectors per frame).
    private let laneCoarseValues: UnsafeMutablePointer<SIMD8<Float>>

    /// Not real-time safe (allocates).
    public init(sampleRate: Int, channels: Int) {
        factor = sampleRate < 192000 ? TruePeakMeter.phaseCount : 1
        _ = TruePeakMeter.maxAbsGain  // computed here, not on the first `process`
        self.channels = channels
        let h = TruePeakMeter.phases, n = TruePeakMeter.taps
        coarse = (0..<n).map { k in SIMD4(h[0][k], h[4][k], h[8][k], h[12][k]) }
        fine = (0..<n).map { k in
            var v = SIMD16<Float>()
            for p in 0..<16 { v[p] = h[p][k] }
            return v
        }
        let stride = TruePeakMeter.history + TruePeakMeter.chunk
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
        let chunk = TruePeakMeter.chunk
        coarseValues = .allocate(capacity: channels * chunk)
        coarseValues.initialize(repeating: SIMD4(), count: channels * chunk)
        laneCoarseValues = .allocate(capacity: groups * 4 * chunk)
        laneCoarseValues.initialize(repeating: SIMD8(), count: groups * 4 * chunk)
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
        coarseValues.deallocate()
        laneCoarseValues.deallocate()
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
        let history = TruePeakMeter.history
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
                    peak = oversampledPeak(buffer, count: n, atLeast: peak, samplePeak: &samplePeak, channel: c)
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
        let history = TruePeakMeter.history
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
                // As `oversampledPeak`, lane by lane: phases 0, 4, 8, 12 of every frame, then
                // all sixteen of the frames with a crest within `refineRatio` of the peak.
                let ratio = TruePeakMeter.refineRatio
                let stored = laneCoarseValues + (first / 8) * 4 * TruePeakMeter.chunk
                for i in history..<(history + m) {
                    // Phase 0 is the sample 12 frames back, exactly (its taps are 0 and 1).
                    var c0 = x[i - n / 2], c4 = peakTap(h + 4 * n, x, i, n)
                    var c8 = peakTap(h + 8 * n, x, i, n), c12 = peakTap(h + 12 * n, x, i, n)
                    c0.replace(with: -c0, where: c0 .< 0)
                    c4.replace(with: -c4, where: c4 .< 0)
                    c8.replace(with: -c8, where: c8 .< 0)
                    c12.replace(with: -c12, where: c12 .< 0)
                    let at = stored + 4 * (i - history)
                    at[0] = c0; at[1] = c4; at[2] = c8; at[3] = c12
                    latest.replace(with: c0, where: c0 .> latest)
                    latest.replace(with: c4, where: c4 .> latest)
                    latest.replace(with: c8, where: c8 .> latest)
                    latest.replace(with: c12, where: c12 .> latest)
                }
                for i in history..<(history + m) {
                    let at = stored + 4 * (i - history)
                    let (c0, c4, c8, c12) = (at[0], at[1], at[2], at[3])
                    var value = c0
                    value.replace(with: c4, where: c4 .> value)
                    value.replace(with: c8, where: c8 .> value)
                    value.replace(with: c12, where: c12 .> value)
                    guard any(value * ratio .> latest) else { continue }
                    var next = x[i - (n / 2 - 1)]
                    next.replace(with: -next, where: next .< 0)
                    var crest0 = SIMD8<Float>()
                    crest0.replace(with: c0 * ratio, where: c0 .>= c4)
                    var crest = crest0
                    let reach4 = TruePeakMeter.reach(c0, c4, c8), reach8 = TruePeakMeter.reach(c4, c8, c12)
                    let reach12 = TruePeakMeter.reach(c8, c12, next)
                    crest.replace(with: reach4, where: (c4 .>= c8) .& (c4 .>= c0) .& (reach4 .> crest))
                    crest.replace(with: reach8, where: (c8 .>= c12) .& (c8 .>= c4) .& (reach8 .> crest))
                    crest.replace(with: reach12, where: (c12 .>= next) .& (c12 .>= c8) .& (reach12 .> crest))
                    let refine = crest .> latest
                    if any(refine) {
                        let here = allPhases(h, x, i, n)
                        latest.replace(with: here, where: refine .& (here .> latest))
                    }
                    let before = crest0 .> latest
                    if any(before) {
                        let earlier = allPhases(h, x, i - 1, n)
                        latest.replace(with: earlier, where: before .& (earlier .> latest))
                    }
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


    /// How high the signal can rise at a crest `c` of the 4× values between `l` and `r`: the
    /// vertex of the parabola through the three, plus `parabolaMargin`. For a sinusoid the
    /// vertex is at most 0.27 % low at 10 kHz, 0.42 % at 20 kHz and 0.85 % at 24 kHz.
    @inline(__always)
    static func reach(_ l: Float, _ c: Float, _ r: Float) -> Float {
        let curvature = 2 * c - l - r
        let vertex = curvature > 0 ? c + (l - r) * (l - r) / (8 * curvature) : c
        return vertex * parabolaMargin
    }

    @inline(__always)
    static func reach(_ l: SIMD8<Float>, _ c: SIMD8<Float>, _ r: SIMD8<Float>) -> SIMD8<Float> {
        let curvature = 2 * c - l - r
        var vertex = c + (l - r) * (l - r) / (8 * curvature)
        vertex.replace(with: c, where: .!(curvature .> 0))
        return vertex * parabolaMargin
    }

    /// The largest |value| of all sixteen phases at the frame whose newest sample is `newest`.
    @inline(__always)
    private func allPhases(_ newest: UnsafeMutablePointer<Float>) -> Float {
        let f = fine
        var all = f[0] * newest[0]
        for k in 1..<TruePeakMeter.taps { all += f[k] * newest[-k] }
        all.replace(with: -all, where: all .< 0)
        return all.max()
    }

    /// The largest |value| of all sixteen phases for the 8 lanes at frame `i` of `x`.
    @inline(__always)
    private func allPhases(_ h: UnsafeMutablePointer<Float>, _ x: UnsafeMutablePointer<SIMD8<Float>>, _ i: Int, _ n: Int) -> SIMD8<Float> {
        var best = x[i - n / 2]  // phase 0
        best.replace(with: -best, where: best .< 0)
        for p in 1..<16 {
            var acc = peakTap(h + p * n, x, i, n)
            acc.replace(with: -acc, where: acc .< 0)
            best.replace(with: acc, where: acc .> best)
        }
        return best
    }

    /// Σ|h_p[k]| of the largest phase: no interpolated value can exceed this times the largest
    /// |x| under the filter, which lets whole blocks be skipped when they cannot beat the
    /// peak found so far (an exact bound, not an approximation).
    private static let maxAbsGain: Float = {
        phases.map { $0.reduce(0) { $0 + abs($1) } }.max()! * 1.0001
    }()

    /// The larger of `floor` and the largest |y| over the oversampled values of `count` new
    /// samples, which follow 24 samples of history in `buffer` (4× everywhere, 16× where a
    /// frame comes within `refineRatio` of the peak so far). Blocks of 64 outputs are
    /// skipped when the largest |x| under the filter (bounded by the maxima of this block's
    /// and the previous block's inputs) times `maxAbsGain` cannot beat the peak so far.
    @inline(__always)
    private func oversampledPeak(_ buffer: UnsafeMutablePointer<Float>, count: Int, atLeast floor: Float,
                                 samplePeak: inout Float, channel c: Int) -> Float
    {
        let coarseValues = self.coarseValues + c * TruePeakMeter.chunk
        let h = coarse
        let history = TruePeakMeter.history
        let block = 64
        let gain = TruePeakMeter.maxAbsGain, ratio = TruePeakMeter.refineRatio
        var peak = floor
        var previousMax = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer, count: history))
        var start = 0
        while start < count {
            let n = min(block, count - start)
            let blockMax = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer + history + start, count: n))
            samplePeak = max(samplePeak, blockMax)
            let values = coarseValues + start
            if max(previousMax, blockMax) * gain > peak {
                var best = SIMD4<Float>()
                for i in start..<(start + n) {
                    // x[n − k] for k = 0 … 23 is buffer[history + i − k].
                    let newest = buffer + history + i
                    var acc = h[0] * newest[0]
                    for k in 1..<TruePeakMeter.taps { acc += h[k] * newest[-k] }
                    acc.replace(with: -acc, where: acc .< 0)
                    best.replace(with: acc, where: acc .> best)
                    values[i - start] = acc
                }
                peak = max(peak, Vector.largest(best))
            } else {
                // Nothing here can beat the peak: no crest either.
                values.update(repeating: SIMD4(), count: n)
            }
            previousMax = blockMax
            start += n
        }
        // Then all sixteen phases of the frames with a crest that can reach the peak (and of
        // the frame before, for a crest at phase 0). Lane values are read from memory: taken
        // out of the vectors in the loop above, they made it 3× slower.
        let c4s = UnsafeRawPointer(coarseValues).assumingMemoryBound(to: Float.self)
        for i in 0..<count {
            let c0 = c4s[4 * i], c4 = c4s[4 * i + 1], c8 = c4s[4 * i + 2], c12 = c4s[4 * i + 3]
            guard max(max(c0, c4), max(c8, c12)) * ratio > peak else { continue }
            let newest = buffer + history + i
            let next = abs(newest[-(TruePeakMeter.taps / 2 - 1)])
            let crest0: Float = c0 >= c4 ? c0 * ratio : 0
            var crest = crest0
            if c4 >= c8 && c4 >= c0 { crest = max(crest, TruePeakMeter.reach(c0, c4, c8)) }
            if c8 >= c12 && c8 >= c4 { crest = max(crest, TruePeakMeter.reach(c4, c8, c12)) }
            if c12 >= next && c12 >= c8 { crest = max(crest, TruePeakMeter.reach(c8, c12, next)) }
            if crest > peak { peak = max(peak, allPhases(newest)) }
            if crest0 > peak { peak = max(peak, allPhases(newest - 1)) }
        }
        return peak
    }

    /// Largest |sample| of channel `c` since the start (linear). Real-time safe.
    public func samplePeak(channel c: Int) -> Float { samplePeaks[c] }

    /// Largest true peak of channel `c` since the start or reset (linear). Real-time safe.
    public func maxPeak(channel c: Int) -> Float { maxPeaks[c] }

    /// Largest |oversampled value| of channel `c` in the frames of the latest `process` call
    /// (with `tracksLatest`; else at least that).
    public func latestPeak(channel c: Int) -> Float { latestPeaks[c] }

    /// Whether `latestPeak` must be exact (the live meter ports), which costs the skipping of
    /// quiet blocks across calls; a file summary leaves it off.
    public var tracksLatest = false

    /// Largest true peak of channel `c` since the last call (linear), and starts a new
    /// interval. Real-time safe.
    public func takeRecentPeak(channel c: Int) -> Float {
        let p = recentPeaks[c]
        recentPeaks[c] = 0
        return p
    }

    /// Channel `c`'s maxima (since the start, since the last `takeRecentPeak`, of the samples),
    /// to put back with `restore` after audio that must not count (see
    /// `Analyzer.withoutMaxima`).
    public struct Maxima: Sendable, Equatable {
        public var max: Float, recent: Float, sample: Float
    }

    public func maxima(channel c: Int) -> Maxima {
        Maxima(max: maxPeaks[c], recent: recentPeaks[c], sample: samplePeaks[c])
    }

    public func restore(_ m: Maxima, channel c: Int) {
        maxPeaks[c] = m.max
        recentPeaks[c] = m.recent
        samplePeaks[c] = m.sample
    }

    /// Forgets channel `c`'s maximum (not its filter history). Real-time safe.
    public func reset(channel c: Int) {
        maxPeaks[c] = 0
        recentPeaks[c] = 0
    }

    /// Forgets the maxima (not the filter history). Real-time safe.
    public func reset() {
        for c in 0..<channels {
            maxPeaks[c] = 0
            recentPeaks[c] = 0
        }
    }
}
