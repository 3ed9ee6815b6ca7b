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

    /// `configuration`: more of pipewire.conf (a filter-chain's module, say), in a fragment of
    /// its own; `environment`: more for the server (`LV2_PATH` for a filter-chain's plugins).
    public init(configuration: String? = nil, environment more: [String: String] = [:]) throws {
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
        if let configuration {
            try configuration.write(toFile: folder + "/config/pipewire/pipewire.conf.d/jackvu-test-more.conf", atomically: true, encoding: .utf8)
        }
        var env = ["XDG_RUNTIME_DIR": folder + "/run", "XDG_CONFIG_HOME": folder + "/config"].merging(more) { $1 }
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

    /// What the server printed (its stderr).
    public var log: String { process.stderr }

    public func stop() {
        process.stop(signal: SIGTERM, timeout: 5)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The id of the node named `name` (`pw-dump`), nil while there is none.
    public func node(_ name: String) -> Int? {
        guard let r = try? Executables.run("pw-dump", [], environment: environment, timeout: 10), r.status == 0,
              let objects = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]] else { return nil }
        return objects.last { o in
            ((o["info"] as? [String: Any])?["props"] as? [String: Any])?["node.name"] as? String == name
        }?["id"] as? Int
    }

    /// What a session manager (WirePlumber) would do, done by hand: gives node `name` its
    /// ports, one float channel a port at `rate` (`position`: the channels' names), and waits
    /// for it to have them.
    public func configurePorts(of name: String, direction: String, rate: Int = 48000, position: [String] = ["MONO"]) throws {
        let deadline = Date().addingTimeInterval(10)
        var id = node(name)
        while id == nil && Date() < deadline {
            usleep(100_000)
            id = node(name)
        }
        guard let id else { throw FixtureError("no PipeWire node \(name)") }
        let config = "{ direction: \(direction), mode: dsp, format: { mediaType: audio, mediaSubtype: raw, format: F32P, "
            + "rate: \(rate), channels: \(position.count), position: [ \(position.joined(separator: " ")) ] } }"
        let r = try Executables.run("pw-cli", ["set-param", String(id), "PortConfig", config], environment: environment, timeout: 10)
        guard r.status == 0 else { throw FixtureError("pw-cli set-param \(id) PortConfig: \(r.stderr)") }
    }

    /// Links output port `from` to input port `to` (`pw-link`), once both exist.
    public func link(_ from: String, _ to: String) throws {
        let deadline = Date().addingTimeInterval(10)
        var last = ""
        while Date() < deadline {
            let r = try Executables.run("pw-link", [from, to], environment: environment, timeout: 10)
            if r.status == 0 { return }
            last = r.stderr
            usleep(100_000)
        }
        throw FixtureError("pw-link \(from) \(to): \(last)")
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
