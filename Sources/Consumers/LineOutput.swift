#if canImport(Glibc)
import Glibc
#endif
import Outputs

/// Where the JSON lines go: a file, created or appended to — or, when the path names a
/// Unix-domain socket a reader listens on (a collector's, `socat UNIX-LISTEN:PATH -`), that
/// socket, stream or datagram. The worker writes; a socket never makes it wait: what a slow
/// reader has not taken yet waits in a buffer of `pendingLimit` bytes, lines beyond it are
/// dropped and counted; a reader that is not there (yet, or any more) is connected to again at
/// the next line. Each trouble gets one line on stderr (the host's log), not one a second.
public final class LineSink {
    static let pendingLimit = 65_536
    let path: String
    let isSocket: Bool
    private var fd: Int32 = -1
    private var datagram = false
    private var pending: [UInt8] = []
    /// Lines not delivered since the socket was last connected.
    public private(set) var dropped = 0
    /// Where a trouble is said, once (the host's log).
    private let say: @Sendable (String) -> Void
    private var complained = false

    /// A sink for `path`; nil (with a line said) for a file that cannot be opened.
    public init?(path: String, say: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.say = say
        var st = stat()
        isSocket = stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
        if isSocket {
            _ = connectSocket()
        } else {
            fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                say("cannot open the JSON lines file \(path): \(String(cString: strerror(errno)))")
                return nil
            }
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Writes one newline-terminated line.
    public func write(_ line: String) {
        guard isSocket else {
            _ = line.withCString { Glibc.write(fd, $0, strlen($0)) }
            return
        }
        if fd < 0 && !connectSocket() {
            dropped += 1
            return
        }
        let bytes = Array(line.utf8)
        if datagram {
            let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                dropped += 1
                if errno != EAGAIN && errno != ENOBUFS { lost(errno) }
            }
            return
        }
        if pending.count + bytes.count > LineSink.pendingLimit { dropped += 1 } else { pending += bytes }
        while !pending.isEmpty {
            let sent = pending.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                pending.removeFirst(sent)
            } else {
                if sent < 0 && errno == EAGAIN { break }
                // Gone: what waited is lost with it (a new connection starts at a line's start).
                dropped += pending.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
                pending = []
                lost(sent < 0 ? errno : EPIPE)
            }
        }
    }

    /// Connects to the socket, as a stream or else as datagrams; false (one line on stderr
    /// the first time) when no reader listens.
    private func connectSocket() -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            complain("the socket's path is longer than a socket address holds")
            return false
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        var reason: Int32 = 0
        for type in [SOCK_STREAM, SOCK_DGRAM] {
            let s = socket(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard s >= 0 else { reason = errno; break }
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if status == 0 {
                fd = s
                datagram = type == SOCK_DGRAM
                if complained {
                    say("the JSON lines socket \(path) takes lines again (\(dropped) not delivered)")
                    complained = false
                }
                dropped = 0
                return true
            }
            reason = errno
            close(s)
            if reason != EPROTOTYPE { break }
        }
        complain("cannot connect to it: \(String(cString: strerror(reason))); trying again at each line")
        return false
    }

    private func lost(_ error: Int32) {
        close(fd)
        fd = -1
        complain("its reader went away: \(String(cString: strerror(error))); trying again at each line")
    }

    private func complain(_ message: String) {
        guard !complained else { return }
        complained = true
        say("JSON lines socket \(path): \(message)")
    }
}

/// The JSON lines of the updates it is handed, to a file or a Unix-domain socket (`LineSink`):
/// the LV2 plugin's `jsonPath` (its host hands it one update per second of audio).
public final class LinesOutput: SnapshotOutput, @unchecked Sendable {
    // @unchecked Sendable: used by the thread that publishes the updates only.
    private let sink: LineSink

    init(_ sink: LineSink) { self.sink = sink }

    public var name: String { "json-lines" }
    public var counters: [String: Int] { ["dropped": sink.dropped] }
    public func take(_ update: OutputUpdate) { sink.write(update.jsonLine) }  // (newline-terminated)
    public func stop() {}
}
