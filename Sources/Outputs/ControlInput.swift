#if canImport(Glibc)
import Glibc
#endif
import Realtime
import Synchronization

/// A command from the OSC control input (`--listen`).
public enum ControlCommand: Equatable, Sendable {
    /// `PREFIX/reset`: restart the measurements, as SIGHUP.
    case reset
    /// `PREFIX/reset s`: restart one programme's measurements (its loudness, and its
    /// channels' true-peak maxima and clip counts).
    case resetProgramme(String)
    /// `PREFIX/pause [s]`: pause the integration of one programme, or of every programme.
    case pause(String?)
    /// `PREFIX/resume [s]`: resume it.
    case resume(String?)
    /// `PREFIX/rate f`: updates per second.
    case rate(Double)
    /// `PREFIX/send s`: the message selection (`peak,rms,pitch`, `all`).
    case send(MessageKinds)
    /// `PREFIX/subscribe [i]`: add the sender (at its source port, or the port given) as an
    /// OSC destination.
    case subscribe(OSCEndpoint)
    /// `PREFIX/unsubscribe [i]`: remove it again.
    case unsubscribe(OSCEndpoint)
    /// `PREFIX/subscribe/confirm s`: the echo of a subscription's challenge, from `host`
    /// (`Subscriptions`: a source that is not this machine confirms before it gets updates).
    case confirm(token: String, host: String)
    /// `PREFIX/mark s`: a segment boundary in the log (`--log`), named (a programme's title).
    case mark(String)

    /// Largest packet accepted, bytes: commands are small; anything larger is refused unread.
    public static let maxPacketSize = 1024

    /// Updates per second that `--rate` and `PREFIX/rate` accept: from one update every
    /// 100 s to 1000 a second. Anything else (0, negative, not a number, infinite, out of
    /// range) is refused — on the command line with one line and status 64, on the control
    /// input counted as rejected — and the current rate stays.
    public static let rateRange: ClosedRange<Double> = 0.01...1000

    /// The command a message asks for, or nil if it is not one of the documented commands
    /// with the documented arguments. `sender` is where the message came from (host, port).
    public static func parse(_ m: OSCMessage, prefix: String, sender: (host: String, port: UInt16)?) -> ControlCommand? {
        guard m.address.hasPrefix(prefix + "/") else { return nil }
        let command = m.address.dropFirst(prefix.count + 1)
        func number(_ a: OSCArgument) -> Double? {
            switch a {
            case .float(let f): return Double(f)
            case .int(let i): return Double(i)
            case .string: return nil
            }
        }
        switch (command, m.arguments.count) {
        case ("reset", 0):
            return .reset
        case ("reset", 1), ("pause", 1), ("resume", 1):
            guard case .string(let name) = m.arguments[0], !name.isEmpty else { return nil }
            return command == "reset" ? .resetProgramme(name) : command == "pause" ? .pause(name) : .resume(name)
        case ("pause", 0):
            return .pause(nil)
        case ("mark", 1):
            guard case .string(let label) = m.arguments[0], !label.isEmpty, label.utf8.count <= 200 else { return nil }
            return .mark(label)
        case ("resume", 0):
            return .resume(nil)
        case ("rate", 1):
            guard let r = number(m.arguments[0]), ControlCommand.rateRange.contains(r) else { return nil }
            return .rate(r)
        case ("send", 1):
            guard case .string(let list) = m.arguments[0], let kinds = try? MessageKinds.parse(list), !kinds.isEmpty
            else { return nil }
            return .send(kinds)
        case ("subscribe/confirm", 1):
            guard let sender, case .string(let token) = m.arguments[0], (1...64).contains(token.utf8.count) else { return nil }
            return .confirm(token: token, host: sender.host)
        case ("subscribe", 0), ("subscribe", 1), ("unsubscribe", 0), ("unsubscribe", 1):
            guard let sender else { return nil }
            var port = sender.port
            if m.arguments.count == 1 {
                guard let p = number(m.arguments[0]), p >= 1, p <= 65535, p == p.rounded() else { return nil }
                port = UInt16(p)
            }
            let host = sender.host.contains(":") ? "[\(sender.host)]" : sender.host
            guard let endpoint = try? OSCEndpoint(url: "udp://\(host):\(port)") else { return nil }
            return command == "subscribe" ? .subscribe(endpoint) : .unsubscribe(endpoint)
        default:
            return nil
        }
    }
}

/// The OSC control input: a UDP socket bound where `--listen` says (loopback unless an
/// address is named) and a thread that reads packets, decodes them with liblo and hands each
/// documented command to `handler`. Everything else — malformed, unknown, oversized, wrong
/// arguments, from a source outside `allowed` (loopback unless `--control-from` names
/// others), or past the rate limit (`CommandBucket.control`) — is counted in `rejected` and
/// ignored. Not real-time safe.
public final class ControlInput: @unchecked Sendable {
    // @unchecked Sendable: the socket is used by the input's thread only after `start`.
    public let endpoint: OSCEndpoint
    /// The port actually bound (differs from the endpoint's when it asked for port 0).
    public let boundPort: UInt16
    /// Packets and messages ignored.
    public let rejected = Counter()
    private let fd: Int32
    private let prefix: String
    /// Sources whose packets are read.
    public let allowed: [AddressRange]
    private var bucket = CommandBucket.control
    private let stopping = Atomic<Bool>(false)
    private var thread: PosixThread?

    /// Binds the socket. Throws when the address is malformed, unresolvable or in use.
    public init(endpoint: OSCEndpoint, prefix: String, allowed: [AddressRange] = AddressRange.loopback) throws(OSCAddressError) {
        self.endpoint = endpoint
        self.prefix = prefix
        self.allowed = allowed
        let fd = try endpoint.udpSocket(bind: true, nonBlocking: false)
        var local = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
        }
        boundPort = ControlInput.peer(local)?.port ?? endpoint.port
        self.fd = fd
    }

    deinit {
        stop()
        close(fd)
    }

    /// Starts the thread; `handler` runs on it for each command.
    public func start(_ handler: @escaping @Sendable (ControlCommand) -> Void) {
        thread = PosixThread(name: "jackvu-control") { [self] in run(handler) }
    }

    /// Stops the thread (within 100 ms).
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        thread?.join()
        thread = nil
    }

    private func run(_ handler: @Sendable (ControlCommand) -> Void) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ControlCommand.maxPacketSize, alignment: 8)
        defer { buffer.deallocate() }
        while !stopping.load(ordering: .relaxed) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            var from = sockaddr_storage()
            var fromLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            // MSG_TRUNC: the real length, so an oversized packet is known as such.
            let n = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_TRUNC) | Int32(MSG_DONTWAIT), $0, &fromLength)
                }
            }
            guard n >= 0 else { continue }
            // A source not allowed (subscribe would answer it: a spoofed source makes jackvu
            // an amplifier), or a flood: dropped unread.
            guard let source = AddressRange.bytes(of: from), allowed.contains(where: { $0.contains(source) }),
                  bucket.take(at: monotonicNanoseconds())
            else {
                rejected.add()
                continue
            }
            guard n <= buffer.count else {
                rejected.add()
                continue
            }
            guard let messages = try? OSCDecoder.messages(in: UnsafeRawBufferPointer(rebasing: buffer[0..<n])),
                !messages.isEmpty
            else {
                rejected.add()
                continue
            }
            let sender = ControlInput.peer(from)
            for m in messages {
                if let command = ControlCommand.parse(m, prefix: prefix, sender: sender) {
                    handler(command)
                } else {
                    rejected.add()
                }
            }
        }
    }

    /// Host (numeric) and port of a socket address.
    static func peer(_ address: sockaddr_storage) -> (host: String, port: UInt16)? {
        var a = address
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let code = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, socklen_t(MemoryLayout<sockaddr_storage>.size), &host, socklen_t(host.count),
                            &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        func text(_ chars: [CChar]) -> String {
            String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        guard code == 0, let port = UInt16(text(service)) else { return nil }
        return (text(host), port)
    }
}
