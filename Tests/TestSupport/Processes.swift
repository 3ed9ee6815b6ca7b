#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

/// Errors of test fixtures: each says what is missing and how to get it.
public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A test that cannot run here: skipped when run by hand (`swift test`), a failure under the
/// CI entry point (`.ci/run` sets JACKVU_NO_SKIPS), where everything a test needs is installed
/// and built and a skip would count a feature as tested that was not.
public func skipOrFail(_ message: String) -> Error {
    let env = ProcessInfo.processInfo.environment
    if env["JACKVU_NO_SKIPS"] != nil || env["CI"] != nil { return FixtureError(message + " (no skips under .ci/run)") }
    return XCTSkip(message)
}

/// A process started by a test, with stdout and stderr sent to files (never to the test's
/// own output, so nothing it leaves behind can hold the test runner's pipes open). Stopped by
/// `stop()` or, at the latest, when the value is released.
public final class BackgroundProcess: @unchecked Sendable {
    public let process = Process()
    public let stdoutURL: URL
    public let stderrURL: URL
    public let label: String

    /// Where `send` writes, when the process was started with `stdin: true`.
    private var input: Pipe?

    /// Starts `executable` with `arguments` and extra `environment` entries; with `stdin`,
    /// its standard input is a pipe that `send` writes to (else /dev/null).
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], label: String? = nil,
                stdin: Bool = false)
        throws
    {
        self.label = label ?? URL(fileURLWithPath: executable).lastPathComponent
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jackvu-tests", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let stem = "\(self.label)-\(getpid())-\(UUID().uuidString.prefix(8))"
        stdoutURL = dir.appendingPathComponent("\(stem).out")
        stderrURL = dir.appendingPathComponent("\(stem).err")
        TestLogs.shared.add([stdoutURL, stderrURL])
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: try Executables.resolve(executable))
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        if stdin {
            let pipe = Pipe()
            input = pipe
            process.standardInput = pipe
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
    }

    deinit { stop() }

    /// Writes `line` and a newline to the process's standard input.
    public func send(_ line: String) {
        input?.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    public var isRunning: Bool { process.isRunning }
    /// The exit status, or nil while the process runs (Foundation traps on a running one's).
    public var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }
    public var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    /// The newline-terminated lines of stdout so far: a line the process is still writing
    /// (a long JSON object can reach the file in several writes) is left out.
    public var stdoutLines: [Substring] { completeLines(stdout) }
    public var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Sends `signal` and waits up to `timeout` seconds for the process to exit; then kills it.
    /// Returns the exit status (or the terminating signal).
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Double = 5) -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, signal)
            if !waitForExit(timeout: timeout) {
                kill(process.processIdentifier, SIGKILL)
                _ = waitForExit(timeout: 5)
            }
        }
        return process.isRunning ? -1 : process.terminationStatus
    }

    /// Waits up to `timeout` seconds for the process to exit by itself.
    public func waitForExit(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return !process.isRunning
    }

    /// stdout's complete lines from byte `offset` on, and `offset` moved past them: a long
    /// stream's new part without reading it all again (a test that polls the whole of a
    /// stream of 512 channels' every reading reads and parses megabytes a poll, a core's
    /// worth of CPU taken from the process it measures).
    public func newLines(after offset: inout Int) -> [Substring] {
        guard let handle = try? FileHandle(forReadingFrom: stdoutURL) else { return [] }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: UInt64(offset))) != nil, let data = try? handle.readToEnd(),
              let end = data.lastIndex(of: UInt8(ascii: "\n")) else { return [] }
        let complete = data[data.startIndex...end]
        offset += complete.count
        return String(decoding: complete, as: UTF8.self).split(separator: "\n")
    }

    /// Polls stdout until `predicate` holds or `timeout` seconds pass; returns the last text.
    public func waitForStdout(timeout: Double, until predicate: (String) -> Bool) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            let text = stdout
            if predicate(text) { return text }
            usleep(20_000)
        } while Date() < deadline
        return nil
    }
}

/// The logs of the processes a test started (in $TMPDIR/jackvu-tests): removed when the test
/// passes, kept — and named on stdout — when it fails.
public final class TestLogs: NSObject, XCTestObservation, @unchecked Sendable {
    // @unchecked Sendable: `files` is guarded by `lock`.
    public static let shared: TestLogs = {
        let logs = TestLogs()
        XCTestObservationCenter.shared.addTestObserver(logs)
        return logs
    }()
    private let lock = NSLock()
    private var files: [URL] = []

    func add(_ urls: [URL]) {
        lock.lock()
        files += urls
        lock.unlock()
    }

    public func testCaseDidFinish(_ testCase: XCTestCase) {
        lock.lock()
        let done = files
        files = []
        lock.unlock()
        if testCase.testRun?.hasSucceeded ?? false {
            for url in done { try? FileManager.default.removeItem(at: url) }
        } else if !done.isEmpty {
            // A few names, not hundreds: CI shows a part of the output, and a long list
            // crowded out the failure's own message there.
            let names = done.prefix(6).map(\.lastPathComponent).joined(separator: " ")
            let more = done.count > 6 ? " and \(done.count - 6) more" : ""
            print("logs of \(testCase.name) in \(done[0].deletingLastPathComponent().path): \(names)\(more)")
            // What the processes said last: CI keeps only the output, not these files, and a
            // client that exited at its start (an option refused, a port in use) says why here.
            // (jack_lsp's, from polling for ports, would crowd the rest out.)
            let said = done.filter { $0.pathExtension == "err" && !$0.lastPathComponent.hasPrefix("jack_lsp-") }.compactMap { url -> String? in
                guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
                let lines = text.split(separator: "\n").suffix(3)
                return lines.isEmpty ? nil : "\(url.deletingPathExtension().lastPathComponent) stderr: \(lines.joined(separator: " | ").suffix(300))"
            }
            for line in said.prefix(6) { print(line) }
        }
    }

    public func testBundleDidFinish(_ testBundle: Bundle) {
        // The folder goes too when nothing in it is kept.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jackvu-tests", isDirectory: true)
        _ = rmdir(dir.path)  // fails, as it should, unless it is empty
    }
}

/// A folder of a test's own in $TMPDIR, `jackvu-NAME-PID-RANDOM`, made now; the caller
/// removes it (`removeTemporaryFolder`) when done with it.
public func makeTemporaryFolder(_ name: String) throws -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jackvu-\(name)-\(getpid())-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir
}

/// Removes a folder of `makeTemporaryFolder` and everything in it.
public func removeTemporaryFolder(_ dir: URL) {
    try? FileManager.default.removeItem(at: dir)
}

/// The newline-terminated lines of `text`, leaving out a last line that has no newline yet.
public func completeLines(_ text: String) -> [Substring] {
    guard let end = text.lastIndex(of: "\n") else { return [] }
    return text[..<end].split(separator: "\n")
}

/// Result of a command run to completion.
public struct CommandResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// Locating and running executables.
public enum Executables {
    /// The folder holding the package's built products (`jackvu`, `jacktone`): the folder of
    /// the running test binary, or `$JACKVU_BIN_DIR`.
    public static var productsDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["JACKVU_BIN_DIR"] { return dir }
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().path
    }

    /// A built product of this package, by name.
    public static func product(_ name: String) throws -> String {
        let path = productsDirectory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureError("\(name) is not built in \(productsDirectory): run `swift build` first")
        }
        return path
    }

    /// An absolute path for `name`: itself if it has a slash, else found on PATH.
    public static func resolve(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw FixtureError("\(name) is not installed (the README's test command installs it)")
    }

    /// Runs a command to completion (at most `timeout` seconds) and captures its output.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           timeout: Double = 30) throws -> CommandResult
    {
        let p = try BackgroundProcess(executable, arguments, environment: environment)
        guard p.waitForExit(timeout: timeout) else {
            // Where it waits, before it is killed: CI keeps the failure's message only.
            let stacks = threadStacks(of: p.process.processIdentifier)
            p.stop(signal: SIGKILL)
            throw FixtureError("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout) s (waiting in \(stacks))")
        }
        return CommandResult(status: p.process.terminationStatus, stdout: p.stdout, stderr: p.stderr)
    }
}

/// Where each thread of process `pid` waits: its innermost frames as gdb sees them (attached
/// for at most 20 s, then detached), one thread per `;`, the innermost first — for a failure's
/// message about a process that never finished (a `jack_lsp` or a server that answers no
/// one). Or why there is none (no gdb, the process gone).
public func threadStacks(of pid: pid_t, frames: Int = 6) -> String {
    guard let gdb = try? BackgroundProcess("gdb", ["-batch", "-nx", "-p", "\(pid)", "-ex", "thread apply all bt \(frames)"])
    else { return "an unknown place (no gdb to ask)" }
    // Not Executables.run: its timeout asks this function, and a gdb that hangs must not be
    // asked about by another.
    guard gdb.waitForExit(timeout: 20) else {
        gdb.stop(signal: SIGKILL)
        return "an unknown place (gdb did not finish in 20 s)"
    }
    var threads: [String] = [], current: [String] = []
    for line in gdb.stdout.split(separator: "\n") {
        if line.hasPrefix("Thread ") {
            if !current.isEmpty { threads.append(current.joined(separator: " < ")) }
            current = []
        } else if line.hasPrefix("#") {
            // "#2  0x… in Jack::JackClientSocket::Read (this=…) at …", "#0  __futex_wait (…)":
            // the function is what follows " in " up to its arguments ("non-virtual thunk to
            // Jack::…" kept whole), else the frame's second word.
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            var name = line.range(of: " in ").map { String(line[$0.upperBound...].prefix { $0 != "(" }).trimmingCharacters(in: .whitespaces) }
                ?? (words.count > 1 ? String(words[1]) : "?")
            // A library without symbols (Debian's libjack): "?? () from /usr/lib/…/libjack.so.0".
            if name == "??", let from = words.lastIndex(of: "from"), words.index(after: from) < words.endIndex {
                name = "?? in " + (words[words.index(after: from)].split(separator: "/").last ?? "?")
            }
            current.append(String(name.prefix(60)))
        }
    }
    if !current.isEmpty { threads.append(current.joined(separator: " < ")) }
    return threads.isEmpty ? "an unknown place (gdb: \(gdb.stderr.suffix(200)))" : "\(threads.count) thread(s): " + threads.joined(separator: "; ")
}

/// This test process's running children whose name (`/proc/PID/stat`'s comm) is one of
/// `names`: the clients a test started, for a report of where they wait.
public func children(named names: Set<String>) -> [(pid: pid_t, name: String)] {
    let me = getpid()
    return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
        guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return nil }
        let name = String(stat[stat.index(after: open)..<close])
        // After the name: state, then the parent's process ID.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1, pid_t(fields[1]) == me, names.contains(name) else { return nil }
        return (pid, name)
    }
}

/// A UDP socket bound to a free port on the loopback interface, left open for the caller to
/// read from (and close).
public func boundUDPSocket() -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
    }
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return (fd, UInt16(bigEndian: addr.sin_port))
}

/// A free UDP port on the loopback interface (bound, read, released), never one this test
/// process handed out before.
public func freeUDPPort() -> UInt16 {
    UInt16(HandedOutPorts.udp.fresh {
        let (fd, port) = boundUDPSocket()
        close(fd)
        return Int(port)
    })
}

/// The ports `freeTCPPort` and `freeUDPPort` gave out. The kernel picks a bound port at random
/// and may pick the one it gave a moment ago once that socket is closed: a test that asks for
/// two (`--metrics` and `--http`) could get the same one twice, and jackvu would refuse to start.
final class HandedOutPorts: @unchecked Sendable {
    // @unchecked Sendable: `given` is guarded by `lock`.
    static let tcp = HandedOutPorts(), udp = HandedOutPorts()
    private let lock = NSLock()
    private var given = Set<Int>()

    /// A port from `pick` not given before (up to 100 tries; the last one if all were).
    func fresh(_ pick: () -> Int) -> Int {
        lock.lock()
        defer { lock.unlock() }
        var port = pick()
        for _ in 0..<100 where given.contains(port) { port = pick() }
        given.insert(port)
        return port
    }
}

/// Sends one UDP datagram to 127.0.0.1:`port`.
public func sendUDP(_ bytes: [UInt8], port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = port.bigEndian
    _ = bytes.withUnsafeBytes { b in
        withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}

/// `SOCK_STREAM` and `SOCK_DGRAM` as `socket(2)` takes them. The test targets use these instead
/// of Glibc's names: Swift 6.3 sometimes failed to find `SOCK_STREAM` in a file of
/// IntegrationTests, depending on how a build batched the module's files.
public let streamSocketType = Int32(SOCK_STREAM.rawValue)
public let datagramSocketType = Int32(SOCK_DGRAM.rawValue)
/// `MSG_DONTWAIT` for `recv(2)`, for the same reason.
public let dontWaitFlag = Int32(MSG_DONTWAIT)

/// Waits until some socket of this network namespace is bound to UDP `port` (as
/// /proc/net/udp and udp6 list them): a receiver started in the background is ready once it
/// is there, with no guessed sleep. False after `timeout` seconds.
public func waitForUDPPort(_ port: UInt16, timeout: Double = 10) -> Bool {
    let wanted = String(format: ":%04X ", port)
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                if fields.count > 1, (fields[1] + " ").hasSuffix(wanted) { return true }
            }
        }
        usleep(10_000)
    } while Date() < deadline
    return false
}

/// Runs a command to completion with its output to files and returns its status (128 + the
/// signal if one ended it), output, and its own peak resident memory (wait4's ru_maxrss, in
/// KiB): the memory of that one process, not of every child of the tests. Fails the run after
/// `timeout` seconds (the child is killed).
public func runMeasuringMemory(_ executable: String, _ arguments: [String], timeout: Double = 60) throws
    -> (status: Int32, stdout: String, stderr: String, peakKiB: Int)
{
    let folder = NSTemporaryDirectory() + "jackvu-measured-\(getpid())-\(Int.random(in: 0..<1_000_000))"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, folder + "/out", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, folder + "/err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard rc == 0 else { throw FixtureError("cannot start \(executable): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    var usage = rusage()
    let deadline = Date().addingTimeInterval(timeout)
    var timedOut = false
    while wait4(pid, &status, WNOHANG, &usage) == 0 {
        if Date() > deadline {
            kill(pid, SIGKILL)
            timedOut = true
            _ = wait4(pid, &status, 0, &usage)
            break
        }
        usleep(10_000)
    }
    let out = (try? String(contentsOfFile: folder + "/out", encoding: .utf8)) ?? ""
    let err = (try? String(contentsOfFile: folder + "/err", encoding: .utf8)) ?? ""
    if timedOut { throw FixtureError("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout) s: \(err.suffix(300))") }
    let signal = status & 0x7F
    return (signal == 0 ? (status >> 8) & 0xFF : 128 + signal, out, err, Int(usage.ru_maxrss))
}

/// A UDP socket bound to `address`:`port` (0: any free port), non-blocking, for tests that
/// play several hosts from one process (each loopback or veth address a host).
public final class UDPEndpoint {
    public let fd: Int32
    public let port: UInt16
    public let address: String

    public init(address: String, port: UInt16 = 0) throws {
        let fd = socket(AF_INET, datagramSocketType, 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr(address)
        addr.sin_port = port.bigEndian
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0 else {
            close(fd)
            throw FixtureError("cannot bind UDP \(address):\(port): \(String(cString: strerror(errno)))")
        }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        self.fd = fd
        self.port = UInt16(bigEndian: addr.sin_port)
        self.address = address
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { close(fd) }

    /// Sends `bytes` to `host`:`port`.
    public func send(_ bytes: [UInt8], to host: String, port: UInt16) {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr(host)
        addr.sin_port = port.bigEndian
        _ = bytes.withUnsafeBytes { b in
            withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, b.baseAddress, b.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    /// Every datagram waiting now.
    public func drain() -> [[UInt8]] {
        var out: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return out }
            out.append(Array(buffer[0..<n]))
        }
    }
}

/// Polls `condition` every 50 ms until it holds or `timeout` seconds pass; whether it held.
public func eventually(timeout: Double, _ condition: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(timeout)
    while Date() < end {
        if condition() { return true }
        usleep(50_000)
    }
    return condition()
}
