import CJack

/// A registered JACK port of this client, typed by what it carries and which way
/// (`AudioInPort`, `AudioOutPort`, `MIDIOutPort`), so that a process callback cannot read an
/// output as an input: `ProcessScope.input` takes an `AudioInPort` only. A small value: copy it
/// freely; it stays valid until the client that registered it closes.
public struct Port<Kind: PortKind>: @unchecked Sendable, Equatable {
    // @unchecked Sendable: a jack_port_t handle is safe to use from any of the client's
    // threads; libjack owns it and frees it when the client closes.
    let raw: OpaquePointer

    /// Full name, `client:port`. Not real-time safe (allocates).
    public var name: String { any.name }
    /// Short name, without the client part. Not real-time safe (allocates).
    public var shortName: String { any.shortName }
    /// The port's UUID, the subject of its metadata.
    public var uuid: UInt64 { any.uuid }
    /// Number of connections. Not real-time safe.
    public var connectionCount: Int { any.connectionCount }
    /// The port whatever it carries (for its metadata, its name).
    public var any: AnyPort { AnyPort(raw: raw) }
}

/// What a port carries and which way, seen from this client (the `Kind` of a `Port`).
public protocol PortKind: Sendable {
    static var type: PortType { get }
    static var direction: PortDirection { get }
}

/// Audio (or CV) from other clients.
public enum AudioIn: PortKind {
    public static var type: PortType { .audio }
    public static var direction: PortDirection { .input }
}

/// Audio (or CV) to other clients.
public enum AudioOut: PortKind {
    public static var type: PortType { .audio }
    public static var direction: PortDirection { .output }
}

/// JACK MIDI events to other clients.
public enum MIDIOut: PortKind {
    public static var type: PortType { .midi }
    public static var direction: PortDirection { .output }
}

public typealias AudioInPort = Port<AudioIn>
public typealias AudioOutPort = Port<AudioOut>
public typealias MIDIOutPort = Port<MIDIOut>

/// A port of this client whatever it carries: what metadata and names need.
public struct AnyPort: @unchecked Sendable, Equatable {
    // @unchecked Sendable: as `Port`.
    let raw: OpaquePointer

    /// Full name, `client:port`. Not real-time safe (allocates).
    public var name: String { String(cString: jack_port_name(raw)) }
    /// Short name, without the client part. Not real-time safe (allocates).
    public var shortName: String { String(cString: jack_port_short_name(raw)) }
    /// The port's UUID, the subject of its metadata.
    public var uuid: UInt64 { jack_port_uuid(raw) }
    /// Number of connections. Not real-time safe.
    public var connectionCount: Int { Int(jack_port_connected(raw)) }
}

/// What a port carries.
public enum PortType: Sendable {
    /// Mono 32-bit float audio (also used for CV).
    case audio
    /// JACK MIDI: timestamped byte events (also used for OSC, as JACK's event-types metadata
    /// says).
    case midi

    var typeName: String {
        switch self {
        case .audio: return JACK_DEFAULT_AUDIO_TYPE
        case .midi: return JACK_DEFAULT_MIDI_TYPE
        }
    }
}

/// Which way a port carries signal, seen from this client.
public enum PortDirection: Sendable {
    /// The port receives audio from other clients (JackPortIsInput).
    case input
    /// The port sends audio to other clients (JackPortIsOutput).
    case output

    var flags: UInt {
        switch self {
        case .input: return UInt(JackPortIsInput.rawValue)
        case .output: return UInt(JackPortIsOutput.rawValue)
        }
    }
}

/// JACK metadata keys (jack/metadata.h) and value types that jackvu sets.
public enum MetadataKey {
    /// `http://jackaudio.org/metadata/signal-type`: `AUDIO` or `CV`.
    public static let signalType = "http://jackaudio.org/metadata/signal-type"
    /// `http://jackaudio.org/metadata/pretty-name`: a human-readable name.
    public static let prettyName = "http://jackaudio.org/metadata/pretty-name"
    /// `http://jackaudio.org/metadata/order`: an integer giving the port's position.
    public static let order = "http://jackaudio.org/metadata/order"
    /// `http://jackaudio.org/metadata/event-types`: what a MIDI port's events are (`MIDI`,
    /// `OSC`, or both, comma-separated).
    public static let eventTypes = "http://jackaudio.org/metadata/event-types"
    /// The type of integer values (e.g. `order`).
    public static let integerType = "http://www.w3.org/2001/XMLSchema#integer"
}
