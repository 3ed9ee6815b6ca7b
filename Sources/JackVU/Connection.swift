#if canImport(Glibc)
import Glibc
#endif
import Jack
import Outputs
import Realtime

/// jackvu's side of one JACK server: the client, its ports with their metadata, and the
/// process callback writing into the long-lived `Capture`. When the server goes away this
/// object is closed and, once a server of that name is back, replaced by a new one; the
/// worker, the outputs and the measurements live on (`Engine`).
final class JackConnection {
    let client: Client
    private(set) var inputs: [Port] = []
    private(set) var meters: [Port] = []
    private let configuration: Configuration
    private let notifications: any NotificationHandler

    /// Opens a client (no ports yet).
    init(configuration c: Configuration, notifications: any NotificationHandler) throws(EngineError) {
        configuration = c
        self.notifications = notifications
        do {
            client = try Client(name: c.clientName, server: c.serverName)
        } catch {
            switch error {
            case .nameInUse: throw EngineError(.nameInUse, error.description)
            default: throw EngineError(.unavailable, error.description)
            }
        }
    }

    /// Takes the client the server gave (in process).
    init(adopting client: Client, configuration c: Configuration, notifications: any NotificationHandler) {
        configuration = c
        self.notifications = notifications
        self.client = client
    }

    /// Registers every port, with metadata; sets the handlers, with a process callback that
    /// writes into `capture`, and runs it once outside real time. Not active yet.
    func registerPorts(capture: Capture) throws(EngineError) {
        let c = configuration
        var oscPort: Port?
        var notesPort: Port?
        do {
            for n in 1...c.channels { inputs.append(try client.registerPort(name: "in_\(n)", direction: .input)) }
            for n in 1...c.channels { meters.append(try client.registerPort(name: "meter_\(n)", direction: .output)) }
            if c.oscPort { oscPort = try client.registerPort(name: "osc", direction: .output, type: .midi) }
            if c.midiNotes { notesPort = try client.registerPort(name: "notes", direction: .output, type: .midi) }
        } catch {
            // Usually the server's port limit (jackd -p/--port-max; its own ports and every
            // other client's count too).
            let needed = 2 * c.channels + (c.oscPort ? 1 : 0) + (c.midiNotes ? 1 : 0)
            throw EngineError(
                .software,
                "\(error.description): the JACK server refused it (jackvu needs \(needed) ports for --channels \(c.channels); "
                    + "a server's port limit is set with jackd -p/--port-max)")
        }
        // The client keeps the processor alive until it has closed.
        let processor = CaptureProcessor(inputs: inputs, meters: meters, capture: capture, oscPort: oscPort, notesPort: notesPort)
        describePorts(inputs: inputs, meters: meters, osc: oscPort, notes: notesPort)
        client.writeDeferredProperties()  // in process only (see Client.setProperty)
        client.setHandlers(process: processor, notifications: notifications)
        // Warm up the process path outside real time, then forget what it produced: the worker
        // drops it (the ring has one consumer; dropping it here raced the worker's reading, and
        // a reconnect under RealtimeSanitizer's debug build tripped "consumed unread frames").
        client.warmUp()
        capture.discardBefore.store(capture.ring.framesWritten)
    }

    /// Tells the process callback which meter ports have a connection now (the others need
    /// no filling). After every change of the graph.
    func updateMeterConnections(_ capture: Capture) {
        for (c, port) in meters.enumerated() { capture.meterConnected.store(port.connectionCount > 0 ? 1 : 0, at: c) }
    }

    /// Inputs with at least one connection now.
    var connectedInputs: Int { inputs.filter { $0.connectionCount > 0 }.count }

    /// Starts processing.
    func activate() throws(EngineError) {
        do { try client.activate() } catch { throw EngineError(.software, error.description) }
    }

    /// Stops processing and closes the client, waiting for libjack at most `limit` seconds.
    func close(within limit: Double = Client.closeLimit) { client.close(within: limit) }

    /// The --connect sources seen so far: when ports appear, only new ones are connected, so
    /// that a connection undone by hand stays undone.
    private var seenSources: Set<String> = []

    /// `--connect`: every pattern's matching output ports (other clients' only), in the
    /// patterns' order and then the server's, go to successive inputs. With `strict`, a
    /// pattern that matches nothing is an error (exit 66); otherwise it is left for later (the
    /// ports may appear). With `onlyNew`, only sources not seen before are connected.
    /// Connections that exist already, made by jackvu or by hand, are left as they are;
    /// nothing is ever disconnected. Returns the patterns that matched nothing.
    @discardableResult
    func connectInputs(strict: Bool, announce: Bool, onlyNew: Bool = false) throws(EngineError) -> [String] {
        var sources: [String] = []
        var unmatched: [String] = []
        for pattern in configuration.connect {
            let matches: [String]
            do {
                matches = try client.portNames(matching: pattern, direction: .output)
                    .filter { !$0.hasPrefix(client.name + ":") }
            } catch {
                throw EngineError(.usage, "--connect: \(error.description)")
            }
            if matches.isEmpty {
                if strict { throw EngineError(.noInput, "--connect '\(pattern)' matches no output port (see jack_lsp)") }
                unmatched.append(pattern)
            }
            sources += matches
        }
        if announce && sources.count > inputs.count {
            printError(
                "note: \(sources.count) ports match --connect but there are \(inputs.count) inputs; "
                    + "not connected: \(sources[inputs.count...].joined(separator: ", "))")
        }
        for (source, input) in zip(sources, inputs) where !(onlyNew && seenSources.contains(source)) {
            // A port can go between listing and connecting: nothing to do then.
            try? client.connect(source, to: input.name)
        }
        seenSources = Set(sources)
        return unmatched
    }

    /// JACK metadata: signal type, a pretty name and the order of every port, so patchbays
    /// (qjackctl) show the meters as CV. A server without metadata support only gets a warning.
    private func describePorts(inputs: [Port], meters: [Port], osc: Port?, notes: Port?) {
        do {
            for (i, port) in inputs.enumerated() {
                try client.setProperty(port, key: MetadataKey.signalType, value: "AUDIO")
                try client.setProperty(port, key: MetadataKey.prettyName, value: "Input \(i + 1)")
                try client.setProperty(port, key: MetadataKey.order, value: "\(i + 1)", type: MetadataKey.integerType)
            }
            for (i, port) in meters.enumerated() {
                try client.setProperty(port, key: MetadataKey.signalType, value: "CV")
                try client.setProperty(port, key: MetadataKey.prettyName, value: configuration.meterPortPrettyName(i + 1))
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
}
