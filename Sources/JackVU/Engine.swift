#if canImport(Glibc)
import Glibc
#endif
import DSP
import Jack
import Outputs
import Realtime
import Synchronization

/// The engine: wires JACK → ring → worker → snapshot → outputs, runs until SIGINT/SIGTERM
/// (or until the server or stdout goes away), then shuts everything down in order.
///
/// Threads: JACK's real-time thread runs `CaptureProcessor`; the worker thread runs the
/// `Analyzer`; the output thread prints text; the calling thread only sets up, waits for a
/// signal and tears down.
public final class Engine {
    public let configuration: Configuration
    private let sink: FileDescriptorSink
    private let displayFactories: [DisplayFactory]

    /// Makes a display once the engine knows what it shows; its errors end the run with their
    /// exit status.
    /// (An `EngineError` keeps its status; any other error exits 70.)
    public typealias DisplayFactory = (DisplayContext) throws -> any Display

    /// The client the server gave jackvu (in process: `jack_load`), or nil: jackvu opens its
    /// own, named `--name`.
    private let adopted: Client?
    private let events: EngineEvents

    /// With `client`, the engine runs in process (inside jackd, as an internal client): on
    /// that client, without signals (`stop()` ends it), without reconnecting (the server's
    /// end is the process's), and without touching process-wide settings (SIGPIPE, libjack's
    /// message functions).
    public init(
        configuration: Configuration, sink: FileDescriptorSink = FileDescriptorSink(), displays: [DisplayFactory] = [],
        client: Client? = nil
    ) throws(EngineError) {
        do { try configuration.validate() } catch { throw EngineError(.usage, error.description) }
        self.configuration = configuration
        self.sink = sink
        displayFactories = displays
        adopted = client
        events = EngineEvents(inProcess: client != nil)
    }

    /// Ends `run()` as SIGTERM would (from any thread).
    public func stop() { events.stop(.signal) }

    /// Called once, on the calling thread, when the client is active with its ports connected
    /// (a session manager is told then that jackvu is ready), with the client's real name.
    public var onStarted: ((_ clientName: String) -> Void)?

    /// Waits between attempts to reach a server that went away: 0.1 s, doubling to 1 s.
    static let reconnectDelays: [Double] = [0.1, 0.2, 0.4, 0.8, 1.0]

    /// Runs until stopped. Returns normally after SIGINT/SIGTERM (or a closed stdout); throws
    /// with the exit status and message for every failure. Not real-time safe; call from the
    /// main thread, before any other thread exists (it blocks SIGINT, SIGTERM, SIGHUP and
    /// SIGUSR1 in every thread it starts, and waits for them here). SIGHUP restarts the
    /// measurements (integrated loudness, loudness range, maxima, clip counts) without
    /// stopping. When the server goes away, the JACK side (`JackConnection`) is closed and
    /// opened again once a server of that name is back; everything else goes on.
    public func run() throws(EngineError) {
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGUSR1, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        if adopted == nil { signal(SIGPIPE, SIG_IGN) }

        let c = configuration
        let wake = WakeSignal()
        let events = self.events
        let features = Analyzer.Features.needed(for: c, midiNotes: c.midiNotes)
        let shared = SharedState(neededFeatures: features)
        let notifications = Notifications(shared: shared, events: events)

        // The first client: the server's sample rate sizes the analysis.
        var connection: JackConnection?
        if let adopted {
            connection = JackConnection(adopting: adopted, configuration: c, notifications: notifications)
        } else {
            connection = try JackConnection(configuration: c, notifications: notifications)
        }
        let sampleRate = connection!.client.sampleRate
        // The client's real name: under PipeWire a name in use becomes NAME-2 (see
        // `Client.init`). Every output uses the real one.
        let clientName = connection!.client.name
        Engine.reportName(clientName, asked: c.clientName)
        let analyzer: Analyzer
        do { analyzer = try Analyzer(configuration: c, sampleRate: sampleRate, features: features) } catch {
            connection?.close()
            throw EngineError(.software, error.description)
        }
        // Long-lived capture state: outlives every client.
        let capture = Capture(
            ring: AudioRing(channels: c.channels, minimumCapacity: max(sampleRate, 32768)),
            meterValues: AtomicFloatArray(count: c.channels), wake: wake,
            canary: c.realtimeCanary, oscQueue: c.oscPort ? PacketQueue(minimumCapacity: 1 << 16) : nil,
            notesQueue: c.midiNotes ? PacketQueue(minimumCapacity: 4096) : nil)
        shared.serverSampleRate.store(sampleRate)
        shared.serverBufferSize.store(connection!.client.bufferSize)
        var closeFirst = true
        defer { if closeFirst { connection?.close() } }

        // OSC destinations and the control input, before any port appears: a bad address
        // ends the run before anything is connected.
        var controlInput: ControlInput?
        if let listen = c.listen {
            do {
                controlInput = try ControlInput(
                    endpoint: listen, prefix: c.prefix,
                    allowed: c.controlFrom.isEmpty ? AddressRange.loopback : c.controlFrom)
            } catch {
                throw EngineError(Engine.status(for: error), "--listen: \(error.description)")
            }
        }

        let factory = try OutputFactory(
            configuration: c, oscPort: capture.oscQueue.map { ($0, capture.oscMaxEvent) }, shared: shared,
            controlRejected: controlInput?.rejected)

        // Displays: after everything that can fail on a bad option (the terminal display takes
        // the terminal over; `defer` gives it back on every way out).
        let context = DisplayContext(
            clientName: clientName, channels: c.channels, meter: c.meterScale, barsFromHz: c.barsFromHz,
            barsToHz: c.barsToHz, holdSeconds: c.holdSeconds, rate: c.rate, skipped: shared.outputSkipped,
            reset: {
                shared.resetRequested.store(true, ordering: .relaxed)
                wake.signal()
            },
            quit: { events.stop(.signal) })
        var displays: [any Display] = []
        defer { for d in displays { d.stop() } }
        for make in displayFactories {
            do { displays.append(try make(context)) } catch let error as EngineError { throw error } catch {
                throw EngineError(.software, "\(error)")
            }
        }

        // Ports: only now, after the slow setup (FFT planning), shortly before the client is
        // active and can be connected to.
        notifications.capture = capture
        try connection!.registerPorts(capture: capture)
        capture.resetStatistics()

        let snapshots = TripleBuffer { Snapshot(channels: c.channels, barCount: c.bars, bandCount: analyzer.bandCount) }
        let outputError = Mutex<String>("")
        let stdoutWriter = !c.stdoutStream ? nil : StdoutWriter(sink: sink, skipped: shared.outputSkipped) { error in
            if case .closed = error {
                events.stop(.outputClosed)  // the reader went away: end quietly
            } else {
                outputError.withLock { $0 = error.description }
                events.stop(.outputFailed)
            }
        }
        let control = OutputControl(rate: c.rate)
        let outputs = factory.outputs(displays: displays, stdout: stdoutWriter)
        let output = OutputLoop(snapshots: snapshots, configuration: c, outputs: outputs, shared: shared, control: control)
        let worker = Worker(
            configuration: c, analyzer: analyzer, capture: capture, snapshots: snapshots, shared: shared,
            outputWake: output.wake, controlRejected: controlInput?.rejected)
        worker.start()
        output.start()
        controlInput?.start { command in
            switch command {
            case .reset:
                shared.resetRequested.store(true, ordering: .relaxed)
                wake.signal()
            case .rate(let r):
                control.rate = r
            case .send(let kinds):
                var needed = c
                needed.send = kinds
                shared.neededFeatures.store(
                    Analyzer.Features.needed(for: needed, midiNotes: c.midiNotes).rawValue, ordering: .relaxed)
                control.kinds.withLock { $0 = kinds }
            case .subscribe(let endpoint):
                factory.udp?.request(endpoint, add: true)
            case .unsubscribe(let endpoint):
                factory.udp?.request(endpoint, add: false)
            }
        }
        closeFirst = false
        defer {
            // Order: stop JACK calling us, then the threads that read what it wrote.
            controlInput?.stop()
            connection?.close()
            shared.stopping.store(true, ordering: .relaxed)
            wake.signal()
            worker.join()
            output.join()
            for o in outputs { o.stop() }
        }

        try connection!.activate()
        let unmatched = try connection!.connectInputs(strict: !c.followGraph, announce: true)
        connection!.startFromTheConnections(capture)
        connection!.writeMetadata()
        shared.inputsConnected.store(connection!.connectedInputs)
        connection!.updateMeterConnections(capture)
        for pattern in unmatched {
            printError("--connect '\(pattern)' matches no output port yet; its ports are connected when they appear")
        }
        onStarted?(clientName)

        // Wait for signals (SIGUSR1 comes from our own threads and JACK's notifications);
        // while the server is gone, wake up to try again.
        var attempt = 0
        var received: Int32 = 0
        while true {
            if adopted != nil {
                // In process: no signals; the engine's own events wake it.
                received = 0
                events.waitForWake()
            } else if connection == nil {
                var timeout = Engine.timespec(seconds: Engine.reconnectDelays[min(attempt, Engine.reconnectDelays.count - 1)])
                received = sigtimedwait(&signals, nil, &timeout)
            } else {
                sigwait(&signals, &received)
            }
            if received == SIGHUP {  // restart the measurements
                shared.resetRequested.store(true, ordering: .relaxed)
                wake.signal()
                continue
            }
            if received == SIGINT || received == SIGTERM { events.stop(.signal, signal: false) }
            if events.stopReason != .running { break }

            if events.takeServerGone(), let gone = connection {
                guard c.reconnect && adopted == nil else {
                    events.stop(.serverShutdown, signal: false)
                    break
                }
                let reason = events.shutdownReason
                printError(
                    "the JACK server shut down" + (reason.isEmpty ? "" : " (\(reason))")
                        + "; waiting for it to come back (--no-reconnect exits instead)")
                // The old client is closed before any new one is opened: a jack_client_open
                // (a reconnect attempt) beside libjack's closing of the old client crashed
                // jackvu inside libjack, in 3 of 15 graceful server stops (and never once the
                // close had finished first: 0 of 20). libjack may never finish closing a client
                // whose server died (see Client.close): after 3 s that client's thread and
                // handlers are left to it and reconnecting goes on.
                gone.close(within: Client.closeLimit, serverGone: true)
                connection = nil
                shared.inputsConnected.store(0)
                shared.serverConnected.store(false, ordering: .relaxed)
                attempt = 0
                continue
            }
            if connection == nil {
                // Try again: a server of that name may be back.
                if let fresh = try? JackConnection(configuration: c, notifications: notifications) {
                    do {
                        try fresh.registerPorts(capture: capture)
                        try fresh.activate()
                        _ = try fresh.connectInputs(strict: false, announce: false)
                        fresh.startFromTheConnections(capture)
                        fresh.writeMetadata()
                        connection = fresh
                        shared.serverBufferSize.store(fresh.client.bufferSize)
                        shared.reconnects.add()
                        shared.serverConnected.store(true, ordering: .relaxed)
                        _ = events.takeGraphChanged()
                        _ = events.takePortsAppeared()
                        shared.inputsConnected.store(fresh.connectedInputs)
                        fresh.updateMeterConnections(capture)
                        printError(
                            "connected to the JACK server again (\(fresh.client.sampleRate) Hz, \(fresh.client.bufferSize) frames)")
                        Engine.reportName(fresh.client.name, asked: c.clientName)
                    } catch {
                        fresh.close()
                    }
                }
                if connection == nil { attempt += 1 }
                continue
            }
            if events.takeGraphChanged(), let connection {
                if events.takePortsAppeared() && c.followGraph {
                    _ = try? connection.connectInputs(strict: false, announce: false, onlyNew: true)
                }
                shared.inputsConnected.store(connection.connectedInputs)
                connection.updateMeterConnections(capture)
            }
        }
        switch events.stopReason {
        case .serverShutdown:
            let reason = events.shutdownReason
            throw EngineError(.unavailable, "the JACK server shut down" + (reason.isEmpty ? "" : " (\(reason))"))
        case .outputFailed:
            throw EngineError(.ioError, outputError.withLock { $0 } + ": stopping")
        default:
            // A signal, `q`, or a closed stdout (which ends jackvu quietly, like other filters).
            return
        }
    }

    /// Says so when the client has another name than the one asked for (PipeWire's JACK does
    /// not refuse a name in use: see `Client.init`).
    static func reportName(_ name: String, asked: String) {
        guard name != asked else { return }
        printError("the client name '\(asked)' is taken; this client is '\(name)': its ports are \(name):in_N and \(name):meter_N")
    }

    private static func timespec(seconds: Double) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    }

    /// The exit status for a bad OSC address.
    static func status(for error: OSCAddressError) -> ExitStatus {
        switch error {
        case .malformed, .badRange: return .usage
        case .unresolvable: return .noHost
        case .socket: return .osError
        }
    }
}

/// What the engine's main thread waits for, set by other threads, which then send SIGUSR1
/// to the process to wake it (sigwait).
final class EngineEvents: @unchecked Sendable {
    // @unchecked Sendable: atomics, and a mutex for the reason text.
    /// In process there are no signals to wake the engine with (they would reach jackd): a
    /// semaphore does.
    private let inProcess: Bool
    private let wakeSignal = WakeSignal()

    init(inProcess: Bool = false) { self.inProcess = inProcess }

    /// Wakes the engine's waiting thread.
    private func wake() {
        if inProcess { wakeSignal.signal() } else { kill(getpid(), SIGUSR1) }
    }

    /// In process: waits until woken (or a second passes).
    func waitForWake() { _ = wakeSignal.wait(timeout: 1) }

    private let stopValue = Atomic<Int>(0)
    private let serverGone = Atomic<Bool>(false)
    private let graphChanged = Atomic<Bool>(false)
    private let portsAppeared = Atomic<Bool>(false)
    private let reason = Mutex<String>("")

    enum StopReason: Int { case running = 0, signal, serverShutdown, outputClosed, outputFailed }

    var stopReason: StopReason { StopReason(rawValue: stopValue.load(ordering: .relaxed)) ?? .running }
    var shutdownReason: String { reason.withLock { $0 } }

    /// Asks the run to end (the first reason wins); `signal`: wake the main thread.
    func stop(_ why: StopReason, signal: Bool = true) {
        _ = stopValue.compareExchange(expected: 0, desired: why.rawValue, ordering: .relaxed)
        if signal { wake() }
    }

    func serverShutDown(reason text: String) {
        reason.withLock { $0 = text }
        serverGone.store(true, ordering: .relaxed)
        wake()
    }

    /// A port was registered (`--connect` may match it) or the graph changed otherwise.
    func graphChanged(portAppeared: Bool) {
        if portAppeared { portsAppeared.store(true, ordering: .relaxed) }
        if !graphChanged.exchange(true, ordering: .relaxed) { wake() }
    }

    func takeServerGone() -> Bool { serverGone.exchange(false, ordering: .relaxed) }
    func takeGraphChanged() -> Bool { graphChanged.exchange(false, ordering: .relaxed) }
    func takePortsAppeared() -> Bool { portsAppeared.exchange(false, ordering: .relaxed) }
}

/// Server notifications: counters, and events for the main thread. Called on JACK's
/// notification thread (never call libjack here).
final class Notifications: NotificationHandler {
    let shared: SharedState
    let events: EngineEvents

    init(shared: SharedState, events: EngineEvents) {
        self.shared = shared
        self.events = events
    }

    func serverShutdown(reason: String) { events.serverShutDown(reason: reason) }
    func xrun() { shared.xruns.add() }
    func sampleRateChanged(_ rate: Int) { shared.serverSampleRate.store(rate) }
    func bufferSizeChanged(_ frames: Int) { shared.serverBufferSize.store(frames) }
    func portRegistration(registered: Bool) { events.graphChanged(portAppeared: registered) }
    func connectionChanged() { events.graphChanged(portAppeared: false) }
    func freewheel(_ on: Bool) {
        capture?.freewheeling.store(on ? 1 : 0)
        capture?.space.signal()
    }
    /// Set once the capture state exists (before the first activation).
    nonisolated(unsafe) var capture: Capture?
}

/// Writes `jackvu: MESSAGE` as one line on stderr; control characters in it (from a file or
/// port name) are escaped, so it stays one line and cannot drive the terminal.
public func printError(_ message: String) {
    let line = "jackvu: \(escapedForLine(message))\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}
