#if canImport(Glibc)
import Glibc
#endif
import CSQLite
import DSP
import Outputs

/// Reads a log (`--log`) for a report: read-only, so a report can run beside the writer.
///
/// A log is a file anyone may have written, so nothing in it is trusted: it is opened
/// defensively (`Database.untrusted`: no schema writes, no untrusted functions, no string
/// over 1 MiB), only tables of jackvu's schema are read (a view or trigger in their place is
/// refused: a recursive view would hang the report), every number is type- and range-checked
/// before use (text where a number belongs, NaN, ±∞, 1e300, a time before 1970 or after
/// `latestTime` are left out), and the incidents kept for the listing are bounded
/// (`incidentLimit`); the blocks stream (`forEachBlock`).
public struct LogReader {
    /// The latest time a log's row may carry, Unix seconds (2286-11-20): later ones are absurd.
    public static let latestTime = 1e10
    /// Incidents (alarm changes and events) kept for a report's listing; the rest are counted
    /// (`Read.incidentsOmitted`), and alarms are counted in the log itself whatever their number.
    public static let incidentLimit = 10_000
    /// The tables a log has, and what the reader reads of them.
    static let tables = ["meta", "programmes", "blocks", "alarms", "events"]
    public let path: String
    private let database: Database
    /// Whether the log has the tables added since version 1 was first written
    /// (`LogSchema.optionalTables`: the blocks' faults, the alarms' causes).
    private let hasFaults: Bool
    private let hasAlarmCauses: Bool

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(path: String) throws(Failure) {
        self.path = path
        // What SQLite would say of these is no help ("unable to open database file", "disk
        // I/O error" for a folder).
        var st = stat()
        guard stat(path, &st) == 0 else { throw Failure(description: "cannot read '\(path)': \(String(cString: strerror(errno)))") }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw Failure(description: "cannot read '\(path)': it is a folder (a log is a file)") }
        var optional: Set<String> = []
        database = try LogReader.reading(path) {
            let database = try Database.untrusted(path: path)
            // jackvu's own tables, as tables: no view (a recursive one hangs any query), no
            // trigger, nothing missing.
            var kinds: [String: String] = [:]
            let schema = try database.prepare("SELECT type, name, tbl_name FROM sqlite_master")
            while try schema.step() {
                guard let type = schema.text(0), let name = schema.text(1) else { continue }
                let known = LogReader.tables.contains(name) || LogSchema.optionalTables.contains(name)
                if known { kinds[name] = type }
                if type == "trigger" || (type == "view" && known) {
                    throw Failure(description: "cannot read '\(path)': not a jackvu log: it has a \(type) '\(Report.printable(name))' (jackvu makes none; not read)")
                }
            }
            optional = Set(LogSchema.optionalTables.filter { kinds[$0] == "table" })
            for table in LogReader.tables where kinds[table] != "table" {
                throw Failure(description: "cannot read '\(path)': not a jackvu log (\(kinds[table].map { "'\(table)' is a \($0)" } ?? "no '\(table)' table"))")
            }
            let version = try database.prepare("SELECT value FROM meta WHERE key = 'schema_version'")
            guard try version.step(), let text = version.text(0) else {
                throw Failure(description: "'\(path)' is not a jackvu log (no schema version)")
            }
            guard text == String(LogSchema.version) else {
                throw Failure(description: "'\(path)' has log schema '\(Report.printable(String(text.prefix(40))))'; this jackvu reads \(LogSchema.version)")
            }
            return database
        }
        hasFaults = optional.contains("faults")
        hasAlarmCauses = optional.contains("alarm_causes")
    }

    /// Runs `body`, its errors as one `Failure` line: SQLite's (`cannot read 'PATH': …`) or
    /// the reader's own, as they are.
    private static func reading<T>(_ path: String, _ body: () throws -> T) throws(Failure) -> T {
        do { return try body() } catch let error as Database.Failure {
            throw Failure(description: "cannot read '\(path)': \(error.description)")
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure(description: "cannot read '\(path)': \(error)")
        }
    }

    /// Hands `body` programme `p`'s blocks in (from, to], in time order, one at a time (a
    /// day's rows are never all in memory). Only what jackvu can have written counts: a power
    /// no signal has (not finite, negative, beyond +60 LUFS) or a peak beyond ±200 dB is left
    /// out.
    public func forEachBlock(_ p: ReportProgramme, from: Double, to: Double, _ body: (LoggedBlock) -> Void) throws(Failure) {
        guard !p.logIDs.isEmpty else { return }
        do {
            let ids = p.logIDs.map(String.init).joined(separator: ", ")
            let blocks = try database.prepare(
                "SELECT t, idx, power, true_peak_dbtp, sample_peak_dbfs, programme FROM blocks WHERE programme IN (\(ids)) AND t > ?1 AND t <= ?2 ORDER BY t, programme")
            let range: [Statement.Value] = [.double(max(from, -1)), .double(min(to, LogReader.latestTime))]
            blocks.bind(range)
            // The faulty blocks (`faults`; a log from before it has none marked), merged with
            // the blocks in (t, programme) order: no lookup per block, which a file without
            // the table's key would make a full scan each.
            let faults = hasFaults
                ? try database.prepare("SELECT t, programme, cause FROM faults WHERE programme IN (\(ids)) AND t > ?1 AND t <= ?2 ORDER BY t, programme") : nil
            faults?.bind(range)
            var fault: (t: Double, programme: Int, cause: String?)?
            func nextFault() throws(Database.Failure) {
                guard let faults else { return }
                fault = try faults.step() ? (faults.number(0) ?? -.infinity, faults.integer(1) ?? Int.min, faults.text(2)) : nil
            }
            try nextFault()
            while try blocks.step() {
                guard let t = blocks.number(0), t >= 0, t <= LogReader.latestTime, let index = blocks.integer(1), index >= 0,
                      let power = blocks.number(2), power >= 0, power < 1e6 else { continue }
                let programme = blocks.integer(5) ?? Int.min
                while let f = fault, (f.t, f.programme) < (t, programme) { try nextFault() }
                let cause = fault.flatMap { $0.t == t && $0.programme == programme ? $0.cause.flatMap(FaultCause.init(rawValue:)) : nil }
                func peak(_ x: Double?) -> Double? { x.flatMap { abs($0) <= 200 ? $0 : nil } }
                body(LoggedBlock(t: t, index: index, power: power, truePeakDBTP: peak(blocks.number(3)), samplePeakDBFS: peak(blocks.number(4)),
                                 fault: cause))
            }
        } catch { throw Failure(description: "cannot read '\(path)': \(error.description)") }
    }

    /// The first and last block times (nil: no blocks). Only numbers from 1970 to
    /// `latestTime` count: text, NaN or an absurd time in one row does not stretch the span.
    public func timeSpan() throws(Failure) -> (Double, Double)? {
        do {
            let s = try database.prepare(
                "SELECT min(t), max(t) FROM blocks WHERE typeof(t) IN ('integer', 'real') AND t >= 0 AND t <= \(LogReader.latestTime)")
            guard try s.step(), let a = s.number(0), let b = s.number(1) else { return nil }
            return (a, b)
        } catch { throw Failure(description: "cannot read '\(path)': \(error.description)") }
    }

    /// What `read` finds: the programmes, the incidents (at most `incidentLimit`, the earliest)
    /// and how many more there were, and the marks (at most `markLimit`).
    public struct Read {
        public var programmes: [ReportProgramme]
        public var incidents: [LoggedIncident]
        public var incidentsOmitted: Int
        public var marks: [(t: Double, name: String)]
    }

    /// Marks kept for `--segments marks` (each makes a segment).
    public static let markLimit = 100_000

    /// The programmes (their blocks: `forEachBlock`), the incidents and marks in [from, to].
    /// Programmes logged under one name in several rows (another run, another target) are
    /// read as one, with the latest row's target unless `target` names one. A target out of
    /// any real range (a crafted or damaged row) is an error, not a verdict.
    public func read(from: Double, to: Double, programmes names: [String]?, target: (String) -> LoudnessTarget?) throws(Failure) -> Read {
        try LogReader.reading(path) {
            var byName: [String: (ids: [Int], channels: [Int], target: LoudnessTarget?, bad: String?)] = [:]
            var order: [String] = []
            let p = try database.prepare("SELECT id, name, channels, profile, target_lufs, tolerance_lu, max_true_peak_dbtp, max_short_term_lufs FROM programmes ORDER BY id")
            var nameOf: [Int: String] = [:]
            while try p.step() {
                guard let id = p.integer(0) else { continue }
                let name = p.text(1) ?? ""
                nameOf[id] = name
                let channels = (p.text(2) ?? "").split(separator: ",").compactMap { Int($0).flatMap { (1...4096).contains($0) ? $0 - 1 : nil } }
                // A target (all of its three parts there): every part a number in a real range.
                var t: LoudnessTarget?
                var bad: String?
                if let profile = p.text(3), !p.isNull(4), !p.isNull(5), !p.isNull(6) {
                    let lufs = p.number(4), tol = p.number(5), tp = p.number(6), st = p.number(7)
                    if let lufs, (-100...0).contains(lufs), let tol, (0...100).contains(tol), let tp, (-100...20).contains(tp),
                       st.map({ (-100...0).contains($0) }) ?? p.isNull(7)
                    {
                        t = LoudnessTarget(profile: Report.printable(profile), targetLUFS: lufs, toleranceLU: tol, maxTruePeakDBTP: tp, maxShortTermLUFS: st)
                    } else {
                        bad = "'\(path)': programme '\(Report.printable(name))' has a target out of range (target LUFS, tolerance LU, "
                            + "true peak dBTP, short-term LUFS: \([4, 5, 6, 7].map { p.text(Int32($0)).map { Report.printable(String($0.prefix(24))) } ?? "NULL" }.joined(separator: ", "))); "
                            + "name one with --target to report it"
                    }
                }
                if byName[name] == nil { order.append(name) }
                var entry = byName[name] ?? ([], channels, nil, nil)
                entry.ids.append(id)
                entry.channels = channels
                if t != nil { entry.target = t; entry.bad = nil }
                if let bad { entry.bad = bad }
                byName[name] = entry
            }
            if let names {
                for n in names where byName[n] == nil && !(n == ProgrammeSnapshot.defaultName && byName[""] != nil) {
                    throw Failure(description: "no programme '\(n)' in '\(path)' (it has: \(order.map(ProgrammeSnapshot.shownName).joined(separator: ", ")))")
                }
            }
            var out: [ReportProgramme] = []
            for name in order {
                let shown = ProgrammeSnapshot.shownName(name)
                if let names, !names.contains(shown) && !names.contains(name) { continue }
                let entry = byName[name]!
                let chosen = target(name)
                if chosen == nil, let bad = entry.bad { throw Failure(description: bad) }
                var programme = ReportProgramme(name: name, channels: entry.channels, target: chosen ?? entry.target, blocks: [])
                programme.logIDs = entry.ids
                out.append(programme)
            }
            // The incidents: alarms and events merged in time order, the earliest
            // `incidentLimit` kept, the rest counted (never all in memory).
            let range: [Statement.Value] = [.double(max(from, 0)), .double(min(to, LogReader.latestTime))]
            let a = try database.prepare(
                "SELECT t, kind, subject, programme, state, value FROM alarms WHERE typeof(t) IN ('integer', 'real') AND t >= ?1 AND t <= ?2 ORDER BY t")
            a.bind(range)
            let e = try database.prepare(
                "SELECT t, kind, programme, detail, value FROM events WHERE typeof(t) IN ('integer', 'real') AND t >= ?1 AND t <= ?2 ORDER BY t")
            e.bind(range)
            // An alarm's cause (a true peak or clip raised near an xrun or a connection
            // change; a log from before `alarm_causes` has none): merged in time order, the
            // causes at one time kept (at most 64) until the alarms reach a later one.
            let c = hasAlarmCauses
                ? try database.prepare("SELECT t, kind, subject, cause FROM alarm_causes WHERE typeof(t) IN ('integer', 'real') AND t >= ?1 AND t <= ?2 ORDER BY t") : nil
            c?.bind(range)
            var causes: [(t: Double, kind: String, subject: String, cause: String)] = []
            var pendingCause: (t: Double, kind: String, subject: String, cause: String)?
            func nextCause() throws -> (t: Double, kind: String, subject: String, cause: String)? {
                guard let c, try c.step() else { return nil }
                return (c.number(0) ?? 0, c.text(1) ?? "", c.text(2) ?? "", c.text(3) ?? "")
            }
            pendingCause = try nextCause()
            func cause(t: Double, kind: String, subject: String) throws -> FaultCause? {
                if causes.first?.t != t {
                    causes.removeAll()
                    while let p = pendingCause, p.t < t { pendingCause = try nextCause() }
                    while let p = pendingCause, p.t == t {
                        if causes.count < 64 { causes.append(p) }
                        pendingCause = try nextCause()
                    }
                }
                return causes.first { $0.kind == kind && $0.subject == subject }.flatMap { FaultCause(rawValue: $0.cause) }
            }
            func value(_ s: Statement, _ column: Int32) -> Double? { s.number(column).flatMap { abs($0) <= 1e9 ? $0 : nil } }
            func text(_ s: Statement, _ column: Int32) -> String? { s.text(column).map { String($0.prefix(500)) } }
            func alarm() throws -> LoggedIncident? {
                guard try a.step() else { return nil }
                let t = a.number(0) ?? 0, kind = text(a, 1) ?? "", subject = text(a, 2) ?? ""
                return LoggedIncident(
                    t: t, kind: kind, subject: subject, state: text(a, 4) ?? "", value: value(a, 5),
                    detail: try cause(t: t, kind: kind, subject: subject).map { "near \($0 == .xrun ? "an xrun" : "a connection change")" },
                    programme: a.integer(3).flatMap { nameOf[$0] })
            }
            var marks: [(t: Double, name: String)] = []
            func event() throws -> LoggedIncident? {
                guard try e.step() else { return nil }
                let kind = text(e, 1) ?? "", detail = text(e, 3), t = e.number(0) ?? 0
                if kind == "mark" && marks.count < LogReader.markLimit { marks.append((t, detail ?? "mark")) }
                return LoggedIncident(
                    t: t, kind: kind, subject: "", state: nil, value: value(e, 4), detail: detail, programme: e.integer(2).flatMap { nameOf[$0] })
            }
            var incidents: [LoggedIncident] = []
            var omitted = 0
            var nextAlarm = try alarm(), nextEvent = try event()
            while nextAlarm != nil || nextEvent != nil {
                let takeAlarm: Bool
                if let x = nextAlarm, let y = nextEvent { takeAlarm = x.t <= y.t } else { takeAlarm = nextAlarm != nil }
                let incident = takeAlarm ? nextAlarm! : nextEvent!
                if takeAlarm { nextAlarm = try alarm() } else { nextEvent = try event() }
                if incidents.count < LogReader.incidentLimit { incidents.append(incident) } else { omitted += 1 }
            }
            return Read(programmes: out, incidents: incidents, incidentsOmitted: omitted, marks: marks)
        }
    }

    /// Alarms raised in [from, to) — of the programme named `programme`, or all with nil —
    /// counted in the log (a report's rows: however many there are).
    public func alarmsRaised(from: Double, to: Double, programme: String?) throws(Failure) -> Int {
        do {
            let filter = programme == nil ? "" : " AND programme IN (SELECT id FROM programmes WHERE name = ?3)"
            let s = try database.prepare(
                "SELECT count(*) FROM alarms WHERE state = 'raised' AND typeof(t) IN ('integer', 'real') AND t >= ?1 AND t < ?2" + filter)
            s.bind([.double(from), .double(to)] + (programme.map { [.text($0)] } ?? []))
            return try s.step() ? s.integer(0) ?? 0 : 0
        } catch { throw Failure(description: "cannot read '\(path)': \(error.description)") }
    }
}
