#if canImport(Glibc)
import Glibc
#endif
import DSPAVX2

/// Loudness channel layouts: the loudspeakers of each channel in ITU-R BS.2051's orders, and
/// each channel's weight G_i in the loudness sum by its position as ITU-R BS.1770-4 (§2.4,
/// Table 3) says: 1.41 (+1.5 dB) for a loudspeaker at an azimuth of 60° to 120° and an
/// elevation below 30°, 0 for the LFE channel, 1.0 otherwise. So 7.1's rear surrounds
/// (±135°) and 7.1.4's height channels weigh 1.0; ffmpeg's ebur128 filter gives every back,
/// side and top-back channel 1.41 and reads such a programme louder.
public enum ChannelLayout: String, CaseIterable, Sendable {
    /// One channel, weight 1.
    case mono
    /// One channel meant for both loudspeakers of a stereo pair: weight 2 (+3.01 dB), as
    /// libebur128's EBUR128_DUAL_MONO and ffmpeg's ebur128 `dualmono`.
    case dualMono = "dual-mono"
    /// L, R: weights 1, 1.
    case stereo
    /// L, R, C (BS.2051 0+3+0): weights 1.
    case surround30 = "3.0"
    /// L, R, C, Ls, Rs: weights 1, 1, 1, 1.41, 1.41 (surrounds at ±110°).
    case surround50 = "5.0"
    /// L, R, C, LFE, Ls, Rs (BS.2051 0+5+0, the SMPTE/ITU order): LFE excluded (weight 0),
    /// surrounds 1.41.
    case surround51 = "5.1"
    /// L, R, C, LFE, Lss, Rss, Lrs, Rrs (BS.2051 0+7+0): side surrounds (±90°) 1.41, rear
    /// surrounds (±135°) 1.0.
    case surround71 = "7.1"
    /// 7.1 and the four height loudspeakers Ltf, Rtf, Ltb, Rtb (BS.2051 4+7+0): heights
    /// (elevation 30° and above) 1.0.
    case surround714 = "7.1.4"

    /// One loudspeaker: its label, azimuth and elevation (degrees, BS.2051's nominal
    /// positions), or nil for the LFE channel.
    public struct Loudspeaker: Sendable, Equatable {
        public let label: String
        public let azimuth: Double?
        public let elevation: Double
        init(_ label: String, _ azimuth: Double?, _ elevation: Double = 0) {
            self.label = label
            self.azimuth = azimuth
            self.elevation = elevation
        }

        /// Its weight by BS.1770-4 §2.4 (LFE 0; 1.41 for |azimuth| 60° … 120° below 30°
        /// elevation; otherwise 1.0).
        public var weight: Double {
            guard let azimuth else { return 0 }
            return (60...120).contains(abs(azimuth)) && elevation < 30 ? 1.41 : 1.0
        }
    }

    /// The loudspeakers, in channel order.
    public var loudspeakers: [Loudspeaker] {
        let l = Loudspeaker("L", 30), r = Loudspeaker("R", -30), c = Loudspeaker("C", 0), lfe = Loudspeaker("LFE", nil)
        switch self {
        case .mono, .dualMono: return [Loudspeaker("M", 0)]
        case .stereo: return [l, r]
        case .surround30: return [l, r, c]
        case .surround50: return [l, r, c, Loudspeaker("Ls", 110), Loudspeaker("Rs", -110)]
        case .surround51: return [l, r, c, lfe, Loudspeaker("Ls", 110), Loudspeaker("Rs", -110)]
        case .surround71, .surround714:
            let plane = [l, r, c, lfe, Loudspeaker("Lss", 90), Loudspeaker("Rss", -90), Loudspeaker("Lrs", 135), Loudspeaker("Rrs", -135)]
            guard self == .surround714 else { return plane }
            return plane + [Loudspeaker("Ltf", 45, 30), Loudspeaker("Rtf", -45, 30), Loudspeaker("Ltb", 135, 30), Loudspeaker("Rtb", -135, 30)]
        }
    }

    /// Number of channels.
    public var channelCount: Int { loudspeakers.count }

    /// Per-channel weights G_i.
    public var weights: [Double] { self == .dualMono ? [2] : loudspeakers.map(\.weight) }

    /// The left/right loudspeaker pairs whose phase correlation is read, as channel indices:
    /// L/R, then the surround and height pairs front to back (none for mono).
    public var pairs: [(left: Int, right: Int)] {
        let labels = loudspeakers.map(\.label)
        var out: [(left: Int, right: Int)] = []
        for (i, label) in labels.enumerated() where label.hasPrefix("L") && label != "LFE" {
            if let j = labels.firstIndex(of: "R" + label.dropFirst()) { out.append((i, j)) }
        }
        return out
    }

    /// The layout for a channel count, as `--layout` defaults: 1 mono, 2 stereo, 5 → 5.0,
    /// 6 → 5.1; nil for any other (every channel weighted 1).
    public static func forChannelCount(_ n: Int) -> ChannelLayout? {
        [ChannelLayout.mono, .stereo, .surround50, .surround51].first { $0.channelCount == n }
    }
}

/// Loudness per EBU R 128 / ITU-R BS.1770-4 with the EBU Tech 3341 'EBU Mode' time scales and
/// the EBU Tech 3342 loudness range.
///
/// Each channel is K-weighted (`KWeighting`), squared and weighted by its G_i; the sum is kept
/// in steps of 10 ms (round(fs / 100) samples). From those steps, after every step:
/// - momentary loudness: the last 400 ms (40 steps), so every 10 ms — EBU Tech 3341 cases 13
///   and 14 need that resolution;
/// - short-term loudness: the last 3 s (300 steps);
/// - integrated loudness: gating blocks of 400 ms every 100 ms (75 % overlap), gated at
///   −70 LUFS absolute and −10 LU relative (BS.1770-4 §2.3); an incomplete final block is
///   left out;
/// - loudness range (Tech 3342): short-term values every 100 ms from complete 3 s windows,
///   gated at −70 LUFS and −20 LU, LRA = 95th − 10th percentile (the MATLAB reference's
///   indexing).
/// `L = −0.691 + 10·log10(Σ G_i·mean(y_i²))` throughout, in LUFS (LU for differences).
///
/// One thread at a time. `process` is real-time safe (the gating history's arrays are
/// reserved for their hour); readings of integrated loudness and loudness range scan that
/// history (not real-time safe). The history is every block for the first hour
/// (`exactHistory`: the readings are the full computation's), then a histogram of 0.005 LU
/// bins with exact power sums (`LoudnessHistogram`, kept from the start): from then on each
/// reading costs the same whatever the duration, and agrees with the full computation to
/// 0.01 LU; memory is 480 KB per meter plus the hour's 576 KB.
public final class LoudnessMeter: @unchecked Sendable {
    // @unchecked Sendable: one thread at a time owns the meter and all its state.

    /// Sample rate, Hz.
    public let sampleRate: Int
    /// Channel weights G_i (0 excludes a channel).
    public let weights: [Double]
    /// Samples per 10 ms step.
    public let stepSamples: Int

    /// The K-weighting of the channels with a weight, in SIMD lanes: eight at a time, then
    /// what is left in one group of 8, 4 or 2 (padding lanes weigh 0), or one channel alone
    /// (on a machine with AVX2, a lone channel in a group of 2, whose state its stretches take
    /// over: see `stretchLanes`).
    private var lanes8: [KWeightingLanes<SIMD8<Double>>] = []
    private var lanes4: [KWeightingLanes<SIMD4<Double>>] = []
    private var lanes2: [KWeightingLanes<SIMD2<Double>>] = []
    private let single: Int?
    private var singleFilter: (shelf: Biquad, highPass: Biquad)
    /// Up to eight channels whose count four does not divide (mono, stereo, 5.1's five with
    /// a weight, …), on a machine with AVX2: their K-weighting on long calls as stretches of
    /// time side by side, filling registers of four lanes (`processSplit`: a file's summary)
    /// — a pair's two stretches in one register, a lone channel's four, five channels' four
    /// in five; and the step energies of each stretch (`splitMostSteps` + 1 a stretch, one
    /// after the other; made at the first split). Nil otherwise.
    private let stretchLanes: StretchLanes?
    private var stretchEnergies: [Double] = []
    /// The calls' pieces run as stretches side by side (`processSplit`), counted.
    public private(set) var splitPieces = 0
    /// Weighted sum of squares of the step being filled.
    private var stepEnergy = 0.0
    /// Samples in the step being filled.
    private var stepFill = 0
    /// Mean weighted power of the last 300 steps (a ring), oldest overwritten.
    private var steps: [Double]
    /// Steps completed since the start or the last reset.
    public private(set) var stepCount = 0
    /// Mean powers of the complete 400 ms gating blocks so far (one per 100 ms), while they
    /// are no more than `exactHistory`; then empty (the histogram alone).
    private var gatingBlocks: [Double] = []
    /// Mean powers of the complete 3 s short-term windows so far (one per 100 ms), for LRA;
    /// likewise.
    private var shortTermBlocks: [Double] = []
    /// The same blocks binned, from the start (`LoudnessHistogram`).
    private var gatingHistogram = LoudnessHistogram()
    private var shortTermHistogram = LoudnessHistogram()
    /// Whether the arrays still hold every block.
    private var historyExact = true
    /// Blocks kept whole before the histogram alone is read: an hour.
    public static let exactHistory = 36_000
    /// The latest 100 ms blocks' mean weighted powers (a ring of `blockRingSize`) for a log:
    /// block k (1-based since the start or reset) is the mean of steps 10(k−1) … 10k−1, so
    /// any stretch's momentary, short-term and integrated loudness and range can be
    /// recomputed from them exactly (`LoudnessBlocks`).
    private var blockRing: [Double]
    /// Blocks completed since the start (never reset: a reader's cursor).
    public private(set) var blocksCompleted = 0
    /// Blocks completed since the start or the last reset (the index a block is logged with).
    public private(set) var blocksSinceReset = 0
    /// Blocks kept for a reader: one who falls further behind loses the oldest.
    public static let blockRingSize = 1024
    /// Largest momentary and short-term mean power so far.
    private var maxMomentaryPower = 0.0
    private var maxShortTermPower = 0.0
    /// Momentary and short-term mean power after the last step.
    private var momentaryPower = 0.0
    private var shortTermPower = 0.0
    /// Running sums of the last 40 and 300 steps (recomputed exactly every 3000 steps, so
    /// rounding cannot accumulate).
    private var momentarySum = 0.0
    private var shortTermSum = 0.0
    /// The sum of every complete step's mean power since the start or reset (ungated
    /// integrated loudness, BS.1770-1).
    private var totalPower = 0.0

    /// Takes over `other`'s history — the 10 ms steps, gating blocks, short-term windows,
    /// maxima — so that the measurements go on across a change of sample rate: they are mean
    /// powers per 10 ms, whatever the rate. The K-weighting filters start afresh at this
    /// meter's rate, and the step being filled is dropped. `other` must have the same
    /// channel weights.
    public func continueFrom(_ other: LoudnessMeter) {
        precondition(other.weights == weights, "loudness history from another channel layout")
        steps = other.steps
        stepCount = other.stepCount
        blockRing = other.blockRing
        blocksCompleted = other.blocksCompleted
        blocksSinceReset = other.blocksSinceReset
        gatingBlocks = other.gatingBlocks
        shortTermBlocks = other.shortTermBlocks
        gatingHistogram = other.gatingHistogram
        shortTermHistogram = other.shortTermHistogram
        historyExact = other.historyExact
        maxMomentaryPower = other.maxMomentaryPower
        maxShortTermPower = other.maxShortTermPower
        momentaryPower = other.momentaryPower
        shortTermPower = other.shortTermPower
        momentarySum = other.momentarySum
        shortTermSum = other.shortTermSum
        totalPower = other.totalPower
        gating = other.gating
    }

    /// The lowest loudness jackvu reports (for silence), in LUFS.
    public static let floor = -120.0
    /// BS.1770's −0.691 dB offset.
    static let offset = -0.691
    static let absoluteGate = -70.0
    static let momentarySteps = 40
    static let shortTermSteps = 300
    static let blockHopSteps = 10

    /// A meter for `weights.count` channels at `sampleRate` Hz. Not real-time safe.
    public init(sampleRate: Int, weights: [Double]) {
        precondition(sampleRate > 0 && !weights.isEmpty)
        self.sampleRate = sampleRate
        self.weights = weights
        stepSamples = max(1, Int((Double(sampleRate) / 100).rounded()))
        let shelf = KWeighting.shelf(sampleRate: Double(sampleRate))
        let highPass = KWeighting.highPass(sampleRate: Double(sampleRate))
        precondition(highPass.b0 == 1 && highPass.b1 == -2 && highPass.b2 == 1, "RLB numerator is (1, -2, 1)")
        let active = weights.indices.filter { weights[$0] != 0 }
        var first = 0
        while active.count - first > 4 {
            lanes8.append(KWeightingLanes(channels: active[first...].prefix(8), weights: weights, shelf: shelf, highPass: highPass))
            first += 8
        }
        if active.count - first > 2 {
            lanes4.append(KWeightingLanes(channels: active[first...].prefix(4), weights: weights, shelf: shelf, highPass: highPass))
            first += 4
        }
        let stretched = active.count <= 8 && active.count % 4 != 0 && MachineFeatures.x86_64v3
        if active.count - first == 2 || (stretched && active.count == 1) {
            lanes2.append(KWeightingLanes(channels: active[first...].prefix(2), weights: weights, shelf: shelf, highPass: highPass))
            first = active.count
        }
        single = active.count - first == 1 ? active.last : nil
        singleFilter = (Biquad(shelf), Biquad(highPass))
        if stretched {
            stretchLanes = StretchLanes(channels: Array(active), weights: weights, shelf: shelf, highPass: highPass)
        } else {
            stretchLanes = nil
        }
        steps = Array(repeating: 0, count: LoudnessMeter.shortTermSteps)
        blockRing = Array(repeating: 0, count: LoudnessMeter.blockRingSize)
        gatingBlocks.reserveCapacity(LoudnessMeter.exactHistory)  // the hour without reallocating
        shortTermBlocks.reserveCapacity(LoudnessMeter.exactHistory)
    }

    /// A meter for a standard layout.
    public convenience init(sampleRate: Int, layout: ChannelLayout) {
        self.init(sampleRate: sampleRate, weights: layout.weights)
    }

    /// Converts a mean weighted power to LUFS (the floor for silence).
    @inline(__always)
    public static func lufs(_ power: Double) -> Double {
        power > 0 ? max(floor, offset + 10 * log10(power)) : floor
    }

    /// Feeds `frames` frames; `source(c)` points at channel c's samples. Calls `step()` after
    /// every completed 10 ms step, when the momentary and short-term readings are new.
    public func process(frames: Int, from source: (Int) -> UnsafePointer<Float>, step: () -> Void = {}) {
        var offset = stretchLanes == nil ? 0 : processSplit(frames: frames, from: source, step: step)
        while offset < frames {
            let n = min(frames - offset, stepSamples - stepFill)
            var energy = 0.0
            // Channels side by side in SIMD lanes: each filter is a serial dependency chain, so
            // independent channels in the lanes (and in the halves of a vector wider than the
            // machine's) cost about as much as one.
            for g in lanes8.indices { energy += lanes8[g].filter(frames: n, offset: offset, from: source) }
            for g in lanes4.indices { energy += lanes4[g].filter(frames: n, offset: offset, from: source) }
            for g in lanes2.indices { energy += lanes2[g].filter(frames: n, offset: offset, from: source) }
            if let single {
                energy += weights[single] * filterSingle(source(single) + offset, n)
            }
            stepEnergy += energy
            stepFill += n
            offset += n
            if stepFill == stepSamples {
                completeStep()
                step()
            }
        }
    }

    /// The warm-up of a second stretch (`processSplit`): 20 steps, 200 ms. The K-weighting's
    /// slowest decay is its high-pass's double pole (radius 0.99502 a sample at 48 kHz, a
    /// time constant of 4.2 ms at every rate): 200 ms is 48 of them, so the stretch's state
    /// after it differs from the one the audio before would have left by e⁻⁴⁸ (10⁻²¹) of
    /// it: below double precision's 10⁻¹⁶.
    static let splitWarmUpSteps = 20
    /// The fewest steps a stretch of `processSplit` takes (0.8 s: the warm-up adds at most a
    /// quarter), and the most (the energies' buffers; 41 s).
    static let splitFewestSteps = 80
    static let splitMostSteps = 4096

    /// The fewest frames a call needs for `processSplit` to run (its stretches at least
    /// `splitFewestSteps` long whatever the step being filled), or 0 where this meter never
    /// splits (more than eight weighted channels, a multiple of four, no AVX2).
    public var framesToSplit: Int {
        guard let stretchLanes else { return 0 }
        let stretches = stretchLanes.stretches
        return stepSamples * (LoudnessMeter.splitFewestSteps * stretches + 1 - (stretches - 1) * LoudnessMeter.splitWarmUpSteps)
    }

    /// The K-weighting on long calls as stretches of time side by side in the lanes of
    /// `stretchLanes` (a pair's two stretches, a lone channel's four, …): stretch 0 goes on
    /// from the one-stretch lanes' state; each later stretch starts 200 ms before the
    /// previous one's end with its filters at rest (its warm-up; see `splitWarmUpSteps`), and
    /// the last hands its state back. With AVX2 four lanes are one register
    /// (`DSPAVX2.kWeightFourLanes`, its multiply-adds fused): two or four independent
    /// recursions in flight for the cost of one (a pair's 2.2× the samples a second,
    /// BENCHMARKS.md), and no lane of a register wasted. The first stretch's arithmetic is
    /// the one-stretch path's step for step (the fused multiply-adds' rounding apart: the
    /// readings 10⁻¹¹ LU apart at most); the others' differs further by the warm-up's 10⁻²¹.
    /// Steps complete in order, after the frames are filtered (`step` sees no samples).
    /// Returns the frames done (0 when the call is too short: the one-stretch path does it).
    private func processSplit(frames: Int, from source: (Int) -> UnsafePointer<Float>, step: () -> Void) -> Int {
        guard let stretchLanes else { return 0 }
        let size = stepSamples, warmUp = LoudnessMeter.splitWarmUpSteps, stretches = stretchLanes.stretches
        let stride = LoudnessMeter.splitMostSteps + 1
        var done = 0
        while true {
            // Stretch 0 completes the step being filled (`lead` frames) and k more; each later
            // one starts warmUp steps and `lead` frames before the previous one's end and ends
            // k − warmUp steps after it: lead + k + (stretches − 1)(k − warmUp) steps in all.
            let lead = size - stepFill
            let k = min(LoudnessMeter.splitMostSteps, (frames - done - lead + (stretches - 1) * warmUp * size) / (stretches * size))
            guard k >= LoudnessMeter.splitFewestSteps else { return done }
            // Made at the first split (a file's), not by a meter that never splits (live).
            if stretchEnergies.isEmpty { stretchEnergies = Array(repeating: 0, count: stretches * stride) }
            stretchLanes.bind(source)
            // Each stretch's first frame.
            var at = SIMD4<Int>(repeating: done)
            var end = done + lead + k * size
            for s in 1..<stretches {
                at[s] = end - warmUp * size - lead
                end += (k - warmUp) * size
            }
            handOver(stretchLanes, toStretches: true)
            var n = lead
            stretchEnergies.withUnsafeMutableBufferPointer { energies in
                for j in 0...k {
                    for s in 0..<stretches { energies[s * stride + j] = 0 }
                    for g in 0..<stretchLanes.groups {
                        let e = stretchLanes.filter(group: g, at: at, count: n)
                        for l in 0..<4 { energies[stretchLanes.stretchOfLane[4 * g + l] * stride + j] += e[l] }
                    }
                    at &+= n
                    n = size
                }
            }
            handOver(stretchLanes, toStretches: false)
            splitPieces += 1
            for s in 0..<stretches {
                for j in (s == 0 ? 0 : warmUp + 1)...k {
                    stepEnergy += stretchEnergies[s * stride + j]
                    stepFill += s == 0 && j == 0 ? lead : size
                    completeStep()
                    step()
                }
            }
            done = end
        }
    }

    /// The one-stretch lanes' state to the stretches' first, or their last stretch's back (a
    /// meter whose K-weighting splits has its channels in one group of lanes).
    private func handOver(_ stretchLanes: StretchLanes, toStretches: Bool) {
        if !lanes8.isEmpty {
            if toStretches { stretchLanes.start(from: lanes8[0]) } else { stretchLanes.finish(into: &lanes8[0]) }
        } else if !lanes4.isEmpty {
            if toStretches { stretchLanes.start(from: lanes4[0]) } else { stretchLanes.finish(into: &lanes4[0]) }
        } else {
            if toStretches { stretchLanes.start(from: lanes2[0]) } else { stretchLanes.finish(into: &lanes2[0]) }
        }
    }

    @inline(__always)
    private func filterSingle(_ x: UnsafePointer<Float>, _ n: Int) -> Double {
        var (shelf, highPass) = singleFilter
        var sum = 0.0
        for k in 0..<n {
            let y = highPass.process(shelf.process(Double(x[k])))
            sum += y * y
        }
        shelf.flushDenormals()
        highPass.flushDenormals()
        singleFilter = (shelf, highPass)
        return sum
    }

    private func completeStep() {
        let ring = LoudnessMeter.shortTermSteps
        let slot = stepCount % ring
        let value = stepEnergy / Double(stepSamples)
        // Leaving the windows: the step 40 back (still in the ring) and the one it replaces.
        if stepCount >= LoudnessMeter.momentarySteps {
            momentarySum -= steps[(stepCount - LoudnessMeter.momentarySteps) % ring]
        }
        if stepCount >= ring { shortTermSum -= steps[slot] }
        steps[slot] = value
        momentarySum += value
        shortTermSum += value
        totalPower += value
        stepEnergy = 0
        stepFill = 0
        stepCount += 1
        if stepCount % 3000 == 0 {
            momentarySum = sumOfLastSteps(LoudnessMeter.momentarySteps)
            shortTermSum = sumOfLastSteps(LoudnessMeter.shortTermSteps)
        }
        momentaryPower = max(0, momentarySum) / Double(LoudnessMeter.momentarySteps)
        shortTermPower = max(0, shortTermSum) / Double(LoudnessMeter.shortTermSteps)
        if stepCount % LoudnessMeter.blockHopSteps == 0 {
            var block = 0.0
            for k in 0..<LoudnessMeter.blockHopSteps { block += steps[(stepCount - 1 - k) % ring] }
            blockRing[blocksCompleted % LoudnessMeter.blockRingSize] = block / Double(LoudnessMeter.blockHopSteps)
            blocksCompleted += 1
            blocksSinceReset += 1
        }
        if stepCount >= LoudnessMeter.momentarySteps {
            maxMomentaryPower = max(maxMomentaryPower, momentaryPower)
            if stepCount % LoudnessMeter.blockHopSteps == 0 {
                gatingHistogram.add(momentaryPower)
                if historyExact { gatingBlocks.append(momentaryPower) }
            }
        }
        if stepCount >= LoudnessMeter.shortTermSteps {
            maxShortTermPower = max(maxShortTermPower, shortTermPower)
            if stepCount % LoudnessMeter.blockHopSteps == 0 {
                shortTermHistogram.add(shortTermPower)
                if historyExact { shortTermBlocks.append(shortTermPower) }
            }
        }
        if historyExact && gatingBlocks.count >= LoudnessMeter.exactHistory {
            // The hour is full: the histogram alone from now on (the arrays' memory stays
            // reserved for a reset; a real-time thread never frees it).
            historyExact = false
            gatingBlocks.removeAll(keepingCapacity: true)
            shortTermBlocks.removeAll(keepingCapacity: true)
        }
    }

    /// The 100 ms blocks completed after `cursor` (a `blocksCompleted` value; updated): each
    /// block's mean weighted power and its index since the start or reset (1, 2, …). Returns
    /// how many were lost (the reader fell more than `blockRingSize` blocks behind).
    @discardableResult
    public func takeBlocks(after cursor: inout Int, _ body: (_ power: Double, _ index: Int) -> Void) -> Int {
        let first = max(cursor, blocksCompleted - LoudnessMeter.blockRingSize)
        let lost = first - cursor
        for b in first..<blocksCompleted {
            body(blockRing[b % LoudnessMeter.blockRingSize], blocksSinceReset - (blocksCompleted - b) + 1)
        }
        cursor = blocksCompleted
        return lost
    }

    /// Sum of the last `count` steps; steps before the start count as silence.
    private func sumOfLastSteps(_ count: Int) -> Double {
        var sum = 0.0
        for k in 0..<min(count, stepCount) {
            sum += steps[(stepCount - 1 - k) % LoudnessMeter.shortTermSteps]
        }
        return sum
    }

    // MARK: Readings (LUFS / LU)

    /// Momentary loudness (400 ms), LUFS.
    public var momentary: Double { LoudnessMeter.lufs(momentaryPower) }
    /// Short-term loudness (3 s), LUFS.
    public var shortTerm: Double { LoudnessMeter.lufs(shortTermPower) }
    /// Largest momentary loudness since the start or reset, LUFS.
    /// (Before the first full 400 ms window, the partial window's reading counts too, so the
    /// maximum is never below the momentary loudness shown.)
    public var maxMomentary: Double { LoudnessMeter.lufs(max(maxMomentaryPower, momentaryPower)) }
    /// Largest short-term loudness since the start or reset, LUFS.
    /// (Likewise never below the short-term loudness shown.)
    public var maxShortTerm: Double { LoudnessMeter.lufs(max(maxShortTermPower, shortTermPower)) }

    /// The audio measured since the start or reset, in seconds (whole 10 ms steps): the
    /// duration the integrated loudness covers.
    public var measuredSeconds: Double { Double(stepCount) * Double(stepSamples) / Double(sampleRate) }

    /// Integrated loudness since the start or reset, gated as `gating` says, LUFS; the floor
    /// if no block passed the gates. Not real-time safe (scans the history).
    public var integrated: Double {
        guard let relativeLU = gating.relativeLU else {
            // BS.1770-1: the mean power of every complete 10 ms step, silence included.
            return stepCount > 0 ? LoudnessMeter.lufs(totalPower / Double(stepCount)) : LoudnessMeter.floor
        }
        return historyExact
            ? LoudnessMeter.integrated(ofGatingBlocks: gatingBlocks, relativeLU: relativeLU) : gatingHistogram.integrated(relativeLU: relativeLU)
    }

    /// How `integrated` is gated (`--gating`; the default BS.1770-4's).
    public var gating = Gating.bs1770_4

    /// Loudness range (EBU Tech 3342) since the start or reset, LU; 0 before any short-term
    /// value passes the gates. Not real-time safe (sorts the history).
    public var loudnessRange: Double {
        historyExact ? LoudnessMeter.loudnessRange(ofShortTermPowers: shortTermBlocks) : shortTermHistogram.loudnessRange
    }

    /// Where the short-term loudness has been since the start or reset: the percentage of
    /// short-term windows (one every 100 ms, above −70 LUFS) in each `binLU`-wide bin from
    /// −70 LUFS up (`LoudnessHistogram.distribution`).
    public func shortTermDistribution(into out: UnsafeMutableBufferPointer<Float>, binLU: Double) {
        shortTermHistogram.distribution(into: out, binLU: binLU)
    }

    /// Whether the gated readings are still the full computation over every block (the
    /// first hour), not the histogram's (`LoudnessHistogram`).
    public var readingsExact: Bool { historyExact }

    /// The gated loudness (BS.1770-4 §2.3: −70 LUFS absolute, −10 LU relative, or the
    /// relative gate `relativeLU`) of 400 ms gating blocks' mean powers, LUFS; the floor if
    /// none passes the gates. The live meter's and the log's reports' (`LoudnessBlocks`) one
    /// computation.
    public static func integrated(ofGatingBlocks blocks: [Double], relativeLU: Double = -10) -> Double {
        let absolute = LoudnessMeter.power(ofLUFS: LoudnessMeter.absoluteGate)
        var sum = 0.0, count = 0
        for p in blocks where p > absolute {
            sum += p
            count += 1
        }
        guard count > 0 else { return LoudnessMeter.floor }
        let relative = sum / Double(count) * LoudnessMeter.power(ofLU: relativeLU)
        sum = 0
        count = 0
        for p in blocks where p > absolute && p > relative {
            sum += p
            count += 1
        }
        return count > 0 ? LoudnessMeter.lufs(sum / Double(count)) : LoudnessMeter.floor
    }

    /// The loudness range (EBU Tech 3342: −70 LUFS absolute, −20 LU relative, 95th − 10th
    /// percentile) of 3 s short-term windows' mean powers, LU; 0 before any passes the gates.
    public static func loudnessRange(ofShortTermPowers powers: [Double]) -> Double {
        let absolute = LoudnessMeter.power(ofLUFS: LoudnessMeter.absoluteGate)
        let gated = powers.filter { $0 >= absolute }
        guard !gated.isEmpty else { return 0 }
        let mean = gated.reduce(0, +) / Double(gated.count)
        let relative = mean * LoudnessMeter.power(ofLU: -20)
        let sorted = gated.filter { $0 >= relative }.map(LoudnessMeter.lufs).sorted()
        guard !sorted.isEmpty else { return 0 }
        // MATLAB reference: sorted(round((n − 1)·p/100 + 1)), 1-based, round half away from 0.
        func percentile(_ p: Double) -> Double {
            let index = Int(((Double(sorted.count - 1) * p / 100) + 1).rounded(.toNearestOrAwayFromZero)) - 1
            return sorted[min(max(0, index), sorted.count - 1)]
        }
        return percentile(95) - percentile(10)
    }

    /// Starts the measurement again: integrated loudness, loudness range, maxima and the
    /// time windows (the filters keep their state, so the signal stays continuous).
    public func reset() {
        stepEnergy = 0
        stepFill = 0
        stepCount = 0
        blocksSinceReset = 0
        for i in steps.indices { steps[i] = 0 }
        momentarySum = 0
        shortTermSum = 0
        totalPower = 0
        gatingBlocks.removeAll(keepingCapacity: true)
        shortTermBlocks.removeAll(keepingCapacity: true)
        gatingHistogram.removeAll()
        shortTermHistogram.removeAll()
        historyExact = true
        maxMomentaryPower = 0
        maxShortTermPower = 0
        momentaryPower = 0
        shortTermPower = 0
    }

    /// The mean power whose loudness is `lufs`.
    public static func power(ofLUFS lufs: Double) -> Double { pow(10, (lufs - offset) / 10) }
    /// The power ratio of `lu` loudness units.
    static func power(ofLU lu: Double) -> Double { pow(10, lu / 10) }
}

/// The K-weighting of 2, 4 or 8 channels in the SIMD lanes of `V`, and their weighted sum of
/// squares. Real-time safe.
struct KWeightingLanes<V: SIMD & Sendable>: Sendable where V.Scalar == Double {
    fileprivate var shelf: BiquadLanes<V>
    fileprivate var highPass: BiquadLanes<V>
    /// The channel of each lane (a padding lane repeats the first, with weight 0).
    private let channels: SIMD8<Int>
    private let weights: V

    /// Lanes for `channels` (at most `V.scalarCount`), weighted by `weights[channel]`.
    init(channels: ArraySlice<Int>, weights: [Double], shelf: BiquadCoefficients, highPass: BiquadCoefficients) {
        precondition(!channels.isEmpty && channels.count <= V.scalarCount)
        var lanes = SIMD8<Int>(repeating: channels.first!)
        var w = V()
        for (l, c) in channels.enumerated() {
            lanes[l] = c
            w[l] = weights[c]
        }
        self.channels = lanes
        self.weights = w
        self.shelf = BiquadLanes(shelf)
        self.highPass = BiquadLanes(highPass)
    }

    /// K-weights `n` samples from `offset` on of each lane's channel; returns Σ G_i·Σ y².
    @inline(__always)
    mutating func filter(frames n: Int, offset: Int, from source: (Int) -> UnsafePointer<Float>) -> Double {
        var bases = SIMD8<Int>()
        for l in 0..<V.scalarCount { bases[l] = Int(bitPattern: source(channels[l]) + offset) }
        var s = shelf, h = highPass
        var sum = V(), sumB = V()
        @inline(__always) func sample(_ k: Int) -> V {
            var x = V()
            for l in 0..<V.scalarCount { x[l] = Double(UnsafePointer<Float>(bitPattern: bases[l])![k]) }
            return x
        }
        // Two samples per step (`process2`: half the recursions' critical path).
        var k = 0
        while k + 2 <= n {
            let (sa, sb) = s.process2(sample(k), sample(k + 1))
            let (ya, yb) = h.processHighPass2(sa, sb)
            sum += ya * ya
            sumB += yb * yb
            k += 2
        }
        if k < n {
            let y = h.processHighPass(s.process(sample(k)))
            sum += y * y
        }
        sum += sumB
        s.flushDenormals()
        h.flushDenormals()
        (shelf, highPass) = (s, h)
        return (weights * sum).sum()
    }
}

// (In this file, with its one user: a generic type is specialised only where its body is
// visible, and the debug build compiles file by file.)
/// Biquads with the same coefficients run side by side in SIMD lanes (a channel per lane
/// through the same filter: 2, 4 or 8 of them), in direct form I (state is kept per form, so a
/// filter is either a `Biquad` or a lane of a `BiquadLanes` for its whole life):
/// `y = b0·x + b1·x1 + b2·x2 − a1·y1 − a2·y2`. Only `a1·y1` sits on the loop-carried path (a
/// multiply and an add), so it runs about a third faster than the transposed form, whose
/// recursion passes through two adds and a multiply; and the lanes' recursions are
/// independent, so a vector wider than the machine's runs as several chains at once.
/// Real-time safe.
struct BiquadLanes<V: SIMD & Sendable>: Sendable where V.Scalar == Double {
    let b0, b1, b2, a1, a2: V
    /// The look-ahead coefficients a1² − a2 and a1·a2 (`process2`).
    let c1, c2: V
    /// Previous inputs and outputs.
    var x1 = V(), x2 = V(), y1 = V(), y2 = V()

    /// Every lane with coefficients `c`, at rest.
    init(_ c: BiquadCoefficients) {
        b0 = V(repeating: c.b0)
        b1 = V(repeating: c.b1)
        b2 = V(repeating: c.b2)
        a1 = V(repeating: c.a1)
        a2 = V(repeating: c.a2)
        c1 = V(repeating: c.a1 * c.a1 - c.a2)
        c2 = V(repeating: c.a1 * c.a2)
    }

    @inline(__always)
    mutating func process(_ x: V) -> V {
        let partial = b0 * x + b1 * x1 + b2 * x2 - a2 * y2  // off the recursion's critical path
        return recurse(partial, x)
    }

    /// The same for a numerator of exactly (1, −2, 1), as the RLB high-pass has: three
    /// multiplies fewer.
    @inline(__always)
    mutating func processHighPass(_ x: V) -> V {
        let partial = (x - x1) - (x1 - x2) - a2 * y2
        return recurse(partial, x)
    }

    /// Two samples at once, each output from the outputs of the previous pair (look-ahead:
    /// `y[n+1] = P[n+1] − a1·P[n] + (a1² − a2)·y[n−1] + a1·a2·y[n−2]`, with
    /// `P[n] = b0·x[n] + b1·x[n−1] + b2·x[n−2]`), so the recursion's critical path is one
    /// multiply and two adds per two samples instead of per sample. The same filter (the
    /// identity is exact; the rounding differs in the last bits).
    @inline(__always)
    mutating func process2(_ xa: V, _ xb: V) -> (V, V) {
        let pa = b0 * xa + b1 * x1 + b2 * x2
        let pb = b0 * xb + b1 * xa + b2 * x1
        return recurse2(pa, pb, xa, xb)
    }

    /// `process2` for a numerator of exactly (1, −2, 1).
    @inline(__always)
    mutating func processHighPass2(_ xa: V, _ xb: V) -> (V, V) {
        let pa = (xa - x1) - (x1 - x2)
        let pb = (xb - xa) - (xa - x1)
        return recurse2(pa, pb, xa, xb)
    }

    @inline(__always)
    private mutating func recurse2(_ pa: V, _ pb: V, _ xa: V, _ xb: V) -> (V, V) {
        let ya = pa - (a1 * y1 + a2 * y2)
        let yb = (pb - a1 * pa) + (c1 * y1 + c2 * y2)
        x2 = xa
        x1 = xb
        y2 = ya
        y1 = yb
        return (ya, yb)
    }

    @inline(__always)
    private mutating func recurse(_ partial: V, _ x: V) -> V {
        let y = partial - a1 * y1
        x2 = x1
        x1 = x
        y2 = y1
        y1 = y
        return y
    }

    /// Flushes tiny state values to zero, so silence does not leave denormals behind.
    mutating func flushDenormals() {
        func flushed(_ v: V) -> V {
            let tiny = V(repeating: 1e-30)
            return v.replacing(with: 0, where: v .< tiny .& v .> -tiny)
        }
        (x1, x2, y1, y2) = (flushed(x1), flushed(x2), flushed(y1), flushed(y2))
    }
}

extension LoudnessMeter {
    /// The peak-to-loudness ratio (PLR) in LU: the largest true peak (dBTP) less the
    /// integrated loudness (LUFS), the headroom a programme's peaks use above its loudness,
    /// as EBU Tech 3343 (production guidelines for R 128) and AES TD1004 discuss it. Not a
    /// number while either has no value yet (at its floor: silence, or nothing above the
    /// gates).
    public static func peakToLoudnessRatio(maxTruePeakDBTP: Double, integratedLUFS: Double) -> Double {
        guard maxTruePeakDBTP > Double(Decibels.floor), integratedLUFS > floor else { return .nan }
        return maxTruePeakDBTP - integratedLUFS
    }
}

/// The K-weighting of up to eight channels as stretches of time side by side
/// (`LoudnessMeter.processSplit`), in groups of four lanes through
/// `DSPAVX2.kWeightFourLanes`: its state, coefficients and sums in memory the kernel is
/// handed pointers to (nothing of that module's crosses into this one). Made only when
/// `MachineFeatures.x86_64v3`. One thread at a time.
private final class StretchLanes {
    /// Per group of four lanes, six vectors: x1, x2, y1, y2 (the shelf's; its outputs are
    /// the high-pass's inputs) and z1, z2 (the high-pass's).
    private let state: UnsafeMutablePointer<SIMD4<Double>>
    private let coefficients = UnsafeMutablePointer<SIMD4<Double>>.allocate(capacity: 11)
    private let sums = UnsafeMutablePointer<SIMD4<Double>>.allocate(capacity: 1)
    /// Per group, each lane's channel weight.
    private let weights: UnsafeMutablePointer<SIMD4<Double>>
    /// Per lane, its channel's samples (`bind`).
    private let bases: UnsafeMutablePointer<UnsafePointer<Float>>
    /// The channels the one-stretch lanes hold, in their order (the first stretch's lanes).
    private let count: Int
    /// Stretches side by side: as many as make the lanes fill their registers, 4 divided by
    /// the largest power of two dividing `count` (a pair 2, five channels 4).
    let stretches: Int
    /// Groups of four lanes: `count` × `stretches` / 4.
    let groups: Int
    /// Each lane's channel and stretch, stretch by stretch: lane s·`count` + i is channel i
    /// of stretch s (a pair's (left, 0), (right, 0), (left, 1), (right, 1)).
    private let channelOfLane: [Int]
    let stretchOfLane: [Int]

    /// For `channels` (up to eight, four not dividing their count; the one-stretch lanes'
    /// order) weighted by `weights[channel]`.
    init(channels active: [Int], weights: [Double], shelf: BiquadCoefficients, highPass: BiquadCoefficients) {
        precondition(!active.isEmpty && active.count <= 8 && active.count % 4 != 0)
        count = active.count
        stretches = active.count % 2 == 1 ? 4 : 2
        groups = count * stretches / 4
        channelOfLane = (0..<(4 * groups)).map { active[$0 % active.count] }
        stretchOfLane = (0..<(4 * groups)).map { $0 / active.count }
        state = .allocate(capacity: 6 * groups)
        state.initialize(repeating: SIMD4(), count: 6 * groups)
        self.weights = .allocate(capacity: groups)
        for g in 0..<groups {
            let w = channelOfLane[(4 * g)..<(4 * g + 4)].map { weights[$0] }
            (self.weights + g).initialize(to: SIMD4(w[0], w[1], w[2], w[3]))
        }
        bases = .allocate(capacity: 4 * groups)
        // The coefficients as `BiquadLanes` computes them (its look-ahead ones included).
        let s = BiquadLanes<SIMD4<Double>>(shelf), h = BiquadLanes<SIMD4<Double>>(highPass)
        for (i, v) in [s.b0, s.b1, s.b2, s.a1, s.a2, s.c1, s.c2, h.a1, h.a2, h.c1, h.c2].enumerated() {
            (coefficients + i).initialize(to: v)
        }
        sums.initialize(to: SIMD4())
    }

    deinit {
        state.deallocate()
        coefficients.deallocate()
        sums.deallocate()
        weights.deallocate()
        bases.deallocate()
    }

    /// Each lane's channel from `source` (a call's).
    func bind(_ source: (Int) -> UnsafePointer<Float>) {
        for l in 0..<(4 * groups) { bases[l] = source(channelOfLane[l]) }
    }

    /// The first stretch's lanes take the one-stretch lanes' state; the others are at rest.
    func start<V>(from lanes: KWeightingLanes<V>) {
        let (s, h) = (lanes.shelf, lanes.highPass)
        for (i, v) in [s.x1, s.x2, s.y1, s.y2, h.y1, h.y2].enumerated() {
            for g in 0..<groups { state[6 * g + i] = SIMD4() }
            for c in 0..<count { state[6 * (c / 4) + i][c % 4] = v[c] }
        }
    }

    /// The last stretch's state into the one-stretch lanes, whose audio it ends (a padding
    /// lane, which filters its group's first channel, takes that channel's).
    func finish<V>(into lanes: inout KWeightingLanes<V>) {
        let first = (stretches - 1) * count
        func last(_ i: Int) -> V {
            var v = V()
            for l in 0..<V.scalarCount {
                let lane = first + (l < count ? l : 0)
                v[l] = state[6 * (lane / 4) + i][lane % 4]
            }
            return v
        }
        (lanes.shelf.x1, lanes.shelf.x2, lanes.shelf.y1, lanes.shelf.y2) = (last(0), last(1), last(2), last(3))
        (lanes.highPass.x1, lanes.highPass.x2, lanes.highPass.y1, lanes.highPass.y2) = (last(2), last(3), last(4), last(5))
    }

    /// `n` samples of group `g`'s lanes, each from its stretch's frame in `at`; each lane's
    /// G_i·Σ y².
    func filter(group g: Int, at: SIMD4<Int>, count n: Int) -> SIMD4<Double> {
        let l = 4 * g
        kWeightFourLanes(state + 6 * g, coefficients,
                         bases[l] + at[stretchOfLane[l]], bases[l + 1] + at[stretchOfLane[l + 1]],
                         bases[l + 2] + at[stretchOfLane[l + 2]], bases[l + 3] + at[stretchOfLane[l + 3]], n, sums)
        return weights[g] * sums.pointee
    }
}
