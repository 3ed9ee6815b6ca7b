#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// Coverage-guided fuzzing as part of the tests: jackvu-fuzz (built by Tools/test.sh with
/// `-sanitize=fuzzer,address` into .build-fuzz) runs a minute on each untrusted input —
/// audio files for `jackvu analyze` and control packets for `--listen`; command lines half a
/// minute — from the committed
/// seed corpus (Tests/Fuzz/corpus, copied: the run adds to the copy), with AddressSanitizer.
/// Any crash, sanitizer report, timeout (10 s per input) or memory blow-up (2 GB) fails the
/// test and leaves the input that caused it in the log. Its first find, in the seeds
/// themselves: the control decoder read each 4-byte OSC argument as liblo's 16-byte union.
final class FuzzTests: XCTestCase {
    private func fuzzer() throws -> String {
        guard let dir = ProcessInfo.processInfo.environment["JACKVU_FUZZ_BIN_DIR"] else {
            throw skipOrFail("JACKVU_FUZZ_BIN_DIR is not set: run the tests with Tools/test.sh, which builds the fuzzer")
        }
        let path = dir + "/jackvu-fuzz"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureError("\(path) is missing: Tools/test.sh builds it into .build-fuzz")
        }
        return path
    }

    private func fuzz(_ target: String, seconds: Int, minimumCoverage: Int) throws {
        let binary = try fuzzer()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let seeds = root.appendingPathComponent("Fuzz/corpus/\(target)").path
        let work = NSTemporaryDirectory() + "jackvu-fuzz-\(target)-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: work + "/corpus", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let files = try FileManager.default.contentsOfDirectory(atPath: seeds)
        XCTAssertGreaterThan(files.count, 5, "seed corpus of \(target)")
        for f in files { try FileManager.default.copyItem(atPath: seeds + "/" + f, toPath: work + "/corpus/" + f) }
        let r = try Executables.run(
            binary,
            ["-max_total_time=\(seconds)", "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1",
             "-artifact_prefix=\(work)/", work + "/corpus"],
            environment: ["JACKVU_FUZZ_TARGET": target, "TMPDIR": work, "ASAN_OPTIONS": "detect_leaks=0"],
            timeout: Double(seconds) + 120)
        let lines = r.stderr.split(separator: "\n")
        let seed = lines.first { $0.contains("INFO: Seed:") } ?? "no seed line"
        let done = lines.last { $0.contains("DONE") && $0.contains("cov: ") } ?? ""
        func stat(_ name: String) -> Int? {
            guard let range = done.range(of: name + ": ") else { return nil }
            return Int(done[range.upperBound...].prefix { $0.isNumber })
        }
        print("FuzzTests \(target): \(seed); \(done.split(whereSeparator: { $0 == " " || $0 == "\t" }).filter { !$0.isEmpty }.joined(separator: " "))")
        let crashes = (try? FileManager.default.contentsOfDirectory(atPath: work))?.filter { $0.hasPrefix("crash-") || $0.hasPrefix("timeout-") || $0.hasPrefix("oom-") } ?? []
        XCTAssertEqual(r.status, 0, "jackvu-fuzz \(target) found a failure:\n\(r.stderr.suffix(6000))")
        XCTAssertEqual(crashes, [], "inputs that failed: \(crashes)")
        XCTAssertGreaterThanOrEqual(stat("cov") ?? 0, minimumCoverage, "coverage too low: did it run? \(done)")
        XCTAssertGreaterThan(stat("exec/s") ?? 0, 0)
    }

    func testAudioFiles() throws { try fuzz("wav", seconds: 60, minimumCoverage: 200) }

    func testControlPackets() throws { try fuzz("control", seconds: 60, minimumCoverage: 300) }

    /// Command lines: argument-parser's parse and each command's configuration (every option's
    /// value). About one input a second in the debug build (argument-parser builds the whole
    /// option set for each parse), so half a minute is the seeds and a few dozen mutations under
    /// AddressSanitizer; the seeds alone reach about 6,400 (a wrong target name would fuzz the
    /// wav entry, far below).
    func testCommandLines() throws { try fuzz("options", seconds: 30, minimumCoverage: 5000) }
}
