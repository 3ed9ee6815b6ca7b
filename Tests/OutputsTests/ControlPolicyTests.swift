import Outputs
import XCTest

/// The control input's rules as pure logic: which sources it reads, how many commands a
/// second, and how subscriptions are limited, renewed and expire.
final class ControlPolicyTests: XCTestCase {
    private func bytes(_ text: String) throws -> [UInt8] { try AddressRange(parsing: text).bytes }

    func testAddressRanges() throws {
        let lan = try AddressRange(parsing: "192.168.1.0/24")
        XCTAssertTrue(lan.contains(try bytes("192.168.1.77")))
        XCTAssertFalse(lan.contains(try bytes("192.168.2.1")))
        XCTAssertFalse(lan.contains(try bytes("::1")), "another family never matches")
        // An IPv4-mapped IPv6 source (a dual-stack socket) counts as its IPv4 address.
        XCTAssertTrue(lan.contains(try bytes("::ffff:192.168.1.5")))
        let odd = try AddressRange(parsing: "10.0.0.0/12")
        XCTAssertTrue(odd.contains(try bytes("10.15.255.255")))
        XCTAssertFalse(odd.contains(try bytes("10.16.0.0")))
        XCTAssertTrue(try AddressRange(parsing: "0.0.0.0/0").contains(try bytes("8.8.8.8")))
        XCTAssertTrue(try AddressRange(parsing: "fd00::/8").contains(try bytes("fd12::1")))
        XCTAssertEqual(try AddressRange(parsing: "fd00::/8").description, "fd00::/8")
        XCTAssertEqual(try AddressRange(parsing: "127.0.0.2").description, "127.0.0.2")
        XCTAssertTrue(AddressRange.loopback.contains { $0.contains([127, 1, 2, 3]) })
        XCTAssertTrue(AddressRange.loopback.contains { $0.contains([UInt8](repeating: 0, count: 15) + [1]) })
        XCTAssertFalse(AddressRange.loopback.contains { $0.contains([192, 168, 0, 1]) })
        for bad in ["", "host.example", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/x", "1.2.3"] {
            XCTAssertThrowsError(try AddressRange(parsing: bad), bad)
        }
    }

    func testCommandBucket() {
        var bucket = CommandBucket(rate: 50, burst: 100)
        let t0 = 1_000_000_000
        XCTAssertEqual((0..<150).filter { _ in bucket.take(at: t0) }.count, 100, "a burst of 100 at once")
        XCTAssertFalse(bucket.take(at: t0 + 10_000_000), "half a token after 10 ms")
        XCTAssertTrue(bucket.take(at: t0 + 20_000_000), "one token after 20 ms at 50/s")
        // A second later: 50 more, not 100; a long pause refills to the burst only.
        XCTAssertEqual((0..<150).filter { _ in bucket.take(at: t0 + 1_020_000_000) }.count, 50)
        XCTAssertEqual((0..<150).filter { _ in bucket.take(at: t0 + 100_000_000_000) }.count, 100)
        // A clock that went backwards takes nothing and gives nothing.
        XCTAssertFalse(bucket.take(at: t0))
    }

    func testSubscriptionsAreLimitedRenewedAndExpire() throws {
        func endpoint(_ host: String, _ port: Int) throws -> OSCEndpoint { try OSCEndpoint(url: "udp://\(host):\(port)") }
        var s = Subscriptions(lifetime: 10)
        let second = 1_000_000_000
        for port in 9000..<(9000 + Subscriptions.perSource) {
            XCTAssertEqual(s.subscribe(try endpoint("127.0.0.1", port), now: 0, capacity: 32), .added)
        }
        XCTAssertEqual(s.subscribe(try endpoint("127.0.0.1", 9100), now: 0, capacity: 32), .refused, "a fifth from one host")
        XCTAssertEqual(s.subscribe(try endpoint("127.0.0.2", 9100), now: 0, capacity: 32), .added, "another host has its own")
        XCTAssertEqual(s.subscribe(try endpoint("127.0.0.3", 9100), now: 0, capacity: 5), .refused, "the capacity is shared")
        // Renewal at 5 s keeps 9000 past the others' expiry at 10 s.
        XCTAssertEqual(s.subscribe(try endpoint("127.0.0.1", 9000), now: 5 * second, capacity: 32), .renewed)
        XCTAssertEqual(s.expire(now: 10 * second - 1), [])
        XCTAssertEqual(Set(s.expire(now: 10 * second).map(\.port)), [9001, 9002, 9003, 9100])
        XCTAssertEqual(s.endpoints.map(\.port), [9000])
        XCTAssertTrue(s.unsubscribe(try endpoint("127.0.0.1", 9000)))
        XCTAssertFalse(s.unsubscribe(try endpoint("127.0.0.1", 9000)), "only a subscription can be removed")
        XCTAssertEqual(s.expire(now: 100 * second), [])
    }

    /// From a source that is not this machine: a challenge first (one per destination per
    /// 2 s however many subscribes arrive), added only by its echo from that host, with that
    /// token, within 10 s. 127.0.0.2–127.0.0.9 share one host's share; 127.0.0.1 keeps its own.
    func testRemoteSubscriptionsAreConfirmedAndLoopbackSharesOneShare() throws {
        func endpoint(_ host: String, _ port: Int) throws -> OSCEndpoint { try OSCEndpoint(url: "udp://\(host):\(port)") }
        let second = 1_000_000_000
        var s = Subscriptions(lifetime: 60)
        let victim = try endpoint("10.0.0.3", 7000)
        XCTAssertEqual(s.subscribe(victim, now: 0, capacity: 32, trusted: false, token: "t1"), .challenge("t1"))
        for k in 1..<20 {
            XCTAssertEqual(s.subscribe(victim, now: k * second / 10, capacity: 32, trusted: false, token: "x"), .waiting, "within 2 s")
        }
        XCTAssertEqual(s.subscribe(victim, now: 2 * second, capacity: 32, trusted: false, token: "x"), .challenge("t1"), "the same token again")
        XCTAssertEqual(s.endpoints, [], "nothing sent there but challenges")
        XCTAssertEqual(s.confirm(token: "t1", from: "10.0.0.4", now: 3 * second, capacity: 32), .refused, "another host's echo")
        XCTAssertEqual(s.confirm(token: "t2", from: "10.0.0.3", now: 3 * second, capacity: 32), .refused, "another token")
        XCTAssertEqual(s.confirm(token: "t1", from: "10.0.0.3", now: 3 * second, capacity: 32), .added)
        XCTAssertEqual(s.endpoints, [victim])
        XCTAssertEqual(s.confirm(token: "t1", from: "10.0.0.3", now: 3 * second, capacity: 32), .refused, "a token is used once")
        XCTAssertEqual(s.subscribe(victim, now: 4 * second, capacity: 32, trusted: false), .renewed, "a confirmed one renews")
        // An echo too late.
        let late = try endpoint("10.0.0.5", 7000)
        XCTAssertEqual(s.subscribe(late, now: 0, capacity: 32, trusted: false, token: "t3"), .challenge("t3"))
        XCTAssertEqual(s.confirm(token: "t3", from: "10.0.0.5", now: 11 * second, capacity: 32), .refused)

        // Loopback: 127.0.0.2–9 fill one share of 4; 127.0.0.1 still gets its own.
        var l = Subscriptions(lifetime: 60)
        var added = 0
        for host in 2...9 {
            for port in 9000..<9004 where l.subscribe(try endpoint("127.0.0.\(host)", port), now: 0, capacity: 32) == .added { added += 1 }
        }
        XCTAssertEqual(added, Subscriptions.perSource, "127.0.0.2–9 are one host")
        XCTAssertEqual(l.subscribe(try endpoint("127.0.0.1", 9000), now: 0, capacity: 32), .added)
        XCTAssertEqual(l.subscribe(try endpoint("[::1]", 9000), now: 0, capacity: 32), .added)
        XCTAssertTrue(Subscriptions.isLoopback("127.0.0.9") && Subscriptions.isLoopback("::1") && Subscriptions.isLoopback("::ffff:127.0.0.1"))
        XCTAssertFalse(Subscriptions.isLoopback("10.0.0.1") || Subscriptions.isLoopback("128.0.0.1"))
    }
}
