#if canImport(Glibc)
import Glibc
#endif
import CRealtime

/// Wakes a waiting thread from the real-time thread without blocking: a POSIX semaphore.
///
/// `signal()` is `sem_post`, which never blocks (POSIX lists it as async-signal-safe); the
/// waiting side may be woken once per signal, or less often if it drains several at once.
/// Every wait's deadline is on CLOCK_MONOTONIC: a step of the wall clock (NTP correcting a
/// wrong clock, a resumed virtual machine) neither lengthens nor shortens a wait. This is the
/// one "wait for a signal with a deadline" in jackvu; the other threads use it too.
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

    /// Waits until signalled or `timeout` seconds pass on the monotonic clock; returns true
    /// if signalled. A timeout that is not a number or not above 0 does not wait; one longer
    /// than `maxTimeout` waits `maxTimeout`. Not real-time safe (blocks).
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        var deadline = WakeSignal.deadline(after: timeout)
        return jackvu_sem_wait_monotonic(semaphore, &deadline) == 0
    }

    /// The longest single wait, seconds (a day): no wait's deadline can overflow.
    public static let maxTimeout = 86_400.0

    /// CLOCK_MONOTONIC now plus `seconds` (bounded to 0 ... `maxTimeout`; NaN counts as 0).
    static func deadline(after seconds: Double) -> timespec {
        let bounded = seconds > 0 ? min(seconds, maxTimeout) : 0
        let at = monotonicNanoseconds() + Int(bounded * 1e9)
        return timespec(tv_sec: at / 1_000_000_000, tv_nsec: at % 1_000_000_000)
    }
}
