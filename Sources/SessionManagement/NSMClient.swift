#if canImport(Glibc)
import Glibc
#endif
import CLiblo
import Realtime
import Synchronization

/// A client of a session manager speaking the NSM API (New Session Manager, RaySession,
/// Agordejo, …): OSC over UDP, with liblo.
///
/// The protocol, from the client's side: when `NSM_URL` is set, announce
/// (`/nsm/server/announce s:name s:capabilities s:executable i:1 i:2 i:pid`), wait for the
/// server's `/reply` (or `/error`), then for `/nsm/client/open s:path s:display_name
/// s:client_id`: only then open the JACK client, named by the client ID, with the state kept
/// under `path`, and answer `/reply "/nsm/client/open" s:message` (or `/error … i:code
/// s:message`). `/nsm/client/save` is answered the same way once the state is written. The
/// server ends a client with SIGTERM; a client quits without saving.
///
/// One thread receives the server's messages; `save` runs on it.
///
/// The socket is jackvu's own, not a liblo server (which binds every interface and takes
/// packets from anyone): bound to the one local address the route to the session manager
/// uses (127.0.0.1 for a manager on this machine), and only the manager's packets are read —
/// its address and port, or for a manager on loopback any loopback address at its port (a
/// manager named by host name, e.g. 127.0.1.1, answers from 127.0.0.1). liblo still encodes
/// and decodes the messages.
public final class NSMClient: @unchecked Sendable {
    // @unchecked Sendable: the socket is read by the receive thread only and written under
    // `sendLock`; everything else is behind a Mutex.

    /// The NSM API version this client follows.
    public static let apiVersion = (major: Int32(1), minor: Int32(2))

    /// NSM error codes (the API's ERR_…).
    public enum ErrorCode: Int32, Sendable {
        case general = -1, incompatibleAPI = -2, blacklisted = -3, launchFailed = -4, noSuchFile = -5
        case noSessionOpen = -6, unsavedChanges = -7, notNow = -8, badProject = -9, createFailed = -10
    }

    /// What `/nsm/client/open` asks for.
    public struct Open: Sendable, Equatable {
        /// Where this client keeps its state: jackvu uses it as a directory.
        public var path: String
        public var displayName: String
        /// The client's ID, also its JACK client name.
        public var clientID: String
    }

    /// What the server said to the announce.
    public struct Welcome: Sendable {
        public var message: String
        public var managerName: String
        public var capabilities: String
    }

    /// Saves the state; returns a message for the server, or throws one.
    public typealias SaveHandler = @Sendable () -> Result<String, SessionError>

    private let fd: Int32
    /// The session manager's socket address.
    private let target: sockaddr_storage
    private let targetLength: socklen_t
    /// The local address the socket is bound to (numeric), for tests and messages.
    public let localHost: String
    /// Packets from anyone else, ignored.
    public let ignored = Counter()
    private let sendLock = Mutex(())
    private let state = Mutex(State())
    private let arrived = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    private var thread: PosixThread?

    private struct State {
        var welcome: Welcome?
        var refusal: String?
        var opens: [Open] = []
        var saveHandler: SaveHandler?
        var opened = false
    }

    /// The host and port of `url`, an OSC URL over UDP (`osc.udp://HOST:PORT/`; `osc://`
    /// means UDP too), the port from 1 to 65535.
    static func hostAndPort(_ url: String) throws(SessionError) -> (host: String, port: String) {
        let fault = SessionError("NSM_URL '\(url)' is not an OSC URL over UDP (osc.udp://HOST:PORT/)")
        var lo = url
        if lo.hasPrefix("osc://") { lo = "osc.udp://" + lo.dropFirst("osc://".count) }
        guard lo.hasPrefix("osc.udp://") else { throw fault }
        if !lo.dropFirst("osc.udp://".count).contains("/") { lo += "/" }
        guard let h = lo_url_get_hostname(lo), let p = lo_url_get_port(lo) else { throw fault }
        defer { free(h); free(p) }
        let host = String(cString: h), port = String(cString: p)
        guard !host.isEmpty, let number = UInt16(port), number > 0 else { throw fault }
        return (host, port)
    }

    /// Connects to the session manager at `url` (`NSM_URL`, e.g. `osc.udp://host:port/`).
    public init(url: String) throws(SessionError) {
        // Parsed here, not by liblo's lo_address_new_from_url, which writes lines of its own
        // to stderr ("protocol '(null)' not supported", "no protocol specified").
        let (host, port) = try NSMClient.hostAndPort(url)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, port, &hints, &list) == 0, let first = list else {
            throw SessionError("NSM_URL '\(url)': cannot resolve '\(host)'")
        }
        var target = sockaddr_storage()
        memcpy(&target, first.pointee.ai_addr, Int(first.pointee.ai_addrlen))
        let length = first.pointee.ai_addrlen, family = first.pointee.ai_family
        freeaddrinfo(list)
        // The local address of the route to the manager: a probe socket connected to it.
        let probe = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        var local = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let routed = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, length) }
        } == 0 && withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &localLength) }
        } == 0
        if probe >= 0 { close(probe) }
        guard routed else { throw SessionError("NSM_URL '\(url)': no route to \(host)") }
        // That address, any port.
        if family == AF_INET {
            withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = 0 } }
        } else {
            withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = 0 } }
        }
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0, withUnsafePointer(to: &local, {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, localLength) }
        }) == 0 else {
            if fd >= 0 { close(fd) }
            throw SessionError("cannot open a UDP socket for the session manager")
        }
        self.fd = fd
        self.target = target
        targetLength = length
        localHost = NSMClient.numericHost(local) ?? "?"
        thread = PosixThread(name: "jackvu-nsm") { [self] in receiveLoop() }
    }

    deinit {
        stop()
        close(fd)
    }

    /// Reads packets until stopped; each one from the session manager is decoded by liblo
    /// and handled, anything else counted in `ignored`.
    private func receiveLoop() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !stopping.load(ordering: .relaxed) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) > 0 else { continue }
            var from = sockaddr_storage()
            var fromLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = buffer.withUnsafeMutableBytes { b in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, b.baseAddress, b.count, Int32(MSG_DONTWAIT), $0, &fromLength) }
                }
            }
            guard n > 0 else { continue }
            guard isManager(from) else {
                ignored.add()
                continue
            }
            buffer.withUnsafeMutableBytes { b in
                guard let path = lo_get_path(b.baseAddress, n) else { return }
                var result: Int32 = 0
                guard let m = lo_message_deserialise(b.baseAddress, n, &result) else { return }
                defer { lo_message_free(m) }
                let types = lo_message_get_types(m).map { String(cString: $0) } ?? ""
                received(path: String(cString: path), types: types, argv: lo_message_get_argv(m), argc: Int(lo_message_get_argc(m)))
            }
        }
    }

    /// Whether a packet from `source` is the session manager's: its port, and its address
    /// (any loopback address when the manager is on loopback).
    private func isManager(_ source: sockaddr_storage) -> Bool {
        guard let (host, port) = NSMClient.endpoint(source), let (targetHost, targetPort) = NSMClient.endpoint(target),
              port == targetPort
        else { return false }
        return host == targetHost || (NSMClient.isLoopback(host) && NSMClient.isLoopback(targetHost))
    }

    private static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1" || host.hasPrefix("::ffff:127.")
    }

    private static func endpoint(_ address: sockaddr_storage) -> (String, UInt16)? {
        guard let host = numericHost(address) else { return nil }
        var a = address
        let port: UInt16 = Int32(a.ss_family) == AF_INET
            ? withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
            : withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
        return (host, port)
    }

    private static func numericHost(_ address: sockaddr_storage) -> String? {
        var a = address
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let code = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, socklen_t(MemoryLayout<sockaddr_storage>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard code == 0 else { return nil }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Stops receiving (idempotent).
    public func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        thread?.join()
    }

    /// Announces this client and waits for the server's answer (at most `timeout` seconds).
    public func announce(application: String, capabilities: String, executable: String, timeout: Double = 5)
        throws(SessionError) -> Welcome
    {
        send("/nsm/server/announce", [
            .string(application), .string(capabilities), .string(executable),
            .int(NSMClient.apiVersion.major), .int(NSMClient.apiVersion.minor), .int(Int32(getpid())),
        ])
        let deadline = NSMClient.now() + timeout
        while true {
            let (welcome, refusal) = state.withLock { ($0.welcome, $0.refusal) }
            if let welcome { return welcome }
            if let refusal { throw SessionError("the session manager refused jackvu: \(refusal)") }
            let left = deadline - NSMClient.now()
            guard left > 0 else { throw SessionError("no answer from the session manager at NSM_URL within \(Int(timeout)) s") }
            _ = arrived.wait(timeout: min(left, 0.1))
        }
    }

    /// Waits for `/nsm/client/open` (at most `timeout` seconds).
    public func waitForOpen(timeout: Double = 30) throws(SessionError) -> Open {
        let deadline = NSMClient.now() + timeout
        while true {
            if let open = state.withLock({ $0.opens.isEmpty ? nil : $0.opens.removeFirst() }) { return open }
            let left = deadline - NSMClient.now()
            guard left > 0 else { throw SessionError("the session manager sent no open within \(Int(timeout)) s") }
            _ = arrived.wait(timeout: min(left, 0.1))
        }
    }

    /// What runs on `/nsm/client/save`.
    public func onSave(_ handler: @escaping SaveHandler) { state.withLock { $0.saveHandler = handler } }

    /// Answers `/nsm/client/open`: done.
    public func opened(_ message: String) {
        state.withLock { $0.opened = true }
        send("/reply", [.string("/nsm/client/open"), .string(message)])
    }

    /// Answers `/nsm/client/open`: failed (nothing once it has been answered as done).
    public func openFailed(_ code: ErrorCode, _ message: String) {
        guard !state.withLock({ $0.opened }) else { return }
        send("/error", [.string("/nsm/client/open"), .int(code.rawValue), .string(message)])
    }

    /// Tells the server the state has unsaved changes (capability `:dirty:`).
    public func markDirty() { send("/nsm/client/is_dirty", []) }

    /// Tells the server the state is saved (capability `:dirty:`).
    public func markClean() { send("/nsm/client/is_clean", []) }

    // MARK: - Receiving

    private func received(path: String, types: String, argv: UnsafeMutablePointer<UnsafeMutablePointer<lo_arg>?>?, argc: Int) {
        func string(_ i: Int) -> String? {
            guard i < argc, i < types.utf8.count, Array(types.utf8)[i] == UInt8(ascii: "s"), let arg = argv?[i] else { return nil }
            return String(cString: UnsafeRawPointer(arg).assumingMemoryBound(to: CChar.self))
        }
        func int(_ i: Int) -> Int32? {
            guard i < argc, i < types.utf8.count, Array(types.utf8)[i] == UInt8(ascii: "i"), let arg = argv?[i] else { return nil }
            return UnsafeRawPointer(arg).loadUnaligned(as: Int32.self)  // its 4 bytes, not the union
        }
        switch path {
        case "/reply" where string(0) == "/nsm/server/announce":
            let welcome = Welcome(message: string(1) ?? "", managerName: string(2) ?? "", capabilities: string(3) ?? "")
            state.withLock { $0.welcome = welcome }
            arrived.signal()
        case "/error" where string(0) == "/nsm/server/announce":
            let message = string(2) ?? "error \(int(1) ?? 0)"
            state.withLock { $0.refusal = message }
            arrived.signal()
        case "/nsm/client/open":
            guard let p = string(0), let name = string(1), let id = string(2) else { return }
            let alreadyOpen = state.withLock { s in
                if s.opened { return true }
                s.opens.append(Open(path: p, displayName: name, clientID: id))
                return false
            }
            if alreadyOpen {
                // Without `:switch:` the server restarts a client to open another session.
                send("/error", [.string("/nsm/client/open"), .int(ErrorCode.notNow.rawValue), .string("already open; restart to switch")])
            }
            arrived.signal()
        case "/nsm/client/save":
            let handler = state.withLock { $0.opened ? $0.saveHandler : nil }
            guard let handler else {
                send("/error", [.string("/nsm/client/save"), .int(ErrorCode.noSessionOpen.rawValue), .string("nothing open")])
                return
            }
            switch handler() {
            case .success(let message): send("/reply", [.string("/nsm/client/save"), .string(message)])
            case .failure(let error): send("/error", [.string("/nsm/client/save"), .int(ErrorCode.general.rawValue), .string(error.message)])
            }
        default:
            break  // informational messages (session_is_loaded, …) need nothing
        }
    }

    // MARK: - Sending

    private enum Argument { case string(String), int(Int32) }

    private func send(_ path: String, _ arguments: [Argument]) {
        guard let m = lo_message_new() else { return }
        defer { lo_message_free(m) }
        for a in arguments {
            switch a {
            case .string(let s): lo_message_add_string(m, s)
            case .int(let i): lo_message_add_int32(m, i)
            }
        }
        var size = 0
        guard let bytes = lo_message_serialise(m, path, nil, &size) else { return }
        defer { free(bytes) }
        var to = target
        sendLock.withLock { _ in
            _ = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, size, 0, $0, targetLength) } }
        }
    }

    private static func now() -> Double { Double(monotonicNanoseconds()) / 1e9 }
}

/// A session failure: one line for stderr, or for the session manager.
public struct SessionError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
