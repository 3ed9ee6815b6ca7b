#if canImport(Glibc)
import Glibc
#endif
import CRealtime
import Outputs
import Realtime
import Synchronization

/// Runs `--on-alarm COMMAND` for each alarm raise and clear, on a thread of its own: the
/// worker only queues the change (a short lock), so a command that hangs or fails never
/// delays the metering. One command at a time, in order; at most `queueLimit` waiting (more
/// are dropped and counted); each stopped after the timeout (SIGTERM to its process group,
/// SIGKILL a second later). Failures — a non-zero exit, a signal, a timeout, a command that
/// cannot be started — are counted (the status's `alarms` object) and the first is said.
public final class AlarmCommandRunner: @unchecked Sendable {
    // @unchecked Sendable: `queue` is a Mutex; the counters atomic; the rest immutable.
    let command: String
    let timeout: Double
    private let clientName: String
    private let programmeNames: [String]
    private let queue = Mutex<[AlarmEvent]>([])
    private let wake = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    private var thread: PosixThread?
    public let failures = Counter()
    public let dropped = Counter()
    public let completed = Counter()
    private var saidFailure = false
    private let saidDrop = Atomic<Bool>(false)
    static let queueLimit = 64

    public init(command: String, timeout: Double, clientName: String, programmeNames: [String]) {
        self.command = command
        self.timeout = timeout
        self.clientName = clientName
        self.programmeNames = programmeNames
    }

    public func start() {
        thread = PosixThread(name: "jackvu-on-alarm") { [self] in run() }
    }

    /// Stops: a command running now is stopped at once (SIGTERM to its group, SIGKILL a second
    /// later), the changes still waiting are not run.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        thread?.join()
        thread = nil
    }

    /// Queues a change. Any thread; never blocks for long.
    public func enqueue(_ e: AlarmEvent) {
        let full = queue.withLock { q -> Bool in
            guard q.count < AlarmCommandRunner.queueLimit else { return true }
            q.append(e)
            return false
        }
        if full {
            dropped.add()
            if !saidDrop.exchange(true, ordering: .relaxed) {
                printError("--on-alarm: more than \(AlarmCommandRunner.queueLimit) alarm changes waiting for the command; further ones are dropped and counted")
            }
        }
        wake.signal()
    }

    private func run() {
        while !stopping.load(ordering: .relaxed) {
            let next = queue.withLock { q -> AlarmEvent? in q.isEmpty ? nil : q.removeFirst() }
            guard let e = next else {
                _ = wake.wait(timeout: 0.5)
                continue
            }
            if let problem = runOnce(e) {
                failures.add()
                if !saidFailure {
                    saidFailure = true
                    printError("--on-alarm: \(problem) (further failures are counted in the status: alarms.command_failures)")
                }
            }
            completed.add()
        }
    }

    /// The command's environment for `e`: jackvu's own, and the alarm's.
    func environment(_ e: AlarmEvent) -> [String: String] {
        var env = ChildProcess.environment
        env["JACKVU_ALARM"] = e.kind.rawValue
        env["JACKVU_SUBJECT"] = e.subject
        env["JACKVU_PROGRAMME"] = e.programme.map { programmeNames.indices.contains($0) ? programmeNames[$0] : "" } ?? ""
        env["JACKVU_STATE"] = e.state
        if let cause = e.cause { env["JACKVU_CAUSE"] = cause.rawValue }
        env["JACKVU_VALUE"] = e.value.isFinite ? String(e.value) : ""
        env["JACKVU_UNIT"] = e.kind.unit
        env["JACKVU_TIME"] = AlarmEvent.iso8601(e.unixTime)
        env["JACKVU_CLIENT"] = clientName
        return env
    }

    /// Runs the command once; nil when it exited 0, else what went wrong.
    private func runOnce(_ e: AlarmEvent) -> String? {
        // stdin from /dev/null; its stdout to jackvu's stderr (jackvu's stdout is the data
        // stream); its own process group (so a timeout stops what it started too).
        let pid: pid_t
        switch ChildProcess.spawn(["/bin/sh", "-c", command], environment: environment(e), output: .stderr, defaultSignals: true) {
        case .success(let p): pid = p
        case .failure(let error): return "cannot start /bin/sh: \(error)"
        }
        let deadline = monotonicNanoseconds() + Int(timeout * 1e9)
        var status: Int32 = 0
        var killedAt: Int?
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR { return "lost the command's process: \(String(cString: strerror(errno)))" }
            let now = monotonicNanoseconds()
            if killedAt == nil && (now >= deadline || stopping.load(ordering: .relaxed)) {
                kill(-pid, SIGTERM)
                killedAt = now
            } else if let k = killedAt, now - k >= 1_000_000_000 {
                kill(-pid, SIGKILL)
            }
            usleep(5000)
        }
        if killedAt != nil {
            return stopping.load(ordering: .relaxed) ? nil : "'\(command)' ran longer than \(timeout) s and was stopped"
        }
        let signalled = status & 0x7F
        if signalled != 0 { return "'\(command)' was ended by signal \(signalled)" }
        let exit = (status >> 8) & 0xFF
        return exit == 0 ? nil : "'\(command)' exited \(exit)"
    }
}
