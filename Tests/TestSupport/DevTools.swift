#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Real headless Chromium driven over the Chrome DevTools Protocol, so that a test waits for
/// what a page shows (its title, its text, its state) instead of giving it a fixed budget of
/// time. One browser, any number of pages (tabs) open at once.
public final class HeadlessChromium: @unchecked Sendable {
    public let process: BackgroundProcess
    private let browser: DevToolsConnection
    private let port: Int
    private let profile: String

    /// Starts Chromium with a profile of its own under `folder` and connects to it.
    public init(folder: String) throws {
        let executable = try Executables.resolve("chromium")
        profile = folder + "/chromium-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: profile, withIntermediateDirectories: true)
        process = try BackgroundProcess(
            executable,
            ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile)",
             "--enable-logging=stderr", "--v=0", "--remote-debugging-port=0", "about:blank"],
            // Its singleton socket's folder (org.chromium.Chromium.XXXXXX, in TMPDIR) inside the
            // profile, so that it goes with the profile even when Chromium is killed.
            environment: ["TMPDIR": profile], label: "chromium")
        // Chromium writes its port and the browser's WebSocket path to DevToolsActivePort.
        let deadline = Date().addingTimeInterval(30)
        var found: (Int, String)?
        while Date() < deadline && process.isRunning && found == nil {
            if let text = try? String(contentsOfFile: profile + "/DevToolsActivePort", encoding: .utf8) {
                let lines = text.split(separator: "\n")
                if lines.count >= 2, let port = Int(lines[0]) { found = (port, String(lines[1])) }
            }
            if found == nil { usleep(50_000) }
        }
        guard let (port, path) = found, let browser = DevToolsConnection(port: port, path: path) else {
            process.stop()
            throw FixtureError("chromium did not open its DevTools port: \(process.stderr.suffix(500))")
        }
        self.port = port
        self.browser = browser
    }

    deinit { stop() }

    /// A new page `width`×`height` CSS pixels (device scale 1) showing `url`.
    public func open(_ url: String, width: Int, height: Int) throws -> DevToolsPage {
        let created = try browser.call("Target.createTarget", ["url": "about:blank"])
        guard let id = created["targetId"] as? String, let connection = DevToolsConnection(port: port, path: "/devtools/page/" + id)
        else { throw FixtureError("chromium did not open a page: \(created)") }
        let page = DevToolsPage(connection)
        _ = try connection.call("Runtime.enable")
        _ = try connection.call("Log.enable")
        _ = try connection.call(
            "Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false])
        _ = try connection.call("Page.navigate", ["url": url])
        return page
    }

    /// Closes the browser (its pages' connections with it) and removes its profile.
    public func stop() {
        browser.close()
        process.stop()
        try? FileManager.default.removeItem(atPath: profile)
    }
}

/// One page of a `HeadlessChromium`.
public final class DevToolsPage: @unchecked Sendable {
    private let connection: DevToolsConnection

    init(_ connection: DevToolsConnection) { self.connection = connection }

    /// The value of a JavaScript expression in the page (nil for undefined or on an exception).
    public func evaluate(_ expression: String) throws -> Any? {
        let result = try connection.call("Runtime.evaluate", ["expression": expression, "returnByValue": true])
        guard result["exceptionDetails"] == nil else { return nil }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Evaluates `expression` every 50 ms until it is `true`, for at most `timeout` seconds.
    /// Returns the seconds it took, or nil.
    public func wait(timeout: Double, until expression: String) throws -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            if try evaluate(expression) as? Bool == true { return Date().timeIntervalSince(start) }
            usleep(50_000)
        }
        return nil
    }

    /// A key pressed and released (`key` as DOM's KeyboardEvent.key, e.g. "Tab", "ArrowLeft").
    public func press(_ key: String, code: Int) throws {
        for type in ["rawKeyDown", "keyUp"] {
            _ = try connection.call(
                "Input.dispatchKeyEvent", ["type": type, "key": key, "code": key, "windowsVirtualKeyCode": code])
        }
    }

    /// A left click at (`x`, `y`) CSS pixels.
    public func click(x: Double, y: Double) throws {
        for type in ["mousePressed", "mouseReleased"] {
            _ = try connection.call(
                "Input.dispatchMouseEvent", ["type": type, "x": x, "y": y, "button": "left", "clickCount": 1])
        }
    }

    /// What the page said on its console, its uncaught exceptions and the browser's log entries
    /// about it (a failed request, a refused WebSocket), in order: "level: text".
    public var messages: [String] {
        connection.events.compactMap { event -> String? in
            let params = event["params"] as? [String: Any] ?? [:]
            switch event["method"] as? String {
            case "Runtime.consoleAPICalled":
                let args = (params["args"] as? [[String: Any]] ?? []).map { "\($0["value"] ?? $0["description"] ?? "")" }
                return "\(params["type"] ?? "log"): " + args.joined(separator: " ")
            case "Runtime.exceptionThrown":
                let details = params["exceptionDetails"] as? [String: Any] ?? [:]
                return "exception: \(details["text"] ?? "") \((details["exception"] as? [String: Any])?["description"] ?? "")"
            case "Log.entryAdded":
                let entry = params["entry"] as? [String: Any] ?? [:]
                return "\(entry["level"] ?? "log"): \(entry["text"] ?? "")"
            default:
                return nil
            }
        }
    }

    /// The page as a PNG file at `path` (what a person would see, to look at).
    public func screenshot(to path: String) throws {
        let result = try connection.call("Page.captureScreenshot", ["format": "png"])
        guard let data = (result["data"] as? String).flatMap({ Data(base64Encoded: $0) }) else {
            throw FixtureError("no screenshot: \(result)")
        }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Closes the page's DevTools connection (the page stays until the browser stops).
    public func close() { connection.close() }
}

/// One DevTools WebSocket: commands sent with an id, answered in order with events between.
final class DevToolsConnection: @unchecked Sendable {
    private let socket: Int32
    private var nextID = 1
    /// Events that arrived while waiting for answers.
    private(set) var events: [[String: Any]] = []

    init?(port: Int, path: String) {
        guard let fd = connectTCP(port: port) else { return nil }
        sendAll(
            fd,
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        var head = [UInt8](), byte: UInt8 = 0
        while head.count < 8192 && recv(fd, &byte, 1, 0) == 1 {
            head.append(byte)
            if head.suffix(4) == [13, 10, 13, 10] { break }
        }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            Glibc.close(fd)
            return nil
        }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        socket = fd
    }

    /// Sends `method` and returns its result (events that come first are kept in `events`).
    func call(_ method: String, _ params: [String: Any] = [:]) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        let request = try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": params])
        try send(Array(request))
        while true {
            guard let text = receive() else { throw FixtureError("DevTools: no answer to \(method)") }
            guard let message = try JSONSerialization.jsonObject(with: Data(text)) as? [String: Any] else { continue }
            if message["id"] as? Int == id {
                if let error = message["error"] { throw FixtureError("DevTools \(method): \(error)") }
                return message["result"] as? [String: Any] ?? [:]
            }
            if message["method"] != nil { events.append(message) }
        }
    }

    /// A masked text frame (RFC 6455 §5.3: every frame from a client is masked).
    private func send(_ payload: [UInt8]) throws {
        var frame: [UInt8] = [0x81]
        let n = payload.count
        if n < 126 {
            frame.append(0x80 | UInt8(n))
        } else if n < 65536 {
            frame += [0x80 | 126, UInt8(n >> 8), UInt8(n & 0xff)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((n >> ($0 * 8)) & 0xff) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        var offset = 0
        while offset < frame.count {
            let sent = frame.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + offset, frame.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw FixtureError("DevTools: the connection closed") }
            offset += sent
        }
    }

    /// One whole message (continuation frames joined); nil when the connection closed or 30 s passed.
    private func receive() -> [UInt8]? {
        var message: [UInt8] = []
        while true {
            guard let head = read(2) else { return nil }
            var length = Int(head[1] & 0x7f)
            if length == 126 {
                guard let b = read(2) else { return nil }
                length = Int(b[0]) << 8 | Int(b[1])
            } else if length == 127 {
                guard let b = read(8) else { return nil }
                length = b.reduce(0) { $0 << 8 | Int($1) }
            }
            guard let payload = read(length) else { return nil }
            let opcode = head[0] & 0x0f
            if opcode == 8 { return nil }  // close
            if opcode == 9 || opcode == 10 { continue }  // ping, pong
            message += payload
            if head[0] & 0x80 != 0 { return message }
        }
    }

    private func read(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let n = bytes.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + offset, count - offset, 0) }
            guard n > 0 else { return nil }
            offset += n
        }
        return bytes
    }

    private var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        shutdown(socket, Int32(SHUT_RDWR))
        Glibc.close(socket)
    }

    deinit { close() }
}
