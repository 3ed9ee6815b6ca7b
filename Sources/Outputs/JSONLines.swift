import DSP

/// The JSON form of an update: one object per line, the same schema for the live client
/// (`jackvu --format json`) and `jackvu analyze --stream --format json`. Keys carry their
/// units (`_dbfs`, `_hz`, `_lufs`, …); a reading that does not exist is `null`; keys of
/// message kinds not selected (`--send`) are left out. The README documents the schema.
public struct JSONLines: Sendable {
    /// The kinds of reading to include.
    public var kinds: MessageKinds

    public init(kinds: MessageKinds = .all) {
        self.kinds = kinds
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
            JSONLines.append(reading, subject: 0, s, to: &fields)
            out += ", \"\(reading.jsonObject ?? reading.kind)\": {" + fields.joined(separator: ", ") + "}"
        }
        return out + "}\n"
    }

    /// A reading's `"key": value` pairs for one subject.
    private static func append(_ reading: Reading, subject: Int, _ s: Snapshot, to fields: inout [String]) {
        for field in reading.fields where field.wire != .oscOnly {
            fields.append("\"\(field.key)\": \(json(field.value(s, subject)))")
        }
    }

    /// A value as JSON: numbers with three decimals, null for what is not finite or absent.
    static func json(_ v: ReadingValue) -> String {
        switch v {
        case .float(let x): return number(Double(x))
        case .double(let x): return number(x)
        case .int(let n), .wrappingInt(let n): return String(n)
        case .bool(let b): return b ? "true" : "false"
        case .note(let n): return n.map { jsonString($0.name) } ?? "null"
        case .text(let s): return jsonString(s)
        case .floats(let xs): return "[" + xs.map { number(Double($0)) }.joined(separator: ", ") + "]"
        case .missing: return "null"
        case .strings(let xs): return "[" + xs.map(jsonString).joined(separator: ", ") + "]"
        case .alarmEvents(let events): return "[" + events.map(\.json).joined(separator: ", ") + "]"
        case .counters(let counters):
            var outputs: [String] = []
            var byOutput: [String: [String]] = [:]
            for c in counters {
                if byOutput[c.output] == nil { outputs.append(c.output) }
                byOutput[c.output, default: []].append("\(jsonString(c.name)): \(c.value)")
            }
            return "{" + outputs.map { "\(jsonString($0)): {" + byOutput[$0]!.joined(separator: ", ") + "}" }.joined(separator: ", ") + "}"
        }
    }

    static func number(_ x: Double) -> String { x.isFinite ? format3(x) : "null" }
}

/// `x` with three decimals, as JSON and text print it.
public func format3(_ x: Double) -> String { fixed(x, 3) }

/// `x` rounded to `decimals` places, without exponent notation. A value that is not finite
/// prints as `nan`, `inf` or `-inf`, and one too large for exact digits (|x| ≥ 10^15) in
/// Swift's shortest form: no value traps.
public func fixed(_ x: Double, _ decimals: Int) -> String {
    guard x.isFinite else { return x.isNaN ? "nan" : x < 0 ? "-inf" : "inf" }
    guard abs(x) < 1e15 else { return String(x) }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let r = (x * scale).rounded() / scale
    let negative = r < 0
    let whole = Int(abs(r))
    var frac = Int(((abs(r) - Double(whole)) * scale).rounded())
    var w = whole
    if Double(frac) >= scale { w += 1; frac = 0 }
    let fracText = String(frac)
    let padded = String(repeating: "0", count: max(0, decimals - fracText.count)) + fracText
    return (negative && (w != 0 || frac != 0) ? "-" : "") + String(w) + (decimals > 0 ? "." + padded : "")
}

/// `s` safe on one line of a terminal or a log: control characters (a newline that would
/// forge a line, an escape sequence that would drive the terminal) become C-style escapes
/// (`\n`, `\t`, `\r`, `\e`, `\xHH`), and so do the backslash and, with `quote`, the double
/// quote. Names from outside (file names, port patterns, client names) pass through this
/// on their way into any text jackvu prints.
public func escapedForLine(_ s: String, quote: Bool = false) -> String {
    escaped(s, quote: quote) { u in
        switch u {
        case "\r": return "\\r"
        case "\u{1B}": return "\\e"
        default:
            guard u.value < 0x20 || (0x7F...0x9F).contains(u.value) else { return nil }
            let hex = String(u.value, radix: 16)
            return "\\x" + (hex.count < 2 ? "0" : "") + hex
        }
    }
}

/// A JSON string literal.
public func jsonString(_ s: String) -> String {
    "\"" + escaped(s, quote: true) { u in
        guard u.value < 0x20 else { return nil }
        let hex = String(u.value, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    } + "\""
}

/// `s` with the backslash, newline and tab escaped (and the double quote, with `quote`), and
/// every other scalar as `other` says (nil: as it is).
private func escaped(_ s: String, quote: Bool, _ other: (Unicode.Scalar) -> String?) -> String {
    var out = ""
    for u in s.unicodeScalars {
        switch u {
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\"" where quote: out += "\\\""
        default:
            if let replacement = other(u) { out += replacement } else { out.unicodeScalars.append(u) }
        }
    }
    return out
}
