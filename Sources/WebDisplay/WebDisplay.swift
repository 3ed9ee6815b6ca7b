#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import MetricsExport
import NIOCore
import NIOPosix
import Outputs
import Realtime
import Synchronization

/// The browser display (`--http [ADDRESS:]PORT`): an HTTP server (Hummingbird, on SwiftNIO's
/// threads, never the audio or worker threads) serving
///
/// - `GET /`: one self-contained page (HTML, CSS, JavaScript compiled into the binary; no CDN)
///   that draws the terminal display's content on a canvas;
/// - `GET /ws`: a WebSocket: first `{"display": …}` (what the meter shows, its scale, the bar
///   range), then `{"history": …}` (the past hour's loudness) and a binary frame of the
///   spectrogram's last five minutes (`PictureFrame`), then every update at the display rate
///   in the live JSON schema (`--format json`), each followed by a binary frame of the
///   pictures (goniometer points, a spectrogram column);
/// - `GET /snapshot`: the latest update as JSON (503 before the first);
/// - `GET /history`: each programme's loudness over the last hour (as sent to a browser after
///   the hello, `LoudnessHistory.json`);
/// - `GET /status`: the display's own counters as JSON (clients, dropped clients, skipped
///   frames, bytes sent);
/// - `GET /metrics`: the Prometheus metrics (`MetricsExporter`), when given.
///
/// Every browser has a queue of one update: a newer one replaces an update not yet taken
/// (counted as a skipped frame). A browser that stops reading blocks only its own connection
/// once SwiftNIO's write buffer (64 KiB high-water mark) and the kernel's socket buffer are
/// full; when one update has not gone out for `stallLimit` seconds the connection is closed
/// (counted as dropped). So jackvu holds at most one update and 64 KiB per browser, at most
/// `maxClients` browsers.
///
/// Nothing from outside can use it up (`HTTPLimits`): at most 64 connections at once and 16
/// per client address (more are closed before they are read), 8 WebSockets per address, each
/// request head whole within 10 s and 16 KiB (`HeadGuard`: 414/431/400/405 and closed), 30 s idle; on a loopback address only loopback host names (no DNS rebinding); WebSockets
/// only from the page's own origin or those `--http-origin` names. Everything served is
/// read-only (GET).
public final class WebDisplay: Display, @unchecked Sendable {
    /// The server's one event-loop thread: accepting and closing take turns on it, so a flood
    /// of connections beyond the limit is closed as fast as it is accepted (with the process's
    /// shared loops, a busy machine let the accepting loop run ahead of those closing: 242
    /// descriptors held once under 2,000 half-open connections); one thread serves the
    /// limit's 64 connections and their displays with room to spare.
    static let eventLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    public var name: String { "browser" }
    // @unchecked Sendable: the mutable state is in Mutexes and atomics.
    private let context: DisplayContext
    private let hub: Hub
    private let task: Task<Void, Never>
    private let json: JSONLines
    /// The address the server is listening on (the port the system chose for port 0).
    public let address: HTTPListenAddress

    /// Browsers at once, at most; more get 503.
    public static let maxClients = HTTPLimits.maxWebSockets
    /// Seconds one update may take to go out before its browser is dropped.
    public static let stallLimit = 5.0

    public enum StartError: Error, CustomStringConvertible {
        /// The address cannot be bound (in use, not ours, no permission).
        case cannotBind(String)
        /// The host name does not resolve.
        case unresolvable(String)

        public var description: String {
            switch self {
            case .cannotBind(let m): return "--http: cannot listen: \(m)"
            case .unresolvable(let m): return "--http: \(m)"
            }
        }
    }

    /// Starts the server and returns once it listens (or throws why it cannot).
    /// `metrics`: served at `/metrics` too.
    public init(context: DisplayContext, address: HTTPListenAddress, limits: HTTPLimits = HTTPLimits(),
                metrics: MetricsExporter? = nil) throws(StartError)
    {
        self.context = context
        // What the page draws: the readings the displays show (`Readings.table`), not the
        // others (VU, PPM and K are in `meter` when chosen; the 1/3 octaves are not drawn).
        json = JSONLines(kinds: Readings.displayed)
        guard WebDisplay.resolves(address.host) else {
            throw .unresolvable("'\(address.host)' does not resolve to an address")
        }
        let hub = Hub(hello: WebDisplay.hello(context), skipped: context.skipped, history: context.history)
        self.hub = hub
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.add(middleware: RequestGuard<BasicWebSocketRequestContext>(
            loopbackOnly: RequestGuard<BasicWebSocketRequestContext>.isLoopbackHost(address.host), origins: Set(limits.origins)))
        let gate = ConnectionGate(limits: limits)
        hub.connectionGate = gate
        router.get("/") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: Page.html)))
        }
        router.get("/snapshot") { _, _ -> Response in
            guard let latest = hub.latest() else {
                return WebDisplay.json("{\"error\": \"no update yet\"}\n", status: .serviceUnavailable)
            }
            return WebDisplay.json(latest, status: .ok)
        }
        router.get("/status") { _, _ -> Response in WebDisplay.json(hub.statusJSON(), status: .ok) }
        router.get("/display") { _, _ -> Response in WebDisplay.json(hub.hello + "\n", status: .ok) }
        router.get("/history") { _, _ -> Response in
            WebDisplay.json((hub.historyJSON() ?? "{\"history\": null}") + "\n", status: .ok)
        }
        router.ws("/ws") { _, _ in
            hub.clientCount < WebDisplay.maxClients ? .upgrade([:]) : .dontUpgrade
        } onUpgrade: { inbound, outbound, _ in
            try await hub.serve(inbound: inbound, outbound: outbound)
        }
        if let metrics {
            router.get("/metrics") { request, _ -> Response in WebDisplay.metricsResponse(metrics, request) }
        }
        (task, self.address) = try WebDisplay.serve(router: router, address: address, limits: limits, gate: gate)
    }

    /// Starts an HTTP server (HTTP/1.1 with the WebSocket upgrade) for `router` on `address`,
    /// behind the connection gate and the limits; returns once it listens, with the address
    /// it listens on (the port the system chose for port 0), or throws why it cannot.
    static func serve(
        router: Router<BasicWebSocketRequestContext>, address: HTTPListenAddress, limits: HTTPLimits, gate: ConnectionGate
    ) throws(StartError) -> (Task<Void, Never>, HTTPListenAddress) {
        let started = StartSignal()
        var logger = Logger(label: "jackvu-http") { _ in SwiftLogNoOpLogHandler() }
        logger.logLevel = .critical
        var http1 = HTTP1Channel.Configuration(idleTimeout: .nanoseconds(Int64(limits.idleTimeout * 1e9)))
        // SwiftNIO's own header limits above `HeadGuard`'s, which answers 431 and closes: an
        // error of NIO's decoder left the connection open, unanswered, for ever.
        http1.httpDecoder = .init(
            maxHeaderFieldSize: limits.maxHeadBytes + 1024, maxHeaderListSize: limits.maxHeadBytes + 1024, maxHeaderFieldCount: HTTPLimits.maxHeaderFields * 2)
        let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(http1: http1)
        let webSocketResponder = router.buildResponder()
        let server = HTTPServerBuilder { responder in
            GuardedChannel(
                inner: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder, configuration: channelConfiguration),
                gate: gate, limits: limits)
        }
        let app = Application(
            router: router, server: server,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port), serverName: "jackvu"),
            onServerRunning: { channel in started.succeed(port: channel.localAddress?.port ?? address.port) },
            eventLoopGroupProvider: .shared(WebDisplay.eventLoop),
            logger: logger)
        let task = Task.detached {
            do { try await app.run() } catch { started.fail("\(error)") }
            started.fail("the server stopped")
        }
        switch started.wait(seconds: 20) {
        case .success(let port):
            var actual = address
            actual.port = port
            return (task, actual)
        case .failure(let message):
            task.cancel()
            throw .cannotBind("\(address): \(message)")
        }
    }

    /// `GET /metrics`: the Prometheus exposition, in OpenMetrics when the scraper asks for it.
    static func metricsResponse(_ metrics: MetricsExporter, _ request: Request) -> Response {
        let open = MetricsExporter.wantsOpenMetrics(accept: request.headers[.accept])
        var headers = HTTPFields()
        headers[.contentType] = open ? MetricsExporter.openMetricsContentType : MetricsExporter.textContentType
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics.exposition(openMetrics: open))))
    }

    public func show(_ snapshot: Snapshot) {
        let now = monotonicNanoseconds()
        hub.spectrogram.add(snapshot, now: now)
        // The histograms change once a second: sent when they did, or a second after the last.
        let histograms = lastHistograms.withLock { last -> Bool in
            let current = snapshot.programmes.flatMap(\.histogram)
            guard !current.isEmpty, current != last.values || now - last.at >= 1_000_000_000 else { return false }
            last = (current, now)
            return true
        }
        let pictures = PictureFrame.live(snapshot, seconds: 1 / max(0.1, context.rate), histograms: histograms)
        if histograms { hub.latestHistograms.withLock { $0 = pictures } }
        hub.publish(json.line(for: snapshot), pictures: pictures)
    }
    private let lastHistograms = Mutex<(values: [Float], at: Int)>(([], 0))

    public func stop() {
        hub.finish()
        task.cancel()
    }

    /// The display's counters (also at `GET /status`).
    public var status: (clients: Int, dropped: Int, bytesSent: Int) { (hub.clientCount, hub.dropped.count, hub.bytesSent.count) }

    private static func json(_ text: String, status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The first WebSocket message: what the page needs besides the updates.
    static func hello(_ c: DisplayContext) -> String {
        let m = c.meter
        func n(_ x: Double) -> String { fixed(x, 3) }
        // The further readings the page shows by label (`ReadingDisplay.extra`).
        let extras = Readings.extrasJSON
        return "{\"display\": {\"client\": \(jsonString(c.clientName)), \"channels\": \(c.channels), "
            + "\"meter\": {\"name\": \(jsonString(m.name)), \"unit\": \(jsonString(m.unit)), "
            + "\"min\": \(n(m.range.lowerBound)), \"max\": \(n(m.range.upperBound)), "
            + "\"yellow_from\": \(n(m.yellowFrom)), \"red_from\": \(n(m.redFrom)), "
            + "\"marks\": [\(m.marks.map(n).joined(separator: ", "))], "
            + "\"hold_is_sample_peak\": \(m.holdIsSamplePeak)}, "
            + "\"bars_from_hz\": \(n(c.barsFromHz)), \"bars_to_hz\": \(n(c.barsToHz)), "
            + "\"hold_s\": \(n(c.holdSeconds)), \"rate_hz\": \(n(c.rate)), \"stall_limit_s\": \(n(stallLimit)), "
            + "\"default_programme\": \(jsonString(ProgrammeSnapshot.defaultName)), \"extras\": [\(extras)]}}"
    }

    /// Whether `host` resolves (getaddrinfo), so a typo fails before anything starts.
    static func resolves(_ host: String) -> Bool {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0 else { return false }
        freeaddrinfo(result)
        return true
    }
}

/// Hands "started on port N" or "failed" from the server task to the thread that waits.
private final class StartSignal: @unchecked Sendable {
    // @unchecked Sendable: `state` is a Mutex; the wake signal is thread-safe.
    enum Outcome { case success(Int), failure(String) }
    private let state = Mutex<Outcome?>(nil)
    private let settled = WakeSignal()

    func succeed(port: Int) { settle(.success(port)) }
    func fail(_ message: String) { settle(.failure(message)) }

    private func settle(_ outcome: Outcome) {
        let first = state.withLock { s -> Bool in
            guard s == nil else { return false }
            s = outcome
            return true
        }
        if first { settled.signal() }
    }

    func wait(seconds: Int) -> Outcome {
        settled.wait(timeout: Double(seconds))
        return state.withLock { $0 } ?? .failure("timed out")
    }
}

/// One update for the browsers: the JSON, and the pictures' binary frame (`PictureFrame`).
struct HubMessage: Sendable {
    var text: String
    var pictures: [UInt8]?
}

/// The browsers: each has a queue of one update; the newest update is kept for `/snapshot`.
final class Hub: @unchecked Sendable {
    // @unchecked Sendable: all state is in Mutexes and counters.
    let hello: String
    private let skipped: Counter
    let dropped = Counter()
    let bytesSent = Counter()
    /// Of them, the pictures' binary frames (`PictureFrame`).
    let pictureBytesSent = Counter()
    private let newest = Mutex<String?>(nil)
    private let clients = Mutex<[Int: AsyncStream<HubMessage>.Continuation]>([:])
    /// The spectrogram's recent minutes, sent to each browser after the loudness history.
    let spectrogram = SpectrogramHistory()
    /// The newest pictures frame that carried the histograms, sent to each browser after the
    /// spectrogram's (they are in a live frame only when they changed, or a second later).
    let latestHistograms = Mutex<[UInt8]?>(nil)
    private let nextID = Atomic<Int>(0)
    private let finished = Atomic<Bool>(false)

    /// The programmes' loudness over the last hour, sent to each browser after the hello.
    private let history: LoudnessHistory?

    init(hello: String, skipped: Counter, history: LoudnessHistory? = nil) {
        self.hello = hello
        self.skipped = skipped
        self.history = history
    }

    /// The history message (`{"history": …}`, ages relative to now), or nil when none is kept.
    /// Made at most once a second (up to 500 KB for 8 programmes and an hour): browsers that
    /// connect, or `/history` asked, in a flood cost the HTTP threads little CPU.
    func historyJSON() -> String? {
        guard let history else { return nil }
        let now = monotonicNanoseconds()
        if let cached = historyCache.withLock({ c in c.flatMap { now - $0.at < 1_000_000_000 ? $0.text : nil } }) { return cached }
        let text = history.json(now: Double(now) / 1e9)
        historyCache.withLock { $0 = (now, text) }
        return text
    }
    private let historyCache = Mutex<(at: Int, text: String)?>(nil)

    var clientCount: Int { clients.withLock { $0.count } }

    func latest() -> String? { newest.withLock { $0 } }

    /// The server's connection count and refusals.
    var connectionGate: ConnectionGate?

    func statusJSON() -> String {
        let open = connectionGate?.open.load(ordering: .relaxed) ?? 0, refused = connectionGate?.refused.load(ordering: .relaxed) ?? 0
        return "{\"clients\": \(clientCount), \"dropped_clients\": \(dropped.count), \"skipped_frames\": \(skipped.count), "
            + "\"bytes_sent\": \(bytesSent.count), \"picture_bytes_sent\": \(pictureBytesSent.count), "
            + "\"connections\": \(open), \"refused_connections\": \(refused)}\n"
    }

    /// Called on the output thread: never waits for a browser.
    func publish(_ text: String, pictures: [UInt8]? = nil) {
        newest.withLock { $0 = text }
        let continuations = clients.withLock { Array($0.values) }
        let message = HubMessage(text: text, pictures: pictures)
        for c in continuations {
            if case .dropped = c.yield(message) { skipped.add() }
        }
    }

    /// The spectrogram history frame, made at most once a second (up to 580 KB at 8
    /// channels): a flood of browsers costs the HTTP threads little.
    func spectrogramFrame() -> [UInt8]? {
        let now = monotonicNanoseconds()
        if let cached = spectrogramCache.withLock({ c in c.flatMap { now - $0.at < 1_000_000_000 ? $0.frame : nil } }) { return cached }
        guard let frame = spectrogram.frame() else { return nil }
        spectrogramCache.withLock { $0 = (now, frame) }
        return frame
    }
    private let spectrogramCache = Mutex<(at: Int, frame: [UInt8])?>(nil)

    /// Ends every connection (jackvu is stopping).
    func finish() {
        finished.store(true, ordering: .relaxed)
        let all = clients.withLock { c in defer { c = [:] }; return Array(c.values) }
        for c in all { c.finish() }
    }

    /// One browser's connection: the hello, then each update as it comes; ends when the
    /// browser closes, jackvu stops, or an update stalls for `stallLimit` seconds.
    func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let (stream, continuation) = AsyncStream<HubMessage>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = nextID.add(1, ordering: .relaxed).newValue
        clients.withLock { $0[id] = continuation }
        defer { clients.withLock { _ = $0.removeValue(forKey: id) } }
        if finished.load(ordering: .relaxed) { return }
        if let latest = latest() { continuation.yield(HubMessage(text: latest)) }
        try await outbound.write(.text(hello))
        bytesSent.add(hello.utf8.count)
        // What the browser missed: the programmes' loudness over the last hour (at most
        // 3600 points a programme, sent once).
        if let past = historyJSON() {
            try await outbound.write(.text(past))
            bytesSent.add(past.utf8.count)
        }
        // And the spectrogram's recent minutes, and the histograms.
        for frame in [spectrogramFrame(), latestHistograms.withLock { $0 }] {
            guard let frame else { continue }
            try await outbound.write(.binary(ByteBuffer(bytes: frame)))
            bytesSent.add(frame.count)
            pictureBytesSent.add(frame.count)
        }
        let bytes = bytesSent
        let pictureBytes = pictureBytesSent
        let dropped = dropped
        try await withThrowingTaskGroup(of: Void.self) { group in
            // The browser's messages are read (and ignored) so that its close is seen.
            group.addTask {
                for try await _ in inbound {}
            }
            group.addTask {
                for await message in stream {
                    let sent = try await Hub.write(message, to: outbound, within: WebDisplay.stallLimit)
                    guard sent else {
                        dropped.add()
                        return
                    }
                    bytes.add(message.text.utf8.count + (message.pictures?.count ?? 0))
                    pictureBytes.add(message.pictures?.count ?? 0)
                }
            }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// Writes one update (its JSON, then its pictures), or gives up after `seconds` (false).
    private static func write(_ message: HubMessage, to outbound: WebSocketOutboundWriter, within seconds: Double) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await outbound.write(.text(message.text))
                if let pictures = message.pictures { try await outbound.write(.binary(ByteBuffer(bytes: pictures))) }
                return true
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
