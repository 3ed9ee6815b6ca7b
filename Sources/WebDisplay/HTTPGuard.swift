#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization

/// What the browser display's server lets in. A monitor's HTTP port must not be a way to
/// stop it: every connection costs a file descriptor, which JACK, OSC and the log need too.
public struct HTTPLimits: Sendable {
    /// Connections open at once (pages, WebSockets, requests); one more is closed at once.
    public var maxConnections = 64
    /// Seconds a connection may take to send its first request head; then it is closed (a
    /// client trickling a half-sent request holds nothing for longer).
    public var headTimeout = 10.0
    /// Seconds a connection may stay idle between requests.
    public var idleTimeout = 30.0
    /// Header bytes in all, and per field; beyond them the request is refused.
    public var maxHeaderBytes = 16 * 1024
    public var maxHeaderFieldBytes = 8 * 1024
    /// Origins besides the page's own whose WebSockets are accepted (`--http-origin`).
    public var origins: [String] = []

    public init() {}
}

/// Counts open connections. Any thread.
final class ConnectionGate: Sendable {
    let open = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    let limit: Int
    init(limit: Int) { self.limit = limit }
}

/// The HTTP/WebSocket channel with the gate in front: a connection beyond the limit is closed
/// before anything is read, and one that has not sent a whole request head within
/// `headTimeout` is closed.
struct GuardedChannel: ServerChildChannel {
    let inner: HTTP1WebSocketUpgradeChannel
    let gate: ConnectionGate
    let headTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1WebSocketUpgradeChannel.Value> {
        let count = gate.open.wrappingAdd(1, ordering: .relaxed).newValue
        channel.closeFuture.whenComplete { [gate] _ in gate.open.wrappingSubtract(1, ordering: .relaxed) }
        guard count <= gate.limit else {
            gate.refused.wrappingAdd(1, ordering: .relaxed)
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        do {
            try channel.pipeline.syncOperations.addHandler(HeadTimeout(limit: headTimeout), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return inner.setup(channel: channel, logger: logger)
    }

    func handle(value: HTTP1WebSocketUpgradeChannel.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Closes the connection unless the end of a request head (CRLF CRLF) arrives within `limit`;
/// once it has, it steps out of the pipeline (the server's idle timeout takes over).
final class HeadTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let limit: TimeAmount
    private var timer: Scheduled<Void>?
    /// The last three bytes seen, to find CRLF CRLF across reads.
    private var tail: [UInt8] = []

    init(limit: TimeAmount) { self.limit = limit }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: limit) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let bytes = tail + buffer.readableBytesView.suffix(4096)
        var complete = false
        if bytes.count >= 4 {
            for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                complete = true
                break
            }
        }
        tail = Array(bytes.suffix(3))
        context.fireChannelRead(data)
        if complete {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
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
        if request.headers[.upgrade]?.lowercased() == "websocket", let origin = request.headers[.origin],
           origin != "http://" + host && !origins.contains(origin)
        {
            return RequestGuard.forbidden("WebSocket from another origin (\(origin)); allow it with --http-origin")
        }
        return try await next(request, context)
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
