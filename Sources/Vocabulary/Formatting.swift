#if canImport(Glibc)
import Glibc
#endif

// How jackvu prints numbers and strings in every output (text, JSON, the summaries).

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

extension ReadingValue {
    /// The value as a number, when it is one (a flag as 1 or 0); nil for text, lists and
    /// none. (Whether it is finite is the caller's to judge.)
    public var number: Double? {
        switch self {
        case .float(let x): return Double(x)
        case .double(let x): return x
        case .int(let n), .wrappingInt(let n): return Double(n)
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }

    /// A value as JSON: numbers with three decimals, null for what is not finite or absent.
    public var json: String {
        switch self {
        case .float(let x): return ReadingValue.number(Double(x))
        case .double(let x): return ReadingValue.number(x)
        case .int(let n), .wrappingInt(let n): return String(n)
        case .bool(let b): return b ? "true" : "false"
        case .note(let n): return n.map { jsonString($0.name) } ?? "null"
        case .text(let s): return jsonString(s)
        case .floats(let xs): return "[" + xs.map { ReadingValue.number(Double($0)) }.joined(separator: ", ") + "]"
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
