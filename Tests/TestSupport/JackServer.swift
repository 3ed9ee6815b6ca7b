#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A real JACK server for a test: `jackd -n NAME --no-realtime -d dummy -r RATE -p PERIOD`,
/// named `jackvu-test-RUN-LABEL-RATE`, so that tests never touch anyone's default server and
/// two test runs on one machine never share a server. RUN is `$JACKVU_TEST_RUN` (Tools/test.sh
/// sets it) or the test process's id. Stopped by `stop()` or when released; its leftovers in
/// /dev/shm (JACK's semaphores and socket for that server name) are removed then.
///
/// JACK2 keeps a registry of servers in /dev/shm with eight places, and a server stopped
/// while clients are connected can leave its entry behind, which JACK reclaims only for a
/// server of the same name. Tools/test.sh therefore runs the tests with a /dev/shm of their
/// own where it can (a private mount namespace, as root), and clears a stale registry when no
/// jackd runs otherwise.
public final class JackServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let period: Int
    private let process: BackgroundProcess

    /// This test run's tag in server names.
    public static let run = ProcessInfo.processInfo.environment["JACKVU_TEST_RUN"] ?? "\(getpid())"

    /// The environment that points JACK clients at this server.
    public var environment: [String: String] { ["JACK_DEFAULT_SERVER": name] }

    /// A server named for `label` and `sampleRate`, or `name` (prefixed with the run's name
    /// space) to restart the same server at another rate.
    /// `driver` replaces `dummy -r RATE -p PERIOD` (e.g. `["net", "-a", "127.0.0.1"]`: a
    /// netjack2 slave, ready once its master has taken it).
    /// `realtime`: `-R` (SCHED_FIFO process threads, as in a studio; needs the right to it,
    /// e.g. root) instead of `--no-realtime`. `serverOptions` go before `-d` (e.g. `-p 64`).
    public init(
        sampleRate: Int = 48000, period: Int = 256, label: String = "t", name fixedName: String? = nil, driver: [String]? = nil,
        realtime: Bool = false, serverOptions: [String] = [], serverEnvironment: [String: String] = [:]
    ) throws {
        name = "jackvu-test-\(JackServer.run)-" + (fixedName ?? "\(label)-\(sampleRate)")
        self.sampleRate = sampleRate
        self.period = period
        let arguments = ["-n", name, realtime ? "-R" : "--no-realtime"] + serverOptions + ["-d"]
            + (driver ?? ["dummy", "-r", "\(sampleRate)", "-p", "\(period)"])
        let serverEnvironment = serverEnvironment.merging(["JACK_NO_AUDIO_RESERVATION": "1"]) { a, _ in a }
        var attempt = 1
        while true {
            let process = try BackgroundProcess("jackd", arguments, environment: serverEnvironment, label: "jackd")
            let probe = JackServer.probe(process, environment: ["JACK_DEFAULT_SERVER": name])
            if probe == .ready {
                self.process = process
                return
            }
            let log = process.stderr + process.stdout
            process.stop(signal: SIGKILL, timeout: 5)
            // A server that runs but answers no client, in this run's own /dev/shm, with JACK's
            // metadata database there: a Berkeley DB lock left held (a process killed inside a
            // metadata write; the lock-order deadlock between a client's jack_set_property and
            // the server's removal of a departing client's properties is detected since jackvu
            // turns Berkeley DB's detector on, MetadataDatabase) stops every later client and
            // server. Start again, once, with a fresh database, so that one wedge costs one
            // test, not every later one.
            if attempt == 1, probe == .hung, JackServer.removeWedgedMetadataDatabase() {
                print("jackd -n \(name): its clients hung (JACK's metadata database in /dev/shm was wedged); removed the database and started the server again")
                attempt += 1
                continue
            }
            let hint = log.contains("Too many servers")
                ? " (JACK's server registry in /dev/shm is full of stale entries: with no jackd running, Tools/test.sh clears it)" : ""
            throw FixtureError("jackd -n \(name) -d \(driver?.first ?? "dummy") did not start: \(log.suffix(500))\(hint)")
        }
    }

    private enum Probe { case ready, exited, hung }

    /// Ready when a client can list the server's ports; `hung` if the server still runs after
    /// 10 s of `jack_lsp`s that never listed them.
    private static func probe(_ process: BackgroundProcess, environment: [String: String]) -> Probe {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let r = try? Executables.run("jack_lsp", [], environment: environment, timeout: 5),
                r.status == 0, r.stdout.contains("system:")
            {
                return .ready
            }
            guard process.isRunning else { return .exited }
            usleep(100_000)
        }
        return process.isRunning ? .hung : .exited
    }

    /// Whether this test run has a /dev/shm of its own (Tools/test.sh, as root, sets
    /// JACKVU_PRIVATE_SHM=1 then): JACK's shared files there are nobody else's.
    public static var privateSharedMemory: Bool { ProcessInfo.processInfo.environment["JACKVU_PRIVATE_SHM"] == "1" }

    /// Removes JACK's metadata database (`/dev/shm/jack_db*`) when this test run has a
    /// /dev/shm of its own: never anyone else's. True if there was one to remove.
    @discardableResult
    public static func removeWedgedMetadataDatabase() -> Bool {
        guard privateSharedMemory else { return false }
        let entries = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm")) ?? []).filter { $0.hasPrefix("jack_db") }
        for entry in entries { try? FileManager.default.removeItem(atPath: "/dev/shm/" + entry) }
        return !entries.isEmpty
    }

    deinit { stop() }

    /// Stops the server (SIGTERM) and returns its exit status (nil if it had to be killed).
    public func stopReturningStatus() -> Int32? {
        guard !killed else { return nil }
        killed = true
        let status = process.stop(signal: SIGTERM, timeout: 5)
        removeLeftovers()
        return process.process.terminationReason == .exit ? status : 128 + status
    }

    public func stop() {
        guard !killed else { return }
        resume()
        process.stop(signal: SIGTERM, timeout: 5)
        removeLeftovers()
    }

    /// Stops the server's process (SIGSTOP), as a hung driver or a frozen machine would: its
    /// clients stay connected, no process cycle runs. `resume` (and `stop`) continue it.
    public func suspend() { Glibc.kill(process.process.processIdentifier, SIGSTOP) }
    /// The server's process ID.
    public var pid: pid_t { process.process.processIdentifier }
    /// What jackd has written so far (stderr, then stdout).
    public var output: String { process.stderr + process.stdout }
    public func resume() { Glibc.kill(process.process.processIdentifier, SIGCONT) }

    /// Kills the server outright (SIGKILL), as a crash would. Its files in /dev/shm are left
    /// to the server a test starts next under the same name (which takes them over).
    public func kill() {
        killed = true
        process.stop(signal: SIGKILL, timeout: 5)
    }
    private var killed = false

    /// JACK's files for this server name in /dev/shm: `jack_sem.UID_NAME_CLIENT` semaphores
    /// and the `jack_NAME_UID_0` socket.
    private func removeLeftovers() {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm")) ?? []
        for file in files where file.hasPrefix("jack_sem.") && file.contains("_\(name)_") || file.hasPrefix("jack_\(name)_") {
            try? FileManager.default.removeItem(atPath: "/dev/shm/" + file)
        }
    }

    /// `jack_lsp` with `arguments`, against this server.
    public func lsp(_ arguments: [String] = []) throws -> CommandResult {
        try Executables.run("jack_lsp", arguments, environment: environment)
    }

    /// `jack_lsp` for a wait of `timeout` seconds that ends at `deadline`: each call given at
    /// most half the wait (at least 5 s), so that one that hangs (seen under CI's load right
    /// after two clients opened) is followed by another, and its error says where it waited.
    public func lsp(polling timeout: Double, until deadline: Date) throws -> CommandResult {
        try Executables.run("jack_lsp", [], environment: environment, timeout: max(5, min(timeout / 2, deadline.timeIntervalSinceNow)))
    }

    /// Polls `jack_lsp` until it lists every port in `names` and `ready()` holds, for at most
    /// `timeout` seconds or until `alive()` fails. On failure the error says what the last
    /// `jack_lsp` did (a server that answers no one, or ports missing) and what jackd wrote
    /// last; a `jack_lsp` that hangs is reported (and printed at once) with where it, the
    /// server and the test's clients wait.
    public func waitForPorts(_ names: [String], timeout: Double = 10, ready: () -> Bool = { true }, alive: () -> Bool = { true }) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var last = "no jack_lsp finished"
        var hung = 0
        while Date() < deadline {
            do {
                let r = try lsp(polling: timeout, until: deadline)
                let listed = Set(r.stdout.split(separator: "\n").map(String.init))
                if names.allSatisfy(listed.contains), ready() { return }
                last = "jack_lsp exited \(r.status) listing \(listed.count) ports; stderr \(r.stderr.suffix(200))"
            } catch {
                hung += 1
                let clients = children(named: ["jacktone", "jackvu"]).map { "\($0.name) \($0.pid) in \(threadStacks(of: $0.pid))" }
                last = "jack_lsp: \(error); jackd waiting in \(threadStacks(of: pid))"
                    + (clients.isEmpty ? "" : "; the test's clients waiting: " + clients.joined(separator: "; "))
                print("waitForPorts: \(last)")
            }
            guard alive() else {
                throw FixtureError("ports \(names) did not appear before the client ended (\(hung) jack_lsp hung; \(last))")
            }
            usleep(50_000)
        }
        throw FixtureError("ports \(names) did not appear in \(timeout) s (\(hung) jack_lsp hung; \(last); jackd's last output: \(output.suffix(300)))")
    }
}
