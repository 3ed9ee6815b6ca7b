#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Settings
import Outputs
import Realtime
import Synchronization

/// Builds the outputs of a run from its configuration, for every host: the command and the
/// in-process form (the in-process form simply has no displays) ask for the text or JSON
/// stream on stdout, OSC bundles over UDP (`--osc`, and destinations the control input
/// subscribes), the `osc` MIDI port and the displays the caller made; `jackvu analyze` for a
/// file's stream (`file`); the LV2 plugin for OSC to its destinations (`osc`) and JSON lines
/// (`lines`). The output loop (or the host's analysis thread) hands each update to them and
/// knows none by name.
public struct OutputFactory: Sendable {
    /// The UDP output, which the control input's `subscribe` and `unsubscribe` reach.
    public let udp: OSCUDPOutput?
    private let port: OSCPortOutput?
    private let format: OutputFormat

    /// Makes the outputs that can fail on a bad option (OSC destinations), before anything
    /// connects and before a display takes the terminal.
    public init(settings c: OutputSettings, oscPort: (queue: PacketQueue, maxEvent: Counter)?, sendFailures: Counter,
                controlRejected: Counter?) throws(EngineError)
    {
        format = c.format
        if !c.oscDestinations.isEmpty || c.listen != nil {
            var senders: [OSCSender] = []
            for endpoint in c.oscDestinations {
                do { senders.append(try OSCSender(endpoint: endpoint)) } catch {
                    throw EngineError(OutputFactory.status(for: error), "--osc: \(error.description)")
                }
            }
            udp = OSCUDPOutput(
                senders: senders, lifetime: c.subscribeTimeout, failures: sendFailures, rejected: controlRejected,
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
    public func outputs(plugged: [any SnapshotOutput], stdout: StdoutWriter?) -> [any SnapshotOutput] {
        var list = plugged
        if let stdout { list.append(StdoutOutput(writer: stdout, format: format)) }
        if let udp { list.append(udp) }
        if let port { list.append(port) }
        return list
    }

    /// A file's outputs (`jackvu analyze`): its stream of updates (`--stream`), when asked
    /// for, in `format`; a file sends no OSC and has no displays.
    public static func file(stream format: OutputFormat?, path: String, settings c: OutputSettings) -> [any SnapshotOutput] {
        format.map { [FileStreamOutput(format: $0, path: path, prefix: c.prefix)] } ?? []
    }

    /// OSC bundles to fixed destinations (the LV2 plugin's `osc_port` and `osc` parameter),
    /// made again by its host when they change; nil for none.
    public static func osc(to senders: [OSCSender], prefix: String, failures: Counter) -> (any SnapshotOutput)? {
        senders.isEmpty ? nil : OSCUDPOutput(senders: senders, lifetime: 0, failures: failures, rejected: nil, prefix: prefix)
    }

    /// JSON lines to a file or a Unix-domain socket (the LV2 plugin's `jsonPath`); nil (said)
    /// for a file that cannot be opened.
    public static func lines(to path: String, say: @escaping @Sendable (String) -> Void) -> (any SnapshotOutput)? {
        LineSink(path: path, say: say).map(LinesOutput.init)
    }

    /// The exit status of an OSC destination that cannot be used.
    public static func status(for error: OSCAddressError) -> ExitStatus {
        switch error {
        case .malformed, .badRange: return .usage
        case .unresolvable: return .noHost
        case .socket: return .osError
        }
    }
}

/// A file's stream of updates (`jackvu analyze --stream`): at each hop its audio time and the
/// analysis's messages, one line each (text), or its JSON line with the file's name; gathered
/// for the host to write out (`take()`), on the analysis's thread, as it reads the file.
public final class FileStreamOutput: SnapshotOutput, @unchecked Sendable {
    // @unchecked Sendable: used by the thread that analyses the file only.
    private let format: OutputFormat
    private let path: String, prefix: String
    private var output: String

    init(format: OutputFormat, path: String, prefix: String) {
        self.format = format
        self.path = path
        self.prefix = prefix
        output = format == .text ? OSCMessage(prefix + "/file", [.string(path)]).text : ""
    }

    public var name: String { "stream" }
    public func stop() {}

    public func take(_ update: OutputUpdate) {
        switch format {
        case .json: output += update.jsonLine(file: path)
        case .text:
            output += OSCMessage(prefix + "/time", [.float(Float(update.snapshot.audioTime))]).text
            for m in update.analysisMessages { output += m.text }
        }
    }

    /// The stream gathered since the last call, bytes.
    public var pendingBytes: Int { output.utf8.count }

    /// Takes the stream gathered since the last call.
    public func take() -> String {
        defer { output = "" }
        return output
    }
}

/// The stdout writer: its own thread, so that a slow reader blocks only it. The output thread
/// hands it the newest text; text it had not taken yet is replaced, and counted as skipped.
public final class StdoutWriter: @unchecked Sendable {
    // @unchecked Sendable: `pending` is a Mutex; the sink is a value.
    private let sink: FileDescriptorSink
    private let pending = NewestValue<String>()
    private let wake = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    /// Updates skipped by any slow output (the status message's count).
    private let skipped: Counter
    /// Texts this writer replaced before they were written.
    public let ownSkipped = Counter()
    private let onClosed: @Sendable (OutputError) -> Void
    private var thread: PosixThread?

    public init(sink: FileDescriptorSink, skipped: Counter, onClosed: @escaping @Sendable (OutputError) -> Void) {
        self.sink = sink
        self.skipped = skipped
        self.onClosed = onClosed
        thread = PosixThread(name: "jackvu-stdout") { [self] in run() }
    }

    /// Hands over the newest text. Never blocks for long (a short lock).
    public func offer(_ text: String) {
        if pending.put(text) {
            skipped.add()
            ownSkipped.add()
        }
        wake.signal()
    }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        thread?.join()
        thread = nil
    }

    private func run() {
        while !stopping.load(ordering: .relaxed) {
            wake.wait(timeout: 0.1)
            guard let text = pending.take() else { continue }
            do { try sink.write(text) } catch {
                onClosed(error)
                return
            }
        }
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
public final class OSCUDPOutput: SnapshotOutput, @unchecked Sendable {
    // @unchecked Sendable: `requests` is a Mutex; the rest is used by the output thread only.
    /// At most this many destinations, those given and those subscribed together.
    public static let maxDestinations = 32

    private let senders: [OSCSender]
    /// Those added by `subscribe`, in the order of `subscriptions.endpoints`.
    private var subscribers: [OSCSender] = []
    private var subscriptions: Subscriptions
    /// What the control input asked for since the last update.
    public enum Request: Sendable {
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

    public var name: String { "osc-udp" }
    public var counters: [String: Int] { ["send_failures": failures.count] }
    public func stop() {}

    /// Adds, removes or confirms a subscribed destination, from the next update on. Any thread.
    public func request(_ request: Request) {
        requests.withLock { $0.append(request) }
    }

    public func take(_ update: OutputUpdate) {
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
    public static func token() -> String {
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
