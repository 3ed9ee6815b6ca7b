#if canImport(Glibc)
import Glibc
#endif
import DSPAVX2

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
/// Nyquist frequency) — for a crest at phase 0 the left neighbour is phase 12 of the frame
/// before, and where that frame was not computed (a skipped quiet block) any crest within
/// 10 % of the peak (a band-limited signal rises at most (π/4)²/8 ≈ 7.7 % of its peak over
/// half a 4× step: Bernstein's |x″| ≤ ω²·max|x|). The filter is folded on its symmetry
/// (`foldedSums`): 36 multiply-adds a sample for the 4× values, 192 for all sixteen phases of a
/// crest's frame, each path (channel by channel, eight frames to a vector; eight channels to
/// a vector) doing the same operations per value. Against ideal 16× interpolation
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
    static let phases: [[Float]] = phasesInDouble.map { $0.map { Float($0) } }
    static let phasesInDouble: [[Double]] = {
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
            return raw.map { $0 / sum }
        }
    }()
    /// A crest at phase 0 whose left neighbour is unknown, or any 4× value, within this ratio
    /// of the peak is looked at more closely: 1.1 is above the 1.083 that a band-limited signal
    /// can rise between 4× points (see the type's comment).
    static let refineRatio: Float = 1.1
    /// The margin on a crest's parabola (`reach`): twice the worst case of a sinusoid at the
    /// Nyquist frequency.
    static let parabolaMargin: Float = 1.02
    /// Samples kept from one pass to the next: one frame's window (`taps`, x[n] … x[n − 23])
    /// plus the frame before it (a crest at phase 0 takes the previous frame's phases too).
    static let history = taps
    /// Samples processed per inner pass (the scratch buffer's size past the history).
    static let chunk = 1024
    /// Outputs skipped or computed together (`oversampledPeak`), and such blocks in a chunk.
    static let block = 64, blocksPerChunk = chunk / block

    /// Oversampling factor: 16, or 1 from 192 kHz.
    public let factor: Int
    public let channels: Int
    /// The filter folded on its symmetry, for all sixteen phases at once. Phase 16 − p is
    /// phase p reversed (h₁₆₋ₚ[k] = hₚ[23 − k]: the windowed sinc is even about the centre), so
    /// with sₖ = x[n − k] + x[n − 23 + k] and dₖ = x[n − k] − x[n − 23 + k] (k < 12),
    /// yₚ = Aₚ + Bₚ and y₁₆₋ₚ = Aₚ − Bₚ, where Aₚ = Σ ½(hₚ[k] + hₚ[23 − k])·sₖ and
    /// Bₚ = Σ ½(hₚ[k] − hₚ[23 − k])·dₖ: 24 multiply-adds for two phases instead of 48, and
    /// the 24 sums and differences shared by every phase. Slot j of `foldedSums[k]` and
    /// `foldedDifferences[k]` (k < 12) holds the pair (j + 1, 15 − j) for j < 7 — (1, 15),
    /// (2, 14), (3, 13), (4, 12), (5, 11), (6, 10), (7, 9) — and slot 7 phase 8, which is its
    /// own reverse (its differences' weights are 0). The 4× values (phases 4, 8, 12) are slots
    /// 3 and 7; phase 0 is the sample itself, 12 samples late. Every path computes each phase
    /// with the same operations in the same order, so they read the same values.
    static let foldedSums: [SIMD8<Float>] = folded(differences: false)
    static let foldedDifferences: [SIMD8<Float>] = folded(differences: true)

    private static func folded(differences: Bool) -> [SIMD8<Float>] {
        let h = phasesInDouble, n = taps
        return (0..<(n / 2)).map { k in
            var v = SIMD8<Float>()
            for j in 0..<8 {
                let p = j + 1, (early, late) = (h[p][k], h[p][n - 1 - k])
                v[j] = differences ? (p == 8 ? 0 : Float((early - late) / 2)) : Float((early + late) / 2)
            }
            return v
        }
    }

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
    /// Per channel, 4 × `chunk` values: the |4× values| of each frame of a chunk, phase by
    /// phase (phases 0, 4, 8, 12 one after another), for `oversampledPeak`'s second pass.
    private let coarseValues: UnsafeMutablePointer<Float>
    /// The same per group of 8 channels, lane by lane (4 vectors per frame).
    private let laneCoarseValues: UnsafeMutablePointer<SIMD8<Float>>
    /// Per channel, and per group of 8 channels: |phase 12| of the last frame of the latest
    /// chunk (the left neighbour of the next chunk's first phase 0); −1: not computed.
    private let lastC12: UnsafeMutablePointer<Float>
    /// Per channel: the sample maxima of the latest chunk's blocks (`oversampledPeak`).
    private let blockMaxima: UnsafeMutablePointer<Float>
    private let laneLastC12: UnsafeMutablePointer<SIMD8<Float>>

    /// Not real-time safe (allocates).
    public init(sampleRate: Int, channels: Int) {
        factor = sampleRate < 192000 ? TruePeakMeter.phaseCount : 1
        _ = TruePeakMeter.maxAbsGain  // computed here, not on the first `process`
        _ = TruePeakMeter.foldedSums
        _ = TruePeakMeter.foldedDifferences
        _ = TruePeakMeter.midpointResidual
        _ = TruePeakMeter.innerMidpointResidual
        _ = TruePeakMeter.midpointSums
        self.channels = channels
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
        coarseValues = .allocate(capacity: channels * 4 * chunk)
        coarseValues.initialize(repeating: 0, count: channels * 4 * chunk)
        laneCoarseValues = .allocate(capacity: groups * 4 * chunk)
        laneCoarseValues.initialize(repeating: SIMD8(), count: groups * 4 * chunk)
        lastC12 = .allocate(capacity: channels)
        lastC12.initialize(repeating: 0, count: channels)
        blockMaxima = .allocate(capacity: channels * TruePeakMeter.blocksPerChunk)
        blockMaxima.initialize(repeating: 0, count: channels * TruePeakMeter.blocksPerChunk)
        laneLastC12 = .allocate(capacity: groups)
        laneLastC12.initialize(repeating: SIMD8(), count: groups)
    }

    deinit {
        scratch.deallocate()
        maxPeaks.deallocate()
        recentPeaks.deallocate()
        samplePeaks.deallocate()
        latestPeaks.deallocate()
        laneScratch.deallocate()
        coarseValues.deallocate()
        laneCoarseValues.deallocate()
        lastC12.deallocate()
        laneLastC12.deallocate()
        blockMaxima.deallocate()
    }

    /// Takes over `other`'s maxima (across a change of sample rate).
    public func continueFrom(_ other: TruePeakMeter) {
        for c in 0..<min(channels, other.channels) { maxPeaks[c] = max(maxPeaks[c], other.maxPeaks[c]) }
    }

    /// Feeds `frames` frames; `source(c)` points at channel c's samples. Real-time safe.
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
            var inScratch = true
            while done < frames {
                let n = min(TruePeakMeter.chunk, frames - done)
                if factor == 1 {
                    let m = Vector.maxMagnitude(UnsafeBufferPointer(start: input + done, count: n))
                    peak = max(peak, m)
                    samplePeak = max(samplePeak, m)
                } else if done >= history && done + n + 7 <= frames {
                    // The input itself holds the pass's history before it and the seven
                    // samples past it that a last vector of eight frames loads: read in place,
                    // not copied.
                    peak = oversampledPeak(input + done - history, count: n, atLeast: peak, samplePeak: &samplePeak, channel: c)
                    inScratch = false
                } else {
                    if !inScratch { buffer.update(from: input + done - history, count: history) }
                    (buffer + history).update(from: input + done, count: n)
                    peak = oversampledPeak(buffer, count: n, atLeast: peak, samplePeak: &samplePeak, channel: c)
                    // Keep the last `history` samples for the next pass.
                    buffer.update(from: buffer + n, count: history)
                    inScratch = true
                }
                done += n
            }
            // The last pass runs in the scratch (it lacks the seven samples past it), so the
            // scratch holds the next call's history.
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
        var inputs: (UnsafePointer<Float>, UnsafePointer<Float>, UnsafePointer<Float>, UnsafePointer<Float>,
                     UnsafePointer<Float>, UnsafePointer<Float>, UnsafePointer<Float>, UnsafePointer<Float>)
        let zero = source(0)
        inputs = (zero, zero, zero, zero, zero, zero, zero, zero)
        withUnsafeMutableBytes(of: &inputs) { raw in
            let p = raw.baseAddress!.assumingMemoryBound(to: UnsafePointer<Float>.self)
            for l in 1..<count { p[l] = source(l) }
        }
        var latest = SIMD8<Float>(), sample = SIMD8<Float>()
        let lanesUsed = SIMD8<Int32>(0, 1, 2, 3, 4, 5, 6, 7) .< Int32(count)
        let n = TruePeakMeter.taps
        var done = 0
        while done < frames {
            let m = min(TruePeakMeter.chunk, frames - done)
            // Channels side by side: 8 samples of each, transposed 8 × 8 at a time.
            withUnsafeBytes(of: inputs) { raw in
                let p = raw.baseAddress!.assumingMemoryBound(to: UnsafePointer<Float>.self)
                var i = 0
                while i < m {
                    let rows = min(8, m - i)
                    if rows == 8 {
                        TruePeakMeter.transpose(p, at: done + i, into: x + history + i)
                    } else {
                        for r in 0..<rows {
                            var v = SIMD8<Float>()
                            for l in 0..<8 { v[l] = p[l][done + i + r] }
                            x[history + i + r] = v
                        }
                    }
                    i += rows
                }
            }
            for i in 0..<m {
                var a = x[history + i]
                a.replace(with: 0, where: .!lanesUsed)
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
                    var c0 = x[i - n / 2]
                    c0.replace(with: -c0, where: c0 .< 0)
                    var (c4, c8, c12) = TruePeakMeter.coarse { x[i - $0] }
                    c0.replace(with: 0, where: .!lanesUsed)
                    c4.replace(with: 0, where: .!lanesUsed)
                    c8.replace(with: 0, where: .!lanesUsed)
                    c12.replace(with: 0, where: .!lanesUsed)
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
                    // A crest at phase 0: its left neighbour is phase 12 of the frame before.
                    let left = i > history ? (at - 4)[3] : laneLastC12[first / 8]
                    var crest0 = SIMD8<Float>()
                    crest0.replace(with: TruePeakMeter.reach(left, c0, c4), where: (c0 .>= c4) .& (c0 .>= left))
                    var crest = crest0
                    let reach4 = TruePeakMeter.reach(c0, c4, c8), reach8 = TruePeakMeter.reach(c4, c8, c12)
                    let reach12 = TruePeakMeter.reach(c8, c12, next)
                    crest.replace(with: reach4, where: (c4 .>= c8) .& (c4 .>= c0) .& (reach4 .> crest))
                    crest.replace(with: reach8, where: (c8 .>= c12) .& (c8 .>= c4) .& (reach8 .> crest))
                    crest.replace(with: reach12, where: (c12 .>= next) .& (c12 .>= c8) .& (reach12 .> crest))
                    // Lane by lane (a crest seldom comes in all lanes at once): the same
                    // operations as `allPhases(_:)` on that lane's samples.
                    let refine = (crest .> latest) .& lanesUsed
                    if any(refine) {
                        for l in 0..<8 where refine[l] { latest[l] = max(latest[l], allPhases(x, i, lane: l)) }
                    }
                    let before = (crest0 .> latest) .& lanesUsed
                    if any(before) {
                        for l in 0..<8 where before[l] { latest[l] = max(latest[l], allPhases(x, i - 1, lane: l)) }
                    }
                }
            }
            if factor != 1 { laneLastC12[first / 8] = (laneCoarseValues + (first / 8) * 4 * TruePeakMeter.chunk + 4 * (m - 1))[3] }
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

    /// |phase 4|, |phase 8| and |phase 12| of eight frames or eight channels at once, whose
    /// samples x[n − k] are `back(k)` (k = 0 … 23): the one sequence of operations both paths
    /// share, so that they read the same values.
    @inline(__always)
    static func coarse(_ back: (Int) -> SIMD8<Float>) -> (SIMD8<Float>, SIMD8<Float>, SIMD8<Float>) {
        let sums = foldedSums, differences = foldedDifferences, n = taps
        let newest = back(0), oldest = back(n - 1)
        var a = SIMD8<Float>(repeating: sums[0][3]) * (newest + oldest)
        var b = SIMD8<Float>(repeating: differences[0][3]) * (newest - oldest)
        var c8 = SIMD8<Float>(repeating: sums[0][7]) * (newest + oldest)
        for k in 1..<(n / 2) {
            let u = back(k), v = back(n - 1 - k)
            let sk = u + v, dk = u - v
            a += SIMD8<Float>(repeating: sums[k][3]) * sk
            b += SIMD8<Float>(repeating: differences[k][3]) * dk
            c8 += SIMD8<Float>(repeating: sums[k][7]) * sk
        }
        var c4 = a + b, c12 = a - b
        c4.replace(with: -c4, where: c4 .< 0)
        c8.replace(with: -c8, where: c8 .< 0)
        c12.replace(with: -c12, where: c12 .< 0)
        return (c4, c8, c12)
    }

    /// Rows `at ..< at + 8` of the eight columns `p[0] … p[7]` into `out[0] … out[7]` (out[r]
    /// lane l = p[l][at + r]): eight vector loads and shuffles instead of 64 lane inserts.
    @inline(__always)
    static func transpose(_ p: UnsafePointer<UnsafePointer<Float>>, at: Int, into out: UnsafeMutablePointer<SIMD8<Float>>) {
        @inline(__always) func row(_ l: Int) -> SIMD8<Float> { UnsafeRawPointer(p[l] + at).loadUnaligned(as: SIMD8<Float>.self) }
        let r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3), r4 = row(4), r5 = row(5), r6 = row(6), r7 = row(7)
        // Pairs, then quads, then halves interleaved (the classic 8 × 8 transpose).
        let t0 = SIMD8(r0[0], r1[0], r0[1], r1[1], r0[4], r1[4], r0[5], r1[5])
        let t1 = SIMD8(r0[2], r1[2], r0[3], r1[3], r0[6], r1[6], r0[7], r1[7])
        let t2 = SIMD8(r2[0], r3[0], r2[1], r3[1], r2[4], r3[4], r2[5], r3[5])
        let t3 = SIMD8(r2[2], r3[2], r2[3], r3[3], r2[6], r3[6], r2[7], r3[7])
        let t4 = SIMD8(r4[0], r5[0], r4[1], r5[1], r4[4], r5[4], r4[5], r5[5])
        let t5 = SIMD8(r4[2], r5[2], r4[3], r5[3], r4[6], r5[6], r4[7], r5[7])
        let t6 = SIMD8(r6[0], r7[0], r6[1], r7[1], r6[4], r7[4], r6[5], r7[5])
        let t7 = SIMD8(r6[2], r7[2], r6[3], r7[3], r6[6], r7[6], r6[7], r7[7])
        let u0 = SIMD8(t0[0], t0[1], t2[0], t2[1], t0[4], t0[5], t2[4], t2[5])
        let u1 = SIMD8(t0[2], t0[3], t2[2], t2[3], t0[6], t0[7], t2[6], t2[7])
        let u2 = SIMD8(t1[0], t1[1], t3[0], t3[1], t1[4], t1[5], t3[4], t3[5])
        let u3 = SIMD8(t1[2], t1[3], t3[2], t3[3], t1[6], t1[7], t3[6], t3[7])
        let u4 = SIMD8(t4[0], t4[1], t6[0], t6[1], t4[4], t4[5], t6[4], t6[5])
        let u5 = SIMD8(t4[2], t4[3], t6[2], t6[3], t4[6], t4[7], t6[6], t6[7])
        let u6 = SIMD8(t5[0], t5[1], t7[0], t7[1], t5[4], t5[5], t7[4], t7[5])
        let u7 = SIMD8(t5[2], t5[3], t7[2], t7[3], t5[6], t5[7], t7[6], t7[7])
        out[0] = SIMD8(lowHalf: u0.lowHalf, highHalf: u4.lowHalf)
        out[1] = SIMD8(lowHalf: u1.lowHalf, highHalf: u5.lowHalf)
        out[2] = SIMD8(lowHalf: u2.lowHalf, highHalf: u6.lowHalf)
        out[3] = SIMD8(lowHalf: u3.lowHalf, highHalf: u7.lowHalf)
        out[4] = SIMD8(lowHalf: u0.highHalf, highHalf: u4.highHalf)
        out[5] = SIMD8(lowHalf: u1.highHalf, highHalf: u5.highHalf)
        out[6] = SIMD8(lowHalf: u2.highHalf, highHalf: u6.highHalf)
        out[7] = SIMD8(lowHalf: u3.highHalf, highHalf: u7.highHalf)
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

    /// The largest |value| of all sixteen phases at the frame whose newest sample is `newest`:
    /// the eight folded slots side by side (`foldedSums`).
    @inline(__always)
    private func allPhases(_ newest: UnsafePointer<Float>) -> Float {
        return allPhases { newest[-$0] }
    }

    /// The same for lane `l` of the 8 lanes at frame `i` of `x`.
    @inline(__always)
    private func allPhases(_ x: UnsafeMutablePointer<SIMD8<Float>>, _ i: Int, lane l: Int) -> Float {
        let lanes = UnsafeRawPointer(x)
        return allPhases { lanes.load(fromByteOffset: ((i - $0) * 8 + l) * MemoryLayout<Float>.stride, as: Float.self) }
    }

    /// The largest |value| of all sixteen phases of the frame whose samples x[n − k] are
    /// `back(k)`, k = 0 … 23.
    @inline(__always)
    private func allPhases(_ back: (Int) -> Float) -> Float {
        let sums = TruePeakMeter.foldedSums, differences = TruePeakMeter.foldedDifferences
        let n = TruePeakMeter.taps
        var a = sums[0] * SIMD8(repeating: back(0) + back(n - 1))
        var b = differences[0] * SIMD8(repeating: back(0) - back(n - 1))
        for k in 1..<(n / 2) {
            let u = back(k), v = back(n - 1 - k)
            a += sums[k] * SIMD8(repeating: u + v)
            b += differences[k] * SIMD8(repeating: u - v)
        }
        var high = a + b, low = a - b
        high.replace(with: -high, where: high .< 0)
        low.replace(with: -low, where: low .< 0)
        high.replace(with: low, where: low .> high)
        return max(abs(back(n / 2)), TruePeakMeter.largestLane(high))
    }

    /// The largest of `v`'s lanes, halving (the generic `max()` is a call per vector here).
    @inline(__always)
    static func largestLane(_ v: SIMD8<Float>) -> Float {
        var half = v.lowHalf
        half.replace(with: v.highHalf, where: v.highHalf .> half)
        var quarter = half.lowHalf
        quarter.replace(with: half.highHalf, where: half.highHalf .> quarter)
        return max(quarter[0], quarter[1])
    }

    /// Σ|h_p[k]| of the largest phase: no interpolated value can exceed this times the largest
    /// |x| under the filter, which lets whole blocks be skipped when they cannot beat the
    /// peak found so far (an exact bound, not an approximation).
    private static let maxAbsGain: Float = {
        phases.map { $0.reduce(0) { $0 + abs($1) } }.max()! * 1.0001
    }()

    /// The midpoint bound's residual: the largest, over the phases p ≠ 0, 8, of Σₖ|hₚ[k] − fₚ[k]|,
    /// where fₚ interpolates phase p linearly between its two neighbours on the 2× grid — the
    /// sample before it and the midpoint (phase 8), or the midpoint and the sample after —
    /// so that |yₚ| ≤ max(|those two|) + this × max|x| under the filter (an exact bound, as
    /// `maxAbsGain` is; 0.332 for this filter), with a margin for the rounding of the sums.
    static let midpointResidual: Float = {
        let h = phasesInDouble, n = taps
        var worst = 0.0
        for p in 1..<phaseCount where p != 8 {
            // fₚ = (1 − f)·left + f·right, over x[n − k]: a sample is x[n − 12] (phase 0) or
            // x[n − 11] (the next frame's), the midpoint is h₈.
            let f = Double(p % 8) / 8
            var fp = [Double](repeating: 0, count: n)
            let (sampleTap, sampleWeight, midpointWeight) = p < 8 ? (n / 2, 1 - f, f) : (n / 2 - 1, f, 1 - f)
            fp[sampleTap] += sampleWeight
            for k in 0..<n { fp[k] += midpointWeight * h[8][k] }
            worst = max(worst, (0..<n).reduce(0) { $0 + abs(h[p][$1] - fp[$1]) })
        }
        return Float(worst * 1.001)
    }()

    /// The folded taps from which the midpoints' first, cheaper bound starts
    /// (`innerMidpointResidual`): taps 8 … 11, the eight samples nearest the midpoint, a third
    /// of the multiply-adds of the whole midpoint.
    static let innerMidpointFirst = 8
    /// What the folded taps before `innerMidpointFirst` can add to a midpoint at most, per unit
    /// of the largest |x| under the filter: 2·Σₖ|h₈[k]| for k < 8 (each folded tap weighs two
    /// samples; 0.269 for this filter), with a margin for the rounding of the sums. So
    /// |midpoint| ≤ |inner midpoint| + this × max|x| (an exact bound, as `midpointResidual` is).
    static let innerMidpointResidual: Float = {
        Float(2 * phasesInDouble[8][0..<innerMidpointFirst].reduce(0) { $0 + abs($1) } * 1.001)
    }()

    /// Phase 8's folded taps (`foldedSums[k][7]`, k < 12) for `DSPAVX2.largestMidpoint`, which
    /// runs in its stead where the machine has AVX2 (`MachineFeatures.x86_64v3`; nil
    /// elsewhere): the same values, eight frames in one register instead of two.
    /// (nonisolated(unsafe): written once, by its initialiser, and only read after.)
    nonisolated(unsafe) static let midpointSums: UnsafeMutablePointer<Float>? = {
        guard MachineFeatures.x86_64v3 else { return nil }
        let p = UnsafeMutablePointer<Float>.allocate(capacity: taps / 2)
        for k in 0..<(taps / 2) { (p + k).initialize(to: foldedSums[k][7]) }
        return p
    }()

    /// `largestMidpoint` of `x`'s frames, through `DSPAVX2` where it may run.
    /// From folded tap `first` on only, with `first` > 0 (see below).
    @inline(__always)
    static func largestMidpoint(of x: UnsafeRawPointer, _ start: Int, _ count: Int, from first: Int = 0,
                                sums: UnsafeMutablePointer<Float>? = midpointSums) -> Float
    {
        guard let sums else {
            return largestMidpoint(start, count, from: first) {
                x.loadUnaligned(fromByteOffset: $0 * MemoryLayout<Float>.stride, as: SIMD8<Float>.self)
            }
        }
        // Folded taps `first` … 11 are those of a filter 2·`first` taps shorter over the
        // samples `first` later: x[i − k] and x[i − (23 − k)] are x′[i − (k − first)] and
        // x′[i − (23 − 2·first − (k − first))] with x′ = x − first.
        var largest = SIMD8<Float>()
        DSPAVX2.largestMidpoint(x.assumingMemoryBound(to: Float.self) - first, start, count, sums + first, taps - 2 * first, &largest)
        return largestLane(largest)
    }

    /// The largest |midpoint| (phase 8) of frames `start ..< start + count` (at most 64;
    /// `load(i)`: the eight samples from x[i] on). 12 multiply-adds a frame, a third of the 4×
    /// values'. From folded tap `first` on only, with `first` > 0: the inner midpoint, by which
    /// `innerMidpointResidual` bounds the whole one.
    @inline(__always)
    static func largestMidpoint(_ start: Int, _ count: Int, from first: Int = 0, _ load: (Int) -> SIMD8<Float>) -> Float {
        let sums = foldedSums, n = taps
        var largest = SIMD8<Float>()
        var i = start
        while i < start + count {
            var m8 = SIMD8<Float>(repeating: sums[first][7]) * (load(i - first) + load(i - (n - 1 - first)))
            for k in (first + 1)..<(n / 2) { m8 += SIMD8<Float>(repeating: sums[k][7]) * (load(i - k) + load(i - (n - 1 - k))) }
            m8.replace(with: -m8, where: m8 .< 0)
            let left = start + count - i
            if left < 8 { m8.replace(with: 0, where: .!(SIMD8<Int32>(0, 1, 2, 3, 4, 5, 6, 7) .< Int32(left))) }
            largest.replace(with: m8, where: m8 .> largest)
            i += 8
        }
        return largestLane(largest)
    }

    /// The larger of `floor` and the largest |y| over the oversampled values of `count` new
    /// samples, which follow 24 samples of history in `buffer` and precede 7 more readable
    /// ones (the scratch's, or the input's own) (4× everywhere, 16× where a
    /// frame comes within `refineRatio` of the peak so far). Blocks of 64 outputs are
    /// skipped when the largest |x| under the filter (bounded by the maxima of this block's
    /// and the previous block's inputs) times `maxAbsGain` cannot beat the peak so far, or
    /// when their largest midpoint or sample plus `midpointResidual` times that |x| cannot
    /// (the midpoints' inner taps first, `innerMidpointResidual`); a skipped block costs its
    /// sample maximum (the chunk's blocks' in one pass, `Vector.blockMaxMagnitudes`) and its
    /// midpoints, nothing is stored for it, and the refinement passes over it. The 4× values
    /// of 8 frames at a time, frame by frame in the lanes of a vector.
    @inline(__always)
    private func oversampledPeak(_ buffer: UnsafePointer<Float>, count: Int, atLeast floor: Float,
                                 samplePeak: inout Float, channel c: Int) -> Float
    {
        let chunk = TruePeakMeter.chunk
        let values = coarseValues + c * 4 * chunk
        let (v0, v4, v8, v12) = (values, values + chunk, values + 2 * chunk, values + 3 * chunk)
        let history = TruePeakMeter.history, n = TruePeakMeter.taps
        let block = TruePeakMeter.block
        let gain = TruePeakMeter.maxAbsGain, ratio = TruePeakMeter.refineRatio
        // Read once a pass, not once a block (each a lazy global's check, or a property's
        // exclusivity check).
        let residual = TruePeakMeter.midpointResidual, innerResidual = TruePeakMeter.innerMidpointResidual
        let sums = TruePeakMeter.midpointSums, tracksLatest = self.tracksLatest
        let x = UnsafeRawPointer(buffer + history)
        @inline(__always) func load(_ i: Int) -> SIMD8<Float> {
            x.loadUnaligned(fromByteOffset: i * MemoryLayout<Float>.stride, as: SIMD8<Float>.self)
        }
        var peak = floor
        var previousMax = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer, count: history))
        // Bit b: block b's 4× values were computed (a chunk holds at most 16 blocks); the
        // others hold nothing, and nothing in them can beat the peak.
        assert(chunk / block <= 32)
        var computed: UInt32 = 0
        let maxima = blockMaxima + c * TruePeakMeter.blocksPerChunk
        Vector.blockMaxMagnitudes(buffer + history, count: count, block: block, into: maxima)
        var start = 0
        while start < count {
            let length = min(block, count - start)
            let blockMax = maxima[start / block]
            samplePeak = max(samplePeak, blockMax)
            // A block no value of which can beat the peak is skipped: first by its samples
            // (`maxAbsGain`), then by its midpoints (`midpointResidual`: every phase lies
            // between a sample and a midpoint, within the residual of the interpolation
            // between them), which rules out a loud block of noise whose samples alone cannot.
            // (Not for the latest call's own peak, the live meter ports': there the peak so
            // far starts at 0 with each period, and the midpoints of most blocks would be
            // computed twice, 0.49 → 0.61 ms a second per channel with `jackvu-bench
            // truepeak-lanes`.)
            let near = max(previousMax, blockMax)
            @inline(__always) func midpointsMayBeatPeak() -> Bool {
                // The inner midpoints first (a third of the cost; on noise they rule out most
                // of the blocks the samples cannot), then the whole ones.
                let inner = TruePeakMeter.largestMidpoint(of: x, start, length, from: TruePeakMeter.innerMidpointFirst, sums: sums)
                let bound = max(inner + innerResidual * near, near)
                guard (bound + residual * near) * 1.0001 >= peak else { return false }
                return (max(TruePeakMeter.largestMidpoint(of: x, start, length, sums: sums), near) + residual * near) * 1.0001 >= peak
            }
            if near * gain > peak && (tracksLatest || midpointsMayBeatPeak()) {
                computed |= 1 << (start / block)
                var best = SIMD8<Float>()
                var i = start
                while i < start + length {
                    // Frames i … i + 7 (past the count: left out below; the scratch has room).
                    var c0 = load(i - n / 2)
                    c0.replace(with: -c0, where: c0 .< 0)
                    var (c4, m8, c12) = TruePeakMeter.coarse { load(i - $0) }
                    let left = start + length - i
                    if left < 8 {
                        let valid = SIMD8<Int32>(0, 1, 2, 3, 4, 5, 6, 7) .< Int32(left)
                        c0.replace(with: 0, where: .!valid)
                        c4.replace(with: 0, where: .!valid)
                        m8.replace(with: 0, where: .!valid)
                        c12.replace(with: 0, where: .!valid)
                    }
                    UnsafeMutableRawPointer(v0 + i).storeBytes(of: c0, as: SIMD8<Float>.self)
                    UnsafeMutableRawPointer(v4 + i).storeBytes(of: c4, as: SIMD8<Float>.self)
                    UnsafeMutableRawPointer(v8 + i).storeBytes(of: m8, as: SIMD8<Float>.self)
                    UnsafeMutableRawPointer(v12 + i).storeBytes(of: c12, as: SIMD8<Float>.self)
                    best.replace(with: c0, where: c0 .> best)
                    best.replace(with: c4, where: c4 .> best)
                    best.replace(with: m8, where: m8 .> best)
                    best.replace(with: c12, where: c12 .> best)
                    i += 8
                }
                peak = max(peak, TruePeakMeter.largestLane(best))
            }
            previousMax = blockMax
            start += length
        }
        // Then all sixteen phases of the frames with a crest that can reach the peak (and of
        // the frame before, for a crest at phase 0), in the blocks computed. Eight frames at
        // a time are passed over when none comes within `refineRatio` of the peak (the peak
        // only grows: the same frames are looked at as one by one).
        @inline(__always) func wasComputed(_ frame: Int) -> Bool { computed & (1 << (frame / block)) != 0 }
        var blocks = computed
        while blocks != 0 {
            let first = blocks.trailingZeroBitCount * block
            blocks &= blocks - 1
            let blockEnd = min(first + block, count)
            var group = first
            while group < blockEnd {
                if group + 8 <= blockEnd {
                    let a = UnsafeRawPointer(v0 + group).loadUnaligned(as: SIMD8<Float>.self)
                    let b = UnsafeRawPointer(v4 + group).loadUnaligned(as: SIMD8<Float>.self)
                    let d = UnsafeRawPointer(v8 + group).loadUnaligned(as: SIMD8<Float>.self)
                    let e = UnsafeRawPointer(v12 + group).loadUnaligned(as: SIMD8<Float>.self)
                    var largest = a
                    largest.replace(with: b, where: b .> largest)
                    largest.replace(with: d, where: d .> largest)
                    largest.replace(with: e, where: e .> largest)
                    if TruePeakMeter.largestLane(largest) * ratio <= peak {
                        group += 8
                        continue
                    }
                }
                let end = min(group + 8, blockEnd)
                for i in group..<end {
                    let c0 = v0[i], c4 = v4[i], c8 = v8[i], c12 = v12[i]
                    guard max(max(c0, c4), max(c8, c12)) * ratio > peak else { continue }
                    let newest = buffer + history + i
                    let next = abs(newest[-(TruePeakMeter.taps / 2 - 1)])
                    // A crest at phase 0: its left neighbour is phase 12 of the frame before (−1
                    // where that frame's block was skipped: then any value within `refineRatio` of
                    // the peak).
                    let left = i == 0 ? lastC12[c] : wasComputed(i - 1) ? v12[i - 1] : -1
                    let crest0: Float = c0 < c4 ? 0 : left < 0 ? c0 * ratio : c0 >= left ? TruePeakMeter.reach(left, c0, c4) : 0
                    var crest = crest0
                    if c4 >= c8 && c4 >= c0 { crest = max(crest, TruePeakMeter.reach(c0, c4, c8)) }
                    if c8 >= c12 && c8 >= c4 { crest = max(crest, TruePeakMeter.reach(c4, c8, c12)) }
                    if c12 >= next && c12 >= c8 { crest = max(crest, TruePeakMeter.reach(c8, c12, next)) }
                    if crest > peak { peak = max(peak, allPhases(newest)) }
                    if crest0 > peak { peak = max(peak, allPhases(newest - 1)) }
                }
                group = end
            }
        }
        if count > 0 { lastC12[c] = wasComputed(count - 1) ? v12[count - 1] : -1 }
        return peak
    }

    /// The end of the audio, for a channel fed alone (`process(frames:from:channel:)`): the
    /// phases of its last `taps / 2` samples, which wait for the samples after them, read with
    /// silence after the end — as a converter plays the end of a file (without it a file whose
    /// last samples are its loudest read a true peak below its sample peak). Once, after the
    /// last frames. Not real-time safe.
    public func finish(channel c: Int) {
        let silence = [Float](repeating: 0, count: TruePeakMeter.taps / 2)
        silence.withUnsafeBufferPointer { process(frames: $0.count, from: $0.baseAddress!, channel: c) }
    }

    /// `finish` for channels `first ..< first + count` fed together
    /// (`process(frames:channels:count:from:)`).
    public func finish(channels first: Int, count: Int) {
        let silence = [Float](repeating: 0, count: TruePeakMeter.taps / 2)
        silence.withUnsafeBufferPointer { z in process(frames: z.count, channels: first, count: count, from: { _ in z.baseAddress! }) }
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
