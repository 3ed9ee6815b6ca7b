#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// Metering beyond one machine, the two documented ways, with both "machines" on this one
/// (loopback; netjack2 allows it): (a) a remote bus brought into the local graph by JACK's
/// own netjack2 and metered by a local jackvu; (b) jackvu on each machine sending OSC over UDP
/// (and serving the browser display) to one control-room receiver.
final class NetworkTests: XCTestCase {
    func testNetjack2RemoteBusIsMeteredLocally() throws {
        let local = try JackServer(label: "njlocal")
        let port = freeUDPPort()
        // The master side: netmanager in the local server, listening on loopback.
        let load = try Executables.run("jack_load", ["netmanager", "-i", "-a 127.0.0.1 -p \(port)"], environment: local.environment)
        XCTAssertEqual(load.status, 0, load.stdout + load.stderr)
        XCTAssertTrue(load.stdout.contains("netmanager is running"), load.stdout)
        // The remote machine: a server whose driver is the network (netjack2 slave).
        let slaveName = "jvremote\(JackServer.run)"
        let remote = try JackServer(
            label: "njremote", driver: ["net", "-a", "127.0.0.1", "-p", "\(port)", "-n", slaveName, "-C", "2", "-P", "2"])
        defer { remote.stop() }
        try waitForPortsListed(local, ["\(slaveName):from_slave_1", "\(slaveName):to_slave_1"])

        // A tone on the remote bus (its system:playback_1 goes to the master) …
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "440", "--level", "-12", "--connect", "system:playback_1"],
            environment: remote.environment)
        defer { tone.stop() }
        // … metered by jackvu on the local server.
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"), ["--channels", "1", "--text", "--connect", "\(slaveName):from_slave_1"],
            environment: local.environment)
        defer { vu.stop() }
        let heard = vu.waitForStdout(timeout: 15) { text in
            OSCText.updates(text).suffix(3).contains { u in
                u.string("/jackvu/ch/1/pitch", 1) == "A4" && abs((u.float("/jackvu/ch/1/pitch") ?? 0) - 440) < 1
                    && abs((u.float("/jackvu/ch/1/rms") ?? 0) - (-15.0103)) < 0.1
            }
        }
        XCTAssertNotNil(heard, "A4 at -15.01 dBFS RMS across netjack2: \(vu.stdout.suffix(800)) \(vu.stderr) \(tone.stderr)")
        XCTAssertEqual(vu.stop(signal: SIGTERM), 0)
        XCTAssertEqual(tone.stop(signal: SIGTERM), 0)
        _ = try? Executables.run("jack_unload", ["netmanager"], environment: local.environment)
    }

    func testEachMachineSendsOSCAndServesItsDisplayToOneControlRoom() throws {
        let studioA = try JackServer(label: "studioa")
        let studioB = try JackServer(label: "studiob")
        let oscPort = freeUDPPort()
        // The control room: one OSC receiver for every machine.
        let dump = try BackgroundProcess("oscdump", ["\(oscPort)"], label: "oscdump")
        defer { dump.stop() }
        XCTAssertTrue(waitForUDPPort(oscPort), "oscdump did not bind \(oscPort): \(dump.stderr)")
        var meters: [BackgroundProcess] = []
        var tones: [BackgroundProcess] = []
        defer { (meters + tones).forEach { $0.stop() } }
        var httpPorts: [Int] = []
        for (server, prefix, level) in [(studioA, "/studio-a", -12.0), (studioB, "/studio-b", -20.0)] {
            let http = freeTCPPort()
            httpPorts.append(http)
            tones.append(try BackgroundProcess(
                try Executables.product("jacktone"), ["--freq", "440", "--level", "\(level)"], environment: server.environment))
            try waitForPortsListed(server, ["jacktone:out"])
            meters.append(try BackgroundProcess(
                try Executables.product("jackvu"),
                ["--channels", "1", "--quiet", "--connect", "jacktone:out", "--prefix", prefix, "--rate", "5",
                 "--osc", "udp://127.0.0.1:\(oscPort)", "--http", "0.0.0.0:\(http)"],
                environment: server.environment, label: "jackvu\(prefix.replacingOccurrences(of: "/", with: "-"))"))
        }
        func lastRMS(_ prefix: String, in text: String) -> Double? {
            completeLines(text).last { $0.contains("\(prefix)/ch/1/rms f ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
        }
        let both = dump.waitForStdout(timeout: 15) { text in
            guard let a = lastRMS("/studio-a", in: text), let b = lastRMS("/studio-b", in: text) else { return false }
            return abs(a - (-15.0103)) < 0.1 && abs(b - (-23.0103)) < 0.1
        }
        XCTAssertNotNil(both, "one receiver gets both machines' readings: \(dump.stdout.suffix(600)) \(meters.map(\.stderr))")
        // And each machine's browser display answers on every address (0.0.0.0), here loopback.
        for (index, port) in httpPorts.enumerated() {
            let snapshot = try XCTUnwrap(httpGet(port: port, path: "/snapshot"), "no display on port \(port): \(meters[index].stderr)")
            XCTAssertEqual(snapshot.status, 200)
            XCTAssertTrue(snapshot.body.contains("\"rms_dbfs\""), snapshot.body.prefix(300).description)
        }
        for m in meters { XCTAssertEqual(m.stop(signal: SIGTERM), 0, m.stderr) }
    }
}
