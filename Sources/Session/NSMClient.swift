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
public final class NSMClient: @unchecked Sendable {
    // @unchecked Sendable: `server` and `target` are used by the receive thread and, for
    // sending, under `sendLock`; everything else is behind a Mutex.

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

    private let server: lo_server
    private let target: lo_address  // the session manager
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

    /// Connects to the session manager at `url` (`NSM_URL`, e.g. `osc.udp://host:port/`).
    public init(url: String) throws(SessionError) {
        guard let address = lo_address_new_from_url(url) else { throw SessionError("NSM_URL '\(url)' is not an OSC URL") }
        guard lo_address_get_protocol(address) == LO_UDP else {
            lo_address_free(address)
            throw SessionError("NSM_URL '\(url)' is not a UDP address")
        }
        // Any free port, on every address: the server answers to where the announce came from.
        guard let server = lo_server_new_with_proto(nil, LO_UDP, nil) else {
            lo_address_free(address)
            throw SessionError("cannot open a UDP socket for the session manager")
        }
        self.server = server
        target = address
        let context = Unmanaged.passUnretained(self).toOpaque()
        lo_server_add_method(server, nil, nil, { path, types, argv, argc, message, context in
            guard let path, let context else { return 1 }
            let client = Unmanaged<NSMClient>.fromOpaque(context).takeUnretainedValue()
            client.received(
                path: String(cString: path), types: types.map { String(cString: $0) } ?? "", argv: argv, argc: Int(argc))
            return 0
        }, context)
        thread = PosixThread(name: "jackvu-nsm") { [self] in
            while !stopping.load(ordering: .relaxed) {
                _ = lo_server_recv_noblock(self.server, 100)
            }
        }
    }

    deinit {
        stop()
        lo_server_free(server)
        lo_address_free(target)
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
            return arg.pointee.i
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
        sendLock.withLock { _ in _ = lo_send_message_from(target, server, path, m) }
    }

    private static func now() -> Double { Double(monotonicNanoseconds()) / 1e9 }
}

/// A session failure: one line for stderr, or for the session manager.
public struct SessionError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
