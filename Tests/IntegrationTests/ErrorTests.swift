#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// Every user-facing failure: one clear line on stderr and the documented exit code; nothing
/// hangs (each run has a time limit) and nothing crashes.
final class ErrorTests: XCTestCase {
    private func jackvu(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        try Executables.run(try Executables.product("jackvu"), arguments, environment: environment, timeout: 20)
    }

    private func assertOneLine(_ r: CommandResult, status: Int32, contains text: String,
                               file: StaticString = #filePath, line: UInt = #line)
    {
        XCTAssertEqual(r.status, status, r.stderr, file: file, line: line)
        let lines = r.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, "stderr: \(r.stderr)", file: file, line: line)
        XCTAssertTrue(r.stderr.hasPrefix("jackvu: "), r.stderr, file: file, line: line)
        XCTAssertTrue(r.stderr.contains(text), "expected '\(text)' in: \(r.stderr)", file: file, line: line)
    }

    func testNoServer() throws {
        let r = try jackvu(["--server", "jackvu-test-no-such-server-\(getpid())"])
        assertOneLine(r, status: 69, contains: "cannot connect to JACK server 'jackvu-test-no-such-server")
        let viaEnv = try jackvu([], environment: ["JACK_DEFAULT_SERVER": "jackvu-test-absent-\(getpid())"])
        assertOneLine(viaEnv, status: 69, contains: "jackvu-test-absent-")
    }

    /// jacktone's bad options and values are one line each and 64, as jackvu's
    /// (argument-parser's own message spanned the error, the usage and a hint); a client name
    /// JACK would take apart (a ':') or refuse (over 63 bytes) is one of them.
    func testJacktoneBadOptionValuesAreOneLine() throws {
        let tone = try Executables.product("jacktone")
        for (arguments, text) in [(["--freq", "-5"], "--freq -5.0 is not a frequency above 0 Hz"), (["--name", "a:b"], "--name must be 1 to 63 bytes"),
                                  (["--name", String(repeating: "a", count: 64)], "--name must be 1 to 63 bytes"), (["--bogus"], "Unknown option '--bogus'"),
                                  (["--bits", "3"], "--bits must be from 8 to 24"), (["--level", "1"], "--level must be from -200 to 0 dBFS")] {
            let r = try Executables.run(tone, arguments)
            XCTAssertEqual(r.status, 64, "\(arguments): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            XCTAssertTrue(r.stderr.hasPrefix("jacktone: ") && r.stderr.contains(text), "expected '\(text)' in: \(r.stderr)")
        }
    }

    func testBadOptionValues() throws {
        assertOneLine(try jackvu(["--fft-size", "1000"]), status: 64, contains: "--fft-size")
        assertOneLine(try jackvu(["--fft-size", "131072"]), status: 64, contains: "power of two from 256 to 65536")
        assertOneLine(try jackvu(["--fft-size", "lots"]), status: 64, contains: "fft-size")
        assertOneLine(try jackvu(["--bogus"]), status: 64, contains: "Unknown option '--bogus'")
        assertOneLine(try jackvu(["--channels", "0"]), status: 64, contains: "--channels")
        assertOneLine(try jackvu(["--overlap", "75"]), status: 64, contains: "--overlap")
        assertOneLine(try jackvu(["--prefix", "no-slash"]), status: 64, contains: "--prefix")
        assertOneLine(try jackvu(["--rate", "0"]), status: 64, contains: "--rate")
        assertOneLine(try jackvu(["--rate", "1e-12"]), status: 64, contains: "--rate must be from 0.01 to 1000")
        assertOneLine(try jackvu(["--meter-floor", "5"]), status: 64, contains: "--meter-floor")
        // A choice gets its choices on the same line.
        assertOneLine(try jackvu(["--meter", "loud"]), status: 64, contains: "one of the following: rms, peak, truepeak, vu, ppm, k, momentary, shortterm")
        assertOneLine(try jackvu(["--tui", "--text"]), status: 64, contains: "--tui and --text exclude each other")
        assertOneLine(try jackvu(["--quiet", "--format", "json"]), status: 64, contains: "--quiet excludes --tui, --text and --format")
        // Alarms, the log, reports.
        assertOneLine(try jackvu(["--alarm", "noise"]), status: 64, contains: "unknown alarm 'noise'")
        assertOneLine(try jackvu(["--alarm", "silence:depth=3"]), status: 64, contains: "unknown setting 'depth'")
        assertOneLine(try jackvu(["--alarm", "silence:raise=-1"]), status: 64, contains: "raise must be 0 to 86400 seconds")
        assertOneLine(try jackvu(["--on-alarm", "true"]), status: 64, contains: "--on-alarm needs --alarm")
        assertOneLine(try jackvu(["--alarm", "all", "--on-alarm", "true", "--on-alarm-timeout", "0"]), status: 64, contains: "--on-alarm-timeout")
        assertOneLine(try jackvu(["--log-retention", "7"]), status: 64, contains: "--log-retention needs --log")
        assertOneLine(try jackvu(["report", "/nonexistent/jackvu.db"]), status: 66, contains: "cannot read '/nonexistent/jackvu.db'")
        assertOneLine(try jackvu(["report", "/nonexistent/jackvu.db"]), status: 66, contains: "No such file or directory")
        assertOneLine(try jackvu(["report", "/"]), status: 66, contains: "cannot read '/': it is a folder (a log is a file)")
        assertOneLine(try jackvu(["report", "/dev/null", "--from", "yesterday"]), status: 66, contains: "cannot read '/dev/null'")
        assertOneLine(try jackvu(["report", "x.db", "--segments", "hourly"]), status: 64, contains: "--segments must be marks or every:MINUTES")
        assertOneLine(try jackvu(["report", "x.db", "-o", "report.pdf"]), status: 64, contains: "name it .html, .json or .csv")
    }

    /// No numeric option value traps: NaN, ±∞, ±1e300 and an integer too large for Int on every
    /// numeric option end in one line and status 64 (or, when the value is valid, the missing
    /// server's 69); through `jackvu analyze --stream` the analysis options end in 64 or a
    /// normal run.
    func testNoNumericOptionValueTraps() throws {
        let wav = NSTemporaryDirectory() + "jackvu-options-\(getpid()).wav"
        try writeWAV(wav, [[Float](repeating: 0.1, count: 4800)])
        defer { unlink(wav) }
        let live = ["rate", "subscribe-timeout", "channels", "workers"]
        let analysis = ["fft-size", "overlap", "bars", "bars-from", "bars-to", "meter-floor", "fall", "hold",
                        "vu-reference", "ppm-alignment", "k-scale", "pitch-confidence"]
        for option in live + analysis {
            for value in ["nan", "inf", "-inf", "1e300", "-1e300", "99999999999999999999"] {
                let r = try jackvu(["--server", "jackvu-test-absent-\(getpid())", "--\(option)=\(value)"])
                XCTAssertTrue([64, 69].contains(r.status), "--\(option)=\(value): status \(r.status) \(r.stderr)")
                XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "--\(option)=\(value): \(r.stderr)")
                guard analysis.contains(option) else { continue }
                let a = try jackvu(["analyze", "--stream", "--\(option)=\(value)", wav])
                XCTAssertTrue([0, 64].contains(a.status), "analyze --\(option)=\(value): status \(a.status) \(a.stderr)")
            }
        }
    }

    func testHelpGoesToStdout() throws {
        let r = try jackvu(["--help"])
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.stdout.contains("USAGE: jackvu"))
        XCTAssertTrue(r.stdout.contains("Exit codes"))
        XCTAssertEqual(r.stderr, "")
    }

    func testServerErrorsAndClosedStdout() throws {
        let server = try JackServer(sampleRate: 48000, label: "errors")
        let env = server.environment

        // A pattern that matches nothing: an error with --connect-once; otherwise one line,
        // and jackvu waits for such ports. An invalid regex.
        assertOneLine(try jackvu(["--connect-once", "--connect", "nothing:here"], environment: env), status: 66, contains: "nothing:here")
        let waiting = try BackgroundProcess(
            try Executables.product("jackvu"), ["--name", "waiting", "--connect", "nothing:here"], environment: env, label: "waiting")
        defer { waiting.stop() }
        try waitForPorts(server, ["waiting:in_1"], process: waiting)
        XCTAssertEqual(waiting.stop(), 0)
        XCTAssertEqual(waiting.stderr, "jackvu: --connect 'nothing:here' matches no output port yet; its ports are connected when they appear\n")
        assertOneLine(try jackvu(["--connect", "system:capture_(1"], environment: env), status: 64, contains: "regular expression")

        // A name already in use.
        let first = try BackgroundProcess(try Executables.product("jackvu"), [], environment: env)
        defer { first.stop() }
        try waitForPorts(server, ["jackvu:in_1"], process: first)
        assertOneLine(try jackvu([], environment: env), status: 75, contains: "already running")
        // SIGINT closes the client cleanly: status 0, and its ports are gone.
        XCTAssertEqual(first.stop(signal: SIGINT), 0, first.stderr)
        XCTAssertFalse(try server.lsp().stdout.contains("jackvu:in_1"))

        // A regex matching two capture ports fills both inputs, in order.
        let both = try BackgroundProcess(
            try Executables.product("jackvu"), ["--name", "both", "--connect", "system:capture_[12]"],
            environment: env, label: "both")
        defer { both.stop() }
        try waitForPorts(server, ["both:in_2"], process: both)
        let connections = try server.lsp(["-c"]).stdout
        XCTAssertTrue(connections.contains("both:in_1\n   system:capture_1"), connections)
        XCTAssertTrue(connections.contains("both:in_2\n   system:capture_2"), connections)

        // stdout closed under it (`jackvu | head -n 1`): it ends quietly, status 0, like other
        // Unix filters, and closes its client.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try Executables.product("jackvu"))
        p.arguments = ["--name", "closed"]
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        let out = Pipe()
        let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("jackvu-closed-\(getpid()).err")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errURL) }
        p.standardOutput = out
        p.standardError = try FileHandle(forWritingTo: errURL)
        p.standardInput = FileHandle.nullDevice
        try p.run()
        try out.fileHandleForReading.close()
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        let stderr = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        XCTAssertEqual(p.terminationStatus, 0)
        XCTAssertEqual(stderr, "")
        XCTAssertFalse(try server.lsp().stdout.contains("closed:"))
    }

    /// With --no-reconnect, a server that shuts down ends jackvu: one line, status 69.
    func testServerShutdownIsReported() throws {
        let server = try JackServer(sampleRate: 48000, label: "shutdown")
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--no-reconnect"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_1"], process: vu)
        server.stop()
        XCTAssertTrue(vu.waitForExit(timeout: 20), "jackvu did not exit after the server went away")
        XCTAssertEqual(vu.exitStatus, 69)
        XCTAssertTrue(vu.stderr.hasPrefix("jackvu: the JACK server shut down"), vu.stderr)
        XCTAssertEqual(vu.stderr.split(separator: "\n").count, 1, vu.stderr)
    }
}

/// A reader that does not keep up must not stall the worker or the audio thread.
final class SlowReaderTests: XCTestCase {
    /// jackvu's stdout goes to a pipe nobody reads for 4 s (the pipe fills within a second):
    /// meanwhile the worker must keep draining the ring (no overruns), and the output thread
    /// counts the updates it could not write. Then the reader catches up and the stream goes on.
    func testAStalledStdoutLosesOutputNotAudio() throws {
        let server = try JackServer(sampleRate: 48000, label: "slow")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try Executables.product("jackvu"))
        p.arguments = ["--rate", "50"]
        p.environment = ProcessInfo.processInfo.environment.merging(server.environment) { $1 }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        defer {
            kill(p.processIdentifier, SIGTERM)
            p.waitUntilExit()
        }
        // (jackvu's stdout is the pipe here, so wait for its port through jack_lsp; jacktone
        // retries the connection while jackvu finishes activating.)
        let portDeadline = Date().addingTimeInterval(10)
        while Date() < portDeadline, !((try? server.lsp().stdout) ?? "").contains("jackvu:in_1") { usleep(50_000) }
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "440", "--connect", "jackvu:in_1"], environment: server.environment)
        defer { tone.stop() }
        sleep(4)  // nobody reads: the pipe is full and the output thread blocks in write(2)
        // Catch up: read past what the pipe held (the oldest updates) until the updates are
        // from after the stall (the output thread unblocks and carries on).
        var text = ""
        let handle = out.fileHandleForReading
        let deadline = Date().addingTimeInterval(6)
        let cyclesAfterStall = 4 * 48000 / 256
        while Date() < deadline {
            text += String(decoding: handle.availableData, as: UTF8.self)
            if let cycles = OSCText.updates(text).last?.float("/jackvu/status", 4), Int(cycles) > cyclesAfterStall { break }
        }
        // A few more updates: the skipped count reaches the stream with the next snapshot.
        let more = OSCText.updates(text).count + 10
        while Date() < deadline + 2 && OSCText.updates(text).count < more {
            text += String(decoding: handle.availableData, as: UTF8.self)
        }
        let last = try XCTUnwrap(OSCText.updates(text).last, text.suffix(500).description)
        let status = try XCTUnwrap(last.messages["/jackvu/status"])
        XCTAssertEqual(status.count, 12)
        XCTAssertEqual(Int(status[2]), 0, "no audio was dropped while stdout was stalled")
        XCTAssertGreaterThan(Int(status[3]) ?? 0, 10, "updates skipped while stdout was stalled")
        XCTAssertGreaterThan(Int(status[4]) ?? 0, 4 * 48000 / 256, "the process callback kept running")
        XCTAssertEqual(last.string("/jackvu/ch/1/pitch", 1), "A4", "the analysis is current \(tone.stderr)")
    }
}
