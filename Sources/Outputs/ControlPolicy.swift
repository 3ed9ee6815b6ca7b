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
/// given on the command line. Pure logic (the caller gives the time and the tokens), one
/// thread.
///
/// A subscription from a source that is not this machine (`isLoopback`) is confirmed before
/// anything but one challenge is sent there: the challenge (`PREFIX/subscribe/confirm s TOKEN`,
/// about 52 bytes) goes to the destination, and only its echo from that host
/// (`PREFIX/subscribe/confirm s TOKEN` to the control port) adds it. A spoofed `subscribe` (24
/// to 28 bytes) so makes jackvu send at most one challenge to its victim, and at most one per
/// `challengeInterval` per destination however many arrive: never an amplifier. The loopback
/// range counts as one host for the per-host cap, but for 127.0.0.1 and ::1 themselves, the
/// addresses local clients send from: other 127/8 addresses (which one local process can
/// use by the thousand) share one `perSource` share and can never lock 127.0.0.1 out.
public struct Subscriptions: Sendable {
    /// Subscriptions one host may hold.
    public static let perSource = 4
    /// How long a subscription lasts without renewal, seconds (`--subscribe-timeout`).
    public static let defaultLifetime = 60.0
    public static let lifetimeRange: ClosedRange<Double> = 1...3600
    /// Seconds a challenge waits for its echo; and between two challenges to one destination.
    public static let confirmWithin = 10.0
    public static let challengeInterval = 2.0
    /// Challenges waiting at once (the oldest goes beyond).
    public static let pendingLimit = 64

    public enum Outcome: Equatable, Sendable {
        case added, renewed, refused
        /// Not yet: send the challenge with this token to the destination.
        case challenge(String)
        /// Not yet, and nothing to send (a challenge went there less than `challengeInterval` ago).
        case waiting
    }

    public let lifetime: Double
    public private(set) var endpoints: [OSCEndpoint] = []
    private var expiries: [Int] = []
    /// Challenges sent and not yet echoed: destination, token, when sent, until when.
    private var pending: [(endpoint: OSCEndpoint, token: String, sent: Int, until: Int)] = []

    public init(lifetime: Double = Subscriptions.defaultLifetime) { self.lifetime = lifetime }

    /// Whether `host` (numeric) is this machine: 127.0.0.0/8, ::1, or IPv4-mapped 127/8.
    public static func isLoopback(_ host: String) -> Bool {
        var h = host.lowercased()
        if h.hasPrefix("[") && h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        if h.hasPrefix("::ffff:") { h = String(h.dropFirst("::ffff:".count)) }
        return h == "::1" || h.hasPrefix("127.")
    }

    /// The host a subscription counts against for `perSource`.
    static func hostKey(_ host: String) -> String {
        let h = host.lowercased()
        if h == "127.0.0.1" || h == "::1" || h == "[::1]" { return h }
        return isLoopback(h) ? "127.0.0.0/8" : h
    }

    /// Adds or renews `endpoint` at `now` (monotonic nanoseconds), unless its host has
    /// `perSource` already or `capacity` are taken. From a source not `trusted` (not this
    /// machine) a new destination gets a challenge first (`token` is its text).
    public mutating func subscribe(_ endpoint: OSCEndpoint, now: Int, capacity: Int, trusted: Bool = true, token: @autoclosure () -> String = "")
        -> Outcome
    {
        let expiry = now + Int(lifetime * 1e9)
        if let i = endpoints.firstIndex(of: endpoint) {
            expiries[i] = expiry
            return .renewed
        }
        guard trusted else {
            pending.removeAll { $0.until <= now }
            if let i = pending.firstIndex(where: { $0.endpoint == endpoint }) {
                guard now - pending[i].sent >= Int(Subscriptions.challengeInterval * 1e9) else { return .waiting }
                pending[i].sent = now
                pending[i].until = now + Int(Subscriptions.confirmWithin * 1e9)
                return .challenge(pending[i].token)
            }
            if pending.count >= Subscriptions.pendingLimit { pending.removeFirst() }
            let t = token()
            pending.append((endpoint, t, now, now + Int(Subscriptions.confirmWithin * 1e9)))
            return .challenge(t)
        }
        return add(endpoint, expiry: expiry, capacity: capacity)
    }

    /// The echo of a challenge: `token` from `host`. Adds the destination it was sent to
    /// (as `subscribe` would); `.refused` when no challenge with that token went to that host.
    public mutating func confirm(token: String, from host: String, now: Int, capacity: Int) -> Outcome {
        pending.removeAll { $0.until <= now }
        guard let i = pending.firstIndex(where: { $0.token == token && Subscriptions.sameHost($0.endpoint.host, host) }) else {
            return .refused
        }
        let endpoint = pending.remove(at: i).endpoint
        if let j = endpoints.firstIndex(of: endpoint) {
            expiries[j] = now + Int(lifetime * 1e9)
            return .renewed
        }
        return add(endpoint, expiry: now + Int(lifetime * 1e9), capacity: capacity)
    }

    private mutating func add(_ endpoint: OSCEndpoint, expiry: Int, capacity: Int) -> Outcome {
        let key = Subscriptions.hostKey(endpoint.host)
        guard endpoints.count < capacity, endpoints.filter({ Subscriptions.hostKey($0.host) == key }).count < Subscriptions.perSource
        else { return .refused }
        endpoints.append(endpoint)
        expiries.append(expiry)
        return .added
    }

    /// Whether two numeric hosts are one (brackets and case aside).
    static func sameHost(_ a: String, _ b: String) -> Bool {
        func plain(_ h: String) -> String {
            var x = h.lowercased()
            if x.hasPrefix("[") && x.hasSuffix("]") { x = String(x.dropFirst().dropLast()) }
            return x
        }
        return plain(a) == plain(b)
    }

    /// Removes `endpoint`; false if it was not subscribed.
    public mutating func unsubscribe(_ endpoint: OSCEndpoint) -> Bool {
        pending.removeAll { $0.endpoint == endpoint }
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
