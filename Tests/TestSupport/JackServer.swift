import Foundation

/// A real JACK server for a test: `jackd -n NAME --no-realtime -d dummy -r RATE -p PERIOD`,
/// named `jackvu-test-LABEL-RATE`, so that tests never touch anyone's default server. Stopped
/// by `stop()` or when released.
///
/// The names are the same from run to run on purpose: JACK2 keeps a registry of servers in
/// /dev/shm with eight places, and a server stopped while clients are connected (as some
/// tests do) leaves its entry behind; JACK reclaims such an entry only when a server of the
/// same name starts again. (So two test runs on one machine at once would collide.)
public final class JackServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let period: Int
    private let process: BackgroundProcess

    /// The environment that points JACK clients at this server.
    public var environment: [String: String] { ["JACK_DEFAULT_SERVER": name] }

    public init(sampleRate: Int = 48000, period: Int = 256, label: String = "t", name fixedName: String? = nil) throws {
        name = fixedName ?? "jackvu-test-\(label)-\(sampleRate)"
        self.sampleRate = sampleRate
        self.period = period
        // A server of this name left running by an interrupted earlier run is ours to stop.
        _ = try? Executables.run("pkill", ["-TERM", "-f", "^jackd -n \(name) "], timeout: 5)
        process = try BackgroundProcess(
            "jackd", ["-n", name, "--no-realtime", "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)"],
            environment: ["JACK_NO_AUDIO_RESERVATION": "1"], label: "jackd")
        // Ready when a client can list its ports.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let r = try? Executables.run("jack_lsp", [], environment: environment, timeout: 5),
                r.status == 0, r.stdout.contains("system:")
            {
                return
            }
            guard process.isRunning else { break }
            usleep(100_000)
        }
        let log = process.stderr + process.stdout
        process.stop()
        let hint = log.contains("Too many servers")
            ? " (JACK's server registry in /dev/shm is full of stale entries: with no jackd running, Tools/test.sh clears it)" : ""
        throw FixtureError("jackd -n \(name) -d dummy did not start: \(log.suffix(500))\(hint)")
    }

    deinit { stop() }

    public func stop() {
        process.stop(signal: SIGTERM, timeout: 5)
    }

    /// Kills the server outright (SIGKILL), as a crash would.
    public func kill() {
        process.stop(signal: SIGKILL, timeout: 5)
    }

    /// `jack_lsp` with `arguments`, against this server.
    public func lsp(_ arguments: [String] = []) throws -> CommandResult {
        try Executables.run("jack_lsp", arguments, environment: environment)
    }
}
