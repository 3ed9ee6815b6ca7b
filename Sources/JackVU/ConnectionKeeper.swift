#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Settings
import Jack
import Outputs
import Realtime

/// The JACK side over a whole run: the current connection (nil while the server is away), the
/// first start, what happens when the server goes and comes back, and graph changes (ports
/// that `--connect` may match). Used by the engine's main thread only; the worker, the
/// outputs and the measurements live on across connections (`Engine`).
final class ConnectionKeeper {
    private let settings: ClientSettings
    private let ports: PortPlan
    private let capture: CaptureBuffers
    private let shared: EngineState
    private let events: EngineEvents
    private let notifications: Notifications
    /// In process the server's end is the process's: no reconnecting.
    private let inProcess: Bool
    private(set) var connection: JackConnection?
    /// Reconnect attempts since the server went away.
    private var attempt = 0

    /// Waits between attempts to reach a server that went away: 0.1 s, doubling to 1 s.
    static let reconnectDelays: [Double] = [0.1, 0.2, 0.4, 0.8, 1.0]

    init(
        first: JackConnection, capture: CaptureBuffers, settings: ClientSettings, ports: PortPlan, shared: EngineState, events: EngineEvents,
        notifications: Notifications, inProcess: Bool
    ) {
        connection = first
        self.capture = capture
        self.settings = settings
        self.ports = ports
        self.shared = shared
        self.events = events
        self.notifications = notifications
        self.inProcess = inProcess
    }

    /// How long the main thread may sleep before the next reconnect attempt, or before a
    /// matching port whose client was not active yet is tried again; nil while connected with
    /// nothing to retry (then only an event wakes it).
    var retryDelay: Double? {
        guard let connection else {
            return ConnectionKeeper.reconnectDelays[min(attempt, ConnectionKeeper.reconnectDelays.count - 1)]
        }
        return connection.hasPendingSources ? ConnectionKeeper.connectRetryDelay : nil
    }

    /// The wait before a matching port that could not be connected is tried again.
    static let connectRetryDelay = 0.1

    /// The first start: activates the client, connects `--connect`'s ports (strictly with
    /// `--connect-once`), writes the metadata; says which patterns match nothing yet.
    func start() throws(EngineError) {
        guard let connection else { return }
        try connection.activate()
        let unmatched = try connection.connectInputs(strict: !settings.followGraph, announce: true)
        connection.startFromTheConnections(capture)
        connection.writeMetadata()
        shared.inputsConnected.store(connection.connectedInputs)
        connection.updateMeterConnections(capture)
        connection.hintConnectionChanges(capture)
        for pattern in unmatched {
            let inputs = connection.inputPorts(matching: pattern)
            if inputs.isEmpty {
                printError("--connect '\(pattern)' matches no output port yet; its ports are connected when they appear")
            } else {
                printError("--connect '\(pattern)' matches only input ports (\(JackConnection.list(inputs))): it names the output ports "
                    + "to meter (see jack_lsp -p); matching output ports are connected when they appear")
            }
        }
    }

    /// Handles what happened since the last call: the server gone (close, then wait for it),
    /// a reconnect attempt while it is away, or a graph change. False: the server went away
    /// and the run ends (`--no-reconnect`, or in process).
    func step() -> Bool {
        if events.takeServerGone(), let gone = connection {
            guard settings.reconnect && !inProcess else { return false }
            let reason = events.shutdownReason
            printError(
                "the JACK server shut down" + (reason.isEmpty ? "" : " (\(reason))")
                    + "; waiting for it to come back (--no-reconnect exits instead)")
            // The old client is closed before any new one is opened: a jack_client_open (a
            // reconnect attempt) beside libjack's closing of the old client crashed jackvu
            // inside libjack, in 3 of 15 graceful server stops (and never once the close had
            // finished first: 0 of 20). libjack may never finish closing a client whose server
            // died (see Client.close): after 3 s that client's thread and handlers are left to
            // it and reconnecting goes on.
            gone.close(within: Client.closeLimit, serverGone: true)
            connection = nil
            shared.inputsConnected.store(0)
            shared.serverConnected.store(false, ordering: .relaxed)
            attempt = 0
        } else if connection == nil {
            reconnect()
        } else if let connection {
            let changed = events.takeGraphChanged()
            let appeared = changed && events.takePortsAppeared()
            guard changed || connection.hasPendingSources else { return true }
            if (appeared && settings.followGraph) || connection.hasPendingSources {
                _ = try? connection.connectInputs(strict: false, announce: false, onlyNew: true)
            }
            shared.inputsConnected.store(connection.connectedInputs)
            connection.updateMeterConnections(capture)
            connection.hintConnectionChanges(capture)
        }
        return true
    }

    /// One attempt to reach a server of that name again, with the same ports, connections and
    /// metadata as before.
    private func reconnect() {
        guard let fresh = try? JackConnection(settings, ports: ports, notifications: notifications) else {
            attempt += 1
            return
        }
        do {
            try fresh.registerPorts(capture: capture)
            try fresh.activate()
            _ = try fresh.connectInputs(strict: false, announce: false)
        } catch {
            fresh.close()
            attempt += 1
            return
        }
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
        fresh.hintConnectionChanges(capture)
        printError("connected to the JACK server again (\(fresh.client.sampleRate) Hz, \(fresh.client.bufferSize) frames)")
        Engine.reportName(fresh.client.name, asked: settings.name)
    }

    /// Closes the current client, if any (the end of the run).
    func close() {
        connection?.close()
        connection = nil
    }
}
