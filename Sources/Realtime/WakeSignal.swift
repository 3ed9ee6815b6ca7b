#if canImport(Glibc)
import Glibc
#endif

/// Wakes a waiting thread from the real-time thread without blocking: a POSIX semaphore.
///
/// `signal()` is `sem_post`, which never blocks (POSIX lists it as async-signal-safe); the
/// waiting side may be woken once per signal, or less often if it drains several at once.
public final class WakeSignal: @unchecked Sendable {
    // @unchecked Sendable: sem_t is designed for use from several threads; its address is
    // stable because it is heap-allocated and freed only in deinit.
    private let semaphore: UnsafeMutablePointer<sem_t>

    /// Not real-time safe (allocates).
    public init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Wakes the waiter. Real-time safe (never blocks, never allocates).
    @inline(__always)
    public func signal() {
        sem_post(semaphore)
    }

    /// Waits until signalled or `timeout` seconds pass; returns true if signalled.
    /// Not real-time safe (blocks).
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let whole = Int(timeout)
        var nanoseconds = now.tv_nsec + Int((timeout - Double(whole)) * 1e9)
        var seconds = now.tv_sec + whole
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            seconds += 1
        }
        var deadline = timespec(tv_sec: seconds, tv_nsec: nanoseconds)
        while true {
            if sem_timedwait(semaphore, &deadline) == 0 { return true }
            if errno != EINTR { return false }
        }
    }
}
