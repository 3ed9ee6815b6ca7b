/// The latest points of a channel pair for a goniometer (vectorscope): every `stride`-th
/// sample pair (left, right) of the audio, the newest `count` of them kept in a ring, so a
/// display draws the last `count × stride` samples (21 ms at 48 kHz with the defaults: the
/// trace of about one update of a 50 Hz tone, as a phosphor screen shows it). Decimating by
/// picking samples keeps each point a real sample pair, so a line stays a line (mono, an
/// inverted leg, one leg alone) and noise stays a cloud; nothing is averaged away.
/// Real-time safe after init: the ring is allocated once.
public struct GoniometerTrace: Sendable {
    /// Points kept (and drawn) per pair.
    public static let defaultCount = 256
    public let count: Int
    public let stride: Int
    private var left: [Float], right: [Float]
    /// Where the next point goes, and how many samples remain before the next is taken.
    private var next = 0, skip = 0

    /// A trace of `count` points, one every `stride` samples (by default one every 4 at
    /// 48 kHz: `sampleRate / 12 000`, at least 1).
    public init(sampleRate: Double, count: Int = GoniometerTrace.defaultCount, stride: Int? = nil) {
        self.count = max(1, count)
        self.stride = max(1, stride ?? Int((sampleRate / 12_000).rounded()))
        left = [Float](repeating: 0, count: self.count)
        right = left
    }

    public mutating func process(_ l: UnsafeBufferPointer<Float>, _ r: UnsafeBufferPointer<Float>) {
        let n = min(l.count, r.count)
        var i = skip
        var at = next
        left.withUnsafeMutableBufferPointer { lp in
            right.withUnsafeMutableBufferPointer { rp in
                while i < n {
                    lp[at] = l[i]
                    rp[at] = r[i]
                    at += 1
                    if at == count { at = 0 }
                    i += stride
                }
            }
        }
        next = at
        skip = i - n
    }

    /// Writes the points, oldest first, as left/right pairs (`2 × count` floats).
    public func write(into out: UnsafeMutableBufferPointer<Float>) {
        guard out.count >= 2 * count else { return }
        for k in 0..<count {
            let j = (next + k) % count
            out[2 * k] = left[j]
            out[2 * k + 1] = right[j]
        }
    }

    /// Forgets the points (silence).
    public mutating func reset() {
        for k in 0..<count { left[k] = 0; right[k] = 0 }
    }
}
