#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Outputs
import Synchronization

/// Counts open connections and WebSockets, in all and per client address. Any thread.
final class ConnectionGate: Sendable {
    let open = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    let limit: Int
    let perAddress: Int
    let webSocketsPerAddress: Int
    /// Per client address: connections and WebSockets open.
    private let byAddress = Mutex<[String: (connections: Int, webSockets: Int)]>([:])

    init(limits: HTTPLimits) {
        limit = limits.maxConnections
        perAddress = limits.maxConnectionsPerAddress
        webSocketsPerAddress = limits.maxWebSocketsPerAddress
    }

    /// Takes a connection's place for `address`; false (and counted) when its address has
    /// its share already.
    func admit(_ address: String) -> Bool { take(\.connections, of: address, upTo: perAddress) }

    /// Takes one place of `slot` for `address` if it has fewer than `share`; a refusal is
    /// counted.
    private func take(_ slot: WritableKeyPath<(connections: Int, webSockets: Int), Int>, of address: String, upTo share: Int) -> Bool {
        let ok = byAddress.withLock { table -> Bool in
            let n = table[address]?[keyPath: slot] ?? 0
            guard n < share else { return false }
            table[address, default: (0, 0)][keyPath: slot] = n + 1
            return true
        }
        if !ok { refused.wrappingAdd(1, ordering: .relaxed) }
        return ok
    }

    /// Gives a connection's place (and its WebSocket's, if it had one) back.
    func leave(_ address: String, webSocket: Bool) {
        byAddress.withLock { table in
            guard var entry = table[address] else { return }
            entry.connections -= 1
            if webSocket { entry.webSockets -= 1 }
            table[address] = entry.connections <= 0 ? nil : entry
        }
    }

    /// Takes a WebSocket's place for `address`; false when it has its share.
    func admitWebSocket(_ address: String) -> Bool { take(\.webSockets, of: address, upTo: webSocketsPerAddress) }
}

/// The HTTP/WebSocket channel with the gate in front: a connection beyond the limit, or
/// beyond its address's share, is closed before anything is read; each request head must be
/// whole within `headTimeout` and `maxHeadBytes` (`HeadGuard`).
struct GuardedChannel: ServerChildChannel {
    let inner: HTTP1WebSocketUpgradeChannel
    let gate: ConnectionGate
    let limits: HTTPLimits

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.Value> {
        let count = gate.open.wrappingAdd(1, ordering: .relaxed).newValue
        channel.closeFuture.whenComplete { [gate] _ in gate.open.wrappingSubtract(1, ordering: .relaxed) }
        guard count <= gate.limit else {
            gate.refused.wrappingAdd(1, ordering: .relaxed)
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        // One address: a whole /8 would be too coarse (127.0.0.2 is another local client).
        let address = channel.remoteAddress?.ipAddress ?? "?"
        guard gate.admit(address) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        let head = HeadGuard(limits: limits, address: address, gate: gate)
        channel.closeFuture.whenComplete { [gate] _ in gate.leave(address, webSocket: head.isWebSocket) }
        do {
            try channel.pipeline.syncOperations.addHandler(head, position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: HTTP1WebSocketUpgradeChannel.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Guards each request head on a connection, before HTTP parsing: it must be whole (CRLF
/// CRLF) within `headTimeout` of its first byte (of the connection, for the first) and within
/// `maxHeadBytes` — a longer request line is answered 414, a longer head 431, and the
/// connection closed (SwiftNIO's own header limit made an error that left such a connection
/// open for ever). A WebSocket upgrade beyond its address's share is answered 503. Once a
/// WebSocket upgrade's head has passed, the guard steps out (the frames are not HTTP). Only
/// GET and HEAD are served (another method is answered 405 at once), so a request has no
/// body to skip.
final class HeadGuard: ChannelDuplexHandler, RemovableChannelHandler, @unchecked Sendable {
    // @unchecked Sendable: used on its channel's event loop only (`isWebSocket` is read when
    // the channel has closed, after every event of it).
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = ByteBuffer
    /// Seconds a request (its head whole) may wait for its response to begin: beyond, the
    /// connection is closed (a request the HTTP parser refused without answering).
    static let responseDeadline = 15.0
    private let limits: HTTPLimits
    private let address: String
    private let gate: ConnectionGate
    private var timer: Scheduled<Void>?
    /// Set while a request waits for its response.
    private var awaiting: Scheduled<Void>?
    /// The head so far (at most `maxHeadBytes`), and whether its request line has ended.
    private var head: [UInt8] = []
    private var lineEnded = false
    private var refused = false
    /// Whether this connection became a WebSocket (its place counted in the gate).
    private(set) var isWebSocket = false

    init(limits: HTTPLimits, address: String, gate: ConnectionGate) {
        self.limits = limits
        self.address = address
        self.gate = gate
    }

    func handlerAdded(context: ChannelHandlerContext) { arm(context) }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        awaiting?.cancel()
        awaiting = nil
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // A response begins: the request was answered.
        awaiting?.cancel()
        awaiting = nil
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(limits.headTimeout * 1e9))) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        let buffer = unwrapInboundIn(data)
        let bytes = Array(buffer.readableBytesView)
        // A new request's first byte starts its head's deadline.
        if head.isEmpty && timer == nil { arm(context) }
        var end: Int?
        let searchFrom = max(0, head.count - 3)
        head.append(contentsOf: bytes.prefix(limits.maxHeadBytes + 4 - min(head.count, limits.maxHeadBytes + 4)))
        if head.count >= 4 {
            for i in searchFrom...(head.count - 4) where head[i] == 13 && head[i + 1] == 10 && head[i + 2] == 13 && head[i + 3] == 10 {
                end = i + 4
                break
            }
        }
        if !lineEnded, let lf = head.firstIndex(of: 10), lf <= limits.maxRequestLineBytes { lineEnded = true }
        if !lineEnded && head.count > limits.maxRequestLineBytes && (head.firstIndex(of: 10) ?? Int.max) > limits.maxRequestLineBytes {
            return refuse(context, "414 URI Too Long", "the request line is longer than \(limits.maxRequestLineBytes) bytes")
        }
        guard let end else {
            if head.count > limits.maxHeadBytes {
                return refuse(context, "431 Request Header Fields Too Large", "the request head is longer than \(limits.maxHeadBytes) bytes")
            }
            context.fireChannelRead(data)
            return
        }
        // The request line: METHOD TARGET HTTP/1.x, or 400 at once (the parser's own
        // refusal of it left the connection unanswered).
        if !HeadGuard.isRequestLine(head.prefix { $0 != 13 && $0 != 10 }) {
            return refuse(context, "400 Bad Request", "not an HTTP/1 request line")
        }
        // Only GET and HEAD are served: any other method at once (the parser refused an
        // unknown one, BREW, or a POST whose Content-Length overflows, without answering, and
        // the connection waited out `responseDeadline`).
        let method = head.prefix { $0 != 32 }
        if !method.elementsEqual("GET".utf8) && !method.elementsEqual("HEAD".utf8) {
            return refuse(context, "405 Method Not Allowed", "only GET and HEAD are served", header: "Allow: GET, HEAD\r\n")
        }
        if !HeadGuard.fieldsAreWellFormed(head[..<end]) {
            return refuse(context, "400 Bad Request", "a header line is not NAME: VALUE")
        }
        guard end <= limits.maxHeadBytes else {
            return refuse(context, "431 Request Header Fields Too Large", "the request head is longer than \(limits.maxHeadBytes) bytes")
        }
        if head[..<end].reduce(0, { $0 + ($1 == 10 ? 1 : 0) }) > HTTPLimits.maxHeaderFields + 2 {
            return refuse(context, "431 Request Header Fields Too Large", "the request has more than \(HTTPLimits.maxHeaderFields) header fields")
        }
        // A whole head: a WebSocket upgrade takes its address's place, or is refused.
        let upgrade = HeadGuard.isWebSocketUpgrade(Array(head[..<end]))
        if upgrade {
            guard gate.admitWebSocket(address) else {
                return refuse(context, "503 Service Unavailable", "this address has \(limits.maxWebSocketsPerAddress) displays open already")
            }
            isWebSocket = true
        }
        timer?.cancel()
        timer = nil
        head = []
        lineEnded = false
        if !upgrade {
            let channel = context.channel
            awaiting?.cancel()
            awaiting = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(HeadGuard.responseDeadline * 1e9))) { channel.close(promise: nil) }
        }
        context.fireChannelRead(data)
        if upgrade { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
    }

    private func refuse(_ context: ChannelHandlerContext, _ status: String, _ why: String, header: String = "") {
        refused = true
        timer?.cancel()
        timer = nil
        let body = why + "\n"
        let text = "HTTP/1.1 \(status)\r\n\(header)Connection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Whether `line` is `METHOD SP TARGET SP HTTP/1.0|1.1` (METHOD a token of letters).
    static func isRequestLine(_ line: some Collection<UInt8>) -> Bool {
        let parts = line.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3, let method = parts.first, (1...16).contains(method.count),
              method.allSatisfy({ (65...90).contains($0) }), !parts[1].isEmpty else { return false }
        let version = Array(parts[2])
        return version == Array("HTTP/1.1".utf8) || version == Array("HTTP/1.0".utf8)
    }

    /// Whether every header line (after the request line, before the blank line) is
    /// `NAME: VALUE` with a name of visible characters and no space before the colon.
    static func fieldsAreWellFormed(_ head: ArraySlice<UInt8>) -> Bool {
        let lines = head.split(separator: 10, omittingEmptySubsequences: false).dropFirst()
        for raw in lines {
            let line = raw.last == 13 ? raw.dropLast() : raw
            if line.isEmpty { return true }
            guard let colon = line.firstIndex(of: 58), colon > line.startIndex,
                  line[..<colon].allSatisfy({ (33...126).contains($0) }) else { return false }
        }
        return true
    }

    /// Whether a request head asks for a WebSocket: an `Upgrade` header whose token list
    /// (comma-separated, any case, in any of several fields) holds `websocket`.
    static func isWebSocketUpgrade(_ head: [UInt8]) -> Bool {
        let text = String(decoding: head, as: UTF8.self).lowercased()
        return text.split(separator: "\r\n").contains { line in
            guard line.hasPrefix("upgrade:") else { return false }
            return RequestGuard<BasicWebSocketRequestContext>.tokens(line.dropFirst("upgrade:".count)).contains("websocket")
        }
    }
}

/// Refuses requests that name another host when the server listens on loopback (a
/// DNS-rebinding page reaches a loopback server under its own host name), and WebSocket
/// upgrades from pages of another origin (any web page in the user's browser could otherwise
/// open the WebSocket; plain requests are not readable across origins, WebSockets are).
/// A WebSocket without an Origin (not a browser) is accepted.
struct RequestGuard<Context: RequestContext>: RouterMiddleware {
    /// Only loopback host names are accepted (the server listens on loopback).
    let loopbackOnly: Bool
    let origins: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let host = request.head.authority ?? ""  // HTTP/1's Host header
        if loopbackOnly && !RequestGuard.isLoopbackHost(host) {
            return RequestGuard.forbidden("this display serves loopback host names only (Host: \(host))")
        }
        // Upgrade is a token list (`Upgrade: foo, websocket`), possibly over several fields:
        // any `websocket` token makes it a WebSocket request for the Origin check.
        if request.headers[values: .upgrade].contains(where: { RequestGuard.tokens(Substring($0)).contains("websocket") }),
           let origin = request.headers[.origin],
           origin != "http://" + host && !origins.contains(origin)
        {
            return RequestGuard.forbidden("WebSocket from another origin (\(origin)); allow it with --http-origin")
        }
        return try await next(request, context)
    }

    /// An HTTP header's comma-separated token list, trimmed and lower-cased.
    static func tokens(_ value: Substring) -> [String] {
        value.split(separator: ",").map { token in
            String(token.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()).lowercased()
        }
    }

    /// Whether a Host header's name (without its port) is `localhost` or a loopback address.
    static func isLoopbackHost(_ host: String) -> Bool {
        var name = Substring(host.lowercased())
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            name = name[name.index(after: name.startIndex)..<close]
            return name == "::1"
        }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        var v4 = in_addr()
        return inet_pton(AF_INET, String(name), &v4) == 1 && UInt32(bigEndian: v4.s_addr) >> 24 == 127
    }

    private static func forbidden(_ message: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.connection] = "close"
        return Response(status: .forbidden, headers: headers, body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }
}
