#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Jack
import TestSupport
import XCTest

/// jackvu keeps metering while the JACK graph and the server change under it.
final class ReliabilityTests: XCTestCase {
    private func jackvu() throws -> String { try Executables.product("jackvu") }
    private func jacktone() throws -> String { try Executables.product("jacktone") }

    /// Connections of `port` as `jack_lsp -c` lists them.
    private func connections(_ server: JackServer, of port: String) -> [String] {
        let text = (try? server.lsp(["-c", port]).stdout) ?? ""
        return text.split(separator: "\n").filter { $0.hasPrefix("   ") }.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// Waits until `condition` holds; returns the seconds it took, or nil after `timeout`.
    private func seconds(within timeout: Double, until condition: () -> Bool) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            if condition() { return Date().timeIntervalSince(start) }
            usleep(20_000)
        }
        return nil
    }

    /// The JACK server is killed (SIGKILL) under a running jackvu and started again with a
    /// tone of another pitch, five times, the last time at 44.1 kHz instead of 48: each time
    /// the status says the server is gone, jackvu comes back (how soon is printed: 0.09–0.22 s
    /// here, a benchmark figure), its --connect connection returns, and
    /// the stream names the new note (at the new rate); the status counts the reconnects, and
    /// jackvu said once per shutdown that it waits.
    func testReconnectsAfterTheServerIsKilledFiveTimes() throws {
        let name = "reconnect"
        var server = try JackServer(sampleRate: 48000, label: "reconnect", name: name)
        var tone = try BackgroundProcess(try jacktone(), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let vu = try BackgroundProcess(
            try jackvu(), ["--channels", "1", "--connect", "jacktone:out", "--send", "pitch,status,callback", "--rate", "10"],
            environment: server.environment)
        defer { vu.stop() }
        func lastNote() -> (note: String?, rate: Double?, reconnects: Double?, connected: Double?) {
            let last = OSCText.updates(vu.stdout).last
            return (last?.string("/jackvu/ch/1/pitch", 1), last?.float("/jackvu/status", 0), last?.float("/jackvu/status", 9),
                    last?.float("/jackvu/status", 8))
        }
        XCTAssertNotNil(seconds(within: 20) { lastNote().note == "A4" }, vu.stderr)

        let rounds: [(rate: Int, freq: String, note: String)] = [
            (48000, "523.25", "C5"), (48000, "659.26", "E5"), (48000, "392", "G4"), (48000, "293.66", "D4"), (44100, "440", "A4"),
        ]
        var slowest = 0.0
        for (i, round) in rounds.enumerated() {
            server.kill()
            tone.stop()
            // While the server is gone the status says so (its "server connected" field is 0).
            XCTAssertNotNil(seconds(within: 20) { lastNote().connected == 0 }, "round \(i + 1): \(lastNote())")
            server = try JackServer(sampleRate: round.rate, label: "reconnect", name: name)
            let up = Date()
            let back = seconds(within: 20) { (try? server.lsp().stdout.contains("jackvu:in_1")) ?? false }
            XCTAssertNotNil(back, "round \(i + 1): jackvu did not come back: \(vu.stderr)")
            let after = Date().timeIntervalSince(up)
            print("reconnect round \(i + 1) (\(round.rate) Hz): jackvu's ports back \(String(format: "%.2f", after)) s after the server was up")
            slowest = max(slowest, after)
            tone = try BackgroundProcess(try jacktone(), ["--freq", round.freq], environment: server.environment)
            XCTAssertNotNil(
                seconds(within: 20) { connections(server, of: "jackvu:in_1") == ["jacktone:out"] },
                "round \(i + 1): --connect did not connect the new jacktone: \(connections(server, of: "jackvu:in_1"))")
            XCTAssertNotNil(
                seconds(within: 20) {
                    let now = lastNote()
                    return now.note == round.note && now.rate == Double(round.rate) && now.reconnects == Double(i + 1)
                        && now.connected == 1
                }, "round \(i + 1): \(lastNote()) \(vu.stderr)")
        }
        // How soon (a timing figure, for BENCHMARKS.md: asserting it on a shared machine would
        // fail a working reconnect under load; the waits above allow 10 s).
        print("reconnects: the slowest of five rounds had jackvu's ports back \(String(format: "%.2f", slowest)) s after the server")
        XCTAssertTrue(vu.isRunning)
        let lines = vu.stderr.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("waiting for it to come back") }.count, 5, vu.stderr)
        XCTAssertEqual(lines.filter { $0.contains("connected to the JACK server again") }.count, 5, vu.stderr)
        XCTAssertTrue(vu.stderr.contains("(44100 Hz, 256 frames)"), vu.stderr)
        XCTAssertEqual(vu.stop(), 0, vu.stderr)
    }

    /// The JACK server stopped gracefully (SIGTERM, as `systemctl stop` or qjackctl's Stop do)
    /// under a reconnecting jackvu, ten times (a server and a jackvu each time): jackvu survives
    /// every stop and says it waits. Before its old client was closed ahead of any reconnect
    /// attempt, libjack crashed jackvu (a bad pointer dereference in jack_deactivate or
    /// jack_client_close) in 3 of 15 such stops.
    func testSurvivesGracefulServerStops() throws {
        for round in 1...10 {
            let server = try JackServer(label: "graceful")
            let vu = try BackgroundProcess(
                try jackvu(), ["--channels", "3", "--send", "status,callback", "--rate", "20"], environment: server.environment)
            defer { vu.stop() }
            try waitForPorts(server, ["jackvu:in_3"], process: vu)
            // (jackd 1.9.21 itself now and then ends such a stop by SIGPIPE, exit 141, when a
            // client closes while it shuts down: its exit status is not this test's concern.)
            server.stop()
            XCTAssertNotNil(seconds(within: 20) {
                !vu.isRunning || OSCText.updates(vu.stdout).last?.float("/jackvu/status", 8) == 0
            }, "round \(round): the stop not seen")
            // The crash came within a second of the stop: two more status updates (they come
            // about once a second while the server is gone) and jackvu still runs.
            let seen = OSCText.updates(vu.stdout).count
            XCTAssertNotNil(seconds(within: 20) { !vu.isRunning || OSCText.updates(vu.stdout).count >= seen + 2 })
            XCTAssertTrue(vu.isRunning, "round \(round): jackvu died: \(vu.stderr.suffix(1500))")
            XCTAssertTrue(vu.stderr.contains("waiting for it to come back"), vu.stderr)
            guard vu.isRunning else { return }
        }
    }

    /// Waits until jackvu has handled every graph event so far: connects `system:capture_2` to
    /// its spare input `input` and waits for the status's inputs-connected count to reach
    /// `count`, then undoes it. JACK delivers a client's notifications in order and jackvu's
    /// engine handles a port's appearance before it counts the connections that follow, so
    /// a negative check after this needs no sleep.
    private func barrier(_ vu: BackgroundProcess, _ server: JackServer, input: String, count: Double) throws {
        func inputsConnected() -> Double? { OSCText.updates(vu.stdout).last?.float("/jackvu/status", 11) }
        XCTAssertEqual(try Executables.run("jack_connect", ["system:capture_2", input], environment: server.environment).status, 0)
        XCTAssertNotNil(seconds(within: 20) { inputsConnected() == count }, "barrier: inputs connected \(inputsConnected() ?? -1)")
        XCTAssertEqual(try Executables.run("jack_disconnect", ["system:capture_2", input], environment: server.environment).status, 0)
        XCTAssertNotNil(seconds(within: 20) { inputsConnected() == count - 1 }, "barrier: inputs connected \(inputsConnected() ?? -1)")
    }

    /// A --connect pattern also connects matching ports that appear after jackvu started (how
    /// soon is printed); a connection made by hand survives later graph changes; --connect-once
    /// connects only what exists at the start.
    func testConnectFollowsPortsThatAppearLater() throws {
        let server = try JackServer(label: "graph")
        let vu = try BackgroundProcess(
            try jackvu(), ["--channels", "3", "--connect", "late:out", "--rate", "5"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_2"], process: vu)
        XCTAssertTrue(vu.stderr.contains("--connect 'late:out' matches no output port yet"), vu.stderr)

        let late = try BackgroundProcess(try jacktone(), ["--name", "late"], environment: server.environment, label: "late")
        defer { late.stop() }
        try waitForPortsListed(server, ["late:out"])
        let took = seconds(within: 20) { connections(server, of: "jackvu:in_1") == ["late:out"] }
        XCTAssertNotNil(took, "late:out was not connected: \(connections(server, of: "jackvu:in_1"))")
        print("a port that appeared later was connected after \(String(format: "%.2f", took ?? -1)) s")

        func inputsConnected() -> Double? { OSCText.updates(vu.stdout).last?.float("/jackvu/status", 11) }
        XCTAssertNotNil(seconds(within: 20) { inputsConnected() == 1 }, "inputs connected: \(inputsConnected() ?? -1)")

        // By hand: system:capture_1 → jackvu:in_2; then another client appears.
        XCTAssertEqual(try Executables.run("jack_connect", ["system:capture_1", "jackvu:in_2"], environment: server.environment).status, 0)
        XCTAssertNotNil(seconds(within: 20) { inputsConnected() == 2 }, "inputs connected: \(inputsConnected() ?? -1)")
        let other = try BackgroundProcess(try jacktone(), ["--name", "other"], environment: server.environment, label: "other")
        defer { other.stop() }
        try waitForPortsListed(server, ["other:out"])
        try barrier(vu, server, input: "jackvu:in_3", count: 3)
        XCTAssertEqual(connections(server, of: "jackvu:in_2"), ["system:capture_1"], "the hand-made connection")
        XCTAssertEqual(connections(server, of: "jackvu:in_1"), ["late:out"])

        // A followed source disconnected by hand stays disconnected when other ports appear.
        XCTAssertEqual(try Executables.run("jack_disconnect", ["late:out", "jackvu:in_1"], environment: server.environment).status, 0)
        XCTAssertNotNil(seconds(within: 20) { inputsConnected() == 1 }, "inputs connected: \(inputsConnected() ?? -1)")
        let third = try BackgroundProcess(try jacktone(), ["--name", "third"], environment: server.environment, label: "third")
        defer { third.stop() }
        try waitForPortsListed(server, ["third:out"])
        try barrier(vu, server, input: "jackvu:in_3", count: 2)
        XCTAssertEqual(connections(server, of: "jackvu:in_1"), [], "a hand-made disconnection was undone")
        XCTAssertEqual(try Executables.run("jack_connect", ["late:out", "jackvu:in_1"], environment: server.environment).status, 0)

        // The source goes away: shown in the status, not fatal.
        XCTAssertNotNil(seconds(within: 20) { inputsConnected() == 2 })
        late.stop()
        XCTAssertNotNil(seconds(within: 20) { inputsConnected() == 1 }, "inputs connected: \(inputsConnected() ?? -1)")
        XCTAssertTrue(vu.isRunning)

        // --connect-once: "tone.*:out" matches toneA now; toneB, later, is left alone.
        let toneA = try BackgroundProcess(try jacktone(), ["--name", "toneA"], environment: server.environment, label: "toneA")
        defer { toneA.stop() }
        try waitForPortsListed(server, ["toneA:out"])
        let once = try BackgroundProcess(
            try jackvu(), ["--name", "once", "--channels", "2", "--connect-once", "--connect", "tone.*:out", "--rate", "5"],
            environment: server.environment, label: "once")
        defer { once.stop() }
        try waitForPorts(server, ["once:in_2"], process: once)
        XCTAssertNotNil(seconds(within: 20) { connections(server, of: "once:in_1") == ["toneA:out"] })
        let toneB = try BackgroundProcess(try jacktone(), ["--name", "toneB"], environment: server.environment, label: "toneB")
        defer { toneB.stop() }
        try waitForPortsListed(server, ["toneB:out"])
        try barrier(once, server, input: "once:in_2", count: 2)
        XCTAssertEqual(connections(server, of: "once:in_2"), [], "--connect-once followed a new port")
        XCTAssertEqual(once.stop(), 0, once.stderr)
    }

    /// A port is listed as soon as its client registers it, but JACK refuses to connect it
    /// until that client is active. Here a client (this test's own, through jackvu's Jack
    /// module) registers `slow:out` and waits; meanwhile another client appears, so jackvu
    /// lists the ports, finds `slow:out` and cannot connect it yet. Once `slow` is active its
    /// port must be connected. (jackvu used to count a port as seen at its first attempt and
    /// never tried it again: a fresh-clone CI run left a jacktone unconnected that way.)
    func testConnectRetriesAPortWhoseClientIsNotActiveYet() throws {
        let server = try JackServer(label: "inactive")
        let vu = try BackgroundProcess(
            try jackvu(), ["--quiet", "--channels", "2", "--connect", "slow:out", "--connect", "other:out"],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPortsListed(server, ["jackvu:in_2"])
        let client = try Client(name: "slow", server: server.name)
        defer { client.close() }
        _ = try client.registerAudioOutput(name: "out")
        try waitForPortsListed(server, ["slow:out"])
        let other = try BackgroundProcess(try jacktone(), ["--name", "other"], environment: server.environment, label: "other")
        defer { other.stop() }
        XCTAssertNotNil(seconds(within: 10) { connections(server, of: "jackvu:in_2") == ["other:out"] }, "other:out")
        usleep(300_000)
        XCTAssertEqual(connections(server, of: "jackvu:in_1"), [], "connected to an inactive client")
        try client.activate()
        let took = seconds(within: 10) { connections(server, of: "jackvu:in_1") == ["slow:out"] }
        XCTAssertNotNil(took, "slow:out was not connected once its client was active: \(vu.stderr)")
        XCTAssertTrue(vu.isRunning)

        // An input port where an output was meant: said so, in one line (and, with
        // --connect-once, an error, 66).
        let wrong = try BackgroundProcess(
            try jackvu(), ["--name", "wrong", "--quiet", "--connect", "system:playback_[12]"], environment: server.environment, label: "wrong")
        defer { wrong.stop() }
        try waitForPortsListed(server, ["wrong:in_1"])
        XCTAssertEqual(wrong.stop(), 0)
        XCTAssertEqual(wrong.stderr, "jackvu: --connect 'system:playback_[12]' matches only input ports (system:playback_1, system:playback_2): "
            + "it names the output ports to meter (see jack_lsp -p); matching output ports are connected when they appear\n")
        let once = try Executables.run(try jackvu(), ["--name", "once", "--connect-once", "--connect", "system:playback_1"], environment: server.environment)
        XCTAssertEqual(once.status, 66, once.stderr)
        XCTAssertEqual(once.stderr, "jackvu: --connect 'system:playback_1' matches only input ports (system:playback_1): it names the output ports to meter (see jack_lsp -p)\n")
    }

    /// A real client (jacktone's `inject`) sends NaN, +∞, −∞ and subnormal samples: each
    /// non-finite one is counted in the status, the stream never prints NaN or infinity, and
    /// the meters read the tone again (RMS within 0.1 dB, momentary loudness within 0.5 LU,
    /// A4) within their own windows after the bad audio ends: the analysis block (4096
    /// samples) for RMS and pitch, 400 ms for momentary loudness.
    func testNaNAndInfinityAreCountedAndForgotten() throws {
        let server = try JackServer(label: "badaudio")
        let tone = try BackgroundProcess(
            try jacktone(), ["--freq", "440", "--level", "-12"], environment: server.environment, stdin: true)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        // Lines jacktone cannot use are ignored with a line each (an injection of 10³⁰⁰ s
        // once trapped converting its frames to an Int); the tone plays on.
        let refused = ["inject nan 1e400", "inject inf 1e300", "inject nan -1", "level -inf", "level nan", "1e400", "nan 440"]
        for line in refused { tone.send(line) }
        XCTAssertNotNil(seconds(within: 10) { tone.stderr.components(separatedBy: "ignored '").count - 1 == refused.count },
                        "jacktone: \(tone.stderr)")
        XCTAssertTrue(tone.isRunning, tone.stderr)
        let vu = try BackgroundProcess(
            try jackvu(), ["--channels", "1", "--connect", "jacktone:out", "--rate", "20"], environment: server.environment)
        defer { vu.stop() }
        func last() -> OSCTextUpdate? { OSCText.updates(vu.stdout).last }
        // The tone's momentary loudness, once it is steady (K-weighted 440 Hz at −15.01 dBFS RMS).
        var baseline: Double?
        func steady() -> Bool {
            guard let u = last(), let rms = u.float("/jackvu/ch/1/rms"), let m = u.float("/jackvu/loudness/momentary") else { return false }
            return abs(rms - -15.0103) < 0.1 && abs(m - (baseline ?? m)) < 0.5 && u.string("/jackvu/ch/1/pitch", 1) == "A4"
        }
        XCTAssertNotNil(seconds(within: 20) { steady() }, last().map { "\($0.messages)" } ?? vu.stderr)
        usleep(500_000)
        baseline = try XCTUnwrap(last()?.float("/jackvu/loudness/momentary"))

        var expected = 0.0
        // Audio dropped unanalysed (an overrun: the worker fell behind, on a loaded machine) is
        // not counted: each overrun is one period of frames that never reached the analysis.
        let overrunsBefore = last()?.float("/jackvu/status", 2) ?? 0
        func dropped() -> Double { ((last()?.float("/jackvu/status", 2) ?? 0) - overrunsBefore) * Double(server.period) }
        for (kind, duration) in [("nan", 1.0), ("inf", 0.5), ("-inf", 0.5), ("denormal", 0.5)] {
            tone.send("inject \(kind) \(duration)")
            if kind != "denormal" { expected += duration * 48000 }
            // The bad audio reaches jackvu, and is counted.
            let counted = seconds(within: 20) { (last()?.float("/jackvu/status", 10) ?? 0) >= expected - 512 - dropped() }
            XCTAssertNotNil(counted, "\(kind): counted \(last()?.float("/jackvu/status", 10) ?? -1) of \(expected), \(dropped()) frames dropped")
            // Then the meters recover within their windows (plus the time to see it): counted
            // to the end means the bad audio has ended (subnormals are not counted: wait).
            if kind == "denormal" { usleep(UInt32(duration * 1e6)) }
            let recovered = seconds(within: 10) { steady() }
            XCTAssertNotNil(recovered, "\(kind): not recovered: \(last().map { "\($0.messages)" } ?? "")")
            print("bad audio '\(kind)' for \(duration) s: meters steady again \(String(format: "%.2f", recovered ?? -1)) s after it ended")
        }
        let count = try XCTUnwrap(last()?.float("/jackvu/status", 10))
        XCTAssertLessThanOrEqual(count, expected + 1024, "non-finite samples counted")
        XCTAssertGreaterThanOrEqual(count, expected - 1024 - dropped(), "non-finite samples counted (\(dropped()) frames dropped)")
        let text = vu.stdout.lowercased()
        XCTAssertFalse(text.contains("nan") || text.contains("inf"), "NaN or infinity reached the stream")
        XCTAssertEqual(vu.stop(), 0, vu.stderr)
    }

    /// An xrun caused on purpose is counted: jacktone, in jackvu's graph, is stopped (SIGSTOP)
    /// for 300 ms, so its cycles never finish and the server reports xruns to every client;
    /// jackvu's status counts them, and jackvu meters the tone again once it resumes.
    func testAnXrunIsCausedAndCounted() throws {
        let server = try JackServer(label: "xrun")
        let vu = try BackgroundProcess(
            try jackvu(), ["--channels", "1", "--send", "rms,status,callback", "--rate", "10"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_1"], process: vu)
        let tone = try BackgroundProcess(
            try jacktone(), ["--freq", "440", "--level", "-12", "--connect", "jackvu:in_1"], environment: server.environment)
        defer { tone.stop() }
        func last() -> OSCTextUpdate? { OSCText.updates(vu.stdout).last }
        XCTAssertNotNil(seconds(within: 20) { abs((last()?.float("/jackvu/ch/1/rms") ?? 0) + 15.01) < 0.2 }, "no tone")
        let before = try XCTUnwrap(last()?.float("/jackvu/status", 1))
        kill(tone.process.processIdentifier, SIGSTOP)
        usleep(300_000)
        kill(tone.process.processIdentifier, SIGCONT)
        XCTAssertNotNil(seconds(within: 20) { (last()?.float("/jackvu/status", 1) ?? 0) > before }, "no xrun counted")
        print("xruns: \(Int(before)) before the stop, \(Int(last()?.float("/jackvu/status", 1) ?? -1)) after")
        XCTAssertNotNil(seconds(within: 20) { abs((last()?.float("/jackvu/ch/1/rms") ?? 0) + 15.01) < 0.2 }, "the tone not metered again")
        XCTAssertEqual(vu.stop(), 0, vu.stderr)
    }

    /// The worker stops for 3 s (a test hook): the process callback never waits — the ring
    /// (1 s) fills and further audio is dropped and counted as overruns, and the callback runs
    /// every cycle meanwhile. The tone changes from A4 to E5 near the end of
    /// the stall: when the worker resumes it discards the stale A4 audio instead of analysing
    /// it next to the new audio, says so once, and the first note it names is E5.
    func testAStalledWorkerDropsCountsAndResumesCleanly() throws {
        let server = try JackServer(label: "stall")
        let tone = try BackgroundProcess(
            try jacktone(), ["--freq", "440", "--level", "-12"], environment: server.environment, stdin: true)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let vu = try BackgroundProcess(
            try jackvu(), ["--channels", "1", "--connect", "jacktone:out", "--rate", "20", "--send", "pitch,rms,status,callback"],
            environment: server.environment.merging(["JACKVU_TEST_STALL_WORKER": "3:3"]) { $1 })
        defer { vu.stop() }
        func last() -> OSCTextUpdate? { OSCText.updates(vu.stdout).last }
        XCTAssertNotNil(seconds(within: 20) { last()?.string("/jackvu/ch/1/pitch", 1) == "A4" }, vu.stderr)
        let before = try XCTUnwrap(last())
        XCTAssertEqual(before.float("/jackvu/status", 2), 0, "no overruns before the stall")
        let p99Before = try XCTUnwrap(before.float("/jackvu/callback", 1))
        let cyclesBefore = try XCTUnwrap(before.float("/jackvu/status", 4))
        let beforeTime = Date()

        // The stall starts 3 s after jackvu did: wait until updates stop, then change the tone.
        var size = vu.stdout.count
        XCTAssertNotNil(seconds(within: 10) {
            usleep(300_000)
            defer { size = vu.stdout.count }
            return vu.stdout.count == size
        }, "the worker never stalled")
        usleep(1_800_000)
        tone.send("659.26")
        let mark = vu.stdout.count
        XCTAssertNotNil(seconds(within: 20) { (last()?.float("/jackvu/status", 2) ?? 0) > 0 }, "no overruns counted")
        XCTAssertNotNil(seconds(within: 20) { last()?.string("/jackvu/ch/1/pitch", 1) == "E5" })
        let after = OSCText.updates(String(vu.stdout.dropFirst(mark)))
        let notes = after.compactMap { $0.string("/jackvu/ch/1/pitch", 1) }.filter { $0 != "\"\"" && !$0.isEmpty }
        XCTAssertEqual(notes.first, "E5", "the first note after the stall: \(notes.prefix(5))")
        XCTAssertFalse(notes.contains("A4"), "stale audio was analysed after the stall: \(notes.prefix(10))")
        let rms = try XCTUnwrap(last()?.float("/jackvu/ch/1/rms"))
        XCTAssertEqual(rms, -15.01, accuracy: 0.1)
        XCTAssertEqual(vu.stderr.split(separator: "\n").filter { $0.contains("analysis fell behind") }.count, 1, vu.stderr)
        // The callback never waited for the worker: it ran every cycle of the stall (JACK's
        // dummy driver runs 187.5 cycles a second at 256 frames; a callback that blocked would
        // have stopped the count). Its times are for the benchmarks, not for a test on a noisy
        // machine: printed only.
        let cyclesAfter = try XCTUnwrap(last()?.float("/jackvu/status", 4))
        let elapsed = Date().timeIntervalSince(beforeTime)
        XCTAssertGreaterThan(cyclesAfter - cyclesBefore, 0.8 * elapsed * 48000 / 256, "cycles during the stall")
        let p99After = try XCTUnwrap(last()?.float("/jackvu/callback", 1))
        print("stalled worker: overruns \(last()?.float("/jackvu/status", 2) ?? -1), callback p99 \(p99Before) → \(p99After) µs")
        XCTAssertEqual(vu.stop(), 0, vu.stderr)
    }

    /// Freewheel (an offline bounce, `jack_freewheel y`): the server runs cycles as fast as the
    /// clients allow. jackvu's callback then waits for the worker instead of dropping audio:
    /// no overruns, while the cycles ran faster than real time, and the levels and the note
    /// stay right through it and after it.
    func testFreewheelLosesNoAudio() throws {
        let server = try JackServer(label: "freewheel")
        let tone = try BackgroundProcess(try jacktone(), ["--freq", "440", "--level", "-12"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let vu = try BackgroundProcess(
            // 8 channels with every meter: a worker slower than the freewheeling server.
            try jackvu(), ["--channels", "8", "--connect", "jacktone:out", "--rate", "20"],
            environment: server.environment)
        defer { vu.stop() }
        func last() -> OSCTextUpdate? { OSCText.updates(vu.stdout).last }
        XCTAssertNotNil(seconds(within: 20) { last()?.string("/jackvu/ch/1/pitch", 1) == "A4" }, vu.stderr)
        let cyclesBefore = try XCTUnwrap(last()?.float("/jackvu/status", 4))
        let mark = vu.stdout.count
        let start = Date()
        XCTAssertEqual(try Executables.run("jack_freewheel", ["y"], environment: server.environment).status, 0)
        usleep(2_000_000)
        XCTAssertEqual(try Executables.run("jack_freewheel", ["n"], environment: server.environment).status, 0)
        // Two updates printed after freewheeling ended (waited for, not slept on).
        let off = vu.stdout.count
        XCTAssertNotNil(seconds(within: 20) { OSCText.updates(String(vu.stdout.dropFirst(off))).count >= 2 }, "no update after freewheeling")
        let elapsed = Date().timeIntervalSince(start)
        let after = try XCTUnwrap(last())
        let cycles = try XCTUnwrap(after.float("/jackvu/status", 4)) - cyclesBefore
        let realTime = elapsed * 48000 / 256
        print("freewheel: \(Int(cycles)) cycles in \(String(format: "%.1f", elapsed)) s (\(String(format: "%.1f", cycles / realTime))× real time), overruns \(after.float("/jackvu/status", 2) ?? -1)")
        XCTAssertGreaterThan(cycles, 2 * realTime, "the server did not freewheel")
        XCTAssertEqual(after.float("/jackvu/status", 2), 0, "audio was dropped while freewheeling")
        let updates = OSCText.updates(String(vu.stdout.dropFirst(mark)))
        XCTAssertFalse(updates.isEmpty)
        for u in updates {
            XCTAssertEqual(u.string("/jackvu/ch/1/pitch", 1), "A4")
            XCTAssertEqual(u.float("/jackvu/ch/1/rms") ?? 0, -15.01, accuracy: 0.1)
        }
        XCTAssertEqual(vu.stop(), 0, vu.stderr)
    }
}
