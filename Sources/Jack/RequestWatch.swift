#if canImport(Glibc)
import Glibc
#endif
import Realtime
import Synchronization

/// Times the JACK requests of one thread — the one that starts the watch: jackvu's main
/// thread, which waits for the signals and keeps the connections — and calls `onHang` when one
/// has waited for the server longer than `limit`. libjack waits for a server's answer for
/// ever: a server stopped or hung after the client's open (SIGSTOP, a stuck driver, JACK's
/// metadata database locked) held that thread in `jack_port_register` or `jack_connect` for
/// good, deaf to SIGTERM (its signals are blocked until it waits for them). The open itself
/// has its own limit (`Client.openLimit`).
///
/// `Client` times every request it makes to the server on the watched thread: registering a
/// port, activating, connecting, a metadata write — the wait for the client's request line
/// included, so a main-thread request held behind the metadata writer's request (on its own
/// thread, not timed: it holds up nothing else) counts. Out of process only: in process the
/// main thread is jackd's.
public final class RequestWatch: @unchecked Sendable {
    // @unchecked Sendable: `thread` belongs to the thread that starts and stops the watch.
    private struct State {
        var watched: pthread_t?
        /// When the watched thread's request began (CLOCK_MONOTONIC seconds; nil: none) and
        /// what it is.
        var began: Double?
        var what = ""
    }
    private static let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)
    private var thread: PosixThread?

    /// Starts watching the calling thread's requests: `onHang(what)` runs on the watch's
    /// thread once a request has waited more than `limit` seconds (it is meant to end the
    /// process: `AbruptExit`). One watch at a time.
    public init(limit: Double, onHang: @escaping @Sendable (_ what: String) -> Void) {
        let me = pthread_self()
        RequestWatch.state.withLock { $0 = State(watched: me) }
        thread = PosixThread(name: "jackvu-watch") { [self] in
            var fired = false
            while !stopped.load(ordering: .relaxed) {
                usleep(100_000)
                let (began, what) = RequestWatch.state.withLock { ($0.began, $0.what) }
                if let began, RequestWatch.now() - began > limit, !fired {
                    fired = true
                    onHang(what)
                }
            }
        }
    }

    /// The watch jackvu and jacktone run: a request that waits longer than an open may
    /// (`Client.openLimit`) puts back what `AbruptExit` holds (the terminal), is said in one
    /// line (`say`) and ends the process with `status`.
    public static func endingTheProcess(server: String?, status: Int32, say: @escaping @Sendable (String) -> Void) -> RequestWatch {
        let named = server ?? getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }
        return RequestWatch(limit: Client.openLimit) { what in
            AbruptExit.putBack()
            say(JackError.serverNotAnswering(server: named, seconds: Client.openLimit, request: what).description)
            AbruptExit.exit(status)
        }
    }

    /// Stops watching (and waits for the watch's thread).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        thread?.join()
        thread = nil
        RequestWatch.state.withLock { $0 = State() }
    }

    /// Runs `body`, a request to the server described by `what` ("registering port x"),
    /// timed when the calling thread is the watched one.
    static func timed<T, E: Error>(_ what: @autoclosure () -> String, _ body: () throws(E) -> T) throws(E) -> T {
        let me = pthread_self()
        let timing = state.withLock { s -> Bool in
            guard let watched = s.watched, pthread_equal(watched, me) != 0 else { return false }
            s.began = now()
            s.what = what()
            return true
        }
        defer { if timing { state.withLock { $0.began = nil } } }
        return try body()
    }

    private static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) * 1e-9
    }
}
