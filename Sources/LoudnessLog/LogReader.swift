import CSQLite
import DSP

/// Reads a log (`--log`) for a report: read-only, so a report can run beside the writer.
public struct LogReader {
    public let path: String
    private let database: Database

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(path: String) throws(Failure) {
        self.path = path
        database = try LogReader.reading(path) {
            let database = try Database(path: path, write: false, create: false)
            guard let version = try database.scalar("SELECT value FROM meta WHERE key = 'schema_version'") else {
                throw Failure(description: "'\(path)' is not a jackvu log (no schema version)")
            }
            guard Int(version) == LogSchema.version else {
                throw Failure(description: "'\(path)' has log schema \(Int(version)); this jackvu reads \(LogSchema.version)")
            }
            return database
        }
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
                "SELECT t, idx, power, true_peak_dbtp, sample_peak_dbfs FROM blocks WHERE programme IN (\(ids)) AND t > ?1 AND t <= ?2 ORDER BY t")
            blocks.bind([.double(from), .double(to)])
            while try blocks.step() {
                guard let t = blocks.double(0), t.isFinite, let index = blocks.int(1), let power = blocks.double(2),
                      power.isFinite, power >= 0, power < 1e6 else { continue }
                func peak(_ x: Double?) -> Double? { x.flatMap { $0.isFinite && abs($0) <= 200 ? $0 : nil } }
                body(LoggedBlock(t: t, index: index, power: power, truePeakDBTP: peak(blocks.double(3)), samplePeakDBFS: peak(blocks.double(4))))
            }
        } catch { throw Failure(description: "cannot read '\(path)': \(error.description)") }
    }

    /// The first and last block times (nil: no blocks).
    public func timeSpan() throws(Failure) -> (Double, Double)? {
        do {
            let s = try database.prepare("SELECT min(t), max(t) FROM blocks")
            guard try s.step(), let a = s.double(0), let b = s.double(1) else { return nil }
            return (a, b)
        } catch { throw Failure(description: "cannot read '\(path)': \(error.description)") }
    }

    /// The programmes (their blocks: `forEachBlock`), the incidents and marks in [from, to].
    /// Programmes logged under one name in several rows (another run, another target) are
    /// read as one, with the latest row's target unless `target` names one.
    public func read(from: Double, to: Double, programmes names: [String]?, target: (String) -> LoudnessTarget?)
        throws(Failure) -> (programmes: [ReportProgramme], incidents: [LoggedIncident], marks: [(t: Double, name: String)])
    {
        try LogReader.reading(path) {
            var byName: [String: (ids: [Int], channels: [Int], target: LoudnessTarget?)] = [:]
            var order: [String] = []
            let p = try database.prepare("SELECT id, name, channels, profile, target_lufs, tolerance_lu, max_true_peak_dbtp, max_short_term_lufs FROM programmes ORDER BY id")
            var nameOf: [Int: String] = [:]
            while try p.step() {
                let id = p.int(0) ?? 0, name = p.text(1) ?? ""
                nameOf[id] = name
                let channels = (p.text(2) ?? "").split(separator: ",").compactMap { Int($0).map { $0 - 1 } }
                var t: LoudnessTarget?
                if let profile = p.text(3), let lufs = p.double(4), let tol = p.double(5), let tp = p.double(6) {
                    t = LoudnessTarget(profile: profile, targetLUFS: lufs, toleranceLU: tol, maxTruePeakDBTP: tp, maxShortTermLUFS: p.double(7))
                }
                if byName[name] == nil { order.append(name) }
                var entry = byName[name] ?? ([], channels, nil)
                entry.ids.append(id)
                entry.channels = channels
                if t != nil { entry.target = t }
                byName[name] = entry
            }
            if let names {
                for n in names where byName[n] == nil && !(n == "programme" && byName[""] != nil) {
                    throw Failure(description: "no programme '\(n)' in '\(path)' (it has: \(order.map { $0.isEmpty ? "programme" : $0 }.joined(separator: ", ")))")
                }
            }
            var out: [ReportProgramme] = []
            for name in order {
                let shown = name.isEmpty ? "programme" : name
                if let names, !names.contains(shown) && !names.contains(name) { continue }
                let entry = byName[name]!
                var programme = ReportProgramme(name: name, channels: entry.channels, target: target(name) ?? entry.target, blocks: [])
                programme.logIDs = entry.ids
                out.append(programme)
            }
            var incidents: [LoggedIncident] = []
            let a = try database.prepare("SELECT t, kind, subject, programme, state, value FROM alarms WHERE t >= ?1 AND t <= ?2 ORDER BY t")
            a.bind([.double(from), .double(to)])
            while try a.step() {
                incidents.append(LoggedIncident(
                    t: a.double(0) ?? 0, kind: a.text(1) ?? "", subject: a.text(2) ?? "", state: a.text(4), value: a.double(5),
                    detail: nil, programme: a.int(3).flatMap { nameOf[$0] }))
            }
            var marks: [(t: Double, name: String)] = []
            let e = try database.prepare("SELECT t, kind, programme, detail, value FROM events WHERE t >= ?1 AND t <= ?2 ORDER BY t")
            e.bind([.double(from), .double(to)])
            while try e.step() {
                let kind = e.text(1) ?? ""
                let detail = e.text(3)
                if kind == "mark" { marks.append((e.double(0) ?? 0, detail ?? "mark")) }
                incidents.append(LoggedIncident(
                    t: e.double(0) ?? 0, kind: kind, subject: "", state: nil, value: e.double(4), detail: detail,
                    programme: e.int(2).flatMap { nameOf[$0] }))
            }
            incidents.sort { $0.t < $1.t }
            return (out, incidents, marks)
        }
    }
}
