/// True-peak level per ITU-R BS.1770-4 Annex 2: the signal is oversampled 4× (below 96 kHz;
/// 2× from 96 kHz, none from 192 kHz) with the Annex's 48-tap interpolation filter, and the
/// largest absolute oversampled value is the true peak. Read it in dBTP with
/// `Decibels.fromAmplitude`.
///
/// The filter: four phases of 12 taps, `y[4n + p] = Σ_k h_p[k]·x[n − k]`, as BS.1770-4
/// Annex 2 §3 publishes them (phases 2 and 3 are phases 1 and 0 reversed). Phase 0 is nearly
/// the identity, delayed by 6 samples.
///
/// One thread at a time; `process` is real-time safe.
public final class TruePeakMeter: @unchecked Sendable {
    // @unchecked Sendable: owned by one thread at a time.

    /// BS.1770-4 Annex 2, phases 0 and 1 (taps 0 … 11).
    static let phase0: [Float] = [
        0.0017089843750, 0.0109863281250, -0.0196533203125, 0.0332031250000,
        -0.0594482421875, 0.1373291015625, 0.9721679687500, -0.1022949218750,
        0.0476074218750, -0.0266113281250, 0.0148925781250, -0.0083007812500,
    ]
    static let phase1: [Float] = [
        -0.0291748046875, 0.0292968750000, -0.0517578125000, 0.0891113281250,
        -0.1665039062500, 0.4650878906250, 0.7797851562500, -0.2003173828125,
        0.1015625000000, -0.0582275390625, 0.0330810546875, -0.0189208984375,
    ]
    static let taps = 12
    /// The four phases of the interpolation filter, 12 taps each.
    static var phases: [[Float]] { [phase0, phase1, phase1.reversed(), phase0.reversed()] }
    /// Samples processed per inner pass (the scratch buffer's size past the history).
    static let chunk = 1024

    /// Oversampling factor: 4, 2 or 1.
    public let factor: Int
    public let channels: Int
    /// Tap k of all four phases, as one vector: (h0[k], h1[k], h2[k], h3[k]).
    private let coefficients: [SIMD4<Float>]
    /// Per channel: the last 11 input samples, then room for a chunk.
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
    /// Per group of 8 channels (`process(frames:channels:count:from:)`): 11 frames of history,
    /// then room for a chunk, the group's channels side by side.
    private let laneScratch: UnsafeMutablePointer<SIMD8<Float>>
    /// The four phases' taps, phase-major (`taps` per phase).
    private let phaseTaps: UnsafeMutablePointer<Float>

    /// Not real-time safe (allocates).
    public init(sampleRate: Int, channels: Int) {
        factor = sampleRate < 96000 ? 4 : (sampleRate < 192000 ? 2 : 1)
        self.channels = channels
        let p0 = TruePeakMeter.phase0, p1 = TruePeakMeter.phase1
        let n = TruePeakMeter.taps
        coefficients = (0..<n).map { k in SIMD4(p0[k], p1[k], p1[n - 1 - k], p0[n - 1 - k]) }
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
        phaseTaps = .allocate(capacity: 4 * n)
        for (p, phase) in TruePeakMeter.phases.enumerated() { for k in 0..<n { phaseTaps[p * n + k] = phase[k] } }
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
                // Phases 0 … 3 (4×), or 0 and 2 (2×), as `oversampledPeak` takes them.
                let step = factor == 2 ? 2 : 1
                for i in history..<(history + m) {
                    for p in Swift.stride(from: 0, to: 4, by: step) {
                        let taps = h + p * n
                        var acc = taps[0] * x[i]
                        for k in 1..<n { acc += taps[k] * x[i - k] }
                        acc.replace(with: -acc, where: acc .< 0)
                        latest.replace(with: acc, where: acc .> latest)
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

    /// Σ|h_p[k]| of the largest phase: no interpolated value can exceed this times the largest
    /// |x| under the filter, which lets whole blocks be skipped when they cannot beat the
    /// peak found so far (an exact bound, not an approximation).
    private static let maxAbsGain: Float = {
        let g0 = phase0.reduce(0) { $0 + abs($1) }, g1 = phase1.reduce(0) { $0 + abs($1) }
        return max(g0, g1) * 1.0001
    }()

    /// The larger of `floor` and the largest |y| over the oversampled values of `count` new
    /// samples, which follow 11 samples of history in `buffer`. Blocks of 64 outputs are
    /// skipped when the largest |x| under the filter (bounded by the maxima of this block's
    /// and the previous block's inputs) times `maxAbsGain` cannot beat the peak so far.
    @inline(__always)
    private func oversampledPeak(_ buffer: UnsafeMutablePointer<Float>, count: Int, atLeast floor: Float,
                                 samplePeak: inout Float) -> Float
    {
        let h = coefficients
        let history = TruePeakMeter.taps - 1
        let block = 64
        let gain = TruePeakMeter.maxAbsGain
        var peak = floor
        var previousMax = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer, count: history))
        var start = 0
        while start < count {
            let n = min(block, count - start)
            let blockMax = Vector.maxMagnitude(UnsafeBufferPointer(start: buffer + history + start, count: n))
            samplePeak = max(samplePeak, blockMax)
            if max(previousMax, blockMax) * gain > peak {
                var best = SIMD4<Float>()
                for i in start..<(start + n) {
                    // x[n − k] for k = 0 … 11 is buffer[history + i − k].
                    let newest = buffer + history + i
                    var acc = h[0] * newest[0]
                    for k in 1..<TruePeakMeter.taps { acc += h[k] * newest[-k] }
                    acc.replace(with: -acc, where: acc .< 0)
                    best.replace(with: acc, where: acc .> best)
                }
                peak = max(peak, factor == 2 ? max(best[0], best[2]) : Vector.largest(best))
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
