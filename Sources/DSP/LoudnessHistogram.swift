/// The gated readings' history in constant memory and constant time: a histogram of block
/// loudness, as libebur128's histogram mode keeps, but with the exact power sum of every bin
/// and bins of 0.005 LU, so that integrated loudness and loudness range cost the same after a
/// minute or a month, and agree with the full computation over every block to 0.01 LU.
///
/// Blocks below BS.1770's absolute gate (−70 LUFS) are never used by either reading and are
/// only counted; those above `highest` (+30 LUFS, beyond any signal: a full-scale 22.2 mix
/// reads about +12) share the top bin. A gate's threshold falls inside one bin: the blocks of
/// bins above it count whole (their exact power sums), those below not at all, and that one
/// bin counts whole when its mean power is above the threshold — an error only for blocks
/// within 0.005 LU of the threshold. A percentile is the mean of the bin it falls in (within
/// 0.005 LU; exact when the bin's blocks are equal, as a steady signal's are).
///
/// Memory: 20,000 bins × 12 bytes = 240 KB per histogram, whatever the duration (a programme
/// keeps two: gating blocks and short-term windows). `add` is real-time safe (no allocation);
/// the readings scan the bins (about 20,000 additions).
public struct LoudnessHistogram: Sendable {
    /// The lowest and highest loudness binned, LUFS, and the bin width, LU.
    public static let lowest = -70.0
    public static let highest = 30.0
    public static let binWidth = 0.005
    public static let binCount = Int(((highest - lowest) / binWidth).rounded())

    /// Blocks and the sum of their mean powers, per bin.
    private var counts: [Int32]
    private var sums: [Double]
    /// Blocks at or above the absolute gate, and their power sum.
    public private(set) var count = 0
    private var sum = 0.0
    /// Blocks in all (also those below the gate).
    public private(set) var blocks = 0
    /// The lowest power binned (the absolute gate's).
    private let lowestPower = LoudnessMeter.power(ofLUFS: LoudnessHistogram.lowest)

    public init() {
        counts = [Int32](repeating: 0, count: LoudnessHistogram.binCount)
        sums = [Double](repeating: 0, count: LoudnessHistogram.binCount)
    }

    /// The bin of a mean power (at or above the absolute gate).
    static func bin(ofPower p: Double) -> Int {
        let lufs = LoudnessMeter.lufs(p)
        let b = Int(((lufs - lowest) / binWidth).rounded(.down))
        return min(max(0, b), binCount - 1)
    }

    /// Adds a block's mean power. Real-time safe.
    public mutating func add(_ power: Double) {
        blocks += 1
        guard power >= lowestPower, power.isFinite else { return }
        let b = LoudnessHistogram.bin(ofPower: power)
        counts[b] &+= 1
        sums[b] += power
        count += 1
        sum += power
    }

    /// Forgets every block.
    public mutating func removeAll() {
        for i in counts.indices where counts[i] != 0 {
            counts[i] = 0
            sums[i] = 0
        }
        count = 0
        sum = 0
        blocks = 0
    }

    /// The bins at or above a relative gate `relativeLU` below the mean power of the blocks
    /// above the absolute gate (`above`: strictly above the absolute gate, as BS.1770's
    /// integrated loudness; otherwise at or above it, as Tech 3342's range): their first bin
    /// and the count and power sum of the blocks they hold; nil when none.
    private func gated(relativeLU: Double) -> (first: Int, count: Int, sum: Double)? {
        guard count > 0 else { return nil }
        let threshold = sum / Double(count) * LoudnessMeter.power(ofLU: relativeLU)
        var first = threshold < lowestPower ? 0 : LoudnessHistogram.bin(ofPower: threshold)
        // The threshold's own bin counts when its blocks' mean power is above it.
        if counts[first] > 0 && sums[first] / Double(counts[first]) <= threshold { first += 1 }
        var n = 0, s = 0.0
        var b = first
        while b < LoudnessHistogram.binCount {
            if counts[b] != 0 {
                n += Int(counts[b])
                s += sums[b]
            }
            b += 1
        }
        return n > 0 ? (first, n, s) : nil
    }

    /// BS.1770-4 integrated loudness of the blocks (gating blocks' mean powers): −70 LUFS
    /// absolute, −10 LU relative; the floor when none passes. `relativeLU`: another relative
    /// gate (nil: none, BS.1770-1's ungated mean above the absolute gate).
    public func integrated(relativeLU: Double? = -10) -> Double {
        guard count > 0 else { return LoudnessMeter.floor }
        guard let relativeLU else { return LoudnessMeter.lufs(sum / Double(count)) }
        guard let g = gated(relativeLU: relativeLU) else { return LoudnessMeter.floor }
        return LoudnessMeter.lufs(g.sum / Double(g.count))
    }

    /// The blocks' distribution in coarse bins: `out[k]` is the percentage of the blocks at or
    /// above the absolute gate whose loudness is from −70 + k·`binLU` LUFS (inclusive) to the
    /// next edge; the last bin also holds those above it. All 0 before the first block.
    /// `binLU` a multiple of the bin width (0.005 LU). Real-time safe (20,000 additions).
    public func distribution(into out: UnsafeMutableBufferPointer<Float>, binLU: Double) {
        for k in out.indices { out[k] = 0 }
        guard count > 0, !out.isEmpty else { return }
        let per = max(1, Int((binLU / LoudnessHistogram.binWidth).rounded()))
        let scale = 100 / Float(count)
        for b in 0..<LoudnessHistogram.binCount where counts[b] != 0 {
            out[min(out.count - 1, b / per)] += Float(counts[b]) * scale
        }
    }

    /// EBU Tech 3342 loudness range of the blocks (short-term windows' mean powers): −70 LUFS
    /// absolute, −20 LU relative, 95th − 10th percentile (the MATLAB reference's indexing);
    /// 0 when none passes.
    public var loudnessRange: Double {
        guard let g = gated(relativeLU: -20) else { return 0 }
        func percentile(_ p: Double) -> Double {
            // sorted(round((n − 1)·p/100 + 1)), 1-based, round half away from 0.
            let k = min(max(1, Int((Double(g.count - 1) * p / 100 + 1).rounded(.toNearestOrAwayFromZero))), g.count)
            var seen = 0
            var b = g.first
            while b < LoudnessHistogram.binCount {
                seen += Int(counts[b])
                if seen >= k { return LoudnessMeter.lufs(sums[b] / Double(counts[b])) }
                b += 1
            }
            return LoudnessMeter.floor
        }
        return percentile(95) - percentile(10)
    }
}
