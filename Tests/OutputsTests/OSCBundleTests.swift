import Outputs
import XCTest

/// Bundles built by liblo, split to a size, and decoded back; control commands.
final class OSCBundleTests: XCTestCase {
    private func messages(_ n: Int) -> [OSCMessage] {
        (0..<n).map { i in
            OSCMessage("/jackvu/ch/\(i)/pitch", [.float(Float(i)), .string("A4"), .int(Int32(i)), .float(0.5)])
        }
    }

    /// An update split into bundles no larger than the limit, every one with the same time
    /// tag, decodes back to the same messages in the same order.
    func testSplitBundlesKeepOrderAndTimeTag() throws {
        let tag: UInt64 = 0xEEAE_4991_B7DF_6DB9
        let all = messages(100)
        let packets = OSCBundle.encode(all, timeTag: tag, maxSize: 512)
        XCTAssertGreaterThan(packets.count, 5)
        var decoded: [OSCMessage] = []
        for p in packets {
            XCTAssertLessThanOrEqual(p.count, 512)
            XCTAssertEqual(OSCDecoder.timeTag(of: p), tag)
            decoded += try OSCDecoder.messages(in: p)
        }
        XCTAssertEqual(decoded, all)
        // Under the safe datagram size, one bundle holds a small update.
        XCTAssertEqual(OSCBundle.encode(messages(3), timeTag: tag).count, 1)
    }

    /// A message larger than the limit goes alone in its bundle (the caller decides).
    func testOversizedMessageGoesAlone() {
        let big = OSCMessage("/jackvu/ch/1/bars", (0..<400).map { .float(Float($0)) })
        let packets = OSCBundle.encode([messages(1)[0], big, messages(1)[0]], timeTag: 1, maxSize: 256)
        XCTAssertEqual(packets.count, 3)
        XCTAssertGreaterThan(packets[1].count, 1600)
    }

    /// NTP time tags: the Unix epoch is 2208988800 s after NTP's; half a second is 2^31.
    func testTimeTagFromUnixTime() {
        XCTAssertEqual(OSCBundle.timeTag(unixMicroseconds: 0), 2_208_988_800 << 32)
        XCTAssertEqual(OSCBundle.timeTag(unixMicroseconds: 1_500_000), (2_208_988_801 << 32) | (1 << 31))
    }

    /// Malformed packets are refused, never crash: truncated, unaligned, bad bundle sizes.
    func testMalformedPacketsAreRefused() {
        let good = OSCMessage("/jackvu/reset", []).packet
        XCTAssertNoThrow(try OSCDecoder.messages(in: good))
        XCTAssertThrowsError(try OSCDecoder.messages(in: Array(good.prefix(5))))
        XCTAssertThrowsError(try OSCDecoder.messages(in: [1, 2, 3, 4]))
        XCTAssertThrowsError(try OSCDecoder.messages(in: Array("#bundle\0".utf8) + [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0]))
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let n = Int.random(in: 0...64, using: &random) * 4
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = try? OSCDecoder.messages(in: bytes)
        }
    }

    /// Only the documented commands, with the documented arguments, are commands.
    func testControlCommands() throws {
        let sender = (host: "127.0.0.1", port: UInt16(40000))
        func parse(_ m: OSCMessage) -> ControlCommand? { ControlCommand.parse(m, prefix: "/jackvu", sender: sender) }
        XCTAssertEqual(parse(OSCMessage("/jackvu/reset", [])), .reset)
        XCTAssertEqual(parse(OSCMessage("/jackvu/rate", [.float(5)])), .rate(5))
        XCTAssertEqual(parse(OSCMessage("/jackvu/rate", [.int(10)])), .rate(10))
        XCTAssertEqual(parse(OSCMessage("/jackvu/send", [.string("rms,pitch")])), .send(try MessageKinds.parse("rms,pitch")))
        XCTAssertEqual(parse(OSCMessage("/jackvu/subscribe", [])), .subscribe(try OSCEndpoint(url: "udp://127.0.0.1:40000")))
        XCTAssertEqual(parse(OSCMessage("/jackvu/subscribe", [.int(9001)])), .subscribe(try OSCEndpoint(url: "udp://127.0.0.1:9001")))
        XCTAssertEqual(parse(OSCMessage("/jackvu/unsubscribe", [])), .unsubscribe(try OSCEndpoint(url: "udp://127.0.0.1:40000")))
        for bad in [
            OSCMessage("/jackvu/reset", [.int(1)]), OSCMessage("/jackvu/rate", [.float(0)]),
            OSCMessage("/jackvu/rate", [.float(5000)]), OSCMessage("/jackvu/rate", [.string("fast")]),
            OSCMessage("/jackvu/send", [.string("volume")]), OSCMessage("/jackvu/subscribe", [.int(70000)]),
            OSCMessage("/jackvu/quit", []), OSCMessage("/other/reset", []), OSCMessage("/jackvureset", []),
        ] {
            XCTAssertNil(parse(bad), bad.address)
        }
    }

    /// OSC URLs: both forms, IPv6, and what is refused.
    func testEndpoints() throws {
        let a = try OSCEndpoint(url: "udp://127.0.0.1:9000")
        XCTAssertEqual(a.host, "127.0.0.1")
        XCTAssertEqual(a.port, 9000)
        let b = try OSCEndpoint(url: "osc.udp://localhost:8000/")
        XCTAssertEqual(b.host, "localhost")
        XCTAssertEqual(b.port, 8000)
        XCTAssertEqual(try OSCEndpoint(url: "udp://[::1]:7000").host, "::1")
        for bad in ["tcp://x:1", "udp://x", "udp://x:0", "udp://x:99999", "9000", "osc.tcp://x:1/"] {
            XCTAssertThrowsError(try OSCEndpoint(url: bad), bad)
        }
    }
}
