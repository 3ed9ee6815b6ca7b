#if canImport(Glibc)
import Glibc
#endif

/// One argument of an OSC message.
public enum OSCArgument: Equatable, Sendable {
    /// `f`: 32-bit float.
    case float(Float)
    /// `i`: 32-bit integer.
    case int(Int32)
    /// `s`: string (ASCII; no NUL).
    case string(String)

    /// The OSC type tag.
    public var typeTag: Character {
        switch self {
        case .float: return "f"
        case .int: return "i"
        case .string: return "s"
        }
    }
}

/// An OSC 1.0 message: an address pattern and typed arguments.
public struct OSCMessage: Equatable, Sendable {
    /// The address, e.g. `/jackvu/ch/1/rms`.
    public var address: String
    /// The arguments, in order.
    public var arguments: [OSCArgument]

    public init(_ address: String, _ arguments: [OSCArgument]) {
        self.address = address
        self.arguments = arguments
    }

    /// The type tags without the leading comma, e.g. `fsf`.
    public var typeTags: String { String(arguments.map(\.typeTag)) }
}

// MARK: - Text

extension OSCMessage {
    /// The message as one line of text, exactly as `oscdump` (liblo-tools 0.31) prints it
    /// after its timetag: address, a space, the type tags, then each argument after a space —
    /// floats as C's `%f` of the value widened to double, integers as `%d`, strings in double
    /// quotes, unescaped — and a newline. Not real-time safe (allocates).
    public var text: String {
        var line = address
        line += " "
        line += typeTags
        for argument in arguments {
            line += " "
            switch argument {
            case .float(let f): line += OSCMessage.formatFloat(f)
            case .int(let i): line += String(i)
            case .string(let s): line += "\"\(escapedForLine(s, quote: true))\""
            }
        }
        line += "\n"
        return line
    }

    /// C's `printf("%f", (double)value)`: six decimals, rounded as glibc rounds them.
    static func formatFloat(_ value: Float) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let n = withVaList([Double(value)]) { vsnprintf(buffer.baseAddress, 64, "%f", $0) }
            if n >= 64 {  // |value| ≥ 1e56 is impossible for a Float, but stay honest
                return String(Double(value))
            }
            return String(cString: buffer.baseAddress!)
        }
    }
}

// MARK: - Binary (OSC 1.0)

extension OSCMessage {
    /// The message encoded as an OSC 1.0 packet: the address and `,` + type tags as
    /// NUL-terminated strings padded to 4 bytes, then the arguments big-endian.
    /// Not real-time safe (allocates).
    public var packet: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(address.utf8.count + 8 + 8 * arguments.count)
        OSCMessage.appendString(address, to: &bytes)
        OSCMessage.appendString("," + typeTags, to: &bytes)
        for argument in arguments {
            switch argument {
            case .float(let f): OSCMessage.appendBigEndian(f.bitPattern, to: &bytes)
            case .int(let i): OSCMessage.appendBigEndian(UInt32(bitPattern: i), to: &bytes)
            case .string(let s): OSCMessage.appendString(s, to: &bytes)
            }
        }
        return bytes
    }

    static func appendString(_ s: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: s.utf8)
        bytes.append(0)
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    static func appendBigEndian(_ v: UInt32, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: v >> 24))
        bytes.append(UInt8(truncatingIfNeeded: v >> 16))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        bytes.append(UInt8(truncatingIfNeeded: v))
    }
}

/// OSC address rules that jackvu's settable prefix must follow.
public enum OSCAddress {
    /// Characters OSC 1.0 reserves for pattern matching, which may not appear in an address.
    public static let reserved: Set<Character> = [" ", "#", "*", ",", "?", "[", "]", "{", "}"]

    /// nil if `prefix` is a valid address prefix (`/` followed by parts, no trailing `/`,
    /// printable ASCII, no reserved character), else why not.
    public static func problem(withPrefix prefix: String) -> String? {
        guard prefix.hasPrefix("/") else { return "must start with '/'" }
        guard prefix.count == 1 || !prefix.hasSuffix("/") else { return "must not end with '/'" }
        guard !prefix.contains("//") else { return "must not contain '//'" }
        for c in prefix {
            guard c.isASCII, let v = c.asciiValue, v > 32, v < 127 else {
                return "must be printable ASCII without spaces"
            }
            if reserved.contains(c) { return "must not contain '\(c)' (reserved in OSC)" }
        }
        return nil
    }
}
