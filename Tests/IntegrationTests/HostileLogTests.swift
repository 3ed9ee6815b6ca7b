#if canImport(Glibc)
import Glibc
#endif
import DSP
import Foundation
import LoudnessLog
import Outputs
import TestSupport
import XCTest

/// `jackvu report` (the real binary) on logs that a careless tool or an attacker has spoiled
/// with SQLite's own shell: each gives a report or one clear line with a documented exit
/// status — never a signal, a hang or unbounded memory (each run's own peak, by wait4).
final class HostileLogTests: XCTestCase {
    /// A day's time (2027-01-15) and two programmes of 60 s at −23 LUFS with an alarm and a mark.
    private static let t0 = 1_800_000_000.0

    private func baseLog(_ path: String) {
        let target = LoudnessTarget.profile("ebu-r128")
        let writer = LogWriter(path: path, programmes: [LoggedProgramme(name: "news", channels: [0, 1], target: target),
                                                         LoggedProgramme(name: "music", channels: [2, 3], target: target)])
        writer.start()
        let power = pow(10, (-23 + 0.691) / 10)
        for k in 1...600 {
            for p in 0..<2 { writer.block(programme: p, t: Self.t0 + Double(k) / 10, index: k, power: power, truePeak: -6, samplePeak: -7) }
        }
        writer.alarm(AlarmEvent(sequence: 1, kind: .silence, subject: "programme/news", programme: 0, raised: true, value: -80, unixTime: Self.t0 + 10, audioTime: 10))
        writer.event("mark", t: Self.t0 + 30, detail: "break")
        writer.stop()
    }

    func testSpoiledLogsGiveAReportOrOneClearLineWithBoundedMemory() throws {
        let folder = NSTemporaryDirectory() + "jackvu-hostile-log-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let base = folder + "/base.db"
        baseLog(base)
        let jackvu = try Executables.product("jackvu")
        let t0 = Self.t0
        // What each spoiled copy gets: the SQL, the report's arguments, the exit status and what
        // its one line says (nil: a report whose JSON parses and says this).
        let cases: [(name: String, sql: String, extra: [String], status: Int32, says: String)] = [
            ("version", "UPDATE meta SET value = '1e999' WHERE key = 'schema_version'", [], 66, "has log schema '1e999'"),
            ("times", """
                INSERT INTO blocks VALUES (1, 1e300, 5, 1, NULL, NULL);
                INSERT INTO blocks VALUES (1, 9e999, 6, 1, NULL, NULL);
                INSERT INTO blocks VALUES (1, 'soon', 7, 1, NULL, NULL);
                INSERT INTO blocks VALUES (1, -5, 8, 1, NULL, NULL);
                INSERT INTO alarms VALUES (1e300, 'clip', 'ch/1', 1, 'raised', 1e300, 'dBTP');
                INSERT INTO alarms VALUES (\(t0 + 20), 'clip', 'ch/1', 1, 'raised', 1e300, 'dBTP');
                INSERT INTO events VALUES (9e999, 'mark', NULL, 'x', 1e300);
                """, [], 0, "\"logged_s\": 60.0"),
            ("target", "UPDATE programmes SET target_lufs = 1e300 WHERE name = 'news'", [], 66, "programme 'news' has a target out of range"),
            ("target-given", "UPDATE programmes SET target_lufs = 1e300 WHERE name = 'news'", ["--target", "ebu-r128"], 0, "\"result\": \"pass\""),
            ("recursive-view", """
                ALTER TABLE blocks RENAME TO b0;
                CREATE VIEW blocks AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
                  SELECT 1 AS programme, n AS t, n AS idx, 1.0 AS power, NULL AS true_peak_dbtp, NULL AS sample_peak_dbfs FROM r;
                """, [], 66, "it has a view 'blocks'"),
            ("huge-name-view", """
                ALTER TABLE programmes RENAME TO p0;
                CREATE VIEW programmes AS SELECT id, replace(hex(zeroblob(250000000)), '0', 'x') AS name, channels, profile,
                  target_lufs, tolerance_lu, max_true_peak_dbtp, max_short_term_lufs FROM p0;
                """, [], 66, "it has a view 'programmes'"),
            ("huge-name", "UPDATE programmes SET name = printf('%.*c', 3000000, 'x') WHERE name = 'news'", [], 66, "too big"),
            ("trigger", "CREATE TRIGGER t AFTER INSERT ON events BEGIN SELECT 1; END", [], 66, "it has a trigger 't'"),
            ("span", """
                INSERT INTO blocks VALUES (1, 1, 1, 1, NULL, NULL);
                INSERT INTO blocks VALUES (1, 9.9e9, 2, 1, NULL, NULL);
                INSERT INTO blocks VALUES (1, 1e12, 3, 1, NULL, NULL);
                """, ["--segments", "every:1"], 64, "segments (at most 100000)"),
            ("millions", """
                INSERT INTO events SELECT \(t0) + n * 1e-5, 'xruns', NULL, NULL, 1
                  FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT 3000000) SELECT n FROM r);
                INSERT INTO alarms SELECT \(t0) + n * 1e-4, 'clip', 'ch/1', 1, 'raised', -0.5, 'dBTP'
                  FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT 200000) SELECT n FROM r);
                """, [], 0, "\"incidents_omitted\": 3190002"),
        ]
        var peaks: [String: Int] = [:]
        let clean = try runMeasuringMemory(jackvu, ["report", base, "--type", "json"])
        XCTAssertEqual(clean.status, 0, clean.stderr)
        peaks["clean"] = clean.peakKiB
        for c in cases {
            let path = "\(folder)/\(c.name).db"
            try FileManager.default.copyItem(atPath: base, toPath: path)
            let spoil = try Executables.run("sqlite3", [path, c.sql], timeout: 120)
            XCTAssertEqual(spoil.status, 0, "\(c.name): sqlite3: \(spoil.stderr)")
            let started = Date()
            let r = try runMeasuringMemory(jackvu, ["report", path, "--type", "json"] + c.extra, timeout: 60)
            let seconds = Date().timeIntervalSince(started)
            peaks[c.name] = r.peakKiB
            print("hostile log \(c.name): status \(r.status), \(fixed(seconds, 2)) s, peak \(r.peakKiB / 1024) MiB")
            XCTAssertEqual(r.status, c.status, "\(c.name): \(r.stderr.suffix(500))")
            if c.status == 0 {
                XCTAssertTrue(r.stdout.contains(c.says), "\(c.name): \(r.stdout.prefix(1500))")
                XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)), c.name)
                XCTAssertEqual(r.stderr, "", c.name)
            } else {
                XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, "\(c.name): one line: \(r.stderr.prefix(1000))")
                XCTAssertTrue(r.stderr.hasPrefix("jackvu: ") && r.stderr.contains(c.says), "\(c.name): \(r.stderr.prefix(1000))")
            }
            // Bounded: a spoiled log costs no more than a few times a clean one's report.
            XCTAssertLessThan(r.peakKiB, max(4 * clean.peakKiB, 200 * 1024), "\(c.name): peak \(r.peakKiB) KiB")
        }
        print("hostile logs: peak memory (KiB) \(peaks.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
    }
}
