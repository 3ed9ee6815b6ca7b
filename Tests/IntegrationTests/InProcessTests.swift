#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Outputs
import TestSupport
import XCTest

/// jackvu as a JACK internal client: `jack_load -i "OPTIONS" jackvu jackvu` on a dummy server
/// whose JACK_INTERNAL_DIR holds the built library as jackvu.so; a real jacktone into it; its
/// OSC output (to a real oscdump) names A4; its `--on-alarm` command runs from inside jackd
/// without the server's descriptors; its ports carry their metadata; `jack_unload` leaves the
/// server running and clean, and it loads again.
final class InProcessTests: XCTestCase {
    func testJackLoadMetersAToneAndJackUnloadLeavesTheServerClean() throws {
        let library = Executables.productsDirectory + "/libJackVUInternal.so"
        XCTAssertTrue(FileManager.default.fileExists(atPath: library), "swift build builds \(library)")
        let folder = NSTemporaryDirectory() + "jackvu-internal-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.copyItem(atPath: library, toPath: folder + "/jackvu.so")
        let server = try JackServer(label: "inprocess", serverEnvironment: ["JACK_INTERNAL_DIR": folder])
        let port = freeUDPPort()
        let dump = try BackgroundProcess("oscdump", ["\(port)"], label: "oscdump")
        defer { dump.stop() }
        XCTAssertTrue(waitForUDPPort(port), "oscdump did not bind \(port): \(dump.stderr)")
        // The first round's `--on-alarm` command: what it was told, and the descriptors it
        // holds (inside jackd: the server's client sockets and shared memory, unless closed).
        let script = folder + "/on-alarm.sh", alarms = folder + "/alarms.txt", descriptors = folder + "/fds.txt"
        try """
            #!/bin/sh
            echo "$JACKVU_STATE $JACKVU_ALARM $JACKVU_CLIENT" >> '\(alarms)'
            for f in /proc/$$/fd/*; do readlink "$f"; done >> '\(descriptors)'
            """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        func lines(_ path: String) -> [String] { completeLines((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").map(String.init) }

        for round in 1...2 {
            let alarming = round == 1 ? " --alarm silence:raise=0.5,clear=0.5 --on-alarm '\(script)'" : ""
            let load = try Executables.run(
                "jack_load", ["-i", "--channels 2 --rate 10 --osc udp://127.0.0.1:\(port)" + alarming, "jackvu", "jackvu"], environment: server.environment)
            XCTAssertEqual(load.status, 0, "round \(round): \(load.stdout) \(load.stderr)")
            XCTAssertTrue(load.stdout.contains("jackvu is running"), load.stdout)
            try waitForPortsListed(server, ["jackvu:in_1", "jackvu:in_2", "jackvu:meter_2", "jackvu:osc"])
            if round == 1 {
                // Nothing connected yet: silence, raised after 0.5 s.
                XCTAssertTrue(eventually(timeout: 10) { lines(alarms).contains("raised silence jackvu") },
                              "the in-process --on-alarm command ran on the raise: \(lines(alarms)); jackd: \(server.output.suffix(400))")
            }

            let seen = dump.stdout.utf8.count  // this round's lines only
            let tone = try BackgroundProcess(
                try Executables.product("jacktone"), ["--freq", "440", "--level", "-12", "--connect", "jackvu:in_1"], environment: server.environment)
            let heard = dump.waitForStdout(timeout: 20) { all in
                let text = String(decoding: all.utf8.dropFirst(seen), as: UTF8.self)
                return completeLines(text).suffix(400).contains { $0.contains("/jackvu/ch/1/pitch fsff 440.0") && $0.contains("\"A4\"") }
                    && completeLines(text).suffix(400).contains { line in
                        line.contains("/jackvu/ch/1/rms f ") && (Double(line.split(separator: " ").last ?? "").map { abs($0 + 15.0103) < 0.1 } ?? false)
                    }
            }
            XCTAssertNotNil(heard, "round \(round): the in-process jackvu names A4 at -15.01 dBFS RMS over OSC: \(dump.stdout.suffix(600))")
            if round == 1 {
                XCTAssertTrue(eventually(timeout: 10) { lines(alarms).contains("cleared silence jackvu") },
                              "the in-process --on-alarm command ran on the clear: \(lines(alarms))")
                let held = lines(descriptors)
                XCTAssertFalse(held.isEmpty, "the command listed its descriptors")
                XCTAssertFalse(held.contains { $0.hasPrefix("socket:") || $0.hasPrefix("/dev/shm/") },
                               "the command holds none of jackd's sockets or shared memory: \(held)")
                // The `osc` port carries the same messages, made by the same output factory as
                // the command's: OSC bundles read by a real JACK client (jack_midi_dump).
                let midi = try BackgroundProcess("jack_midi_dump", ["-a", "oscprobe"], environment: server.environment, label: "midi-dump")
                defer { midi.stop() }
                try waitForPortsListed(server, ["oscprobe:input"])
                XCTAssertEqual(try Executables.run("jack_connect", ["jackvu:osc", "oscprobe:input"], environment: server.environment).status, 0)
                let pitch = midi.waitForStdout(timeout: 20) { out in
                    let messages = completeLines(out).flatMap { line -> [OSCMessage] in
                        guard let colon = line.firstIndex(of: ":") else { return [] }
                        let bytes = line[line.index(after: colon)...].split(separator: " ").compactMap { UInt8($0, radix: 16) }
                        return (try? OSCDecoder.messages(in: bytes)) ?? []
                    }
                    return messages.contains { $0.address == "/jackvu/ch/1/pitch" && $0.arguments.count == 4 && $0.arguments[1] == .string("A4") }
                }
                XCTAssertNotNil(pitch, "the in-process osc port: \(midi.stdout.suffix(300))")
            }
            XCTAssertEqual(tone.stop(signal: SIGTERM), 0)

            // Metadata (written for the internal client by jack_property: see Client.setProperty).
            // The meter ports' properties are written first, the inputs' last: wait for both.
            var meter = "", input = ""
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline && !(meter.contains("signal-type value: CV") && meter.contains("pretty-name") && input.contains("signal-type value: AUDIO")) {
                meter = (try? Executables.run("jack_property", ["-p", "-l", "jackvu:meter_1"], environment: server.environment).stdout) ?? ""
                input = (try? Executables.run("jack_property", ["-p", "-l", "jackvu:in_2"], environment: server.environment).stdout) ?? ""
                usleep(100_000)
            }
            XCTAssertTrue(meter.contains("key: http://jackaudio.org/metadata/signal-type value: CV"), meter)
            XCTAssertTrue(meter.contains("pretty-name value: Meter 1"), meter)
            XCTAssertTrue(input.contains("signal-type value: AUDIO"), input)

            let unload = try Executables.run("jack_unload", ["jackvu"], environment: server.environment)
            XCTAssertEqual(unload.status, 0, unload.stdout + unload.stderr)
            XCTAssertTrue(unload.stdout.contains("jackvu unloaded"), unload.stdout)
            let listed = try server.lsp().stdout
            XCTAssertFalse(listed.contains("jackvu"), "no port left: \(listed)")
            XCTAssertTrue(listed.contains("system:playback_1"), "the server runs on: \(listed)")
            XCTAssertEqual(try Executables.run("jack_property", ["-l"], environment: server.environment).stdout.contains("Meter 1"), false,
                           "no metadata left behind")
        }

        // Unloaded while its metadata is still being written (64 channels: 387 properties,
        // seconds of jack_property): the helper is ended (between two of its calls), and no code of the unloaded library
        // is left running in the server (that crashed jackd).
        let wide = try Executables.run("jack_load", ["-i", "--channels 64 --send status", "jackvu", "jackvu"], environment: server.environment)
        XCTAssertEqual(wide.status, 0, wide.stdout + wide.stderr)
        XCTAssertEqual(try Executables.run("jack_unload", ["jackvu"], environment: server.environment).status, 0)
        sleep(1)
        XCTAssertTrue(try server.lsp().stdout.contains("system:playback_1"), "the server survives the unload")
        // The helper ended between two writes: JACK's metadata database still answers (a
        // jack_property killed inside its write leaves a lock that hangs every later client).
        XCTAssertEqual(try Executables.run("jack_property", ["-l"], environment: server.environment, timeout: 10).status, 0)

        // Bad options: jack_load fails, the server keeps running, and says why on its stderr.
        let bad = try Executables.run("jack_load", ["-i", "--channels 0", "jackvu", "jackvu"], environment: server.environment)
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(try server.lsp().stdout.contains("system:playback_1"))
        for option in ["--http 8080", "--metrics 9100"] {
            let refused = try Executables.run("jack_load", ["-i", option, "jackvu", "jackvu"], environment: server.environment)
            XCTAssertNotEqual(refused.status, 0, "\(option) in process")
            XCTAssertFalse(try server.lsp().stdout.contains("jackvu"))
        }
        // And the server, which loaded and unloaded jackvu three times, ends cleanly.
        XCTAssertEqual(server.stopReturningStatus(), 0, "jackd's exit status")
    }
}
