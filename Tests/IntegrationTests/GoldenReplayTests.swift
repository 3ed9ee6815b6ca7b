#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// A golden replay: a short committed input (`Tests/Golden/input.flac`: 1 s of stereo tones,
/// 997 Hz on the left and 440 then 660 Hz on the right, stepping up 9.5 dB half-way) through
/// `jackvu analyze --stream`, as text and as JSON lines, and through `jackvu analyze`'s summary
/// (text and JSON; the default programme, then two programmes of their own with targets),
/// compared byte for byte with the output committed beside it — so that a reshaping of the analysis or the outputs that changes any
/// reading, name, unit, order or digit is seen. `analyze` plans its FFTs reproducibly
/// (`RealFFT.reproducible`), so the same binary prints the same bytes in every run.
///
/// After a change that is meant to change the output: `JACKVU_GOLDEN_UPDATE=1 swift test
/// --filter GoldenReplayTests` writes the new expected files; review their diff and commit it.
final class GoldenReplayTests: XCTestCase {
    private var folder: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Golden").path
    }

    func testAnalyzeStreamIsByteForByteTheCommittedOutput() throws {
        try compare([("stream.txt", ["--stream", "--format", "text"]), ("stream.jsonl", ["--stream", "--format", "json"])])
    }

    func testAnalyzeSummaryIsByteForByteTheCommittedOutput() throws {
        let programmes = ["--programme", "left=1", "--programme", "both=1-2:stereo", "--target", "left=-18", "--target", "both=ebu-r128"]
        try compare([("summary.txt", ["--format", "text"]), ("summary.json", ["--format", "json"]),
                     ("programmes.txt", ["--format", "text"] + programmes), ("programmes.json", ["--format", "json"] + programmes),
                     ("target.txt", ["--format", "text", "--target", "-20", "--gating", "bs1770-1"])])
    }

    /// Runs `jackvu analyze ARGUMENTS input.flac` for each expected file, and compares.
    private func compare(_ cases: [(expected: String, arguments: [String])]) throws {
        let jackvu = try Executables.product("jackvu")
        let update = ProcessInfo.processInfo.environment["JACKVU_GOLDEN_UPDATE"] == "1"
        for (expected, arguments) in cases {
            // Run in the folder, so the file's name in the output is the committed one.
            let run = try Executables.run("/bin/sh", ["-c", "cd \"$1\" && shift && exec \"$@\"", "sh", folder,
                                                      jackvu, "analyze"] + arguments + ["input.flac"], timeout: 60)
            XCTAssertEqual(run.status, 0, run.stderr)
            let path = folder + "/" + expected
            if update {
                try run.stdout.write(toFile: path, atomically: false, encoding: .utf8)
                print("golden: wrote \(path)")
                continue
            }
            let want = try String(contentsOfFile: path, encoding: .utf8)
            guard run.stdout != want else { continue }
            let (got, wanted) = (run.stdout.split(separator: "\n", omittingEmptySubsequences: false),
                                 want.split(separator: "\n", omittingEmptySubsequences: false))
            let line = (0..<min(got.count, wanted.count)).first { got[$0] != wanted[$0] } ?? min(got.count, wanted.count)
            XCTFail("""
                \(expected): the output differs from \(expected) at line \(line + 1) (\(got.count) lines, expected \(wanted.count)):
                  got      \(line < got.count ? got[line].prefix(300) : "(end)")
                  expected \(line < wanted.count ? wanted[line].prefix(300) : "(end)")
                (a change meant to change it: JACKVU_GOLDEN_UPDATE=1, then review and commit the diff)
                """)
        }
    }
}
