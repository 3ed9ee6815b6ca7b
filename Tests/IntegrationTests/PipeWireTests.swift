#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// jackvu and jacktone under PipeWire's JACK (`pw-jack`), against a pipewire the test starts in
/// folders of its own: the analysis, the port metadata, and the name PipeWire really gives.
final class PipeWireTests: XCTestCase {
    func testToneMetadataAndASecondInstanceUnderItsRealName() throws {
        let pw = try PipeWireServer()
        defer { pw.stop() }
        let vu = try pw.start(try Executables.product("jackvu"), ["--name", "jv", "--channels", "2", "--text"])
        defer { vu.stop() }
        try waitForListed(pw, ["jv:in_1", "jv:meter_2"], process: vu)

        let tone = try pw.start(try Executables.product("jacktone"), ["--freq", "440", "--level", "-12", "--connect", "jv:in_1"])
        defer { tone.stop() }
        let expectedRMS = -12 - 3.0103
        let found = vu.waitForStdout(timeout: 15) { text in
            OSCText.updates(text).suffix(3).contains { u in
                u.string("/jackvu/ch/1/pitch", 1) == "A4" && abs((u.float("/jackvu/ch/1/pitch") ?? 0) - 440) < 1
                    && abs((u.float("/jackvu/ch/1/rms") ?? 0) - expectedRMS) < 0.1
            }
        }
        XCTAssertNotNil(found, "A4 at \(expectedRMS) dBFS RMS under PipeWire: \(vu.stdout.suffix(1500))\n\(vu.stderr)\n\(tone.stderr)")
        XCTAssertEqual(OSCText.updates(vu.stdout).last?.float("/jackvu/status"), 48000, "PipeWire's default rate")

        let meter = try pw.run("jack_property", ["-p", "-l", "jv:meter_1"])
        XCTAssertTrue(meter.stdout.contains("key: http://jackaudio.org/metadata/signal-type value: CV"), meter.stdout + meter.stderr)
        XCTAssertTrue(meter.stdout.contains("http://jackaudio.org/metadata/pretty-name"), meter.stdout)

        // PipeWire does not refuse a name in use (it would show this client as jv-NN to others
        // but as jv to itself): jackvu takes the first free jv-N, says so and uses it.
        let second = try pw.start(try Executables.product("jackvu"), ["--name", "jv", "--channels", "1", "--text"], label: "jackvu-second")
        defer { second.stop() }
        var realName: String?
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && realName == nil {
            if let range = second.stderr.range(of: #"this client is '([^']+)'"#, options: .regularExpression) {
                realName = String(second.stderr[range].dropFirst("this client is '".count).dropLast())
            }
            usleep(100_000)
        }
        let name = try XCTUnwrap(realName, "the second jackvu says its real name: \(second.stderr)")
        XCTAssertEqual(name, "jv-2")
        XCTAssertEqual(
            second.stderr.split(separator: "\n").first,
            "jackvu: the client name 'jv' is taken; this client is 'jv-2': its ports are jv-2:in_N and jv-2:meter_N")
        try waitForListed(pw, ["\(name):in_1", "\(name):meter_1", "jv:in_2"], process: second)
        XCTAssertTrue(second.isRunning)
        // Every client sees that name: a tone sent to jv-2:in_1 reaches the second jackvu, not
        // the first, and its meter port has its own metadata.
        let meter2 = try pw.run("jack_property", ["-p", "-l", "jv-2:meter_1"])
        XCTAssertTrue(meter2.stdout.contains("signal-type value: CV"), meter2.stdout + meter2.stderr)
        let tone2 = try pw.start(
            try Executables.product("jacktone"), ["--name", "jt2", "--freq", "1000", "--level", "-20", "--connect", "jv-2:in_1"], label: "jacktone-2")
        defer { tone2.stop() }
        let heard = second.waitForStdout(timeout: 15) { text in
            OSCText.updates(text).suffix(2).contains { abs(($0.float("/jackvu/ch/1/rms") ?? 0) - (-23.0103)) < 0.1 }
        }
        XCTAssertNotNil(heard, "the second jackvu meters what goes to jv-2:in_1: \(second.stdout.suffix(800))")
        XCTAssertTrue(OSCText.updates(vu.stdout).suffix(2).allSatisfy { $0.string("/jackvu/ch/1/pitch", 1) == "A4" }, "the first still hears A4 only")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
        XCTAssertEqual(second.stop(signal: SIGTERM), 0, second.stderr)
        XCTAssertEqual(tone.stop(signal: SIGTERM), 0, tone.stderr)
    }

    private func waitForListed(_ pw: PipeWireServer, _ names: [String], process: BackgroundProcess) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let listed = (try? pw.run("jack_lsp", []).stdout) ?? ""
            if names.allSatisfy({ n in listed.split(separator: "\n").contains { $0 == n } }) { return }
            guard process.isRunning else { break }
            usleep(100_000)
        }
        throw FixtureError("ports \(names) did not appear under PipeWire; \(process.label) said: \(process.stderr)")
    }
}
