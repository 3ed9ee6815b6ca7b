import DSP
import Foundation
import LoudnessLog
import Outputs
import TestSupport
import XCTest

/// The alarm engine's logic on synthetic snapshots (the live tests, AlarmLiveTests, raise and
/// clear each alarm on a real JACK server with real signals).
final class AlarmTests: XCTestCase {
    /// Two channels, one pair, the default programme with EBU R 128's target; a steady
    /// −20 dBFS signal.
    private func snapshot() -> Snapshot {
        var s = Snapshot(channels: 2, barCount: 1)
        s.sampleRate = 48000
        s.programmes[0].target = LoudnessTarget.profile("ebu-r128")
        for c in 0..<2 {
            s.channels[c].peakDBFS = -20
            s.channels[c].rmsDBFS = -23
            s.channels[c].truePeakDBTP = -20
        }
        s.correlations = [0.9]
        s.loudness.momentary = -23
        s.loudness.shortTerm = -23
        s.loudness.integrated = -23
        s.status.inputsConnected = 2
        return s
    }

    /// Runs `engine` over `seconds` of audio in 0.1 s updates from `start`, each snapshot made
    /// by `change` (given the time); returns the changes.
    private func run(_ engine: AlarmEngine, from start: Double, seconds: Double, _ change: (inout Snapshot, Double) -> Void) -> [AlarmEvent] {
        var events: [AlarmEvent] = []
        var t = start
        while t < start + seconds - 1e-9 {
            t += 0.1
            var s = snapshot()
            s.framesAnalysed = Int((t * 48000).rounded())
            change(&s, t)
            events += engine.evaluate(s, monotonic: t, unix: 1_800_000_000 + t)
        }
        return events
    }

    func testSilenceRaisesAfterItsTimeNotOnAPauseAndClearsAfterAudioIsBack() {
        let engine = AlarmEngine(rules: [AlarmRule(kind: .silence)])  // −40 dBFS, 10 s, 2 s
        func silent(_ s: inout Snapshot) { for c in 0..<2 { s.channels[c].peakDBFS = -120 } }
        // Music with pauses: 5 s of sound, 2 s of silence, 5 s of sound.
        var events = run(engine, from: 0, seconds: 12) { s, t in if t > 5 && t <= 7 { silent(&s) } }
        XCTAssertEqual(events, [], "a 2 s pause is no silence alarm")
        // Dead air from 12 s: raised 10 s later, at 22 s (to the update).
        events = run(engine, from: 12, seconds: 15) { s, _ in silent(&s) }
        XCTAssertEqual(events.count, 1)
        XCTAssertEqual(events.first?.kind, .silence)
        XCTAssertEqual(events.first?.subject, "programme")
        XCTAssertTrue(events.first?.raised ?? false)
        XCTAssertEqual(events.first?.audioTime ?? 0, 22.1, accuracy: 0.11)
        XCTAssertEqual(events.first?.value ?? 0, -120)
        XCTAssertEqual(engine.board.activeCount, 1)
        XCTAssertTrue(engine.board.isActive(programme: 0))
        // Audio back at 27 s: cleared 2 s later; a blip of 1 s does not clear it first.
        events = run(engine, from: 27, seconds: 3) { s, t in if t > 28 { silent(&s) } }
        XCTAssertEqual(events, [], "1 s of audio does not clear it")
        events = run(engine, from: 30, seconds: 3) { _, _ in }
        XCTAssertEqual(events.map(\.raised), [false])
        XCTAssertEqual(events.first?.audioTime ?? 0, 32.1, accuracy: 0.11)
        XCTAssertEqual(engine.board.raisedTotal, 1)
    }

    func testEachAlarmRaisesOnItsConditionAndNotOnProgrammeMaterial() {
        // Each kind: the condition, made on the steady snapshot; raise times short.
        let cases: [(AlarmKind, String, (inout Snapshot, Double) -> Void)] = [
            (.stuck, "programme", { s, _ in s.loudness.momentary = -20.2 }),
            (.clip, "ch/1", { s, t in s.channels[0].clips = Int(t * 10) }),
            (.truepeak, "programme", { s, _ in s.channels[1].truePeakDBTP = -0.5 }),
            (.loudness, "programme", { s, _ in s.loudness.shortTerm = -18 }),
            (.integrated, "programme", { s, _ in s.loudness.integrated = -20; s.programmes[0].measuredSeconds = 61 }),
            (.phase, "pair/1", { s, _ in s.correlations = [-0.8] }),
            (.leg, "pair/1", { s, _ in s.channels[1].rmsDBFS = -120 }),
            (.server, "jack", { s, _ in s.status.serverConnected = false }),
            (.server, "jack", { s, _ in s.status.serverResponding = false }),
            (.xruns, "jack", { s, t in s.status.xruns = Int(t) }),
            (.overruns, "jack", { s, t in s.status.overruns = Int(t) }),
            (.disconnected, "jack", { s, t in s.status.inputsConnected = t > 1 ? 1 : 2 }),
        ]
        for (kind, subject, condition) in cases {
            let engine = AlarmEngine(rules: [AlarmRule(kind: kind, settings: AlarmSettings(level: kind.defaults.level, raise: 2, clear: 1))])
            // Programme-like material first: levels and loudness moving, correlation positive.
            let programme: (inout Snapshot, Double) -> Void = { s, t in
                let swing = Float(6 * sin(t * 1.7))
                for c in 0..<2 { s.channels[c].peakDBFS = -12 + swing; s.channels[c].rmsDBFS = -22 + swing }
                s.loudness.momentary = -23 + Double(swing)
            }
            let calm = run(engine, from: 0, seconds: 20, programme)
            XCTAssertEqual(calm, [], "\(kind): no alarm on moving programme")
            let raised = run(engine, from: 20, seconds: 4, condition)
            XCTAssertEqual(raised.map(\.kind), [kind], "\(kind)")
            XCTAssertEqual(raised.first?.subject, subject, "\(kind)")
            let cleared = run(engine, from: 24, seconds: kind == .xruns || kind == .overruns ? 62 : 3, programme)
            XCTAssertEqual(cleared.map(\.raised), [false], "\(kind) clears")
        }
    }

    /// The server alarm's value tells a gone server (0) from a stalled one (−1); a stalled
    /// server freezes the signal alarms as a gone one does (no audio arrives).
    func testServerAlarmTellsGoneFromStalledAndAStallFreezesSignalAlarms() {
        for (connected, value) in [(false, 0.0), (true, -1.0)] {
            let engine = AlarmEngine(rules: [AlarmRule(kind: .server), AlarmRule(kind: .silence, settings: AlarmSettings(level: -40, raise: 0, clear: 0))])
            let events = run(engine, from: 0, seconds: 1) { s, _ in
                s.status.serverConnected = connected
                s.status.serverResponding = false
                s.channels[0].peakDBFS = -120
                s.channels[1].peakDBFS = -120
            }
            XCTAssertEqual(events.map(\.kind), [.server], "connected \(connected): \(events)")
            XCTAssertEqual(events.first?.value, value)
        }
    }

    /// A true-peak or clip alarm raised near an xrun says so (`cause`, in its JSON and the
    /// command's JACKVU_CAUSE); one on clean audio does not.
    func testAPeakAlarmNearAnXrunSaysSo() {
        for fault in [FaultCause?.none, .xrun] {
            let engine = AlarmEngine(rules: [AlarmRule(kind: .truepeak, settings: AlarmSettings(level: -1, raise: 0, clear: 0))])
            let events = run(engine, from: 0, seconds: 0.5) { s, _ in
                s.channels[0].truePeakDBTP = -0.5
                s.peakFault = fault
            }
            XCTAssertEqual(events.map(\.kind), [.truepeak])
            XCTAssertEqual(events.first?.cause, fault)
            XCTAssertEqual(events.first?.json.contains("\"cause\": \"xrun\""), fault != nil)
        }
    }

    func testRulesParseAndBadOnesSayWhy() throws {
        XCTAssertEqual(try AlarmRule.parse("all").count, AlarmKind.allCases.count)
        XCTAssertEqual(try AlarmRule.parse("silence,clip").map(\.kind), [.silence, .clip])
        let r = try XCTUnwrap(try AlarmRule.parse("silence:level=-50,raise=20").first)
        XCTAssertEqual(r.settings, AlarmSettings(level: -50, raise: 20, clear: 2))
        XCTAssertEqual(AlarmRule.merge(try AlarmRule.parse("all") + AlarmRule.parse("silence:raise=3")).first { $0.kind == .silence }?.settings.raise, 3)
        for bad in ["noise", "silence:level", "silence:depth=3", "silence:raise=-1", "silence:clear=nan", "silence,"] {
            XCTAssertThrowsError(try AlarmRule.parse(bad), bad) { error in
                XCTAssertFalse("\(error)".contains("\n"), "one line")
            }
        }
    }

    func testChangesGoOutAsOSCAndJSONAndTheStatusListsTheActiveOnes() throws {
        let engine = AlarmEngine(rules: [AlarmRule(kind: .phase, settings: AlarmSettings(level: -0.3, raise: 0, clear: 0))])
        var s = snapshot()
        s.correlations = [-0.9]
        s.framesAnalysed = 48000
        engine.evaluate(s, monotonic: 1, unix: 1_800_000_000.25)
        s.alarms = engine.board
        s.alarms.fresh = engine.board.recent
        let messages = AddressSpace(prefix: "/p", kinds: MessageKinds([MessageKind.alarms])).messages(for: s)
        XCTAssertEqual(messages.map(\.address), ["/p/alarms", "/p/alarm"])
        XCTAssertEqual(messages[0].text, "/p/alarms iis 1 1 \"phase pair/1\"\n")
        XCTAssertEqual(messages[1].text, "/p/alarm sssfs \"phase\" \"pair/1\" \"raised\" -0.900000 \"2027-01-15T08:00:00.250Z\"\n")
        let line = JSONLines(kinds: MessageKinds([MessageKind.alarms])).line(for: s)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let alarms = try XCTUnwrap(object["alarms"] as? [String: Any])
        XCTAssertEqual(alarms["active"] as? Int, 1)
        XCTAssertEqual(alarms["list"] as? [String], ["phase pair/1"])
        let event = try XCTUnwrap((alarms["events"] as? [[String: Any]])?.first)
        XCTAssertEqual(event["state"] as? String, "raised")
        XCTAssertEqual(event["unit"] as? String, "correlation")
        XCTAssertEqual(event["time"] as? String, "2027-01-15T08:00:00.250Z")
        // Without --alarm there is no alarms message and no alarms object.
        var plain = snapshot()
        plain.framesAnalysed = 48000
        XCTAssertEqual(AddressSpace(prefix: "/p", kinds: MessageKinds([MessageKind.alarms])).messages(for: plain).count, 0)
        XCTAssertFalse(JSONLines(kinds: .all).line(for: plain).contains("\"alarms\""))
    }

    /// The log's 100 ms blocks give back the meter's integrated loudness and range exactly
    /// (the same gating blocks and short-term windows), also across a reset.
    func testLoggedBlocksRecomputeTheMetersIntegratedLoudnessAndRange() {
        let meter = LoudnessMeter(sampleRate: 48000, layout: .stereo)
        var blocks = LoudnessBlocks()
        var cursor = 0
        var phase = 0.0
        let n = 4800
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * n)
        defer { buffer.deallocate() }
        func feed(seconds: Int, level: (Int) -> Double) {
            for k in 0..<(seconds * 10) {
                let a = pow(10, level(k) / 20)
                for i in 0..<n {
                    let x = Float(a * sin(phase))
                    phase += 2 * Double.pi * 997 / 48000
                    buffer[i] = x
                    buffer[n + i] = x * 0.7
                }
                meter.process(frames: n, from: { UnsafePointer(buffer + $0 * n) })
                meter.takeBlocks(after: &cursor) { power, index in blocks.add(power: power, index: index) }
            }
        }
        // 60 s stepping between −30 and −14 dBFS every 1.3 s.
        feed(seconds: 60) { k in [-30, -14, -22, -18, -40][(k / 13) % 5] }
        XCTAssertEqual(blocks.count, 600)
        XCTAssertEqual(blocks.integrated, meter.integrated, accuracy: 1e-9)
        XCTAssertEqual(blocks.range, meter.loudnessRange, accuracy: 1e-9)
        XCTAssertEqual(blocks.maxShortTerm, meter.maxShortTerm, accuracy: 0.05)
        // After a reset the blocks start at 1 again: a fresh recomputation matches again.
        meter.reset()
        blocks = LoudnessBlocks()
        feed(seconds: 20) { k in k < 100 ? -25 : -15 }
        XCTAssertEqual(blocks.integrated, meter.integrated, accuracy: 1e-9)
        XCTAssertEqual(blocks.range, meter.loudnessRange, accuracy: 1e-9)
    }
}

/// The log written and read back, and the report's three forms.
final class LogReportTests: XCTestCase {
    func testLogRoundTripAndReportFormsAndSegments() throws {
        let dir = try makeTemporaryFolder("log")
        defer { removeTemporaryFolder(dir) }
        let path = dir.appendingPathComponent("log.db").path
        let target = LoudnessTarget.profile("ebu-r128")
        let writer = LogWriter(path: path, programmes: [
            LoggedProgramme(name: "", channels: [0, 1], target: target), LoggedProgramme(name: "News", channels: [2], target: nil),
        ])
        writer.start()
        let t0 = 1_800_000_000.0
        // 2 minutes: programme 0 at −23 LUFS, then −20; News at −30 LUFS.
        func power(_ lufs: Double) -> Double { pow(10, (lufs + 0.691) / 10) }
        for k in 1...1200 {
            let t = t0 + Double(k) / 10
            writer.block(programme: 0, t: t, index: k, power: power(k <= 600 ? -23 : -20), truePeak: -3, samplePeak: -4)
            writer.block(programme: 1, t: t, index: k, power: power(-30), truePeak: nil, samplePeak: nil)
        }
        writer.alarm(AlarmEvent(sequence: 1, kind: .loudness, subject: "programme", programme: 0, raised: true, value: 3.5, unixTime: t0 + 70, audioTime: 70))
        writer.event("mark", t: t0 + 60, detail: "second half")
        writer.stop()
        XCTAssertEqual(writer.rowsWritten.count, 2400 + 2)  // the blocks, the alarm, the mark
        XCTAssertEqual(writer.rowsLost.count, 0)

        let reader = try LogReader(path: path)
        let span = try XCTUnwrap(try reader.timeSpan())
        XCTAssertEqual(span.0, t0 + 0.1, accuracy: 1e-6)
        let read = try reader.read(from: t0, to: t0 + 120, programmes: nil) { _ in nil }
        XCTAssertEqual(read.programmes.map(\.displayName), ["programme", "News"])
        XCTAssertEqual(read.programmes[0].target, target, "the logged target")
        XCTAssertEqual(read.marks.map(\.name), ["second half"])
        let segments = ReportSegment.between(marks: read.marks, from: t0, to: t0 + 120)
        XCTAssertEqual(segments.map(\.name), ["(start)", "second half"])
        let report = try Report(source: path, from: t0, to: t0 + 120, programmes: read.programmes, incidents: read.incidents, segments: segments) { p, add in
            try reader.forEachBlock(read.programmes[p], from: t0, to: t0 + 120, add)
        }
        XCTAssertEqual(report.rows.count, 4)
        let first = report.rows[0], second = report.rows[2]
        XCTAssertEqual(first.integratedLUFS, -23, accuracy: 1e-6)
        XCTAssertEqual(first.pass, true)
        XCTAssertEqual(second.integratedLUFS, -20, accuracy: 0.05)
        XCTAssertEqual(second.pass, false)
        XCTAssertEqual(second.alarmsRaised, 1)
        XCTAssertEqual(second.maxTruePeakDBTP, -3)
        XCTAssertNil(report.rows[1].pass, "no target: no verdict")

        let csv = report.render(.csv, generator: "test").split(separator: "\n")
        XCTAssertEqual(csv.count, 5)
        let columns = csv[0].split(separator: ",", omittingEmptySubsequences: false).count
        for line in csv { XCTAssertEqual(line.split(separator: ",", omittingEmptySubsequences: false).count, columns, String(line)) }
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(report.render(.json, generator: "test").utf8)) as? [String: Any])
        XCTAssertEqual((json["results"] as? [Any])?.count, 4)
        XCTAssertEqual((json["incidents"] as? [Any])?.count, 2)
        let html = report.render(.html, generator: "test")
        XCTAssertEqual(html.components(separatedBy: "<svg").count - 1, 2)
        XCTAssertTrue(html.contains("FAIL"))
        XCTAssertFalse(html.contains("<script"))

        // Every 1 minute; a schedule; times.
        XCTAssertEqual(ReportSegment.every(minutes: 1, from: t0, to: t0 + 120).count, 2)
        let schedule = try ReportSegment.schedule(csv: "name,start,end\nMorning,2027-01-15T08:00:00Z,2027-01-15T09:00:00Z\n# c\n")
        XCTAssertEqual(schedule, [ReportSegment(name: "Morning", from: t0, to: t0 + 3600)])
        XCTAssertThrowsError(try ReportSegment.schedule(csv: "Morning,08:00,09:00"))
        XCTAssertEqual(Report.parseTime("2027-01-15"), t0 - 8 * 3600)
        XCTAssertNil(Report.parseTime("yesterday"))
        XCTAssertThrowsError(try LogReader(path: dir.appendingPathComponent("none.db").path))
    }

    /// A log another tool has written nonsense into — text where numbers belong, NaN and
    /// infinities, negative and huge indices, unknown programmes, a missing target's parts —
    /// still reads and reports: absurd blocks count for nothing, every form stays valid.
    func testAHostileLogStillReportsSanely() throws {
        let dir = try makeTemporaryFolder("hostile")
        defer { removeTemporaryFolder(dir) }
        let path = dir.appendingPathComponent("log.db").path
        let writer = LogWriter(path: path, programmes: [LoggedProgramme(name: "ok", channels: [0], target: LoudnessTarget.profile("ebu-r128"))])
        writer.start()
        func power(_ lufs: Double) -> Double { pow(10, (lufs + 0.691) / 10) }
        for k in 1...600 { writer.block(programme: 0, t: 1000 + Double(k) / 10, index: k, power: power(-23), truePeak: -6, samplePeak: -7) }
        writer.stop()
        let db = try Database(path: path, write: true, create: false)
        try db.execute("""
            INSERT INTO programmes (name, channels, profile, target_lufs, first_seen) VALUES ('bad\u{1B}[31m<script>', 'x,-5,99999999999999999999', 'ebu-r128', 'loud', 'then');
            INSERT INTO blocks VALUES (1, 1000.05, -7, 'NaN', 'x', NULL);
            INSERT INTO blocks VALUES (1, 1000.06, 9223372036854775807, 1e308, 1e308, -1e308);
            INSERT INTO blocks VALUES (2, 1001, 1, -1, NULL, NULL);
            INSERT INTO blocks VALUES (99, 1002, 1, 1, 0, 0);
            INSERT INTO alarms VALUES ('soon', 'silence', '<b>', 42, 'raised', 'x', NULL);
            INSERT INTO events VALUES (1003, 'mark', NULL, NULL, NULL);
            """)
        let reader = try LogReader(path: path)
        let read = try reader.read(from: 0, to: 2000, programmes: nil) { _ in nil }
        let report = try Report(source: path, from: 999, to: 1100, programmes: read.programmes, incidents: read.incidents,
                                segments: ReportSegment.between(marks: read.marks, from: 999, to: 1100)) { p, add in
            try reader.forEachBlock(read.programmes[p], from: 999, to: 1100, add)
        }
        let ok = try XCTUnwrap(report.rows.first { $0.programme == "ok" })
        XCTAssertEqual(ok.integratedLUFS, -23, accuracy: 0.05, "the absurd blocks count for nothing")
        for format in ReportFormat.allCases {
            let text = report.render(format, generator: "test")
            XCTAssertFalse(text.contains("\u{1B}"), "\(format): no control character")
            if format == .html { XCTAssertFalse(text.contains("<script>"), "escaped") }
            XCTAssertFalse(text.contains("nan") || text.contains("inf"), "\(format): no NaN or infinity: \(text.prefix(2000))")
            if format == .json { XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(text.utf8))) }
        }
    }

    /// `--log-retention`: rows older than the days given go; a second run adds to the file
    /// under the same programme row.
    func testRetentionPrunesOldRowsAndRunsShareTheFile() throws {
        let dir = try makeTemporaryFolder("retention")
        defer { removeTemporaryFolder(dir) }
        let path = dir.appendingPathComponent("log.db").path
        let now = LogWriter.unixNow()
        let programme = LoggedProgramme(name: "news", channels: [0], target: nil)
        let first = LogWriter(path: path, programmes: [programme])
        first.start()
        for k in 1...10 { first.block(programme: 0, t: now - 3 * 86400 + Double(k) / 10, index: k, power: 1e-3, truePeak: nil, samplePeak: nil) }
        first.event("mark", t: now - 3 * 86400, detail: "old")
        first.stop()
        let second = LogWriter(path: path, programmes: [programme], retentionDays: 1)
        second.start()
        for k in 1...10 { second.block(programme: 0, t: now + Double(k) / 10, index: k, power: 1e-3, truePeak: nil, samplePeak: nil) }
        second.stop()
        let reader = try LogReader(path: path)
        let read = try reader.read(from: 0, to: now + 10, programmes: nil) { _ in nil }
        var blocks = 0
        try reader.forEachBlock(read.programmes[0], from: 0, to: now + 10) { _ in blocks += 1 }
        XCTAssertEqual(read.programmes.count, 1, "one programme row for both runs")
        XCTAssertEqual(blocks, 10, "the three-day-old blocks are gone")
        XCTAssertEqual(read.marks.count, 0, "and the old event")
    }
}
