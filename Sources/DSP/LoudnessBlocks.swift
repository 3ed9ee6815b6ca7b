/// BS.1770 loudness recomputed from logged 100 ms blocks (`LoudnessMeter.takeBlocks`): the
/// mean weighted power of each 100 ms, with its index since the meter's start or reset.
///
/// Within a run of consecutive indices, the momentary loudness at block k is the mean of
/// blocks k−3 … k (400 ms), the short-term loudness the mean of k−29 … k (3 s): the same
/// gating blocks (400 ms every 100 ms, 75 % overlap) and short-term windows (3 s every
/// 100 ms) the live meter keeps, so the integrated loudness and the loudness range of the
/// same audio come out the same (to rounding). A window never spans a break in the indices
/// (a reset) or a block outside the stretch asked for.
public struct LoudnessBlocks: Sendable {
    /// Gating-block (400 ms) and short-term (3 s) mean powers of complete windows.
    public private(set) var momentaryPowers: [Double] = []
    public private(set) var shortTermPowers: [Double] = []
    /// The last 30 block powers of the current run (a ring), and the run's length.
    private var window = [Double](repeating: 0, count: 30)
    private var run = 0
    private var lastIndex = -1
    /// Blocks taken, and the sum of their powers (ungated loudness, BS.1770-1).
    public private(set) var count = 0
    private var totalPower = 0.0

    public init() {}

    /// Adds the next block (in time order).
    public mutating func add(power: Double, index: Int) {
        if index != lastIndex &+ 1 { run = 0 }
        lastIndex = index
        window[run % 30] = power
        run += 1
        count += 1
        totalPower += power
        if run >= 4 {
            var sum = 0.0
            for k in 0..<4 { sum += window[(run - 1 - k) % 30] }
            momentaryPowers.append(sum / 4)
        }
        if run >= 30 {
            var sum = 0.0
            for k in 0..<30 { sum += window[k] }
            shortTermPowers.append(sum / 30)
        }
    }

    /// Integrated loudness (BS.1770-4 gating: −70 LUFS absolute, −10 LU relative), LUFS; the
    /// floor when nothing passes the gates: the live meter's computation.
    public var integrated: Double { LoudnessMeter.integrated(ofGatingBlocks: momentaryPowers) }

    /// Integrated loudness gated as `gating` says (`--gating`), LUFS: BS.1770-1's the mean
    /// power of every block taken.
    public func integrated(_ gating: Gating) -> Double {
        guard let relativeLU = gating.relativeLU else { return count > 0 ? LoudnessMeter.lufs(totalPower / Double(count)) : LoudnessMeter.floor }
        return LoudnessMeter.integrated(ofGatingBlocks: momentaryPowers, relativeLU: relativeLU)
    }

    /// Loudness range (EBU Tech 3342), LU: the live meter's computation.
    public var range: Double { LoudnessMeter.loudnessRange(ofShortTermPowers: shortTermPowers) }

    /// Largest momentary and short-term loudness, LUFS (the floor with none).
    public var maxMomentary: Double { LoudnessMeter.lufs(momentaryPowers.max() ?? 0) }
    public var maxShortTerm: Double { LoudnessMeter.lufs(shortTermPowers.max() ?? 0) }
}
