import DSP

/// The JSON form of an update: one object per line, the same schema for the live client
/// (`jackvu --format json`) and `jackvu analyze --stream --format json`. Keys carry their
/// units (`_dbfs`, `_hz`, `_lufs`, …); a reading that does not exist is `null`; keys of
/// message kinds not selected (`--send`) are left out. The README documents the schema.
public struct JSONLines: Sendable {
    /// The kinds of reading to include.
    public var kinds: MessageKinds
    /// Instance readings (by kind) of which only these fields are written: a host that has
    /// only some of them (the LV2 plugin's `status`: no server, cycles or connections).
    public var onlyFields: [MessageKind: Set<String>]

    public init(kinds: MessageKinds = .all, onlyFields: [MessageKind: Set<String>] = [:]) {
        self.kinds = kinds
        self.onlyFields = onlyFields
    }

    /// One update as a JSON object and a newline; `file` leads it when given (analyze).
    /// Not real-time safe (allocates).
    public func line(for s: Snapshot, file: String? = nil) -> String {
        let selected = Readings.table.indices.compactMap { i -> Reading? in
            let r = Readings.table[i]
            return kinds.contains(MessageKind(index: i)) && !(r.liveOnly && file != nil) ? r : nil
        }
        var out = "{"
        if let file { out += "\"file\": \(jsonString(file)), " }
        out += "\"time_s\": \(JSONLines.number(s.audioTime)), \"sample_rate_hz\": \(s.sampleRate), \"channels\": ["
        let perChannel = selected.filter { $0.scope == .channel }
        for i in s.channels.indices {
            var fields = ["\"ch\": \(i + 1)"]
            for reading in perChannel { JSONLines.append(reading, subject: i, s, to: &fields) }
            out += (i > 0 ? ", " : "") + "{" + fields.joined(separator: ", ") + "}"
        }
        out += "]"
        // Channel pairs: an array by pair for each field.
        let pairReadings = selected.filter { $0.scope == .pair }
        let channelPairs = s.pairs.indices.filter { s.pairs[$0].programme == nil }
        for reading in pairReadings {
            for field in reading.fields where field.wire != .oscOnly {
                let values = channelPairs.map { JSONLines.json(field.value(s, $0)) }
                out += ", \"\(field.key)\": [\(values.joined(separator: ", "))]"
            }
        }
        // Each programme's readings in one object: the default programme's in "loudness", the
        // others' in "programmes" by name, with their pairs by label ("correlation":
        // {"L-R": 0.98}).
        var named: [String] = []
        for p in s.programmes.indices {
            var fields: [String] = []
            for reading in selected where reading.scope == .programme { JSONLines.append(reading, subject: p, s, to: &fields) }
            let own = s.pairs.indices.filter { s.pairs[$0].programme == p }
            if !own.isEmpty {
                for reading in pairReadings {
                    for field in reading.fields where field.wire != .oscOnly {
                        let values = own.map { "\(jsonString(s.pairs[$0].label)): \(JSONLines.json(field.value(s, $0)))" }
                        fields.append("\"\(field.key)\": {" + values.joined(separator: ", ") + "}")
                    }
                }
            }
            if s.programmes[p].name.isEmpty {
                if !fields.isEmpty { out += ", \"loudness\": {" + fields.joined(separator: ", ") + "}" }
            } else {
                named.append("\(jsonString(s.programmes[p].name)): {" + fields.joined(separator: ", ") + "}")
            }
        }
        if !named.isEmpty { out += ", \"programmes\": {" + named.joined(separator: ", ") + "}" }
        for reading in selected where reading.scope == .instance {
            // A reading with no value at all (the alarms without --alarm) is left out.
            if reading.fields.allSatisfy({ if case .missing = $0.value(s, 0) { true } else { false } }) { continue }
            var fields: [String] = []
            JSONLines.append(reading, subject: 0, s, only: MessageKind(rawValue: reading.kind).flatMap { onlyFields[$0] }, to: &fields)
            out += ", \"\(reading.jsonObject ?? reading.kind)\": {" + fields.joined(separator: ", ") + "}"
        }
        return out + "}\n"
    }

    /// A reading's `"key": value` pairs for one subject (of the fields in `only`, if given).
    private static func append(_ reading: Reading, subject: Int, _ s: Snapshot, only: Set<String>? = nil, to fields: inout [String]) {
        for field in reading.fields where field.wire != .oscOnly && only.map({ $0.contains(field.key) }) ?? true {
            fields.append("\"\(field.key)\": \(json(field.value(s, subject)))")
        }
    }

    /// A value as JSON (`ReadingValue.json`).
    static func json(_ v: ReadingValue) -> String { v.json }

    static func number(_ x: Double) -> String { x.isFinite ? format3(x) : "null" }
}
