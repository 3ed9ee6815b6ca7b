#if canImport(Glibc)
import Glibc
#endif
import CLiblo

/// Errors of OSC addresses given on the command line or by a control message.
public enum OSCAddressError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not `udp://HOST:PORT` or `osc.udp://HOST:PORT/`.
    case malformed(String)
    /// The host name does not resolve.
    case unresolvable(String, reason: String)
    /// A socket could not be made or bound.
    case socket(String, reason: String)
    /// Not an address range (`--control-from`).
    case badRange(String, String)

    public var description: String {
        switch self {
        case .malformed(let url): return "'\(url)' is not an OSC URL (udp://HOST:PORT or osc.udp://HOST:PORT/)"
        case .unresolvable(let url, let reason): return "cannot resolve the host of '\(url)': \(reason)"
        case .socket(let url, let reason): return "cannot use '\(url)': \(reason)"
        case .badRange(let text, let reason): return "'\(text)' is not an address range (ADDRESS or ADDRESS/BITS): \(reason)"
        }
    }
}

/// A UDP endpoint named by an OSC URL: `udp://HOST:PORT` or liblo's own form
/// `osc.udp://HOST:PORT/` (IPv6 hosts in brackets). liblo splits the URL; the host is
/// resolved once, here.
public struct OSCEndpoint: Equatable, Sendable, CustomStringConvertible {
    /// The URL as given.
    public let url: String
    /// Host and port as written.
    public let host: String
    public let port: UInt16

    /// Parses `url`. Not real-time safe.
    public init(url: String) throws(OSCAddressError) {
        self.url = url
        var lo = url
        if lo.hasPrefix("udp://") { lo = "osc." + lo }
        guard lo.hasPrefix("osc.udp://") else { throw .malformed(url) }
        if !lo.dropFirst("osc.udp://".count).contains("/") { lo += "/" }
        guard let h = lo_url_get_hostname(lo), let p = lo_url_get_port(lo) else { throw .malformed(url) }
        defer { free(h); free(p) }
        let hostText = String(cString: h), portText = String(cString: p)
        guard !hostText.isEmpty, let port = UInt16(portText), port > 0 else { throw .malformed(url) }
        host = hostText
        self.port = port
    }

    public var description: String { "osc.udp://\(host.contains(":") ? "[\(host)]" : host):\(port)/" }

    /// The socket address (the first the resolver gives). Not real-time safe (may block on
    /// DNS).
    func resolve() throws(OSCAddressError) -> (family: Int32, address: sockaddr_storage, length: socklen_t) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &list)
        guard code == 0, let first = list else {
            throw .unresolvable(url, reason: String(cString: gai_strerror(code)))
        }
        defer { freeaddrinfo(list) }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        return (first.pointee.ai_family, storage, first.pointee.ai_addrlen)
    }

    /// A UDP socket for this endpoint, resolved and then connected to it (`bind: false`) or
    /// bound to it (`bind: true`). Not real-time safe.
    func udpSocket(bind: Bool, nonBlocking: Bool) throws(OSCAddressError) -> Int32 {
        let (family, address, length) = try resolve()
        var type = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        let fd = socket(family, type, 0)
        guard fd >= 0 else { throw .socket(url, reason: String(cString: strerror(errno))) }
        var a = address
        let result = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind ? Glibc.bind(fd, $0, length) : connect(fd, $0, length)
            }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .socket(url, reason: reason)
        }
        return fd
    }
}

/// Sends datagrams to one OSC endpoint through a connected, non-blocking UDP socket: a send
/// never waits (a full socket buffer fails at once), and a port that refuses (ICMP port
/// unreachable) or a host that cannot be reached shows up as a failed send, which the caller
/// counts. Not real-time safe (system calls); one thread at a time.
public final class OSCSender: @unchecked Sendable {
    // @unchecked Sendable: the descriptor is used by one thread at a time.
    public let endpoint: OSCEndpoint
    private let fd: Int32

    /// Resolves the endpoint and connects a socket to it.
    public init(endpoint: OSCEndpoint) throws(OSCAddressError) {
        self.endpoint = endpoint
        fd = try endpoint.udpSocket(bind: false, nonBlocking: true)
    }

    deinit { close(fd) }

    /// Sends one datagram; false if it could not be sent now (never waits).
    public func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { b in
            Glibc.send(fd, b.baseAddress, b.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) == b.count
        }
    }
}
