#if canImport(Glibc)
import Glibc
#endif
import Realtime
import Synchronization

/// Runs per-channel work on several threads (`--workers N`): the calling thread takes the
/// first share of the channels, N − 1 helper threads the others, each a contiguous range; the
/// call returns when every channel is done. Every call covers the same frames for all
/// channels, so what is computed across channels afterwards (programme loudness, correlation)
/// sees aligned frames. With one worker everything runs on the calling thread.
///
/// The helpers wait on a semaphore each; a call wakes them (one `sem_post` each) and waits for
/// the last to finish. Not for the real-time thread: the worker threads use it.
public final class ChannelPool: @unchecked Sendable {
    // @unchecked Sendable: `job` and `count` are written by the calling thread before the
    // helpers are woken (sem_post/sem_wait order the accesses) and read by them until they
    // report done; `forEach` is called from one thread at a time.

    /// Threads that share the work, the caller included.
    public let threads: Int
    private var helpers: [PosixThread] = []
    private let starts: [WakeSignal]
    private let finished = WakeSignal()
    private let remaining = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// Counts the calls: a helper runs each call's share once, whatever wakes it.
    private let generation = Atomic<Int>(0)
    private nonisolated(unsafe) var job: ((Int) -> Void)?
    private nonisolated(unsafe) var count = 0
    private nonisolated(unsafe) var activeParts = 0

    /// A pool of `threads` (at least 1); helpers are named `jackvu-work-N`.
    public init(threads: Int) {
        self.threads = max(1, threads)
        starts = (1..<max(1, threads)).map { _ in WakeSignal() }
        for helper in 1..<self.threads {
            helpers.append(PosixThread(name: "jackvu-work-\(helper)") { [self] in
                var done = 0
                while true {
                    starts[helper - 1].wait(timeout: 1)
                    if stopping.load(ordering: .acquiring) { return }
                    let current = generation.load(ordering: .acquiring)
                    guard current != done else { continue }
                    done = current
                    guard helper < activeParts else { continue }  // not in this call
                    run(part: helper)
                    if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { finished.signal() }
                }
            })
        }
    }

    deinit { stop() }

    /// Ends the helper threads (idempotent).
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for s in starts { s.signal() }
        for h in helpers { h.join() }
        helpers = []
    }

    /// The channels thread `part` works on.
    func range(part: Int, of count: Int) -> Range<Int> {
        let parts = min(threads, count)
        guard part < parts else { return 0..<0 }
        return (count * part / parts)..<(count * (part + 1) / parts)
    }

    private func run(part: Int) {
        guard let job else { return }
        for c in range(part: part, of: count) { job(c) }
    }

    /// Calls `body(c)` for every c in 0..<count, spread over the pool's threads; returns when
    /// all calls have returned. `body` must touch only channel c's state (and shared state
    /// that is only read).
    public func forEach(_ count: Int, _ body: (Int) -> Void) {
        let parts = min(threads, count)
        if parts <= 1 || stopping.load(ordering: .relaxed) {
            for c in 0..<count { body(c) }
            return
        }
        withoutActuallyEscaping(body) { escapable in
            job = escapable
            self.count = count
            activeParts = parts
            remaining.store(parts - 1, ordering: .releasing)
            generation.add(1, ordering: .releasing)
            for helper in 1..<parts { starts[helper - 1].signal() }
            run(part: 0)
            while remaining.load(ordering: .acquiring) > 0 { finished.wait(timeout: 0.05) }
            job = nil
        }
    }
}
