#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Outputs
import TestSupport
import XCTest

/// The browser display against a real JACK server and jacktone: real headless Chromium
/// (Debian's `chromium`) loading the page, a raw WebSocket client that never reads, plain HTTP
/// for `/snapshot`.
final class WebDisplayTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "jackvu-web-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// jackvu with `--http PORT` (and the text stream on stdout, to a file) hearing A4.
    private func startJackVU(_ server: JackServer, port: Int, extra: [String] = []) throws -> BackgroundProcess {
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--connect", "jacktone:out", "--http", "\(port)", "--text"] + extra, environment: server.environment)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline && vu.isRunning {
            if let r = httpGet(port: port, path: "/snapshot"), r.status == 200 { return vu }
            usleep(100_000)
        }
        throw FixtureError("jackvu --http \(port) did not serve a snapshot: \(vu.stderr)")
    }

    /// Headless Chromium: loads `url`, runs it for 3 s of (virtual) time, writes a screenshot,
    /// and returns what the page logged on the console. `--virtual-time-budget` ends the run
    /// once 3 s of page time have passed, so "within 3 s" is the page's own clock.
    private func chromium(_ url: String, screenshot: String, size: String = "1280,800") throws -> BackgroundProcess {
        let profile = folder + "/profile-\(Int.random(in: 0..<1_000_000))"
        return try BackgroundProcess(
            try Executables.resolve("chromium"),
            ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile)",
             "--enable-logging=stderr", "--v=0", "--window-size=\(size)", "--virtual-time-budget=3000",
             "--screenshot=\(screenshot)", url],
            label: "chromium")
    }

    /// Console lines Chromium logged from the page (`INFO:CONSOLE` entries).
    private func consoleLines(_ stderr: String) -> [String] {
        stderr.split(separator: "\n").filter { $0.contains(":CONSOLE") }.map(String.init)
    }

    /// Two pages at once in real Chromium (a desktop window and a phone), then a 4K screen:
    /// each loads with no console error, shows A4 within 3 s of page time, and its screenshot is
    /// far from blank (many times the size of a blank page's at the same size). A WebSocket
    /// reader of the test's own stays connected throughout and keeps receiving updates, so
    /// every page is served beside another browser: Chromium's virtual clock runs a page's 3 s
    /// in about one second of wall time, and the two Chromiums' connections (launched together)
    /// usually overlap but not surely — one CI run under load saw them never connected at once.
    /// For the same reason a page whose virtual time ran out before its first update (it logged
    /// nothing at all) runs again, at most twice.
    func testTwoChromiumPagesShowA4WithoutConsoleErrors() throws {
        _ = try Executables.resolve("chromium")
        let server = try JackServer(label: "web")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        let vu = try startJackVU(server, port: port)
        defer { vu.stop() }
        XCTAssertTrue(vu.stderr.contains("browser display at http://127.0.0.1:\(port)/"), vu.stderr)

        let reader = try XCTUnwrap(WebSocketReader(port: port), "WebSocket upgrade")
        defer { reader.stop() }
        func clients() -> Int? {
            guard let body = httpGet(port: port, path: "/status")?.body,
                let range = body.range(of: "\"clients\": ")
            else { return nil }
            return Int(body[range.upperBound...].prefix { $0.isNumber })
        }
        var deadline = Date().addingTimeInterval(10)
        while Date() < deadline && clients() != 1 { usleep(20_000) }
        XCTAssertEqual(clients(), 1, "the reader is connected")

        // A desktop window and a phone at once.
        let sizes = ["1280,800", "390,844"]
        var pages = try (0..<2).map {
            try chromium("http://127.0.0.1:\(port)/?log=1", screenshot: folder + "/page\($0).png", size: sizes[$0])
        }
        var most = 0, allThree = 0
        deadline = Date().addingTimeInterval(20)
        while Date() < deadline && pages.contains(where: { $0.isRunning }) {
            let n = clients() ?? 0
            most = max(most, n)
            if n == 3 { allThree += 1 }
            usleep(20_000)
        }
        for page in pages { XCTAssertTrue(page.waitForExit(timeout: 30), "chromium did not finish") }
        print("two pages beside the reader: most clients at once \(most), all three in \(allThree) polls of /status")
        XCTAssertGreaterThanOrEqual(most, 2, "no page was ever connected beside the reader")
        // The pages' connections are closed; the reader's stays and keeps receiving updates.
        deadline = Date().addingTimeInterval(10)
        while Date() < deadline && clients() != 1 { usleep(20_000) }
        XCTAssertEqual(clients(), 1, "the pages' connections closed, the reader's open")
        let received = reader.bytes
        deadline = Date().addingTimeInterval(20)
        while Date() < deadline && reader.bytes == received { usleep(20_000) }
        XCTAssertGreaterThan(reader.bytes, received, "the reader still receives updates after the pages")
        // And a 4K screen.
        let large = try chromium("http://127.0.0.1:\(port)/?log=1", screenshot: folder + "/page2.png", size: "3840,2160")
        XCTAssertTrue(large.waitForExit(timeout: 30), "chromium did not finish")
        pages.append(large)
        // A page that logged nothing at all had its 3 s of virtual time run out before the
        // first update arrived (Chromium's virtual clock does not wait for a WebSocket; seen in
        // about one run in ten under load): that page runs again, at most twice. A page that
        // logged anything else (an error, another note) is judged as it is.
        var reruns = 0
        for i in pages.indices {
            for _ in 0..<2 where consoleLines(pages[i].stderr).isEmpty {
                reruns += 1
                pages[i] = try chromium(
                    "http://127.0.0.1:\(port)/?log=1", screenshot: folder + "/page\(i).png", size: (sizes + ["3840,2160"])[i])
                XCTAssertTrue(pages[i].waitForExit(timeout: 30), "chromium did not finish")
            }
        }
        print("pages run again after their virtual time ran out before the first update: \(reruns)")
        var blankSizes: [Int] = []
        for (i, size) in (sizes + ["3840,2160"]).enumerated() {
            let blank = try chromium("about:blank", screenshot: folder + "/blank\(i).png", size: size)
            XCTAssertTrue(blank.waitForExit(timeout: 30))
            blankSizes.append(try XCTUnwrap(FileManager.default.attributesOfItem(atPath: folder + "/blank\(i).png")[.size] as? Int))
        }
        for (i, page) in pages.enumerated() {
            let blankSize = blankSizes[i]
            let console = consoleLines(page.stderr)
            XCTAssertTrue(console.contains { $0.contains("\"jackvu note A4\"") }, "page \(i) did not show A4: \(console)")
            XCTAssertEqual(console.filter { !$0.contains("\"jackvu note ") }, [], "page \(i): console messages")
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: folder + "/page\(i).png")[.size] as? Int)
            XCTAssertGreaterThan(size, 5 * blankSize, "page \(i)'s screenshot looks blank (\(size) vs \(blankSize) bytes)")
        }
        XCTAssertTrue(vu.isRunning)
    }

    /// `GET /snapshot` is the latest update in the live JSON schema; `GET /` the page with no
    /// external resource; the server listens on loopback only unless an address is named.
    func testSnapshotJSONPageAndLoopbackBinding() throws {
        let server = try JackServer(label: "web")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        let vu = try startJackVU(server, port: port)
        defer { vu.stop() }
        usleep(500_000)
        let snapshot = try XCTUnwrap(httpGet(port: port, path: "/snapshot"))
        XCTAssertEqual(snapshot.status, 200)
        XCTAssertTrue(snapshot.headers.lowercased().contains("content-type: application/json"), snapshot.headers)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(snapshot.body.utf8)) as? [String: Any])
        XCTAssertEqual(object["sample_rate_hz"] as? Int, 48000)
        let channels = try XCTUnwrap(object["channels"] as? [[String: Any]])
        XCTAssertEqual(channels.count, 2)
        XCTAssertEqual(channels[0]["note"] as? String, "A4")
        XCTAssertEqual(try XCTUnwrap(channels[0]["rms_dbfs"] as? Double), -21.03, accuracy: 0.1)
        XCTAssertEqual((channels[0]["bars"] as? [Any])?.count, 48)
        XCTAssertNotNil((object["status"] as? [String: Any])?["buffer_frames"])
        XCTAssertEqual((object["status"] as? [String: Any])?["buffer_frames"] as? Int, 256)

        let display = try XCTUnwrap(httpGet(port: port, path: "/display"))
        let hello = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(display.body.utf8)) as? [String: Any])
        let meter = try XCTUnwrap((hello["display"] as? [String: Any])?["meter"] as? [String: Any])
        XCTAssertEqual(meter["unit"] as? String, "dBFS")
        XCTAssertEqual(meter["min"] as? Double, -60)

        let page = try XCTUnwrap(httpGet(port: port, path: "/"))
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains("<canvas"))
        XCTAssertNil(page.body.range(of: "(src|href)=\"?https?:", options: .regularExpression), "no external resources")
        XCTAssertEqual(httpGet(port: port, path: "/nothing")?.status, 404)

        XCTAssertTrue(tcpListening(port: port, hexAddress: "0100007F"), "listens on 127.0.0.1")
        XCTAssertFalse(tcpListening(port: port, hexAddress: "00000000"), "not on every interface")
        vu.stop()

        let anyPort = freeTCPPort()
        let open = try startJackVU(server, port: anyPort, extra: ["--http", "0.0.0.0:\(anyPort)", "--name", "jvall"])
        defer { open.stop() }
        XCTAssertTrue(tcpListening(port: anyPort, hexAddress: "00000000"), "0.0.0.0 when asked")
    }

    /// A WebSocket client that never reads: jackvu's memory stays within a bound while updates
    /// of ~50 kB go out 50 times a second (2.5 MB/s: unbounded buffering would grow by tens of
    /// MB), the client is dropped after the stall limit, and a reading client goes on.
    func testAClientThatNeverReadsIsDroppedWithBoundedMemory() throws {
        let server = try JackServer(label: "web")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        let vu = try startJackVU(server, port: port, extra: ["--channels", "8", "--bars", "1024", "--rate", "50"])
        defer { vu.stop() }
        let snapshotSize = httpGet(port: port, path: "/snapshot")?.body.utf8.count ?? 0
        XCTAssertGreaterThan(snapshotSize, 40_000, "large updates")

        let stalled = try XCTUnwrap(openWebSocket(port: port, receiveBuffer: 4096), "WebSocket upgrade")
        defer { close(stalled) }
        // A reader alongside.
        let reader = try XCTUnwrap(WebSocketReader(port: port))
        defer { reader.stop() }
        sleep(2)  // let the stalled client's buffers fill
        let before = residentBytes(pid: vu.process.processIdentifier)
        var dropped = false
        let started = Date()
        let deadline = Date().addingTimeInterval(25)
        var peak = before
        while Date() < deadline {
            peak = max(peak, residentBytes(pid: vu.process.processIdentifier))
            if let status = httpGet(port: port, path: "/status")?.body, status.contains("\"dropped_clients\": 1") {
                dropped = true
                break
            }
            usleep(200_000)
        }
        XCTAssertTrue(dropped, "the stalled client was not dropped: \(httpGet(port: port, path: "/status")?.body ?? "")")
        // Keep measuring for as long again: nothing accumulates after the drop either.
        for _ in 0..<20 {
            peak = max(peak, residentBytes(pid: vu.process.processIdentifier))
            usleep(200_000)
        }
        XCTAssertLessThan(peak - before, 16 << 20, "jackvu grew by \(peak - before) bytes")
        print("web display: a client that never reads was dropped \(fixed(Date().timeIntervalSince(started) + 2, 1)) s "
            + "after connecting; jackvu's RSS \(before >> 10) KiB before, peak \(peak >> 10) KiB")
        let status = httpGet(port: port, path: "/status")?.body ?? ""
        XCTAssertTrue(status.contains("\"clients\": 1"), "the reading client stays: \(status)")
        let read1 = reader.bytes
        usleep(500_000)
        XCTAssertGreaterThan(reader.bytes, read1, "the reading client still receives updates")
        XCTAssertTrue(vu.isRunning)
    }

    /// Bad `--http` values: a malformed one is a usage error (64), a host that does not resolve
    /// exits 68, an address in use 71; each with one line on stderr.
    func testBadHTTPAddresses() throws {
        let server = try JackServer(label: "web")
        let jackvu = try Executables.product("jackvu")
        let malformed = try Executables.run(jackvu, ["--http", "99999", "--text"], environment: server.environment)
        XCTAssertEqual(malformed.status, 64, malformed.stderr)
        XCTAssertTrue(malformed.stderr.contains("--http"), malformed.stderr)
        let host = try Executables.run(jackvu, ["--http", "no-such-host.invalid:8080", "--text"], environment: server.environment)
        XCTAssertEqual(host.status, 68, host.stderr)
        XCTAssertEqual(host.stderr.split(separator: "\n").count, 1, host.stderr)

        // Something else listening on the port.
        let port = freeTCPPort()
        let fd = socket(AF_INET, streamSocketType, 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        listen(fd, 1)
        let busy = try Executables.run(jackvu, ["--http", "\(port)", "--text"], environment: server.environment)
        XCTAssertEqual(busy.status, 71, busy.stderr)
        XCTAssertTrue(busy.stderr.contains("cannot listen"), busy.stderr)
        XCTAssertEqual(busy.stdout, "")
    }

    /// The server cannot be used up or abused from outside: 2,000 connections that each send
    /// half a request leave jackvu with a bounded number of descriptors while a WebSocket
    /// reader keeps its updates, and are closed after the head timeout; a WebSocket from
    /// another origin, a foreign Host name (DNS rebinding) and oversized headers are refused;
    /// the page's own origin and `--http-origin` are accepted.
    func testConnectionFloodOriginAndHost() throws {
        let server = try JackServer(label: "webflood")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        let vu = try startJackVU(server, port: port, extra: ["--http-origin", "https://wall.example:8443"])
        defer { vu.stop() }
        let pid = vu.process.processIdentifier
        func descriptors() -> Int { ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count }
        let reader = try XCTUnwrap(WebSocketReader(port: port), "WebSocket upgrade")
        defer { reader.stop() }
        let baseline = descriptors()

        // The flood: this test's own descriptor limit raised to its hard limit first.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        var flood: [Int32] = []
        defer { flood.forEach { close($0) } }
        var most = 0
        let before = reader.bytes
        for i in 0..<2000 {
            guard let fd = connectTCP(port: port) else { continue }
            sendAll(fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Slow: ")
            flood.append(fd)
            if i % 100 == 0 { most = max(most, descriptors()) }
        }
        most = max(most, descriptors())
        print("2000 half-open connections: \(flood.count) connected, jackvu's descriptors \(baseline) before, at most \(most)")
        XCTAssertGreaterThan(flood.count, 1900)
        // The 64 held, and those refused but not yet closed by the event loops: bounded by
        // the cap, not by the flood (94 seen here at most).
        XCTAssertLessThanOrEqual(most, baseline + 2 * 64, "jackvu's descriptors grew with the flood")
        XCTAssertNotNil(waitFor(timeout: 20) { reader.bytes > before + 10_000 }, "the WebSocket reader stopped getting updates")
        // The half-sent requests are closed after the 10 s head timeout; then /status answers.
        let status = waitFor(timeout: 40) { () -> String? in
            guard let body = httpGet(port: port, path: "/status")?.body, body.contains("\"connections\": 2,") else { return nil }
            return body
        }
        XCTAssertNotNil(status, "the half-open connections were not closed: \(httpGet(port: port, path: "/status")?.body ?? "no answer")")
        let body = status ?? ""
        let refused = body.range(of: "\"refused_connections\": ").flatMap { Int(body[$0.upperBound...].prefix { $0.isNumber }) } ?? 0
        XCTAssertGreaterThanOrEqual(refused, flood.count - 64, body)
        XCTAssertLessThanOrEqual(descriptors(), baseline + 2)

        // Origins and host names.
        func upgrade(origin: String?, host: String = "127.0.0.1:\(port)") -> String {
            guard let fd = connectTCP(port: port) else { return "refused" }
            defer { close(fd) }
            sendAll(fd, "GET /ws HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + (origin.map { "Origin: \($0)\r\n" } ?? "")
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            var head = [UInt8](), byte: UInt8 = 0
            while head.count < 4096 && recv(fd, &byte, 1, 0) == 1 {
                head.append(byte)
                if head.suffix(4) == [13, 10, 13, 10] { break }
            }
            return String(String(decoding: head, as: UTF8.self).prefix(12))
        }
        XCTAssertEqual(upgrade(origin: "http://127.0.0.1:\(port)"), "HTTP/1.1 101", "the page's own origin")
        XCTAssertEqual(upgrade(origin: "https://wall.example:8443"), "HTTP/1.1 101", "an --http-origin")
        XCTAssertEqual(upgrade(origin: nil), "HTTP/1.1 101", "no Origin: not a browser")
        XCTAssertNotEqual(upgrade(origin: "http://evil.example"), "HTTP/1.1 101", "another origin")
        XCTAssertNotEqual(upgrade(origin: "http://127.0.0.1:\(port + 1)"), "HTTP/1.1 101", "another port is another origin")
        XCTAssertNotEqual(upgrade(origin: "http://rebind.example:\(port)", host: "rebind.example:\(port)"), "HTTP/1.1 101", "a foreign Host")
        // Plain requests: a foreign Host is refused, localhost is fine, huge headers are refused.
        func get(_ request: String) -> String {
            guard let fd = connectTCP(port: port) else { return "refused" }
            defer { close(fd) }
            sendAll(fd, request)
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[0..<min(n, 12)], as: UTF8.self) : "closed"
        }
        XCTAssertEqual(get("GET /status HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n"), "HTTP/1.1 403")
        XCTAssertEqual(get("GET /status HTTP/1.1\r\nHost: localhost:\(port)\r\nConnection: close\r\n\r\n"), "HTTP/1.1 200")
        let huge = String(repeating: "x", count: 32 * 1024)
        XCTAssertNotEqual(get("GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(huge)\r\nConnection: close\r\n\r\n"), "HTTP/1.1 200")
        XCTAssertEqual(httpGet(port: port, path: "/snapshot")?.status, 200, "still serving")
        XCTAssertTrue(vu.isRunning, vu.stderr)
    }

    /// Polls `condition` every 50 ms until it gives a value or `timeout` seconds pass.
    private func waitFor<T>(timeout: Double, _ condition: () -> T?) -> T? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let value = condition() { return value }
            usleep(50_000)
        }
        return condition()
    }

    private func waitFor(timeout: Double, _ condition: () -> Bool) -> Bool? {
        waitFor(timeout: timeout) { condition() ? true : nil }
    }
}

/// A value shared with a thread (a lock around it).
/// A WebSocket client that drains its socket on a thread of its own, counting the bytes.
final class WebSocketReader: @unchecked Sendable {
    private let socket: Int32
    private let done = Atomic(false)
    private let count = Atomic(0)

    /// Connects to jackvu's `/ws` on 127.0.0.1:`port` (nil when refused) and starts reading.
    init?(port: Int) {
        guard let socket = openWebSocket(port: port) else { return nil }
        self.socket = socket
        let (done, count) = (done, count)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !done.value {
                let n = recv(socket, &buffer, buffer.count, 0)
                if n <= 0 { break }
                count.value += n
            }
        }.start()
    }

    /// Bytes received so far.
    var bytes: Int { count.value }

    func stop() {
        done.value = true
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }
}

final class Atomic<T>: @unchecked Sendable {
    private var stored: T
    private let lock = NSLock()
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
