/// A warning that can repeat (every period, under overload) said at most once per
/// `interval`: the first time at once, then once per interval with how many were held back
/// since. Pure logic (the caller gives the time); one thread.
public struct RepeatedWarning: Sendable {
    /// Nanoseconds between two lines.
    public let interval: Int
    private var last: Int?
    private var held = 0

    public init(seconds: Double = 10) { interval = Int(max(0, seconds) * 1e9) }

    /// Whether to say it at `now` (monotonic nanoseconds), and how many were held back since
    /// the last line (nil: hold this one back too).
    public mutating func occurred(at now: Int) -> Int? {
        if let last, now - last < interval {
            held += 1
            return nil
        }
        defer { last = now; held = 0 }
        return held
    }
}
