import Foundation

/// A real JACK server for a test: `jackd -n NAME --no-realtime -d dummy -r RATE -p PERIOD`,
/// named uniquely so that tests never touch anyone's default server. Stopped by `stop()` or
/// when released.
public final class JackServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let period: Int
    private let process: BackgroundProcess

    /// The environment that points JACK clients at this server.
    public var environment: [String: String] { ["JACK_DEFAULT_SERVER": name] }

    public init(sampleRate: Int = 48000, period: Int = 256, label: String = "t") throws {
        name = "jackvu-test-\(getpid())-\(label)-\(sampleRate)"
        self.sampleRate = sampleRate
        self.period = period
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
        throw FixtureError("jackd -n \(name) -d dummy did not start: \(log.suffix(500))")
    }

    deinit { stop() }

    public func stop() {
        process.stop(signal: SIGTERM, timeout: 5)
    }

    /// `jack_lsp` with `arguments`, against this server.
    public func lsp(_ arguments: [String] = []) throws -> CommandResult {
        try Executables.run("jack_lsp", arguments, environment: environment)
    }
}
