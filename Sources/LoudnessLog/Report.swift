#if canImport(Glibc)
import Glibc
#endif
import DSP
import Outputs

/// One logged 100 ms block of a programme.
public struct LoggedBlock: Sendable {
    /// Unix seconds at the block's end.
    public var t: Double
    /// Its number since the meter's start or reset (a window never spans a break).
    public var index: Int
    /// Mean weighted power over the 100 ms.
    public var power: Double
    public var truePeakDBTP: Double?
    public var samplePeakDBFS: Double?
    /// A fault on the bus (an xrun, a connection change) that could be in the block.
    public var fault: FaultCause?
    public init(t: Double, index: Int, power: Double, truePeakDBTP: Double? = nil, samplePeakDBFS: Double? = nil, fault: FaultCause? = nil) {
        self.t = t
        self.index = index
        self.power = power
        self.truePeakDBTP = truePeakDBTP
        self.samplePeakDBFS = samplePeakDBFS
        self.fault = fault
    }
}

/// A programme's logged blocks over a report's time range.
public struct ReportProgramme: Sendable {
    public var name: String
    /// 0-based inputs.
    public var channels: [Int]
    public var target: LoudnessTarget?
    /// In time order.
    public var blocks: [LoggedBlock]
    /// Its rows in the log's `programmes` table (`LogReader`).
    public var logIDs: [Int] = []
    /// The largest true and sample peak when the blocks carry none (a file report: the
    /// file's own).
    public var truePeakOverride: Double?
    public var samplePeakOverride: Double?
    public init(name: String, channels: [Int], target: LoudnessTarget?, blocks: [LoggedBlock]) {
        self.name = name
        self.channels = channels
        self.target = target
        self.blocks = blocks
    }
    /// `programme` for the default programme, else its name.
    public var displayName: String { ProgrammeSnapshot.shownName(name) }
}

/// An alarm change or chain event as logged.
public struct LoggedIncident: Sendable {
    public var t: Double
    /// An alarm's kind, or an event's (`server_lost`, `mark`, …).
    public var kind: String
    public var subject: String
    /// `raised`/`cleared` for alarms; nil for events.
    public var state: String?
    public var value: Double?
    public var detail: String?
    /// The programme's name (nil: none).
    public var programme: String?
    public init(t: Double, kind: String, subject: String, state: String?, value: Double?, detail: String?, programme: String?) {
        self.t = t
        self.kind = kind
        self.subject = subject
        self.state = state
        self.value = value
        self.detail = detail
        self.programme = programme
    }
    public var isAlarm: Bool { state != nil }
}

/// A stretch of time a report judges on its own.
public struct ReportSegment: Sendable, Equatable {
    public var name: String
    public var from: Double
    public var to: Double
    public init(name: String, from: Double, to: Double) {
        self.name = name
        self.from = from
        self.to = to
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Segments every `minutes` minutes over [from, to) (on the clock's whole multiples).
    public static func every(minutes: Double, from: Double, to: Double) -> [ReportSegment] {
        let step = minutes * 60
        var out: [ReportSegment] = []
        var start = from
        while start < to {
            let end = min(to, ((start / step).rounded(.down) + 1) * step)
            out.append(ReportSegment(name: Report.time(start), from: start, to: end))
            start = end
        }
        return out
    }

    /// Segments between marks (`PREFIX/mark s`), each named by its mark: before the first
    /// mark "(start)".
    public static func between(marks: [(t: Double, name: String)], from: Double, to: Double) -> [ReportSegment] {
        var out: [ReportSegment] = []
        var start = from, name = "(start)"
        for m in marks.sorted(by: { $0.t < $1.t }) where m.t > from && m.t < to {
            if m.t > start { out.append(ReportSegment(name: name, from: start, to: m.t)) }
            start = m.t
            name = m.name
        }
        if to > start { out.append(ReportSegment(name: name, from: start, to: to)) }
        return out
    }

    /// A schedule: CSV lines `NAME,START,END` (times as `Report.parseTime` reads them; a
    /// header line starting `name` and `#` comments are skipped).
    public static func schedule(csv text: String) throws(ParseError) -> [ReportSegment] {
        var out: [ReportSegment] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw).trimmed(" \r\t")
            if line.isEmpty || line.hasPrefix("#") || (n == 0 && line.lowercased().hasPrefix("name")) { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmed(" \"") }
            guard fields.count == 3, let from = Report.parseTime(fields[1]), let to = Report.parseTime(fields[2]) else {
                throw ParseError(description: "line \(n + 1): expected NAME,START,END with times like 2026-11-25T06:00:00Z, got '\(line)'")
            }
            guard to > from else { throw ParseError(description: "line \(n + 1): the end is not after the start") }
            out.append(ReportSegment(name: fields[0], from: from, to: to))
        }
        guard !out.isEmpty else { throw ParseError(description: "no programme lines (NAME,START,END)") }
        return out
    }
}

/// One programme over one segment: its readings recomputed from the blocks, and its verdict.
public struct ReportRow: Sendable {
    public var programme: String
    public var segment: String
    public var from: Double
    public var to: Double
    /// Audio logged, seconds (100 ms per block).
    public var loggedSeconds: Double
    public var integratedLUFS: Double
    public var rangeLU: Double
    public var maxMomentaryLUFS: Double
    public var maxShortTermLUFS: Double
    public var maxTruePeakDBTP: Double?
    public var maxSamplePeakDBFS: Double?
    /// Peak-to-loudness ratio, LU (nil without both).
    public var plrLU: Double?
    /// Seconds whose short-term loudness lay outside target ± tolerance (above the −70 LUFS gate).
    public var secondsOutside: Double?
    /// Alarms raised in the segment for this programme (or its channels and pairs).
    public var alarmsRaised: Int
    public var target: LoudnessTarget?
    /// Pass or fail against the target (nil without one), and why it failed.
    public var pass: Bool?
    public var failures: [String]
    /// The row's maxima that a fault on the bus set (none when every maximum is the
    /// programme's own), each with the maximum over the clean blocks alone.
    public var faultedMaxima: [FaultedMaximum] = []

    /// The figure of a report column (`Readings.reportColumns`).
    public func value(_ measure: ReportColumn.Measure) -> Double? {
        switch measure {
        case .integrated: integratedLUFS
        case .range: rangeLU
        case .maxMomentary: maxMomentaryLUFS
        case .maxShortTerm: maxShortTermLUFS
        case .maxTruePeak: maxTruePeakDBTP
        case .maxSamplePeak: maxSamplePeakDBFS
        case .plr: plrLU
        }
    }

    /// A maximum above the clean blocks' by more than `FaultLabels`' 0.05 dB/LU.
    public struct FaultedMaximum: Sendable, Equatable {
        /// The reading, by its report column's key (`Readings.reportColumns`):
        /// `max_truepeak_dbtp`, `max_sample_peak_dbfs`, `max_momentary_lufs`, `max_shortterm_lufs`.
        public var reading: String
        public var cause: FaultCause
        /// The maximum of the clean blocks (nil: none was clean).
        public var clean: Double?
        /// "max true peak set by an xrun (clean max −18.0 dBTP)".
        public var text: String { "\((FaultedMaximum.names[reading] ?? (reading, "")).0) set by \(causeText) (clean max \(cleanText))" }
        /// "an xrun", "a connection change".
        var causeText: String { cause == .xrun ? "an xrun" : "a connection change" }
        /// "−18.0 dBTP", or "none" when no block was clean.
        var cleanText: String { clean.map { Report.fixed($0, 1) + " " + (FaultedMaximum.names[reading]?.1 ?? "") } ?? "none" }
        /// A failure's note: "set by an xrun; clean max −18.0 dBTP".
        var note: String { "set by \(causeText); clean max \(cleanText)" }
        /// Each report column's name and unit, by its key.
        static let names = Dictionary(uniqueKeysWithValues: Readings.reportColumns.map { ($0.column.key, ($0.column.name, $0.unit.rawValue)) })
    }
}

/// A compliance report: every programme over every segment.
///
/// The blocks stream through once, programme by programme (`init(…feed:)`), into each
/// segment's gating (`SegmentJudge`) and the graph's columns (`GraphColumns`): the memory is
/// one programme's gating windows, not the log's rows (a day of 8 programmes read 463 MB held
/// whole; see BENCHMARKS.md).
public struct Report: Sendable {
    public var source: String
    public var from: Double
    public var to: Double
    /// The programmes (their blocks are not kept: `graphs` holds what the page draws).
    public var programmes: [ReportProgramme]
    public var incidents: [LoggedIncident]
    /// Incidents in the range beyond those listed (`LogReader.incidentLimit`).
    public var incidentsOmitted = 0
    public var segments: [ReportSegment]
    public private(set) var rows: [ReportRow] = []
    /// Each programme's short-term loudness over the range, as the graph's columns.
    public private(set) var graphs: [GraphColumns] = []
    /// Times as the time into the audio (a file's report), not as dates.
    public var relativeTimes = false
    /// What the reader must know about the source (a file's report: the file is cut short).
    public var sourceNote: String?
    /// How the integrated loudness is gated (`--gating`).
    public let gating: Gating

    /// A report of programmes whose blocks are in memory (a file's, tests).
    public init(source: String, from: Double, to: Double, programmes: [ReportProgramme], incidents: [LoggedIncident],
                segments: [ReportSegment]? = nil, gating: Gating = .bs1770_4)
    {
        self.init(source: source, from: from, to: to, programmes: programmes, incidents: incidents, segments: segments, gating: gating) { p, add in
            for b in programmes[p].blocks { add(b) }
        }
    }

    /// Segments a report may have (`--segments every:1` over a year is 525,600): more is an
    /// error, not gigabytes.
    public static let segmentLimit = 100_000

    /// A report whose blocks `feed(p, add)` hands over for programme `p`, in time order.
    /// `alarmsRaised(segment, programme name or nil for all)` counts the alarms raised in a
    /// segment (default: those among `incidents`; a log's report counts them in the log, as
    /// its incidents are only the first `LogReader.incidentLimit`).
    public init(source: String, from: Double, to: Double, programmes: [ReportProgramme], incidents: [LoggedIncident],
                segments: [ReportSegment]? = nil, gating: Gating = .bs1770_4, alarmsRaised: ((ReportSegment, String?) throws -> Int)? = nil,
                feed: (Int, (LoggedBlock) -> Void) throws -> Void) rethrows
    {
        self.source = source
        self.gating = gating
        self.from = from
        self.to = to
        self.incidents = incidents
        let segments = segments ?? [ReportSegment(name: "all", from: from, to: to)]
        self.segments = segments
        // Segments by start, so that each block reaches only those it falls in.
        let order = segments.indices.sorted { segments[$0].from < segments[$1].from }
        var rowsBySegment = [[ReportRow]](repeating: [], count: segments.count)
        var kept: [ReportProgramme] = []
        for p in programmes.indices {
            let programme = programmes[p]
            var judges = segments.map { SegmentJudge(segment: $0, target: programme.target, gating: gating) }
            var graph = GraphColumns(from: from, to: to)
            var next = 0
            var active: [Int] = []
            try feed(p) { b in
                graph.add(b)
                while next < order.count && segments[order[next]].from < b.t {
                    active.append(order[next])
                    next += 1
                }
                active.removeAll { segments[$0].to < b.t }
                for s in active where b.t <= segments[s].to { judges[s].add(b) }
            }
            for s in segments.indices {
                var row = judges[s].row(programme)
                let own = programme.name.isEmpty ? nil : programme.name
                row.alarmsRaised = try alarmsRaised?(segments[s], own) ?? incidents.filter {
                    $0.isAlarm && $0.state == "raised" && $0.t >= segments[s].from && $0.t < segments[s].to && ($0.programme == own || own == nil)
                }.count
                rowsBySegment[s].append(row)
            }
            graphs.append(graph)
            var light = programme
            light.blocks = []
            kept.append(light)
        }
        self.programmes = kept
        rows = rowsBySegment.flatMap { $0 }
    }
}

/// One programme over one segment, judged block by block: BS.1770's gating windows, the
/// peaks, the time outside the target's tolerance.
struct SegmentJudge {
    let segment: ReportSegment
    let target: LoudnessTarget?
    var blocks = LoudnessBlocks()
    var tp: Double?, sp: Double?
    var outside = 0
    var shortTermSeen = 0
    /// The maxima over clean blocks, and the largest over faulty ones with its cause (peaks
    /// per block; momentary and short-term per window, faulty when a block in it is).
    var clean = [Double](repeating: -.infinity, count: 4)
    var faulty = [(Double, FaultCause)?](repeating: nil, count: 4)
    /// The faults of the current run's last 30 blocks (a ring, as `LoudnessBlocks`').
    var faults = [FaultCause?](repeating: nil, count: 30)
    var run = 0, lastIndex = -1
    var momentarySeen = 0

    let gating: Gating

    init(segment: ReportSegment, target: LoudnessTarget?, gating: Gating) {
        self.segment = segment
        self.target = target
        self.gating = gating
    }

    mutating func add(_ b: LoggedBlock) {
        blocks.add(power: b.power, index: b.index)
        if b.index != lastIndex &+ 1 { run = 0 }
        lastIndex = b.index
        faults[run % 30] = b.fault
        run += 1
        if let x = b.truePeakDBTP { tp = max(tp ?? x, x); note(0, x, b.fault) }
        if let x = b.samplePeakDBFS { sp = max(sp ?? x, x); note(1, x, b.fault) }
        /// The fault in the run's last `n` blocks, if any.
        let faults = self.faults, run = self.run
        func fault(inLast n: Int) -> FaultCause? {
            for k in 0..<min(n, run) { if let f = faults[(run - 1 - k) % 30] { return f } }
            return nil
        }
        if blocks.momentaryPowers.count > momentarySeen {
            momentarySeen = blocks.momentaryPowers.count
            note(2, LoudnessMeter.lufs(blocks.momentaryPowers[momentarySeen - 1]), fault(inLast: 4))
        }
        if blocks.shortTermPowers.count > shortTermSeen {
            shortTermSeen = blocks.shortTermPowers.count
            let s = LoudnessMeter.lufs(blocks.shortTermPowers[shortTermSeen - 1])
            note(3, s, fault(inLast: 30))
            if let target, s > -70 && abs(s - target.targetLUFS) > target.toleranceLU { outside += 1 }
        }
    }

    /// Maximum `i`'s value `x` in a clean or a faulty block or window.
    private mutating func note(_ i: Int, _ x: Double, _ fault: FaultCause?) {
        if let fault {
            if x > faulty[i]?.0 ?? -.infinity { faulty[i] = (x, fault) }
        } else {
            clean[i] = max(clean[i], x)
        }
    }

    /// The maxima a fault set: above the clean blocks' by more than `FaultLabels`' 0.05.
    var faultedMaxima: [ReportRow.FaultedMaximum] {
        let names = [ReportColumn.Measure.maxTruePeak, .maxSamplePeak, .maxMomentary, .maxShortTerm].map { Readings.reportColumn($0).column.key }
        return (0..<4).compactMap { i in
            guard let (x, cause) = faulty[i], x > clean[i] + 0.05, x > LoudnessMeter.floor else { return nil }
            return ReportRow.FaultedMaximum(reading: names[i], cause: cause, clean: clean[i] > LoudnessMeter.floor ? clean[i] : nil)
        }
    }

    /// The row (its `alarmsRaised` the caller's to count).
    func row(_ p: ReportProgramme) -> ReportRow {
        var tp = self.tp, sp = self.sp
        if let o = p.truePeakOverride { tp = o }
        if let o = p.samplePeakOverride { sp = o }
        let integrated = blocks.integrated(gating)
        var row = ReportRow(
            programme: p.displayName, segment: segment.name, from: segment.from, to: segment.to,
            loggedSeconds: Double(blocks.count) / 10, integratedLUFS: integrated, rangeLU: blocks.range,
            maxMomentaryLUFS: blocks.maxMomentary, maxShortTermLUFS: blocks.maxShortTerm, maxTruePeakDBTP: tp,
            maxSamplePeakDBFS: sp, plrLU: nil, secondsOutside: p.target == nil ? nil : Double(outside) / 10,
            alarmsRaised: 0, target: p.target, pass: nil, failures: [])
        // A file's override (its own true peak, to the sample) has no blocks' faults.
        let (truePeakKey, samplePeakKey) = (Readings.reportColumn(.maxTruePeak).column.key, Readings.reportColumn(.maxSamplePeak).column.key)
        row.faultedMaxima = faultedMaxima.filter {
            !($0.reading == truePeakKey && p.truePeakOverride != nil) && !($0.reading == samplePeakKey && p.samplePeakOverride != nil)
        }
        // PLR as everywhere else (the reading table's `plr`, the summary): one definition.
        if let tp {
            let plr = LoudnessMeter.peakToLoudnessRatio(maxTruePeakDBTP: tp, integratedLUFS: integrated)
            row.plrLU = plr.isFinite ? plr : nil
        }
        if let target = p.target {
            var failures: [String] = []
            if integrated <= LoudnessMeter.floor {
                failures.append("no integrated loudness")
            } else if abs(integrated - target.targetLUFS) > target.toleranceLU + 1e-9 {
                failures.append("integrated \(Report.fixed(integrated, 1)) LUFS outside \(Report.fixed(target.targetLUFS, 1)) ± \(Report.fixed(target.toleranceLU, 1)) LU")
            }
            if let tp, tp > target.maxTruePeakDBTP + 1e-9 {
                let fault = row.faultedMaxima.first { $0.reading == truePeakKey }
                failures.append("true peak \(Report.fixed(tp, 1)) dBTP above \(Report.fixed(target.maxTruePeakDBTP, 1)) dBTP"
                    + (fault.map { " (\($0.note))" } ?? ""))
            }
            if let limit = target.maxShortTermLUFS, blocks.maxShortTerm > limit + 1e-9 {
                let fault = row.faultedMaxima.first { $0.reading == Readings.reportColumn(.maxShortTerm).column.key }
                failures.append("short-term \(Report.fixed(blocks.maxShortTerm, 1)) LUFS above \(Report.fixed(limit, 1)) LUFS"
                    + (fault.map { " (\($0.note))" } ?? ""))
            }
            row.pass = failures.isEmpty
            row.failures = failures
        }
        return row
    }
}

/// A programme's short-term loudness over a report's range as the graph draws it: the
/// largest value in each of 1000 columns, and the columns a gap (over a second) or a reset
/// breaks the line before.
public struct GraphColumns: Sendable {
    public static let count = 1000
    let from: Double
    let span: Double
    /// Column → the largest short-term loudness in it, LUFS.
    public private(set) var values: [Int: Double] = [:]
    public private(set) var breaks: Set<Int> = []
    private var window = [Double](repeating: 0, count: 30)
    private var run = 0
    private var lastIndex = -1
    private var lastT = -Double.infinity
    private var breakPending = true

    init(from: Double, to: Double) {
        self.from = from
        span = max(1, to - from)
    }

    mutating func add(_ b: LoggedBlock) {
        guard b.t >= from && b.t <= from + span else { return }
        if b.index != lastIndex &+ 1 { run = 0 }
        lastIndex = b.index
        window[run % 30] = b.power
        run += 1
        if b.t - lastT > 1 || run < 30 { breakPending = true }
        lastT = b.t
        guard run >= 30 else { return }
        let column = min(GraphColumns.count - 1, max(0, Int((b.t - from) / span * Double(GraphColumns.count))))
        if breakPending && values[column] == nil {
            breaks.insert(column)
            breakPending = false
        }
        values[column] = max(values[column] ?? -200, LoudnessMeter.lufs(window.reduce(0, +) / 30))
    }
}

extension Report {
    // MARK: Formatting helpers

    /// `s` for a one-line message: control characters as '?', at most 200 characters.
    public static func printable(_ s: String) -> String {
        let shown = String(s.unicodeScalars.prefix(200).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return s.unicodeScalars.count > 200 ? shown + "…" : shown
    }

    public static func fixed(_ x: Double, _ decimals: Int) -> String {
        guard x.isFinite else { return "-" }
        var s = String(format: decimals, x)
        if s.hasPrefix("-") && s.dropFirst().allSatisfy({ $0 == "0" || $0 == "." }) { s.removeFirst() }
        return s
    }

    /// ISO 8601 UTC, to the second.
    public static func time(_ unix: Double) -> String {
        String(AlarmEvent.iso8601(unix).prefix(19)) + "Z"
    }

    /// Reads `2026-11-25T06:00:00Z`, `2026-11-25 06:00:00` (UTC), `2026-11-25` (midnight
    /// UTC), or Unix seconds.
    public static func parseTime(_ text: String) -> Double? {
        if let x = Double(text), x.isFinite, x >= 0 { return x }
        var s = text
        if s.hasSuffix("Z") { s.removeLast() }
        s = s.replacingOccurrences(of: "T", with: " ")
        let parts = s.split(separator: " ")
        guard (1...2).contains(parts.count) else { return nil }
        let date = parts[0].split(separator: "-").compactMap { Int($0) }
        guard date.count == 3 else { return nil }
        var clock = [0, 0, 0.0]
        if parts.count == 2 {
            let hms = parts[1].split(separator: ":")
            guard (2...3).contains(hms.count) else { return nil }
            for (i, v) in hms.enumerated() {
                guard let x = Double(v) else { return nil }
                clock[i] = x
            }
        }
        guard (1...12).contains(date[1]), (1...31).contains(date[2]), clock[0] < 24, clock[1] < 60, clock[2] < 61 else { return nil }
        var t = tm()
        t.tm_year = Int32(date[0] - 1900)
        t.tm_mon = Int32(date[1] - 1)
        t.tm_mday = Int32(date[2])
        t.tm_hour = Int32(clock[0])
        t.tm_min = Int32(clock[1])
        t.tm_sec = Int32(clock[2].rounded(.down))
        let seconds = timegm(&t)
        guard seconds != -1 else { return nil }
        return Double(seconds) + (clock[2] - clock[2].rounded(.down))
    }
}

extension String {
    /// `x` with `decimals` decimals (no Foundation).
    init(format decimals: Int, _ x: Double) {
        // Beyond what an Int holds (and never a measurement): the number as Swift prints it.
        guard x.isFinite, abs(x) < 1e15 else {
            self = "\(x)"
            return
        }
        let scale = pow(10, Double(decimals))
        let r = (abs(x) * scale).rounded() / scale
        var whole = String(Int(r.rounded(.down)))
        if decimals > 0 {
            let fraction = Int(((r - r.rounded(.down)) * scale).rounded())
            var f = String(fraction)
            while f.count < decimals { f = "0" + f }
            whole += "." + f
        }
        self = (x < 0 ? "-" : "") + whole
    }

    func trimmed(_ set: String) -> String {
        var s = self[...]
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return String(s)
    }

    func replacingOccurrences(of a: String, with b: String) -> String {
        split(separator: Character(a), omittingEmptySubsequences: false).joined(separator: b)
    }
}
