#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Settings
import Jack
import Outputs
import Realtime

/// jackvu's side of one JACK server: the client, its ports with their metadata, and the
/// process callback writing into the long-lived `CaptureBuffers`. When the server goes away this
/// object is closed and, once a server of that name is back, replaced by a new one; the
/// worker, the outputs and the measurements live on (`Engine`).
final class JackConnection {
    let client: Client
    private(set) var inputs: [AudioInPort] = []
    private(set) var meters: [AudioOutPort] = []
    private let settings: ClientSettings
    private let ports: PortPlan
    private let notifications: any NotificationHandler
    /// The ports' metadata, written after activation by `metadataWriter`.
    private var properties: [(port: AnyPort, key: String, value: String, type: String?)] = []
    private var metadataWriter: PosixThread?
    private let stopWriting = SharedValue()  // 1: stop

    /// Properties written at once, then a pause: a client of the server that is opening while
    /// notifications pour in does not read them until its own open is answered, and jack2's
    /// server blocks writing to it once its socket is full — the server, jackvu and the
    /// opening client (qjackctl, jack_lsp) all hung until that client died (35 s, in 2 of 6
    /// 64-channel starts with jack_lsp in a loop; 0 of 8 without the metadata). Four
    /// notifications every 20 ms stay far below what the socket holds, whatever the channel
    /// count (eight still let one jack_lsp of ten wait 1.0 s; four: at most 94 ms in 12
    /// starts). 64 channels' 384 properties take about 2 s; 2 channels' 12, 60 ms.
    static let metadataBatch = 4
    static let metadataPause: UInt32 = 20_000

    /// Opens a client (no ports yet).
    init(_ settings: ClientSettings, ports: PortPlan, notifications: any NotificationHandler) throws(EngineError) {
        self.settings = settings
        self.ports = ports
        self.notifications = notifications
        do {
            client = try Client(name: settings.name, server: settings.server)
        } catch {
            switch error {
            case .nameInUse: throw EngineError(.nameInUse, error.description)
            default: throw EngineError(.unavailable, error.description)
            }
        }
    }

    /// Takes the client the server gave (in process).
    init(adopting client: Client, _ settings: ClientSettings, ports: PortPlan, notifications: any NotificationHandler) {
        self.settings = settings
        self.ports = ports
        self.notifications = notifications
        self.client = client
    }

    /// Registers every port, with metadata; sets the handlers, with a process callback that
    /// writes into `capture`, and runs it once outside real time. Not active yet.
    func registerPorts(capture: CaptureBuffers) throws(EngineError) {
        let c = ports
        var oscPort: MIDIOutPort?
        var notesPort: MIDIOutPort?
        do {
            for n in 1...c.channels { inputs.append(try client.registerAudioInput(name: "in_\(n)")) }
            for n in 1...c.channels { meters.append(try client.registerAudioOutput(name: "meter_\(n)")) }
            // With --alarm: a CV port per programme, 1.0 while any of its alarms is active.
            for alarm in c.alarms { meters.append(try client.registerAudioOutput(name: alarm.name)) }
            if c.oscPrettyName != nil { oscPort = try client.registerMIDIOutput(name: "osc") }
            if c.notes { notesPort = try client.registerMIDIOutput(name: "notes") }
        } catch {
            // Usually the server's port limit (jackd -p/--port-max; its own ports and every
            // other client's count too).
            let needed = c.count
            throw EngineError(
                .software,
                "\(error.description): the JACK server refused it (jackvu needs \(needed) ports for --channels \(c.channels); "
                    + "a server's port limit is set with jackd -p/--port-max)")
        }
        // The client keeps the processor alive until it has closed.
        let processor = CaptureProcessor(inputs: inputs, meters: meters, capture: capture, oscPort: oscPort, notesPort: notesPort)
        describePorts(inputs: inputs, meters: meters, osc: oscPort, notes: notesPort)
        client.setHandlers(process: processor, notifications: notifications)
        // Warm up the process path outside real time, then forget what it produced: the worker
        // drops it (the ring has one consumer; dropping it here raced the worker's reading, and
        // a reconnect under RealtimeSanitizer's debug build tripped "consumed unread frames").
        // While it runs, the worker drops everything (it must not analyse warm-up silence
        // into the first block); then everything before the warm-up's end.
        capture.discardBefore.store(CaptureBuffers.discardEverything)
        client.warmUp()
        capture.discardBefore.store(capture.ring.framesWritten)
    }

    /// Tells the process callback which meter ports have a connection now (the others need
    /// no filling). After every change of the graph.
    func updateMeterConnections(_ capture: CaptureBuffers) {
        for (c, port) in meters.enumerated() { capture.meterConnected.store(port.connectionCount > 0 ? 1 : 0, at: c) }
    }

    /// After the first `--connect`: the analysis starts with the connected audio. The frames
    /// captured until the connections take effect (JACK applies them at a cycle boundary, at
    /// most one period after `jack_connect` returns) are silence that would make the first
    /// update read low: the worker drops them and starts its block afresh (as after the
    /// warm-up), so the first update is a full block of the connected inputs.
    func startFromTheConnections(_ capture: CaptureBuffers) {
        guard connectedInputs > 0 else { return }
        capture.discardBefore.store(capture.ring.framesWritten + client.bufferSize)
    }

    /// Each input's connection count when last looked at (`hintConnectionChanges`).
    private var lastConnectionCounts: [Int] = []

    /// After a graph change: flags the inputs whose connection count changed for the process
    /// callback, which marks its next cycle as a connection change (when it has not seen
    /// the change itself in the input's buffer address).
    func hintConnectionChanges(_ capture: CaptureBuffers) {
        let counts = inputs.map(\.connectionCount)
        defer { lastConnectionCounts = counts }
        guard counts.count == lastConnectionCounts.count else { return }
        var any = false
        for c in counts.indices where counts[c] != lastConnectionCounts[c] && c < capture.connectionHints.count {
            capture.connectionHints.store(1, at: c)
            any = true
        }
        if any { capture.connectionHintGeneration.add() }
    }

    /// Inputs with at least one connection now.
    var connectedInputs: Int { inputs.filter { $0.connectionCount > 0 }.count }

    /// Starts processing.
    func activate() throws(EngineError) {
        do { try client.activate() } catch { throw EngineError(.software, error.description) }
    }

    /// Writes the ports' metadata in paced batches on a thread of its own (`metadataBatch`;
    /// in process, through `jack_property`, see Client.setProperty). After activation and the
    /// first `--connect`: the connections are made before any property, so the first analysis
    /// block is the connected audio, not the silence while properties were written.
    func writeMetadata() {
        guard metadataWriter == nil else { return }
        let pending = properties
        properties = []
        let client = self.client, stop = stopWriting
        metadataWriter = PosixThread(name: "jackvu-metadata") {
            var failed: JackError?
            for (i, p) in pending.enumerated() {
                if stop.value != 0 { return }
                // Tried three times: with JACK's metadata database detecting deadlocks
                // (MetadataDatabase), a write can be the request a deadlock rejects. Once one
                // has failed three times the server likely has no metadata (PipeWire without
                // its metadata object): the rest are tried once.
                let attempts = failed == nil ? 3 : 1
                for attempt in 1...attempts {
                    do throws(JackError) {
                        try client.setProperty(p.port, key: p.key, value: p.value, type: p.type)
                        break
                    } catch {
                        if attempt == attempts { failed = failed ?? error } else { usleep(10_000) }
                    }
                    if stop.value != 0 { return }
                }
                if i % JackConnection.metadataBatch == JackConnection.metadataBatch - 1 { usleep(JackConnection.metadataPause) }
            }
            client.writeDeferredProperties()  // in process only
            // A server without metadata support only gets a warning.
            if let failed { printError("warning: \(failed.description)") }
        }
    }

    /// Stops processing and closes the client, waiting for libjack at most `limit` seconds.
    /// The metadata writer stops first (between two properties), waited for as long: a write
    /// that does not return (JACK's metadata database locked by a client killed inside a
    /// write: libjack waits for ever) is left to its thread, and said.
    /// `serverGone`: the server shut down (the client is only closed, not deactivated).
    func close(within limit: Double = Client.closeLimit, serverGone: Bool = false) {
        stopWriting.store(1)
        if let writer = metadataWriter, !writer.join(within: max(limit, 0.5)) {
            printError("warning: a port metadata write to the JACK server has not returned in \(max(limit, 0.5)) s (JACK's metadata database may be locked: jack_property -l would hang too); left to its thread")
        }
        metadataWriter = nil
        client.close(within: limit, serverGone: serverGone)
    }

    /// The --connect sources seen so far: when ports appear, only new ones are connected, so
    /// that a connection undone by hand stays undone.
    private var seenSources: Set<String> = []
    /// Sources whose connection failed, with the attempts so far: a port is listed as soon as
    /// its client registers it, but JACK refuses to connect it until that client is active
    /// (jacktone, a player, a DAW: milliseconds to seconds later). They are tried again
    /// (the keeper's `step`) until connected or `connectAttempts` have failed, and again when
    /// ports appear.
    private var pendingSources: [String: Int] = [:]
    /// How many times a matching port is tried: 50 at the keeper's 0.1 s, 5 s.
    static let connectAttempts = 50
    /// True while a matching source is waiting to be connected.
    var hasPendingSources: Bool { !pendingSources.isEmpty }

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
        for pattern in settings.connect {
            let matches: [String]
            do {
                matches = try client.portNames(matching: pattern, direction: .output)
                    .filter { !$0.hasPrefix(client.name + ":") }
            } catch {
                throw EngineError(.usage, "--connect: \(error.description)")
            }
            if matches.isEmpty {
                if strict {
                    let inputs = inputPorts(matching: pattern)
                    throw EngineError(.noInput, inputs.isEmpty ? "--connect '\(pattern)' matches no output port (see jack_lsp)"
                        : "--connect '\(pattern)' matches only input ports (\(JackConnection.list(inputs))): it names the output ports to meter (see jack_lsp -p)")
                }
                unmatched.append(pattern)
            }
            sources += matches
        }
        if announce && sources.count > inputs.count {
            printError(
                "note: \(sources.count) ports match --connect but there are \(inputs.count) inputs; "
                    + "not connected: \(sources[inputs.count...].joined(separator: ", "))")
        }
        var seen = Set(sources)
        var pending: [String: Int] = [:]
        for (source, input) in zip(sources, inputs) where !(onlyNew && seenSources.contains(source)) {
            // A port can go between listing and connecting (then it is not listed next time,
            // and forgotten); its client may not be active yet (then it is tried again).
            do throws(JackError) {
                try client.connect(source, to: input.name)
            } catch {
                // Not seen: a port that appears later tries it again, for another 5 s.
                seen.remove(source)
                let attempts = (pendingSources[source] ?? 0) + 1
                if attempts < JackConnection.connectAttempts {
                    pending[source] = attempts
                } else {
                    printError("--connect: \(error.description) (\(attempts) attempts; tried again when ports appear)")
                }
            }
        }
        seenSources = seen
        pendingSources = pending
        return unmatched
    }

    /// Other clients' input ports that `pattern` matches (a user who named a playback port
    /// where an output was meant is told so).
    func inputPorts(matching pattern: String) -> [String] {
        ((try? client.portNames(matching: pattern, direction: .input)) ?? []).filter { !$0.hasPrefix(client.name + ":") }
    }

    /// "a, b, c" or "a, b, c and 4 more".
    static func list(_ names: [String]) -> String {
        names.prefix(3).joined(separator: ", ") + (names.count > 3 ? " and \(names.count - 3) more" : "")
    }

    /// JACK metadata: signal type, a pretty name and the order of every port, so patchbays
    /// (qjackctl) show the meters as CV. Collected here, written by `writeMetadata`: the meter
    /// ports' first (what patchbays need most), then the inputs'.
    private func describePorts(inputs: [AudioInPort], meters: [AudioOutPort], osc: MIDIOutPort?, notes: MIDIOutPort?) {
        for (i, port) in meters.enumerated() {
            properties.append((port.any, MetadataKey.signalType, "CV", nil))
            let name = i < ports.channels ? ports.meterPrettyNames[i] : ports.alarms[i - ports.channels].prettyName
            properties.append((port.any, MetadataKey.prettyName, name, nil))
            properties.append((port.any, MetadataKey.order, "\(i + 1)", MetadataKey.integerType))
        }
        for (i, port) in inputs.enumerated() {
            properties.append((port.any, MetadataKey.signalType, "AUDIO", nil))
            properties.append((port.any, MetadataKey.prettyName, "Input \(i + 1)", nil))
            properties.append((port.any, MetadataKey.order, "\(i + 1)", MetadataKey.integerType))
        }
        if let osc {
            properties.append((osc.any, MetadataKey.eventTypes, "OSC", nil))
            properties.append((osc.any, MetadataKey.prettyName, ports.oscPrettyName ?? "OSC readings", nil))
        }
        if let notes {
            properties.append((notes.any, MetadataKey.eventTypes, "MIDI", nil))
            properties.append((notes.any, MetadataKey.prettyName, "Pitch as MIDI notes", nil))
        }
    }
}
