#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Settings
import Outputs
import Realtime
import Synchronization

/// Builds the outputs of a run from its configuration, for the command and the in-process form
/// alike (the in-process form simply has no displays): the text or JSON stream on stdout, OSC
/// bundles over UDP (`--osc`, and destinations the control input subscribes), the `osc` MIDI
/// port, and the displays the caller made. The output loop takes the list and knows none of
/// them by name.
struct OutputFactory {
    /// The UDP output, which the control input's `subscribe` and `unsubscribe` reach.
    let udp: OSCUDPOutput?
    private let port: OSCPortOutput?
    private let format: OutputFormat

    /// Makes the outputs that can fail on a bad option (OSC destinations), before anything
    /// connects and before a display takes the terminal.
    init(settings c: OutputSettings, oscPort: (queue: PacketQueue, maxEvent: Counter)?, shared: EngineState,
         controlRejected: Counter?) throws(EngineError)
    {
        format = c.format
        if !c.oscDestinations.isEmpty || c.listen != nil {
            var senders: [OSCSender] = []
            for endpoint in c.oscDestinations {
                do { senders.append(try OSCSender(endpoint: endpoint)) } catch {
                    throw EngineError(Engine.status(for: error), "--osc: \(error.description)")
                }
            }
            udp = OSCUDPOutput(
                senders: senders, lifetime: c.subscribeTimeout, failures: shared.oscSendFailures, rejected: controlRejected,
                prefix: c.prefix)
        } else {
            udp = nil
        }
        port = oscPort.map { OSCPortOutput(queue: $0.queue, maxEvent: $0.maxEvent) }
    }

    /// The whole list, in the order the outputs take each update: those the host plugged in
    /// (the metrics, the displays: people see them soonest), the stream on stdout (nil:
    /// stdout carries none, under a terminal display or --quiet), OSC over UDP, the `osc` port
    /// (after UDP, whose bundles it may reuse).
    func outputs(plugged: [any SnapshotOutput], stdout: StdoutWriter?) -> [any SnapshotOutput] {
        var list = plugged
        if let stdout { list.append(StdoutOutput(writer: stdout, format: format)) }
        if let udp { list.append(udp) }
        if let port { list.append(port) }
        return list
    }
}

/// The text or JSON stream on stdout, through its own writer thread (a slow reader blocks only
/// that; text it had not taken yet is replaced and counted as skipped).
final class StdoutOutput: SnapshotOutput, @unchecked Sendable {
    // @unchecked Sendable: the writer is thread-safe; `format` is immutable.
    private let writer: StdoutWriter
    private let format: OutputFormat

    init(writer: StdoutWriter, format: OutputFormat) {
        self.writer = writer
        self.format = format
    }

    var name: String { "stdout" }
    func take(_ update: OutputUpdate) { writer.offer(format == .json ? update.jsonLine : update.text) }
    func stop() { writer.stop() }
    var counters: [String: Int] { ["skipped": writer.ownSkipped.count] }
}

/// OSC bundles over UDP to every destination given (`--osc`, never removed) and subscribed
/// (the control input's `subscribe`, until it expires or is unsubscribed). Sends never block:
/// a refused port, an unreachable host or a full socket fails at once and is counted.
final class OSCUDPOutput: SnapshotOutput, @unchecked Sendable {
    // @unchecked Sendable: `requests` is a Mutex; the rest is used by the output thread only.
    /// At most this many destinations, those given and those subscribed together.
    static let maxDestinations = 32

    private let senders: [OSCSender]
    /// Those added by `subscribe`, in the order of `subscriptions.endpoints`.
    private var subscribers: [OSCSender] = []
    private var subscriptions: Subscriptions
    /// What the control input asked for since the last update.
    enum Request: Sendable {
        case add(OSCEndpoint)
        case remove(OSCEndpoint)
        case confirm(token: String, host: String)
    }
    private let requests = Mutex<[Request]>([])
    /// The OSC prefix (the challenge's address is PREFIX/subscribe/confirm).
    private let prefix: String
    private let failures: Counter
    /// Where a refused subscription is counted (the control input's rejections).
    private let rejected: Counter?

    init(senders: [OSCSender], lifetime: Double, failures: Counter, rejected: Counter?, prefix: String) {
        self.senders = senders
        self.prefix = prefix
        subscriptions = Subscriptions(lifetime: lifetime)
        self.failures = failures
        self.rejected = rejected
    }

    var name: String { "osc-udp" }
    var counters: [String: Int] { ["send_failures": failures.count] }
    func stop() {}

    /// Adds, removes or confirms a subscribed destination, from the next update on. Any thread.
    func request(_ request: Request) {
        requests.withLock { $0.append(request) }
    }

    func take(_ update: OutputUpdate) {
        applyRequests()
        guard !senders.isEmpty || !subscribers.isEmpty else { return }
        let packets = update.bundles()
        for sender in senders { send(packets, to: sender) }
        for sender in subscribers { send(packets, to: sender) }
    }

    private func isGiven(_ e: OSCEndpoint) -> Bool {
        senders.contains { $0.endpoint.host == e.host && $0.endpoint.port == e.port }
    }

    /// A challenge's token: 64 random bits in hex (arc4random is seeded by the kernel).
    static func token() -> String {
        let bits = UInt64(arc4random()) << 32 | UInt64(arc4random())
        let hex = String(bits, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    private func send(_ packets: [[UInt8]], to sender: OSCSender) {
        for packet in packets where !sender.send(packet) { failures.add() }
    }

    private func applyRequests() {
        let changes = requests.withLock { r in defer { r = [] }; return r }
        let now = monotonicNanoseconds()
        let capacity = OSCUDPOutput.maxDestinations - senders.count
        for change in changes {
            var endpoint: OSCEndpoint
            let outcome: Subscriptions.Outcome
            switch change {
            case .add(let e):
                endpoint = e
                // A destination given on the command line is neither added twice nor removed.
                if isGiven(e) { continue }
                outcome = subscriptions.subscribe(
                    e, now: now, capacity: capacity, trusted: Subscriptions.isLoopback(e.host), token: OSCUDPOutput.token())
            case .remove(let e):
                if !isGiven(e) && subscriptions.unsubscribe(e) { subscribers.removeAll { $0.endpoint == e } }
                continue
            case .confirm(let token, let host):
                let before = subscriptions.endpoints
                outcome = subscriptions.confirm(token: token, from: host, now: now, capacity: capacity)
                // Confirmed: the destination its challenge went to (nothing new when renewed).
                guard outcome == .added, let added = subscriptions.endpoints.first(where: { !before.contains($0) }) else {
                    if outcome == .refused { rejected?.add() }
                    continue
                }
                endpoint = added
            }
            switch outcome {
            case .added:
                if let sender = try? OSCSender(endpoint: endpoint) {
                    subscribers.append(sender)
                } else {
                    _ = subscriptions.unsubscribe(endpoint)
                    rejected?.add()
                }
            case .challenge(let token):
                // One small packet to the destination, which must echo it from there.
                let challenge = OSCMessage(prefix + "/subscribe/confirm", [.string(token)]).packet
                if let sender = try? OSCSender(endpoint: endpoint), sender.send(challenge) {} else { failures.add() }
            case .renewed, .waiting: break
            case .refused: rejected?.add()
            }
        }
        for endpoint in subscriptions.expire(now: now) { subscribers.removeAll { $0.endpoint == endpoint } }
    }
}

/// OSC packets on the `osc` MIDI port, through a queue the process callback empties: the
/// UDP bundles, or smaller ones when the port's events are smaller than a safe datagram; what
/// does not fit is dropped and counted.
final class OSCPortOutput: SnapshotOutput, @unchecked Sendable {
    // @unchecked Sendable: the queue and the counter are thread-safe.
    private let queue: PacketQueue
    /// The largest event the port took in its last cycle, bytes (0: not known yet).
    private let maxEvent: Counter

    init(queue: PacketQueue, maxEvent: Counter) {
        self.queue = queue
        self.maxEvent = maxEvent
    }

    var name: String { "osc-port" }
    var counters: [String: Int] { ["dropped": queue.droppedPackets] }
    func stop() {}

    func take(_ update: OutputUpdate) {
        let portMax = maxEvent.count
        let safe = OSCBundle.safeDatagramSize
        // The UDP output's bundles when it made them and the port takes them; otherwise
        // bundles as large as the port's events (a safe datagram while that is not known).
        let size = portMax > 0 && portMax < safe ? portMax : update.hasBundles(maxSize: safe) || portMax == 0 ? safe : portMax
        for packet in update.bundles(maxSize: size) {
            if portMax > 0 && packet.count > portMax {
                queue.countDropped()
            } else {
                queue.push(packet)
            }
        }
    }
}
