#if canImport(Glibc)
import Glibc
#endif
import CLiblo
import Foundation
import TestSupport
import XCTest

/// The server side of the NSM API, written from the API document
/// (https://new-session-manager.jackaudio.org/api/): it takes a client's announce, answers it,
/// sends open and save, and reads the replies. Debian 12 has no NSM server package; this is
/// the real protocol over real UDP, with liblo, against the real jackvu and jacktone.
final class NSMPeer {
    struct Message: CustomStringConvertible {
        var path: String
        var arguments: [String]  // ints and floats as text
        var source: String  // the sender's OSC URL, where the answer goes
        var description: String { "\(path) \(arguments)" }
    }

    private let server: lo_server
    private var received: [Message] = []
    private var all: [Message] = []
    let url: String

    init() throws {
        guard let s = lo_server_new_with_proto(nil, LO_UDP, nil) else { throw FixtureError("cannot open a UDP socket") }
        server = s
        url = "osc.udp://127.0.0.1:\(lo_server_get_port(s))/"
        lo_server_add_method(s, nil, nil, { path, types, argv, argc, message, context in
            guard let path, let context, let message else { return 1 }
            let peer = Unmanaged<NSMPeer>.fromOpaque(context).takeUnretainedValue()
            let typeString = types.map { String(cString: $0) } ?? ""
            var arguments: [String] = []
            for (i, t) in typeString.utf8.enumerated() where i < Int(argc) {
                guard let arg = argv?[i] else { continue }
                switch t {
                case UInt8(ascii: "s"): arguments.append(String(cString: UnsafeRawPointer(arg).assumingMemoryBound(to: CChar.self)))
                case UInt8(ascii: "i"): arguments.append(String(UnsafeRawPointer(arg).loadUnaligned(as: Int32.self)))
                case UInt8(ascii: "f"): arguments.append(String(UnsafeRawPointer(arg).loadUnaligned(as: Float.self)))
                default: arguments.append("?")
                }
            }
            let source = lo_message_get_source(message).flatMap { lo_address_get_url($0) }
            let sourceURL = source.map { String(cString: $0) } ?? ""
            free(source)
            let m = Message(path: String(cString: path), arguments: arguments, source: sourceURL)
            peer.received.append(m)
            peer.all.append(m)
            return 0
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { lo_server_free(server) }

    /// Everything received so far, for failure messages.
    var log: String { all.map(\.description).joined(separator: "\n") }

    /// The first message not yet taken that satisfies `matching`, waiting at most `timeout` s.
    func take(timeout: Double = 10, _ matching: (Message) -> Bool) -> Message? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let i = received.firstIndex(where: matching) { return received.remove(at: i) }
            guard Date() < deadline else { return nil }
            _ = lo_server_recv_noblock(server, 50)
        }
    }

    /// A message on `path` (for `/reply` and `/error`: answering `to`).
    func take(_ path: String, to: String? = nil, timeout: Double = 10) -> Message? {
        take(timeout: timeout) { $0.path == path && (to == nil || $0.arguments.first == to) }
    }

    /// Sends a message with string and int arguments to `url`.
    func send(to url: String, _ path: String, _ arguments: [Any]) {
        guard let address = lo_address_new_from_url(url), let m = lo_message_new() else { return }
        defer {
            lo_message_free(m)
            lo_address_free(address)
        }
        for a in arguments {
            if let s = a as? String { lo_message_add_string(m, s) } else if let i = a as? Int { lo_message_add_int32(m, Int32(i)) }
        }
        _ = lo_send_message_from(address, server, path, m)
    }

    /// Waits for an announce, answers it, sends open; returns the announce and the reply (or
    /// error) to the open.
    func admit(path: String, clientID: String, displayName: String) throws -> (announce: Message, answer: Message) {
        guard let announce = take("/nsm/server/announce") else { throw FixtureError("no announce; received: \(log)") }
        send(to: announce.source, "/reply", ["/nsm/server/announce", "welcome to the test session", "jackvu-test-peer", ":server-control:"])
        send(to: announce.source, "/nsm/client/open", [path, displayName, clientID])
        guard let answer = take(timeout: 15, { ($0.path == "/reply" || $0.path == "/error") && $0.arguments.first == "/nsm/client/open" })
        else { throw FixtureError("no answer to open; received: \(log)") }
        return (announce, answer)
    }
}

/// jackvu and jacktone under a session manager: announce, open (the client ID as the JACK
/// name, the options kept in the session), save, restore on the next open, quit with status 0.
final class SessionManagerTests: XCTestCase {
    private var folder = ""

    override func setUp() {
        folder = NSTemporaryDirectory() + "jackvu-nsm-\(getpid())-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    func testJackvuAnnouncesOpensSavesAndRestoresItsOptions() throws {
        let server = try JackServer(label: "nsm")
        let peer = try NSMPeer()
        let instance = folder + "/session/jackvu.nTEST"
        var environment = server.environment
        environment["NSM_URL"] = peer.url

        // First open: a new client, started with options (as RaySession can); they are saved.
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--channels", "3", "--rate", "5"], environment: environment)
        defer { vu.stop() }
        guard let announce = peer.take("/nsm/server/announce") else { return XCTFail("no announce: \(vu.stderr)") }
        XCTAssertEqual(announce.arguments, ["jackvu", "", "jackvu", "1", "2", String(vu.process.processIdentifier)])
        peer.send(to: announce.source, "/reply", ["/nsm/server/announce", "welcome", "jackvu-test-peer", ":server-control:"])
        // Welcomed (it says so, then waits for open): still no JACK client.
        let welcomed = Date().addingTimeInterval(20)
        while Date() < welcomed && !vu.stderr.contains("in a session of jackvu-test-peer") { usleep(20_000) }
        XCTAssertTrue(vu.stderr.contains("in a session of jackvu-test-peer"), vu.stderr)
        XCTAssertFalse(try server.lsp().stdout.contains("jackvu"), "no JACK client before open")
        peer.send(to: announce.source, "/nsm/client/open", [instance, "jackvu", "jackvu.nTEST"])
        let opened = try XCTUnwrap(peer.take("/reply", to: "/nsm/client/open"), "no reply to open: \(peer.log)\n\(vu.stderr)")
        XCTAssertEqual(opened.arguments.last, "metering as jackvu.nTEST")
        try waitForPortsListed(server, ["jackvu.nTEST:in_3", "jackvu.nTEST:meter_3"])
        let saved = try String(contentsOfFile: instance + "/options", encoding: .utf8)
        XCTAssertTrue(saved.contains("--channels\n3\n--rate\n5\n"), saved)

        peer.send(to: announce.source, "/nsm/client/save", [])
        XCTAssertNotNil(peer.take("/reply", to: "/nsm/client/save"), "no reply to save: \(peer.log)")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, "SIGTERM (the session manager's quit) ends jackvu with 0: \(vu.stderr)")
        XCTAssertEqual(vu.stdout, "", "under a session manager stdout (its log) carries no text stream")
        XCTAssertFalse(try server.lsp().stdout.contains("jackvu.nTEST"), "ports gone after quit")

        // Next open: launched as a session manager does, with no options; they come back.
        let again = try BackgroundProcess(try Executables.product("jackvu"), [], environment: environment, label: "jackvu-again")
        defer { again.stop() }
        let (_, answer) = try peer.admit(path: instance, clientID: "jackvu.nTEST", displayName: "jackvu")
        XCTAssertEqual(answer.path, "/reply", "\(answer) \(again.stderr)")
        try waitForPortsListed(server, ["jackvu.nTEST:in_3"])
        XCTAssertFalse(try server.lsp().stdout.contains("jackvu.nTEST:in_4"))
        XCTAssertEqual(again.stop(signal: SIGTERM), 0, again.stderr)
    }

    func testOptionsThatNoLongerParseAreReportedToTheSessionManager() throws {
        let server = try JackServer(label: "nsmbad")
        let peer = try NSMPeer()
        let instance = folder + "/jackvu.nBAD"
        try FileManager.default.createDirectory(atPath: instance, withIntermediateDirectories: true)
        try "--channels\nmany\n".write(toFile: instance + "/options", atomically: true, encoding: .utf8)
        var environment = server.environment
        environment["NSM_URL"] = peer.url
        let vu = try BackgroundProcess(try Executables.product("jackvu"), [], environment: environment)
        defer { vu.stop() }
        let (_, answer) = try peer.admit(path: instance, clientID: "jackvu.nBAD", displayName: "jackvu")
        XCTAssertEqual(answer.path, "/error")
        XCTAssertEqual(answer.arguments.dropFirst().first, "-9", "ERR_BAD_PROJECT")
        XCTAssertTrue(vu.waitForExit(timeout: 20))
        XCTAssertEqual(vu.exitStatus, 64)
        XCTAssertTrue(vu.stderr.contains("jackvu: the options saved in \(instance)/options are not valid"), vu.stderr)
        XCTAssertEqual(vu.stderr.split(separator: "\n").filter { !$0.hasPrefix("jackvu: in a session") }.count, 1, vu.stderr)
    }

    /// jackvu's session socket is bound to loopback (the route to a manager on this machine),
    /// not every interface, and reads only the manager: a save from another socket on this
    /// machine gets no answer (and saves nothing), the manager's own save right after it does.
    func testTheSessionSocketIsBoundNarrowlyAndAnswersOnlyTheManager() throws {
        let server = try JackServer(label: "nsmbind")
        let peer = try NSMPeer()
        var environment = server.environment
        environment["NSM_URL"] = peer.url
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--channels", "1"], environment: environment)
        defer { vu.stop() }
        let instance = folder + "/jackvu.nBIND"
        let (announce, answer) = try peer.admit(path: instance, clientID: "jackvu.nBIND", displayName: "jackvu")
        XCTAssertEqual(answer.path, "/reply", vu.stderr)

        // Its UDP sockets, found by inode in /proc/net/udp and udp6: all on 127.0.0.1.
        let pid = vu.process.processIdentifier
        let inodes = Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { fd -> String? in
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  link.hasPrefix("socket:[") else { return nil }
            return String(link.dropFirst("socket:[".count).dropLast())
        })
        var udp: [[String]] = []
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields: [String] = line.split(separator: " ").map { String($0) }
                if fields.count > 9 && inodes.contains(fields[9]) { udp.append(fields) }
            }
        }
        XCTAssertEqual(udp.count, 1, "one UDP socket (the session's): \(udp)")
        XCTAssertTrue(udp.allSatisfy { $0[1].hasPrefix("0100007F:") }, "bound to 127.0.0.1: \(udp)")

        // A save from another socket of this machine: ignored.
        let jackvuPort = try XCTUnwrap(announce.source.split(separator: ":").last.flatMap { UInt16($0.trimmingCharacters(in: ["/"])) })
        let stranger = socket(AF_INET, datagramSocketType, 0)
        defer { close(stranger) }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_addr.s_addr = inet_addr("127.0.0.1")
        to.sin_port = jackvuPort.bigEndian
        let m = lo_message_new()
        defer { lo_message_free(m) }
        var size = 0
        let bytes = lo_message_serialise(m, "/nsm/client/save", nil, &size)
        defer { free(bytes) }
        _ = withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(stranger, bytes, size, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // The manager's save, sent after it, is answered: by then the stranger's was read.
        peer.send(to: announce.source, "/nsm/client/save", [])
        XCTAssertNotNil(peer.take("/reply", to: "/nsm/client/save"), "no reply to the manager's save: \(peer.log)")
        var reply = [UInt8](repeating: 0, count: 1024)
        XCTAssertEqual(recv(stranger, &reply, reply.count, Int32(MSG_DONTWAIT)), -1, "the stranger was answered")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
    }

    func testNoSessionManagerAnsweringIsOneLineAndStatus69() throws {
        let port = freeUDPPort()
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"), [], environment: ["NSM_URL": "osc.udp://127.0.0.1:\(port)/", "JACK_DEFAULT_SERVER": "jackvu-none"])
        defer { vu.stop() }
        XCTAssertTrue(vu.waitForExit(timeout: 20))
        XCTAssertEqual(vu.exitStatus, 69)
        XCTAssertEqual(vu.stderr, "jackvu: no answer from the session manager at NSM_URL within 5 s\n")
    }

    /// An NSM_URL that is no OSC URL over UDP is one line of jackvu's (liblo's parser, used
    /// before, wrote a line of its own first) and 69, at once: jacktone's too.
    func testAMalformedNSMURLIsOneLineAndStatus69() throws {
        for url in ["garbage", "osc.tcp://127.0.0.1:5000/", "osc.udp://127.0.0.1:99999/", "osc.udp://127.0.0.1:0/"] {
            for tool in ["jackvu", "jacktone"] {
                let run = try Executables.run(try Executables.product(tool), [], environment: ["NSM_URL": url, "JACK_DEFAULT_SERVER": "jackvu-none"])
                XCTAssertEqual(run.status, 69, "\(tool), \(url): \(run.stderr)")
                XCTAssertEqual(run.stderr, "\(tool): NSM_URL '\(url)' is not an OSC URL over UDP (osc.udp://HOST:PORT/)\n", url)
            }
        }
    }

    /// jacktone: `:dirty:` after a change on stdin, clean after save, and the saved tone is what
    /// the next open plays (measured by a jackvu outside the session).
    func testJacktoneSavesItsToneAndIsDirtyAfterAChange() throws {
        let server = try JackServer(label: "nsmtone")
        let vu = try BackgroundProcess(try Executables.product("jackvu"), ["--channels", "1", "--text"], environment: server.environment)
        defer { vu.stop() }
        try waitForPorts(server, ["jackvu:in_1"], process: vu)
        let peer = try NSMPeer()
        let instance = folder + "/jacktone.nTONE"
        var environment = server.environment
        environment["NSM_URL"] = peer.url

        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "330", "--level", "-12", "--connect", "jackvu:in_1"],
            environment: environment, stdin: true)
        defer { tone.stop() }
        let (announce, answer) = try peer.admit(path: instance, clientID: "jacktone.nTONE", displayName: "jacktone")
        XCTAssertEqual(Array(announce.arguments.prefix(5)), ["jacktone", ":dirty:", "jacktone", "1", "2"])
        XCTAssertEqual(answer.path, "/reply", "\(answer) \(tone.stderr)")
        try waitForPortsListed(server, ["jacktone.nTONE:out"])
        XCTAssertTrue(try reads(vu, note: "E4", rms: -12 - 3.0103), "E4 at -15 dBFS RMS: \(vu.stdout.suffix(800))")

        tone.send("level -6")
        XCTAssertNotNil(peer.take("/nsm/client/is_dirty"), "a change makes it dirty: \(peer.log)")
        peer.send(to: announce.source, "/nsm/client/save", [])
        XCTAssertNotNil(peer.take("/reply", to: "/nsm/client/save"), peer.log)
        XCTAssertNotNil(peer.take("/nsm/client/is_clean"), "clean after save: \(peer.log)")
        let saved = try String(contentsOfFile: instance + "/options", encoding: .utf8)
        XCTAssertTrue(saved.contains("--level\n-6.0\n"), saved)
        XCTAssertEqual(tone.stop(signal: SIGTERM), 0, tone.stderr)

        let again = try BackgroundProcess(try Executables.product("jacktone"), [], environment: environment, label: "jacktone-again")
        defer { again.stop() }
        let (_, second) = try peer.admit(path: instance, clientID: "jacktone.nTONE", displayName: "jacktone")
        XCTAssertEqual(second.path, "/reply", "\(second) \(again.stderr)")
        XCTAssertTrue(try reads(vu, note: "E4", rms: -6 - 3.0103), "the restored tone: \(vu.stdout.suffix(800))")
        XCTAssertEqual(again.stop(signal: SIGTERM), 0, again.stderr)
    }

    private func reads(_ vu: BackgroundProcess, note: String, rms: Double) throws -> Bool {
        vu.waitForStdout(timeout: 20) { text in
            OSCText.updates(text).suffix(3).contains { u in
                u.string("/jackvu/ch/1/pitch", 1) == note && abs((u.float("/jackvu/ch/1/rms") ?? 0) - rms) < 0.1
            }
        } != nil
    }
}
