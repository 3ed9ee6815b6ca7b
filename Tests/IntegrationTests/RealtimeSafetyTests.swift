#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// Real-time safety, tested while real clients run: jackvu and jacktone built with
/// RealtimeSanitizer (`-fsanitize=realtime`, see Tools/test.sh) mark their process callbacks as
/// real-time contexts, so any allocation, lock or blocking call in them aborts the client with
/// a report. The binaries come from `$JACKVU_RTSAN_BIN_DIR`, else `.build-rtsan/debug`.
final class RealtimeSafetyTests: XCTestCase {
    private func sanitizedProduct(_ name: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let dir = ProcessInfo.processInfo.environment["JACKVU_RTSAN_BIN_DIR"] ?? root.path + "/.build-rtsan/debug"
        let path = dir + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            let message = "no RealtimeSanitizer build of \(name) in \(dir): Tools/test.sh builds it"
            throw skipOrFail(message)
        }
        return path
    }

    /// Over 10,000 process cycles with a tone flowing, neither client's callback allocates or
    /// locks: both are still running and RTSan reported nothing. jackvu runs with every output
    /// on: the `osc` and `notes` MIDI ports (filled by the callback), OSC over UDP, and with
    /// `--follow-transport` (the callback reads the transport every cycle, and writes it into
    /// the ring) and programmes, every alarm (their CV ports, filled by the callback) and the
    /// log; and through a 30 ms stall of the source halfway (the cycles jackvu then misses are
    /// marked by its callback).
    func testProcessCallbacksNeverAllocateOrLock() throws {
        let jackvu = try sanitizedProduct("jackvu")
        let jacktone = try sanitizedProduct("jacktone")
        // 64-frame periods at 48 kHz: 750 cycles a second.
        let server = try JackServer(sampleRate: 48000, period: 64, label: "rtsan")
        let log = NSTemporaryDirectory() + "jackvu-rtsan-\(getpid())-\(UUID().uuidString.prefix(6)).db"
        defer { for suffix in ["", "-wal", "-shm"] { unlink(log + suffix) } }
        let vu = try BackgroundProcess(
            jackvu, ["--channels", "8", "--rate", "10", "--midi-notes", "--osc", "udp://127.0.0.1:\(freeUDPPort())",
                     "--follow-transport", "--programme", "main=1-6:5.1", "--programme", "stereo=7-8", "--alarm", "all", "--log", log],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_8"], process: vu)
        let tone = try BackgroundProcess(
            jacktone, ["--freq", "440", "--freq", "660", "--connect", "jackvu:in_[1-8]"], environment: server.environment)
        defer { tone.stop() }

        var cycles = 0.0, stalled = false
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, vu.isRunning, tone.isRunning {
            cycles = OSCText.updates(vu.stdout).last.flatMap { $0.float("/jackvu/status", 4) } ?? 0
            if cycles >= 10_000 { break }
            if cycles >= 5_000 && !stalled {
                // Halfway, the source stopped for 30 ms (about 22 cycles): the server counts
                // an xrun, and jackvu's callback, fed by it, misses those cycles and marks the
                // join in its ring (CaptureBuffers.joins) — that path checked as well.
                stalled = true
                kill(tone.process.processIdentifier, SIGSTOP)
                usleep(30_000)
                kill(tone.process.processIdentifier, SIGCONT)
            }
            usleep(200_000)
        }
        XCTAssertFalse(vu.stderr.contains("RealtimeSanitizer"), vu.stderr)
        XCTAssertFalse(tone.stderr.contains("RealtimeSanitizer"), tone.stderr)
        XCTAssertTrue(vu.isRunning, "jackvu died: \(vu.stderr)")
        XCTAssertTrue(tone.isRunning, "jacktone died: \(tone.stderr)")
        XCTAssertGreaterThanOrEqual(cycles, 10_000, "process cycles checked")
        let last = try XCTUnwrap(OSCText.updates(vu.stdout).last)
        XCTAssertEqual(last.string("/jackvu/ch/8/peakfreq", 1).map { ["A4", "E5"].contains($0) }, true, "audio flowed")
        XCTAssertTrue(stalled)
        XCTAssertGreaterThan(last.float("/jackvu/status", 1) ?? 0, 0, "the stall was an xrun")
        XCTAssertTrue(try server.lsp().stdout.contains("jackvu:alarm_main"), "the alarm ports")
        XCTAssertEqual(tone.stop(signal: SIGTERM), 0, tone.stderr)
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
    }

    /// The same with 64 channels (the callback copies 64 inputs and fills 64 meter ports each
    /// cycle) and two worker threads: 10,000 cycles at 64 frames, no report, audio on the
    /// last input.
    func testSixtyFourChannelsNeverAllocateOrLock() throws {
        let jackvu = try sanitizedProduct("jackvu")
        let server = try JackServer(sampleRate: 48000, period: 64, label: "rtsan64")
        let vu = try BackgroundProcess(
            jackvu, ["--channels", "64", "--workers", "2", "--rate", "5", "--send", "peak,rms,status,callback"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_64", "jackvu:meter_64"], process: vu, timeout: 30)
        let tone = try BackgroundProcess(
            try sanitizedProduct("jacktone"), ["--freq", "1000", "--level", "-12", "--connect", "jackvu:in_.*"], environment: server.environment)
        defer { tone.stop() }
        var cycles = 0.0
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline, vu.isRunning {
            cycles = OSCText.updates(vu.stdout).last.flatMap { $0.float("/jackvu/status", 4) } ?? 0
            if cycles >= 10_000 { break }
            usleep(200_000)
        }
        XCTAssertFalse(vu.stderr.contains("RealtimeSanitizer"), vu.stderr)
        XCTAssertTrue(vu.isRunning, "jackvu died: \(vu.stderr)")
        XCTAssertGreaterThanOrEqual(cycles, 10_000, "process cycles checked")
        let last = try XCTUnwrap(OSCText.updates(vu.stdout).last)
        XCTAssertEqual(last.float("/jackvu/ch/64/rms") ?? 0, -15.01, accuracy: 0.2, "audio on input 64")
        XCTAssertEqual(last.float("/jackvu/status", 2), 0, "no overruns")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
    }

    /// The engine changes under a running sanitized jackvu: the buffer size goes 256 → 1024
    /// → 64 frames (jack_bufsize), then the server is killed and started again, and jackvu
    /// reconnects. Throughout, no report from the callback, and the note and level are right
    /// after each change.
    func testCallbackStaysCleanThroughBufferSizeChangesAndAReconnect() throws {
        let jackvu = try sanitizedProduct("jackvu")
        var server = try JackServer(sampleRate: 48000, period: 256, label: "rtsan-changes", name: "rtsan-changes")
        var tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "440", "--level", "-12"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let vu = try BackgroundProcess(
            jackvu, ["--channels", "2", "--connect", "jacktone:out", "--rate", "10", "--send", "pitch,rms,status,callback"],
            environment: server.environment)
        defer { vu.stop() }
        func right() -> Bool {
            guard let last = OSCText.updates(vu.stdout).last else { return false }
            return last.string("/jackvu/ch/1/pitch", 1) == "A4" && abs((last.float("/jackvu/ch/1/rms") ?? 0) - -15.01) < 0.1
                && vu.stdout.hasSuffix("\n")
        }
        let wait = { (what: String) in
            let deadline = Date().addingTimeInterval(15)
            while Date() < deadline && vu.isRunning && !right() { usleep(100_000) }
            XCTAssertTrue(right(), "\(what): \(OSCText.updates(vu.stdout).last.map { "\($0.messages)" } ?? "") \(vu.stderr)")
        }
        wait("at 256 frames")
        for frames in [1024, 64] {
            XCTAssertEqual(try Executables.run("jack_bufsize", ["\(frames)"], environment: server.environment).status, 0)
            usleep(1_500_000)
            wait("at \(frames) frames")
        }
        server.kill()
        tone.stop()
        server = try JackServer(sampleRate: 48000, period: 64, label: "rtsan-changes", name: "rtsan-changes")
        tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "440", "--level", "-12"], environment: server.environment)
        usleep(1_500_000)
        wait("after the reconnect")
        XCTAssertTrue(vu.stderr.contains("connected to the JACK server again"), vu.stderr)
        XCTAssertFalse(vu.stderr.contains("RealtimeSanitizer"), vu.stderr)
        XCTAssertTrue(vu.isRunning, "jackvu died: \(vu.stderr)")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
    }

    /// strace follows every thread of jackvu while a tone flows: after start-up, JACK's
    /// process thread makes no system call but libjack's own per-cycle graph synchronisation
    /// (a futex wait or wake on the server's shared memory, FUTEX_WAIT / FUTEX_WAKE): the
    /// callback itself makes none. (It used to wake the worker, a private futex wake, once
    /// per hop.)
    func testTheProcessThreadMakesNoSystemCallOfItsOwn() throws {
        let strace = try Executables.resolve("strace")
        let jackvu = try Executables.product("jackvu")
        let server = try JackServer(label: "strace")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let trace = NSTemporaryDirectory() + "jackvu-strace-\(getpid()).txt"
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let arguments = ["--name", "traced", "--channels", "2", "--connect", "jacktone:out", "--rate", "10", "--send", "pitch,status,callback",
                         "--follow-transport"]
        let traced = try BackgroundProcess(strace, ["-f", "-qq", "-o", trace, jackvu] + arguments, environment: server.environment)
        defer { traced.stop() }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && traced.isRunning && OSCText.updates(traced.stdout).last?.string("/jackvu/ch/1/pitch", 1) != "A4" {
            usleep(100_000)
        }
        XCTAssertEqual(OSCText.updates(traced.stdout).last?.string("/jackvu/ch/1/pitch", 1), "A4", traced.stderr)
        usleep(3_000_000)
        _ = try Executables.run("pkill", ["-TERM", "-f", "^\(jackvu) --name traced "])
        XCTAssertTrue(traced.waitForExit(timeout: 20), "strace did not end")

        // Each thread's system calls, in order (a call strace splits in two is counted once).
        var calls: [String: [String]] = [:]
        let text = try String(contentsOfFile: trace, encoding: .utf8)
        for line in text.split(separator: "\n") where !line.contains("<...") {
            // "TID  name(arguments) = result"; strace pads short thread ids with spaces.
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let call = parts[1].drop(while: { $0 == " " })
            guard let paren = call.firstIndex(of: "(") else { continue }
            calls[String(parts[0]), default: []].append(String(call[..<paren]) + (call.hasPrefix("futex(") ? " " + futexOperation(call) : ""))
        }
        // JACK's process thread: the one that waits on the graph every cycle.
        let (thread, all) = try XCTUnwrap(calls.max { a, b in
            a.value.filter { $0 == "futex FUTEX_WAIT" }.count < b.value.filter { $0 == "futex FUTEX_WAIT" }.count
        })
        // Leave out its start-up and its end.
        let steady = Array(all.dropFirst(40).dropLast(40))
        XCTAssertGreaterThan(steady.count, 200, "too few calls traced on thread \(thread)")
        let own = steady.filter { $0 != "futex FUTEX_WAIT" && $0 != "futex FUTEX_WAKE" }
        print("process thread \(thread): \(steady.count) system calls in the steady state, \(Set(steady)); not libjack's: \(own.count)")
        XCTAssertEqual(own.count, 0, "system calls of the callback: \(Dictionary(own.map { ($0, 1) }, uniquingKeysWith: +))")
    }

    /// The futex operation in an strace line, e.g. `FUTEX_WAIT` or `FUTEX_WAKE_PRIVATE`.
    private func futexOperation(_ line: Substring) -> String {
        guard let start = line.range(of: ", FUTEX_") else { return "" }
        let rest = line[line.index(after: start.lowerBound)...].drop(while: { $0 == " " })
        return String(rest.prefix { $0 != "," && $0 != ")" })
    }

    /// The same with both displays on: the terminal display in a real terminal (tmux) and the
    /// browser display with a WebSocket client reading every update. Neither changes the
    /// callback's record: 10,000 cycles, no report, and `q` ends jackvu with status 0.
    func testProcessCallbackStaysCleanWithBothDisplays() throws {
        let jackvu = try sanitizedProduct("jackvu")
        let server = try JackServer(sampleRate: 48000, period: 64, label: "rtsan")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let port = freeTCPPort()
        let session = try TmuxSession(width: 100, height: 30) { f in
            "env JACK_DEFAULT_SERVER=\(server.name) TERM=xterm-256color LANG=C.UTF-8 \(jackvu) --tui --http \(port) "
                + "--channels 8 --connect jacktone:out 2> \(f)/stderr; echo $? > \(f)/exit; sleep 120"
        }
        defer { session.close() }
        var socket: Int32?
        let connectDeadline = Date().addingTimeInterval(20)
        while socket == nil && Date() < connectDeadline {
            socket = openWebSocket(port: port)
            if socket == nil { usleep(200_000) }
        }
        let ws = try XCTUnwrap(socket, "the browser display did not come up: \(session.capture())")
        defer { close(ws) }
        let reading = Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while recv(ws, &buffer, buffer.count, 0) > 0 {}
        }
        reading.start()

        var cycles = 0
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let body = httpGet(port: port, path: "/snapshot")?.body,
                let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                let status = object["status"] as? [String: Any]
            {
                cycles = status["cycles"] as? Int ?? 0
            }
            if cycles >= 10_000 { break }
            usleep(200_000)
        }
        XCTAssertGreaterThanOrEqual(cycles, 10_000, "process cycles checked")
        XCTAssertTrue(session.capture().contains("A4"), "the terminal display shows the note: \(session.capture())")
        try session.tmux(["send-keys", "-t", "jv", "q"])
        XCTAssertEqual(session.waitForFile("exit", timeout: 15)?.trimmingCharacters(in: .whitespacesAndNewlines), "0")
        let stderr = (try? String(contentsOfFile: session.folder + "/stderr", encoding: .utf8)) ?? ""
        XCTAssertFalse(stderr.contains("RealtimeSanitizer"), stderr)
    }

    /// The check is live in these binaries: with the hidden `--rt-canary` the callback
    /// allocates, and RTSan must stop jackvu with a report naming malloc.
    func testAnAllocatingCallbackIsCaught() throws {
        let jackvu = try sanitizedProduct("jackvu")
        let server = try JackServer(sampleRate: 48000, period: 64, label: "canary")
        let vu = try BackgroundProcess(jackvu, ["--rt-canary"], environment: server.environment)
        defer { vu.stop() }
        XCTAssertTrue(vu.waitForExit(timeout: 20), "RTSan did not stop an allocating callback")
        XCTAssertNotEqual(vu.exitStatus ?? 0, 0)
        XCTAssertTrue(vu.stderr.contains("RealtimeSanitizer"), vu.stderr)
        XCTAssertTrue(vu.stderr.contains("malloc"), vu.stderr)
        XCTAssertTrue(vu.stderr.contains("CaptureProcessor"), vu.stderr)
    }
}
