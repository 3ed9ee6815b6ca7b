#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Outputs
import TestSupport
import XCTest

/// The log is jackvu's alone and keeps true time: `--log` on the real binary refuses what is
/// not a jackvu log (each with one line and exit 73, before JACK is asked), a second writer
/// (75), and a wall clock stepped under a running jackvu reaches neither its blocks nor a
/// report made after a restart.
final class LogSafetyTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "jackvu-logsafety-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: folder) }

    private func sqlite(_ db: String, _ sql: String) throws -> String {
        let r = try Executables.run("sqlite3", [db, sql])
        XCTAssertEqual(r.status, 0, "\(sql): \(r.stderr)")
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Each refusal: a symbolic link (dangling: its target is not created; to a real log),
    /// /dev/null (no /dev/null-journal appears), a directory, a FIFO, another application's
    /// SQLite database (it gains no table), a text file. No server runs: the refusal comes first.
    func testEveryRefusalIsOneLineBeforeAnythingStarts() throws {
        let real = folder + "/real.db"
        XCTAssertEqual(try sqlite(real, "CREATE TABLE users (name TEXT); SELECT count(*) FROM sqlite_master"), "1")
        try "hello\n".write(toFile: folder + "/text.db", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: folder + "/dir.db", withIntermediateDirectories: false)
        XCTAssertEqual(mkfifo(folder + "/fifo.db", 0o600), 0)
        XCTAssertEqual(symlink(folder + "/nowhere.db", folder + "/dangling.db"), 0)
        XCTAssertEqual(symlink(real, folder + "/link.db"), 0)
        let journalBefore = FileManager.default.fileExists(atPath: "/dev/null-journal")
        let cases: [(String, String)] = [
            ("dangling.db", "is a symbolic link"), ("link.db", "is a symbolic link"), ("/dev/null", "is a device"),
            ("dir.db", "is a directory"), ("fifo.db", "is a FIFO"), ("real.db", "is an SQLite database of another application (tables users)"),
            ("text.db", "is not an SQLite database"),
        ]
        for (name, says) in cases {
            let path = name.hasPrefix("/") ? name : "\(folder)/\(name)"
            let r = try Executables.run(try Executables.product("jackvu"), ["--log", path, "--channels", "1"],
                                        environment: ["JACK_DEFAULT_SERVER": "jackvu-test-nonexistent-\(getpid())", "JACK_NO_START_SERVER": "1"])
            XCTAssertEqual(r.status, 73, "\(name): \(r.stderr)")
            XCTAssertEqual(r.stderr, "jackvu: --log \(path): " + r.stderr.dropFirst("jackvu: --log \(path): ".count), name)
            XCTAssertTrue(r.stderr.contains(says) && r.stderr.split(separator: "\n").count == 1, "\(name): \(r.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/nowhere.db"), "a dangling link's target was created")
        XCTAssertEqual(try sqlite(real, "SELECT group_concat(name) FROM sqlite_master"), "users", "the other database gained tables")
        XCTAssertEqual(FileManager.default.fileExists(atPath: "/dev/null-journal"), journalBefore, "/dev/null-journal")
    }

    /// A wall clock stepped an hour forward for 2 s and back (an LD_PRELOAD shim adds 3600 s to
    /// CLOCK_REALTIME while a file exists) under a logging jackvu, then a restart with the
    /// clock right: the steps are said and logged as events, no block is stamped in the
    /// future, and a report of the last minute covers every block. While the first jackvu
    /// runs, a second one on the same log is refused (75), as is `analyze --log`.
    func testAClockStepNeverReachesTheLogAndASecondWriterIsRefused() throws {
        let source = folder + "/step.c", shim = folder + "/step.so", step = folder + "/step"
        try """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <stdlib.h>
        #include <time.h>
        #include <unistd.h>
        static int (*real_clock_gettime)(clockid_t, struct timespec *);
        int clock_gettime(clockid_t id, struct timespec *ts) {
            if (!real_clock_gettime) real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
            int r = real_clock_gettime(id, ts);
            const char *path = getenv("JACKVU_TEST_CLOCK_STEP");
            if (r == 0 && id == CLOCK_REALTIME && path && access(path, F_OK) == 0) ts->tv_sec += 3600;
            return r;
        }
        """.write(toFile: source, atomically: true, encoding: .utf8)
        let cc = try Executables.run("cc", ["-shared", "-fPIC", "-O2", "-o", shim, source, "-ldl"])
        XCTAssertEqual(cc.status, 0, cc.stderr)
        let server = try JackServer(label: "logclock")
        defer { server.stop() }
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "1000", "--level", "-20"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let log = folder + "/log.db"
        let arguments = ["--channels", "1", "--connect", "jacktone:out", "--rate", "5", "--send", "status", "--log", log]
        var environment = server.environment
        environment["LD_PRELOAD"] = shim
        environment["JACKVU_TEST_CLOCK_STEP"] = step
        let first = try BackgroundProcess(try Executables.product("jackvu"), arguments, environment: environment)
        defer { first.stop() }
        // (sqlite3 would create an empty database where none is yet: only once jackvu's is there.)
        func blocks() -> Int {
            guard FileManager.default.fileExists(atPath: log),
                  let r = try? Executables.run("sqlite3", [log, "SELECT count(*) FROM blocks"]), r.status == 0 else { return 0 }
            return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        XCTAssertNotNil(first.waitForStdout(timeout: 30) { _ in blocks() >= 20 }, first.stderr)

        // A second writer, live or from files, is refused while the first holds the log.
        let second = try Executables.run(try Executables.product("jackvu"), arguments + ["--name", "second"], environment: server.environment)
        XCTAssertEqual(second.status, 75, second.stderr)
        XCTAssertEqual(second.stderr, "jackvu: --log \(log): is in use by another jackvu (one writer per log; give each its own file)\n")
        XCTAssertEqual(try Executables.run("sox", ["-n", "-r", "48000", "-c", "1", folder + "/t.wav", "synth", "1", "sine", "1000"]).status, 0)
        let files = try Executables.run(try Executables.product("jackvu"), ["--log", log, "analyze", folder + "/t.wav"])
        XCTAssertEqual(files.status, 75, files.stderr)

        // The step: an hour forward for 2 s, then back.
        _ = FileManager.default.createFile(atPath: step, contents: nil)
        usleep(2_000_000)
        try FileManager.default.removeItem(atPath: step)
        usleep(2_000_000)
        XCTAssertEqual(first.stop(), 0, first.stderr)
        let said = first.stderr.split(separator: "\n")
        XCTAssertEqual(said.filter { $0.contains("the wall clock stepped forward by 3600.0 s") }.count, 1, first.stderr)
        XCTAssertEqual(said.filter { $0.contains("the wall clock stepped back by 3600.0 s") }.count, 1, first.stderr)

        // A restart with the clock right goes on from the true time.
        let again = try BackgroundProcess(try Executables.product("jackvu"), arguments, environment: server.environment)
        defer { again.stop() }
        let before = blocks()
        XCTAssertNotNil(again.waitForStdout(timeout: 30) { _ in blocks() >= before + 15 }, again.stderr)
        XCTAssertEqual(again.stop(), 0, again.stderr)
        let now = Date().timeIntervalSince1970
        let latest = try XCTUnwrap(Double(try sqlite(log, "SELECT max(t) FROM blocks")))
        XCTAssertLessThan(latest, now + 1, "a block stamped in the future")
        let steps = try sqlite(log, "SELECT round(value) FROM events WHERE kind = 'clock_step' ORDER BY rowid")
        XCTAssertEqual(steps.split(separator: "\n"), ["3600.0", "-3600.0"])
        // The report of the last two minutes holds every block logged (100 ms each).
        let count = blocks()
        let report = try Executables.run(
            try Executables.product("jackvu"), ["report", log, "--from", String(Int(now - 120)), "--to", String(Int(now + 1)), "--type", "json"])
        XCTAssertEqual(report.status, 0, report.stderr)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        let logged = try XCTUnwrap(((json["results"] as? [[String: Any]])?.first)?["logged_s"] as? Double)
        XCTAssertEqual(logged, Double(count) / 10, accuracy: 0.05, "the report's duration against the blocks logged")
        print("log clock: \(count) blocks, the report of the last 2 minutes \(logged) s")
        XCTAssertEqual(try sqlite(log, "PRAGMA application_id"), "1785427573", "jackvu's mark")
    }
}
