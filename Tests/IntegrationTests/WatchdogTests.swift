#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Outputs
import TestSupport
import XCTest

/// The server watchdog on the real binary: a real jackd stopped (SIGSTOP) under a metering
/// jackvu, as a hung driver or a frozen machine would leave it — connected, no process cycles.
final class WatchdogTests: XCTestCase {
    /// jackd stopped for 3 s: within the documented time (no cycle for four periods, at least
    /// 0.5 s, plus an update) the text stream's status, `/snapshot`'s JSON, `/metrics`, the
    /// `server` alarm (value −1, not gone's 0) and the browser page all say the server is
    /// stalled, and stderr says so once; after SIGCONT all of them clear, and the log holds
    /// the stall and its end. Freewheeling beforehand (cycles as fast as the clients allow) is
    /// never taken for a stall. (The terminal's title is LayoutTests'.)
    func testAStoppedServerIsNoticedEverywhereAndClears() throws {
        let folder = NSTemporaryDirectory() + "jackvu-watchdog-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try JackServer(label: "watchdog")
        defer { server.stop() }
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "1", "--connect", "jacktone:out", "--http", "\(port)", "--text", "--rate", "10",
             "--send", "pitch,server,status,callback,alarms", "--alarm", "server", "--log", "\(folder)/log.db"],
            environment: server.environment)
        defer { vu.stop() }
        func last() -> OSCTextUpdate? { OSCText.updates(vu.stdout).last }
        // OSC's PREFIX/server s comes only while the server is stalled or gone.
        func stalledText() -> Bool { last()?.string("/jackvu/server", 0) == "stalled" }
        func snapshot() -> [String: Any]? {
            guard let r = httpGet(port: port, path: "/snapshot"), r.status == 200 else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(r.body.utf8))) as? [String: Any]
        }
        func jsonResponding() -> Bool? { (snapshot()?["status"] as? [String: Any])?["server_responding"] as? Bool }
        func metric(_ name: String) -> Double? {
            httpGet(port: port, path: "/metrics")?.body.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                .flatMap { Double($0.dropFirst(name.count + 1)) }
        }
        func jsonAlarms() -> [String]? { (snapshot()?["alarms"] as? [String: Any])?["list"] as? [String] }
        XCTAssertNotNil(wait(within: 20) { last()?.string("/jackvu/ch/1/pitch", 1) == "A4" && jsonResponding() == true }, vu.stderr)
        let browser = try HeadlessChromium(folder: folder)
        defer { browser.stop() }
        let page = try browser.open("http://127.0.0.1:\(port)/", width: 1280, height: 800)
        let live = "document.getElementById('live').textContent"
        func shown() -> String { ((try? page.evaluate(live)) as? String) ?? "?" }
        XCTAssertNotNil(try page.wait(timeout: 20, until: "\(live).startsWith('Input 1: A4')"), shown())

        // Freewheeling for 2 s is no stall.
        XCTAssertEqual(try Executables.run("jack_freewheel", ["y"], environment: server.environment).status, 0)
        usleep(2_000_000)
        XCTAssertEqual(try Executables.run("jack_freewheel", ["n"], environment: server.environment).status, 0)
        let seen = vu.stdout.count
        XCTAssertNotNil(wait(within: 20) { OSCText.updates(String(vu.stdout.dropFirst(seen))).count >= 3 })
        XCTAssertFalse(vu.stderr.contains("stalled"), vu.stderr)
        XCTAssertFalse(OSCText.updates(vu.stdout).contains { $0.messages["/jackvu/server"] != nil }, "a stall while freewheeling")
        XCTAssertEqual(metric("jackvu_server_responding"), 1)

        // jackd stopped for 3 s: everything says so before it runs again (the watchdog's 1.5 s
        // and an update).
        let stop = Date()
        server.suspend()
        let noticed = wait(within: 3) { stalledText() }
        var said = (json: false, metrics: false, alarm: false, page: false)
        while Date().timeIntervalSince(stop) < 2.9 && !(said.json && said.metrics && said.alarm && said.page) {
            if !said.json { said.json = jsonResponding() == false && (snapshot()?["server"] as? [String: Any])?["state"] as? String == "stalled" }
            if !said.metrics { said.metrics = metric("jackvu_server_responding") == 0 }
            if !said.alarm { said.alarm = jsonAlarms() == ["server jack"] }
            if !said.page { said.page = ((try? page.evaluate("\(live).startsWith('JACK server stalled: readings frozen.')")) as? Bool) == true }
            usleep(50_000)
        }
        usleep(UInt32(max(0, 3 - Date().timeIntervalSince(stop)) * 1e6))
        server.resume()
        print("watchdog: the stalled state in the text stream \(fixed(noticed ?? -1, 2)) s after SIGSTOP (documented: 1.5 s + an update)")
        XCTAssertNotNil(noticed, "no stall in the stream: \(String(describing: last())) \(vu.stderr)")
        XCTAssertTrue(said.json, "/snapshot's status.server_responding and server.state")
        XCTAssertTrue(said.metrics, "jackvu_server_responding 0")
        XCTAssertTrue(said.alarm, "the server alarm in /snapshot")
        XCTAssertTrue(said.page, "the page: \(shown())")
        XCTAssertTrue(vu.isRunning)

        // Cycles again: everything clears, and the page shows the tone again.
        XCTAssertNotNil(wait(within: 20) { !stalledText() && last()?.float("/jackvu/alarms", 0) == 0 }, "\(String(describing: last()))")
        XCTAssertEqual(jsonResponding(), true)
        XCTAssertEqual(metric("jackvu_server_responding"), 1)
        XCTAssertNotNil(try page.wait(timeout: 20, until: "\(live).startsWith('Input 1: A4')"), shown())
        let lines = vu.stderr.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("has run no process cycle for") && $0.contains("it is stalled") }.count, 1, vu.stderr)
        XCTAssertEqual(lines.filter { $0.contains("runs again after a stall of") }.count, 1, vu.stderr)
        XCTAssertEqual(vu.stop(), 0, vu.stderr)

        let events = try Executables.run("sqlite3", ["\(folder)/log.db", "SELECT kind FROM events WHERE kind LIKE 'server%' ORDER BY rowid"])
        XCTAssertEqual(events.stdout.split(separator: "\n").map(String.init), ["server_stalled", "server_responding"], events.stderr)
        let alarms = try Executables.run("sqlite3", ["\(folder)/log.db", "SELECT kind || ' ' || state || ' ' || value FROM alarms ORDER BY rowid"])
        XCTAssertEqual(alarms.stdout.split(separator: "\n").map(String.init), ["server raised -1.0", "server cleared 1.0"], alarms.stderr)
        XCTAssertEqual(page.messages.filter { $0.hasPrefix("exception") }, [], "uncaught exceptions")
    }

    /// jackvu's close is prompt and complete, and not taken for a stalled server. 256 channels
    /// stopped a second after their ports appear: the close ends well within its 3 s limit and
    /// jackd finishes it while jackvu runs — before, jackd blocked writing the closing client
    /// the removal of its ports' properties, every such stop took the whole 3 s and jackd
    /// wrote "Could not write notification" once jackvu had gone. Then a close that does take
    /// longer than the watchdog's 2.5 s (the server stopped with SIGSTOP just before the
    /// SIGTERM): no stall is said or logged (once, one at every long close), since jackvu
    /// does not watch while it closes its own client.
    func testJackvusOwnCloseIsNotAStalledServer() throws {
        let server = try JackServer(label: "closing", serverOptions: ["-p", "2048"])
        defer { server.stop() }
        let folder = NSTemporaryDirectory() + "jackvu-closing-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (channels, stopServer) in [(256, false), (2, true)] {
            let db = folder + "/log-\(channels).db"
            let vu = try BackgroundProcess(
                try Executables.product("jackvu"), ["--channels", "\(channels)", "--quiet", "--log", db], environment: server.environment)
            defer { vu.stop() }
            try waitForPortsListed(server, ["jackvu:in_\(channels)"], timeout: 30)
            usleep(1_000_000)
            let start = Date()
            // The server stopped first: the close's deactivation then waits for it.
            if stopServer { server.suspend() }
            kill(vu.process.processIdentifier, SIGTERM)
            let ended = vu.waitForExit(timeout: 20)
            let took = Date().timeIntervalSince(start)
            if stopServer { server.resume() }
            XCTAssertTrue(ended, vu.stderr)
            print("\(channels) channels closed in \(String(format: "%.2f", took)) s\(stopServer ? ", the server stopped" : "")")
            if stopServer {
                XCTAssertGreaterThan(took, 2.6, "the close was shorter than the watchdog's 2.5 s: the test shows nothing")
            } else {
                XCTAssertEqual(vu.process.terminationStatus, 0, vu.stderr)
                XCTAssertLessThan(took, 2.5, "the close waited for its 3 s limit")
                XCTAssertTrue(eventually(timeout: 5) { !((try? server.lsp().stdout.contains("jackvu:")) ?? true) }, "jackvu's ports left on the server")
                XCTAssertFalse(server.output.contains("Could not write notification"), "jackd could not finish the close: \(server.output.suffix(500))")
            }
            XCTAssertFalse(vu.stderr.contains("stalled"), vu.stderr)
            let stalls = try Executables.run("sqlite3", [db, "SELECT count(*) FROM events WHERE kind = 'server_stalled'"])
            XCTAssertEqual(stalls.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "0", "the log's server_stalled events")
        }
    }

    /// A server that runs but does not answer (stopped with SIGSTOP before jackvu starts;
    /// JACK's metadata database locked by a client killed inside a write does the same):
    /// libjack's open waits for it without a limit, and jackvu's signals are blocked. jackvu
    /// ends after the open's 10 s with the exit status for an unavailable server (69) and one
    /// line saying so — a SIGTERM sent while it waited included — and once the server runs
    /// again no client of jackvu's is left on it. (And a `jack_lsp` that waits alike is
    /// reported with where it waits, as the fixtures report a hung one.)
    func testAServerThatDoesNotAnswerEndsTheStartWithOneLine() throws {
        let server = try JackServer(label: "mute")
        defer { server.stop() }
        server.suspend()
        let start = Date()
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--channels", "2", "--quiet"], environment: server.environment)
        defer { vu.stop() }
        // Meanwhile a jack_lsp waits too; the fixtures' message for it says where (gdb's
        // stacks, taken before it is killed): in libjack, for the server's answer.
        XCTAssertThrowsError(try Executables.run("jack_lsp", [], environment: server.environment, timeout: 2)) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("did not finish in 2.0 s (waiting in "), message)
            XCTAssertTrue(message.contains("thread(s): ") && message.contains("libjack"), message)
        }
        // And waitForPortsListed, after its one jack_lsp (5 s) hung, says where jackd and
        // jackvu wait too.
        XCTAssertThrowsError(try waitForPortsListed(server, ["jackvu:in_1"], timeout: 4)) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("(1 jack_lsp hung; "), message)
            XCTAssertTrue(message.contains("jackd waiting in ") && message.contains("Jack::"), message)
            XCTAssertTrue(message.contains("the test's clients waiting: jackvu \(vu.process.processIdentifier) in "), message)
        }
        kill(vu.process.processIdentifier, SIGTERM)
        let ended = vu.waitForExit(timeout: 20)
        let took = Date().timeIntervalSince(start)
        server.resume()
        XCTAssertTrue(ended, "jackvu still runs \(took) s after its start: \(vu.stderr)")
        XCTAssertEqual(vu.process.terminationStatus, 69, vu.stderr)
        let lines = vu.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, vu.stderr)
        XCTAssertTrue(vu.stderr.contains("does not answer") && vu.stderr.contains("more than 10 s"), vu.stderr)
        XCTAssertGreaterThan(took, 9.5)
        XCTAssertFalse(try server.lsp().stdout.contains("jackvu"), "a client of jackvu's left on the server")
    }

    /// A server that stops answering after the open — jackd stopped at the first
    /// `jack_port_register` (the program under gdb, which stops jackd there and lets the
    /// program go on): the registration, which libjack waits for for ever, is given up after
    /// 10 s with one line and 69, as an open is (it held jackvu and jacktone for good, deaf to
    /// SIGTERM).
    func testAServerThatStopsAnsweringAfterTheOpenEndsTheStartWithOneLine() throws {
        for (program, arguments, port) in [("jackvu", ["--channels", "2", "--quiet"], "jackvu:in_1"), ("jacktone", ["--freq", "440"], "jacktone:out")] {
            let server = try JackServer(label: "stops")
            defer { server.stop() }
            let start = Date()
            let gdb = try BackgroundProcess(
                "/usr/bin/gdb",
                ["-q", "-batch", "--readnever", "-ex", "set breakpoint pending on", "-ex", "handle SIGTERM SIGINT SIGUSR1 SIGALRM nostop noprint pass",
                 "-ex", "break jack_port_register", "-ex", "run", "-ex", "shell kill -STOP \(server.pid)", "-ex", "delete", "-ex", "continue",
                 "-ex", "quit $_exitcode", "--args", try Executables.product(program)] + arguments,
                environment: server.environment)
            defer {
                // The program (gdb's child) first: gdb ended may leave it running.
                if let children = try? Executables.run("pgrep", ["-P", String(gdb.process.processIdentifier)]) {
                    for pid in children.stdout.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
                }
                gdb.stop()
            }
            let ended = gdb.waitForExit(timeout: 40)
            let took = Date().timeIntervalSince(start)
            server.resume()
            XCTAssertTrue(gdb.stdout.contains("Breakpoint 1,"), "\(program) never reached jack_port_register: \(gdb.stdout)")
            guard ended else { return XCTFail("\(program) still runs \(took) s after its start") }
            XCTAssertEqual(gdb.process.terminationStatus, 69, gdb.stdout + gdb.stderr)
            let lines = gdb.stderr.split(separator: "\n").filter { $0.hasPrefix("\(program):") }
            XCTAssertEqual(lines.count, 1, gdb.stderr)
            XCTAssertTrue(lines.first?.contains("does not answer: registering the port \(port) took more than 10 s") ?? false, gdb.stderr)
            XCTAssertGreaterThan(took, 9.5)
            XCTAssertNotNil(wait(within: 5) { !((try? server.lsp().stdout.contains(program)) ?? true) }, "a client of \(program)'s left on the server")
        }
    }

    /// Waits until `condition` holds; the seconds it took, or nil after `timeout`.
    private func wait(within timeout: Double, until condition: () -> Bool) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            if condition() { return Date().timeIntervalSince(start) }
            usleep(20_000)
        }
        return nil
    }
}
