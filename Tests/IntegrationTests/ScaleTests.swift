import Foundation
import TestSupport
import XCTest

/// Many channels: 256 inputs on a real-time dummy server, spread over the worker threads; and
/// a clear error where the server's port limit is lower. How many channels a core carries
/// with every meter on is a capacity figure, measured in BENCHMARKS.md (`bash Tools/bench.sh
/// capacity`), not asserted here: on a loaded shared machine (the suite passes with both
/// cores kept busy) the workers' share of the CPU is not this test's to promise.
final class ScaleTests: XCTestCase {
    /// The last /status of a text stream: (xruns, overruns, cycles).
    fileprivate func status(_ text: String) -> (xruns: Int, overruns: Int, cycles: Int)? {
        guard let line = completeLines(text).last(where: { $0.hasPrefix("/jackvu/status ") }) else { return nil }
        let v = line.split(separator: " ").dropFirst(2).compactMap { Int($0) }
        return v.count >= 5 ? (v[1], v[2], v[4]) : nil
    }

    func test256ChannelsOnARealtimeServerWithoutOverrunsOrXruns() throws {
        let server = try JackServer(label: "ch256", realtime: true)
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440", "--freq", "3000"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let seconds: UInt32 = 10

        // The server alone (with the tone and a one-channel observer that only reports status).
        func serverAlone() throws -> Int {
            let baseline = try BackgroundProcess(
                try Executables.product("jackvu"), ["--name", "observer", "--channels", "1", "--text", "--send", "status", "--rate", "1"],
                environment: server.environment, label: "observer")
            defer { baseline.stop() }
            _ = baseline.waitForStdout(timeout: 20) { self.status($0) != nil }
            let before = try XCTUnwrap(status(baseline.stdout), baseline.stderr)
            sleep(seconds)
            return try XCTUnwrap(status(baseline.stdout)).xruns - before.xruns
        }
        var alone = try serverAlone()

        // 256 channels, the tone on every input; the level and the spectrum's peak (an FFT per
        // channel: `jackvu-bench meters` puts it near 0.5 ms of CPU per second per channel,
        // about 12 % of a core for 256, where every meter, 4.1 ms, needs about a whole core).
        var args = ["--channels", "256", "--text", "--rate", "1", "--send", "rms,peakfreq,status,callback"]
        for _ in 0..<256 { args += ["--connect", "jacktone:out"] }
        let vu = try BackgroundProcess(try Executables.product("jackvu"), args, environment: server.environment)
        defer { vu.stop() }
        _ = vu.waitForStdout(timeout: 60) { text in self.status(text).map { $0.cycles > 0 } ?? false }
        let start = try XCTUnwrap(status(vu.stdout), "no status from 256 channels: \(vu.stderr)")
        sleep(seconds)
        // The status comes once a second: the one after the sleep, so that the stretch measured
        // is the whole of it (the last one printed may be up to a second old: 1687 cycles of
        // 1875 were counted so once, just under the 90 % asked for).
        let printed = OSCText.updates(vu.stdout).count
        _ = vu.waitForStdout(timeout: 5) { OSCText.updates($0).count > printed }
        let end = try XCTUnwrap(status(vu.stdout))
        let updates = OSCText.updates(vu.stdout)
        let last = try XCTUnwrap(updates.last)
        XCTAssertEqual(last.float("/jackvu/ch/256/rms") ?? 0, -18, accuracy: 0.2, "channel 256 measures the two-tone chord (each -18 dBFS peak): \(last.messages["/jackvu/ch/256/rms"] ?? [])")
        XCTAssertEqual(last.string("/jackvu/ch/256/peakfreq", 1).map { ["A4", "F#7"].contains($0) }, true)
        let xruns = end.xruns - start.xruns
        let callback = last.messages["/jackvu/callback"] ?? []
        print("256 channels, \(seconds) s on jackd -R: overruns \(end.overruns - start.overruns), xruns \(xruns) (server alone: \(alone)), "
              + "cycles \(end.cycles - start.cycles), callback \(callback)")
        XCTAssertEqual(end.overruns, 0, "the worker threads keep up with 256 channels: \(vu.stderr)")
        XCTAssertGreaterThan(end.cycles - start.cycles, Int(Double(seconds) * 48000 / 256 * 0.9), "the server ran")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
        // A shared two-core machine: allow as many stray xruns as one in about six hundred
        // cycles beyond the server's own (3 of 1875). The machine's own load comes and goes:
        // when jackvu's stretch had more, the server alone is measured again after it, and
        // the busier of the two stretches is the server's own.
        if xruns > alone + 3 {
            let after = try serverAlone()
            print("256 channels: the server alone again, after: \(after) xruns in \(seconds) s")
            alone = max(alone, after)
        }
        XCTAssertLessThanOrEqual(xruns, alone + 3, "no xruns of jackvu's making (server alone: \(alone) in \(seconds) s; callback \(callback))")
    }

    func testAServerWithTooFewPortsIsAClearError() throws {
        let server = try JackServer(label: "ports", serverOptions: ["-p", "64"])
        let result = try Executables.run(try Executables.product("jackvu"), ["--channels", "40", "--quiet"], environment: server.environment)
        XCTAssertEqual(result.status, 70)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("jackvu needs 81 ports for --channels 40"), result.stderr)
        XCTAssertTrue(result.stderr.contains("jackd -p/--port-max"), result.stderr)
    }

    func testChannelAndWorkerLimits() throws {
        for (args, message) in [(["--channels", "1025"], "--channels must be from 1 to 1024, got 1025"),
                                (["--workers", "0"], "--workers must be from 1 to 64, got 0")] {
            let r = try Executables.run(try Executables.product("jackvu"), args + ["--quiet"], environment: ["JACK_DEFAULT_SERVER": "jackvu-none"])
            XCTAssertEqual(r.status, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains(message), r.stderr)
        }
    }
}

extension ScaleTests {
    /// Every meter (the default `--send`, what users run) on 512 channels of a real-time dummy
    /// server for 10 s: no overrun. 512 is issue 33's count for one worker core; this suite's
    /// machines (two cores, shared with the server and the source) carry it with both workers
    /// the default gives them: every meter costs about 1.4 ms of CPU per second per channel
    /// (`jackvu-bench meters`, release DSP), about 0.7 of a core for 512. In a release build
    /// one worker carried 512 and two 1,024 for 60 s with 0 overruns (`bash Tools/bench.sh
    /// capacity`, BENCHMARKS.md).
    func testEveryMeterOn512ChannelsWithoutOverruns() throws {
        let channels = 512
        let server = try JackServer(label: "every512", realtime: true, serverOptions: ["-p", "2048"])
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440", "--freq", "3000"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        var args = ["--channels", String(channels), "--text", "--rate", "1"]
        for _ in 0..<channels { args += ["--connect", "jacktone:out"] }
        let vu = try BackgroundProcess(try Executables.product("jackvu"), args, environment: server.environment)
        defer { vu.stop() }
        _ = vu.waitForStdout(timeout: 60) { text in self.status(text).map { $0.cycles > 0 } ?? false }
        // Ten seconds, from one status to the one after.
        func stretch() throws -> (start: (xruns: Int, overruns: Int, cycles: Int), end: (xruns: Int, overruns: Int, cycles: Int)) {
            let start = try XCTUnwrap(status(vu.stdout), "no status from \(channels) channels: \(vu.stderr)")
            sleep(10)
            let printed = OSCText.updates(vu.stdout).count
            _ = vu.waitForStdout(timeout: 5) { OSCText.updates($0).count > printed }
            return (start, try XCTUnwrap(status(vu.stdout)))
        }
        var (start, end) = try stretch()
        var remeasured = false
        // A shared machine that froze (jackvu's watchdog saw the server run no cycle for
        // seconds): the dummy server then runs the cycles it missed back to back, audio
        // faster than real time that no worker is meant to keep up with. That stretch says
        // nothing of jackvu's cost: the next ten seconds are measured instead, once.
        if end.overruns > start.overruns && vu.stderr.contains("it is stalled") {
            print("every meter, \(channels) channels: the server stalled (\(end.overruns - start.overruns) overruns as it caught up); measuring again")
            (start, end) = try stretch()
            remeasured = true
        }
        let last = try XCTUnwrap(OSCText.updates(vu.stdout).last)
        // Every meter ran on the last channel: loudness, true peak, the thirds, the note.
        XCTAssertEqual(last.float("/jackvu/ch/\(channels)/rms") ?? 0, -18, accuracy: 0.2)
        for address in ["/jackvu/loudness/integrated", "/jackvu/ch/\(channels)/truepeak", "/jackvu/ch/\(channels)/thirds", "/jackvu/ch/\(channels)/pitch",
                        "/jackvu/ch/\(channels)/vu", "/jackvu/ch/\(channels)/ppm", "/jackvu/ch/\(channels)/bars"] {
            XCTAssertNotNil(last.messages[address], "\(address) sent: \(last.messages.keys.sorted().prefix(40))")
        }
        print("every meter, \(channels) channels, 10 s on jackd -R: overruns \(end.overruns - start.overruns), xruns \(end.xruns - start.xruns), cycles \(end.cycles - start.cycles)")
        // Since the start (the stretch measured again: over it).
        XCTAssertEqual(end.overruns - (remeasured ? start.overruns : 0), 0, "the workers keep up with every meter on \(channels) channels: \(vu.stderr)")
        XCTAssertGreaterThan(end.cycles - start.cycles, Int(10.0 * 48000 / 256 * 0.9), "the server ran")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
    }
}
