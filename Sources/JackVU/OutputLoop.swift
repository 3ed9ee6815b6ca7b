#if canImport(Glibc)
import Glibc
#endif
import Outputs
import Realtime
import Synchronization

/// Changes the control input asks of the outputs, handed from its thread to the output
/// thread.
final class OutputControl: @unchecked Sendable {
    // @unchecked Sendable: every field is a Mutex or an atomic.
    /// Updates per second (bit pattern of a Double).
    let rateBits: Atomic<UInt64>
    /// The message selection, when changed.
    let kinds = Mutex<MessageKinds?>(nil)
    /// Destinations to add or remove.
    let subscriptions = Mutex<[(OSCEndpoint, Bool)]>([])

    init(rate: Double) { rateBits = Atomic(rate.bitPattern) }

    var rate: Double {
        get { Double(bitPattern: rateBits.load(ordering: .relaxed)) }
        set { rateBits.store(newValue.bitPattern, ordering: .relaxed) }
    }
}

/// The stdout writer: its own thread, so that a slow reader blocks only it. The output thread
/// hands it the newest text; text it had not taken yet is replaced, and counted as skipped.
final class StdoutWriter: @unchecked Sendable {
    // @unchecked Sendable: `pending` is a Mutex; the sink is a value.
    private let sink: FileDescriptorSink
    private let pending = Mutex<String?>(nil)
    private let wake = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    private let skipped: Counter
    private let onClosed: @Sendable (OutputError) -> Void
    private var thread: PosixThread?

    init(sink: FileDescriptorSink, skipped: Counter, onClosed: @escaping @Sendable (OutputError) -> Void) {
        self.sink = sink
        self.skipped = skipped
        self.onClosed = onClosed
        thread = PosixThread(name: "jackvu-stdout") { [self] in run() }
    }

    /// Hands over the newest text. Never blocks for long (a short lock).
    func offer(_ text: String) {
        let replaced = pending.withLock { slot in
            defer { slot = text }
            return slot != nil
        }
        if replaced { skipped.add() }
        wake.signal()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        thread?.join()
        thread = nil
    }

    private func run() {
        while !stopping.load(ordering: .relaxed) {
            wake.wait(timeout: 0.1)
            guard let text = pending.withLock({ slot in defer { slot = nil }; return slot }) else { continue }
            do { try sink.write(text) } catch {
                onClosed(error)
                return
            }
        }
    }
}

/// The output thread: fans each new snapshot out to every output, at most `rate` times a
/// second and as soon as the worker has published one (it is woken): the text or JSON on
/// stdout (through `StdoutWriter`), OSC bundles over UDP to every destination, and OSC
/// packets for the `osc` MIDI port (through a queue the process callback empties). Nothing
/// here waits on an output: UDP sends never block (failures counted), the port's queue drops
/// what does not fit (counted), and stdout has its own thread.
final class OutputLoop: @unchecked Sendable {
    // @unchecked Sendable: the snapshot front and the senders are used by this loop's thread
    // only.
    private let snapshots: TripleBuffer<Snapshot>
    private var addressSpace: AddressSpace
    private var json: JSONLines
    private let format: OutputFormat
    private let stdout: StdoutWriter?
    /// The destinations given (`--osc`): never removed.
    private let senders: [OSCSender]
    /// Those added by `subscribe`, in the order of `subscriptions.endpoints`.
    private var subscribers: [OSCSender] = []
    private var subscriptions: Subscriptions
    /// Where a refused subscription is counted (the control input's rejections).
    private let controlRejected: Counter?
    private let oscPort: PacketQueue?
    /// The largest event the `osc` port took in its last cycle, bytes (0: not known yet).
    private let oscPortMaxEvent: Counter
    private let displays: [any Display]
    private let shared: SharedState
    private let control: OutputControl
    /// Woken by the worker after each publish.
    let wake = WakeSignal()
    private var thread: PosixThread?

    /// At most this many destinations, those given and those subscribed together.
    static let maxDestinations = 32

    init(snapshots: TripleBuffer<Snapshot>, configuration c: Configuration, stdout: StdoutWriter?,
         senders: [OSCSender], oscPort: PacketQueue?, oscPortMaxEvent: Counter, displays: [any Display] = [],
         shared: SharedState, control: OutputControl, controlRejected: Counter? = nil)
    {
        self.snapshots = snapshots
        subscriptions = Subscriptions(lifetime: c.subscribeTimeout)
        self.controlRejected = controlRejected
        addressSpace = AddressSpace(prefix: c.prefix, kinds: c.send)
        json = JSONLines(kinds: c.send)
        format = c.format
        self.stdout = stdout
        self.senders = senders
        self.oscPort = oscPort
        self.oscPortMaxEvent = oscPortMaxEvent
        self.displays = displays
        self.shared = shared
        self.control = control
    }

    func start() {
        thread = PosixThread(name: "jackvu-output") { [self] in run() }
    }

    func join() {
        wake.signal()
        thread?.join()
        thread = nil
    }

    private func run() {
        var nextAllowed = 0
        var rate = control.rate
        while !shared.stopping.load(ordering: .relaxed) {
            applyControl()
            if control.rate != rate {  // a new rate applies from now
                rate = control.rate
                nextAllowed = min(nextAllowed, monotonicNanoseconds() + max(1, Int(1e9 / rate)))
            }
            let now = monotonicNanoseconds()
            if now < nextAllowed {
                // Too early for the next update: sleep until it is due (in steps of at most
                // 100 ms, so that stopping and a new --rate take effect soon).
                let until = min(nextAllowed, now + 100_000_000)
                var deadline = timespec(tv_sec: until / 1_000_000_000, tv_nsec: until % 1_000_000_000)
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
                continue
            }
            guard snapshots.refresh() else {
                wake.wait(timeout: 0.1)
                continue
            }
            let sent = snapshots.withFront { snapshot -> Bool in
                guard snapshot.sequence > 0 else { return false }
                emit(snapshot)
                return true
            }
            if sent { nextAllowed = monotonicNanoseconds() + max(1, Int(1e9 / control.rate)) }
        }
    }

    private func applyControl() {
        if let kinds = control.kinds.withLock({ k in defer { k = nil }; return k }) {
            addressSpace.kinds = kinds
            json.kinds = kinds
        }
        let changes = control.subscriptions.withLock { s in defer { s = [] }; return s }
        let now = monotonicNanoseconds()
        for (endpoint, add) in changes {
            // A destination given on the command line is neither added twice nor removed.
            if senders.contains(where: { $0.endpoint.host == endpoint.host && $0.endpoint.port == endpoint.port }) { continue }
            if add {
                switch subscriptions.subscribe(endpoint, now: now, capacity: OutputLoop.maxDestinations - senders.count) {
                case .added:
                    if let sender = try? OSCSender(endpoint: endpoint) {
                        subscribers.append(sender)
                    } else {
                        _ = subscriptions.unsubscribe(endpoint)
                        controlRejected?.add()
                    }
                case .renewed: break
                case .refused: controlRejected?.add()
                }
            } else if subscriptions.unsubscribe(endpoint) {
                subscribers.removeAll { $0.endpoint == endpoint }
            }
        }
        for endpoint in subscriptions.expire(now: now) { subscribers.removeAll { $0.endpoint == endpoint } }
    }

    /// Sends every packet to one destination; failures counted.
    private func send(_ packets: [[UInt8]], to sender: OSCSender) {
        for packet in packets where !sender.send(packet) { shared.oscSendFailures.add() }
    }

    private func emit(_ snapshot: Snapshot) {
        for display in displays { display.show(snapshot) }
        if let stdout, format == .json { stdout.offer(json.line(for: snapshot)) }
        guard stdout != nil && format == .text || !senders.isEmpty || !subscribers.isEmpty || oscPort != nil else { return }
        let messages = addressSpace.messages(for: snapshot)
        if let stdout, format == .text {
            var text = ""
            for m in messages { text += m.text }
            stdout.offer(text)
        }
        guard !senders.isEmpty || !subscribers.isEmpty || oscPort != nil else { return }
        let timeTag = snapshot.timeTag != 0 ? snapshot.timeTag : OSCBundle.timeTagNow()
        var udp: [[UInt8]] = []
        if !senders.isEmpty || !subscribers.isEmpty {
            udp = OSCBundle.encode(messages, timeTag: timeTag)
            for sender in senders { send(udp, to: sender) }
            for sender in subscribers { send(udp, to: sender) }
        }
        if let oscPort {
            let portMax = oscPortMaxEvent.count
            // The same bundles, unless the port's events are smaller than a safe datagram.
            let packets = portMax > 0 && portMax < OSCBundle.safeDatagramSize || udp.isEmpty
                ? OSCBundle.encode(messages, timeTag: timeTag, maxSize: portMax > 0 ? portMax : OSCBundle.safeDatagramSize)
                : udp
            for packet in packets {
                if portMax > 0 && packet.count > portMax {
                    oscPort.countDropped()
                } else {
                    oscPort.push(packet)
                }
            }
        }
    }
}
