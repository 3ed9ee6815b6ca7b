#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Settings
import Outputs
import Realtime
import Synchronization

/// Changes the control input asks of the outputs, handed from its thread to the output
/// thread.
final class OutputControl: @unchecked Sendable {
    // @unchecked Sendable: every field is a Mutex or an atomic.
    /// Updates per second (bit pattern of a Double).
    let rateBits: Atomic<UInt64>
    /// The message selection, when changed.
    let kinds = Mutex<MessageKinds?>(nil)

    init(rate: Double) { rateBits = Atomic(rate.bitPattern) }

    var rate: Double {
        get { Double(bitPattern: rateBits.load(ordering: .relaxed)) }
        set { rateBits.store(newValue.bitPattern, ordering: .relaxed) }
    }
}

/// The output thread: fans each new snapshot out to every output in its list (`SnapshotOutput`,
/// built by `OutputFactory`), at most `rate` times a second and as soon as the worker has
/// published one (it is woken). It knows no output by name: each takes the update and returns
/// at once (a slow one has a thread of its own). The message selection (`--send`, the control
/// input's `send`) is the loop's: every output sends the same.
final class OutputLoop: @unchecked Sendable {
    // @unchecked Sendable: the snapshot front and the outputs' `take` are used by this loop's
    // thread only.
    private let snapshots: TripleBuffer<Snapshot>
    private var addressSpace: AddressSpace
    private var json: JSONLines
    private let outputs: [any SnapshotOutput]
    private let shared: EngineState
    private let control: OutputControl
    /// Woken by the worker after each publish.
    let wake = WakeSignal()
    private var thread: PosixThread?

    init(snapshots: TripleBuffer<Snapshot>, settings c: OutputSettings, outputs: [any SnapshotOutput],
         shared: EngineState, control: OutputControl)
    {
        self.snapshots = snapshots
        addressSpace = AddressSpace(prefix: c.prefix, kinds: c.send)
        json = JSONLines(kinds: c.send)
        self.outputs = outputs
        self.shared = shared
        self.control = control
    }

    func start() {
        for output in outputs { output.start() }
        thread = PosixThread(name: "jackvu-output") { [self] in run() }
    }

    func join() {
        wake.signal()
        thread?.join()
        thread = nil
    }

    private func run() {
        var nextAllowed = 0
        // The last alarm change handed out: each update carries those after it.
        var lastAlarm = 0
        var rate = control.rate
        while !shared.stopping.load(ordering: .relaxed) {
            if let kinds = control.kinds.withLock({ k in defer { k = nil }; return k }) {
                addressSpace.kinds = kinds
                json.kinds = kinds
            }
            if control.rate != rate {  // a new rate applies from now
                rate = control.rate
                nextAllowed = min(nextAllowed, monotonicNanoseconds() + max(1, Int(1e9 / rate)))
            }
            let now = monotonicNanoseconds()
            if now < nextAllowed {
                // Too early for the next update: sleep until it is due (in steps of at most
                // 100 ms, so that stopping and a new --rate take effect soon).
                let until = min(nextAllowed, now + 100_000_000)
                var deadline = timespec(tv_sec: until / 1_000_000_000, tv_nsec: until % 1_000_000_000)
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
                continue
            }
            guard snapshots.refresh() else {
                wake.wait(timeout: 0.1)
                continue
            }
            let sent = snapshots.withFront { snapshot -> Bool in
                guard snapshot.sequence > 0 else { return false }
                var latest = snapshot
                latest.alarms.fresh = latest.alarms.recent.filter { $0.sequence > lastAlarm }
                lastAlarm = latest.alarms.recent.last?.sequence ?? lastAlarm
                let update = OutputUpdate(snapshot: latest, addressSpace: addressSpace, json: json)
                for output in outputs { output.take(update) }
                return true
            }
            if sent { nextAllowed = monotonicNanoseconds() + max(1, Int(1e9 / control.rate)) }
        }
    }
}
