#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Outputs
import TestSupport
import XCTest

final class OSCTextTests: XCTestCase {
    func testTextForm() {
        XCTAssertEqual(OSCMessage("/jackvu/ch/1/rms", [.float(-18.06)]).text, "/jackvu/ch/1/rms f -18.059999\n")
        XCTAssertEqual(
            OSCMessage("/jackvu/ch/1/pitch", [.float(440), .string("A4"), .float(0.3)]).text,
            "/jackvu/ch/1/pitch fsf 440.000000 \"A4\" 0.300000\n")
        XCTAssertEqual(OSCMessage("/s", [.int(-7), .int(0)]).text, "/s ii -7 0\n")
        XCTAssertEqual(OSCMessage("/e", []).text, "/e \n")
        XCTAssertEqual(OSCMessage("/x", [.float(-0.0000004)]).text, "/x f -0.000000\n")
        XCTAssertEqual(OSCMessage("/x", [.float(-120)]).text, "/x f -120.000000\n")
    }

    func testPacketLayout() {
        let p = OSCMessage("/ab", [.float(1), .int(2), .string("xyz")]).packet
        XCTAssertEqual(p, Array("/ab\0,fis\0\0\0\0".utf8) + [0x3F, 0x80, 0, 0, 0, 0, 0, 2] + Array("xyz\0".utf8))
    }

    func testPrefixRules() {
        XCTAssertNil(OSCAddress.problem(withPrefix: "/jackvu"))
        XCTAssertNil(OSCAddress.problem(withPrefix: "/studio/bus_a"))
        XCTAssertNotNil(OSCAddress.problem(withPrefix: "jackvu"))
        XCTAssertNotNil(OSCAddress.problem(withPrefix: "/jackvu/"))
        XCTAssertNotNil(OSCAddress.problem(withPrefix: "/a b"))
        XCTAssertNotNil(OSCAddress.problem(withPrefix: "/a*"))
        XCTAssertNotNil(OSCAddress.problem(withPrefix: "/a//b"))
    }

    /// The text form must be what the real `oscdump` prints for the same message: send each
    /// message's packet to a running oscdump over UDP and compare its lines, minus the timetag.
    func testTextMatchesRealOscdump() throws {
        let port = freeUDPPort()
        let dump = try BackgroundProcess("oscdump", ["-L", "\(port)"])
        defer { dump.stop() }
        XCTAssertTrue(waitForUDPPort(port), "oscdump did not bind port \(port): \(dump.stderr)")
        var messages: [OSCMessage] = [
            OSCMessage("/jackvu/ch/1/pitch", [.float(440), .string("A4"), .float(0.3)]),
            OSCMessage("/jackvu/ch/2/rms", [.float(-18.06)]),
            OSCMessage("/jackvu/status", [.int(48000), .int(0), .int(-3), .int(2_000_000_000)]),
            OSCMessage("/jackvu/ch/1/bars", (0..<48).map { .float(Float($0) / 47) }),
            OSCMessage("/jackvu/ch/1/pitch", [.float(0), .string("-"), .float(0)]),
        ]
        var rng: UInt64 = 42
        for _ in 0..<20 {
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            let f = Float(bitPattern: UInt32(truncatingIfNeeded: rng >> 32) & 0x4FFF_FFFF)  // up to ~1e10
            messages.append(OSCMessage("/r", [.float(f), .float(-f / 3)]))
        }
        for m in messages { sendUDP(m.packet, port: port) }
        let expected = messages.map(\.text).joined()
        let lines = dump.waitForStdout(timeout: 5) { completeLines($0).count >= messages.count }
        XCTAssertNotNil(lines, "oscdump printed: \(dump.stdout) \(dump.stderr)")
        // Drop oscdump's leading "xxxxxxxx.xxxxxxxx " timetag.
        let stripped = (lines ?? "").split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let space = line.firstIndex(of: " ") else { return String(line) }
            return String(line[line.index(after: space)...])
        }.joined(separator: "\n")
        XCTAssertEqual(stripped, expected)
    }

    func testSinkReportsClosedPipe() throws {
        signal(SIGPIPE, SIG_IGN)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        close(fds[0])
        let sink = FileDescriptorSink(descriptor: fds[1], name: "the pipe")
        XCTAssertThrowsError(try sink.write("hello\n")) { error in
            XCTAssertEqual(error as? OutputError, .closed("the pipe"))
        }
        close(fds[1])
    }
}
