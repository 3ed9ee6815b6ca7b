#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Consumers
import Settings
import DSP
import Jack
import LoudnessLog
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
    private let outputMakers: [OutputMaker]

    /// Makes an output the host plugs in (a display, the Prometheus metrics: the modules the
    /// engine does not link) once the engine knows the run; its errors end the run with their
    /// exit status. (An `EngineError` keeps its status; any other error exits 70.)
    public typealias OutputMaker = (DisplayContext) throws -> any SnapshotOutput

    /// The client the server gave jackvu (in process: `jack_load`), or nil: jackvu opens its
    /// own, named `--name`.
    private let adopted: Client?
    private let events: EngineEvents
    /// The ports every client of the run registers.
    private let ports: PortPlan

    /// With `client`, the engine runs in process (inside jackd, as an internal client): on
    /// that client, without signals (`stop()` ends it), without reconnecting (the server's
    /// end is the process's), and without touching process-wide settings (SIGPIPE, libjack's
    /// message functions).
    public init(
        configuration: Configuration, sink: FileDescriptorSink = FileDescriptorSink(), outputs: [OutputMaker] = [],
        client: Client? = nil
    ) throws(EngineError) {
        do { try configuration.validate() } catch { throw EngineError(.usage, error.description) }
        self.configuration = configuration
        self.sink = sink
        outputMakers = outputs
        adopted = client
        events = EngineEvents(inProcess: client != nil)
        ports = PortPlan(configuration)
    }

    /// Ends `run()` as SIGTERM would (from any thread).
    public func stop() { events.stop(.signal) }

    /// Called once, on the calling thread, when the client is active with its ports connected
    /// (a session manager is told then that jackvu is ready), with the client's real name.
    public var onStarted: ((_ clientName: String) -> Void)?

    /// The log's file (`--log`), claimed for this run; nil without one.
    static func claimLog(_ c: Configuration) throws(EngineError) -> LogFile? {
        guard let path = c.log else { return nil }
        do { return try LogWriter.claim(path) } catch {
            throw EngineError(error.kind == .inUse ? .nameInUse : .cannotCreate, error.description)
        }
    }

    /// What the displays are told of the run, and the keys' actions: a reset, quitting,
    /// a programme's reset, pausing and resuming integration (taken by the worker within a
    /// period).
    static func displayContext(
        _ c: Configuration, clientName: String, shared: EngineState, wake: WakeSignal, events: EngineEvents,
        reset requestReset: @escaping @Sendable () -> Void, history: LoudnessHistory
    ) -> DisplayContext {
        DisplayContext(
            clientName: clientName, channels: c.channels, meter: c.meterScale, barsFromHz: c.barsFromHz,
            barsToHz: c.barsToHz, holdSeconds: c.holdSeconds, rate: c.rate, skipped: shared.outputSkipped,
            reset: requestReset, quit: { events.stop(.signal) },
            resetProgramme: { p in
                if let p { shared.programmeResets.bitwiseOr(1 << UInt64(p), ordering: .relaxed) } else { requestReset() }
                wake.signal()
            },
            setIntegration: { p, paused in
                // One programme or every one.
                let bits = p.map { UInt64(1) << UInt64($0) } ?? Engine.everyProgramme(c)
                if paused {
                    shared.programmePauses.bitwiseOr(bits, ordering: .relaxed)
                } else {
                    shared.programmeResumes.bitwiseOr(bits, ordering: .relaxed)
                }
            },
            history: history)
    }

    /// Runs until stopped. Returns normally after SIGINT/SIGTERM (or a closed stdout); throws
    /// with the exit status and message for every failure. Not real-time safe; call from the
    /// main thread, before any other thread exists (it blocks SIGINT, SIGTERM, SIGHUP and
    /// SIGUSR1 in every thread it starts, and waits for them here). SIGHUP restarts the
    /// measurements (integrated loudness, loudness range, maxima, clip counts) without
    /// stopping. When the server goes away, the JACK side (`ConnectionKeeper`) is closed and
    /// opened again once a server of that name is back; everything else goes on.
    public func run() throws(EngineError) {
        var signals = Engine.blockSignals(ignoringSIGPIPE: adopted == nil)
        let c = configuration
        // The main thread's requests to the server bounded as its open is: a server that stops
        // answering between them (at the start, or at a reconnection) ends jackvu after 10 s
        // with one line instead of holding it for good. Out of process: in process this is
        // jackd's thread.
        let watch = adopted == nil ? RequestWatch.endingTheProcess(server: c.client.server, status: ExitStatus.unavailable.rawValue, say: printError) : nil
        defer { watch?.stop() }
        let wake = WakeSignal()
        let events = self.events
        let features = Analyzer.Features.needed(for: c, midiNotes: c.midiNotes)
        let shared = EngineState(neededFeatures: features, outputRate: c.rate)
        let notifications = Notifications(shared: shared, events: events)

        // The log's file, before anything else: a link, a device, another application's
        // database or a log another jackvu writes ends the run here (73, 75).
        let logFile = try Engine.claimLog(c)

        // The first client: the server's sample rate sizes the analysis.
        let first = try firstConnection(notifications)
        var started = false
        defer { if !started { first.close() } }
        // The client's real name: under PipeWire a name in use becomes NAME-2 (see
        // `Client.init`). Every output uses the real one.
        let clientName = first.client.name
        Engine.reportName(clientName, asked: c.clientName)
        let (analyzer, capture) = try Engine.analysis(c, ports: ports, client: first.client, features: features, shared: shared, wake: wake)
        let requestReset = Engine.resetRequest(shared, wake)
        let side = try outputSide(c, capture: capture, shared: shared, wake: wake, clientName: clientName, reset: requestReset)
        defer { for o in side.plugged { o.stop() } }

        // Ports: only now, after the slow setup (FFT planning), shortly before the client is
        // active and can be connected to.
        notifications.capture = capture
        try first.registerPorts(capture: capture)
        capture.resetStatistics()

        let running = Running(
            self, first: first, analyzer: analyzer, capture: capture, shared: shared, wake: wake, notifications: notifications,
            outputs: side.factory.outputs(plugged: side.plugged, stdout: stdoutWriter(shared)),
            observers: Engine.observers(c, ports: ports, capture: capture, history: side.history, clientName: clientName, logFile: logFile),
            controlInput: side.controlInput)
        let (control, observers, udp, rejected) = (running.control, running.observers, side.factory.udp, side.controlInput?.rejected)
        running.start { command in
            Engine.apply(command, configuration: c, shared: shared, control: control, udp: udp, reset: requestReset, rejected: rejected, observers: observers)
        }
        started = true
        defer { running.stop() }
        try running.keeper.start()
        onStarted?(clientName)

        try waitUntilStopped(running.keeper, &signals, reset: requestReset)
        // Otherwise a signal, `q`, or a closed stdout (which ends jackvu quietly, like other filters).
        if events.stopReason == .outputFailed { throw EngineError(.ioError, (outputError.take() ?? "stdout") + ": stopping") }
    }

    /// Asks the worker to restart the measurements (SIGHUP, the displays' key, the control
    /// input's `reset`), within a period.
    private static func resetRequest(_ shared: EngineState, _ wake: WakeSignal) -> @Sendable () -> Void {
        {
            shared.resetRequested.store(true, ordering: .relaxed)
            wake.signal()
        }
    }

    /// The output side of a run, made before any port appears: a bad address ends the run
    /// before anything is connected; the displays last (the terminal display takes the
    /// terminal over; the caller stops `plugged` on every way out to give it back).
    private struct OutputSide {
        let controlInput: ControlInput?
        let factory: OutputFactory
        /// The programmes' loudness over the last hour, for the displays' history graphs.
        let history: LoudnessHistory
        /// What the host plugged in (the displays, the metrics), made.
        let plugged: [any SnapshotOutput]
    }

    private func outputSide(_ c: Configuration, capture: CaptureBuffers, shared: EngineState, wake: WakeSignal, clientName: String,
                            reset: @escaping @Sendable () -> Void) throws(EngineError) -> OutputSide {
        let controlInput = try Engine.controlInput(c)
        let factory = try OutputFactory(
            settings: c.output, oscPort: capture.oscQueue.map { ($0, capture.oscMaxEvent) }, sendFailures: shared.oscSendFailures,
            controlRejected: controlInput?.rejected)
        let history = LoudnessHistory(programmes: c.resolvedProgrammes.map(\.name))
        let plugged = try makeOutputs(Engine.displayContext(
            c, clientName: clientName, shared: shared, wake: wake, events: events, reset: reset, history: history))
        return OutputSide(controlInput: controlInput, factory: factory, history: history, plugged: plugged)
    }

    /// A live run's observers (`Observers.make`): the meter ports, the notes (`--midi-notes`), the alarms
    /// (`--alarm`, on the monotonic clock, with `--on-alarm` and the alarm ports), the log
    /// (`--log`, at each published update: `logFile` is its file as the start claimed it), and
    /// the displays' loudness history.
    private static func observers(_ c: Configuration, ports: PortPlan, capture: CaptureBuffers, history: LoudnessHistory,
                                  clientName: String, logFile: LogFile?) -> ObserverList {
        let programmes = c.resolvedProgrammes
        var plan = ObserverPlan()
        plan.meterPorts = (capture.meterValues, ports.channels)
        plan.notes = capture.notesQueue.map { ($0, c.channels) }
        plan.log = c.logging.path.map {
            LogWriter(path: $0, programmes: programmes.map { LoggedProgramme(name: $0.name, channels: $0.channels, target: $0.target) },
                      retentionDays: c.logging.retentionDays, file: logFile)
        }
        if !c.alarming.rules.isEmpty {
            plan.alarms = AlarmEngine(rules: c.alarming.rules)
            plan.alarmPorts = (capture.meterValues, ports.channels, ports.alarms.count)
            plan.command = c.alarming.command.map {
                AlarmCommandRunner(command: $0, timeout: c.alarming.commandTimeout, clientName: clientName, programmeNames: programmes.map(\.name))
            }
        }
        plan.history = history
        return Observers.make(plan)
    }

    /// The first client: the one the server gave (in process), or one of our own.
    private func firstConnection(_ notifications: Notifications) throws(EngineError) -> JackConnection {
        if let adopted { return JackConnection(adopting: adopted, configuration.client, ports: ports, notifications: notifications) }
        return try JackConnection(configuration.client, ports: ports, notifications: notifications)
    }

    /// The outputs the host plugs in, made in order; when one fails, those made before it are
    /// stopped (the terminal given back) and its error ends the run.
    private func makeOutputs(_ context: DisplayContext) throws(EngineError) -> [any SnapshotOutput] {
        var made: [any SnapshotOutput] = []
        for make in outputMakers {
            do { made.append(try Engine.output(make, context)) } catch {
                for d in made { d.stop() }
                throw error
            }
        }
        return made
    }

    /// The analysis for the first client's sample rate, and the capture buffers, which outlive
    /// every client.
    private static func analysis(
        _ c: Configuration, ports: PortPlan, client: Client, features: Analyzer.Features, shared: EngineState, wake: WakeSignal
    ) throws(EngineError) -> (Analyzer, CaptureBuffers) {
        let analyzer: Analyzer
        do { analyzer = try Analyzer(configuration: c, sampleRate: client.sampleRate, features: features) } catch {
            throw EngineError(.software, error.description)
        }
        shared.serverSampleRate.store(client.sampleRate)
        shared.serverBufferSize.store(client.bufferSize)
        let capture = CaptureBuffers(
            ports: ports, followTransport: c.followTransport, canary: c.realtimeCanary, sampleRate: client.sampleRate, wake: wake)
        return (analyzer, capture)
    }

    /// Why the stream on stdout failed, when it did (said as the run ends).
    private let outputError = NewestValue<String>()

    /// The text or JSON stream on stdout (nil without one): a closed reader ends the run
    /// quietly, any other failure with 74.
    private func stdoutWriter(_ shared: EngineState) -> StdoutWriter? {
        guard configuration.stdoutStream else { return nil }
        let events = self.events, outputError = self.outputError
        return StdoutWriter(sink: sink, skipped: shared.outputSkipped) { error in
            if case .closed = error {
                events.stop(.outputClosed)  // the reader went away: end quietly
            } else {
                outputError.put(error.description)
                events.stop(.outputFailed)
            }
        }
    }

    /// The threads of a run — the worker, the output loop, the alarms' and the log's, the
    /// control input's — and the keeper of the JACK connection; started together, stopped in
    /// order.
    private final class Running {
        let keeper: ConnectionKeeper
        let worker: Worker
        let output: OutputLoop
        let outputs: [any SnapshotOutput]
        let control: OutputControl
        let observers: ObserverList
        let controlInput: ControlInput?
        let shared: EngineState
        let wake: WakeSignal

        init(_ engine: Engine, first: JackConnection, analyzer: Analyzer, capture: CaptureBuffers, shared: EngineState, wake: WakeSignal,
             notifications: Notifications, outputs: [any SnapshotOutput], observers: ObserverList, controlInput: ControlInput?)
        {
            let c = engine.configuration
            let snapshots = TripleBuffer { analyzer.makeSnapshot() }
            control = OutputControl(rate: c.rate)
            output = OutputLoop(snapshots: snapshots, settings: c.output, outputs: outputs, shared: shared, control: control)
            worker = Worker(
                settings: c.analysis, workers: c.resolvedWorkers, stall: c.testStallWorker, analyzer: analyzer, capture: capture, snapshots: snapshots, shared: shared,
                outputWake: output.wake, controlRejected: controlInput?.rejected,
                observers: observers,
                outputCounters: OutputCounterRegistry(outputs))
            keeper = ConnectionKeeper(
                first: first, capture: capture, settings: c.client, ports: engine.ports, shared: shared, events: engine.events,
                notifications: notifications, inProcess: engine.adopted != nil)
            self.outputs = outputs
            self.observers = observers
            self.controlInput = controlInput
            self.shared = shared
            self.wake = wake
        }

        /// Starts the threads; the control input's commands go to `apply`.
        func start(apply: @escaping @Sendable (ControlCommand) -> Void) {
            observers.start()
            worker.start()
            output.start()
            controlInput?.start(apply)
        }

        /// Stops JACK calling us first, then the threads that read what it wrote.
        func stop() {
            controlInput?.stop()
            shared.closing.store(true, ordering: .relaxed)
            keeper.close()
            shared.stopping.store(true, ordering: .relaxed)
            wake.signal()
            worker.join()
            output.join()
            for o in outputs { o.stop() }
            observers.stop()
        }
    }

    /// Waits for signals (SIGUSR1 comes from our own threads and JACK's notifications) and
    /// lets the keeper act on each event; while the server is gone, wakes up to try again.
    /// Returns when the run is to end; throws (69) when the server went away for good.
    private func waitUntilStopped(
        _ keeper: ConnectionKeeper, _ signals: inout sigset_t, reset: () -> Void
    ) throws(EngineError) {
        while true {
            let received = waitForEvent(&signals, retryAfter: keeper.retryDelay)
            if received == SIGHUP {  // restart the measurements
                reset()
                continue
            }
            if received == SIGINT || received == SIGTERM { events.stop(.signal, signal: false) }
            if events.stopReason != .running { return }
            if !keeper.step() {
                events.stop(.serverShutdown, signal: false)
                let reason = events.shutdownReason
                throw EngineError(.unavailable, "the JACK server shut down" + (reason.isEmpty ? "" : " (\(reason))"))
            }
        }
    }

    /// Blocks the signals the engine waits for in this thread and every thread it starts.
    private static func blockSignals(ignoringSIGPIPE: Bool) -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGUSR1, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        if ignoringSIGPIPE { signal(SIGPIPE, SIG_IGN) }
        return signals
    }

    /// The next signal (0 in process, where the engine's own events wake it instead, and when
    /// `retryAfter` seconds pass first).
    private func waitForEvent(_ signals: inout sigset_t, retryAfter delay: Double?) -> Int32 {
        if adopted != nil {
            events.waitForWake()
            return 0
        }
        if let delay {
            var timeout = Engine.timespec(seconds: delay)
            return max(0, sigtimedwait(&signals, nil, &timeout))
        }
        var received: Int32 = 0
        sigwait(&signals, &received)
        return received
    }

    /// The OSC control input (`--listen`), bound now: a bad address ends the run first.
    private static func controlInput(_ c: Configuration) throws(EngineError) -> ControlInput? {
        guard let listen = c.listen else { return nil }
        do {
            return try ControlInput(
                endpoint: listen, prefix: c.prefix, allowed: c.controlFrom.isEmpty ? AddressRange.loopback : c.controlFrom)
        } catch {
            throw EngineError(OutputFactory.status(for: error), "--listen: \(error.description)")
        }
    }

    /// A display from its factory; its errors end the run with their status (any error other
    /// than an `EngineError`: 70).
    private static func output(_ make: OutputMaker, _ context: DisplayContext) throws(EngineError) -> any SnapshotOutput {
        do { return try make(context) } catch let error as EngineError { throw error } catch {
            throw EngineError(.software, "\(error)")
        }
    }

    /// Every programme of `c` as a bit set (bit p: programme p; at most 32 programmes).
    private static func everyProgramme(_ c: Configuration) -> UInt64 {
        let n = c.resolvedProgrammes.count
        return n >= 64 ? ~0 : (1 << UInt64(n)) - 1
    }

    /// What a control command (`--listen`) does; on the control input's thread.
    private static func apply(
        _ command: ControlCommand, configuration c: Configuration, shared: EngineState, control: OutputControl,
        udp: OSCUDPOutput?, reset: () -> Void, rejected: Counter?, observers: ObserverList?
    ) {
        // A programme by name (nil: all of them) as a bit set; a name that is no programme's
        // is counted as a rejected command.
        func programmes(_ name: String?) -> UInt64? {
            let names = c.resolvedProgrammes.map(\.name)
            guard let name else { return Engine.everyProgramme(c) }
            guard let p = names.firstIndex(of: name) else {
                rejected?.add()
                return nil
            }
            return 1 << UInt64(p)
        }
        switch command {
        case .reset:
            reset()
        case .resetProgramme(let name):
            // The worker takes it at its next look (within a period).
            if let bits = programmes(name) { shared.programmeResets.bitwiseOr(bits, ordering: .relaxed) }
        case .pause(let name):
            if let bits = programmes(name) { shared.programmePauses.bitwiseOr(bits, ordering: .relaxed) }
        case .resume(let name):
            if let bits = programmes(name) { shared.programmeResumes.bitwiseOr(bits, ordering: .relaxed) }
        case .rate(let r):
            control.rate = r
            shared.outputRate.store(r.bitPattern, ordering: .relaxed)
        case .send(let kinds):
            var needed = c
            needed.send = kinds
            shared.neededFeatures.store(Analyzer.Features.needed(for: needed, midiNotes: c.midiNotes).rawValue, ordering: .relaxed)
            control.kinds.withLock { $0 = kinds }
        case .subscribe(let endpoint):
            udp?.request(.add(endpoint))
        case .unsubscribe(let endpoint):
            udp?.request(.remove(endpoint))
        case .confirm(let token, let host):
            udp?.request(.confirm(token: token, host: host))
        case .mark(let label):
            // A segment boundary for reports (`jackvu report --segments marks`).
            observers?.event("mark", detail: label)
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
        if portAppeared { portsAppeared.store(true, ordering: .releasing) }
        if !graphChanged.exchange(true, ordering: .acquiringAndReleasing) { wake() }
    }

    func takeServerGone() -> Bool { serverGone.exchange(false, ordering: .relaxed) }
    func takeGraphChanged() -> Bool { graphChanged.exchange(false, ordering: .acquiringAndReleasing) }
    func takePortsAppeared() -> Bool { portsAppeared.exchange(false, ordering: .acquiringAndReleasing) }
}

/// Server notifications: counters, and events for the main thread. Called on JACK's
/// notification thread (never call libjack here).
final class Notifications: NotificationHandler {
    let shared: EngineState
    let events: EngineEvents

    init(shared: EngineState, events: EngineEvents) {
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
    nonisolated(unsafe) var capture: CaptureBuffers?
}
