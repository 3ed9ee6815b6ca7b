#if canImport(Glibc)
import Glibc
#endif
import Realtime

/// A display (the terminal screen, the browser page): an output that shows snapshots to
/// people. The output thread hands it each new snapshot at the display rate (`--rate`);
/// `show` must return at once: a display draws on its own thread(s) from the newest snapshot
/// it holds, and a slow terminal or browser costs it skipped frames (counted in
/// `DisplayContext.skipped`), never analysis.
public protocol Display: SnapshotOutput {
    /// Takes the newest snapshot. Called on the output thread only; never blocks for long.
    func show(_ snapshot: Snapshot)
    /// Stops drawing and gives back what the display took (the terminal, the listening
    /// socket). Idempotent.
    func stop()
}

extension Display {
    /// A display is an output that shows the snapshot itself.
    public func take(_ update: OutputUpdate) { show(update.snapshot) }
}

/// What a display needs to know beyond the snapshots, and what it may ask of the engine.
public struct DisplayContext: Sendable {
    /// The JACK client's name (shown in titles).
    public var clientName: String
    /// The channel count.
    public var channels: Int
    /// What the meter bar shows (`--meter`) and its scale.
    public var meter: DisplayScale
    /// Edges of the spectrum bars: log-spaced from `barsFromHz` to `barsToHz` (clamped to the
    /// Nyquist frequency of the snapshot's sample rate).
    public var barsFromHz: Double
    public var barsToHz: Double
    /// How long a peak-hold mark stays, seconds (`--hold`).
    public var holdSeconds: Double
    /// Updates per second (`--rate`).
    public var rate: Double
    /// Frames a display could not show because it was still busy with an earlier one.
    public var skipped: Counter
    /// Restart the measurements (as SIGHUP).
    public var reset: @Sendable () -> Void
    /// End the run (as SIGTERM).
    public var quit: @Sendable () -> Void
    /// Restart the measurements of one programme (its index), or of everything (nil, as
    /// SIGHUP).
    public var resetProgramme: @Sendable (Int?) -> Void
    /// Pause (true) or resume (false) the loudness integration of one programme (its index)
    /// or of every one (nil).
    public var setIntegration: @Sendable (Int?, Bool) -> Void
    /// Each programme's loudness over the last hour (nil: not kept).
    public var history: LoudnessHistory?

    public init(
        clientName: String, channels: Int, meter: DisplayScale, barsFromHz: Double, barsToHz: Double,
        holdSeconds: Double, rate: Double, skipped: Counter = Counter(),
        reset: @escaping @Sendable () -> Void = {}, quit: @escaping @Sendable () -> Void = {},
        resetProgramme: (@Sendable (Int?) -> Void)? = nil,
        setIntegration: @escaping @Sendable (Int?, Bool) -> Void = { _, _ in }, history: LoudnessHistory? = nil
    ) {
        self.clientName = clientName
        self.channels = channels
        self.meter = meter
        self.barsFromHz = barsFromHz
        self.barsToHz = barsToHz
        self.holdSeconds = holdSeconds
        self.rate = rate
        self.skipped = skipped
        self.reset = reset
        self.quit = quit
        self.resetProgramme = resetProgramme ?? { _ in reset() }
        self.setIntegration = setIntegration
        self.history = history
    }

    /// The bar edges (`bars + 1` values, Hz) at `sampleRate`, as the spectrum analyser
    /// computes them.
    public func barEdgesHz(bars: Int, sampleRate: Int) -> [Double] {
        guard bars > 0 else { return [] }
        let top = sampleRate > 0 ? min(barsToHz, Double(sampleRate) / 2) : barsToHz
        let lo = log10(barsFromHz), hi = log10(max(top, barsFromHz * 1.0001))
        return (0...bars).map { pow(10, lo + Double($0) / Double(bars) * (hi - lo)) }
    }
}

/// Where the browser display listens (`--http [ADDRESS:]PORT`): a bare port means loopback
/// (127.0.0.1); an address (IPv4, a host name, or IPv6 in brackets: `[::]:8080`) is taken as
/// named. Port 0 asks the system for a free port.
public struct HTTPListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws(ParseError) {
        func portNumber(_ s: Substring) throws(ParseError) -> Int {
            guard let p = Int(s), (0...65535).contains(p) else {
                throw ParseError(description: "'\(text)': the port must be a number from 0 to 65535")
            }
            return p
        }
        if let p = Int(text) {
            host = "127.0.0.1"
            port = try portNumber(Substring(String(p)))
            return
        }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ParseError(description: "'\(text)': expected [IPV6]:PORT")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            port = try portNumber(text[text.index(close, offsetBy: 2)...])
        } else {
            guard let colon = text.lastIndex(of: ":"), colon != text.startIndex else {
                throw ParseError(description: "'\(text)': expected PORT or ADDRESS:PORT")
            }
            host = String(text[..<colon])
            port = try portNumber(text[text.index(after: colon)...])
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" }) else {
            throw ParseError(description: "'\(text)': '\(host)' is not an address")
        }
    }

    /// As a URL authority: `127.0.0.1:8080`, `[::1]:8080`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether the address is loopback only.
    public var isLoopback: Bool { host == "localhost" || host.hasPrefix("127.") || host == "::1" }
}

/// What the browser display's server lets in. A monitor's HTTP port must not be a way to
/// stop it: every connection costs a file descriptor, which JACK, OSC and the log need too,
/// and one client address must not be able to take every place (`--http-limits`).
public struct HTTPLimits: Sendable, Equatable {
    /// Connections open at once (pages, WebSockets, requests); one more is closed at once.
    public var maxConnections = 64
    /// Connections open at once from one client address: a quarter of the whole, so that
    /// one address holding its share leaves the rest to a browser and a scraper elsewhere.
    public var maxConnectionsPerAddress = 16
    /// WebSockets (browsers) at once from one client address (of `HTTPLimits.maxWebSockets`).
    public var maxWebSocketsPerAddress = 8
    /// Seconds a connection may take to send a whole request head, from its first byte (or
    /// from the connection, for the first): a client trickling a head is closed, whatever
    /// the head's size.
    public var headTimeout = 10.0
    /// Seconds a connection may stay idle between requests.
    public var idleTimeout = 30.0
    /// Header bytes in all (after the request line); beyond them the request is answered 431.
    public var maxHeaderBytes = 16 * 1024
    /// The request line's bytes (method, URL, version); a longer one gets 414.
    public var maxRequestLineBytes = 8 * 1024
    /// Origins besides the page's own whose WebSockets are accepted (`--http-origin`).
    public var origins: [String] = []

    public init() {}

    /// A request head is answered 431 beyond this many bytes (the request line and the
    /// headers together; a request line alone beyond `maxRequestLineBytes` gets 414).
    public var maxHeadBytes: Int { maxHeaderBytes }

    /// Header fields a request may have (431 beyond).
    public static let maxHeaderFields = 100
    /// Browsers (WebSockets) at once, at most (more get 503).
    public static let maxWebSockets = 32

    /// Reads `--http-limits CONNECTIONS[,PER_ADDRESS[,WEBSOCKETS_PER_ADDRESS]]` (1–1024; per
    /// address at most the whole, by default a quarter of it; WebSockets per address 1–32, by
    /// default 8 or the per-address limit if lower).
    public static func parse(_ text: String) -> HTTPLimits? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
        guard (1...3).contains(parts.count), parts.allSatisfy({ $0 != nil }) else { return nil }
        var l = HTTPLimits()
        l.maxConnections = parts[0]!
        l.maxConnectionsPerAddress = parts.count > 1 ? parts[1]! : max(1, l.maxConnections / 4)
        l.maxWebSocketsPerAddress = parts.count > 2 ? parts[2]! : max(1, min(l.maxConnectionsPerAddress, HTTPLimits.maxWebSockets / 4))
        guard (1...1024).contains(l.maxConnections), (1...l.maxConnections).contains(l.maxConnectionsPerAddress),
              (1...HTTPLimits.maxWebSockets).contains(l.maxWebSocketsPerAddress) else { return nil }
        return l
    }
}
