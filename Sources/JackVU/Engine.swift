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

    /// Why the run is stopping (0: not yet).
    private enum StopReason: Int {
        case running = 0, signal, serverShutdown, outputClosed
    }

    public init(
        configuration: Configuration, sink: FileDescriptorSink = FileDescriptorSink(), displays: [DisplayFactory] = []
    ) throws(EngineError) {
        do { try configuration.validate() } catch { throw EngineError(.usage, error.description) }
        self.configuration = configuration
        self.sink = sink
        displayFactories = displays
    }

    /// Runs until stopped. Returns normally after SIGINT/SIGTERM; throws with the exit status
    /// and message for every failure. Not real-time safe; call from the main thread, before
    /// any other thread exists (it blocks SIGINT, SIGTERM, SIGHUP and SIGUSR1 in every thread it
    /// starts, and waits for them here). SIGHUP restarts the measurements (integrated
    /// loudness, loudness range, maxima, clip counts) without stopping.
    public func run() throws(EngineError) {
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGUSR1, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        let c = configuration
        let client: Client
        do {
            client = try Client(name: c.clientName, server: c.serverName)
        } catch {
            switch error {
            case .nameInUse: throw EngineError(.nameInUse, error.description)
            case .serverUnavailable: throw EngineError(.unavailable, error.description)
            default: throw EngineError(.unavailable, error.description)
            }
        }
        defer { client.close() }

        // Shared state, preallocated before activation (FFT plans first: they take longest).
        let sampleRate = client.sampleRate
        let features = Analyzer.Features.needed(for: c, midiNotes: c.midiNotes)
        let analyzer: Analyzer
        do { analyzer = try Analyzer(configuration: c, sampleRate: sampleRate, features: features) } catch {
            throw EngineError(.software, error.description)
        }

        // OSC destinations and the control input, before any port appears: a bad address
        // ends the run before anything is connected.
        var senders: [OSCSender] = []
        for url in c.oscDestinations {
            do { senders.append(try OSCSender(endpoint: try OSCEndpoint(url: url))) } catch {
                throw EngineError(Engine.status(for: error), "--osc: \(error.description)")
            }
        }
        var controlInput: ControlInput?
        if let listen = c.listen {
            do {
                controlInput = try ControlInput(endpoint: try OSCEndpoint(url: Configuration.listenURL(listen)), prefix: c.prefix)
            } catch {
                throw EngineError(Engine.status(for: error), "--listen: \(error.description)")
            }
        }

        let wake = WakeSignal()
        let shared = SharedState(neededFeatures: features)
        let stop = Atomic<Int>(StopReason.running.rawValue)

        // Displays: after everything that can fail on a bad option (the terminal display takes
        // the terminal over; `defer` gives it back on every way out).
        let context = DisplayContext(
            clientName: client.name, channels: c.channels, meter: c.meterScale, barsFromHz: c.barsFromHz,
            barsToHz: c.barsToHz, holdSeconds: c.holdSeconds, rate: c.rate, skipped: shared.outputSkipped,
            reset: {
                shared.resetRequested.store(true, ordering: .relaxed)
                wake.signal()
            },
            quit: {
                _ = stop.compareExchange(
                    expected: StopReason.running.rawValue, desired: StopReason.signal.rawValue, ordering: .relaxed)
                kill(getpid(), SIGUSR1)
            })
        var displays: [any Display] = []
        defer { for d in displays { d.stop() } }
        for make in displayFactories {
            do { displays.append(try make(context)) } catch let error as EngineError { throw error } catch {
                throw EngineError(.software, "\(error)")
            }
        }

        // Ports and their metadata: after the slow setup (FFT planning), so that the ports
        // appear only shortly before the client is active and can be connected to.
        var inputs: [Port] = []
        var meters: [Port] = []
        var oscPort: Port?
        var notesPort: Port?
        do {
            for n in 1...c.channels { inputs.append(try client.registerPort(name: "in_\(n)", direction: .input)) }
            for n in 1...c.channels { meters.append(try client.registerPort(name: "meter_\(n)", direction: .output)) }
            if c.oscPort { oscPort = try client.registerPort(name: "osc", direction: .output, type: .midi) }
            if c.midiNotes { notesPort = try client.registerPort(name: "notes", direction: .output, type: .midi) }
        } catch {
            throw EngineError(.software, error.description)
        }
        describePorts(client: client, inputs: inputs, meters: meters, osc: oscPort, notes: notesPort)

        let ring = AudioRing(channels: c.channels, minimumCapacity: max(sampleRate, 32768))
        let meterValues = AtomicFloatArray(count: c.channels)
        shared.serverSampleRate.store(sampleRate)
        shared.serverBufferSize.store(client.bufferSize)
        let snapshots = TripleBuffer { Snapshot(channels: c.channels, barCount: c.bars, bandCount: analyzer.bandCount) }
        let oscQueue = oscPort != nil ? PacketQueue(minimumCapacity: 1 << 16) : nil
        let notesQueue = notesPort != nil ? PacketQueue(minimumCapacity: 4096) : nil
        let processor = CaptureProcessor(
            inputs: inputs, meters: meters, ring: ring, meterValues: meterValues, wake: wake,
            wakeThreshold: analyzer.hopSize, canary: c.realtimeCanary, oscPort: oscPort, oscQueue: oscQueue,
            notesPort: notesPort, notesQueue: notesQueue)
        let shutdownReason = Mutex<String>("")
        let notifications = Notifications(shared: shared) { reason in
            shutdownReason.withLock { $0 = reason }
            stop.store(StopReason.serverShutdown.rawValue, ordering: .relaxed)
            kill(getpid(), SIGUSR1)
        }
        client.setHandlers(process: processor, notifications: notifications)

        // Warm up the process path outside real time, then forget what it produced.
        client.warmUp()
        ring.discardReadable()
        processor.resetStatistics()

        let outputError = Mutex<String>("")
        let stdoutWriter = !c.stdoutStream ? nil : StdoutWriter(sink: sink, skipped: shared.outputSkipped) { error in
            outputError.withLock { $0 = error.description }
            stop.store(StopReason.outputClosed.rawValue, ordering: .relaxed)
            kill(getpid(), SIGUSR1)
        }
        let control = OutputControl(rate: c.rate)
        let output = OutputLoop(
            snapshots: snapshots, configuration: c, stdout: stdoutWriter, senders: senders, oscPort: oscQueue,
            oscPortMaxEvent: processor.oscMaxEvent, displays: displays, shared: shared, control: control)
        let worker = Worker(
            configuration: c, analyzer: analyzer, ring: ring, wake: wake, meterValues: meterValues,
            snapshots: snapshots, shared: shared, processor: processor, outputWake: output.wake,
            oscPortQueue: oscQueue, controlRejected: controlInput?.rejected, notes: notesQueue)
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
                control.subscriptions.withLock { $0.append((endpoint, true)) }
            case .unsubscribe(let endpoint):
                control.subscriptions.withLock { $0.append((endpoint, false)) }
            }
        }
        defer {
            // Order: stop JACK calling us, then the threads that read what it wrote.
            controlInput?.stop()
            client.close()
            shared.stopping.store(true, ordering: .relaxed)
            wake.signal()
            worker.join()
            output.join()
            stdoutWriter?.stop()
        }

        do { try client.activate() } catch { throw EngineError(.software, error.description) }
        try connectInputs(client: client, inputs: inputs)

        // Wait for a signal (SIGUSR1 comes from our own threads).
        var received: Int32 = 0
        while true {
            sigwait(&signals, &received)
            if received == SIGHUP {  // restart the measurements
                shared.resetRequested.store(true, ordering: .relaxed)
                wake.signal()
                continue
            }
            if received == SIGINT || received == SIGTERM {
                _ = stop.compareExchange(
                    expected: StopReason.running.rawValue, desired: StopReason.signal.rawValue,
                    ordering: .relaxed)
            }
            if stop.load(ordering: .relaxed) != StopReason.running.rawValue { break }
        }
        switch StopReason(rawValue: stop.load(ordering: .relaxed)) {
        case .serverShutdown:
            let reason = shutdownReason.withLock { $0 }
            throw EngineError(.unavailable, "the JACK server shut down" + (reason.isEmpty ? "" : " (\(reason))"))
        case .outputClosed:
            throw EngineError(.ioError, outputError.withLock { $0 } + ": stopping")
        default:
            return
        }
    }

    /// JACK metadata: signal type, a pretty name and the order of every port, so patchbays
    /// (qjackctl) show the meters as CV. A server without metadata support only gets a warning.
    private func describePorts(client: Client, inputs: [Port], meters: [Port], osc: Port?, notes: Port?) {
        let floor = Int(configuration.meterFloorDBFS.rounded())
        do {
            for (i, port) in inputs.enumerated() {
                try client.setProperty(port, key: MetadataKey.signalType, value: "AUDIO")
                try client.setProperty(port, key: MetadataKey.prettyName, value: "Input \(i + 1)")
                try client.setProperty(port, key: MetadataKey.order, value: "\(i + 1)", type: MetadataKey.integerType)
            }
            for (i, port) in meters.enumerated() {
                try client.setProperty(port, key: MetadataKey.signalType, value: "CV")
                try client.setProperty(
                    port, key: MetadataKey.prettyName,
                    value: "Meter \(i + 1) (RMS, 0..1 = \(floor)..0 dBFS)")
                try client.setProperty(port, key: MetadataKey.order, value: "\(i + 1)", type: MetadataKey.integerType)
            }
            if let osc {
                try client.setProperty(osc, key: MetadataKey.eventTypes, value: "OSC")
                try client.setProperty(osc, key: MetadataKey.prettyName, value: "OSC readings (\(configuration.prefix))")
            }
            if let notes {
                try client.setProperty(notes, key: MetadataKey.eventTypes, value: "MIDI")
                try client.setProperty(notes, key: MetadataKey.prettyName, value: "Pitch as MIDI notes")
            }
        } catch {
            printError("warning: \(error.description)")
        }
    }

    /// The exit status for a bad OSC address.
    static func status(for error: OSCAddressError) -> ExitStatus {
        switch error {
        case .malformed: return .usage
        case .unresolvable: return .noHost
        case .socket: return .osError
        }
    }

    /// `--connect`: every pattern's matching output ports (other clients' only), in order,
    /// go to successive inputs.
    private func connectInputs(client: Client, inputs: [Port]) throws(EngineError) {
        var sources: [String] = []
        for pattern in configuration.connect {
            let matches: [String]
            do {
                matches = try client.portNames(matching: pattern, direction: .output)
                    .filter { !$0.hasPrefix(client.name + ":") }
            } catch {
                throw EngineError(.usage, "--connect: \(error.description)")
            }
            guard !matches.isEmpty else {
                throw EngineError(.noInput, "--connect '\(pattern)' matches no output port (see jack_lsp)")
            }
            sources += matches
        }
        if sources.count > inputs.count {
            printError(
                "note: \(sources.count) ports match --connect but there are \(inputs.count) inputs; "
                    + "not connected: \(sources[inputs.count...].joined(separator: ", "))")
        }
        for (source, input) in zip(sources, inputs) {
            do { try client.connect(source, to: input.name) } catch {
                throw EngineError(.software, error.description)
            }
        }
    }
}

/// Server notifications: counters and the shutdown hook. Called on JACK's notification thread.
final class Notifications: NotificationHandler {
    let shared: SharedState
    let onShutdown: @Sendable (String) -> Void

    init(shared: SharedState, onShutdown: @escaping @Sendable (String) -> Void) {
        self.shared = shared
        self.onShutdown = onShutdown
    }

    func serverShutdown(reason: String) { onShutdown(reason) }
    func xrun() { shared.xruns.add() }
    func sampleRateChanged(_ rate: Int) { shared.serverSampleRate.store(rate) }
    func bufferSizeChanged(_ frames: Int) { shared.serverBufferSize.store(frames) }
}

/// Writes `jackvu: MESSAGE` as one line on stderr.
public func printError(_ message: String) {
    let line = "jackvu: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}
