import DSP
import Foundation
import LoudnessLog
import Outputs
@testable import MetricsExport
import Version
import XCTest

/// The table of readings, walked: every reading `--send` names goes out as OSC (and so as
/// oscdump-style text) and as JSON, where its scope says, with its unit in its JSON key; the
/// displays show what the table says they show; every `--meter` has a scale.
final class ReadingsTests: XCTestCase {
    /// Four channels (two pairs), every value finite and set, a note on every channel.
    private func snapshot() -> Snapshot {
        var s = Snapshot(channels: 4, barCount: 3, bandCount: 2)
        s.sequence = 7
        s.framesAnalysed = 48000
        s.sampleRate = 48000
        for i in s.channels.indices {
            let x = Float(i + 1)
            s.channels[i].peakDBFS = -x
            s.channels[i].rmsDBFS = -2 * x
            s.channels[i].maxTruePeakDBTP = -x / 2
            s.channels[i].truePeakDBTP = -x
            s.channels[i].pitchHz = 440
            s.channels[i].pitchNote = Note(frequency: 440)
            s.channels[i].peakFrequencyHz = 441
            s.channels[i].peakNote = Note(frequency: 441)
            s.channels[i].bars = [0.1, 0.2, 0.3]
            s.channels[i].thirds = [-40, -41]
            // Its maximum set by an xrun (the clean one below it).
            s.channels[i].maxTruePeakFault = MaximumFault(cause: .xrun, clean: Double(-x))
        }
        s.correlations = [0.5, -0.25]
        s.loudness.momentary = -22
        s.loudness.shortTerm = -23
        s.loudness.integrated = -24
        s.loudness.range = 5
        s.loudness.maxMomentary = -20
        s.loudness.maxShortTerm = -21
        s.loudness.maxMomentaryFault = MaximumFault(cause: .connection, clean: -21)
        s.loudness.maxShortTermFault = MaximumFault(cause: .xrun, clean: -22)
        s.programmes[0].measuredSeconds = 1
        s.programmes[0].histogram = [25, 75]
        s.programmes[0].target = LoudnessTarget.profile("ebu-r128")
        // One alarm, raised (silence below 0 dBFS, at once); its change is not new here
        // (AlarmTests checks PREFIX/alarm).
        let alarms = AlarmEngine(rules: [AlarmRule(kind: .silence, settings: AlarmSettings(level: 0, raise: 0, clear: 0))])
        alarms.evaluate(s, monotonic: 1, unix: 1_800_000_000)
        s.alarms = alarms.board
        // The server stalled (its state is a reading only then).
        s.status.serverResponding = false
        return s
    }

    func testEveryReadingGoesOutInEveryFormWithItsUnit() throws {
        let s = snapshot()
        XCTAssertEqual(Set(Readings.table.map(\.kind)).count, Readings.table.count, "kinds are unique")
        XCTAssertLessThanOrEqual(Readings.table.count, 64, "MessageKinds holds 64")
        for reading in Readings.table {
            let name = reading.kind
            // --send and the control input's `send` parse kinds with this.
            let kinds = try MessageKinds.parse(name)
            let kind = try XCTUnwrap(MessageKind(rawValue: name))
            XCTAssertEqual(kinds.kinds, [kind], name)
            XCTAssertFalse(reading.summary.isEmpty, name)

            // OSC: the reading's messages for each subject of its scope, and nothing else.
            let bases: [String]
            switch reading.scope {
            case .channel: bases = (1...4).map { "/p/ch/\($0)" }
            case .pair: bases = ["/p/pair/1", "/p/pair/2"]
            case .programme: bases = ["/p/loudness"]
            case .instance: bases = ["/p"]
            }
            let messages = AddressSpace(prefix: "/p", kinds: kinds).messages(for: s)
            XCTAssertEqual(messages.map(\.address), bases.flatMap { b in reading.messages.map { "\(b)/\($0.name)" } }, name)
            for (m, message) in zip(messages, bases.flatMap { _ in reading.messages }) {
                let arguments = message.fields.filter { $0.wire != .jsonOnly }.reduce(0) { n, f in
                    if case .floats(let xs) = f.value(s, 0) { return n + xs.count }
                    return n + 1
                }
                XCTAssertEqual(m.arguments.count, arguments, m.address)
                XCTAssertTrue(m.text.hasPrefix(m.address + " " + m.typeTags + " "), m.text)
            }

            // JSON: each field under its key, where the scope puts it, the unit in the key.
            let line = JSONLines(kinds: kinds).line(for: s)
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
            let channels = try XCTUnwrap(object["channels"] as? [[String: Any]], line)
            XCTAssertEqual(channels.count, 4)
            for field in reading.fields where field.wire != .oscOnly {
                let key = field.key
                if let suffix = field.unit.jsonSuffix {
                    XCTAssertTrue(key.hasSuffix(suffix), "\(name): '\(key)' should end with '\(suffix)' (\(field.unit.rawValue))")
                }
                switch reading.scope {
                case .channel:
                    for c in channels { XCTAssertNotNil(c[key], "\(name): \(key) in \(line)") }
                    XCTAssertFalse(channels[0][key] is NSNull, "\(name): \(key) is null")
                case .pair:
                    XCTAssertEqual((object[key] as? [Any])?.count, 2, "\(name): \(key) in \(line)")
                case .programme:
                    XCTAssertNotNil((object["loudness"] as? [String: Any])?[key], "\(name): \(key) in \(line)")
                case .instance:
                    let container = try XCTUnwrap(reading.jsonObject, name)
                    XCTAssertNotNil((object[container] as? [String: Any])?[key], "\(name): \(key) in \(line)")
                }
            }
            // Only this reading's keys.
            let channelKeys = Set(channels[0].keys).subtracting(["ch"])
            XCTAssertEqual(channelKeys, reading.scope == .channel ? Set(reading.fields.filter { $0.wire != .oscOnly }.map(\.key)) : [], name)

            // The displays: what they show is computed whatever --send says.
            XCTAssertEqual(Readings.displayed.contains(kind), reading.display != nil, name)
            if case .extra(let label, _)? = reading.display {
                XCTAssertTrue([.programme, .channel].contains(reading.scope), "\(name): extras are programme or channel readings")
                let shown = Readings.extras(s, scope: reading.scope, subject: 0).filter { $0.label == label }
                XCTAssertEqual(shown.map(\.key), reading.fields.filter { $0.wire != .oscOnly }.map(\.key), name)
                XCTAssertTrue(Readings.extrasJSON.contains("\"label\": \"\(label)\""), "\(name): in the page's hello")
            }
            // The file summary: each line of a field (and each further reading's) is among
            // its place's lines, its JSON key carrying its unit.
            let summaryPlaces: [SummaryLine.Place] = [.programme, .file, .fileMaximum, .channel]
            for field in reading.fields where field.wire != .oscOnly {
                let lines = summaryPlaces.flatMap { place in Readings.summaryLines([place]).filter { $0.reading.kind == name && $0.field.key == field.key }.map { (place, $0) } }
                // A further reading with no lines of its own: a channel's on each channel's
                // line; a programme's in each programme's block and the file's lines.
                var extra = false
                if case .extra? = reading.display { extra = true }
                let expected = !field.summary.isEmpty ? field.summary.count : !extra ? 0 : reading.scope == .channel ? 1 : 2
                XCTAssertEqual(lines.count, expected, "\(name): \(field.key) in the summary")
                for (place, entry) in lines {
                    XCTAssertEqual(entry.line.place, place)
                    if let suffix = field.unit.jsonSuffix { XCTAssertTrue(entry.key.hasSuffix(suffix), "\(name): summary key \(entry.key)") }
                    XCTAssertEqual([.channel, .fileMaximum].contains(place), reading.scope == .channel, "\(name): \(field.key)'s summary line in its scope's place")
                }
            }
            // A field's report column: in the CSV's header under its key, which carries its
            // unit; a reading of a programme, or a channel's whose programme figure is its
            // channels' maximum.
            for field in reading.fields {
                guard let column = field.report else { continue }
                if let suffix = field.unit.jsonSuffix { XCTAssertTrue(column.key.hasSuffix(suffix), "\(name): report key \(column.key)") }
                XCTAssertTrue(Report.csvHeader.split(separator: ",").contains(Substring(column.key)), "\(name): \(column.key) in the report's CSV")
                XCTAssertTrue(reading.scope == .programme || column.measure == .maxSamplePeak, "\(name): \(column.key)'s scope")
            }
            // A field's meter: --meter takes its name, and its scale has its zones on it.
            for field in reading.fields {
                guard let meter = field.meter else { continue }
                XCTAssertEqual(MeterScales.meter(meter.name)?.field.key, field.key, "\(name): --meter \(meter.name)")
            }
        }
        // Every figure a report recomputes from the log's blocks has one column in the table.
        XCTAssertEqual(Readings.reportColumns.map(\.column.measure).sorted { "\($0)" < "\($1)" },
                       ReportColumn.Measure.allCases.sorted { "\($0)" < "\($1)" })
        // A file's stream leaves the live-only readings out.
        let file = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(JSONLines().line(for: s, file: "f.wav").utf8)) as? [String: Any])
        for reading in Readings.table where reading.liveOnly {
            XCTAssertNil(file[reading.jsonObject ?? reading.kind], reading.kind)
        }
        XCTAssertThrowsError(try MessageKinds.parse("nope"))
    }

    /// A snapshot before any measurement (every reading at its floor, no integrated loudness,
    /// so no PLR): the text and OSC never carry NaN or infinity (a reading with no value yet is
    /// left out), and JSON says null.
    func testNoValueIsLeftOutNotNaN() throws {
        let s = Snapshot(channels: 2, barCount: 4, bandCount: 3)
        let text = AddressSpace(prefix: "/p").messages(for: s).map(\.text).joined()
        XCTAssertFalse(text.contains("nan") || text.contains("inf"), text)
        XCTAssertFalse(text.contains("/p/loudness/plr"), "PLR has no value yet")
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(JSONLines().line(for: s).utf8)) as? [String: Any])
        XCTAssertTrue((object["loudness"] as? [String: Any])?["plr_lu"] is NSNull)
    }

    /// A reading the analysis did not compute (its features are not the snapshot's) reads as
    /// none — JSON null, no OSC message — not as whatever its fields hold (the floor, or a
    /// stale value): the pitch of a snapshot computed without YIN, beside a computed RMS.
    func testAReadingNotComputedReadsAsNone() throws {
        var s = Snapshot(channels: 1, barCount: 4)
        s.channels[0].pitchHz = 440
        s.channels[0].rmsDBFS = -20
        let kinds = try MessageKinds.parse("rms,pitch")
        func pitch() throws -> (json: Any?, osc: Bool) {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(JSONLines(kinds: kinds).line(for: s).utf8)) as? [String: Any])
            let channel = try XCTUnwrap((object["channels"] as? [[String: Any]])?.first)
            XCTAssertEqual(channel["rms_dbfs"] as? Double, -20)
            let osc = AddressSpace(prefix: "/p", kinds: kinds).messages(for: s).contains { $0.address == "/p/ch/1/pitch" }
            return (channel["pitch_hz"], osc)
        }
        XCTAssertEqual(try pitch().json as? Double, 440, "made by hand: everything computed")
        XCTAssertTrue(try pitch().osc)
        s.features = [.live, .spectrum]
        XCTAssertTrue(try pitch().json is NSNull, "not computed: null")
        XCTAssertFalse(try pitch().osc, "not computed: no message")
        s.features = [.live, .yin]
        XCTAssertEqual(try pitch().json as? Double, 440)
    }

    /// Every `--meter` has a scale whose zones and marks lie on it, on every parameter.
    func testEveryMeterHasAScale() throws {
        for (name, summary) in MeterScales.names {
            XCTAssertFalse(summary.isEmpty)
            for type in PPMType.allCases {
                for k in [12, 14, 20] {
                    let p = MeterScales.Parameters(floorDBFS: -60, ppmType: type, kHeadroom: k)
                    let scale = try XCTUnwrap(MeterScales.scale(name, p), name)
                    XCTAssertLessThan(scale.range.lowerBound, scale.range.upperBound, name)
                    XCTAssertTrue(scale.range.contains(scale.yellowFrom) && scale.range.contains(scale.redFrom), name)
                    XCTAssertLessThanOrEqual(scale.yellowFrom, scale.redFrom, name)
                    XCTAssertFalse(scale.marks.isEmpty, name)
                    XCTAssertTrue(scale.marks.allSatisfy { scale.range.contains($0) }, name)
                    XCTAssertEqual(scale.fraction(of: scale.range.lowerBound), 0)
                    XCTAssertEqual(scale.fraction(of: scale.range.upperBound), 1)
                }
            }
        }
        XCTAssertNil(MeterScales.scale("loud", MeterScales.Parameters(floorDBFS: -60, ppmType: .ebu, kHeadroom: 20)))
    }
}

/// The displays' loudness history: a point a second of audio per programme, the largest
/// momentary in it, an hour kept in a ring, and its JSON for a browser that connects late.
final class LoudnessHistoryTests: XCTestCase {
    func testRecorderKeepsTheSecondsLoudestMomentaryAndTheRingAnHour() throws {
        let history = LoudnessHistory(programmes: ["main", "ad"])
        var recorder = HistoryRecorder(programmes: 2)
        var s = Snapshot(channels: 2, barCount: 0)
        s.programmes = [ProgrammeSnapshot(name: "main", channels: [0]), ProgrammeSnapshot(name: "ad", channels: [1])]
        // Ten updates a second of audio; a 100 ms burst to −10 LUFS in the third second.
        for k in 0..<40 {
            s.programmes[0].loudness.momentary = k == 25 ? -10 : -23
            s.programmes[0].loudness.shortTerm = -23
            s.programmes[1].loudness.momentary = -80
            s.programmes[1].loudness.shortTerm = -80
            recorder.take(s, elapsed: 0.1, now: 100 + Double(k) * 0.1, into: history)
        }
        let series = history.series()
        XCTAssertEqual(series.count, 2)
        XCTAssertEqual(series[0].momentary, [-23, -23, -10, -23])
        XCTAssertEqual(series[0].shortTerm, [-23, -23, -23, -23])
        XCTAssertEqual(series[0].times.count, 4)
        XCTAssertEqual(history.series(since: 103.0)[0].times.count, 1)
        // JSON: ages from now, silence below the gate as null; a JSON parser reads it.
        let json = history.json(now: 110)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let programmes = try XCTUnwrap((object["history"] as? [String: Any])?["programmes"] as? [[String: Any]])
        XCTAssertEqual(programmes.map { $0["name"] as? String }, ["main", "ad"])
        XCTAssertEqual(programmes[0]["momentary_lufs"] as? [Double], [-23, -23, -10, -23])
        XCTAssertEqual((programmes[0]["age_s"] as? [Double])?.first ?? 0, 110 - 100.9, accuracy: 0.051)
        XCTAssertEqual((programmes[1]["short_term_lufs"] as? [Any])?.count, 4)
        XCTAssertTrue((programmes[1]["short_term_lufs"] as? [Any])?.allSatisfy { $0 is NSNull } ?? false)
        // The ring keeps the newest hour.
        for t in 0..<(LoudnessHistory.capacity + 10) {
            history.record(seconds: 1000 + Double(t), momentary: [-20, -20], shortTerm: [-20, -20])
        }
        XCTAssertEqual(history.count, LoudnessHistory.capacity)
        let kept = history.series()[0].times
        XCTAssertEqual(kept.first, 1010)
        XCTAssertEqual(kept.last, 1000 + Double(LoudnessHistory.capacity + 9))
    }
}

/// The Prometheus exporter without a server: names, labels and values from a snapshot,
/// counters that follow absolute counts through a reset, the OpenMetrics form, and a
/// rendering reused for a quarter of a second.
final class MetricsExporterTests: XCTestCase {
    /// With --alarm: a series per alarm, 1 while raised, and its raises as a counter.
    func testAlarmSeries() {
        let exporter = MetricsExporter(client: "bus-a", channels: 2)
        var s = Snapshot(channels: 2, barCount: 0)
        s.correlations = [-0.9]
        for c in 0..<2 { s.channels[c].rmsDBFS = -20 }
        let alarms = AlarmEngine(rules: [AlarmRule(kind: .phase, settings: AlarmSettings(level: -0.3, raise: 0, clear: 0))])
        alarms.evaluate(s, monotonic: 1, unix: 1)
        s.alarms = alarms.board
        exporter.record(s)
        let text = exporter.exposition(openMetrics: false, at: 1_000_000_000)
        XCTAssertEqual(value(text, "jackvu_alarm_active{alarm=\"phase\",subject=\"pair/1\"}"), 1, text)
        XCTAssertEqual(value(text, "jackvu_alarms_raised_total{alarm=\"phase\",subject=\"pair/1\"}"), 1)
        s.correlations = [0.9]
        alarms.evaluate(s, monotonic: 2, unix: 2)
        s.alarms = alarms.board
        exporter.record(s)
        let later = exporter.exposition(openMetrics: false, at: 2_000_000_000)
        XCTAssertEqual(value(later, "jackvu_alarm_active{alarm=\"phase\",subject=\"pair/1\"}"), 0)
        XCTAssertEqual(value(later, "jackvu_alarms_raised_total{alarm=\"phase\",subject=\"pair/1\"}"), 1)
    }

    /// On request (`--send bits`, `--send stereo`): the bit meter per channel and the stereo
    /// levels per pair, labelled; without it, neither family.
    func testBitAndStereoSeriesOnRequest() {
        var s = Snapshot(channels: 2, barCount: 0)
        s.channels[0].bits.depth = 16
        s.channels[0].bits.quantised = 16
        s.channels[0].bits.headroom = 3
        s.channels[1].bits.constant = true
        s.channels[1].dcDBFS = -12
        s.pairLevels[0].balanceDB = 6.02
        s.pairLevels[0].midDBFS = -20
        let exporter = MetricsExporter(client: "bus-a", channels: 2, bits: true, stereo: true)
        exporter.record(s)
        let text = exporter.exposition(openMetrics: false, at: 1_000_000_000)
        XCTAssertEqual(value(text, "jackvu_channel_bit_depth_bits{channel=\"1\"}"), 16, text)
        XCTAssertEqual(value(text, "jackvu_channel_quantised_bits{channel=\"1\"}"), 16)
        XCTAssertEqual(value(text, "jackvu_channel_headroom_bits{channel=\"1\"}"), 3)
        XCTAssertEqual(value(text, "jackvu_channel_constant{channel=\"2\"}"), 1)
        XCTAssertEqual(value(text, "jackvu_channel_dc_offset_dbfs{channel=\"2\"}"), -12)
        XCTAssertEqual(try XCTUnwrap(value(text, "jackvu_pair_balance_db{pair=\"1-2\"}")), 6.02, accuracy: 1e-5)
        XCTAssertEqual(value(text, "jackvu_pair_mid_dbfs{pair=\"1-2\"}"), -20)
        let plain = MetricsExporter(client: "bus-a", channels: 2)
        plain.record(s)
        let without = plain.exposition(openMetrics: false, at: 1_000_000_000)
        XCTAssertFalse(without.contains("bit_depth") || without.contains("jackvu_pair_"), "not asked for")
    }

    /// A family the reading table declares (`ReadingField.metric`) reaches `/metrics` with no
    /// line in the exporter: PLR per programme, from the table's own field (max true peak
    /// −20 dBTP, integrated −23 LUFS: 3 LU); the floor before the first gated block. And the
    /// exporter's families are exactly those the table's fields declare, each named once (with
    /// the build information; the alarms' come with --alarm).
    func testTheReadingTablesFamilies() throws {
        var s = Snapshot(channels: 2, barCount: 0)
        s.programmes = [ProgrammeSnapshot(name: "main", channels: [0, 1], target: nil)]
        s.channels[0].maxTruePeakDBTP = -20
        s.channels[1].maxTruePeakDBTP = -26
        let exporter = MetricsExporter(client: "bus-a", channels: 2)
        exporter.record(s)
        XCTAssertEqual(value(exporter.exposition(openMetrics: false, at: 1_000_000_000), "jackvu_plr_lu{programme=\"main\"}"), -200,
                       "no integrated loudness yet: the floor")
        s.programmes[0].loudness.integrated = -23
        exporter.record(s)
        let text = exporter.exposition(openMetrics: false, at: 2_000_000_000)
        XCTAssertEqual(try XCTUnwrap(value(text, "jackvu_plr_lu{programme=\"main\"}")), 3, accuracy: 1e-9, text)
        XCTAssertTrue(text.contains("# HELP jackvu_plr_lu Peak-to-loudness ratio"), text)
        let declared = Readings.table.flatMap(\.fields).compactMap(\.metric?.name)
        XCTAssertEqual(Set(declared).count, declared.count, "each family named once")
        // Every family on /metrics is the table's but the build information's and the
        // alarms' (with every family asked for: a target, the bits and the pair levels).
        s.programmes[0].target = LoudnessTarget.profile("ebu-r128")
        let full = MetricsExporter(client: "bus-a", channels: 2, bits: true, stereo: true)
        full.record(s)
        let families = full.exposition(openMetrics: false, at: 1_000_000_000).split(separator: "\n")
            .filter { $0.hasPrefix("# TYPE ") }.map { String($0.split(separator: " ")[2]) }
        XCTAssertEqual(Set(families), Set(declared).union(["jackvu_build_info"]), "the exporter's families: the table's")
    }

    private func value(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    func testMetricsFromASnapshot() {
        let exporter = MetricsExporter(client: "bus-a", channels: 2)
        var s = Snapshot(channels: 2, barCount: 0)
        s.sampleRate = 48000
        s.programmes = [ProgrammeSnapshot(name: "main", channels: [0, 1], target: LoudnessTarget.profile("ebu-r128"))]
        s.programmes[0].loudness.shortTerm = -22.5
        s.programmes[0].loudness.integrated = -20
        s.channels[1].clips = 3
        s.status.xruns = 5
        exporter.record(s)
        var t = 0
        func scrape(_ open: Bool = false) -> String {
            t += 1_000_000_000
            return exporter.exposition(openMetrics: open, at: t)
        }
        let text = scrape()
        XCTAssertEqual(value(text, "jackvu_short_term_loudness_lufs{programme=\"main\"}"), -22.5)
        XCTAssertEqual(value(text, "jackvu_target_deviation_lu{programme=\"main\"}"), 3)
        XCTAssertEqual(value(text, "jackvu_target_state{programme=\"main\",state=\"above\"}"), 1)
        XCTAssertEqual(value(text, "jackvu_target_state{programme=\"main\",state=\"within\"}"), 0)
        XCTAssertEqual(value(text, "jackvu_channel_clips_total{channel=\"2\"}"), 3)
        XCTAssertEqual(value(text, "jackvu_xruns_total"), 5)
        XCTAssertEqual(value(text, "jackvu_sample_rate_hertz"), 48000)
        XCTAssertEqual(value(text, "jackvu_build_info{version=\"\(JackVUVersion.string)\",client=\"bus-a\"}"), 1)
        XCTAssertTrue(text.contains("# TYPE jackvu_xruns_total counter"))
        let values = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { Double($0.split(separator: " ").last ?? "") }
        XCTAssertTrue(values.allSatisfy { $0?.isFinite == true }, "silence reads the floor, never -inf or NaN: \(text)")
        // A reset brings a count back to 0: the counter restarts (Prometheus' rate() sees a reset).
        s.channels[1].clips = 1
        s.status.xruns = 7
        exporter.record(s)
        let later = scrape()
        XCTAssertEqual(value(later, "jackvu_channel_clips_total{channel=\"2\"}"), 1)
        XCTAssertEqual(value(later, "jackvu_xruns_total"), 7)
        XCTAssertFalse(later.contains("jackvu_alarm_active"), "no alarm series without --alarm")
        // OpenMetrics: counter families without _total, samples with it, # EOF last.
        let open = scrape(true)
        XCTAssertTrue(open.contains("# TYPE jackvu_xruns counter\n") && open.contains("\njackvu_xruns_total 7"), open)
        XCTAssertTrue(open.contains("# HELP jackvu_channel_clips Clips"), open)
        XCTAssertTrue(open.hasSuffix("# EOF\n"))
        // Reused within a quarter of a second, fresh after it.
        let t0 = t + 10_000_000_000
        XCTAssertEqual(value(exporter.exposition(openMetrics: false, at: t0), "jackvu_xruns_total"), 7)
        s.status.xruns = 9
        exporter.record(s)
        XCTAssertEqual(value(exporter.exposition(openMetrics: false, at: t0 + 100_000_000), "jackvu_xruns_total"), 7)
        XCTAssertEqual(value(exporter.exposition(openMetrics: false, at: t0 + 300_000_000), "jackvu_xruns_total"), 9)
    }
}

extension MetricsExporterTests {
    /// The default programme (over every channel, without `--programme`) has one name where
    /// it is shown: `/metrics`' label, `/history`, the report's and the log reader's name
    /// (`ProgrammeSnapshot.defaultName`; the displays draw the same).
    func testTheDefaultProgrammeHasOneName() {
        let name = ProgrammeSnapshot.defaultName
        XCTAssertEqual(name, "programme")
        var s = Snapshot(channels: 2, barCount: 0)
        s.programmes = [ProgrammeSnapshot(name: "", channels: [0, 1], target: nil)]
        let exporter = MetricsExporter(client: "bus-a", channels: 2)
        exporter.record(s)
        XCTAssertTrue(exporter.exposition(openMetrics: false, at: 1_000_000_000).contains("jackvu_short_term_loudness_lufs{programme=\"\(name)\"}"))
        XCTAssertTrue(LoudnessHistory(programmes: [""]).json(now: 0).contains("{\"name\": \"\(name)\""))
        XCTAssertEqual(s.programmes[0].shownName, name)
    }
}
