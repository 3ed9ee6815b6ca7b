/// Notices a JACK server that is connected but no longer runs process cycles: a stalled
/// driver, a server stuck on a dead device, a frozen VM, a `kill -STOP` of jackd. Its libjack
/// connection stays open, so nothing else tells jackvu; only the process callback's cycle
/// count stops moving.
///
/// The worker asks it at every look at the ring (each period, on the monotonic clock, never
/// from the callback). The server is *stalled* once no cycle has run for
/// `threshold(periodSeconds:)`: four periods, at least 1.5 s (1.5 s at every period up to
/// 16384 frames at 48 kHz). (0.5 s was tried: a server stopped gracefully under load ran no
/// cycle for longer than that before it told its clients it was going.) Not while the server is gone (that is its own
/// state), nor while freewheeling (an offline bounce's cycles run as fast as the clients
/// allow, or wait for them). Until a client's first cycle (at the start, after a reconnect)
/// the time is at least `firstCycleSeconds` (5 s): activating a client and making its
/// connections may take longer than a period on a busy machine. One cycle clears it.
public struct ServerWatchdog: Sendable {
    /// The documented time without a cycle after which the server counts as stalled,
    /// seconds: four periods, at least 1.5 s.
    public static func threshold(periodSeconds: Double) -> Double { max(1.5, 4 * periodSeconds) }
    /// The time allowed for a new client's first cycle, seconds.
    public static let firstCycleSeconds = 5.0

    /// A change of state, to be said once and logged.
    public enum Change: Sendable, Equatable {
        /// No cycle for this many seconds.
        case stalled(seconds: Double)
        /// Cycles again after a stall of this many seconds.
        case responding(seconds: Double)
    }

    /// The cycle count last seen, and when it last moved (or the watch last started), ns.
    private var lastCycles: Int
    private var lastProgress: Int
    /// Whether a cycle has run since the watch started or the server came back.
    private var armed = false
    /// Whether the server counts as stalled now.
    public private(set) var stalled = false

    /// Starts watching at `now` (monotonic ns) from the cycle count `cycles`.
    public init(cycles: Int, now: Int) {
        lastCycles = cycles
        lastProgress = now
    }

    /// Takes the callback's cycle count at `now` (monotonic ns); returns the change of state,
    /// if any. `connected`: a client is open on a server; `freewheeling`: the server runs
    /// offline; `periodSeconds`: the server's period.
    public mutating func observe(
        cycles: Int, now: Int, connected: Bool, freewheeling: Bool, periodSeconds: Double
    ) -> Change? {
        let moved = cycles != lastCycles
        lastCycles = cycles
        if moved { armed = true }
        if !connected { armed = false }
        if moved || !connected || freewheeling {
            let quiet = Double(now - lastProgress) / 1e9
            lastProgress = now
            if stalled {
                stalled = false
                return .responding(seconds: quiet)
            }
            return nil
        }
        let quiet = Double(now - lastProgress) / 1e9
        let limit = armed ? Self.threshold(periodSeconds: periodSeconds) : max(Self.firstCycleSeconds, Self.threshold(periodSeconds: periodSeconds))
        if !stalled && quiet > limit {
            stalled = true
            return .stalled(seconds: quiet)
        }
        return nil
    }
}
