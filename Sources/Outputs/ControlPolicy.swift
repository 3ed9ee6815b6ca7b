#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address range (`10.0.0.0/8`, `192.168.1.20`, `::1`, `fd00::/8`): the sources
/// `--control-from` lets send control commands.
public struct AddressRange: Equatable, Sendable, CustomStringConvertible {
    /// The network's bytes (4 or 16).
    public let bytes: [UInt8]
    /// Leading bits that must match.
    public let prefixLength: Int

    /// The loopback ranges, 127.0.0.0/8 and ::1: the sources allowed without `--control-from`.
    public static let loopback = [AddressRange(bytes: [127, 0, 0, 0], prefixLength: 8),
                                  AddressRange(bytes: [UInt8](repeating: 0, count: 15) + [1], prefixLength: 128)]

    init(bytes: [UInt8], prefixLength: Int) {
        self.bytes = bytes
        self.prefixLength = prefixLength
    }

    /// Parses `ADDRESS` or `ADDRESS/BITS` (numeric addresses only: a name could resolve to
    /// anything later). Throws one line saying what is wrong.
    public init(parsing text: String) throws(OSCAddressError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let address = String(parts[0])
        var v4 = in_addr(), v6 = in6_addr()
        let parsed: [UInt8]
        if inet_pton(AF_INET, address, &v4) == 1 {
            parsed = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, address, &v6) == 1 {
            parsed = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            throw .badRange(text, "'\(address)' is not a numeric IPv4 or IPv6 address")
        }
        var length = parsed.count * 8
        if parts.count == 2 {
            guard let n = Int(parts[1]), (0...length).contains(n) else {
                throw .badRange(text, "the prefix length must be from 0 to \(length)")
            }
            length = n
        }
        bytes = parsed
        prefixLength = length
    }

    /// Whether `address` (4 or 16 bytes; an IPv4-mapped IPv6 address counts as its IPv4
    /// address) lies in the range.
    public func contains(_ address: [UInt8]) -> Bool {
        var a = address
        if a.count == 16 && bytes.count == 4 && a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF {
            a = Array(a[12...])
        }
        guard a.count == bytes.count else { return false }
        var bits = prefixLength, i = 0
        while bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if a[i] & mask != bytes[i] & mask { return false }
            bits -= 8
            i += 1
        }
        return true
    }

    /// The address bytes of a socket address (nil for other families).
    public static func bytes(of address: sockaddr_storage) -> [UInt8]? {
        var a = address
        switch Int32(a.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in withUnsafeBytes(of: p.pointee.sin_addr) { Array($0) } }
            }
        case AF_INET6:
            return withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in withUnsafeBytes(of: p.pointee.sin6_addr) { Array($0) } }
            }
        default:
            return nil
        }
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = bytes.withUnsafeBytes { inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }
        let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return prefixLength == bytes.count * 8 ? address : "\(address)/\(prefixLength)"
    }
}

/// A token bucket: at most `rate` commands a second on average, `burst` at once. Pure logic
/// (the caller gives the time), one thread.
public struct CommandBucket: Sendable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var last: Int?

    /// The control input's: 50 commands a second, 100 at once — far more than a control surface
    /// sends, far less than a flood can make jackvu work for.
    public static let control = CommandBucket(rate: 50, burst: 100)

    public init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
        tokens = burst
    }

    /// Takes one token at `nanoseconds` (monotonic); false when the bucket is empty.
    public mutating func take(at nanoseconds: Int) -> Bool {
        if let last { tokens = min(burst, tokens + Double(max(0, nanoseconds - last)) / 1e9 * rate) }
        last = nanoseconds
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

/// The OSC destinations added by `PREFIX/subscribe`: each lasts `lifetime` seconds unless
/// renewed by subscribing again, a source host has at most `perSource` of them, and all of
/// them together at most `capacity`. `unsubscribe` removes only these, never a destination
/// given on the command line. Pure logic (the caller gives the time), one thread.
public struct Subscriptions: Sendable {
    /// Subscriptions one host may hold.
    public static let perSource = 4
    /// How long a subscription lasts without renewal, seconds (`--subscribe-timeout`).
    public static let defaultLifetime = 60.0
    public static let lifetimeRange: ClosedRange<Double> = 1...3600

    public enum Outcome: Equatable, Sendable { case added, renewed, refused }

    public let lifetime: Double
    public private(set) var endpoints: [OSCEndpoint] = []
    private var expiries: [Int] = []

    public init(lifetime: Double = Subscriptions.defaultLifetime) { self.lifetime = lifetime }

    /// Adds or renews `endpoint` at `now` (monotonic nanoseconds), unless its host has
    /// `perSource` already or `capacity` are taken.
    public mutating func subscribe(_ endpoint: OSCEndpoint, now: Int, capacity: Int) -> Outcome {
        let expiry = now + Int(lifetime * 1e9)
        if let i = endpoints.firstIndex(of: endpoint) {
            expiries[i] = expiry
            return .renewed
        }
        guard endpoints.count < capacity, endpoints.filter({ $0.host == endpoint.host }).count < Subscriptions.perSource
        else { return .refused }
        endpoints.append(endpoint)
        expiries.append(expiry)
        return .added
    }

    /// Removes `endpoint`; false if it was not subscribed.
    public mutating func unsubscribe(_ endpoint: OSCEndpoint) -> Bool {
        guard let i = endpoints.firstIndex(of: endpoint) else { return false }
        endpoints.remove(at: i)
        expiries.remove(at: i)
        return true
    }

    /// Removes and returns the subscriptions expired at `now`.
    public mutating func expire(now: Int) -> [OSCEndpoint] {
        var gone: [OSCEndpoint] = []
        var i = 0
        while i < endpoints.count {
            if expiries[i] <= now {
                gone.append(endpoints.remove(at: i))
                expiries.remove(at: i)
            } else {
                i += 1
            }
        }
        return gone
    }
}
