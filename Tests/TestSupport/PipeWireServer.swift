#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A real PipeWire for a test, with PipeWire's JACK (pipewire-jack) in front of it: `pipewire`
/// with its stock configuration (whose Dummy-Driver drives JACK clients when no device does)
/// plus one fragment that creates the `default` metadata object JACK metadata needs (a session
/// manager such as WirePlumber would otherwise create it), all in a runtime and configuration
/// folder of its own: nobody's desktop PipeWire is touched. Clients run under `pw-jack`
/// (`command`). Stopped, and its folder removed, by `stop()` or when released.
public final class PipeWireServer: @unchecked Sendable {
    public let folder: String
    private let process: BackgroundProcess

    /// The environment that points PipeWire clients at this server.
    public var environment: [String: String] {
        ["XDG_RUNTIME_DIR": folder + "/run", "XDG_CONFIG_HOME": folder + "/config", "PIPEWIRE_REMOTE": "pipewire-0"]
    }

    public init() throws {
        folder = NSTemporaryDirectory() + "jackvu-pipewire-\(getpid())-\(UUID().uuidString.prefix(8))"
        let fm = FileManager.default
        try fm.createDirectory(atPath: folder + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try fm.createDirectory(atPath: folder + "/config/pipewire/pipewire.conf.d", withIntermediateDirectories: true)
        try """
            # jackvu's tests: the metadata object JACK clients read and write port metadata in.
            context.objects = [
                { factory = metadata
                    args = { metadata.name = default }
                }
            ]
            """.write(toFile: folder + "/config/pipewire/pipewire.conf.d/jackvu-test.conf", atomically: true, encoding: .utf8)
        var env = ["XDG_RUNTIME_DIR": folder + "/run", "XDG_CONFIG_HOME": folder + "/config"]
        env["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
        process = try BackgroundProcess("pipewire", [], environment: env, label: "pipewire")
        // Ready when a JACK client can list ports.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let r = try? run("jack_lsp", []), r.status == 0 { return }
            guard process.isRunning else { break }
            usleep(100_000)
        }
        let log = process.stderr
        stop()
        throw FixtureError("pipewire did not start (apt-get install pipewire pipewire-jack pipewire-bin): \(log.suffix(500))")
    }

    deinit { stop() }

    public func stop() {
        process.stop(signal: SIGTERM, timeout: 5)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// `pw-jack EXECUTABLE ARGUMENTS`: the arguments for a process run under PipeWire's JACK.
    public func command(_ executable: String, _ arguments: [String]) throws -> (String, [String]) {
        ("pw-jack", [try Executables.resolve(executable)] + arguments)
    }

    /// Runs a JACK tool (jack_lsp, jack_property, …) under PipeWire's JACK, to the end.
    public func run(_ executable: String, _ arguments: [String]) throws -> CommandResult {
        let (exe, args) = try command(executable, arguments)
        return try Executables.run(exe, args, environment: environment, timeout: 10)
    }

    /// Starts a JACK client under PipeWire's JACK.
    public func start(_ executable: String, _ arguments: [String], label: String? = nil, stdin: Bool = false) throws -> BackgroundProcess {
        let (exe, args) = try command(executable, arguments)
        return try BackgroundProcess(
            exe, args, environment: environment, label: label ?? URL(fileURLWithPath: executable).lastPathComponent, stdin: stdin)
    }
}
