import CJack

/// The buffers of one process cycle. A scope exists only for the duration of one call to
/// `ProcessHandler.process(_:)`: do not keep it, or any buffer it hands out, past that call.
public struct ProcessScope {
    /// Frames in this cycle (the server's buffer size).
    public let frames: Int
    /// When this cycle started, on JACK's microsecond clock (`Client.microsecondsNow`); 0
    /// during warm-up.
    public let cycleStartMicroseconds: UInt64
    /// The cycle's first frame on JACK's frame clock (`jack_last_frame_time`), which counts
    /// every period the server runs, wrapping at 2³²: a cycle that starts further on than
    /// the last one's end followed cycles this client missed. Meaningful only when
    /// `cycleStartMicroseconds` is not 0.
    public let cycleStartFrames: UInt32
    /// Set during warm-up: every port reads and writes this scratch buffer instead of JACK's.
    private let scratch: UnsafeMutablePointer<Float>?
    /// The client, for the transport (nil during warm-up).
    private let client: OpaquePointer?

    @inline(__always)
    init(frames: Int, scratch: UnsafeMutablePointer<Float>?, cycleStartMicroseconds: UInt64, cycleStartFrames: UInt32 = 0,
         client: OpaquePointer? = nil)
    {
        self.frames = frames
        self.scratch = scratch
        self.cycleStartMicroseconds = cycleStartMicroseconds
        self.cycleStartFrames = cycleStartFrames
        self.client = client
    }

    /// The JACK transport in this cycle: whether it rolls, and its frame. Real-time safe
    /// (jack_transport_query is, by JACK's documentation: it reads the engine's current
    /// position); stopped at frame 0 during warm-up.
    @inline(__always)
    public func transport() -> (rolling: Bool, frame: Int) {
        guard scratch == nil, let client else { return (false, 0) }
        var position = jack_position_t()
        let state = jack_transport_query(client, &position)
        // Raw values: `==` on the imported enum would look up its type metadata, which takes a
        // lock the first time (RealtimeSanitizer caught it in the first cycle).
        return (state.rawValue == JackTransportRolling.rawValue, Int(position.frame))
    }

    /// The event buffer of a MIDI output port for this cycle, cleared. Call once per cycle for
    /// every MIDI output port (JACK requires it to be cleared). Real-time safe.
    @inline(__always)
    public func midiOutput(_ port: MIDIOutPort) -> MIDIOutputBuffer {
        if scratch != nil { return MIDIOutputBuffer(raw: nil, frames: frames) }
        let raw = jack_port_get_buffer(port.raw, jack_nframes_t(frames))
        if let raw { jack_midi_clear_buffer(raw) }
        return MIDIOutputBuffer(raw: raw, frames: frames)
    }

    /// The samples an input port received this cycle. Real-time safe.
    @inline(__always)
    public func input(_ port: AudioInPort) -> UnsafeBufferPointer<Float> {
        UnsafeBufferPointer(buffer(port.raw))
    }

    /// The samples an output port sends this cycle; fill all of them. Real-time safe.
    @inline(__always)
    public func output(_ port: AudioOutPort) -> UnsafeMutableBufferPointer<Float> {
        buffer(port.raw)
    }

    @inline(__always)
    private func buffer(_ port: OpaquePointer) -> UnsafeMutableBufferPointer<Float> {
        if let scratch { return UnsafeMutableBufferPointer(start: scratch, count: frames) }
        let raw = jack_port_get_buffer(port, jack_nframes_t(frames))
        return UnsafeMutableBufferPointer(
            start: raw?.assumingMemoryBound(to: Float.self), count: raw == nil ? 0 : frames)
    }
}

/// One cycle's event buffer of a MIDI output port (see `ProcessScope.midiOutput`). Valid only
/// during that cycle. During warm-up it has no buffer, and writes succeed without effect.
public struct MIDIOutputBuffer {
    private let raw: UnsafeMutableRawPointer?
    private let frames: Int

    @inline(__always)
    init(raw: UnsafeMutableRawPointer?, frames: Int) {
        self.raw = raw
        self.frames = frames
    }

    /// The largest event that still fits this cycle, in bytes. Real-time safe.
    @inline(__always)
    public var maxEventSize: Int { raw.map { Int(jack_midi_max_event_size($0)) } ?? Int.max }

    /// Writes an event made of `first` then `second` (two pieces of one packet) at frame
    /// `time` of the cycle; false if it does not fit. Real-time safe (copies only).
    @inline(__always)
    public func write(at time: Int, _ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        guard let raw else { return true }
        let size = first.count + second.count
        guard size > 0, let dst = jack_midi_event_reserve(raw, jack_nframes_t(min(max(0, time), frames - 1)), size)
        else { return false }
        if let p = first.baseAddress { dst.update(from: p, count: first.count) }
        if let p = second.baseAddress { (dst + first.count).update(from: p, count: second.count) }
        return true
    }
}

/// The real-time handler: JACK calls `process` once per cycle on its real-time thread.
///
/// Inside `process`, and everything it calls: no allocation (no Array growth, no String, no
/// class instance, no existential boxing, no closure that escapes), no lock, no I/O, no print,
/// no waiting, no Swift runtime work that may allocate (first use of generic metadata: hence
/// `Client.warmUp`). Everything it touches is preallocated before the client is activated.
/// When linked with RealtimeSanitizer, any such call in `process` aborts with a report.
public protocol ProcessHandler: AnyObject, Sendable {
    /// Handles one cycle; returns false to stop processing (JACK then stops calling it).
    /// Real-time safe — must be.
    func process(_ scope: ProcessScope) -> Bool
}

/// A process handler of one closure, for a small client whose cycle is a few lines (the
/// probes' step and watch clients): `client.setHandlers(notifications: nil) { scope in … }`.
/// The closure runs on the real-time thread under `ProcessHandler`'s rules; what it keeps
/// between cycles is what it captures (atomics in a class of their own, as Swift's atomics
/// cannot be copied into a closure).
public final class ProcessClosure: ProcessHandler, @unchecked Sendable {
    // @unchecked Sendable: the closure is called by JACK's process thread only.
    private let body: (ProcessScope) -> Bool

    public init(_ body: @escaping (ProcessScope) -> Bool) { self.body = body }

    @inline(__always)
    public func process(_ scope: ProcessScope) -> Bool { body(scope) }
}

/// The non-real-time handler: server events, called on a JACK notification thread. Keep them
/// short and non-blocking; do not call libjack from them. Every method has a default that
/// does nothing.
public protocol NotificationHandler: AnyObject, Sendable {
    /// The server shut down or dropped the client. Do not call libjack from here.
    func serverShutdown(reason: String)
    /// An xrun (a missed deadline somewhere in the graph) happened.
    func xrun()
    /// The server's sample rate is now `rate` Hz (also called once when the callback is set).
    func sampleRateChanged(_ rate: Int)
    /// The server's buffer size is now `frames`.
    func bufferSizeChanged(_ frames: Int)
    /// A port of any client was registered (`true`) or unregistered. Do not call libjack from
    /// here: note it and act on another thread.
    func portRegistration(registered: Bool)
    /// The server entered (`true`) or left freewheel mode (an offline bounce: cycles as fast
    /// as the clients allow, not in real time).
    func freewheel(_ on: Bool)
    /// Two ports were connected or disconnected (by anyone).
    func connectionChanged()
}

extension NotificationHandler {
    public func serverShutdown(reason: String) {}
    public func xrun() {}
    public func sampleRateChanged(_ rate: Int) {}
    public func bufferSizeChanged(_ frames: Int) {}
    public func portRegistration(registered: Bool) {}
    public func freewheel(_ on: Bool) {}
    public func connectionChanged() {}
}

/// What the C callbacks get as their argument: the handlers, kept alive by the client.
final class CallbackContext: @unchecked Sendable {
    // @unchecked Sendable: both fields are set once, before any callback is registered.
    let process: (any ProcessHandler)?
    let notifications: (any NotificationHandler)?
    /// The client, for the cycle times.
    let client: OpaquePointer?

    init(process: (any ProcessHandler)?, notifications: (any NotificationHandler)?, client: OpaquePointer?) {
        self.process = process
        self.notifications = notifications
        self.client = client
    }
}
