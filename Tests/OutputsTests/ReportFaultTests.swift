import DSP
import Foundation
import LoudnessLog
import Outputs
import TestSupport
import XCTest

/// A maximum that a fault on the bus set is labelled in the report as it is live: the log
/// marks the blocks a fault could be in (`faults`) and the causes of peak alarms
/// (`alarm_causes`); each report row keeps the clean blocks' maximum beside a faulted one.
final class ReportFaultTests: XCTestCase {
    private func power(_ lufs: Double) -> Double { pow(10, (lufs + 0.691) / 10) }
    private let t0 = 1_800_000_000.0

    private func temporaryLog() throws -> (dir: URL, path: String) {
        let dir = try makeTemporaryFolder("reportfault")
        return (dir, dir.appendingPathComponent("log.db").path)
    }

    private func report(_ path: String, segments: [ReportSegment]? = nil) throws -> Report {
        let reader = try LogReader(path: path)
        let read = try reader.read(from: t0, to: t0 + 60, programmes: nil) { _ in nil }
        return try Report(source: path, from: t0, to: t0 + 60, programmes: read.programmes, incidents: read.incidents, segments: segments) { p, add in
            try reader.forEachBlock(read.programmes[p], from: t0, to: t0 + 60, add)
        }
    }

    /// 60 s at −23 LUFS with true peak −18 dBTP; at 20 s an xrun's block: true peak +0.5,
    /// sample peak −13, and a loud 100 ms that lifts the momentary and short-term maxima;
    /// at 40 s a connection change's block whose peak is the programme's own (within 0.05 of
    /// the clean maximum, though not in it: the clean maximum is the clean blocks').
    func testAReportLabelsTheMaximaAFaultSetAndKeepsTheCleanOnes() throws {
        let (dir, path) = try temporaryLog()
        defer { removeTemporaryFolder(dir) }
        let writer = LogWriter(path: path, programmes: [LoggedProgramme(name: "", channels: [0], target: LoudnessTarget.profile("ebu-r128"))])
        writer.start()
        for k in 1...600 {
            let xrun = k == 200, change = k == 400
            writer.block(programme: 0, t: t0 + Double(k) / 10, index: k, power: power(xrun ? -10 : -23),
                         truePeak: xrun ? 0.5 : change ? -17.97 : -18, samplePeak: xrun ? -13 : -18.5,
                         fault: xrun ? FaultCause.xrun : change ? FaultCause.connection : nil)
        }
        var alarm = AlarmEvent(sequence: 1, kind: .truepeak, subject: "ch/1", programme: 0, raised: true, value: 0.5, unixTime: t0 + 20, audioTime: 20)
        alarm.cause = .xrun
        writer.alarm(alarm)
        writer.alarm(AlarmEvent(sequence: 2, kind: .truepeak, subject: "ch/1", programme: 0, raised: false, value: -18, unixTime: t0 + 25, audioTime: 25))
        writer.stop()

        let r = try report(path)
        let row = try XCTUnwrap(r.rows.first)
        XCTAssertEqual(row.maxTruePeakDBTP, 0.5, "the maximum stays the bus's")
        let byReading = Dictionary(uniqueKeysWithValues: row.faultedMaxima.map { ($0.reading, $0) })
        XCTAssertEqual(Set(byReading.keys), ["max_truepeak_dbtp", "max_sample_peak_dbfs", "max_momentary_lufs", "max_shortterm_lufs"])
        XCTAssertEqual(byReading["max_truepeak_dbtp"]?.cause, .xrun)
        XCTAssertEqual(try XCTUnwrap(byReading["max_truepeak_dbtp"]?.clean), -18, accuracy: 1e-9, "the clean blocks' maximum")
        XCTAssertEqual(try XCTUnwrap(byReading["max_sample_peak_dbfs"]?.clean), -18.5, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(byReading["max_momentary_lufs"]?.clean), -23, accuracy: 1e-6, "every window over the xrun's block left out")
        XCTAssertEqual(try XCTUnwrap(byReading["max_shortterm_lufs"]?.clean), -23, accuracy: 1e-6)
        XCTAssertGreaterThan(row.maxMomentaryLUFS, -20, "the loud block is in the maximum")
        XCTAssertEqual(row.pass, false, "the verdict is on the bus's maximum")
        XCTAssertTrue(row.failures.contains("true peak 0.5 dBTP above -1.0 dBTP (set by an xrun; clean max -18.0 dBTP)"), "\(row.failures)")
        let raised = try XCTUnwrap(r.incidents.first { $0.state == "raised" })
        XCTAssertEqual(raised.detail, "near an xrun", "the alarm's cause")
        XCTAssertNil(try XCTUnwrap(r.incidents.first { $0.state == "cleared" }).detail)

        let csv = r.render(.csv, generator: "test").split(separator: "\n")
        XCTAssertTrue(csv[0].hasSuffix(",faulted_maxima"))
        XCTAssertTrue(csv[1].contains("max true peak set by an xrun (clean max -18.0 dBTP)"), String(csv[1]))
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.render(.json, generator: "test").utf8)) as? [String: Any])
        let results = try XCTUnwrap(json["results"] as? [[String: Any]])
        let faulted = try XCTUnwrap(results[0]["faulted_maxima"] as? [[String: Any]])
        XCTAssertEqual(faulted.first { $0["reading"] as? String == "max_truepeak_dbtp" }?["cause"] as? String, "xrun")
        XCTAssertEqual(faulted.first { $0["reading"] as? String == "max_truepeak_dbtp" }?["clean"] as? Double, -18)
        let incidents = try XCTUnwrap(json["incidents"] as? [[String: Any]])
        XCTAssertEqual(incidents.first?["detail"] as? String, "near an xrun")
        let html = r.render(.html, generator: "test")
        XCTAssertTrue(html.contains("max short-term set by an xrun (clean max -23.0 LUFS)"))
        XCTAssertTrue(html.contains("ch/1 (near an xrun)"))

        // A segment without the fault has no label; a clean run reads none anywhere.
        let segmented = try report(path, segments: [ReportSegment(name: "a", from: t0, to: t0 + 30), ReportSegment(name: "b", from: t0 + 30, to: t0 + 60)])
        XCTAssertFalse(segmented.rows[0].faultedMaxima.isEmpty)
        XCTAssertEqual(segmented.rows[1].faultedMaxima, [], "the connection change's peaks are within 0.05 of the clean ones")
    }

    /// The report's reading columns are the reading table's (`ReadingField.report`): each in
    /// the CSV's header and its row, in each JSON row under its key, and those with a heading
    /// in the page's table, with the row's figure, in the table's order.
    func testTheReportsColumnsAreTheTables() throws {
        let blocks = (1...600).map { LoggedBlock(t: t0 + Double($0) / 10, index: $0, power: power($0 <= 300 ? -20 : -26)) }
        var programme = ReportProgramme(name: "", channels: [0], target: nil, blocks: blocks)
        programme.truePeakOverride = -3
        programme.samplePeakOverride = -3.5
        let r = Report(source: "test", from: t0, to: t0 + 60, programmes: [programme], incidents: [], gating: .bs1770_4)
        let row = try XCTUnwrap(r.rows.first)
        let columns = Readings.reportColumns.map(\.column)
        XCTAssertFalse(columns.isEmpty)
        let csv = r.render(.csv, generator: "test").split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.render(.json, generator: "test").utf8)) as? [String: Any])
        let result = try XCTUnwrap((json["results"] as? [[String: Any]])?.first)
        let html = r.render(.html, generator: "test")
        var lastHeading = html.startIndex
        for column in columns {
            let value = try XCTUnwrap(row.value(column.measure), column.key)
            let at = try XCTUnwrap(csv[0].firstIndex(of: column.key), column.key)
            XCTAssertEqual(csv[1][at], String(format: "%.1f", value), column.key)
            XCTAssertEqual(try XCTUnwrap(result[column.key] as? Double, column.key), value, accuracy: 0.005)
            guard let heading = column.heading else { continue }
            let th = try XCTUnwrap(html.range(of: "<th>\(heading)<br>", range: lastHeading..<html.endIndex), "\(heading) after the one before")
            lastHeading = th.upperBound
            XCTAssertTrue(html.contains("<td>\(String(format: "%.1f", value))</td>"), column.key)
        }
        XCTAssertEqual(row.integratedLUFS, 10 * log10((pow(10, -2.0) + pow(10, -2.6)) / 2), accuracy: 0.01, "half at -20, half at -26 LUFS")
        XCTAssertEqual(row.plrLU ?? 0, -3 - row.integratedLUFS, accuracy: 1e-9)
    }

    /// A log written before the `faults` and `alarm_causes` tables reads as one with no
    /// faults, and gets them when next written; a view in their place is refused.
    func testALogWithoutTheFaultTablesReadsAndGetsThem() throws {
        let (dir, path) = try temporaryLog()
        defer { removeTemporaryFolder(dir) }
        let programme = LoggedProgramme(name: "", channels: [0], target: nil)
        let writer = LogWriter(path: path, programmes: [programme])
        writer.start()
        for k in 1...100 { writer.block(programme: 0, t: t0 + Double(k) / 10, index: k, power: power(-23), truePeak: k == 50 ? -6 : -18, samplePeak: -19, fault: k == 50 ? FaultCause.xrun : nil) }
        writer.stop()
        do {
            let db = try Database(path: path, write: true, create: false)
            try db.execute("DROP TABLE faults; DROP TABLE alarm_causes;")
        }
        let old = try report(path)
        XCTAssertEqual(old.rows.first?.maxTruePeakDBTP, -6)
        XCTAssertEqual(old.rows.first?.faultedMaxima, [], "no faults marked in an older log")

        let again = LogWriter(path: path, programmes: [programme])
        again.start()
        again.block(programme: 0, t: t0 + 10.1, index: 101, power: power(-23), truePeak: -3, samplePeak: -19, fault: .connection)
        again.stop()
        XCTAssertEqual(try report(path).rows.first?.faultedMaxima.first?.cause, .connection, "the tables made again on the next write")

        do {
            let db = try Database(path: path, write: true, create: false)
            try db.execute("DROP TABLE faults; CREATE VIEW faults AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x AS programme, x AS t, 'xrun' AS cause FROM r;")
        }
        XCTAssertThrowsError(try LogReader(path: path)) { error in
            XCTAssertTrue("\(error)".contains("it has a view 'faults'"), "\(error)")
        }
    }

    /// The log's held blocks (`HeldBlocks`, the live log's and a file's): a batch of blocks
    /// gives the peaks since the block before to its newest and the fault to each; the last
    /// block takes the peaks that come after it at the end; peaks with no block to take them
    /// are not written. Read back from the log.
    func testHeldBlocksGiveEachPeakToOneBlockAndTheLastTheRest() throws {
        let blocks = try heldBlocksWritten { held, writer in
            held.raise(programme: 0, truePeak: -10, samplePeak: -12, fault: .xrun)
            held.raise(programme: 0, truePeak: -11, samplePeak: nil)
            held.hold(programme: 0, [(t0 + 0.1, 1, power(-23)), (t0 + 0.2, 2, power(-23))], to: writer)
            held.raise(programme: 0, truePeak: -3, samplePeak: nil)
            held.hold(programme: 0, [(t0 + 0.3, 3, power(-23))], to: writer)
            held.raise(programme: 0, truePeak: -1, samplePeak: -2)
            held.finish(programme: 0, to: writer)
            held.raise(programme: 0, truePeak: 0, samplePeak: 0)
            held.finish(programme: 0, to: writer)
        }
        XCTAssertEqual(blocks.map(\.index), [1, 2, 3])
        XCTAssertEqual(blocks.map(\.truePeakDBTP), [nil, -10, -1])
        XCTAssertEqual(blocks.map(\.samplePeakDBFS), [nil, -12, -2])
        XCTAssertEqual(blocks.map(\.fault), [.xrun, .xrun, nil])
    }

    /// The peaks after the last block with a fault (the stop's audio, which no update labels:
    /// `LogRecorder.finish(analyzer:unix:fault:)`) label the last block, which takes them.
    func testTheLastBlockTakesTheFaultOfThePeaksAfterIt() throws {
        let blocks = try heldBlocksWritten { held, writer in
            held.raise(programme: 0, truePeak: -20, samplePeak: -20)
            held.hold(programme: 0, [(t0 + 0.1, 1, power(-23)), (t0 + 0.2, 2, power(-23))], to: writer)
            held.raise(programme: 0, truePeak: -1, samplePeak: -3, fault: .xrun)
            held.finish(programme: 0, to: writer)
        }
        XCTAssertEqual(blocks.map(\.truePeakDBTP), [nil, -1])
        XCTAssertEqual(blocks.map(\.fault), [nil, .xrun])
    }

    /// The blocks of a one-programme log that `write` fills through held blocks, read back.
    private func heldBlocksWritten(_ write: (inout HeldBlocks, LogWriter) -> Void) throws -> [LoggedBlock] {
        let (dir, path) = try temporaryLog()
        defer { removeTemporaryFolder(dir) }
        let writer = LogWriter(path: path, programmes: [LoggedProgramme(name: "", channels: [0], target: nil)])
        writer.start()
        var held = HeldBlocks(programmes: 1)
        write(&held, writer)
        writer.stop()
        let reader = try LogReader(path: path)
        let read = try reader.read(from: t0, to: t0 + 60, programmes: nil) { _ in nil }
        var blocks: [LoggedBlock] = []
        try reader.forEachBlock(read.programmes[0], from: t0, to: t0 + 60) { blocks.append($0) }
        return blocks
    }
}
