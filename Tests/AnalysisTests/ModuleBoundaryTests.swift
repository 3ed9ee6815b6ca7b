import Foundation
import XCTest

/// The analysis core stands on its own: read from Package.swift, the targets `Analysis`
/// depends on — directly or through others — are DSP, the real-time helpers and the
/// vocabulary, with no output module (Outputs, the displays, the log, the settings of a run)
/// and no C library but FFTW; the vocabulary needs nothing but DSP; and `jackvu-bench`
/// nothing but the analysis.
final class ModuleBoundaryTests: XCTestCase {
    /// Each target's name and the targets it names as dependencies (products of other
    /// packages, named by a variable such as `argumentParser`, left out), and the system
    /// libraries (C libraries found by pkg-config).
    private func manifest() throws -> (dependencies: [String: [String]], systemLibraries: Set<String>) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = try NSRegularExpression(
            pattern: #"\.(target|executableTarget|testTarget|systemLibrary)\(\s*name:\s*"([^"]+)"(?:\s*,\s*dependencies:\s*\[([^\]]*)\])?"#)
        var dependencies: [String: [String]] = [:]
        var system = Set<String>()
        let whole = NSRange(text.startIndex..., in: text)
        for match in target.matches(in: text, range: whole) {
            func group(_ i: Int) -> String? { Range(match.range(at: i), in: text).map { String(text[$0]) } }
            guard let kind = group(1), let name = group(2) else { continue }
            if kind == "systemLibrary" { system.insert(name) }
            let list = group(3) ?? ""
            dependencies[name] = list.split(separator: ",").compactMap { item in
                let t = item.trimmingCharacters(in: .whitespacesAndNewlines)
                return t.hasPrefix("\"") && t.hasSuffix("\"") && t.count > 2 ? String(t.dropFirst().dropLast()) : nil
            }
        }
        return (dependencies, system)
    }

    private func closure(of name: String, in dependencies: [String: [String]]) -> Set<String> {
        var seen = Set<String>(), stack = dependencies[name] ?? []
        while let next = stack.popLast() {
            if seen.insert(next).inserted { stack += dependencies[next] ?? [] }
        }
        return seen
    }

    func testTheAnalysisDependsOnNoOutputAndNoCLibraryButFFTW() throws {
        let (dependencies, system) = try manifest()
        // The parse found the manifest's targets (a broken parse must not pass as "no deps").
        XCTAssertTrue(system.isSuperset(of: ["CFFTW", "CLiblo", "CJack", "CSQLite", "CSndfile"]), "\(system)")
        XCTAssertEqual(dependencies["Analysis"].map(Set.init), ["DSP", "Realtime", "Vocabulary"])
        let analysis = closure(of: "Analysis", in: dependencies)
        for output in ["Outputs", "Settings", "TerminalDisplay", "WebDisplay", "MetricsExport", "LoudnessLog", "FileAnalysis", "Jack", "JackVU"] {
            XCTAssertFalse(analysis.contains(output), "Analysis depends on \(output) (through \(analysis.sorted()))")
        }
        XCTAssertEqual(analysis.intersection(system), ["CFFTW"], "the C libraries under Analysis")
        // (DSP's own: FFTW and its kernels compiled for AVX2, which depend on nothing.)
        XCTAssertEqual(dependencies["DSPAVX2"], [])
        XCTAssertEqual(closure(of: "Vocabulary", in: dependencies).subtracting(["CFFTW", "DSPAVX2"]), ["DSP"], "the vocabulary stands on DSP alone")
        // The benchmarks of the analysis run on it alone (the probes of a running jackvu are
        // jackvu-probe's).
        XCTAssertEqual(closure(of: "jackvu-bench", in: dependencies).subtracting(analysis), ["Analysis"], "jackvu-bench on the analysis alone")
    }

    /// Every host of the analysis — the live engine, `jackvu analyze`, the LV2 plugin — takes
    /// its consumers from one module (`Consumers`), which knows no host; and none wires one by
    /// hand (a recorder of its own for the log, alarms evaluated itself).
    func testEveryHostTakesItsConsumersFromOneModule() throws {
        let (dependencies, _) = try manifest()
        let hosts = ["JackVU", "FileAnalysis", "JackVULV2"]
        for host in hosts { XCTAssertTrue(dependencies[host]?.contains("Consumers") ?? false, "\(host) uses the consumers' factories") }
        let consumers = closure(of: "Consumers", in: dependencies)
        for below in ["Jack", "CJack", "CLV2", "CSndfile"] + hosts { XCTAssertFalse(consumers.contains(below), "Consumers depends on \(below)") }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        for host in hosts {
            let dir = root.appendingPathComponent("Sources/\(host)")
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".swift") }
            XCTAssertFalse(files.isEmpty, host)
            for file in files {
                let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
                for wiring in ["LogRecorder(", ".evaluate(", "NoteFollower(", "HistoryRecorder(", ".meterValue(channel:"] {
                    XCTAssertFalse(text.contains(wiring), "\(host)/\(file) wires a consumer by hand: \(wiring)")
                }
            }
        }
    }
}
