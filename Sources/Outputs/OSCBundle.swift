#if canImport(Glibc)
import Glibc
#endif
import CLiblo

/// OSC 1.0 bundles, serialised by liblo: one update's messages under one time tag, split into
/// several bundles when one would exceed `maxSize` bytes (a message larger than that on its
/// own goes alone in its bundle).
public enum OSCBundle {
    /// A safe UDP payload: an Ethernet MTU of 1500 bytes less the IPv6 (40) and UDP (8)
    /// headers, so that no datagram is fragmented on its way.
    public static let safeDatagramSize = 1452

    /// Serialises `messages` as bundles with `timeTag` (NTP format: seconds since 1900 in the
    /// upper 32 bits, fraction below). Not real-time safe (allocates).
    public static func encode(_ messages: [OSCMessage], timeTag: UInt64, maxSize: Int = safeDatagramSize) -> [[UInt8]] {
        let tt = lo_timetag(sec: UInt32(truncatingIfNeeded: timeTag >> 32), frac: UInt32(truncatingIfNeeded: timeTag))
        var out: [[UInt8]] = []
        var bundle: lo_bundle? = nil
        var count = 0
        func finish() {
            guard let b = bundle else { return }
            var size = 0
            if let raw = lo_bundle_serialise(b, nil, &size) {
                out.append(Array(UnsafeRawBufferPointer(start: raw, count: size)))
                free(raw)
            }
            lo_bundle_free_recursive(b)
            bundle = nil
            count = 0
        }
        for message in messages {
            guard let m = loMessage(message) else { continue }
            if bundle == nil { bundle = lo_bundle_new(tt) }
            let messageSize = 4 + lo_message_length(m, message.address)
            if count > 0 && lo_bundle_length(bundle) + messageSize > maxSize {
                finish()
                bundle = lo_bundle_new(tt)
            }
            lo_bundle_add_message(bundle, message.address, m)
            count += 1
        }
        finish()
        return out
    }

    /// A liblo message with the same arguments (owned by the caller until added to a bundle).
    static func loMessage(_ message: OSCMessage) -> lo_message? {
        guard let m = lo_message_new() else { return nil }
        for argument in message.arguments {
            switch argument {
            case .float(let f): lo_message_add_float(m, f)
            case .int(let i): lo_message_add_int32(m, i)
            case .string(let s): lo_message_add_string(m, s)
            }
        }
        return m
    }

    /// The current time as an OSC time tag, from the system's real-time clock.
    public static func timeTagNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return timeTag(unixMicroseconds: UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec / 1000))
    }

    /// Seconds between the NTP epoch (1900) and the Unix epoch (1970).
    public static let ntpUnixOffset: UInt64 = 2_208_988_800

    /// A Unix time in microseconds as an OSC time tag.
    public static func timeTag(unixMicroseconds us: UInt64) -> UInt64 {
        let seconds = us / 1_000_000 + ntpUnixOffset
        let fraction = ((us % 1_000_000) << 32) / 1_000_000
        return seconds << 32 | fraction
    }
}

/// The bytes of one OSC packet, decoded by liblo: a message, or a bundle of them (nested
/// bundles are walked). Used for the control input and by the tests.
public enum OSCDecoder {
    /// Why a packet was refused.
    public enum Failure: Error, Equatable, Sendable {
        /// Not a valid OSC 1.0 packet (liblo's error code, or a bad bundle element).
        case malformed
    }

    /// The messages in `bytes`, in order, or `.malformed`. Arguments of types jackvu does not
    /// use (blobs, doubles, …) are converted where OSC allows (`d` → float, `h` → int) and
    /// otherwise kept out. Not real-time safe.
    public static func messages(in bytes: UnsafeRawBufferPointer) throws(Failure) -> [OSCMessage] {
        var out: [OSCMessage] = []
        try walk(bytes, into: &out, depth: 0)
        return out
    }

    public static func messages(in bytes: [UInt8]) throws(Failure) -> [OSCMessage] {
        let result: Result<[OSCMessage], Failure> = bytes.withUnsafeBytes { b in
            do throws(Failure) { return .success(try messages(in: b)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The time tag of a bundle (NTP format), nil for a message or a malformed packet.
    public static func timeTag(of bytes: [UInt8]) -> UInt64? {
        guard bytes.count >= 16, bytes.starts(with: Array("#bundle\0".utf8)) else { return nil }
        return bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }

    private static func walk(_ bytes: UnsafeRawBufferPointer, into out: inout [OSCMessage], depth: Int) throws(Failure) {
        guard let base = bytes.baseAddress, bytes.count >= 4, bytes.count % 4 == 0, depth < 8 else {
            throw .malformed
        }
        if bytes.count >= 16 && memcmp(base, "#bundle", 8) == 0 {
            var offset = 16
            while offset < bytes.count {
                guard offset + 4 <= bytes.count else { throw .malformed }
                let size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                    | Int(bytes[offset + 3])
                offset += 4
                guard size > 0, offset + size <= bytes.count else { throw .malformed }
                try walk(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]), into: &out, depth: depth + 1)
                offset += size
            }
            return
        }
        // liblo checks the address, the type tags and every argument against the size.
        var result: Int32 = 0
        guard let m = lo_message_deserialise(UnsafeMutableRawPointer(mutating: base), bytes.count, &result) else {
            throw .malformed
        }
        defer { lo_message_free(m) }
        let address = String(cString: base.assumingMemoryBound(to: CChar.self))
        let types = lo_message_get_types(m).map { String(cString: $0) } ?? ""
        let argv = lo_message_get_argv(m)
        var arguments: [OSCArgument] = []
        for (i, t) in types.utf8.enumerated() {
            // Each argument is read at its own size: liblo allocates 4 bytes for an `i` or `f`,
            // and `arg.pointee` would load the whole lo_arg union past them (found by the fuzzer).
            guard let pointer = argv?[i] else { throw .malformed }
            let arg = UnsafeRawPointer(pointer)
            switch UInt8(t) {
            case UInt8(ascii: "f"): arguments.append(.float(arg.loadUnaligned(as: Float.self)))
            case UInt8(ascii: "d"): arguments.append(.float(Float(arg.loadUnaligned(as: Double.self))))
            case UInt8(ascii: "i"): arguments.append(.int(arg.loadUnaligned(as: Int32.self)))
            case UInt8(ascii: "h"): arguments.append(.int(Int32(clamping: arg.loadUnaligned(as: Int64.self))))
            case UInt8(ascii: "s"), UInt8(ascii: "S"):
                arguments.append(.string(String(cString: arg.assumingMemoryBound(to: CChar.self))))
            default: break
            }
        }
        out.append(OSCMessage(address, arguments))
    }
}
