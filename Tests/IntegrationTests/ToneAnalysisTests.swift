#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// jackvu against a real JACK server (jackd -d dummy, named for this test) with a real tone
/// generator (jacktone) connected through JACK.
final class ToneAnalysisTests: XCTestCase {
    func testA4At48000() throws { try checkTone(sampleRate: 48000) }
    func testA4At44100() throws { try checkTone(sampleRate: 44100) }

    /// `jacktone --freq 440 --level -12` → within 2 s jackvu names A4 within 1 Hz of 440 Hz,
    /// and the RMS is within 0.1 dB of −12 − 3.01 dBFS; the silent channel names no note.
    private func checkTone(sampleRate: Int) throws {
        let server = try JackServer(sampleRate: sampleRate, label: "tone")
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--channels", "2"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_1", "jackvu:meter_2"], process: vu)

        let started = Date()
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "440", "--level", "-12", "--connect", "jackvu:in_1"],
            environment: server.environment)
        defer { tone.stop() }
        let expectedRMS = -12 - 3.0103
        var found: OSCTextUpdate?
        // Waited for with a generous deadline: how soon is a figure for a quiet machine (it
        // is printed), not a claim a loaded CI machine can keep.
        _ = vu.waitForStdout(timeout: 30) { text in
            found = OSCText.updates(text).last { u in
                guard let hz = u.float("/jackvu/ch/1/pitch"), let rms = u.float("/jackvu/ch/1/rms") else { return false }
                return u.string("/jackvu/ch/1/pitch", 1) == "A4" && abs(hz - 440) < 1 && abs(rms - expectedRMS) < 0.1
            }
            return found != nil
        }
        let elapsed = Date().timeIntervalSince(started)
        let update = try XCTUnwrap(found, "no A4 at \(sampleRate) Hz within 30 s; jackvu printed:\n\(vu.stdout.suffix(3000))\n\(vu.stderr)\(tone.stderr)")
        print(String(format: "first A4 reading at %d Hz after %.2f s", sampleRate, elapsed))
        XCTAssertEqual(update.float("/jackvu/ch/1/peak") ?? 0, -12, accuracy: 0.1)
        XCTAssertEqual(update.float("/jackvu/ch/1/pitch", 2) ?? 99, 0, accuracy: 5, "cents")
        XCTAssertEqual(update.string("/jackvu/ch/2/pitch", 1), "-", "the unconnected input names no note")
        XCTAssertEqual(update.float("/jackvu/ch/2/rms"), -120)
        XCTAssertEqual(update.float("/jackvu/status"), Double(sampleRate), "status reports the server's rate")
        let bars = try XCTUnwrap(update.messages["/jackvu/ch/1/bars"]).compactMap(Double.init)
        XCTAssertEqual(bars.count, 48)
        XCTAssertTrue(bars.allSatisfy { (0...1).contains($0) })
        // Calibrated: the −12 dBFS sine reads −12 dB on its bar (−80…0 dB on 0…1), within the
        // Hann window's scalloping loss (1.42 dB) where 440 Hz falls between bins.
        let edges = (0...48).map { 60 * pow(18000.0 / 60, Double($0) / 48) }
        let bar = try XCTUnwrap(edges.lastIndex { $0 <= 440 })
        XCTAssertEqual(bars.max(), bars[bar])
        XCTAssertLessThanOrEqual(-80 + 80 * bars[bar], -12 + 0.05)
        XCTAssertGreaterThanOrEqual(-80 + 80 * bars[bar], -12 - 1.45)
    }

    /// The meter port exists with CV metadata, and the value it carries equals the printed
    /// display level: a second jackvu ("probe") reads meter_1 as audio, and its sample peak is
    /// that constant value in dBFS.
    func testMeterPortCarriesTheDisplayLevelWithCVMetadata() throws {
        let server = try JackServer(sampleRate: 48000, label: "meter")
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--channels", "1"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:meter_1"], process: vu)

        let property = try Executables.run("jack_property", ["-p", "-l", "jackvu:meter_1"], environment: server.environment)
        XCTAssertEqual(property.status, 0, property.stderr)
        XCTAssertTrue(
            property.stdout.contains("key: http://jackaudio.org/metadata/signal-type value: CV"), property.stdout)
        XCTAssertTrue(
            property.stdout.contains("key: http://jackaudio.org/metadata/pretty-name value: Meter 1 (RMS, 0..1 = -60..0 dBFS)"),
            property.stdout)
        XCTAssertTrue(property.stdout.contains("key: http://jackaudio.org/metadata/order value: 1"), property.stdout)
        let input = try Executables.run("jack_property", ["-p", "-l", "jackvu:in_1"], environment: server.environment)
        XCTAssertTrue(input.stdout.contains("signal-type value: AUDIO"), input.stdout)

        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "1000", "--level", "-20", "--connect", "jackvu:in_1"],
            environment: server.environment)
        defer { tone.stop() }
        let probe = try BackgroundProcess(
            try Executables.product("jackvu"), ["--name", "probe", "--channels", "1", "--connect", "jackvu:meter_1"],
            environment: server.environment, label: "probe")
        defer { probe.stop() }

        // Steady state: −20 dBFS peak → −23.01 dBFS RMS → level (−23.01 + 60) / 60 = 0.6165.
        let expectedLevel = (-23.0103 + 60) / 60
        var level: Double?
        var probePeak: Double?
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            level = OSCText.updates(vu.stdout).last?.float("/jackvu/ch/1/level")
            probePeak = OSCText.updates(probe.stdout).last?.float("/jackvu/ch/1/peak")
            if let l = level, let p = probePeak, abs(l - expectedLevel) < 0.005, abs(pow(10, p / 20) - l) < 0.002 {
                break
            }
            usleep(100_000)
        }
        let l = try XCTUnwrap(level, vu.stderr)
        let p = try XCTUnwrap(probePeak, probe.stderr)
        XCTAssertEqual(l, expectedLevel, accuracy: 0.005, "printed display level")
        XCTAssertEqual(pow(10, p / 20), l, accuracy: 0.002, "meter_1 carries the printed level")

        // When jackvu ends, its ports' properties go with its ports (JACK removes them).
        probe.stop()
        XCTAssertEqual(vu.stop(), 0, vu.stderr)
        let left = try Executables.run("jack_property", ["-l"], environment: server.environment)
        XCTAssertFalse(left.stdout.contains("signal-type value: CV"), "metadata left behind: \(left.stdout)")
    }

    /// The server's buffer size changes under a running jackvu (jack_bufsize): the analysis
    /// goes on at 1024 and at 128 frames, with no audio dropped.
    func testBufferSizeChanges() throws {
        let server = try JackServer(sampleRate: 48000, label: "bufsize")
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--channels", "1", "--rate", "10"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_1"], process: vu)
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "440", "--connect", "jackvu:in_1"], environment: server.environment)
        defer { tone.stop() }
        for frames in [1024, 128] {
            let r = try Executables.run("jack_bufsize", ["\(frames)"], environment: server.environment)
            XCTAssertEqual(r.status, 0, r.stderr + r.stdout)
            let before = OSCText.updates(vu.stdout).count
            let text = vu.waitForStdout(timeout: 20) { OSCText.updates($0).count > before + 10 }
            let last = try XCTUnwrap(text.flatMap { OSCText.updates($0).last }, "no updates at \(frames) frames: \(vu.stderr)")
            XCTAssertEqual(last.string("/jackvu/ch/1/pitch", 1), "A4", "at \(frames) frames")
            XCTAssertEqual(last.float("/jackvu/status", 2), 0, "no overruns at \(frames) frames")
        }
        XCTAssertTrue(vu.isRunning)
    }

    /// SIGTERM closes the client cleanly: exit status 0 and the ports are gone.
    func testSigtermClosesCleanly() throws {
        let server = try JackServer(sampleRate: 48000, label: "term")
        let vu = try BackgroundProcess(try Executables.product("jackvu"), [], environment: server.environment)
        try waitForPorts(server, ["jackvu:in_1"], process: vu)
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0)
        XCTAssertEqual(vu.stderr, "")
        XCTAssertFalse(try server.lsp().stdout.contains("jackvu:"))
    }
}

/// Waits until every port in `names` exists on `server` and jackvu runs (its first status
/// line, text or JSON, is out: JACK refuses connections to a client that is not active yet);
/// gives up early when `process` ends. `JackServer.waitForPorts` polls, and its error says
/// where a hung `jack_lsp` waited.
func waitForPorts(_ server: JackServer, _ names: [String], process: BackgroundProcess, timeout: Double = 10) throws {
    // jack_lsp may open while jackvu starts: its metadata is written after activation in
    // paced batches, so the burst that stalled jack2's server for an opening client is gone
    // (HardeningTests.testOtherClientsOpenFreelyDuringStartAndReconnect).
    let statusOut = { process.stdout.contains("/status ") || process.stdout.contains("\"status\": {") }
    do {
        try server.waitForPorts(names, timeout: timeout, ready: statusOut, alive: { process.isRunning })
    } catch {
        let status = statusOut() ? "its status line is out" : "no status line on its stdout"
        throw FixtureError("\(error); \(status); \(process.label) said: \(process.stderr)")
    }
}
