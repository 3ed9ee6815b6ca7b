#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// One alarm change as jackvu's JSON lines carry it (`alarms.events`).
struct SeenAlarm: Equatable {
    var alarm: String
    var subject: String
    var state: String
    var value: Double?
    /// Unix seconds.
    var time: Double
}

/// Every alarm change in `vu`'s JSON lines so far, in order.
func alarmChanges(_ vu: BackgroundProcess) -> [SeenAlarm] {
    let iso = ISO8601DateFormatter()
    iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    var out: [SeenAlarm] = []
    for line in vu.stdoutLines {
        guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let events = (o["alarms"] as? [String: Any])?["events"] as? [[String: Any]] else { continue }
        for e in events {
            guard let time = (e["time"] as? String).flatMap(iso.date(from:)) else { continue }
            out.append(SeenAlarm(alarm: e["alarm"] as? String ?? "", subject: e["subject"] as? String ?? "",
                                 state: e["state"] as? String ?? "", value: e["value"] as? Double, time: time.timeIntervalSince1970))
        }
    }
    return out
}

/// Waits (up to `timeout` s) for the first change of `alarm` to `state` after `after` (Unix s;
/// the JSON's times are to the millisecond, rounded down).
func waitForAlarm(_ vu: BackgroundProcess, _ alarm: String, _ state: String, subject: String? = nil, after: Double, timeout: Double = 15)
    -> SeenAlarm?
{
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let e = alarmChanges(vu).first(where: { $0.alarm == alarm && $0.state == state && $0.time >= after - 0.002 && (subject == nil || $0.subject == subject) }) {
            return e
        }
        usleep(50_000)
    }
    return nil
}

/// Alarms end to end on a real JACK server: real signals from `jacktone` (a tone that stops,
/// a tone left steady, a chord past full scale, a loud stretch against a target, an inverted
/// leg, a lost leg) connected and disconnected with `jack_connect`/`jack_disconnect`; each
/// alarm raised and cleared after its time (to the documented tolerance); the `--on-alarm`
/// script's recorded environment; the log's alarm rows; the CV alarm port read back by a
/// second jackvu; a hanging command that never delays the metering.
final class AlarmLiveTests: XCTestCase {
    /// Raise and clear times within this of the setting: an update (50 ms at --rate 20), the
    /// analysis window a level is read over (85 ms; the momentary loudness 400 ms, the
    /// correlation's 0.3 s time constant), and jacktone's 20 ms ramp.
    static let tolerance = 0.7

    private func now() -> Double { Date().timeIntervalSince1970 }

    /// Checks that `alarm` changed to `state` `seconds` (− 0.15 s, + tolerance, + `extra`)
    /// after a change made between `from` and `until` (a command's start and return: the
    /// change is somewhere between): never before `from` + seconds, never after `until` +
    /// seconds + tolerance.
    @discardableResult
    private func expect(_ vu: BackgroundProcess, _ alarm: String, _ state: String, subject: String? = nil, after seconds: Double,
                        from: Double, until: Double? = nil, extra: Double = 0) -> SeenAlarm?
    {
        guard let e = waitForAlarm(vu, alarm, state, subject: subject, after: from, timeout: seconds + 10) else {
            XCTFail("\(alarm) \(subject ?? "") not \(state) within \(seconds + 10) s: \(alarmChanges(vu))\n\(vu.stderr)")
            return nil
        }
        let earliest = e.time - (until ?? from), latest = e.time - from
        print("\(alarm) \(e.subject) \(state) after \(String(format: "%.2f", earliest))…\(String(format: "%.2f", latest)) s (set: \(seconds) s)")
        XCTAssertGreaterThanOrEqual(latest, seconds - 0.15, "\(alarm) \(state) too early")
        XCTAssertLessThanOrEqual(earliest, seconds + Self.tolerance + extra, "\(alarm) \(state) too late")
        return e
    }

    func testEachSignalAlarmRaisesAndClearsOnRealSignalsInItsTime() throws {
        let dir = try makeTemporaryFolder("alarms")
        defer { removeTemporaryFolder(dir) }
        let script = dir.appendingPathComponent("record.sh").path
        let recorded = dir.appendingPathComponent("env.txt").path
        try """
            #!/bin/sh
            echo "$JACKVU_ALARM|$JACKVU_SUBJECT|$JACKVU_STATE|$JACKVU_VALUE|$JACKVU_UNIT|$JACKVU_TIME|$JACKVU_PROGRAMME|$JACKVU_CLIENT" >> \(recorded)
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let log = dir.appendingPathComponent("log.db").path

        let server = try JackServer(sampleRate: 48000, period: 512, label: "alarms")
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "2", "--target", "ebu-r128", "--format", "json", "--rate", "20", "--send", "alarms,status",
             "--alarm", "silence:raise=2,clear=1", "--alarm", "stuck:raise=3,clear=0.5", "--alarm", "clip:clear=1",
             "--alarm", "truepeak:clear=1", "--alarm", "loudness:raise=2,clear=1", "--alarm", "phase:raise=1,clear=1",
             "--alarm", "leg:raise=1,clear=1", "--alarm", "integrated:level=5", "--on-alarm", script, "--log", log],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_2", "jackvu:alarm"], process: vu)
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--name", "t", "--inverted", "--freq", "997", "--level", "-30", "--connect", "jackvu:in_[12]$"],
            environment: server.environment, stdin: true)
        defer { tone.stop() }
        func connect(_ a: String, _ b: String, _ on: Bool) throws {
            let r = try Executables.run(on ? "jack_connect" : "jack_disconnect", [a, b], environment: server.environment)
            XCTAssertEqual(r.status, 0, r.stderr)
        }

        // A tone left steady (−30 LUFS, under the target): stuck, 3 s after it settles.
        let started = now()
        let stuck = try XCTUnwrap(expect(vu, "stuck", "raised", after: 3, from: started, extra: 2))
        XCTAssertEqual(stuck.value ?? 0, -30, accuracy: 1, "the momentary loudness it stuck at")
        // Integrated −30 LUFS against −23 ± 0.5, once 5 s are integrated (the audio since
        // jackvu's start).
        let integrated = try XCTUnwrap(waitForAlarm(vu, "integrated", "raised", after: started - 5))
        XCTAssertEqual(integrated.value ?? 0, -7, accuracy: 1, "integrated − target")

        // An inverted leg (at the steady −30 dBFS: the correlation's 0.3 s memory holds no
        // louder past): the pair's correlation −1, phase after 1 s.
        var t = now()
        try connect("t:out", "jackvu:in_2", false)
        try connect("t:out_inverted", "jackvu:in_2", true)
        let phase = try XCTUnwrap(expect(vu, "phase", "raised", subject: "pair/1", after: 1, from: t, until: now()))
        XCTAssertLessThan(phase.value ?? 0, -0.9)
        // One leg lost: the lost-leg alarm after 1 s; phase clears (a silent leg has no
        // phase); the loudness drops 3 dB, so the tone is no longer stuck.
        t = now()
        try connect("t:out_inverted", "jackvu:in_2", false)
        var u = now()
        expect(vu, "leg", "raised", subject: "pair/1", after: 1, from: t, until: u)
        expect(vu, "phase", "cleared", subject: "pair/1", after: 1, from: t, until: u)
        expect(vu, "stuck", "cleared", after: 0.5, from: t, until: u)
        t = now()
        try connect("t:out", "jackvu:in_2", true)
        u = now()
        expect(vu, "leg", "cleared", subject: "pair/1", after: 1, from: t, until: u)

        // It stops: silence after 2 s.
        t = now()
        tone.send("off")
        expect(vu, "silence", "raised", after: 2, from: t)

        // Back, loud (−10 LUFS against −23 ± 0.5): silence clears after 1 s, loudness raises
        // after 2 s (the short-term loudness passes −22.5 LUFS within 0.2 s of the step).
        t = now()
        tone.send("level -10")
        tone.send("997")
        expect(vu, "silence", "cleared", after: 1, from: t)
        expect(vu, "loudness", "raised", after: 2, from: t, extra: 0.3)

        // −0.5 dBFS: the true peak passes the profile's −1 dBTP at once.
        t = now()
        tone.send("level -0.5")
        expect(vu, "truepeak", "raised", after: 0, from: t)

        // A chord of two full-scale sines: samples past full scale on both inputs.
        t = now()
        tone.send("level 0")
        tone.send("997 1499")
        expect(vu, "clip", "raised", subject: "ch/1", after: 0, from: t)
        expect(vu, "clip", "raised", subject: "ch/2", after: 0, from: t)
        t = now()
        tone.send("level -30")
        tone.send("997")
        expect(vu, "clip", "cleared", subject: "ch/1", after: 1, from: t)
        expect(vu, "truepeak", "cleared", after: 1, from: t)

        // The loud stretch ended long ago: loudness cleared.
        XCTAssertNotNil(waitForAlarm(vu, "loudness", "cleared", after: started), "\(alarmChanges(vu))")
        // A reset (SIGHUP) starts the integration again: no integrated loudness, cleared.
        t = now()
        kill(vu.process.processIdentifier, SIGHUP)
        expect(vu, "integrated", "cleared", after: 0, from: t)
        XCTAssertTrue(vu.isRunning, vu.stderr)
        // Every change's command has run (one at a time, in order) before jackvu stops.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, ((try? String(contentsOfFile: recorded, encoding: .utf8)) ?? "").split(separator: "\n").count < alarmChanges(vu).count {
            usleep(50_000)
        }
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)

        // The command ran once per change, in order, with the alarm in its environment.
        let changes = alarmChanges(vu)
        let lines = try String(contentsOfFile: recorded, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        XCTAssertEqual(lines.map { "\($0[0]) \($0[1]) \($0[2])" }, changes.map { "\($0.alarm) \($0.subject) \($0.state)" })
        for fields in lines {
            XCTAssertEqual(fields.count, 8, "\(fields)")
            XCTAssertNotNil(Double(fields[3]), "JACKVU_VALUE \(fields)")
            XCTAssertTrue(fields[5].hasSuffix("Z") && fields[5].count == 24, "JACKVU_TIME \(fields)")
            XCTAssertEqual(fields[7], "jackvu")
        }
        XCTAssertEqual(Set(lines.map { $0[4] }).isSubset(of: ["dBFS", "LUFS", "LU", "dBTP", "correlation"]), true)

        // The log holds the same changes (read with SQLite's own shell).
        let rows = try Executables.run("sqlite3", [log, "SELECT kind || ' ' || subject || ' ' || state FROM alarms ORDER BY rowid"])
        XCTAssertEqual(rows.status, 0, rows.stderr)
        XCTAssertEqual(rows.stdout.split(separator: "\n").map(String.init), changes.map { "\($0.alarm) \($0.subject) \($0.state)" })
    }

    /// A hanging `--on-alarm` command does not delay the metering (the updates keep their
    /// pace while it hangs), is stopped at its timeout, runs one at a time, and its failures
    /// are counted and said once; the alarm port reads 1.0 (0 dBFS to a second jackvu
    /// reading it) while the alarm is active and nothing while it is not.
    func testAHangingCommandNeverDelaysMeteringAndTheAlarmPortFollows() throws {
        let server = try JackServer(sampleRate: 48000, period: 512, label: "onalarm")
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "1", "--format", "json", "--rate", "20", "--send", "alarms,status",
             "--alarm", "silence:raise=0.5,clear=0.5", "--on-alarm", "sleep 30", "--on-alarm-timeout", "1"],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_1", "jackvu:alarm"], process: vu)
        // The alarm port read by another JACK client: a second jackvu's peak of it.
        let reader = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--name", "reader", "--channels", "1", "--connect", "jackvu:alarm$", "--format", "json", "--rate", "20", "--send", "peak"],
            environment: server.environment, label: "reader")
        defer { reader.stop() }
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--name", "t", "--level", "-20", "--connect", "jackvu:in_1$"],
            environment: server.environment, stdin: true)
        defer { tone.stop() }
        func portPeak() -> Double? {
            guard let line = reader.stdoutLines.last, let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let ch = (o["channels"] as? [[String: Any]])?.first else { return nil }
            return ch["peak_dbfs"] as? Double ?? -200
        }
        func waitForPort(_ active: Bool) -> Bool {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let p = portPeak(), active ? abs(p) < 0.01 : p < -100 { return true }
                usleep(50_000)
            }
            return false
        }
        XCTAssertTrue(waitForPort(false), "no alarm: the port carries 0 (\(String(describing: portPeak())))")
        // Four silences: eight changes, each starting `sleep 30` (stopped after 1 s).
        let start = now()
        for _ in 0..<4 {
            let t = now()
            tone.send("off")
            XCTAssertNotNil(waitForAlarm(vu, "silence", "raised", after: t), "\(alarmChanges(vu))")
            XCTAssertTrue(waitForPort(true), "alarm: the port carries 1.0 (\(String(describing: portPeak())))")
            XCTAssertLessThanOrEqual(try commandsRunning(), 1, "one command at a time")
            let u = now()
            tone.send("440")
            XCTAssertNotNil(waitForAlarm(vu, "silence", "cleared", after: u), "\(alarmChanges(vu))")
            XCTAssertTrue(waitForPort(false), "cleared: the port carries 0")
        }
        let end = now()
        // The updates kept their pace (20 a second) while the commands hung: no gap in the
        // audio time between updates longer than a few periods.
        var times: [Double] = []
        for line in vu.stdoutLines {
            if let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let t = o["time_s"] as? Double { times.append(t) }
        }
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        let longest = gaps.max() ?? 0
        print("updates: \(times.count) in \(String(format: "%.1f", end - start)) s of hanging commands; the longest gap \(String(format: "%.3f", longest)) s")
        XCTAssertLessThan(longest, 0.5, "metering was held up (each command hung 1 s)")
        // The commands: stopped at their timeout, counted, said once.
        let deadline = Date().addingTimeInterval(15)
        var failures = 0
        while Date() < deadline {
            if let line = vu.stdoutLines.last, let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
                failures = (o["alarms"] as? [String: Any])?["command_failures"] as? Int ?? 0
                if failures >= 8 { break }
            }
            usleep(100_000)
        }
        XCTAssertEqual(failures, 8, "every hung command stopped and counted")
        XCTAssertEqual(vu.stderr.components(separatedBy: "--on-alarm:").count - 1, 1, vu.stderr)
        XCTAssertTrue(vu.stderr.contains("ran longer than 1.0 s"), vu.stderr)
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
        XCTAssertEqual(try commandsRunning(), 0, "nothing left running")
    }

    /// The chain's alarms on a real server: a source that goes away (disconnected), the
    /// analysis stalled on purpose (overruns: `JACKVU_TEST_STALL_WORKER`), the server killed
    /// and started again under its name (server gone, then back after the reconnect).
    func testChainAlarmsOnARealServer() throws {
        let name = "chain-\(getpid())"
        let dir = try makeTemporaryFolder("chain")
        defer { removeTemporaryFolder(dir) }
        let log = dir.appendingPathComponent("log.db").path
        var server = try JackServer(sampleRate: 48000, period: 512, label: "chain", name: name)
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "1", "--format", "json", "--rate", "10", "--send", "alarms,status", "--log", log,
             "--alarm", "server", "--alarm", "overruns", "--alarm", "disconnected:raise=0.5"],
            environment: server.environment.merging(["JACKVU_TEST_STALL_WORKER": "3:2"]) { $1 })
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_1"], process: vu)
        let start = now()
        var tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--connect", "jackvu:in_1$"], environment: server.environment)
        // The worker stops for 2 s, 3 s after its start: the ring (1 s) overflows.
        let overruns = try XCTUnwrap(waitForAlarm(vu, "overruns", "raised", after: start - 5, timeout: 20), "\(alarmChanges(vu))\n\(vu.stderr)")
        XCTAssertGreaterThan(overruns.value ?? 0, 0)
        // (It clears once a minute has passed without one: AlarmTests.)
        // The source goes: fewer inputs connected than before.
        var t = now()
        tone.stop()
        expect(vu, "disconnected", "raised", after: 0.5, from: t)
        // The server is killed: gone at once (the monotonic clock: no audio needed); back
        // after jackvu reconnects to the new one.
        t = now()
        server.kill()
        expect(vu, "server", "raised", after: 0, from: t, extra: 0.8)
        server = try JackServer(sampleRate: 48000, period: 512, label: "chain", name: name)
        t = now()
        XCTAssertNotNil(waitForAlarm(vu, "server", "cleared", after: t - 1, timeout: 20), "\(alarmChanges(vu))\n\(vu.stderr)")
        tone = try BackgroundProcess(try Executables.product("jacktone"), ["--connect", "jackvu:in_1$"], environment: server.environment)
        defer { tone.stop() }
        XCTAssertNotNil(waitForAlarm(vu, "disconnected", "cleared", after: t, timeout: 20), "the source back")
        XCTAssertTrue(vu.isRunning, vu.stderr)
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
        // The log has the chain's events, in order, beside the alarms.
        let events = try Executables.run("sqlite3", [log, "SELECT kind FROM events WHERE kind IN ('start', 'overruns', 'server_lost', 'server_back', 'reconnect', 'stop') ORDER BY rowid"])
        XCTAssertEqual(events.stdout.split(separator: "\n").map(String.init), ["start", "overruns", "server_lost", "server_back", "reconnect", "stop"], events.stderr)
        let alarms = try Executables.run("sqlite3", [log, "SELECT kind || ' ' || state FROM alarms ORDER BY rowid"])
        XCTAssertEqual(alarms.stdout.split(separator: "\n").map(String.init), alarmChanges(vu).map { "\($0.alarm) \($0.state)" })
    }

    /// The command's queue is bounded: 70 alarms raised at once (a clip alarm on each of 70
    /// inputs) against a command that hangs: one runs, 64 wait, the rest are dropped, counted
    /// and said once; SIGTERM then ends jackvu at once, the running command with it.
    func testTheCommandQueueIsBoundedAndAStopEndsAHangingCommand() throws {
        let server = try JackServer(sampleRate: 48000, period: 1024, label: "queue", serverOptions: ["-p", "512"])
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "70", "--format", "json", "--rate", "5", "--send", "alarms",
             "--alarm", "clip:level=-100,raise=0,clear=60", "--on-alarm", "sleep 30", "--on-alarm-timeout", "30"],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPortsListed(server, ["jackvu:in_70"])
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--name", "t", "--level", "-20", "--connect", "jackvu:in_.*"], environment: server.environment)
        defer { tone.stop() }
        func status() -> [String: Any]? {
            guard let line = vu.stdoutLines.last, let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return o["alarms"] as? [String: Any]
        }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, (status()?["raised"] as? Int ?? 0) < 70 { usleep(100_000) }
        XCTAssertEqual(status()?["raised"] as? Int, 70, "\(String(describing: status()))")
        let dropped = status()?["commands_dropped"] as? Int ?? -1
        XCTAssertTrue((5...6).contains(dropped), "one running, 64 waiting, the rest dropped: \(dropped)")
        XCTAssertEqual(vu.stderr.components(separatedBy: "--on-alarm:").count - 1, 1, vu.stderr)
        XCTAssertEqual(try commandsRunning(), 1, "one at a time")
        let stopping = Date()
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
        let took = Date().timeIntervalSince(stopping)
        print("jackvu stopped \(String(format: "%.2f", took)) s after SIGTERM with a command hanging")
        XCTAssertLessThan(took, 3, "a stop does not wait for the command's timeout")
        XCTAssertEqual(try commandsRunning(), 0, "the running command was stopped with it")
    }

    /// `sleep 30` processes (the hanging command) now.
    private func commandsRunning() throws -> Int {
        let r = try Executables.run("pgrep", ["-xf", "sleep 30"])
        return r.stdout.split(separator: "\n").count
    }

    /// No false alarm on programme material: music with pauses of a second or two (a MIDI
    /// phrase played by fluidsynth into JACK, live) and speech with pauses (espeak-ng, through
    /// `jackvu analyze --alarm all`), with every alarm at its default.
    func testNoAlarmOnMusicWithPausesOrSpeech() throws {
        let soundfont = "/usr/share/sounds/sf2/TimGM6mb.sf2"
        guard FileManager.default.fileExists(atPath: soundfont) else { throw FixtureError("\(soundfont) is missing (Tools/setup.sh --tests)") }
        let dir = try makeTemporaryFolder("music")
        defer { removeTemporaryFolder(dir) }
        let mid = dir.appendingPathComponent("phrase.mid").path
        try Data(Self.phrase()).write(to: URL(fileURLWithPath: mid))
        let server = try JackServer(sampleRate: 48000, period: 1024, label: "music")
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            // Every alarm at its default; the chain's xruns and overruns (a loaded test machine's,
            // not the music's) out of the way.
            ["--channels", "2", "--connect", "music:left$", "--connect", "music:right$", "--format", "json", "--rate", "5",
             "--send", "alarms,loudness,status", "--alarm", "all", "--alarm", "xruns:level=100000", "--alarm", "overruns:level=100000"],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_2"], process: vu)
        let synth = try BackgroundProcess(
            try Executables.resolve("fluidsynth"),
            ["-a", "jack", "-o", "audio.jack.id=music", "-o", "audio.jack.autoconnect=0", "-ni", "-q", "-g", "0.6", "-r", "48000", soundfont, mid],
            environment: server.environment, label: "fluidsynth")
        defer { synth.stop() }
        // The phrase lasts 22 s. When fluidsynth ends, its ports go (the disconnected alarm,
        // rightly, a second later): what counts is before.
        XCTAssertTrue(synth.waitForExit(timeout: 60), "fluidsynth did not finish")
        let ended = now()
        let heard = vu.stdoutLines.compactMap { line -> Double? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return (o["loudness"] as? [String: Any])?["max_short_term_lufs"] as? Double
        }.last ?? -200
        XCTAssertGreaterThan(heard, -40, "the music reached jackvu")
        XCTAssertEqual(alarmChanges(vu).filter { $0.state == "raised" && $0.time < ended }, [], "no alarm on music")

        let speech = dir.appendingPathComponent("speech.wav").path
        let padded = dir.appendingPathComponent("speech48.wav").path
        let text = "Good evening. This is the news at six. The weather today was mild, with rain in the north later. "
            + "In sport, the home side won three to one after a slow start. Now the traffic: the ring road is closed."
        let spoken = try Executables.run(try Executables.resolve("espeak-ng"), ["-w", speech, text])
        XCTAssertEqual(spoken.status, 0, spoken.stderr)
        // The text then 1.5 s of pause, at 48 kHz, three times over (about 40 s).
        XCTAssertEqual(try Executables.run("sox", [speech, padded, "rate", "48000", "pad", "0", "1.5", "repeat", "2"]).status, 0)
        let analysed = try Executables.run(try Executables.product("jackvu"), ["analyze", "--alarm", "all", "--target", "-20", "--format", "json", padded], timeout: 120)
        XCTAssertEqual(analysed.status, 0, analysed.stderr)
        let summary = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(analysed.stdout.utf8)) as? [[String: Any]])?.first)
        XCTAssertGreaterThan(summary["duration_s"] as? Double ?? 0, 30)
        XCTAssertEqual((summary["alarms"] as? [Any])?.count, 0, "no alarm on speech: \(summary["alarms"] ?? "")")
    }

    /// A piano phrase: notes and chords of varying length and strength, rests of 1 to 2 s,
    /// 22 s in all (format 0, 480 ticks a beat at 120 bpm: 960 ticks a second).
    static func phrase() -> [UInt8] {
        func quantity(_ value: Int) -> [UInt8] {
            var bytes = [UInt8(value & 0x7F)]
            var v = value >> 7
            while v > 0 { bytes.insert(UInt8(v & 0x7F) | 0x80, at: 0); v >>= 7 }
            return bytes
        }
        // (keys, velocity, seconds sounding, seconds of rest after)
        let events: [([UInt8], UInt8, Double, Double)] = [
            ([60, 64, 67], 90, 1.0, 0), ([62], 70, 0.5, 0), ([64], 80, 0.5, 0), ([65, 69], 100, 1.5, 1.0),
            ([67], 60, 0.5, 0), ([69], 75, 0.5, 0), ([71], 90, 0.5, 0), ([72, 76, 79], 110, 2.0, 2.0),
            ([57, 60, 64], 85, 1.0, 0), ([59], 65, 0.5, 0), ([60], 75, 0.5, 1.5), ([53, 57, 60], 95, 1.5, 0),
            ([55, 59, 62], 80, 1.5, 1.0), ([48, 55, 60, 64], 120, 3.0, 0),
        ]
        var track: [UInt8] = [0x00, 0xC0, 0x00]  // piano
        var gap = 0
        for (keys, velocity, sounding, rest) in events {
            for (i, k) in keys.enumerated() { track += quantity(i == 0 ? gap : 0) + [0x90, k, velocity] }
            for (i, k) in keys.enumerated() { track += quantity(i == 0 ? Int(sounding * 960) : 0) + [0x80, k, 0] }
            gap = Int(rest * 960)
        }
        track += quantity(gap + 960) + [0xFF, 0x2F, 0x00]
        func be32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> (24 - 8 * $0)) & 0xFF) } }
        return Array("MThd".utf8) + be32(6) + [0, 0, 0, 1, 0x01, 0xE0] + Array("MTrk".utf8) + be32(track.count) + track
    }
}
