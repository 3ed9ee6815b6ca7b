/// The kinds of message jackvu sends, each named as its address ends (`--send`). Every output
/// (text, JSON, OSC over UDP, the `osc` port) sends the same selection.
public enum MessageKind: String, CaseIterable, Sendable {
    case peak, rms, level, hold, meter, truepeak, dpeak, vu, ppm, k, pitch, peakfreq, bars, thirds
    case correlation, loudness, status, callback

    /// What each kind is, for `--help` and the README.
    public var summary: String {
        switch self {
        case .peak: return "sample peak of the analysis block, dBFS"
        case .rms: return "RMS of the analysis block, dBFS"
        case .level: return "display level 0..1"
        case .hold: return "peak-hold display value 0..1"
        case .meter: return "the meter port's value 0..1"
        case .truepeak: return "true peak, dBTP"
        case .dpeak: return "digital peak with hold, dBFS, and clips"
        case .vu: return "VU meter"
        case .ppm: return "PPM"
        case .k: return "K-System meter"
        case .pitch: return "the note played (YIN)"
        case .peakfreq: return "the FFT peak frequency and its note"
        case .bars: return "spectrum bars"
        case .thirds: return "1/3-octave bands"
        case .correlation: return "phase correlation of channel pairs"
        case .loudness: return "EBU R 128 loudness"
        case .status: return "status counters"
        case .callback: return "process callback timing"
        }
    }
}

/// A set of message kinds.
public struct MessageKinds: Equatable, Sendable {
    private var bits: UInt32

    public init(_ kinds: [MessageKind] = []) {
        bits = 0
        for k in kinds { insert(k) }
    }

    /// Every kind (the default).
    public static let all = MessageKinds(MessageKind.allCases)

    public func contains(_ k: MessageKind) -> Bool { bits & MessageKinds.bit(k) != 0 }
    public mutating func insert(_ k: MessageKind) { bits |= MessageKinds.bit(k) }
    public var isEmpty: Bool { bits == 0 }
    /// The kinds in the order their messages come.
    public var kinds: [MessageKind] { MessageKind.allCases.filter(contains) }

    private static func bit(_ k: MessageKind) -> UInt32 {
        1 << UInt32(MessageKind.allCases.firstIndex(of: k)!)
    }

    /// Parses a comma-separated list of kinds (`peak,rms,pitch`; `all` for every kind).
    /// Throws a message naming the first unknown kind.
    public static func parse(_ list: String) throws(MessageKindError) -> MessageKinds {
        var set = MessageKinds()
        for part in list.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: " ")
            if name == "all" { return .all }
            guard let k = MessageKind(rawValue: name) else { throw MessageKindError(name: name) }
            set.insert(k)
        }
        return set
    }
}

/// An unknown message kind in a `--send` list or a `send` command.
public struct MessageKindError: Error, Equatable, Sendable, CustomStringConvertible {
    public let name: String
    public var description: String {
        "'\(name)' is not a message kind (one of: \(MessageKind.allCases.map(\.rawValue).joined(separator: ",")), or all)"
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var s = self[...]
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return String(s)
    }
}
