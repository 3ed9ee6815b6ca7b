#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A tmux server of the test's own (a private socket), with one session `jv`: a real terminal
/// emulator to run the terminal display in. `close()` (or release) kills the server and
/// removes its folder.
public final class TmuxSession: @unchecked Sendable {
    public let socket: String
    /// A folder for the files the session's command writes (removed by `close`).
    public let folder: String
    private var closed = false

    /// Starts the command `command(folder)` returns (run by `bash -c`, which, like a user's
    /// shell, carries on after a child that handles Ctrl-C and exits) in a `width`×`height` pane.
    public init(width: Int = 100, height: Int = 30, command: (_ folder: String) -> String) throws {
        _ = try Executables.resolve("tmux")
        socket = "jackvu-test-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        folder = NSTemporaryDirectory() + socket
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try tmux(["new-session", "-d", "-s", "jv", "-x", "\(width)", "-y", "\(height)", "bash", "-c", command(folder)])
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        _ = try? tmux(["kill-server"])
        // tmux leaves its socket behind when its server is killed.
        let tmuxDirectory = (ProcessInfo.processInfo.environment["TMUX_TMPDIR"] ?? "/tmp") + "/tmux-\(getuid())"
        try? FileManager.default.removeItem(atPath: tmuxDirectory + "/" + socket)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Runs tmux on this socket through system(3) (Foundation's Process would wait for the
    /// tmux server it forks) and returns its stdout.
    @discardableResult
    public func tmux(_ arguments: [String]) throws -> String {
        let quoted = (["tmux", "-L", socket] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let out = folder + "/tmux.out"
        let status = system(quoted.joined(separator: " ") + " > \(out) 2>&1 < /dev/null")
        let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        guard status == 0 else { throw FixtureError("tmux \(arguments.joined(separator: " ")): \(text)") }
        return text
    }

    /// The pane's text (with `escapes`, its colours and attributes as escape sequences).
    public func capture(escapes: Bool = false) -> String {
        (try? tmux(["capture-pane", "-p", "-t", "jv"] + (escapes ? ["-e"] : []))) ?? ""
    }

    /// Waits until the pane's text satisfies `predicate`; returns that text, or nil.
    public func waitForPane(timeout: Double = 15, _ predicate: (String) -> Bool) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let text = capture()
            if predicate(text) { return text }
            usleep(100_000)
        }
        return nil
    }

    /// Waits for a file in `folder` to have content; returns it, or nil.
    public func waitForFile(_ name: String, timeout: Double = 10) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: folder + "/" + name, encoding: .utf8), !text.isEmpty { return text }
            usleep(100_000)
        }
        return nil
    }
}

/// A free TCP port on the loopback interface (bound, read, released), never one this test
/// process handed out before.
public func freeTCPPort() -> Int {
    HandedOutPorts.tcp.fresh(boundTCPPort)
}

private func boundTCPPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A TCP connection to 127.0.0.1:`port` (nil when refused), with a receive buffer of
/// `receiveBuffer` bytes when given (set before connecting, so the window stays small), from
/// the loopback address `source` when given (127.0.0.2 stands for another client machine).
public func connectTCP(port: Int, receiveBuffer: Int32? = nil, from source: String? = nil) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            return nil
        }
    }
    if var size = receiveBuffer {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    let ok = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard ok == 0 else {
        close(fd)
        return nil
    }
    var timeout = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

/// Writes all of `text` to a socket.
public func sendAll(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    let count = bytes.count
    var offset = 0
    while offset < count {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { return }
        offset += n
    }
}

/// A plain HTTP/1.0 GET on 127.0.0.1:`port`: the status code and body (nil when refused).
public func httpGet(port: Int, path: String, from source: String? = nil) -> (status: Int, headers: String, body: String)? {
    guard let fd = connectTCP(port: port, from: source) else { return nil }
    defer { close(fd) }
    sendAll(fd, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
    var data = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        data += buffer[0..<n]
        // Done when the head and Content-Length bytes of body are in.
        if let end = data.indices.dropLast(3).first(where: { data[$0] == 13 && data[$0 + 1] == 10 && data[$0 + 2] == 13 && data[$0 + 3] == 10 }) {
            let head = String(decoding: data[..<end], as: UTF8.self).lowercased()
            if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
                data.count >= end + 4 + length
            {
                break
            }
        }
    }
    let text = String(decoding: data, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { return nil }
    let head = String(text[..<split.lowerBound])
    let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return (status, head, String(text[split.upperBound...]))
}

/// Opens a WebSocket on 127.0.0.1:`port``path`: sends the upgrade request and, with
/// `readResponse`, reads the 101 response head. Returns the socket (nil when refused).
public func openWebSocket(port: Int, path: String = "/ws", receiveBuffer: Int32? = nil, readResponse: Bool = true, from source: String? = nil) -> Int32? {
    guard let fd = connectTCP(port: port, receiveBuffer: receiveBuffer, from: source) else { return nil }
    sendAll(
        fd,
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    if readResponse {
        var head = [UInt8]()
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) == 1 {
            head.append(byte)
            if head.suffix(4) == [13, 10, 13, 10] { break }
        }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            close(fd)
            return nil
        }
    }
    return fd
}

/// Resident memory of a process, in bytes (from /proc/PID/status).
public func residentBytes(pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    let kb = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return kb * 1024
}

/// Whether something listens on TCP `port` at the local address `hexAddress` as
/// /proc/net/tcp writes it (`0100007F` for 127.0.0.1, `00000000` for 0.0.0.0).
public func tcpListening(port: Int, hexAddress: String) -> Bool {
    guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return false }
    let wanted = hexAddress + ":" + String(format: "%04X", port)
    return table.split(separator: "\n").contains { line in
        let fields = line.split(separator: " ")
        return fields.count > 3 && fields[1] == wanted && fields[3] == "0A"  // 0A: LISTEN
    }
}
