#if canImport(Glibc)
import Glibc
#endif
import Outputs
import Realtime
import Synchronization

/// The output thread: at most `rate` times a second, takes the latest snapshot (if there is a
/// new one) and writes its messages as OSC-style text lines. A slow reader blocks only this
/// thread: the worker keeps publishing, and ticks missed while a write blocked are counted as
/// skipped updates.
final class OutputLoop: @unchecked Sendable {
    // @unchecked Sendable: the snapshot front is read by this loop's thread only.
    private let snapshots: TripleBuffer<Snapshot>
    private let addressSpace: AddressSpace
    private let sink: FileDescriptorSink
    private let period: Double
    private let shared: SharedState
    private let onClosed: @Sendable (OutputError) -> Void
    private var thread: PosixThread?

    init(snapshots: TripleBuffer<Snapshot>, addressSpace: AddressSpace, sink: FileDescriptorSink,
         rate: Double, shared: SharedState, onClosed: @escaping @Sendable (OutputError) -> Void)
    {
        self.snapshots = snapshots
        self.addressSpace = addressSpace
        self.sink = sink
        period = 1 / rate
        self.shared = shared
        self.onClosed = onClosed
    }

    func start() {
        thread = PosixThread(name: "jackvu-output") { [self] in run() }
    }

    func join() {
        thread?.join()
        thread = nil
    }

    private func run() {
        let periodNs = max(1, Int(period * 1e9))
        var next = monotonicNanoseconds()
        while !shared.stopping.load(ordering: .relaxed) {
            next += periodNs
            var deadline = timespec(tv_sec: next / 1_000_000_000, tv_nsec: next % 1_000_000_000)
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
            if shared.stopping.load(ordering: .relaxed) { break }
            let now = monotonicNanoseconds()
            if now > next + periodNs {  // a slow write made us miss ticks
                shared.outputSkipped.add((now - next) / periodNs)
                next = now
            }
            guard snapshots.refresh() else { continue }
            let text = snapshots.withFront { snapshot in
                snapshot.sequence > 0 ? addressSpace.messages(for: snapshot).map(\.text).joined() : ""
            }
            guard !text.isEmpty else { continue }
            do {
                try sink.write(text)
            } catch {
                onClosed(error)
                return
            }
        }
    }
}
