import Synchronization

/// Each programme's loudness over the last hour, for the displays' history graphs (the
/// terminal's loudness view, the browser's, and the past a browser that connects late
/// missed).
///
/// One point per second of audio and programme: the largest momentary loudness in that
/// second (so that no 400 ms burst is lost between points) and the short-term loudness at
/// its end, LUFS, stamped with the monotonic clock. At most `capacity` points (an hour), in a
/// ring allocated once: 8 programmes take 3600 × (8 + 8 × 2 × 4) bytes, about 260 KB. While
/// no audio comes (the server is gone) no point is added, so the graphs show the gap.
///
/// Written by the worker once a second, read by the display threads; the lock is held for a
/// copy of at most `capacity` points.
public final class LoudnessHistory: Sendable {
    /// Points kept per programme: an hour at one a second.
    public static let capacity = 3600
    /// The programmes' names, in order.
    public let programmes: [String]

    private struct Storage {
        /// Monotonic seconds of each point, a ring of `capacity`.
        var times: [Double]
        /// Per point, per programme: max momentary and short-term, LUFS.
        var momentary: [Float]
        var shortTerm: [Float]
        /// The next slot and how many are filled.
        var next = 0
        var count = 0
    }

    private let storage: Mutex<Storage>

    public init(programmes: [String]) {
        self.programmes = programmes
        let n = max(1, programmes.count)
        storage = Mutex(Storage(
            times: Array(repeating: 0, count: Self.capacity),
            momentary: Array(repeating: -120, count: Self.capacity * n),
            shortTerm: Array(repeating: -120, count: Self.capacity * n)))
    }

    /// Adds a point: per programme, the second's max momentary and the closing short-term
    /// loudness (LUFS; arrays of `programmes.count`).
    public func record(seconds: Double, momentary: [Float], shortTerm: [Float]) {
        let n = programmes.count
        guard momentary.count == n, shortTerm.count == n else { return }
        storage.withLock { s in
            s.times[s.next] = seconds
            for p in 0..<n {
                s.momentary[s.next * n + p] = momentary[p]
                s.shortTerm[s.next * n + p] = shortTerm[p]
            }
            s.next = (s.next + 1) % Self.capacity
            s.count = min(Self.capacity, s.count + 1)
        }
    }

    /// One programme's points since `since` (monotonic seconds), oldest first.
    public struct Series: Sendable, Equatable {
        public var times: [Double] = []
        public var momentary: [Float] = []
        public var shortTerm: [Float] = []

        public init(times: [Double] = [], momentary: [Float] = [], shortTerm: [Float] = []) {
            self.times = times
            self.momentary = momentary
            self.shortTerm = shortTerm
        }
    }

    /// Every programme's points newer than `since` (monotonic seconds), oldest first.
    public func series(since: Double = -.infinity) -> [Series] {
        let n = programmes.count
        return storage.withLock { s in
            var out = Array(repeating: Series(), count: n)
            let first = (s.next - s.count + Self.capacity) % Self.capacity
            for k in 0..<s.count {
                let i = (first + k) % Self.capacity
                guard s.times[i] > since else { continue }
                for p in 0..<n {
                    out[p].times.append(s.times[i])
                    out[p].momentary.append(s.momentary[i * n + p])
                    out[p].shortTerm.append(s.shortTerm[i * n + p])
                }
            }
            return out
        }
    }

    /// How many points are kept now.
    public var count: Int { storage.withLock { $0.count } }

    /// The history as the browser display's `{"history": …}` message: per programme its
    /// name and the points' ages (seconds before `now`, one decimal), max momentary and
    /// short-term loudness (LUFS, one decimal; null below −70, the absolute gate).
    public func json(now: Double) -> String {
        let all = series()
        func value(_ v: Float) -> String { v > -70 ? fixed(Double(v), 1) : "null" }
        var out = "{\"history\": {\"interval_s\": 1, \"programmes\": ["
        for (p, name) in programmes.enumerated() {
            if p > 0 { out += ", " }
            let s = all[p]
            out += "{\"name\": \(jsonString(ProgrammeSnapshot.shownName(name))), \"age_s\": ["
            out += s.times.map { fixed(max(0, now - $0), 1) }.joined(separator: ",")
            out += "], \"momentary_lufs\": [" + s.momentary.map(value).joined(separator: ",")
            out += "], \"short_term_lufs\": [" + s.shortTerm.map(value).joined(separator: ",") + "]}"
        }
        return out + "]}}"
    }
}

/// Collects a second of readings into one history point (the worker's side of
/// `LoudnessHistory`).
public struct HistoryRecorder: Sendable {
    private var maxMomentary: [Float]
    private var secondsSeen = 0.0
    private var nextPoint = 1.0

    public init(programmes: Int) {
        maxMomentary = Array(repeating: -120, count: programmes)
    }

    /// Takes the readings after `elapsed` more seconds of audio; adds a point to `history`
    /// each whole second, stamped `now` (monotonic seconds).
    public mutating func take(_ snapshot: Snapshot, elapsed: Double, now: Double, into history: LoudnessHistory) {
        let n = min(maxMomentary.count, snapshot.programmes.count)
        for p in 0..<n {
            maxMomentary[p] = max(maxMomentary[p], Float(snapshot.programmes[p].loudness.momentary))
        }
        secondsSeen += elapsed
        guard secondsSeen + 1e-9 >= nextPoint else { return }
        nextPoint = (secondsSeen + 1e-9).rounded(.down) + 1
        history.record(
            seconds: now, momentary: maxMomentary,
            shortTerm: (0..<maxMomentary.count).map { $0 < n ? Float(snapshot.programmes[$0].loudness.shortTerm) : -120 })
        for p in maxMomentary.indices { maxMomentary[p] = -120 }
    }
}
