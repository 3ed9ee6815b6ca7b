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

    /// The fraction of the page's canvas that has been drawn on (pixels not transparent).
    private static let drawnFraction = """
        (() => { const d = g.getImageData(0, 0, canvas.width, canvas.height).data; let n = 0;
          for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n / (d.length / 4); })()
        """
    /// The text the page draws on its LRA line (the canvas's fillText, recorded for one draw).
    private static let lraLine = """
        (() => { const seen = [], f = g.fillText; g.fillText = function (t, ...a) { seen.push(String(t)); return f.call(this, t, ...a); };
          try { draw(); } finally { g.fillText = f; } return seen.find(t => t.startsWith("LRA ")) || ""; })()
        """
    /// Every text the page draws in one frame (the canvas's fillText, recorded for one draw).
    private static let drawnTexts = """
        (() => { const seen = [], f = g.fillText; g.fillText = function (t, ...a) { seen.push(String(t)); return f.call(this, t, ...a); };
          try { draw(); } finally { g.fillText = f; } return seen; })()
        """
    /// The same for the page's waiting state ("waiting for audio …"), drawn for a moment.
    private static let waitingFraction = """
        (() => { const saved = update; update = null; draw(); const f = \(drawnFraction); update = saved; draw(); return f; })()
        """

    /// Three pages at once in one real Chromium (a desktop window, a phone and a 4K screen)
    /// beside a WebSocket reader of the test's own: /status counts all four clients at once;
    /// each page shows A4 (its title, set when it draws an update), has drawn on much of its
    /// canvas (more than twice what its waiting state covers) and logged nothing but its notes
    /// (no error, no exception, no failed request: the page asks for no favicon).
    /// Chromium runs in real time, driven over DevTools: the test waits for what each page shows.
    func testThreePagesAtOnceShowA4WithoutConsoleErrors() throws {
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
        XCTAssertNotNil(waitFor(timeout: 20) { clients(port) == 1 }, "the reader is connected")

        // Chromium's singleton folders (org.chromium.Chromium.XXXXXX, in TMPDIR) before it runs.
        func singletonFolders() -> Set<String> {
            Set(((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []).filter { $0.hasPrefix("org.chromium.Chromium.") })
        }
        let foldersBefore = singletonFolders()
        let browser = try HeadlessChromium(folder: folder)
        defer { browser.stop() }
        let sizes = [(1280, 800), (390, 844), (3840, 2160)]
        let pages = try sizes.map { try browser.open("http://127.0.0.1:\(port)/?log=1", width: $0.0, height: $0.1) }
        for (i, page) in pages.enumerated() {
            let took = try page.wait(timeout: 20, until: "document.title.startsWith('A4 ')")
            XCTAssertNotNil(took, "page \(i) did not show A4: \(((try? page.evaluate("document.title")) as? String) ?? "?") \(page.messages)")
            print("page \(i) (\(sizes[i].0)x\(sizes[i].1)) showed A4 after \(fixed(took ?? -1, 2)) s")
        }
        XCTAssertNotNil(waitFor(timeout: 20) { clients(port) == 4 }, "three pages and the reader: \(clients(port) ?? -1) clients")
        for (i, page) in pages.enumerated() {
            XCTAssertEqual(try page.evaluate("innerWidth") as? Int, sizes[i].0, "page \(i)'s width")
            // (The console first: the test's own readback of the canvas below earns a warning.)
            XCTAssertTrue(page.messages.contains("log: jackvu note A4"), "page \(i): \(page.messages)")
            XCTAssertEqual(page.messages.filter { !$0.hasPrefix("log: jackvu note ") && !$0.hasPrefix("log: jackvu history ") }, [],
                           "page \(i): console messages")
            let drawn = try XCTUnwrap(try page.evaluate(Self.drawnFraction) as? Double, "page \(i)'s canvas")
            let waiting = try XCTUnwrap(try page.evaluate(Self.waitingFraction) as? Double, "page \(i)'s canvas")
            print("page \(i): \(fixed(100 * drawn, 1)) % of the canvas drawn, \(fixed(100 * waiting, 1)) % when waiting for audio")
            XCTAssertGreaterThan(drawn, 2 * waiting, "page \(i)'s canvas shows no more than the waiting state")
            // The table's further programme readings (PLR) are drawn beside LRA, as the update says.
            let lra = try XCTUnwrap(try page.evaluate(Self.lraLine) as? String, "page \(i)'s LRA line")
            XCTAssertNotNil(lra.range(of: "^LRA -?[0-9]+\\.[0-9] LU   PLR (-|-?[0-9]+\\.[0-9]) LU$", options: .regularExpression), "page \(i): \(lra)")
        }
        // The pages' connections close with the browser; the reader's stays and keeps receiving.
        browser.stop()
        XCTAssertEqual(singletonFolders().subtracting(foldersBefore), [], "the browser left its folder in \(NSTemporaryDirectory())")
        XCTAssertNotNil(waitFor(timeout: 20) { clients(port) == 1 }, "the pages' connections closed, the reader's open")
        let received = reader.bytes
        XCTAssertNotNil(waitFor(timeout: 20) { reader.bytes > received }, "the reader still receives updates after the pages")
        XCTAssertTrue(vu.isRunning)
    }

    /// The loudness view with two and with eight programmes (two jackvu instances on one
    /// server, each programme a mono feed of one tone, R 128 target), each shown in a phone,
    /// a laptop and a 4K page opened seconds after the start: `/history` and every page have
    /// the past they missed (points older than the page), every programme's block is drawn,
    /// the graphs move (the pages add points as updates come), nothing on the console but
    /// the page's own notes. Screenshots go to $TMPDIR/jackvu-screenshots/ to look at.
    func testLoudnessViewWithTwoAndEightProgrammesAndALateBrowser() throws {
        let server = try JackServer(label: "web")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "997", "--level", "-20"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let shots = FileManager.default.temporaryDirectory.appendingPathComponent("jackvu-screenshots").path
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        var instances: [(count: Int, port: Int, vu: BackgroundProcess)] = []
        defer { for i in instances { i.vu.stop() } }
        for count in [2, 8] {
            let port = freeTCPPort()
            let vu = try startJackVU(
                server, port: port,
                extra: ["--name", "lv\(count)", "--channels", "\(count)"] + Array(repeating: ["--connect", "jacktone:out"], count: count - 1).flatMap { $0 }
                    + (1...count).flatMap { ["--programme", "p\($0)=\($0)"] } + ["--target", "ebu-r128"])
            instances.append((count, port, vu))
        }
        // The past: a few seconds of history before any page opens.
        func history(_ port: Int) -> [[String: Any]] {
            guard let r = httpGet(port: port, path: "/history"), r.status == 200,
                  let object = try? JSONSerialization.jsonObject(with: Data(r.body.utf8)) as? [String: Any] else { return [] }
            return (object["history"] as? [String: Any])?["programmes"] as? [[String: Any]] ?? []
        }
        for (count, port, vu) in instances {
            let past = waitFor(timeout: 30) { history(port).count == count && history(port).allSatisfy { ($0["age_s"] as? [Double])?.count ?? 0 >= 4 } }
            XCTAssertNotNil(past, "\(count) programmes: 4 s of history: \(history(port)) \(vu.stderr)")
            let bytes = httpGet(port: port, path: "/history")?.body.utf8.count ?? 0
            print("\(count) programmes: /history \(bytes) bytes after \(history(port).first.map { ($0["age_s"] as? [Double])?.count ?? 0 } ?? 0) s")
        }
        let browser = try HeadlessChromium(folder: folder)
        defer { browser.stop() }
        let sizes = [(390, 844), (1280, 800), (3840, 2160)]
        for (count, port, _) in instances {
            for (w, h) in sizes {
                let page = try browser.open("http://127.0.0.1:\(port)/?view=loudness&minutes=1&log=1", width: w, height: h)
                let took = try page.wait(timeout: 20, until: "historyPoints >= \(4 * count) && update !== null && programmeList(update).length === \(count)")
                XCTAssertNotNil(took, "\(count) programmes, \(w)x\(h): no history or update: \(page.messages)")
                // The history reached back before the page was opened.
                let oldest = try XCTUnwrap(try page.evaluate("(performance.now() - Math.min(...Object.values(history).map(h => h[0].t))) / 1000") as? Double)
                XCTAssertGreaterThanOrEqual(oldest, 3, "\(count) programmes, \(w)x\(h): the past it missed")
                let points = try XCTUnwrap(try page.evaluate("history.p1.length") as? Int)
                XCTAssertNotNil(try page.wait(timeout: 20, until: "history.p1.length >= \(points + 3)"), "the graph moves")
                // (The console first: the test's own readback of the canvas below earns a warning.)
                XCTAssertEqual(page.messages.filter { !$0.hasPrefix("log: jackvu note ") && !$0.hasPrefix("log: jackvu history ") }, [],
                               "\(count) programmes, \(w)x\(h): console")
                let drawn = try XCTUnwrap(try page.evaluate(Self.drawnFraction) as? Double)
                let waiting = try XCTUnwrap(try page.evaluate(Self.waitingFraction) as? Double)
                XCTAssertGreaterThan(drawn, 2 * waiting, "\(count) programmes, \(w)x\(h): the blocks are drawn")
                // Every programme's block: its name and readings line were drawn.
                let texts = try XCTUnwrap(try page.evaluate(Self.drawnTexts) as? [String])
                for p in 1...count { XCTAssertTrue(texts.contains("p\(p)"), "\(count) programmes, \(w)x\(h): p\(p) in \(texts)") }
                let file = "\(shots)/loudness-\(count)-\(w)x\(h).png"
                try page.screenshot(to: file)
                print("screenshot: \(file), \(fixed(100 * drawn, 1)) % drawn, history back \(fixed(oldest, 1)) s")
            }
        }
    }


    /// The page's selection by key and by click, its "No JACK server" state and its
    /// reconnection after jackvu restarts, in real Chromium: Tab and the arrow keys step the
    /// selected input, a click on a meter row selects that input; jackvu stopped, the page says
    /// it is reconnecting; jackvu started again on the same port, the page shows A4 again by
    /// itself; the JACK server stopped, the page says so.
    func testPageSelectionServerStateAndReconnection() throws {
        let server = try JackServer(label: "webpage")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        // Input 2 is silent beside input 1's tone: pair 1's lost-leg alarm (--alarm) is raised.
        var vu = try startJackVU(server, port: port, extra: ["--channels", "3", "--alarm", "leg:raise=0.5"])
        defer { vu.stop() }
        let browser = try HeadlessChromium(folder: folder)
        defer { browser.stop() }
        let page = try browser.open("http://127.0.0.1:\(port)/", width: 1280, height: 800)
        let live = "document.getElementById('live').textContent"
        func shown() -> String { ((try? page.evaluate(live)) as? String) ?? "?" }
        XCTAssertNotNil(try page.wait(timeout: 20, until: "\(live).startsWith('Input 1: A4')"), shown())
        // The alarm: said, in the title, and drawn as a red band under the title bar.
        XCTAssertNotNil(try page.wait(timeout: 20, until: "\(live).endsWith('Alarm: leg pair/1') && document.title.startsWith('ALARM · ')"), shown())
        let band = try XCTUnwrap(try page.evaluate(
            "(() => { const u = Math.max(6, Math.min(innerWidth / 64, innerHeight / 36)); const d = g.getImageData(innerWidth / 2, 2.2 * u, 1, 1).data; return [d[0], d[1], d[2]]; })()") as? [Int])
        XCTAssertEqual(band, [255, 65, 54], "the banner's red (#ff4136)")

        // Keys: Tab and → step forward, ← back, wrapping round the three inputs.
        let steps: [(String, Int, String)] = [
            ("Tab", 9, "Input 2:"), ("ArrowRight", 39, "Input 3:"), ("ArrowRight", 39, "Input 1:"), ("ArrowLeft", 37, "Input 3:"),
        ]
        for (key, code, expected) in steps {
            try page.press(key, code: code)
            XCTAssertNotNil(try page.wait(timeout: 10, until: "\(live).startsWith('\(expected)')"), "after \(key): \(shown())")
        }
        // A click in the middle of the second meter row selects input 2.
        let rows = try XCTUnwrap(try page.evaluate("meterRows") as? [[Double]], "meter rows")
        XCTAssertEqual(rows.count, 3, "a meter row per input: \(rows)")
        let row = try XCTUnwrap(rows.first { $0.count == 3 && $0[2] == 1 }, "\(rows)")
        try page.click(x: 640, y: (row[0] + row[1]) / 2)
        XCTAssertNotNil(try page.wait(timeout: 10, until: "\(live).startsWith('Input 2:')"), "after the click: \(shown())")
        try page.press("ArrowLeft", code: 37)
        XCTAssertNotNil(try page.wait(timeout: 10, until: "\(live).startsWith('Input 1: A4')"), shown())

        // jackvu restarts: the page says it is reconnecting, then shows A4 again by itself.
        vu.stop()
        XCTAssertNotNil(try page.wait(timeout: 20, until: "\(live).startsWith('Reconnecting to jackvu.')"), shown())
        vu = try startJackVU(server, port: port, extra: ["--channels", "3"])
        let back = try page.wait(timeout: 30, until: "connected && \(live).startsWith('Input 1: A4')")
        XCTAssertNotNil(back, "the page did not reconnect: \(shown())")
        print("the page reconnected \(fixed(back ?? -1, 2)) s after jackvu served again")

        // The JACK server goes away; jackvu waits for it, and the page says so.
        server.stop()
        XCTAssertNotNil(try page.wait(timeout: 20, until: "\(live).startsWith('No JACK server: waiting for it.')"), shown())
        XCTAssertTrue(vu.isRunning, vu.stderr)
        XCTAssertEqual(page.messages.filter { $0.hasPrefix("exception") }, [], "uncaught exceptions")
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
        // The first updates come before the pitch has settled: wait for the note itself.
        let snapshot = try XCTUnwrap(waitFor(timeout: 20) { () -> (status: Int, headers: String, body: String)? in
            guard let r = httpGet(port: port, path: "/snapshot"), r.body.contains("\"note\": \"A4\"") else { return nil }
            return r
        }, "no snapshot with A4: \(httpGet(port: port, path: "/snapshot")?.body.prefix(300) ?? "")")
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
        // The further programme readings the page draws by label, from the table.
        let extras = try XCTUnwrap((hello["display"] as? [String: Any])?["extras"] as? [[String: Any]])
        XCTAssertTrue(extras.contains { $0["key"] as? String == "plr_lu" && $0["label"] as? String == "PLR" && $0["unit"] as? String == "LU" }, "\(extras)")
        XCTAssertTrue((object["loudness"] as? [String: Any])?.keys.contains("plr_lu") ?? false, snapshot.body)

        let page = try XCTUnwrap(httpGet(port: port, path: "/"))
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains("<canvas"))
        XCTAssertNil(page.body.range(of: "(src|href)=\"?https?:", options: .regularExpression), "no external resources")
        // The page is the package's files put together, and its script is valid JavaScript
        // (node --check: a syntax error fails here, not in somebody's browser).
        let files = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/WebDisplay/Page")
        let script = files.appendingPathComponent("page.js").path
        for name in ["page.js", "page.css"] {
            let text = try String(contentsOf: files.appendingPathComponent(name), encoding: .utf8)
            XCTAssertTrue(page.body.contains(text), "the served page holds \(name)")
        }
        let check = try Executables.run("node", ["--check", script])
        XCTAssertEqual(check.status, 0, "node --check \(script): \(check.stderr)")
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
        XCTAssertNotNil(waitFor(timeout: 20) { reader.bytes > read1 }, "the reading client still receives updates")
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

    /// One address cannot lock another out: from 127.0.0.2, 64 oversized request heads (each
    /// answered 431 or 414 at once and closed), 200 slowloris connections (a request head that
    /// never ends: beyond the address's 16 places closed at once, the rest after the 10 s head
    /// deadline) and 12 WebSockets that keep reading (8 get in, the rest 503); meanwhile from
    /// 127.0.0.1 the page, a WebSocket and /metrics are each served at least 19 times in 20.
    /// `Upgrade: foo, websocket` from another origin is refused like `Upgrade: websocket`; a
    /// request the parser would refuse (no request line, a header without a colon) is answered
    /// 400 at once, a method other than GET and HEAD 405; `--http-limits` out of range is a
    /// usage error.
    func testOneAddressCannotLockAnotherOut() throws {
        let server = try JackServer(label: "weblock")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        let vu = try startJackVU(server, port: port)
        defer { vu.stop() }
        func status(_ fd: Int32) -> String {
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[0..<min(n, 12)], as: UTF8.self) : "closed"
        }
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        // Oversized heads: a 20 KB header and a 64 KB URL, 32 each.
        var answers: [String: Int] = [:]
        for i in 0..<64 {
            guard let fd = connectTCP(port: port, from: "127.0.0.2") else { answers["refused", default: 0] += 1; continue }
            let request = i % 2 == 0
                ? "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "x", count: 20_000))\r\n\r\n"
                : "GET /\(String(repeating: "a", count: 65_000)) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            sendAll(fd, request)
            answers[status(fd), default: 0] += 1
            close(fd)
        }
        print("64 oversized heads: \(answers)")
        XCTAssertEqual((answers["HTTP/1.1 431"] ?? 0) + (answers["HTTP/1.1 414"] ?? 0), 64, "\(answers)")
        XCTAssertEqual(answers["HTTP/1.1 414"], 32, "\(answers)")
        // Slowloris and WebSockets from the same address, held.
        for _ in 0..<200 {
            guard let fd = connectTCP(port: port, from: "127.0.0.2") else { continue }
            sendAll(fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Slow: ")
            held.append(fd)
        }
        let slow = held
        let started = Date()
        var sockets = 0
        // Only the first 16 slowloris hold places: the address's WebSockets must wait for the
        // head deadline to free them, so they are tried after it (below).
        func readers(_ count: Int, from source: String) -> [WebSocketReader] {
            (0..<count).compactMap { _ in WebSocketReader(port: port, from: source) }
        }
        // From another address, meanwhile: the page, a WebSocket, /metrics.
        var served = (page: 0, ws: 0, metrics: 0)
        for _ in 0..<20 {
            if httpGet(port: port, path: "/")?.status == 200 { served.page += 1 }
            if let fd = openWebSocket(port: port) { served.ws += 1; close(fd) }
            if httpGet(port: port, path: "/metrics")?.status == 200 { served.metrics += 1 }
        }
        print("under 64 oversized heads and 200 slowloris from 127.0.0.2: page \(served.page)/20, WebSocket \(served.ws)/20, /metrics \(served.metrics)/20")
        XCTAssertGreaterThanOrEqual(served.page, 19)
        XCTAssertGreaterThanOrEqual(served.ws, 19)
        XCTAssertGreaterThanOrEqual(served.metrics, 19)
        // The slowloris connections are all closed by the head deadline (10 s).
        func open() -> Int {
            slow.filter { fd in
                var byte: UInt8 = 0
                return Glibc.recv(fd, &byte, 1, dontWaitFlag) < 0 && errno == EAGAIN
            }.count
        }
        XCTAssertLessThanOrEqual(open(), 16, "beyond the address's share, closed at once")
        XCTAssertNotNil(waitFor(timeout: 30) { open() == 0 }, "the slowloris heads were not closed: \(open()) open")
        print("slowloris: every connection closed \(fixed(Date().timeIntervalSince(started), 1)) s after they started")
        // WebSockets that keep reading from one address: 8 get in; another address still does.
        let hogs = readers(12, from: "127.0.0.2")
        defer { hogs.forEach { $0.stop() } }
        sockets = hogs.count
        XCTAssertEqual(sockets, 8, "WebSockets from one address")
        let browser = WebSocketReader(port: port)
        XCTAssertNotNil(browser, "a browser elsewhere")
        browser?.stop()

        // The Upgrade token list, and what the parser would refuse.
        func raw(_ request: String) -> String {
            guard let fd = connectTCP(port: port) else { return "refused" }
            defer { close(fd) }
            sendAll(fd, request)
            return status(fd)
        }
        let evil = "Origin: http://evil.example\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let plain = raw("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" + evil)
        XCTAssertTrue(plain.hasPrefix("HTTP/1.1 4"), plain)
        XCTAssertEqual(raw("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: foo, websocket\r\nConnection: keep-alive, Upgrade\r\n" + evil), plain)
        XCTAssertEqual(raw("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: foo\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n" + evil), plain)
        XCTAssertEqual(raw("GARBAGE\r\n\r\n"), "HTTP/1.1 400")
        XCTAssertEqual(raw("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n"), "HTTP/1.1 400")
        // Methods other than GET and HEAD, at once: an unknown one and a body's length that
        // overflows (both waited 15 s for nothing before), and a plain POST.
        XCTAssertEqual(raw("BREW / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"), "HTTP/1.1 405")
        XCTAssertEqual(raw("POST /snapshot HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 99999999999999999999\r\n\r\n"), "HTTP/1.1 405")
        XCTAssertEqual(raw("POST /snapshot HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 2\r\n\r\n{}"), "HTTP/1.1 405")
        XCTAssertEqual(httpGet(port: port, path: "/snapshot")?.status, 200, "still serving")
        XCTAssertTrue(vu.isRunning, vu.stderr)
        let bad = try Executables.run(try Executables.product("jackvu"), ["--http-limits", "64,65", "--http", "0"])
        XCTAssertEqual(bad.status, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.hasPrefix("jackvu: --http-limits '64,65': expected"), bad.stderr)
    }

    /// The number of WebSocket clients /status counts (nil when it does not answer).
    private func clients(_ port: Int) -> Int? {
        guard let body = httpGet(port: port, path: "/status")?.body, let range = body.range(of: "\"clients\": ") else { return nil }
        return Int(body[range.upperBound...].prefix { $0.isNumber })
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

    /// Connects to jackvu's `/ws` on 127.0.0.1:`port` (from `source` when given; nil when
    /// refused) and starts reading.
    init?(port: Int, from source: String? = nil) {
        guard let socket = openWebSocket(port: port, from: source) else { return nil }
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
