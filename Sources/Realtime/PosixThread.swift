#if canImport(Glibc)
import Glibc
#endif

/// A named POSIX thread running one closure; `join()` waits for it. Not real-time safe.
public final class PosixThread: @unchecked Sendable {
    // @unchecked Sendable: `thread` is written once in init and read by join on the owner.
    private var thread = pthread_t()
    /// Signalled when the body has returned (`join(within:)`).
    private let finished = WakeSignal()

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept by Linux).
    public init(name: String, _ body: @escaping @Sendable () -> Void) {
        final class Box {
            let name: String
            let body: @Sendable () -> Void
            let finished: WakeSignal
            init(name: String, body: @escaping @Sendable () -> Void, finished: WakeSignal) {
                self.name = name
                self.body = body
                self.finished = finished
            }
        }
        let box = Unmanaged.passRetained(Box(name: name, body: body, finished: finished)).toOpaque()
        let result = pthread_create(&thread, nil, { arg in
            let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            setCurrentThreadName(box.name)
            box.body()
            box.finished.signal()
            return nil
        }, box)
        precondition(result == 0, "pthread_create failed (\(result))")
    }

    /// Waits for the thread to finish.
    public func join() {
        pthread_join(thread, nil)
    }

    /// Waits up to `seconds` for the thread to finish, and joins it if it did; false if it
    /// still runs (then it is left to itself: call neither join again).
    public func join(within seconds: Double) -> Bool {
        guard finished.wait(timeout: seconds) else { return false }
        pthread_join(thread, nil)
        return true
    }
}

/// CLOCK_MONOTONIC in nanoseconds. Real-time safe (vDSO, no system call, no allocation).
@inline(__always)
public func monotonicNanoseconds() -> Int {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Names the calling thread (as `top -H` and debuggers show it) through /proc: Glibc's
/// pthread_setname_np is not visible to Swift without _GNU_SOURCE.
private func setCurrentThreadName(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    let short = String(name.utf8.prefix(15)) ?? "jackvu"
    _ = short.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}
