#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Outputs
import TestSupport
import XCTest

/// Loudness programmes end to end: a real JACK server with real tones, the real
/// `jack_transport`, `oscsend` into the control input, and `jackvu analyze` of a file.
final class ProgrammeLiveTests: XCTestCase {
    /// The latest complete JSON update of `vu` whose programmes `check` accepts, waited for
    /// up to `timeout` s.
    private func waitForUpdate(
        _ vu: BackgroundProcess, _ what: String, timeout: Double = 30, _ check: ([String: [String: Any]], Double) -> Bool
    ) throws -> [String: [String: Any]] {
        var last: [String: Any]?
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = vu.stdoutLines.last, let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] {
                last = object
                if let programmes = object["programmes"] as? [String: [String: Any]], let time = object["time_s"] as? Double,
                    check(programmes, time)
                {
                    return programmes
                }
            }
            usleep(100_000)
        }
        XCTFail("\(what); the last update: \(String(describing: last?["programmes"]))\n\(vu.stderr)")
        throw FixtureError(what)
    }

    private func number(_ p: [String: [String: Any]], _ name: String, _ key: String) -> Double {
        p[name]?[key] as? Double ?? .nan
    }

    /// An 8-input bus: 1-6 a 5.1 programme carrying EBU Tech 3341 case 6's 5.0 signal (L, R
    /// −28 dBFS; C −24; Ls, Rs −30; 1 kHz) with a loud 50 Hz tone on LFE, 7-8 a stereo
    /// programme at −23 LUFS, each from its own jacktone. Both integrate to −23.0 ± 0.1 LUFS
    /// within the R 128 target; the stereo tone stopped, the 5.1 programme's readings do not
    /// move. Then the control input pauses and resumes one programme (oscsend).
    func testTwoProgrammesOnOneBusReadApartAndPauseByName() throws {
        let server = try JackServer(sampleRate: 48000, label: "programmes")
        let port = freeUDPPort()
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "8", "--programme", "main=1-6:5.1", "--programme", "stereo=7-8", "--target", "ebu-r128",
             "--format", "json", "--rate", "5", "--send", "loudness,programme,target,correlation,status", "--listen", "\(port)"],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_8"], process: vu)
        var tones: [BackgroundProcess] = []
        defer { for t in tones { t.stop() } }
        for (name, freq, level, inputs) in [("lr", 1000, -28, "[12]"), ("c", 1000, -24, "3"), ("lfe", 50, -6, "4"),
                                             ("surround", 1000, -30, "[56]"), ("stereo", 1000, -23, "[78]")] {
            tones.append(try BackgroundProcess(
                try Executables.product("jacktone"),
                ["--name", name, "--freq", "\(freq)", "--level", "\(level)", "--connect", "jackvu:in_\(inputs)$"],
                environment: server.environment, label: name))
        }
        // Integrated loudness includes the blocks from before every tone had reached jackvu:
        // it converges on −23 as steady blocks accumulate (a wrong meter never gets there).
        let steady = try waitForUpdate(vu, "both programmes at −23 LUFS") { p, _ in
            abs(self.number(p, "main", "integrated_lufs") + 23) <= 0.1 && abs(self.number(p, "stereo", "integrated_lufs") + 23) <= 0.1
                && abs(self.number(p, "main", "short_term_lufs") + 23) <= 0.1
        }
        XCTAssertEqual(steady["main"]?["state"] as? String, "within")
        XCTAssertEqual(steady["stereo"]?["profile"] as? String, "ebu-r128")
        XCTAssertEqual(number(steady, "main", "relative_short_term_lu"), 0, accuracy: 0.1)
        XCTAssertEqual((steady["main"]?["correlation"] as? [String: Double])?["L-R"] ?? 0, 1, accuracy: 0.01)

        // The stereo programme goes silent; the 5.1 one does not notice.
        tones.removeLast().stop()
        let before = number(steady, "main", "integrated_lufs")
        let after = try waitForUpdate(vu, "stereo silent") { p, _ in self.number(p, "stereo", "short_term_lufs") < -70 }
        XCTAssertEqual(number(after, "main", "integrated_lufs"), before, accuracy: 0.05)
        XCTAssertEqual(number(after, "main", "short_term_lufs"), -23, accuracy: 0.1)

        // Pause the 5.1 programme by name: its duration stops while audio time goes on; resume.
        XCTAssertEqual(try Executables.run("oscsend", ["127.0.0.1", "\(port)", "/jackvu/pause", "s", "main"]).status, 0)
        let paused = try waitForUpdate(vu, "main paused") { p, _ in p["main"]?["paused"] as? Bool == true }
        XCTAssertEqual(paused["stereo"]?["paused"] as? Bool, false, "only the programme named")
        let held = number(paused, "main", "duration_s")
        var pausedAt = 0.0
        _ = try waitForUpdate(vu, "time goes on") { _, time in
            if pausedAt == 0 { pausedAt = time }
            return time > pausedAt + 2
        }
        let later = try waitForUpdate(vu, "still paused") { p, _ in p["main"]?["paused"] as? Bool == true }
        XCTAssertEqual(number(later, "main", "duration_s"), held, accuracy: 0.001, "paused: no audio integrated")
        XCTAssertEqual(try Executables.run("oscsend", ["127.0.0.1", "\(port)", "/jackvu/resume", "s", "main"]).status, 0)
        _ = try waitForUpdate(vu, "main resumed") { p, _ in self.number(p, "main", "duration_s") > held + 1 }
        // A name that is no programme's is counted and ignored.
        XCTAssertEqual(try Executables.run("oscsend", ["127.0.0.1", "\(port)", "/jackvu/pause", "s", "nope"]).status, 0)
        XCTAssertTrue(vu.isRunning, vu.stderr)
    }

    /// `--follow-transport`: integration only while JACK's transport rolls, driven by the
    /// real `jack_transport`: stopped, the integrated loudness and its duration freeze while
    /// audio time goes on; play resumes them.
    func testFollowTransportFreezesIntegrationWhileStopped() throws {
        let server = try JackServer(sampleRate: 48000, label: "transport")
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "2", "--programme", "mix=1-2", "--follow-transport", "--format", "json", "--rate", "5",
             "--send", "loudness,programme,status"],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_2"], process: vu)
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "1000", "--level", "-20", "--connect", "jackvu:in_[12]"],
            environment: server.environment)
        defer { tone.stop() }
        let transport = try BackgroundProcess("jack_transport", [], environment: server.environment, stdin: true)
        defer {
            transport.send("quit")
            transport.stop()
        }
        // A fresh server's transport stands: nothing is integrated.
        let stopped = try waitForUpdate(vu, "audio while stopped") { p, time in time > 2 && p["mix"]?["paused"] as? Bool == true }
        XCTAssertEqual(number(stopped, "mix", "duration_s"), 0, "nothing integrated before play")
        transport.send("play")
        let rolling = try waitForUpdate(vu, "integrating") { p, _ in self.number(p, "mix", "duration_s") > 2 }
        XCTAssertEqual(rolling["mix"]?["paused"] as? Bool, false)
        transport.send("stop")
        let frozen = try waitForUpdate(vu, "frozen") { p, _ in p["mix"]?["paused"] as? Bool == true }
        let duration = number(frozen, "mix", "duration_s"), integrated = number(frozen, "mix", "integrated_lufs")
        var stoppedAt = 0.0
        let after = try waitForUpdate(vu, "two more seconds of audio") { _, time in
            if stoppedAt == 0 { stoppedAt = time }
            return time > stoppedAt + 2
        }
        XCTAssertEqual(number(after, "mix", "duration_s"), duration, accuracy: 0.001)
        XCTAssertEqual(number(after, "mix", "integrated_lufs"), integrated, accuracy: 0.001)
        transport.send("play")
        _ = try waitForUpdate(vu, "resumed") { p, _ in self.number(p, "mix", "duration_s") > duration + 1 }
    }

    /// `jackvu analyze` of an 8-channel file (5.1 + stereo, as above) reports each programme
    /// with its state; bad programmes and targets get one line and 64 (a programme beyond the
    /// file's channels: 66, the file's).
    func testAnalyzeReportsEveryProgrammeOfAFile() throws {
        let dir = try makeTemporaryFolder("programmes")
        defer { removeTemporaryFolder(dir) }
        func sine(_ f: Double, _ dBFS: Double) -> [Float] {
            let a = pow(10, dBFS / 20)
            return (0..<(48000 * 10)).map { Float(a * sin(2 * Double.pi * f * Double($0) / 48000)) }
        }
        let lr = sine(1000, -28), stereo = sine(1000, -23)
        let path = dir.appendingPathComponent("bus.wav").path
        try writeWAV(path, [lr, lr, sine(1000, -24), sine(50, -6), sine(1000, -30), sine(1000, -30), stereo, stereo])
        let jackvu = try Executables.product("jackvu")
        let r = try Executables.run(
            jackvu, ["analyze", "--programme", "main=1-6:5.1", "--programme", "stereo=7-8", "--target", "ebu-r128",
                     "--target", "stereo=-20", "--format", "json", path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        let summary = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])?.first, r.stdout)
        let programmes = try XCTUnwrap(summary["programmes"] as? [[String: Any]], r.stdout)
        XCTAssertEqual(programmes.map { $0["name"] as? String }, ["main", "stereo"])
        XCTAssertEqual(programmes[0]["integrated_lufs"] as? Double ?? 0, -23, accuracy: 0.1)
        XCTAssertEqual(programmes[1]["integrated_lufs"] as? Double ?? 0, -23, accuracy: 0.1)
        XCTAssertEqual(programmes[0]["state"] as? String, "within")
        XCTAssertEqual(programmes[1]["state"] as? String, "below", "a custom −20 LUFS target, ±1 LU")
        XCTAssertEqual(programmes[1]["relative_integrated_lu"] as? Double ?? 0, -3, accuracy: 0.1)
        XCTAssertEqual(programmes[0]["duration_s"] as? Double ?? 0, 10, accuracy: 0.01)
        let text = try Executables.run(jackvu, ["analyze", "--programme", "main=1-6:5.1", "--programme", "stereo=7-8", path], timeout: 120)
        XCTAssertTrue(text.stdout.contains("programme main (5.1 on 1,2,3,4,5,6)"), text.stdout)

        for (arguments, status, says) in [
            (["--programme", "main=1-3:5.1"], Int32(64), "--programme 'main=1-3:5.1': 5.1 needs 6 channels, not 3"),
            (["--programme", "a=1-2", "--programme", "a=3-4"], 64, "--programme 'a' is named twice"),
            (["--programme", "a=1-2,2"], 64, "channel 2 is named twice"),
            (["--target", "ebu-r129"], 64, "no profile 'ebu-r129'"),
            (["--programme", "a=1-2", "--target", "b=ebu-r128"], 64, "'b' is no programme (a)"),
            (["--programme", "wide=1-9"], 66, "it has 8 channels, not 9"),
        ] as [([String], Int32, String)] {
            let bad = try Executables.run(jackvu, ["analyze"] + arguments + [path], timeout: 60)
            XCTAssertEqual(bad.status, status, "\(arguments): \(bad.stderr)")
            XCTAssertTrue(bad.stderr.contains(says), "\(arguments): \(bad.stderr)")
            XCTAssertEqual(bad.stderr.split(separator: "\n").count, 1, bad.stderr)
        }
        // Live: a programme beyond --channels.
        let live = try Executables.run(jackvu, ["--channels", "2", "--programme", "a=1-3", "--quiet"], timeout: 30)
        XCTAssertEqual(live.status, 64, live.stderr)
        XCTAssertTrue(live.stderr.contains("channel 3 does not exist (there are 2)"), live.stderr)
    }

    /// What a connection does to the readings (README, "Connections and the readings"): a
    /// −18 dBFS sine connected and disconnected six times with the real `jack_connect` and
    /// `jack_disconnect`, each time at whatever phase the cycle meets: the true-peak maximum
    /// stays the sine's own −18.0 dBTP (a step into or out of it rings up to about +0.9 dB in
    /// the oversampling filter when it counts), and the first update after each connection
    /// is a whole block of the sine (RMS −21.0 dBFS, not a mix of silence and sine), the first
    /// after each disconnection silence. Each step waits for the update that shows it.
    func testConnectionChangesLeaveNoStepInTheMaximaAndTheFirstUpdateIsWhole() throws {
        // (A 1024-frame period: a client that misses a cycle glitches the tone itself, a real
        // step the maximum would rightly count; the xruns are reported with the result.)
        let server = try JackServer(period: 1024, label: "conn")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "997", "--level", "-18"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"), ["--channels", "1", "--send", "truepeak,rms,status"], environment: server.environment)
        defer { vu.stop() }
        try waitForPortsListed(server, ["jackvu:in_1"])
        func rmsReadings() -> [Double] {
            vu.stdoutLines.filter { $0.hasPrefix("/jackvu/ch/1/rms f ") }.compactMap { Double($0.split(separator: " ")[2]) }
        }
        XCTAssertNotNil(vu.waitForStdout(timeout: 20) { _ in rmsReadings().count >= 2 }, "updates before any connection")
        for round in 0..<6 {
            for (command, sounding) in [("jack_connect", true), ("jack_disconnect", false)] {
                let seen = rmsReadings().count
                XCTAssertEqual(try Executables.run(command, ["jacktone:out", "jackvu:in_1"], environment: server.environment).status, 0)
                let shown = vu.waitForStdout(timeout: 20) { _ in rmsReadings().dropFirst(seen).contains { ($0 > -100) == sounding } }
                XCTAssertNotNil(shown, "round \(round): \(command) never showed")
            }
        }
        vu.stop()
        let rms = rmsReadings()
        // Each change of state: the first update after it is already the new steady reading.
        var changes = 0
        for (before, after) in zip(rms, rms.dropFirst()) where (before > -100) != (after > -100) {
            changes += 1
            if after > -100 { XCTAssertEqual(after, -18 - 3.0103, accuracy: 0.1, "the first update after a connection") } else { XCTAssertEqual(after, -120) }
        }
        XCTAssertEqual(changes, 12, "six connections and six disconnections: \(rms)")
        let maxima = vu.stdoutLines.filter { $0.hasPrefix("/jackvu/ch/1/truepeak ff ") }.compactMap { Double($0.split(separator: " ")[3]) }
        let highest = try XCTUnwrap(maxima.max())
        let xruns = vu.stdoutLines.last { $0.hasPrefix("/jackvu/status ") }.map { $0.split(separator: " ")[3] } ?? "?"
        print("true-peak maximum after 12 connection changes: \(fixed(highest, 3)) dBTP (server xruns: \(xruns))")
        XCTAssertEqual(highest, -18, accuracy: 0.05, "the true-peak maximum is the sine's, with no step (server xruns: \(xruns))")
    }
}
