#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LV2Description
import Outputs
import TestSupport
import XCTest

/// jackvu as an LV2 plugin, in real hosts: the bundle made as `Tools/lv2.sh` makes it (the
/// debug library as jackvu.so, the Turtle from `jackvu-lv2-ttl`), checked by `sord_validate`
/// against LV2's own schemas, read by lilv (`lv2info`), run offline by `lv2apply` and live by
/// `jalv` on a real JACK server with a real jacktone.
final class LV2Tests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "jackvu-lv2-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        let bundle = folder + "/jackvu.lv2"
        try FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Executables.productsDirectory + "/libJackVULV2.so", toPath: bundle + "/jackvu.so")
        let ttl = try Executables.run(try Executables.product("jackvu-lv2-ttl"), [bundle])
        XCTAssertEqual(ttl.status, 0, ttl.stderr)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    private var environment: [String: String] { ["LV2_PATH": folder] }

    /// A folder for a test's files beside the bundle's (not in it: lilv takes every entry of
    /// LV2_PATH as a bundle), removed when the test ends.
    private func scratch(_ name: String) throws -> String {
        let path = folder + "-" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    /// A file's samples as 32-bit floats, interleaved (sox).
    private func floatSamples(_ path: String) throws -> [Float] {
        let raw = path + ".f32"
        XCTAssertEqual(try Executables.run("sox", [path, "-t", "f32", raw]).status, 0)
        return try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }
    private var repository: String { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path }

    /// The Turtle is valid against LV2's schemas (core, units, port properties), lilv finds the
    /// forms, and every port the description makes is there with its symbol, kind, range,
    /// default and unit as lilv reads them — so the ports a host shows are the reading table's.
    func testTheGeneratedTurtleValidatesAndLilvReadsEveryPort() throws {
        let validate = try Executables.run("lv2_validate", [folder + "/jackvu.lv2/manifest.ttl", folder + "/jackvu.lv2/jackvu.ttl"])
        XCTAssertEqual(validate.status, 0, validate.stdout + validate.stderr)
        XCTAssertTrue((validate.stdout + validate.stderr).contains("Found 0 errors"), validate.stdout + validate.stderr)
        let listed = try Executables.run("lv2ls", [], environment: environment).stdout
        for form in LV2Description.forms {
            XCTAssertTrue(listed.contains(form.uri), "\(form.uri) in \(listed)")
            let info = try Executables.run("lv2info", [form.uri], environment: environment)
            XCTAssertEqual(info.status, 0, info.stderr)
            let symbols = info.stdout.split(separator: "\n").compactMap { line -> String? in
                let t = line.trimmingCharacters(in: .whitespaces)
                return t.hasPrefix("Symbol:") ? t.dropFirst("Symbol:".count).trimmingCharacters(in: .whitespaces) : nil
            }
            XCTAssertEqual(symbols, LV2Description.ports(form).map(\.symbol), "\(form.name): the ports lilv reads")
            XCTAssertTrue(info.stdout.contains("momentary_lufs"), info.stdout)

            // Each port as lilv reads it from the Turtle (the tests' lilv host): kind, range,
            // default and unit as the description has them — and each reading port's unit its
            // field's in the reading table (the table walk).
            let described = try Executables.run(try Executables.product("jackvu-lv2-host"), ["--describe", folder + "/jackvu.lv2", form.uri])
            XCTAssertEqual(described.status, 0, described.stderr)
            let rows = described.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            let ports = LV2Description.ports(form)
            XCTAssertEqual(rows.count, ports.count, form.name)
            for (row, port) in zip(rows, ports) {
                let what = "\(form.name) \(port.symbol)"
                XCTAssertEqual(row["symbol"] as? String, port.symbol, what)
                let kind: String, control: Bool
                switch port.kind {
                case .audioIn: (kind, control) = ("audio-in", false)
                case .audioOut: (kind, control) = ("audio-out", false)
                case .transport: (kind, control) = ("atom-in", false)
                case .reading, .alarm, .alarmsActive: (kind, control) = ("control-out", true)
                default: (kind, control) = ("control-in", true)
                }
                XCTAssertEqual(row["kind"] as? String, kind, what)
                if control {
                    for (key, expected) in [("minimum", port.minimum), ("maximum", port.maximum), ("default", port.defaultValue)] {
                        XCTAssertEqual((row[key] as? NSNumber)?.doubleValue ?? .nan, expected, accuracy: 1e-4 * max(1, abs(expected)), "\(what) \(key)")
                    }
                }
                // LV2's own units by name; jackvu's (dBFS, dBTP, LUFS, LU, VU, the PPM's marks) by symbol.
                let unit: String? = port.unit.flatMap { u in
                    switch u {
                    case .dB: return "db"
                    case .Hz: return "hz"
                    case .seconds: return "s"
                    case .dBFS, .dBTP, .LUFS, .LU, .VU, .ppmScale: return u.rawValue
                    default: return nil
                    }
                }
                XCTAssertEqual(row["unit"] as? String, unit, what)
                if case .reading(let key, _) = port.kind {
                    let scope: Reading.Scope = LV2Description.channelKeys.contains(key) ? .channel : LV2Description.pairKeys.contains(key) ? .pair : .programme
                    let field = try XCTUnwrap(LV2Description.field(key, scope: scope), "\(what): no reading field \(key)")
                    XCTAssertEqual(port.unit, field.1.unit, "\(what): the table's unit")
                }
            }
        }
        print("LV2: \(LV2Description.forms.map { "\($0.name) \(LV2Description.ports($0).count) ports" }.joined(separator: ", "))")
    }

    /// `lv2apply` runs the stereo form over a file: the audio comes out unchanged, sample for
    /// sample (the plugin can go anywhere in a chain).
    func testLV2ApplyPassesTheAudioThroughUnchanged() throws {
        let audio = try scratch("audio")
        let input = audio + "/in.wav", output = audio + "/out.wav"
        let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "32", "-e", "floating-point", input,
                                               "synth", "2", "sine", "997", "pinknoise", "vol", "0.5"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let applied = try Executables.run("lv2apply", ["-i", input, "-o", output, LV2Description.forms[1].uri], environment: environment, timeout: 60)
        XCTAssertEqual(applied.status, 0, applied.stderr)
        let (a, b) = (try floatSamples(input), try floatSamples(output))
        XCTAssertEqual(a.count, 2 * 2 * 48000, "2 s of stereo float")
        XCTAssertEqual(a.map(\.bitPattern), b.map(\.bitPattern), "the audio passes unchanged")
    }

    /// EBU Tech 3341's cases through the stereo form: `lv2apply` (lilv's own offline host)
    /// passes each case's audio through bit for bit, and jackvu-lv2-host (free-wheeling) reads
    /// the integrated loudness the specification gives (cases 1, 2, 3 and 5: −23, −33, −23,
    /// −23 LUFS, ±0.1) and the true peak (cases 15–19: −6 dBTP, and +3 for case 19, within
    /// +0.2/−0.4 as the specification allows).
    func testTech3341CasesThroughLV2ApplyAndAHost() throws {
        typealias S = EBUSignals.Segment
        let audio = try scratch("tech3341")
        let fs = 48000.0
        let cases: [(String, [[Float]], integrated: Double?, truePeak: Double?)] = [
            ("case1", EBUSignals.tones([S(seconds: 20, dBFS: -23)]), -23, nil),
            ("case2", EBUSignals.tones([S(seconds: 20, dBFS: -33)]), -33, nil),
            ("case3", EBUSignals.tones([S(seconds: 10, dBFS: -36), S(seconds: 60, dBFS: -23), S(seconds: 10, dBFS: -36)]), -23, nil),
            ("case5", EBUSignals.tones([S(seconds: 20, dBFS: -26), S(seconds: 20.1, dBFS: -20), S(seconds: 20, dBFS: -26)]), -23, nil),
            ("case15", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 0), nil, -6),
            ("case16", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 45), nil, -6),
            ("case17", EBUSignals.taperedSine(frequency: fs / 6, amplitude: 0.5, phaseDegrees: 60), nil, -6),
            ("case18", EBUSignals.taperedSine(frequency: fs / 8, amplitude: 0.5, phaseDegrees: 67.5), nil, -6),
            ("case19", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 1.41, phaseDegrees: 45), nil, 3),
        ]
        var paths: [String] = []
        for c in cases {
            let path = audio + "/\(c.0).wav"
            try writeWAV(path, c.1)
            paths.append(path)
            let through = audio + "/\(c.0)-out.wav"
            let applied = try Executables.run("lv2apply", ["-i", path, "-o", through, LV2Description.forms[1].uri], environment: environment, timeout: 60)
            XCTAssertEqual(applied.status, 0, applied.stderr)
            XCTAssertEqual(try floatSamples(path).map(\.bitPattern), try floatSamples(through).map(\.bitPattern), "\(c.0) through lv2apply")
        }
        let library = folder + "/jackvu.lv2/jackvu.so", stereo = LV2Description.forms[1].uri
        let readings = try hostReadings(["--block", "8192", "--set", "free_wheeling=1"] + paths.flatMap { [library, stereo, $0] })
        XCTAssertEqual(readings.count, cases.count)
        for (c, r) in zip(cases, readings) {
            func value(_ key: String) -> Double { (r[key] as? NSNumber)?.doubleValue ?? .nan }
            if let integrated = c.integrated { XCTAssertEqual(value("integrated_lufs"), integrated, accuracy: 0.1, c.0) }
            if let truePeak = c.truePeak {
                XCTAssertLessThanOrEqual(value("max_true_peak_dbtp"), truePeak + 0.2, c.0)
                XCTAssertGreaterThanOrEqual(value("max_true_peak_dbtp"), truePeak - 0.4, c.0)
            }
        }
    }

    /// The control outputs a host reads (jackvu-lv2-host's JSON line per instance), by symbol.
    private func hostReadings(_ args: [String]) throws -> [[String: Any]] {
        let run = try Executables.run(try Executables.product("jackvu-lv2-host"), args, timeout: 120)
        XCTAssertEqual(run.status, 0, run.stderr)
        return run.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.compactMap { $0["ports"] as? [String: Any] }
    }

    /// An offline host — jackvu-lv2-host loads the library as hosts do and runs files through
    /// it as fast as it can — that says it free-wheels (the `free_wheeling` port,
    /// `lv2:freeWheeling`) reads from the control outputs what `jackvu analyze` reads of the
    /// same files, within 0.1 LU / 0.1 dB, every frame measured: EBU Tech 3341's case 1 (a
    /// 1 kHz tone at −23 dBFS on both channels: −23.0 LUFS), a three-level sequence (the
    /// gates of integrated loudness and the loudness range) and pink noise with inter-sample
    /// peaks (the true peak). Free-wheeling, `run()` waits for the analysis to make room in
    /// its ring instead of leaving audio unmeasured.
    func testAnOfflineHostReadsWhatAnalyzeReads() throws {
        let audio = try scratch("audio")
        let tone = audio + "/case1.wav", levels = audio + "/levels.wav", noise = audio + "/noise.wav"
        try writeWAV(tone, EBUSignals.tones([.init(seconds: 20, dBFS: -23)]))
        try writeWAV(levels, EBUSignals.tones([.init(seconds: 10, dBFS: -20), .init(seconds: 10, dBFS: -30), .init(seconds: 10, dBFS: -26)]))
        // Two minutes, fed 32,768 frames a run: without free-wheeling the worker falls behind
        // here and the ring drops about a quarter of it (91 of 120 s measured, debug build).
        let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "24", noise, "synth", "120", "pinknoise", "vol", "0.3"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let library = folder + "/jackvu.lv2/jackvu.so", stereo = LV2Description.forms[1].uri
        let files = [tone, levels, noise]
        let readings = try hostReadings(["--block", "32768", "--set", "free_wheeling=1"] + files.flatMap { [library, stereo, $0] })
        XCTAssertEqual(readings.count, 3)
        let analysed = try Executables.run(try Executables.product("jackvu"), ["analyze", "--format", "json"] + files)
        XCTAssertEqual(analysed.status, 0, analysed.stderr)
        let summaries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(analysed.stdout.utf8)) as? [[String: Any]])
        for (file, (plugin, summary)) in zip(files, zip(readings, summaries)) {
            func value(_ d: [String: Any], _ key: String) -> Double { (d[key] as? NSNumber)?.doubleValue ?? .nan }
            for (port, key, tolerance) in [("integrated_lufs", "integrated_lufs", 0.1), ("range_lu", "loudness_range_lu", 0.1),
                                           ("max_momentary_lufs", "max_momentary_lufs", 0.1), ("max_short_term_lufs", "max_short_term_lufs", 0.1),
                                           ("max_true_peak_dbtp", "true_peak_dbtp", 0.1), ("plr_lu", "plr_lu", 0.1)] {
                XCTAssertEqual(value(plugin, port), value(summary, key), accuracy: tolerance, "\(port) of \((file as NSString).lastPathComponent)")
            }
            // Every frame but the last part-hop's (a 100 ms step): nothing left unmeasured.
            XCTAssertEqual(value(plugin, "duration_s"), value(summary, "duration_s"), accuracy: 0.1, (file as NSString).lastPathComponent)
        }
        XCTAssertEqual((readings[0]["integrated_lufs"] as? NSNumber)?.doubleValue ?? 0, -23, accuracy: 0.1, "EBU Tech 3341 case 1")
    }

    /// A host that runs the plugin faster than its worker can analyse without saying it
    /// free-wheels (as a loaded machine makes any host): `run()` drops what does not fit in
    /// the ring rather than wait, so audio goes unmeasured — said on stderr — but no maximum
    /// comes of the gaps: a −20 dBFS 1 kHz tone (48 samples a cycle; each dropped run of
    /// 32,768 frames a phase jump, a step the true-peak filter would overshoot by up to 2 dB)
    /// keeps its own true peak, −20.0 dBTP.
    func testAGapInTheAudioSetsNoMaximum() throws {
        let audio = try scratch("gaps"), tone = audio + "/tone.wav"
        try writeWAV(tone, [EBUSignals.tones([.init(seconds: 60, dBFS: -20)])[0]])
        let run = try Executables.run(
            try Executables.product("jackvu-lv2-host"), ["--block", "32768", folder + "/jackvu.lv2/jackvu.so", LV2Description.forms[0].uri, tone],
            timeout: 120)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("the analysis fell behind the host"), "the gaps said: \(run.stderr)")
        let ports = try XCTUnwrap(run.stdout.split(separator: "\n").compactMap {
            ((try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any])?["ports"] as? [String: Any]
        }.first)
        func value(_ key: String) -> Double { (ports[key] as? NSNumber)?.doubleValue ?? .nan }
        print("gaps: \(value("duration_s")) s of 60 measured, max true peak \(value("max_true_peak_dbtp_1")) dBTP")
        XCTAssertLessThan(value("duration_s"), 59, "audio was dropped (else the test tests nothing)")
        XCTAssertEqual(value("max_true_peak_dbtp_1"), -20, accuracy: 0.02, "the gaps set no maximum")
        XCTAssertEqual(value("peak_dbfs_1"), -20, accuracy: 0.02)
    }

    /// The alarm outputs, judged on the audio's own time (an offline host runs minutes in
    /// seconds): a tone at −0.5 dBFS on the left and its inverse on the right raises `truepeak`
    /// (above EBU R 128's −1 dBTP, the default target's) and `phase` (correlation −1 for longer
    /// than its 3 s), nothing else; 12 s of silence raises `silence` (after its 10 s) only.
    func testTheAlarmOutputsRaiseWhatTheAudioDoes() throws {
        let audio = try scratch("alarms")
        let inverted = audio + "/inverted.wav", silent = audio + "/silent.wav"
        let tone = EBUSignals.tones([.init(seconds: 6, dBFS: -0.5)], channelGains: [0])[0]
        try writeWAV(inverted, [tone, tone.map { -$0 }])
        try writeWAV(silent, [[Float](repeating: 0, count: 12 * 48000), [Float](repeating: 0, count: 12 * 48000)])
        let library = folder + "/jackvu.lv2/jackvu.so", stereo = LV2Description.forms[1].uri
        let readings = try hostReadings(["--block", "4096", "--set", "free_wheeling=1", library, stereo, inverted, library, stereo, silent])
        XCTAssertEqual(readings.count, 2)
        let kinds = LV2Description.alarmKinds(LV2Description.forms[1]).map(\.rawValue)
        func raised(_ r: [String: Any]) -> Set<String> {
            Set(kinds.filter { ((r["alarm_\($0)"] as? NSNumber)?.doubleValue ?? -1) == 1 })
        }
        XCTAssertEqual(raised(readings[0]), ["truepeak", "phase"], "\(readings[0])")
        XCTAssertEqual((readings[0]["alarms_active"] as? NSNumber)?.intValue, 2)
        XCTAssertEqual(raised(readings[1]), ["silence"], "\(readings[1])")
        XCTAssertEqual((readings[1]["alarms_active"] as? NSNumber)?.intValue, 1)
    }

    /// Two instances of one library and one of a second bundle's copy, side by side in one
    /// host process — a Swift program, with the Swift runtime of its own beside the plugins'
    /// static copies — keep their own readings: a 1 kHz tone at −20 dBFS (peak −20, −23.0
    /// LUFS) in the first, one at −30 dBFS in the other two (−30, −33.0 LUFS).
    func testTwoInstancesAndTwoBundlesInOneHostKeepTheirOwnReadings() throws {
        let audio = try scratch("audio"), second = folder + "-second"
        defer { try? FileManager.default.removeItem(atPath: second) }
        try FileManager.default.copyItem(atPath: folder, toPath: second)
        let loud = audio + "/loud.wav", quiet = audio + "/quiet.wav"
        try writeWAV(loud, [EBUSignals.tones([.init(seconds: 6, dBFS: -20)])[0]])
        try writeWAV(quiet, [EBUSignals.tones([.init(seconds: 6, dBFS: -30)])[0]])
        let mono = LV2Description.forms[0].uri
        let first = folder + "/jackvu.lv2/jackvu.so", copy = second + "/jackvu.lv2/jackvu.so"
        let readings = try hostReadings(["--set", "free_wheeling=1", first, mono, loud, first, mono, quiet, copy, mono, quiet])
        XCTAssertEqual(readings.count, 3)
        for (r, (peak, loudness)) in zip(readings, [(-20.0, -23.0), (-30.0, -33.0), (-30.0, -33.0)]) {
            XCTAssertEqual((r["peak_dbfs_1"] as? NSNumber)?.doubleValue ?? 0, peak, accuracy: 0.05, "\(r)")
            XCTAssertEqual((r["integrated_lufs"] as? NSNumber)?.doubleValue ?? 0, loudness, accuracy: 0.05, "\(r)")
        }
    }

    /// `jalv` hosts the mono form as a JACK client on a real server, a 997 Hz tone at −20 dBFS
    /// peak into it: the control outputs it prints (its `monitors` command) read the tone
    /// (sample peak −20 dBFS, RMS −23.01, momentary loudness −23.0 LUFS), computed on the
    /// plugin's worker; the target state is `within` EBU R 128 (the default) and `below` with
    /// the `target` control at Spotify's, 9 LU under it; `reset` (its trigger, set from jalv's
    /// prompt) starts the maxima again.
    func testJalvHostsItLiveAndItsMetersReadTheTone() throws {
        let server = try JackServer(label: "lv2")
        let tone = try BackgroundProcess(
            try Executables.product("jacktone"), ["--freq", "997", "--level", "-20"], environment: server.environment, stdin: true)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let host = try BackgroundProcess(
            try Executables.resolve("jalv"), ["-x", "-n", "lv2host", LV2Description.forms[0].uri],
            environment: server.environment.merging(environment) { a, _ in a }, label: "jalv", stdin: true)
        defer { host.stop() }
        try waitForPortsListed(server, ["lv2host:in_1"])
        XCTAssertEqual(try Executables.run("jack_connect", ["jacktone:out", "lv2host:in_1"], environment: server.environment).status, 0)
        // jalv's `monitors` command prints every control output as `symbol = value`.
        func latest(_ symbol: String) -> Double? {
            completeLines(host.stdout).reversed().lazy.compactMap { line -> Double? in
                let parts = line.split(separator: "=").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "> ")) }
                return parts.count == 2 && parts[0] == symbol ? Double(parts[1]) : nil
            }.first
        }
        let settled = eventually(timeout: 20) {
            host.send("monitors")
            usleep(200_000)
            guard let m = latest("momentary_lufs"), let p = latest("peak_dbfs_1") else { return false }
            return abs(m + 23.01) < 0.3 && abs(p + 20) < 0.2
        }
        print("jalv: peak \(latest("peak_dbfs_1") ?? .nan) dBFS, RMS \(latest("rms_dbfs_1") ?? .nan) dBFS, momentary \(latest("momentary_lufs") ?? .nan) LUFS")
        XCTAssertTrue(settled, "the meters in jalv: \(host.stdout.suffix(600)) \(host.stderr.suffix(300))")
        XCTAssertEqual(try XCTUnwrap(latest("rms_dbfs_1")), -23.01, accuracy: 0.1)
        // The default target, EBU R 128: −23.0 LUFS is within; Spotify's −14 (chosen from jalv's
        // prompt, as a host's automation would) puts it below, 9 LU under.
        let within = Double(try XCTUnwrap(LV2Description.states.firstIndex(of: "within")))
        let below = Double(try XCTUnwrap(LV2Description.states.firstIndex(of: "below")))
        XCTAssertTrue(eventually(timeout: 20) { () -> Bool in
            host.send("monitors")
            usleep(200_000)
            return latest("state") == within && abs((latest("relative_integrated_lu") ?? 99) - 0) < 0.3
        }, "within EBU R 128: \(host.stdout.suffix(500))")
        let spotify = try XCTUnwrap(LV2Description.targetChoices.firstIndex(of: "spotify"))
        host.send("target = \(spotify)")
        XCTAssertTrue(eventually(timeout: 20) { () -> Bool in
            host.send("monitors")
            usleep(200_000)
            return latest("state") == below && abs((latest("relative_integrated_lu") ?? 99) + 9) < 0.3
        }, "below Spotify's: \(host.stdout.suffix(500))")
        // Louder for a moment, then reset: the maximum true peak comes back down to the tone's.
        tone.send("level -6")
        XCTAssertTrue(eventually(timeout: 20) { () -> Bool in
            host.send("monitors")
            usleep(200_000)
            return (latest("max_true_peak_dbtp_1") ?? -200) > -7
        }, "louder: \(host.stdout.suffix(400))")
        tone.send("level -20")
        usleep(500_000)
        host.send("reset = 1")
        XCTAssertTrue(eventually(timeout: 20) { () -> Bool in
            host.send("monitors")
            usleep(200_000)
            return abs((latest("max_true_peak_dbtp_1") ?? 0) + 20) < 0.2
        }, "after reset: \(host.stdout.suffix(400))")
        XCTAssertTrue(host.isRunning, host.stderr)
    }

    /// PipeWire's own graph, with no JACK server: on a PipeWire the test starts, a filter-chain
    /// node (`libpipewire-module-filter-chain`, `Tools/pipewire/jackvu-meter.conf` as shipped
    /// but for the port) runs the stereo form with `osc_port` set in its `control` block; `pw-cat` plays a file into it and
    /// `pw-record` takes its output (linked by hand with `pw-link`, as a session manager would).
    /// The readings come out as OSC (`oscdump`) and match `jackvu analyze` of the same file,
    /// and the audio came through sample for sample. (Pink noise: where a live graph's 100 ms
    /// grid falls is chance, and a steady signal's integrated loudness and true peak do not
    /// depend on it; the loudness range of level steps does, by tenths of a LU.)
    func testAPipeWireFilterChainMetersAStreamAndSendsItsReadings() throws {
        let audio = try scratch("pipewire")
        let file = audio + "/noise.wav", recorded = audio + "/recorded.wav"
        // A second of silence first: pw-cat may play a little before it is linked, and silence
        // lost changes no reading compared here (the gates leave it out).
        let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "32", "-e", "floating-point", file,
                                               "synth", "14", "pinknoise", "vol", "0.25", "pad", "1", "0"])
        XCTAssertEqual(made.status, 0, made.stderr)
        let port = freeUDPPort()
        let dump = try BackgroundProcess(try Executables.resolve("oscdump"), [String(port)], label: "oscdump")
        defer { dump.stop() }
        // The README's configuration, as shipped, on a port of the test's own.
        let shipped = try String(contentsOfFile: repository + "/Tools/pipewire/jackvu-meter.conf", encoding: .utf8)
        XCTAssertTrue(shipped.contains("osc_port = 9000"), shipped)
        let pipewire = try PipeWireServer(configuration: shipped.replacingOccurrences(of: "osc_port = 9000", with: "osc_port = \(port)"),
                                          environment: environment)
        defer { pipewire.stop() }
        let stereo = ["FL", "FR"]
        try pipewire.configurePorts(of: "jackvu_meter_in", direction: "Input", position: stereo)
        try pipewire.configurePorts(of: "jackvu_meter_out", direction: "Output", position: stereo)
        let record = try BackgroundProcess(
            "pw-record", ["--rate", "48000", "--channels", "2", "--format", "f32", recorded], environment: pipewire.environment, label: "pw-record")
        defer { record.stop() }
        try pipewire.configurePorts(of: "pw-record", direction: "Input", position: stereo)
        for c in stereo { try pipewire.link("jackvu_meter_out:output_\(c)", "pw-record:input_\(c)") }
        let play = try BackgroundProcess("pw-cat", ["--playback", file], environment: pipewire.environment, label: "pw-cat")
        defer { play.stop() }
        try pipewire.configurePorts(of: "pw-cat", direction: "Output", position: stereo)
        for c in stereo { try pipewire.link("pw-cat:output_\(c)", "jackvu_meter_in:playback_\(c)") }
        XCTAssertTrue(eventually(timeout: 60) { !play.isRunning }, "pw-cat played the file: \(play.stderr)")
        usleep(1_500_000)
        record.stop(signal: SIGINT, timeout: 5)
        // oscdump prints each message as `TIMETAG ADDRESS TYPES VALUES…`: the latest of each.
        func latest(_ address: String, _ index: Int = 0) -> Double? {
            completeLines(dump.stdout).reversed().lazy.compactMap { line -> Double? in
                let parts = line.split(separator: " ")
                return parts.count >= 4 + index && parts[1] == address ? Double(parts[3 + index]) : nil
            }.first
        }
        // The file, and the recording: the same audio (below), and where it starts in the
        // graph's time is where the plugin's started, so its 100 ms grid is the plugin's.
        let analysed = try Executables.run(try Executables.product("jackvu"), ["analyze", "--format", "json", file, recorded])
        XCTAssertEqual(analysed.status, 0, analysed.stderr)
        let summaries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(analysed.stdout.utf8)) as? [[String: Any]])
        XCTAssertEqual(summaries.count, 2)
        func value(_ s: [String: Any], _ key: String) -> Double { (s[key] as? NSNumber)?.doubleValue ?? .nan }
        print("filter-chain: integrated \(latest("/jackvu/programme/stereo/integrated") ?? .nan) LUFS, max true peak "
              + "\(latest("/jackvu/programme/stereo/max_truepeak") ?? .nan) dBTP; analyze, the file: \(value(summaries[0], "integrated_lufs")) LUFS, "
              + "\(value(summaries[0], "true_peak_dbtp")) dBTP; the recording: \(value(summaries[1], "integrated_lufs")) LUFS")
        for (address, index, key) in [("/jackvu/programme/stereo/integrated", 0, "integrated_lufs"), ("/jackvu/programme/stereo/max_truepeak", 0, "true_peak_dbtp"),
                                      ("/jackvu/ch/1/truepeak", 1, "true_peak_dbtp")] {
            let sent = try XCTUnwrap(latest(address, index), "\(address) from the filter-chain: \(dump.stdout.suffix(800)) \(pipewire.log.suffix(800))")
            // A failure's evidence: each value the reading took, in order, and PipeWire's log
            // (the plugin's stderr).
            let history = completeLines(dump.stdout).compactMap { line -> String? in
                let parts = line.split(separator: " ")
                return parts.count >= 4 + index && parts[1] == address ? String(parts[3 + index]) : nil
            }.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
            XCTAssertEqual(sent, value(summaries[0], key), accuracy: 0.1,
                           "\(address) against the file's; its values: \(history.suffix(40)); \(pipewire.log.suffix(600))")
            XCTAssertEqual(sent, value(summaries[1], key), accuracy: 0.03, "\(address) against the recording's (the same grid)")
        }
        // The audio passed through unchanged: the recording holds the file's samples (from its
        // first sound on; the last period may be cut when pw-cat ends).
        let (played, through) = (try floatSamples(file), try floatSamples(recorded))
        let a = try XCTUnwrap(played.firstIndex { $0 != 0 }), b = try XCTUnwrap(through.firstIndex { $0 != 0 }, "the recording is silent")
        let compared = played.count - a - 4096  // all but the last 85 ms
        XCTAssertGreaterThan(through.count - b, compared, "the recording holds the whole sound")
        XCTAssertTrue(through[b..<(b + compared)].elementsEqual(played[a..<(a + compared)]) { $0.bitPattern == $1.bitPattern }, "the audio passes unchanged")
    }

    /// LV2 state, restored by a real host: a state folder as lilv saves one (a preset applying
    /// to the mono form: the `target` control at Spotify's, and in the plugin's own state the
    /// JSON lines file, a path relative to the folder), loaded by `jalv -l` on a JACK server
    /// with jacktone playing into it: the plugin writes its readings to that file, once a
    /// second, and they read the tone (−23 LUFS momentary) against the restored target
    /// (below Spotify's −14, 9 LU under).
    func testJalvRestoresTheStateAndTheReadingsGoToItsJSONFile() throws {
        let state = try scratch("state")
        let mono = LV2Description.forms[0].uri
        let spotify = try XCTUnwrap(LV2Description.targetChoices.firstIndex(of: "spotify"))
        try """
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix pset: <http://lv2plug.in/ns/ext/presets#> .
            @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .

            <state.ttl> a pset:Preset ; lv2:appliesTo <\(mono)> ; rdfs:seeAlso <state.ttl> .
            """.write(toFile: state + "/manifest.ttl", atomically: true, encoding: .utf8)
        try """
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix pset: <http://lv2plug.in/ns/ext/presets#> .
            @prefix state: <http://lv2plug.in/ns/ext/state#> .

            <>
                a pset:Preset ;
                lv2:appliesTo <\(mono)> ;
                lv2:port [ lv2:symbol "target" ; pset:value \(spotify).0 ] ;
                state:state [ <\(LV2Description.jsonParameter)> <readings.jsonl> ] .
            """.write(toFile: state + "/state.ttl", atomically: true, encoding: .utf8)
        let server = try JackServer(label: "lv2state")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "997", "--level", "-20"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let host = try BackgroundProcess(
            try Executables.resolve("jalv"), ["-x", "-n", "lv2state", "-l", state, mono],
            environment: server.environment.merging(environment) { a, _ in a }, label: "jalv", stdin: true)
        defer { host.stop() }
        try waitForPortsListed(server, ["lv2state:in_1"])
        XCTAssertEqual(try Executables.run("jack_connect", ["jacktone:out", "lv2state:in_1"], environment: server.environment).status, 0)
        let file = state + "/readings.jsonl"
        func last() -> [String: Any]? {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
            return completeLines(text).last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        let read = eventually(timeout: 20) {
            guard let l = last()?["loudness"] as? [String: Any] else { return false }
            return abs(((l["momentary_lufs"] as? NSNumber)?.doubleValue ?? 0) + 23) < 0.3 && l["state"] as? String == "below"
                && abs(((l["relative_integrated_lu"] as? NSNumber)?.doubleValue ?? 0) + 9) < 0.3
        }
        XCTAssertTrue(read, "the JSON lines file: \(String(describing: last())) \(host.stderr.suffix(400))")
        let l = try XCTUnwrap(last()?["loudness"] as? [String: Any])
        XCTAssertEqual(l["profile"] as? String, "spotify", "the restored target")
        let lines = completeLines(try String(contentsOfFile: file, encoding: .utf8)).count
        usleep(2_100_000)
        let more = completeLines(try String(contentsOfFile: file, encoding: .utf8)).count - lines
        XCTAssertTrue((1...3).contains(more), "a line a second: \(more) in 2.1 s")
    }

    /// The JSON lines file and the loudness log set as a host's generic UI sets a file
    /// parameter (a `patch:Set` of an `atom:Path` on the control port, read in run()), and saved
    /// in the plugin's LV2 state when the host asks (`state:interface`): jackvu-lv2-host
    /// rendering 5 s of a −20 dBFS tone offline gets a JSON line after each second of audio,
    /// reading the tone, and a log `jackvu report` reads; the state holds both paths; run() takes the `patch:Set`s (a path, and the OSC destinations' string) under RealtimeSanitizer without a report.
    func testAHostSetsTheJSONFileAndTheLogAndSavesThemInTheState() throws {
        let audio = try scratch("json")
        let tone = audio + "/tone.wav", lines = audio + "/readings.jsonl", log = audio + "/loudness.db"
        try writeWAV(tone, EBUSignals.tones([.init(seconds: 5, dBFS: -20)], channelGains: [0]))
        let run = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--json", lines, "--log", log, "--state", folder + "/jackvu.lv2/jackvu.so", LV2Description.forms[0].uri, tone,
        ], timeout: 60)
        XCTAssertEqual(run.status, 0, run.stderr)
        let line = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((line["state"] as? [String: String])?[LV2Description.jsonParameter], lines, "the state: \(run.stdout.suffix(300))")
        XCTAssertEqual((line["state"] as? [String: String])?[LV2Description.logParameter], log, "the state: \(run.stdout.suffix(300))")
        // The loudness log, as jackvu's --log keeps it: the 100 ms blocks of the 5 s, the last
        // one too (it completes after the last hop: taken at the end), the start and the stop,
        // and `jackvu report` reads the tone.
        let counts = try Executables.run("sqlite3", [log, "SELECT count(*) FROM blocks; SELECT group_concat(kind) FROM events;"])
        XCTAssertEqual(counts.stdout.split(separator: "\n"), ["50", "start,stop"], counts.stderr)
        let report = try Executables.run(try Executables.product("jackvu"), ["report", log, "--type", "json"])
        XCTAssertEqual(report.status, 0, report.stderr)
        let row = try XCTUnwrap(((try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])?["results"] as? [[String: Any]])?.first)
        XCTAssertEqual(row["integrated_lufs"] as? Double ?? 0, -23, accuracy: 0.1, "\(row)")
        XCTAssertEqual(row["max_truepeak_dbtp"] as? Double ?? 0, -20, accuracy: 0.1, "the blocks carry the true peak")
        XCTAssertEqual(row["result"] as? String, "pass", "\(row)")
        // A file whose loudest 900 samples come after its last block and its last hop (96,300
        // samples at −20 dBFS, then −3: the blocks end every 4,800 samples, the hops every
        // 1,024, the last of each at 96,000 and 96,256): the log's last block carries their
        // peaks (the plugin's last audio, taken at the end; no hop or block comes after it).
        let ending = audio + "/ending.wav", endLog = audio + "/ending.db"
        try writeWAV(ending, EBUSignals.tones([.init(seconds: 96_300 / 48_000, dBFS: -20), .init(seconds: 900 / 48_000, dBFS: -3)], channelGains: [0]))
        let ended = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--log", endLog, folder + "/jackvu.lv2/jackvu.so", LV2Description.forms[0].uri, ending,
        ], timeout: 60)
        XCTAssertEqual(ended.status, 0, ended.stderr)
        let last = try Executables.run("sqlite3", [endLog, "SELECT count(*), max(true_peak_dbtp), max(sample_peak_dbfs) FROM blocks;"])
        let peaks = last.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").compactMap { Double($0) }
        XCTAssertEqual(peaks.count, 3, last.stdout + last.stderr)
        XCTAssertEqual(peaks.first ?? 0, 20, "the 2 s's blocks")
        // (The true peak above −3: the tone's abrupt start and end ring between the samples.)
        XCTAssertEqual(peaks.dropFirst().first ?? 0, -2.5, accuracy: 0.6, "the last samples' true peak")
        XCTAssertEqual(peaks.last ?? 0, -3, accuracy: 0.1, "the last samples' sample peak")
        let written = completeLines(try String(contentsOfFile: lines, encoding: .utf8)).compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let times = written.compactMap { ($0["time_s"] as? NSNumber)?.doubleValue }
        XCTAssertEqual(times.map { Int($0) }, [0, 1, 2, 3, 4], "a line after each second of audio: \(times)")
        let loudness = try XCTUnwrap(written.last?["loudness"] as? [String: Any])
        XCTAssertEqual((loudness["momentary_lufs"] as? NSNumber)?.doubleValue ?? 0, -23.0, accuracy: 0.1)
        XCTAssertEqual(((written.last?["channels"] as? [[String: Any]])?.first?["peak_dbfs"] as? NSNumber)?.doubleValue ?? 0, -20, accuracy: 0.1)

        // In real time (not free-wheeling), under RealtimeSanitizer: run() reads the patch:Set
        // with no allocation, lock or system call (the canary's one allocation is caught the
        // same way in jalv, testRunIsRealtimeSafeInJalvUnderRealtimeSanitizer).
        let checked = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--json", audio + "/rt.jsonl", "--osc", "osc.udp://localhost:9/", "--state", folder + "/jackvu.lv2/jackvu.so", LV2Description.forms[0].uri, tone,
        ], environment: ["LD_PRELOAD": try rtsanPreload()], timeout: 60)
        XCTAssertEqual(checked.status, 0, checked.stderr)
        XCTAssertFalse(checked.stderr.contains("RealtimeSanitizer"), checked.stderr)
        XCTAssertTrue(checked.stdout.contains("\"\(LV2Description.jsonParameter)\": \"\(audio)/rt.jsonl\""), checked.stdout)
        // (The OSC destinations, an atom:String, through the same patch:Set path in run().)
        XCTAssertTrue(checked.stdout.contains("\"\(LV2Description.oscParameter)\": \"osc.udp://localhost:9/\""), checked.stdout)
        // Nothing listens at port 9: the sends the kernel refuses (the port unreachable) are
        // said on stderr, with their count (they were counted and never read).
        XCTAssertTrue(checked.stderr.contains("OSC: datagrams to a destination could not be sent"), checked.stderr)
    }

    /// What a DAW's master bus feeds elsewhere: OSC to destinations named as `--osc` names them
    /// (the `osc` parameter, an `atom:String`: `localhost` by name, resolved off the worker,
    /// and one that is no URL — one line on stderr) and JSON lines to a Unix-domain socket a
    /// real reader listens on (`socat`); both set by `patch:Set` and kept in the state.
    /// jackvu-lv2-host renders 6 s of a −20 dBFS tone through the mono form: socat receives a
    /// JSON line after each second of audio, oscdump the readings (−23.0 LUFS integrated) and
    /// the plugin's status counters.
    func testOSCDestinationsAndAJSONSocketFromAHost() throws {
        let audio = try scratch("sockets")
        let tone = audio + "/tone.wav", socket = audio + "/readings.sock"
        try writeWAV(tone, EBUSignals.tones([.init(seconds: 6, dBFS: -20)], channelGains: [0]))
        let port = freeUDPPort()
        let dump = try BackgroundProcess(try Executables.resolve("oscdump"), [String(port)], label: "oscdump")
        defer { dump.stop() }
        XCTAssertTrue(waitForUDPPort(port), "oscdump listens")
        let reader = try BackgroundProcess(try Executables.resolve("socat"), ["-u", "UNIX-LISTEN:" + socket, "-"], label: "socat")
        defer { reader.stop() }
        XCTAssertTrue(eventually(timeout: 10) { FileManager.default.fileExists(atPath: socket) }, "socat listens: \(reader.stderr)")
        let urls = "osc.udp://localhost:\(port)/, not-a-url"
        let run = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--osc", urls, "--json", socket, "--state", folder + "/jackvu.lv2", LV2Description.forms[0].uri, tone,
        ], timeout: 60)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stderr.split(separator: "\n").filter { $0.contains("'not-a-url' is not an OSC URL") }.count, 1, run.stderr)
        let line = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((line["state"] as? [String: String])?[LV2Description.oscParameter], urls, "the state: \(run.stdout.suffix(300))")
        XCTAssertEqual((line["state"] as? [String: String])?[LV2Description.jsonParameter], socket)

        XCTAssertTrue(eventually(timeout: 10) { completeLines(reader.stdout).count >= 6 }, "socat received: \(reader.stdout.suffix(400))")
        let written = completeLines(reader.stdout).compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(written.compactMap { ($0["time_s"] as? NSNumber)?.intValue }, [0, 1, 2, 3, 4, 5], "a line after each second of audio")
        let loudness = try XCTUnwrap(written.last?["loudness"] as? [String: Any])
        XCTAssertEqual((loudness["momentary_lufs"] as? NSNumber)?.doubleValue ?? 0, -23.0, accuracy: 0.1)

        // oscdump prints `TIMETAG ADDRESS TYPES VALUE`: the last integrated loudness sent.
        func integrated() -> Double? {
            completeLines(dump.stdout).reversed().lazy.compactMap { l -> Double? in
                let parts = l.split(separator: " ")
                return parts.count >= 4 && parts[1] == "/jackvu/loudness/integrated" ? Double(parts[3]) : nil
            }.first
        }
        XCTAssertTrue(eventually(timeout: 5) { integrated() != nil }, "oscdump received: \(dump.stdout.suffix(400))")
        XCTAssertEqual(integrated() ?? 0, -23.0, accuracy: 0.1, "the last bundle's integrated loudness")
        // And the plugin's own counters, as in its JSON lines: overruns, non-finite samples,
        // OSC datagrams not sent (`/jackvu/status iii`; the JACK client's other nine are not
        // a plugin's).
        let status = completeLines(dump.stdout).last { $0.split(separator: " ").dropFirst().first == "/jackvu/status" }
        XCTAssertEqual(status.map { Array($0.split(separator: " ").dropFirst(2)) }, ["iii", "0", "0", "0"], "oscdump received: \(dump.stdout.suffix(400))")

        // A socket whose reader is gone (killed: its file stays): one line on stderr, not one a
        // second, and the meters go on.
        let dead = audio + "/dead.sock"
        let gone = try BackgroundProcess(try Executables.resolve("socat"), ["-u", "UNIX-LISTEN:" + dead, "-"], label: "socat-gone")
        XCTAssertTrue(eventually(timeout: 10) { FileManager.default.fileExists(atPath: dead) }, "socat listens: \(gone.stderr)")
        _ = gone.stop(signal: SIGKILL)
        let refused = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--json", dead, folder + "/jackvu.lv2", LV2Description.forms[0].uri, tone,
        ], timeout: 60)
        XCTAssertEqual(refused.status, 0, refused.stderr)
        XCTAssertEqual(refused.stderr.split(separator: "\n").filter { $0.contains("JSON lines socket \(dead): cannot connect") }.count, 1, refused.stderr)
        let ports = (try? JSONSerialization.jsonObject(with: Data(refused.stdout.utf8)) as? [String: Any])?["ports"] as? [String: Any]
        XCTAssertEqual((ports?["integrated_lufs"] as? NSNumber)?.doubleValue ?? 0, -23.0, accuracy: 0.1, refused.stdout)
    }

    /// The target of one's own and the maximum true peak, as `--target -20` and
    /// `--max-true-peak -21` make them: a −20 dBFS tone (−23.0 LUFS, −20 dBTP) reads 3 LU
    /// below a −20 LUFS target, and above a −21 dBTP limit (the state says so, and the
    /// `truepeak` alarm is raised); with neither, EBU R 128's target holds it within.
    func testTheTargetLoudnessAndMaximumTruePeakControls() throws {
        let audio = try scratch("target")
        let tone = audio + "/tone.wav"
        try writeWAV(tone, EBUSignals.tones([.init(seconds: 5, dBFS: -20)], channelGains: [0]))
        let library = folder + "/jackvu.lv2/jackvu.so", mono = LV2Description.forms[0].uri
        func state(_ r: [String: Any]) -> String? {
            (r["state"] as? NSNumber).flatMap { v in v.intValue >= 0 ? LV2Description.states[v.intValue] : nil }
        }
        func value(_ r: [String: Any], _ key: String) -> Double { (r[key] as? NSNumber)?.doubleValue ?? .nan }
        let own = try XCTUnwrap(try hostReadings(["--set", "free_wheeling=1", "--set", "target_lufs=-20", library, mono, tone]).first)
        XCTAssertEqual(value(own, "relative_integrated_lu"), -3, accuracy: 0.1, "\(own)")
        XCTAssertEqual(state(own), "below")
        XCTAssertEqual(value(own, "alarm_truepeak"), 0)
        let limited = try XCTUnwrap(try hostReadings(["--set", "free_wheeling=1", "--set", "max_true_peak=-21", library, mono, tone]).first)
        XCTAssertEqual(state(limited), "true-peak-over", "\(limited)")
        XCTAssertEqual(value(limited, "alarm_truepeak"), 1)
        let defaults = try XCTUnwrap(try hostReadings(["--set", "free_wheeling=1", library, mono, tone]).first)
        XCTAssertEqual(state(defaults), "within", "\(defaults)")
        XCTAssertEqual(value(defaults, "relative_integrated_lu"), 0, accuracy: 0.1)
    }

    /// What a host or a session may hand the plugin that it must refuse without losing the
    /// readings: a JSON lines file and a log in a folder that does not exist (one line each on
    /// stderr, the host's log), a path longer than the plugin keeps (refused: the state holds
    /// none), 1,000 runs of pseudo-random events on the control port (sizes past the
    /// sequence, objects of patch:Set with random keys), and audio with NaN, ±∞ and an absurd
    /// sample in it (an upstream plugin's fault: replaced by silence before the meters, said
    /// once on stderr and counted in the JSON's `status`; before, the loudness, VU, PPM and K
    /// meters read nothing from the NaN on): the host ends normally and the meters read the
    /// tone (−23.0 LUFS).
    func testBadPathsAndRandomEventsAreRefusedAndTheMetersGoOn() throws {
        let audio = try scratch("bad")
        let tone = audio + "/tone.wav"
        try writeWAV(tone, EBUSignals.tones([.init(seconds: 6, dBFS: -20)], channelGains: [0]))
        let library = folder + "/jackvu.lv2/jackvu.so", mono = LV2Description.forms[0].uri
        let missing = audio + "/no-such-folder"
        let bad = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--json", missing + "/r.jsonl", "--log", missing + "/l.db", library, mono, tone,
        ], timeout: 60)
        XCTAssertEqual(bad.status, 0, bad.stderr)
        let said = bad.stderr.split(separator: "\n")
        XCTAssertEqual(said.filter { $0.contains("cannot open the JSON lines file \(missing)/r.jsonl") }.count, 1, bad.stderr)
        XCTAssertEqual(said.filter { $0.contains("cannot use the loudness log \(missing)/l.db") }.count, 1, bad.stderr)
        func integrated(_ out: String) -> Double {
            ((try? JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])?["ports"] as? [String: Any])?["integrated_lufs"]
                .flatMap { ($0 as? NSNumber)?.doubleValue } ?? .nan
        }
        XCTAssertEqual(integrated(bad.stdout), -23, accuracy: 0.1)
        let long = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--json", audio + "/" + String(repeating: "x", count: 5000), "--state", library, mono, tone,
        ], timeout: 60)
        XCTAssertEqual(long.status, 0, long.stderr)
        XCTAssertTrue(long.stdout.contains("\"state\": {}"), "an over-long path refused: \(long.stdout.suffix(200))")
        let random = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--block", "288", "--random-events", "12345", library, mono, tone,
        ], timeout: 60)
        XCTAssertEqual(random.status, 0, random.stderr)
        XCTAssertEqual(integrated(random.stdout), -23, accuracy: 0.1, random.stdout)

        let damaged = audio + "/damaged.wav", lines = audio + "/damaged.jsonl"
        var samples = EBUSignals.tones([.init(seconds: 6, dBFS: -20)], channelGains: [0])[0]
        for (k, v) in [Float.nan, .infinity, -.infinity, 1e6].enumerated() { samples[96_000 + 100 * k] = v }
        try writeWAV(damaged, [samples])
        let poisoned = try Executables.run(try Executables.product("jackvu-lv2-host"), [
            "--set", "free_wheeling=1", "--json", lines, library, mono, damaged,
        ], timeout: 60)
        XCTAssertEqual(poisoned.status, 0, poisoned.stderr)
        XCTAssertEqual(poisoned.stderr.split(separator: "\n").filter { $0.contains("replaced by silence: 4 so far") }.count, 1, poisoned.stderr)
        let ports = try XCTUnwrap(((try JSONSerialization.jsonObject(with: Data(poisoned.stdout.utf8))) as? [String: Any])?["ports"] as? [String: Any])
        func value(_ key: String) -> Double { (ports[key] as? NSNumber)?.doubleValue ?? .nan }
        print("after NaN, ±∞ and 10⁶: momentary \(value("momentary_lufs")) LUFS, VU \(value("vu_1")), PPM \(value("ppm_1")), K \(value("k_db_1"))")
        for key in ["momentary_lufs", "short_term_lufs", "integrated_lufs"] { XCTAssertEqual(value(key), -23, accuracy: 0.1, key) }
        XCTAssertEqual(value("vu_1"), -2, accuracy: 0.1, "VU: a −20 dBFS sine reads −2 VU")
        XCTAssertGreaterThan(value("ppm_1"), -10, "PPM")
        XCTAssertEqual(value("k_db_1"), 0, accuracy: 0.1, "K-20: a −20 dBFS sine reads 0 (the K-System reads a sine at its peak level)")
        let last = try XCTUnwrap(completeLines(try String(contentsOfFile: lines, encoding: .utf8)).last.flatMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        })
        let status = try XCTUnwrap(last["status"] as? [String: Any], "\(last.keys)")
        XCTAssertEqual(status.keys.sorted(), LV2Description.statusFields.sorted(), "the plugin's own counters only")
        XCTAssertEqual((status["nonfinite_samples"] as? NSNumber)?.intValue, 4)
        XCTAssertEqual((status["overruns"] as? NSNumber)?.intValue, 0)
    }

    /// With `follow_transport` on, the integration follows the host's transport (the
    /// `time:Position` jalv sends from JACK's, moved by a real `jack_transport`): standing,
    /// nothing is integrated; rolling, the duration grows; stopped again, it holds.
    func testTheIntegrationFollowsTheHostsTransport() throws {
        let server = try JackServer(label: "lv2tp")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "997", "--level", "-20"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let host = try BackgroundProcess(
            try Executables.resolve("jalv"), ["-x", "-n", "lv2tp", "-c", "follow_transport=1", LV2Description.forms[0].uri],
            environment: server.environment.merging(environment) { a, _ in a }, label: "jalv-transport", stdin: true)
        defer { host.stop() }
        try waitForPortsListed(server, ["lv2tp:in_1"])
        XCTAssertEqual(try Executables.run("jack_connect", ["jacktone:out", "lv2tp:in_1"], environment: server.environment).status, 0)
        let transport = try BackgroundProcess("jack_transport", [], environment: server.environment, stdin: true)
        defer {
            transport.send("quit")
            transport.stop()
        }
        func latest(_ symbol: String) -> Double? {
            completeLines(host.stdout).reversed().lazy.compactMap { line -> Double? in
                let parts = line.split(separator: "=").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "> ")) }
                return parts.count == 2 && parts[0] == symbol ? Double(parts[1]) : nil
            }.first
        }
        func until(_ what: String, _ condition: @escaping () -> Bool) {
            XCTAssertTrue(eventually(timeout: 20) { () -> Bool in
                host.send("monitors")
                usleep(200_000)
                return condition()
            }, "\(what): \(host.stdout.suffix(700))")
        }
        usleep(2_000_000)
        // Standing: the tone arrives (its sample peak, which the transport does not gate) and
        // nothing is integrated. (Not the momentary loudness: it moves only while rolling, and
        // read above −24 here only when the tone got in before jalv set `follow_transport`.)
        until("standing: paused, nothing integrated") {
            latest("paused") == 1 && latest("duration_s") == 0 && abs((latest("peak_dbfs_1") ?? -200) + 20) < 0.5
        }
        transport.send("play")
        until("rolling: integrating") { latest("paused") == 0 && (latest("duration_s") ?? 0) > 1.5 && (latest("momentary_lufs") ?? -200) > -24 }
        transport.send("stop")
        until("stopped: paused again") { latest("paused") == 1 }
        let held = try XCTUnwrap(latest("duration_s"))
        usleep(1_500_000)
        until("the duration held") { latest("duration_s") == held }
    }

    /// RealtimeSanitizer's runtime as a library to preload into a host (Tools/test.sh builds
    /// it beside the sanitized binaries).
    private func rtsanPreload() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let dir = ProcessInfo.processInfo.environment["JACKVU_RTSAN_BIN_DIR"] ?? root.path + "/.build-rtsan/debug"
        let path = dir + "/librtsan-preload.so"
        guard FileManager.default.fileExists(atPath: path) else { throw skipOrFail("no \(path): Tools/test.sh builds it") }
        return path
    }

    /// run() is real-time safe inside a real host: jalv, with RealtimeSanitizer's runtime
    /// preloaded, hosts the stereo form on a server of 64-frame periods (750 cycles a second)
    /// with a tone flowing for 14 s (10,500 calls); run() marks itself a real-time context, so an allocation, a
    /// lock or a system call in it would abort jalv with a report: jalv still runs, nothing was
    /// reported, and the meters read the tone (run() ran). The canary (`JACKVU_LV2_CANARY=1`:
    /// one allocation in the first run()) is caught: the check is live.
    func testRunIsRealtimeSafeInJalvUnderRealtimeSanitizer() throws {
        let preload = try rtsanPreload()
        let server = try JackServer(sampleRate: 48000, period: 64, label: "lv2rt")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "997", "--level", "-20"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        let jalv = try Executables.resolve("jalv")
        var base = server.environment.merging(environment) { a, _ in a }
        base["LD_PRELOAD"] = preload
        let host = try BackgroundProcess(jalv, ["-x", "-n", "lv2rt", LV2Description.forms[1].uri], environment: base, label: "jalv-rtsan", stdin: true)
        defer { host.stop() }
        do { try waitForPortsListed(server, ["lv2rt:in_2"]) } catch { XCTFail("jalv: \(host.stdout.suffix(300)) \(host.stderr.suffix(1500))"); throw error }
        for input in ["lv2rt:in_1", "lv2rt:in_2"] {
            XCTAssertEqual(try Executables.run("jack_connect", ["jacktone:out", input], environment: server.environment).status, 0)
        }
        // 14 s at 750 cycles a second: 10,500 run() calls.
        usleep(14_000_000)
        // (jalv's stdout is a pipe, fully buffered: `monitors` until its output shows.)
        let read = eventually(timeout: 20) { () -> Bool in
            host.send("monitors")
            usleep(200_000)
            return host.stdout.contains("peak_dbfs_2 = -20.0")
        }
        XCTAssertTrue(host.isRunning, "jalv ended: \(host.stderr.suffix(1500))")
        XCTAssertFalse(host.stderr.contains("RealtimeSanitizer"), host.stderr)
        XCTAssertTrue(read, "the meters under RTSan: \(host.stdout.suffix(400))")

        var canaryEnvironment = base
        canaryEnvironment["JACKVU_LV2_CANARY"] = "1"
        // jalv makes a folder /tmp/jalv-XXXXXX (a fixed place, not TMPDIR) and removes it when it
        // closes; the canary's jalv is ended by RTSan, so its folder is removed here.
        let jalvFolders = Self.jalvFolders()
        defer {
            for folder in Self.jalvFolders().subtracting(jalvFolders) { try? FileManager.default.removeItem(atPath: folder) }
        }
        let canary = try BackgroundProcess(jalv, ["-x", "-n", "lv2canary", LV2Description.forms[0].uri], environment: canaryEnvironment,
                                           label: "jalv-canary", stdin: true)
        defer { canary.stop() }
        // RTSan reports (symbolised) and ends the host.
        XCTAssertTrue(eventually(timeout: 30) { !canary.isRunning }, "the canary's allocation did not end jalv: \(canary.stderr.suffix(600))")
        XCTAssertTrue(canary.stderr.contains("unsafe-library-call") && canary.stderr.contains("PluginInstance") && canary.stderr.contains("run"),
                      canary.stderr.suffix(900).description)
    }

    /// jalv's temporary folders: empty folders of this user's named /tmp/jalv-XXXXXX.
    static func jalvFolders() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        return Set(names.filter { $0.hasPrefix("jalv-") && $0.count == 11 }.map { "/tmp/" + $0 }.filter { path in
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else { return false }
            return (try? FileManager.default.contentsOfDirectory(atPath: path).isEmpty) ?? false
        })
    }
}
