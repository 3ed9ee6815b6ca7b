#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// A golden replay: a short committed input (`Tests/Golden/input.flac`: 1 s of stereo tones,
/// 997 Hz on the left and 440 then 660 Hz on the right, stepping up 9.5 dB half-way) through
/// `jackvu analyze --stream`, as text and as JSON lines, compared byte for byte with the output
/// committed beside it — so that a reshaping of the analysis or the outputs that changes any
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
        let jackvu = try Executables.product("jackvu")
        let update = ProcessInfo.processInfo.environment["JACKVU_GOLDEN_UPDATE"] == "1"
        for (format, expected) in [("text", "stream.txt"), ("json", "stream.jsonl")] {
            // Run in the folder, so the file's name in the output is the committed one.
            let run = try Executables.run("/bin/sh", ["-c", "cd \"$1\" && shift && exec \"$@\"", "sh", folder,
                                                      jackvu, "analyze", "--stream", "--format", format, "input.flac"], timeout: 60)
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
                \(format): the output differs from \(expected) at line \(line + 1) (\(got.count) lines, expected \(wanted.count)):
                  got      \(line < got.count ? got[line].prefix(300) : "(end)")
                  expected \(line < wanted.count ? wanted[line].prefix(300) : "(end)")
                (a change meant to change it: JACKVU_GOLDEN_UPDATE=1, then review and commit the diff)
                """)
        }
    }
}
