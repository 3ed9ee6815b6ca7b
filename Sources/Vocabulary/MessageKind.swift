/// A kind of message jackvu sends (`--send`): one reading of `Readings.table`, named as its
/// entry. Every output (text, JSON, OSC over UDP, the `osc` port) sends the same selection.
public struct MessageKind: Hashable, Sendable, CustomStringConvertible {
    /// The reading's place in the table.
    public let index: Int

    public init(index: Int) { self.index = index }

    /// The kind named `name`, nil when there is none.
    public init?(rawValue name: String) {
        guard let i = Readings.table.firstIndex(where: { $0.kind == name }) else { return nil }
        index = i
    }

    public var reading: Reading { Readings.table[index] }
    public var rawValue: String { reading.kind }
    public var description: String { rawValue }
    /// What it is, for `--help` and the README.
    public var summary: String { reading.summary }

    /// Every kind, in the table's order.
    public static var allCases: [MessageKind] { Readings.table.indices.map { MessageKind(index: $0) } }

    /// Kinds the code names (the table has more: look them up by name).
    public static let peak = named("peak"), rms = named("rms"), level = named("level"), hold = named("hold")
    public static let meter = named("meter"), truepeak = named("truepeak"), dpeak = named("dpeak")
    public static let vu = named("vu"), ppm = named("ppm"), k = named("k"), pitch = named("pitch")
    public static let peakfreq = named("peakfreq"), bars = named("bars"), thirds = named("thirds")
    public static let correlation = named("correlation"), loudness = named("loudness")
    public static let status = named("status"), callback = named("callback"), alarms = named("alarms")
    public static let bits = named("bits"), stereo = named("stereo"), histogram = named("histogram")

    private static func named(_ name: String) -> MessageKind {
        guard let kind = MessageKind(rawValue: name) else { preconditionFailure("no reading '\(name)' in Readings.table") }
        return kind
    }
}

/// A set of message kinds.
public struct MessageKinds: Equatable, Sendable {
    private var bits: UInt64

    public init(_ kinds: [MessageKind] = []) {
        bits = 0
        for k in kinds { insert(k) }
    }

    /// Every kind but those sent only on request (`Reading.onRequest`): the default, and
    /// what `all` names.
    public static let all = MessageKinds(MessageKind.allCases.filter { !$0.reading.onRequest })

    public func contains(_ k: MessageKind) -> Bool { bits & MessageKinds.bit(k) != 0 }
    public mutating func insert(_ k: MessageKind) { bits |= MessageKinds.bit(k) }
    public var isEmpty: Bool { bits == 0 }
    /// The kinds in the order their messages come.
    public var kinds: [MessageKind] { MessageKind.allCases.filter(contains) }

    private static func bit(_ k: MessageKind) -> UInt64 {
        precondition(k.index < 64, "Readings.table has more than 64 readings: widen MessageKinds")
        return 1 << UInt64(k.index)
    }

    /// Parses a comma-separated list of kinds (`peak,rms,pitch`; `all` for every kind but
    /// those sent only on request, which are named beside it: `all,bits,stereo`). Throws a
    /// message naming the first unknown kind.
    public static func parse(_ list: String) throws(MessageKindError) -> MessageKinds {
        var set = MessageKinds()
        for part in list.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: " ")
            if name == "all" {
                for k in MessageKinds.all.kinds { set.insert(k) }
                continue
            }
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
