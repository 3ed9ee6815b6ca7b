/// Something that takes jackvu's updates: the text or JSON on stdout, OSC over UDP, the `osc`
/// MIDI port, the terminal and browser displays — and whatever comes next (alarms, a log,
/// metrics). The output thread hands each new update to every output in its list and knows
/// none by name; one factory (`Consumers.OutputFactory`) builds the list from the configuration,
/// for the command and the in-process form alike.
///
/// `take` is called on the output thread, at most `--rate` times a second, and must return at
/// once: an output that does slow work (a write to a slow reader, drawing) hands the update to
/// a thread of its own and counts what it had to skip; it never holds up the others or the
/// analysis.
public protocol SnapshotOutput: AnyObject, Sendable {
    /// A short name for messages and its counters ("stdout", "osc-udp", "osc-port", …).
    var name: String { get }
    /// Starts the output's own threads, if any. Called once, before the first update.
    func start()
    /// Takes one update. Called on the output thread only; never blocks for long.
    func take(_ update: OutputUpdate)
    /// Stops and gives back what the output took (a thread, a socket, the terminal).
    /// Idempotent; called after the last update, or on a failed start.
    func stop()
    /// Its counters now, by name (e.g. `["send_failures": 0]`).
    var counters: [String: Int] { get }
}

extension SnapshotOutput {
    public func start() {}
    public var counters: [String: Int] { [:] }
}

/// One update on its way out: the snapshot, and what the outputs make of it — its OSC
/// messages (the `--send` selection), text, JSON line and OSC bundles — each made once, when
/// the first output asks for it, and shared by the others. Used on the output thread only.
public final class OutputUpdate {
    public let snapshot: Snapshot
    private let addressSpace: AddressSpace
    private let json: JSONLines
    private var bundlesBySize: [Int: [[UInt8]]] = [:]

    public init(snapshot: Snapshot, addressSpace: AddressSpace, json: JSONLines) {
        self.snapshot = snapshot
        self.addressSpace = addressSpace
        self.json = json
    }

    /// The OSC messages of the selection.
    public private(set) lazy var messages: [OSCMessage] = addressSpace.messages(for: snapshot)
    /// The oscdump-style text: one line per message.
    public private(set) lazy var text: String = {
        var out = ""
        for m in messages { out += m.text }
        return out
    }()
    /// The JSON line (with its newline).
    public private(set) lazy var jsonLine: String = json.line(for: snapshot)
    /// The JSON line of a file's update (with the file's name; with its newline).
    public func jsonLine(file: String) -> String { json.line(for: snapshot, file: file) }
    /// The analysis's messages of the selection (no status: a file's stream).
    public private(set) lazy var analysisMessages: [OSCMessage] = addressSpace.analysisMessages(for: snapshot)
    /// The capture time of the snapshot's last frame, as an OSC time tag (now, when unknown).
    public private(set) lazy var timeTag: UInt64 = snapshot.timeTag != 0 ? snapshot.timeTag : OSCBundle.timeTagNow()

    /// Whether an output has asked for bundles of this size already.
    public func hasBundles(maxSize: Int) -> Bool { bundlesBySize[maxSize] != nil }

    /// The messages as OSC bundles of at most `maxSize` bytes each.
    public func bundles(maxSize: Int = OSCBundle.safeDatagramSize) -> [[UInt8]] {
        if let made = bundlesBySize[maxSize] { return made }
        let made = OSCBundle.encode(messages, timeTag: timeTag, maxSize: maxSize)
        bundlesBySize[maxSize] = made
        return made
    }
}

/// Every output's counters (`SnapshotOutput.counters`), in one place that the status reads:
/// the worker copies them into each snapshot's `outputCounters` before it publishes it, as it
/// copies the engine's own counters into `status` — the outputs never write into what they
/// print. Read from any thread (the counters are atomics).
public final class OutputCounterRegistry: Sendable {
    private let outputs: [any SnapshotOutput]

    public init(_ outputs: [any SnapshotOutput]) { self.outputs = outputs }

    /// Each output's counters, by output in its list's order, then by name.
    public var counters: [OutputCounter] {
        outputs.flatMap { o in
            o.counters.sorted { $0.key < $1.key }.map { OutputCounter(output: o.name, name: $0.key, value: $0.value) }
        }
    }
}
