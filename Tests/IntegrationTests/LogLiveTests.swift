#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// The loudness and incident log (`--log`) and its reports, with real parts: a real JACK
/// server and `jacktone`, `kill -9`, a full tmpfs, SQLite's own shell reading the file, an
/// hour of audio through `jackvu analyze --log`, `jackvu report` in its three forms, and the
/// HTML report in headless Chromium (rendered, printed to PDF).
final class LogLiveTests: XCTestCase {
    private func sqlite(_ db: String, _ sql: String) throws -> String {
        let r = try Executables.run("sqlite3", [db, sql])
        XCTAssertEqual(r.status, 0, "\(sql): \(r.stderr)")
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// 32 programmes logging (320 blocks a second) and `kill -9`: the file passes SQLite's
    /// integrity check, has lost at most the last 2 s, and reports the tone's loudness.
    func testKillNineDuringHeavyLoggingLosesAtMostTwoSeconds() throws {
        let dir = try makeTemporaryFolder("kill9")
        defer { removeTemporaryFolder(dir) }
        let db = dir.appendingPathComponent("log.db").path
        let server = try JackServer(sampleRate: 48000, period: 512, label: "kill9")
        let programmes = (1...32).flatMap { ["--programme", "p\($0)=1-2"] }
        let port = freeUDPPort()
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "2", "--quiet", "--target", "ebu-r128", "--log", db, "--listen", "\(port)"] + programmes,
            environment: server.environment)
        defer { vu.stop() }
        try waitForPortsListed(server, ["jackvu:in_2"])
        // EBU Tech 3341's stereo 1 kHz sine at −23 dBFS reads −23 LUFS.
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "1000", "--level", "-23", "--connect", "jackvu:in_[12]$"],
            environment: server.environment)
        defer { tone.stop() }
        // Six seconds of logged blocks (read while jackvu writes: WAL lets readers in).
        let deadline = Date().addingTimeInterval(30)
        var span = 0.0
        while Date() < deadline {
            span = Double((try? sqlite(db, "SELECT max(t) - min(t) FROM blocks WHERE programme = 1")) ?? "") ?? 0
            if span >= 6 { break }
            usleep(200_000)
        }
        XCTAssertGreaterThanOrEqual(span, 6, vu.stderr)
        // The operator's events: a mark, a programme paused and resumed, a reset.
        for message in [["/jackvu/mark", "s", "News at six"], ["/jackvu/pause", "s", "p3"], ["/jackvu/resume", "s", "p3"], ["/jackvu/reset"]] {
            XCTAssertEqual(try Executables.run("oscsend", ["127.0.0.1", "\(port)"] + message).status, 0)
        }
        let wanted = "start||\nmark||News at six\npause|p3|\nresume|p3|\nreset||"
        var events = ""
        let until = Date().addingTimeInterval(10)
        while Date() < until {
            events = (try? sqlite(db, "SELECT e.kind, p.name, e.detail FROM events e LEFT JOIN programmes p ON p.id = e.programme WHERE e.kind IN ('start', 'mark', 'pause', 'resume', 'reset') ORDER BY e.t")) ?? ""
            if events == wanted { break }
            usleep(200_000)
        }
        XCTAssertEqual(events, wanted, "the events, committed within a second or so")
        // A commit has just happened: kill 2.5 s later, so that a writer committing less often
        // than every 2 s would lose more than 2 s (a commit every 5 s: caught).
        let seen = Date()
        while Date().timeIntervalSince(seen) < 2.5 { usleep(50_000) }
        let killed = Date().timeIntervalSince1970
        kill(vu.process.processIdentifier, SIGKILL)
        XCTAssertTrue(vu.waitForExit(timeout: 5))

        XCTAssertEqual(try sqlite(db, "PRAGMA integrity_check"), "ok")
        let last = try XCTUnwrap(Double(try sqlite(db, "SELECT max(t) FROM blocks")))
        print("kill -9: the last logged block \(String(format: "%.2f", killed - last)) s before the kill")
        XCTAssertGreaterThanOrEqual(last, killed - 2, "lost more than 2 s")
        let counts = try sqlite(db, "SELECT count(DISTINCT programme), min(n), max(n) FROM (SELECT programme, count(*) AS n FROM blocks GROUP BY programme)")
        let fields = counts.split(separator: "|").compactMap { Int($0) }
        XCTAssertEqual(fields.first, 32)
        XCTAssertLessThanOrEqual((fields.last ?? 0) - (fields.dropFirst().first ?? 0), 10, "every programme's blocks, a second's transaction apart at most: \(counts)")

        // The report of the crashed log: the tone's −23 LUFS, within R 128's tolerance.
        let report = try Executables.run(try Executables.product("jackvu"), ["report", db, "--programme", "p7", "--type", "json"])
        XCTAssertEqual(report.status, 0, report.stderr)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        let row = try XCTUnwrap((json["results"] as? [[String: Any]])?.first)
        XCTAssertEqual(row["programme"] as? String, "p7")
        XCTAssertEqual(row["integrated_lufs"] as? Double ?? 0, -23, accuracy: 0.2, "\(row)")
        XCTAssertEqual(row["result"] as? String, "pass", "\(row)")
        XCTAssertEqual(row["max_truepeak_dbtp"] as? Double ?? 0, -23, accuracy: 0.3, "the blocks carry the true peak")
    }

    /// The audio after the last update reaches the log when jackvu stops: its blocks, and its
    /// peaks with the last block. With an update every 1.37 s (a 65,536-sample block without
    /// overlap), the tone turns 17 dB louder just after an update and jackvu is stopped 0.4 s
    /// later, before the next: the log ends within a few blocks of the stop and its true peak
    /// is the loud tone's (before, the log ended at the last update and kept −20 dBTP). Twice:
    /// the second time the tone is disconnected 0.1 s before the stop, as a close can do in its
    /// last cycles — the connection change starts the analysis block again, and the loud
    /// samples it emptied must still give the log its sample peak (once they read −20 dBFS).
    /// A third time jackvu itself is stopped for 30 ms in the loud tone (SIGSTOP), as a loaded
    /// machine can hold up its callback: the server runs on without it (an xrun), the periods
    /// it missed never reach it, and the step where the audio joins again (a sine's true peak
    /// read −2.2 dBTP across it) is left out of the maxima — and the log's last blocks, which
    /// no update came after, carry the fault (the xrun, or a connection change JACK's recovery
    /// shows jackvu after it). An xrun elsewhere in the graph (another client
    /// late) can put a click in the audio that jackvu cannot see: the last blocks then carry
    /// the fault, and the report must name it for a true peak above the tone's.
    func testTheAudioAfterTheLastUpdateReachesTheLogAtTheStop() throws {
        let server = try JackServer(sampleRate: 48000, period: 256, label: "laststop")
        for (disconnect, stall) in [(false, false), (true, false), (false, true)] {
            let dir = try makeTemporaryFolder("laststop")
            defer { removeTemporaryFolder(dir) }
            let db = dir.appendingPathComponent("log.db").path
            let vu = try BackgroundProcess(
                try Executables.product("jackvu"),
                ["--channels", "1", "--format", "json", "--fft-size", "65536", "--overlap", "0", "--log", db,
                 "--programme", "main=1", "--programme", "copy=1"],
                environment: server.environment)
            defer { vu.stop() }
            try waitForPortsListed(server, ["jackvu:in_1"])
            let tone = try BackgroundProcess(
                try Executables.product("jacktone"), ["--freq", "997", "--level", "-20", "--ramp", "5", "--connect", "jackvu:in_1"],
                environment: server.environment, stdin: true)
            defer { tone.stop() }
            // Two updates (the second 1.37 s after the first), then the next one's start.
            var seen = 0, updates = 0
            let deadline = Date().addingTimeInterval(20)
            while updates < 3 && Date() < deadline {
                updates += vu.newLines(after: &seen).count
                usleep(5_000)
            }
            XCTAssertEqual(updates, 3, "jackvu's updates: \(vu.stderr)")
            tone.send("level -3")
            if stall {
                usleep(200_000)
                kill(vu.process.processIdentifier, SIGSTOP)
                usleep(30_000)
                kill(vu.process.processIdentifier, SIGCONT)
                usleep(200_000)
            } else {
                usleep(400_000)
            }
            if disconnect {
                XCTAssertEqual(try Executables.run("jack_disconnect", ["jacktone:out", "jackvu:in_1"], environment: server.environment).status, 0)
                usleep(100_000)
            }
            let stopped = Date().timeIntervalSince1970
            XCTAssertEqual(vu.stop(), 0, vu.stderr)
            XCTAssertEqual(vu.newLines(after: &seen).count, 0, "an update came after the level change: the test's timing failed")
            tone.stop()

            // Both programmes (the same channel: its peaks taken once, given to each).
            let rows = try sqlite(db, "SELECT max(b.t), max(b.true_peak_dbtp), max(b.sample_peak_dbfs), (SELECT max(t) FROM events WHERE kind = 'stop') FROM blocks b GROUP BY b.programme")
            // The faults the last blocks carry (the audio after the last update: 0.4 s, four
            // blocks): an xrun, or a connection change after it (JACK can hand a late client's
            // input a new buffer as it recovers: a CI run's stalled pass showed that).
            let tailFaults = try sqlite(db, "SELECT count(*), group_concat(DISTINCT cause) FROM faults f WHERE t > (SELECT max(t) FROM blocks) - 0.45")
            let tailFaulted = !tailFaults.hasPrefix("0|") && !tailFaults.isEmpty
            let programmes = rows.split(separator: "\n")
            XCTAssertEqual(programmes.count, 2, rows)
            let report = try Executables.run(try Executables.product("jackvu"), ["report", db, "--type", "json"])
            XCTAssertEqual(report.status, 0, report.stderr)
            let results = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])?["results"] as? [[String: Any]])
            XCTAssertEqual(results.compactMap { $0["programme"] as? String }.sorted(), ["copy", "main"])
            let truePeakFaulted = results.allSatisfy { row in
                ((row["faulted_maxima"] as? [[String: Any]]) ?? []).contains { $0["reading"] as? String == "max_truepeak_dbtp" }
            }
            for programme in programmes {
                let f = programme.split(separator: "|").map { Double($0) }
                XCTAssertEqual(f.count, 4, rows)
                let lastBlock = try XCTUnwrap(f[0]), truePeak = try XCTUnwrap(f[1]), samplePeak = try XCTUnwrap(f[2]), stop = try XCTUnwrap(f[3])
                print("\(disconnect ? "disconnected first: " : stall ? "stalled 30 ms: " : "")the log's last block \(String(format: "%.2f", stop - lastBlock)) s before its stop event (\(String(format: "%.2f", stopped - lastBlock)) s before the SIGTERM); true peak \(truePeak) dBTP, sample peak \(samplePeak) dBFS; the last blocks' faults: \(tailFaults)")
                XCTAssertLessThan(stop - lastBlock, 0.35, "the blocks after the last update")
                if !stall && tailFaulted && truePeak > -2.9 {
                    // A fault in the last blocks (another client's xrun): a click jackvu could not see, named.
                    XCTAssertTrue(truePeakFaulted, "a true peak above the tone's with an xrun in the last blocks, not named: \(results)")
                } else {
                    XCTAssertEqual(truePeak, -3, accuracy: 0.1, "the loud tone's true peak, after the last update (no silence added at the stop: its step would overshoot; no step where the audio joins after missed cycles)")
                }
                XCTAssertGreaterThan(truePeak, -3.1, "the loud tone's true peak reached the log")
                XCTAssertEqual(samplePeak, -3, accuracy: 0.3, "the loud tone's sample peak, after the last update")
            }
            if stall { XCTAssertTrue(tailFaulted, "the cycles jackvu missed, in the last blocks: \(tailFaults) \(vu.stderr)") }
            for row in results { XCTAssertEqual(row["max_truepeak_dbtp"] as? Double ?? 0, -3, accuracy: 0.3, "\(row)") }
        }
    }

    /// A log that cannot be opened (under /proc) and one on a disk that fills (a 192 KB tmpfs):
    /// each said once, on one line, and the metering goes on.
    func testAnUnwritableOrFullLogIsSaidOnceAndMeteringGoesOn() throws {
        let dir = try makeTemporaryFolder("full")
        defer { removeTemporaryFolder(dir) }
        let mount = try Executables.run("mount", ["-t", "tmpfs", "-o", "size=192k", "tmpfs", dir.path])
        guard mount.status == 0 else { throw skipOrFail("cannot mount a small tmpfs (needs root): \(mount.stderr)") }
        defer { _ = try? Executables.run("umount", ["-l", dir.path]) }
        let server = try JackServer(sampleRate: 48000, period: 1024, label: "logfull")
        let programmes = (1...32).flatMap { ["--programme", "p\($0)=1"] }
        var runs: [(BackgroundProcess, String)] = []
        defer { for (vu, _) in runs { vu.stop() } }
        for (name, path) in [("unwritable", "/proc/jackvu-test-log.db"), ("full", dir.appendingPathComponent("log.db").path)] {
            let vu = try BackgroundProcess(
                try Executables.product("jackvu"),
                ["--name", name, "--channels", "1", "--format", "json", "--rate", "5", "--send", "loudness,status", "--log", path] + programmes,
                environment: server.environment, label: name)
            runs.append((vu, name))
        }
        try waitForPorts(server, ["unwritable:in_1", "full:in_1"], process: runs[1].0)
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--level", "-20", "--connect", "unwritable:in_1$", "--connect", "full:in_1$"],
            environment: server.environment)
        defer { tone.stop() }
        for (vu, name) in runs {
            let said = "cannot \(name == "full" ? "write" : "open")"
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline && !vu.stderr.contains(said) { usleep(100_000) }
            XCTAssertTrue(vu.stderr.contains(said), "\(name): \(vu.stderr)")
            // Three more seconds of updates, and still one line.
            let before = vu.stdoutLines.count
            let until = Date().addingTimeInterval(3)
            while Date() < until { usleep(100_000) }
            XCTAssertGreaterThanOrEqual(vu.stdoutLines.count - before, 10, "\(name): the metering went on")
            let lines = vu.stderr.split(separator: "\n").filter { $0.contains("--log") }
            XCTAssertEqual(lines.count, 1, "\(name): said once: \(vu.stderr)")
            XCTAssertTrue(vu.isRunning, "\(name): \(vu.stderr)")
            print("\(name): \(lines.first ?? "")")
        }
        // Room again: the rows that waited are written, nothing lost.
        let full = runs[1].0
        XCTAssertEqual(try Executables.run("mount", ["-o", "remount,size=8m", dir.path]).status, 0)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline && !full.stderr.contains("writing again") { usleep(100_000) }
        XCTAssertTrue(full.stderr.contains("writing again (0 rows lost in all)"), full.stderr)
        for (vu, name) in runs { XCTAssertEqual(vu.stop(signal: SIGTERM), 0, "\(name): \(vu.stderr)") }
        let db = dir.appendingPathComponent("log.db").path
        let kept = try sqlite(db, "SELECT count(*), round((max(t) - min(t)) * 10) FROM blocks WHERE programme = 5").split(separator: "|").compactMap { Double($0) }
        XCTAssertEqual(kept.count, 2)
        XCTAssertGreaterThanOrEqual(kept.first ?? 0, (kept.last ?? 0) - 1, "a block every 100 ms from the first to the last: \(kept)")
        XCTAssertGreaterThan(kept.first ?? 0, 50)
    }

    /// An hour of a known signal logged fast (`jackvu analyze --log`), then `jackvu report`
    /// of that hour: the same integrated loudness and range as the analysis, within 0.1 LU;
    /// the report's CSV and JSON parse; its HTML (and `analyze --report`'s) renders in
    /// Chromium with nothing on the console and prints to PDF.
    func testAnHourLoggedThenReportedAgreesWithTheAnalysis() throws {
        let dir = try makeTemporaryFolder("hour")
        defer { removeTemporaryFolder(dir) }
        let audio = dir.appendingPathComponent("hour.flac").path
        let db = dir.appendingPathComponent("hour.db").path
        let fileReport = dir.appendingPathComponent("file.html").path
        // A 997 Hz tone whose level swings by 20 dB over 50 s: a loudness range to measure.
        let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", audio, "synth", "3600", "sine", "997",
                                               "tremolo", "0.02", "80", "vol", "0.3"], timeout: 300)
        XCTAssertEqual(made.status, 0, made.stderr)
        let jackvu = try Executables.product("jackvu")
        let analysed = try Executables.run(
            jackvu, ["--log", db, "analyze", "--log-start", "2026-11-25T06:00:00Z", "--target", "ebu-r128", "--report", fileReport, "--format", "json", audio],
            timeout: 900)
        XCTAssertEqual(analysed.status, 0, analysed.stderr)
        let summary = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(analysed.stdout.utf8)) as? [[String: Any]])?.first)
        let integrated = try XCTUnwrap(summary["integrated_lufs"] as? Double)
        let range = try XCTUnwrap(summary["loudness_range_lu"] as? Double)
        XCTAssertEqual(summary["duration_s"] as? Double ?? 0, 3600, accuracy: 0.01)

        let forms = ["json", "csv", "html"].map { dir.appendingPathComponent("report.\($0)").path }
        for path in forms {
            let r = try Executables.run(jackvu, ["report", db, "--from", "2026-11-25T06:00:00Z", "--to", "2026-11-25T07:00:00Z", "--segments", "every:30", "-o", path], timeout: 120)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: forms[0]))) as? [String: Any])
        let rows = try XCTUnwrap(json["results"] as? [[String: Any]])
        XCTAssertEqual(rows.map { $0["segment"] as? String }, ["2026-11-25T06:00:00Z", "2026-11-25T06:30:00Z"])
        // The whole hour.
        let whole = try Executables.run(jackvu, ["report", db, "--type", "json"], timeout: 120)
        let hour = try XCTUnwrap(((try JSONSerialization.jsonObject(with: Data(whole.stdout.utf8)) as? [String: Any])?["results"] as? [[String: Any]])?.first)
        print("analyze: \(integrated) LUFS, LRA \(range) LU; report of the log: \(hour["integrated_lufs"] ?? "-") LUFS, LRA \(hour["range_lu"] ?? "-") LU")
        XCTAssertEqual(hour["integrated_lufs"] as? Double ?? 0, integrated, accuracy: 0.1)
        XCTAssertEqual(hour["range_lu"] as? Double ?? 0, range, accuracy: 0.1)
        XCTAssertGreaterThan(range, 3, "the signal has a range to measure")
        XCTAssertEqual(hour["logged_s"] as? Double ?? 0, 3600, accuracy: 0.2)
        XCTAssertEqual(hour["result"] as? String, abs(integrated + 23) <= 0.5 ? "pass" : "fail")
        // A schedule of two programmes in that hour: a row each, the second's time half the first's.
        let schedule = dir.appendingPathComponent("day.csv").path
        try "name,start,end\nMorning show,2026-11-25T06:00:00Z,2026-11-25T06:40:00Z\nNews,2026-11-25 06:40:00,2026-11-25 07:00:00\n"
            .write(toFile: schedule, atomically: true, encoding: .utf8)
        let scheduled = try Executables.run(jackvu, ["report", db, "--schedule", schedule, "--type", "json"], timeout: 120)
        XCTAssertEqual(scheduled.status, 0, scheduled.stderr)
        let slots = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(scheduled.stdout.utf8)) as? [String: Any])?["results"] as? [[String: Any]])
        XCTAssertEqual(slots.map { $0["segment"] as? String }, ["Morning show", "News"])
        XCTAssertEqual(slots.map { $0["logged_s"] as? Double ?? 0 }, [2400, 1200])
        // The CSV: a header and a line per segment, every line with the header's fields.
        let csv = try String(contentsOfFile: forms[1], encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(csv.count, 3)
        for line in csv { XCTAssertEqual(line.split(separator: ",", omittingEmptySubsequences: false).count, csv[0].split(separator: ",").count) }

        // Both HTML reports in a real browser: nothing on the console; a screenshot to look
        // at; printed to PDF.
        let shots = ProcessInfo.processInfo.environment["TMPDIR"].map { $0 + "/jackvu-screenshots" } ?? "/tmp/jackvu-screenshots"
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let browser = try HeadlessChromium(folder: dir.appendingPathComponent("chromium").path)
        defer { browser.stop() }
        for (name, html) in [("log-report", forms[2]), ("file-report", fileReport)] {
            let page = try browser.open("file://" + html, width: 1280, height: 1000)
            XCTAssertNotNil(try page.wait(timeout: 20, until: "document.readyState === 'complete' && document.querySelectorAll('svg path').length > 0"),
                            "\(name): no graph: \(page.messages)")
            XCTAssertEqual(page.messages, [], "\(name): the console")
            try page.screenshot(to: "\(shots)/\(name).png")
            page.close()
            let pdf = dir.appendingPathComponent("\(name).pdf").path
            let printed = try Executables.run(
                try Executables.resolve("chromium"),
                ["--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(dir.appendingPathComponent("print-\(name)").path)",
                 "--print-to-pdf=\(pdf)", "--no-pdf-header-footer", "file://" + html], timeout: 120)
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: pdf))) ?? Data()
            XCTAssertTrue(bytes.starts(with: Array("%PDF".utf8)) && bytes.count > 5000, "\(name): no PDF (\(bytes.count) bytes): \(printed.stderr.suffix(500))")
        }
    }
}
