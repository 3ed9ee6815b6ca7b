#if canImport(Glibc)
import Glibc
#endif
import CJack
import Realtime
import Synchronization

/// A JACK client: a connection to one JACK server, with ports and callbacks.
///
/// JACK terms: a *server* (jackd) runs the audio graph and calls each active *client* once per
/// *cycle* of `bufferSize` frames on its real-time thread; clients own *ports*, named
/// `client:port`, which carry mono 32-bit float audio (or control voltage) and connect to
/// other clients' ports.
///
/// Lifecycle: `init` (open) → `registerPort` → `setHandlers` → `warmUp` → `activate` →
/// `connect` … → `close`. All methods are for one setup thread; none is real-time safe.
public final class Client: @unchecked Sendable {
    // @unchecked Sendable: the handle is used by the owning thread, and by one more (the port
    // metadata writer) for `setProperty`; requests to the server from both go one at a time
    // through `requests`. The real-time and notification threads reach the handlers through
    // `CallbackContext`, not through this.

    /// libjack's requests to the server share one socket per client, with no lock of its own:
    /// a `jack_connect` on one thread and a `jack_set_property` on another crossed their
    /// answers (a connection silently not made, jackd writing "Broken pipe"). Held for
    /// each request.
    private let requests = Mutex(())

    private var handle: OpaquePointer?
    private var context: Unmanaged<CallbackContext>?
    private var ports: [AnyPort] = []
    private var active = false

    /// The client's name on the server.
    public let name: String
    /// The server's sample rate when the client opened, in Hz.
    public var sampleRate: Int { handle.map { Int(jack_get_sample_rate($0)) } ?? 0 }
    /// The server's buffer size, in frames.
    public var bufferSize: Int { handle.map { Int(jack_get_buffer_size($0)) } ?? 0 }
    /// Whether the server runs its process thread with real-time priority.
    public var isRealtime: Bool { handle.map { jack_is_realtime($0) != 0 } ?? false }

    /// Opens a client named exactly `name` on `server` (nil: `$JACK_DEFAULT_SERVER`, else the
    /// default server). Never starts a server. Not real-time safe.
    ///
    /// PipeWire's JACK does not refuse a name in use: it opens the client anyway and shows it
    /// to other clients as `NAME-NN`, while the client itself still sees `NAME` (PipeWire 0.3:
    /// in `jack_get_client_name`, in its own port names, in the port list; so `jack_connect` by
    /// name can reach the other client's ports). There, a taken name is replaced here by the
    /// first free `NAME-2`, `NAME-3`, …, which every client sees alike; `name` says which.
    public init(name: String, server: String?) throws(JackError) {
        Client.routeLibraryMessages()
        var name = name
        if Client.isPipeWire && Client.nameTaken(name, server: server) {
            name = (2...999).lazy.map { "\(name)-\($0)" }.first { !Client.nameTaken($0, server: server) } ?? name
        }
        // Before libjack joins JACK2's metadata database (MetadataDatabase: a deadlock there
        // would hang the server for good).
        MetadataDatabase.enableDeadlockDetection()
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue | JackUseExactName.rawValue)
        guard let (opened, status) = Client.openWithin(Client.openLimit, name: name, options: options, server: server) else {
            throw .serverNotAnswering(server: server ?? getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }, seconds: Client.openLimit)
        }
        guard let opened else {
            if status.rawValue & JackNameNotUnique.rawValue != 0 || Client.nameTaken(name, server: server) {
                throw .nameInUse(name)
            }
            if status.rawValue & (JackServerFailed.rawValue | JackServerError.rawValue) != 0 {
                let env = getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) }
                throw .serverUnavailable(server: server ?? env)
            }
            throw .openFailed(status: status.rawValue)
        }
        handle = opened
        adopted = false
        self.name = String(cString: jack_get_client_name(opened))
    }

    /// Whether the client was given to jackvu by the server (an internal client: `jack_load`),
    /// not opened by it: closing it then only deactivates it; the server closes it after
    /// `jack_finish`.
    public let adopted: Bool

    /// Wraps a client the server opened for jackvu: the `jack_client_t *` that `jack_load`
    /// passes to an internal client's `jack_initialize`. libjack's message functions are left
    /// as the server set them.
    public init(adopting raw: OpaquePointer) {
        // For the `jack_property` clients that write its properties (setProperty).
        MetadataDatabase.enableDeadlockDetection()
        handle = raw
        adopted = true
        name = String(cString: jack_get_client_name(raw))
    }

    deinit {
        close()
    }

    /// Registers a port of `kind` (audio ports also carry CV, which JACK carries as audio).
    public func registerPort<Kind: PortKind>(_ kind: Kind.Type, name portName: String) throws(JackError) -> Port<Kind> {
        guard let handle,
            let raw = RequestWatch.timed("registering the port \(name):\(portName)", {
                jack_port_register(handle, portName, Kind.type.typeName, Kind.direction.flags, 0)
            })
        else { throw .portRegistrationFailed("\(name):\(portName)") }
        ports.append(AnyPort(raw: raw))
        return Port(raw: raw)
    }

    /// An audio input (`ProcessScope.input`).
    public func registerAudioInput(name: String) throws(JackError) -> AudioInPort { try registerPort(AudioIn.self, name: name) }
    /// An audio (or CV) output (`ProcessScope.output`).
    public func registerAudioOutput(name: String) throws(JackError) -> AudioOutPort { try registerPort(AudioOut.self, name: name) }
    /// A MIDI output (`ProcessScope.midiOutput`).
    public func registerMIDIOutput(name: String) throws(JackError) -> MIDIOutPort { try registerPort(MIDIOut.self, name: name) }

    /// Sets the handlers; call once, before `activate`. The client keeps them alive until it
    /// closes.
    /// Sets the handlers with the process callback as a closure (`ProcessClosure`).
    public func setHandlers(notifications: (any NotificationHandler)?, process: @escaping (ProcessScope) -> Bool) {
        setHandlers(process: ProcessClosure(process), notifications: notifications)
    }

    public func setHandlers(process: (any ProcessHandler)?, notifications: (any NotificationHandler)?) {
        precondition(context == nil && !active, "handlers are set once, before activate")
        guard let handle else { return }
        let box = Unmanaged.passRetained(CallbackContext(process: process, notifications: notifications, client: handle))
        context = box
        let arg = box.toOpaque()
        if process != nil {
            jack_set_process_callback(handle, { nframes, arg in
                // The real-time path: no allocation from here on (see ProcessHandler).
                jackvu_rtsan_enter()
                let context = Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue()
                var microseconds: jack_time_t = 0
                let frame = jackvu_cycle_start(context.client, &microseconds)
                let keepGoing = context.process!.process(ProcessScope(
                    frames: Int(nframes), scratch: nil, cycleStartMicroseconds: UInt64(microseconds), cycleStartFrames: frame,
                    client: context.client))
                jackvu_rtsan_exit()
                return keepGoing ? 0 : 1
            }, arg)
        }
        guard notifications != nil else { return }
        jack_on_info_shutdown(handle, { _, reason, arg in
            let context = Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue()
            context.notifications?.serverShutdown(reason: reason.map { String(cString: $0) } ?? "")
        }, arg)
        jack_set_xrun_callback(handle, { arg in
            Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue().notifications?.xrun()
            return 0
        }, arg)
        jack_set_sample_rate_callback(handle, { rate, arg in
            Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue()
                .notifications?.sampleRateChanged(Int(rate))
            return 0
        }, arg)
        jack_set_buffer_size_callback(handle, { frames, arg in
            Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue()
                .notifications?.bufferSizeChanged(Int(frames))
            return 0
        }, arg)
        jack_set_freewheel_callback(handle, { starting, arg in
            Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue().notifications?.freewheel(starting != 0)
        }, arg)
        jack_set_port_connect_callback(handle, { _, _, _, arg in
            Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue().notifications?.connectionChanged()
        }, arg)
        jack_set_port_registration_callback(handle, { _, registered, arg in
            Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue()
                .notifications?.portRegistration(registered: registered != 0)
        }, arg)
    }

    /// Runs the process handler `cycles` times outside JACK, on scratch buffers of the current
    /// buffer size, so that Swift's one-time work (type metadata, lazy initialisation) happens
    /// here and not on the real-time thread. Call after `setHandlers`, before `activate`.
    public func warmUp(cycles: Int = 4) {
        guard let process = context?.takeUnretainedValue().process else { return }
        let frames = max(1, bufferSize)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        scratch.initialize(repeating: 0, count: frames)
        defer { scratch.deallocate() }
        for _ in 0..<cycles {
            _ = process.process(ProcessScope(frames: frames, scratch: scratch, cycleStartMicroseconds: 0))
        }
    }

    /// Starts processing: from now on JACK calls the process handler every cycle.
    public func activate() throws(JackError) {
        guard let handle, RequestWatch.timed("activating the client \(name)", { requests.withLock { _ in jack_activate(handle) } }) == 0 else {
            throw .activationFailed
        }
        active = true
    }

    /// Full names of the ports whose names match the POSIX extended regular expression
    /// `pattern` (unanchored, as `jack_lsp` and `jack_get_ports` match), optionally only audio
    /// ports, and only those with `direction` as seen by their owner. In the server's order.
    public func portNames(matching pattern: String, audioOnly: Bool = true, direction: PortDirection? = nil)
        throws(JackError) -> [String]
    {
        var regex = regex_t()
        guard regcomp(&regex, pattern, REG_EXTENDED | REG_NOSUB) == 0 else { throw .invalidPattern(pattern) }
        regfree(&regex)
        guard let handle else { return [] }
        // The graph in shared memory: no request to the server.
        guard let list = jack_get_ports(handle, pattern, audioOnly ? JACK_DEFAULT_AUDIO_TYPE : nil, direction?.flags ?? 0)
        else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        var names: [String] = []
        var i = 0
        while let p = list[i] {
            names.append(String(cString: p))
            i += 1
        }
        return names
    }

    /// Connects output port `source` to input port `destination` (full names). Connecting
    /// ports that are already connected is not an error. The client must be active.
    public func connect(_ source: String, to destination: String) throws(JackError) {
        guard let handle else { throw .activationFailed }
        let code = RequestWatch.timed("connecting \(source) to \(destination)", { requests.withLock { _ in jack_connect(handle, source, destination) } })
        guard code == 0 || code == EEXIST else {
            throw .connectionFailed(source: source, destination: destination, code: code)
        }
    }

    /// Sets a metadata property on a port (`type` nil for plain text).
    ///
    /// An internal client cannot: jackd's own copy of the metadata API refuses it (jack2
    /// 1.9.21). Its properties are kept instead and written by `writeDeferredProperties()`
    /// through JACK's `jack_property` tool, an ordinary client of the same server.
    public func setProperty(_ port: AnyPort, key: String, value: String, type: String? = nil) throws(JackError) {
        if adopted {
            deferredProperties.append((port.name, key, value, type))
            return
        }
        guard let handle, RequestWatch.timed("writing the port \(port.name)'s metadata", {
            requests.withLock { _ in jack_set_property(handle, port.uuid, key, value, type) }
        }) == 0 else {
            throw .metadataFailed(port: port.name, key: key)
        }
    }

    private var deferredProperties: [(port: String, key: String, value: String, type: String?)] = []
    /// How long `close` lets the metadata helper finish its current jack_property (a write
    /// takes milliseconds; one still waiting for the server after this is killed, which is
    /// safe then: it is not inside the database).
    static let helperGrace = 0.2
    /// The metadata helpers started (in process); ended and reaped by `close`.
    private var helpers: [pid_t] = []

    /// In process: writes the kept properties with `jack_property --port -s …`, one call each
    /// (a failed call tried again, twice), from a shell started in the background (about 15 ms
    /// a property; the ports exist
    /// already; `close` ends it between two calls if it still runs). The server is the one named on jackd's command line (`-n`), else
    /// `$JACK_DEFAULT_SERVER`, else the default. Returns at once.
    public func writeDeferredProperties() {
        guard adopted, !deferredProperties.isEmpty else { return }
        func quoted(_ s: String) -> String { "'" + s.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'" }
        // Each property on its own, tried up to three times: one call that fails (the server
        // busy, under load) must not cost the rest (chained with &&, one failure lost every
        // later property: the inputs', written last; InProcessTests saw it with both cores
        // busy).
        // SIGTERM (from `close`) ends the shell between calls, never a jack_property inside
        // its write to JACK's metadata database (Berkeley DB: a lock left held by a killed
        // writer hangs every later client of every server on the machine).
        let script = "trap 'exit 0' TERM; " + deferredProperties.map { p in
            let call = (["jack_property", "--port", "-s", p.port, p.key, p.value] + (p.type.map { [$0] } ?? [])).map(quoted).joined(separator: " ")
            return "for i in 1 2 3; do \(call) && break; sleep 0.1; done"
        }.joined(separator: "; ")
        deferredProperties = []
        var environment = ChildProcess.environment
        if let name = Client.serverNameOfThisProcess() { environment["JACK_DEFAULT_SERVER"] = name }
        // No thread is left waiting for it: inside jackd, code of jackvu.so still running after
        // `jack_unload` unmapped the library would crash the server (reaped in `close`).
        if case .success(let pid) = ChildProcess.spawn(["/bin/sh", "-c", script], environment: environment, output: .null, defaultSignals: true) {
            helpers.append(pid)
        }
    }

    /// The server name on this process's command line (`jackd -n NAME`, `--name NAME`), if
    /// this is a server with one.
    static func serverNameOfThisProcess() -> String? {
        guard let f = fopen("/proc/self/cmdline", "r") else { return nil }
        defer { fclose(f) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, f)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        for (i, a) in arguments.enumerated() {
            if (a == "-n" || a == "--name"), i + 1 < arguments.count { return arguments[i + 1] }
            if a.hasPrefix("--name=") { return String(a.dropFirst(7)) }
            if a == "-d" { break }  // the driver's options follow
        }
        return nil
    }

    /// Stops processing and closes the client, waiting at most `limit` seconds for libjack
    /// (0: not at all). The handlers are released once JACK has stopped calling them, on
    /// the closing thread. Safe to call twice.
    ///
    /// The ports' metadata is not removed here: JACK removes a port's properties when the
    /// port goes (checked with jack_property), and a second removal from this process only
    /// adds a writer to JACK's shared metadata database (a Berkeley DB without deadlock
    /// detection) while the server removes the same keys.
    ///
    /// The ports are unregistered before the close, while libjack still reads the client's
    /// notifications: jackd (1.9.21) tells every client, the closing one too, of each property
    /// it removes with a port, and at `jack_client_close` this client no longer reads them —
    /// from about 30 ports on, their notifications filled its socket and the server's request
    /// thread blocked writing to it until this process ended (every stop took the full
    /// `closeLimit`, jackd answered no other client meanwhile, and wrote "Broken pipe").
    public func close(within limit: Double = Client.closeLimit, serverGone: Bool = false) {
        guard let handle else { return }
        // After the server shut down, only jack_client_close (JACK's documentation of the
        // shutdown callbacks): a deactivation has no server to ask.
        let wasActive = active && !serverGone
        active = false
        let unregister = serverGone ? [] : ports.map(\.raw)
        ports.removeAll()
        self.handle = nil
        if adopted {
            // The server closes an internal client itself (after jack_finish), and may still
            // deliver a notification until then: the handlers' context stays.
            if wasActive { jack_deactivate(handle) }
            for pid in helpers { ChildProcess.stop(pid, grace: Client.helperGrace) }
            helpers = []
            return
        }
        let context = self.context
        self.context = nil
        _ = Client.closeWithin(limit, handle: handle, deactivate: wasActive, unregister: unregister, context: context)
    }

    /// How long a client's open may take before its server counts as not answering, in
    /// seconds. A server answers in milliseconds, under load in a second or two; a stopped
    /// or hung one (SIGSTOP, a driver stuck, JACK's metadata database locked by a client
    /// killed inside a write) never does, and libjack waits for it without a limit — with
    /// jackvu's signals blocked, SIGTERM too.
    public static let openLimit = 10.0

    /// `jack_client_open` on a thread of its own, waiting up to `seconds` for it: its client
    /// and status, or nil when it did not return in time (a client it opens after that is
    /// closed on its thread).
    private static func openWithin(_ seconds: Double, name: String, options: jack_options_t, server: String?)
        -> (OpaquePointer?, jack_status_t)?
    {
        final class Opening: @unchecked Sendable {
            // @unchecked Sendable: `result` and `abandoned` are read and written under `state`
            // (the handle as its address: a pointer is not Sendable).
            let name: String, server: String?, options: jack_options_t
            let done = WakeSignal()
            let state = Mutex<(result: (handle: Int, status: UInt32)?, abandoned: Bool)>((nil, false))
            init(name: String, server: String?, options: jack_options_t) {
                (self.name, self.server, self.options) = (name, server, options)
            }
            func run() {
                var status = jack_status_t(rawValue: 0)
                let handle = jackvu_client_open(name, options, &status, server)
                let late = state.withLock { s -> Bool in
                    if !s.abandoned { s.result = (Int(bitPattern: handle), status.rawValue) }
                    return s.abandoned
                }
                if late, let handle { jack_client_close(handle) }
                done.signal()
            }
        }
        let opening = Opening(name: name, server: server, options: options)
        if !runDetached({ opening.run() }) { opening.run() }
        _ = opening.done.wait(timeout: seconds)
        let result = opening.state.withLock { s in
            if s.result == nil { s.abandoned = true }
            return s.result
        }
        return result.map { (OpaquePointer(bitPattern: $0.handle), jack_status_t(rawValue: $0.status)) }
    }

    /// Runs `body` on a detached thread of its own; false if no thread could be started.
    private static func runDetached(_ body: @escaping @Sendable () -> Void) -> Bool {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let retained = Unmanaged.passRetained(Box(body))
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        defer { pthread_attr_destroy(&attributes) }
        let started = pthread_create(&thread, &attributes, { arg in
            Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue().body()
            return nil
        }, retained.toOpaque())
        if started != 0 { retained.release() }
        return started == 0
    }

    /// How long `close` waits for libjack by default, in seconds.
    public static let closeLimit = 3.0

    /// Deactivates and closes `handle` on a thread of its own, then releases `context`, and
    /// waits up to `seconds` for that. libjack can wait for ever in jack_client_close after its
    /// server went away (jack2 issue 395: a notification thread killed while it held a
    /// mutex): jackvu must still end, or open a new client. Returns whether the close finished.
    private static func closeWithin(
        _ seconds: Double, handle: OpaquePointer, deactivate: Bool, unregister: [OpaquePointer], context: Unmanaged<CallbackContext>?
    ) -> Bool {
        final class Closing: @unchecked Sendable {
            let handle: OpaquePointer
            let deactivate: Bool
            let unregister: [OpaquePointer]
            let context: Unmanaged<CallbackContext>?
            let done = WakeSignal()
            init(handle: OpaquePointer, deactivate: Bool, unregister: [OpaquePointer], context: Unmanaged<CallbackContext>?) {
                self.handle = handle
                self.deactivate = deactivate
                self.unregister = unregister
                self.context = context
            }
            func run() {
                if deactivate { jack_deactivate(handle) }
                for port in unregister { jack_port_unregister(handle, port) }
                jack_client_close(handle)
                context?.release()
                done.signal()
            }
        }
        let closing = Closing(handle: handle, deactivate: deactivate, unregister: unregister, context: context)
        guard runDetached({ closing.run() }) else {
            // No thread to spare: close here, without a limit.
            closing.run()
            return true
        }
        if seconds <= 0 { return false }
        return closing.done.wait(timeout: seconds)
    }

    /// Whether libjack is PipeWire's (`pw-jack`, or pipewire-jack installed as the system's).
    public static var isPipeWire: Bool { String(cString: jack_get_version_string()).contains("PipeWire") }

    /// JACK2 reports a taken exact name as a general failure: ask the server, through a
    /// short-lived client with a unique name, whether a client of that name exists.
    private static func nameTaken(_ name: String, server: String?) -> Bool {
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue)
        guard let probe = jackvu_client_open("jackvu-probe-\(getpid())", options, &status, server) else {
            return false
        }
        defer { jack_client_close(probe) }
        guard let uuid = jack_get_uuid_for_client_name(probe, name) else { return false }
        jack_free(uuid)
        return true
    }

    /// libjack prints its own diagnostics to stderr ("Cannot connect to server socket", …);
    /// jackvu reports errors in one line of its own, so those go nowhere unless
    /// `JACKVU_JACK_DEBUG=1`.
    private static func routeLibraryMessages() {
        if let debug = getenv("JACKVU_JACK_DEBUG"), String(cString: debug) == "1" {
            jack_set_error_function { message in
                guard let message else { return }
                let line = "libjack: \(String(cString: message))\n"
                _ = line.withCString { write(2, $0, strlen($0)) }
            }
            return
        }
        jack_set_error_function { _ in }
        jack_set_info_function { _ in }
    }

    /// JACK's microsecond clock now (the clock of `ProcessScope.cycleStartMicroseconds`).
    /// Any thread; real-time safe.
    public static func microsecondsNow() -> UInt64 { UInt64(jack_get_time()) }

    /// Whether this binary was linked with RealtimeSanitizer (`-fsanitize=realtime`), which
    /// then checks every process cycle.
    public static var realtimeSanitizerLinked: Bool { jackvu_rtsan_linked() != 0 }
}

extension Client {
    /// Sets a metadata property on a port of any kind (`setProperty(_:key:value:type:)`).
    public func setProperty<Kind: PortKind>(_ port: Port<Kind>, key: String, value: String, type: String? = nil) throws(JackError) {
        try setProperty(port.any, key: key, value: value, type: type)
    }
}
