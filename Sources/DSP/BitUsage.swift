/// Which bits of float samples are in use (a bit meter): the highest and the lowest bit any
/// sample of a stretch sets, counted in bits below full scale, whether the stretch is
/// quantised to 16 or 24 bits, and its DC offset.
///
/// A sample x (|x| < 1) is n · 2⁻³¹ with n an integer exactly when it has no bit below 2⁻³¹
/// (a float's 24-bit significand scaled by a power of two), so the lowest bit in use over a
/// stretch is the lowest set bit of the OR of every |n|: 16-bit audio (k/32768, so n a
/// multiple of 2¹⁶) reads a depth of 16 (the sign and 15 bits), 24-bit audio 24, float audio
/// more (each sample has 24 significant bits at its own scale, so the smallest samples decide:
/// 27 for a sine sampled at 7.5° steps, 32 — the most counted — with samples near zero).
/// The highest bit in use is the largest sample's: its headroom is the bits above it
/// (0 when a sample reaches half full scale or more). Samples at or beyond full scale count
/// as the top bit. Real-time safe; vectorised, no branch per sample.
public struct BitUsage: Sendable, Equatable {
    /// Bits from full scale down to the lowest bit in use: 16 for 16-bit audio, 24 for
    /// 24-bit, more for float audio (32 at most); 0 for digital silence.
    public var depth = 0
    /// Bits unused above the highest one in use: 0 when a sample reaches half full scale or
    /// more, 1 below that down to a quarter, …; 32 for digital silence.
    public var headroom = 32
    /// 16 or 24 when every sample is a 16- or 24-bit value (the smaller when both), else 0.
    public var quantised = 0
    /// The stretch's mean (DC offset), in full-scale units.
    public var mean: Double = 0
    /// Every sample the same value, not 0 (a stuck converter, a channel holding a constant).
    public var constant = false

    public init() {}

    public init(_ samples: UnsafeBufferPointer<Float>) {
        self = BitTally(samples).usage
    }
}

/// What `BitUsage` is computed from, for a stretch: the OR of every |x|·2³¹ (truncated), the
/// largest |x|, the sum and the count. Tallies of consecutive stretches add up (`add`), so a
/// block's usage comes from its hops' tallies and each sample is looked at once. Real-time
/// safe. (A plain loop: the compiler vectorises it; SIMD8's generic float-to-integer
/// conversion took 9.7 ns a sample against 0.7.)
public struct BitTally: Sendable, Equatable {
    public var bits: Int32 = 0
    public var peak: Float = 0
    public var sum: Double = 0
    public var count = 0
    /// The smallest and largest sample (equal, and not 0: a constant).
    public var low: Float = .infinity, high: Float = -.infinity

    public init() {}

    public init(_ samples: UnsafeBufferPointer<Float>) {
        count = samples.count
        var bits: Int32 = 0, peak: Float = 0, partial: Float = 0, total = 0.0
        var low = Float.infinity, high = -Float.infinity
        for (i, x) in samples.enumerated() {
            let m = abs(x)
            peak = max(peak, m)
            low = min(low, x)
            high = max(high, x)
            partial += x
            // Full scale and beyond count as the top bit (the largest float below 1).
            bits |= Int32(min(m, 0.999_999_94) * 2_147_483_648)
            if i & 1023 == 1023 {
                total += Double(partial)
                partial = 0
            }
        }
        self.bits = bits
        self.peak = peak
        self.low = low
        self.high = high
        sum = total + Double(partial)
    }

    public mutating func add(_ other: BitTally) {
        bits |= other.bits
        peak = max(peak, other.peak)
        low = min(low, other.low)
        high = max(high, other.high)
        sum += other.sum
        count += other.count
    }

    public var usage: BitUsage {
        var u = BitUsage()
        u.mean = count > 0 ? sum / Double(count) : 0
        guard peak > 0 else { return u }
        // The lowest set bit of n = |x|·2^31 is 2^(b − 31); a word of that resolution has the
        // sign and 31 − b bits of magnitude: 32 − b bits (k/32768: b = 16, a 16-bit word).
        // No bit set at 2^−31 or above: finer than 32.
        u.depth = bits == 0 ? 32 : 32 - bits.trailingZeroBitCount
        // The largest sample's top bit: 2^e ≤ |x| < 2^(e+1), headroom −(e + 1) bits.
        u.headroom = peak >= 0.5 ? 0 : min(32, max(0, -(Int(peak.exponent) + 1)))
        u.quantised = u.depth <= 16 ? 16 : u.depth <= 24 ? 24 : 0
        u.constant = low == high
        return u
    }
}
