#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// The crest factor — the proof that a new reading is its DSP and one entry of the reading
/// table (`Sources/Vocabulary/Readings.swift`, `crest`): the commit that added it touched no
/// other source file, and it reaches every output. Its values: a sine 3.01 dB (√2), a square
/// 0.00 dB, an impulse train of one −20 dBFS sample in 64 10·log10(64) = 18.06 dB.
final class CrestFactorTests: XCTestCase {
    static let sine = 20 * log10(2.0.squareRoot()), square = 0.0, train = 10 * log10(64.0)

    /// `jackvu analyze` of the three signals (4 s, 48 kHz): the summary's channel line (text)
    /// and `per_channel` (JSON) over the whole file, and `--stream --send crest`'s OSC text and
    /// JSON lines at its last hop.
    func testAnalyzeReadsTheCrestFactorInEveryForm() throws {
        let folder = NSTemporaryDirectory() + "jackvu-crest-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let n = 4 * 48000
        let signals: [(String, [Float], Double)] = [
            ("sine", (0..<n).map { Float(0.1 * sin(2 * Double.pi * 1000 * Double($0) / 48000)) }, Self.sine),
            ("square", (0..<n).map { ($0 / 24) % 2 == 0 ? 0.1 : -0.1 }, Self.square),
            ("train", (0..<n).map { $0 % 64 == 0 ? 0.1 : 0 }, Self.train),
        ]
        let jackvu = try Executables.product("jackvu")
        for (name, samples, expected) in signals {
            let path = "\(folder)/\(name).wav"
            try writeWAV(path, [samples])
            let text = try Executables.run(jackvu, ["analyze", path])
            XCTAssertEqual(text.status, 0, text.stderr)
            XCTAssertTrue(text.stdout.contains("crest \(String(format: "%.1f", expected)) dB"), "\(name): \(text.stdout)")
            let json = try Executables.run(jackvu, ["analyze", "--format", "json", path])
            let summary = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])?.first)
            let perChannel = try XCTUnwrap((summary["per_channel"] as? [[String: Any]])?.first)
            XCTAssertEqual(perChannel["crest_db"] as? Double ?? .nan, expected, accuracy: 0.05, "\(name): the summary's JSON")
            let stream = try Executables.run(jackvu, ["analyze", "--stream", "--send", "crest", path])
            let last = try XCTUnwrap(stream.stdout.split(separator: "\n").last { $0.hasPrefix("/jackvu/ch/1/crest f ") })
            XCTAssertEqual(Double(last.split(separator: " ").last ?? "") ?? .nan, expected, accuracy: 0.05, "\(name): the stream's OSC text")
            let lines = try Executables.run(jackvu, ["analyze", "--stream", "--format", "json", "--send", "crest", path])
            let update = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((lines.stdout.split(separator: "\n").last ?? "").utf8)) as? [String: Any])
            let channel = try XCTUnwrap((update["channels"] as? [[String: Any]])?.first)
            XCTAssertEqual(channel["crest_db"] as? Double ?? .nan, expected, accuracy: 0.05, "\(name): the stream's JSON")
        }
    }

    /// Live, on a real server: jacktone's −20 dBFS 1 kHz sine, then its constant (`--dc`: a
    /// square's crest factor, 0 dB), metered by one jackvu with `--send crest`: its JSON lines,
    /// OSC over UDP to a real `oscdump`, `/metrics` (`jackvu_crest_factor_db`), the meter port
    /// with `--meter crest` (its pretty-name, and its value read by a second jackvu as audio:
    /// 3.01 on the 0 … 30 dB scale) and the browser page (what real Chromium draws: "crest
    /// 3.0 dB"). The terminal's detail line: `LayoutTests.testTheSelectedChannelsDetailShowsItsExtras`.
    func testEveryLiveOutputCarriesTheCrestFactor() throws {
        let server = try JackServer(label: "crest")
        var tone: BackgroundProcess? = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "1000", "--level", "-20"], environment: server.environment)
        defer { tone?.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let udp = freeUDPPort(), metrics = freeTCPPort(), http = freeTCPPort()
        let dump = try BackgroundProcess(try Executables.resolve("oscdump"), [String(udp)], label: "oscdump")
        defer { dump.stop() }
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "1", "--connect", "jacktone:out", "--send", "crest", "--format", "json", "--rate", "10",
             "--osc", "osc.udp://127.0.0.1:\(udp)/", "--metrics", "127.0.0.1:\(metrics)", "--http", "127.0.0.1:\(http)", "--meter", "crest"],
            environment: server.environment)
        defer { vu.stop() }
        try waitForPortsListed(server, ["jackvu:meter_1"])
        let property = try Executables.run("jack_property", ["-p", "-l", "jackvu:meter_1"], environment: server.environment)
        XCTAssertTrue(property.stdout.contains("pretty-name value: Meter 1 (Crest, 0..1 = 0..30 dB)"), property.stdout)

        func latestJSON() -> Double? {
            completeLines(vu.stdout).last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .flatMap { ($0["channels"] as? [[String: Any]])?.first?["crest_db"] as? Double }
        }
        func latestOSC() -> Double? {
            completeLines(dump.stdout).last { $0.split(separator: " ").dropFirst().first == "/jackvu/ch/1/crest" }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        func scraped() -> Double? {
            httpGet(port: metrics, path: "/metrics")?.body.split(separator: "\n")
                .first { $0.hasPrefix("jackvu_crest_factor_db{") && $0.contains("channel=\"1\"") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        func near(_ x: Double?, _ value: Double) -> Bool { x.map { abs($0 - value) <= 0.05 } ?? false }
        for (signal, expected) in [("sine", Self.sine), ("constant", Self.square)] {
            if signal == "constant" {
                tone?.stop()
                tone = try BackgroundProcess(
                    try Executables.product("jacktone"), ["--level", "-200", "--dc", "-20", "--connect", "jackvu:in_1"], environment: server.environment)
            }
            let all = eventually(timeout: 20) { near(latestJSON(), expected) && near(latestOSC(), expected) && near(scraped(), expected) }
            XCTAssertTrue(all, "\(signal): JSON \(String(describing: latestJSON())), OSC \(String(describing: latestOSC())), "
                          + "/metrics \(String(describing: scraped())); \(vu.stderr.suffix(400))")
            if signal == "sine" {
                // The meter port, as audio to a probe: 3.01 dB on the 0 … 30 dB scale.
                let probe = try BackgroundProcess(
                    try Executables.product("jackvu"), ["--name", "probe", "--channels", "1", "--connect", "jackvu:meter_1", "--send", "peak"],
                    environment: server.environment, label: "probe")
                defer { probe.stop() }
                let read = eventually(timeout: 20) {
                    guard let line = completeLines(probe.stdout).last(where: { $0.hasPrefix("/jackvu/ch/1/peak f ") }),
                          let peak = Double(line.split(separator: " ").last ?? "") else { return false }
                    return abs(pow(10, peak / 20) - Self.sine / 30) < 0.002
                }
                XCTAssertTrue(read, "the meter port: \(probe.stdout.suffix(300))")
                // The page: what it draws on its canvas in one frame.
                let browser = try HeadlessChromium(folder: NSTemporaryDirectory())
                defer { browser.stop() }
                let page = try browser.open("http://127.0.0.1:\(http)/", width: 1280, height: 800)
                let drawn = """
                    (() => { const seen = [], f = g.fillText; g.fillText = function (t, ...a) { seen.push(String(t)); return f.call(this, t, ...a); };
                      try { draw(); } finally { g.fillText = f; } return seen.some(t => t.includes("crest 3.0 dB")); })()
                    """
                XCTAssertNotNil(try page.wait(timeout: 20, until: drawn), "the page: \(page.messages)")
                page.close()
            }
        }
    }
}
