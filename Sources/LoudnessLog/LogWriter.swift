#if canImport(Glibc)
import Glibc
#endif
import CSQLite
import DSP
import Outputs
import Realtime
import Synchronization

/// The log's schema (version 1). README "The loudness and incident log" documents it for
/// other readers (sqlite3, Grafana's SQLite data source, Python).
public enum LogSchema {
    public static let version = 1
    public static let sql = """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS programmes (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            channels TEXT NOT NULL,
            profile TEXT,
            target_lufs REAL,
            tolerance_lu REAL,
            max_true_peak_dbtp REAL,
            max_short_term_lufs REAL,
            first_seen REAL NOT NULL);
        CREATE TABLE IF NOT EXISTS blocks (
            programme INTEGER NOT NULL,
            t REAL NOT NULL,
            idx INTEGER NOT NULL,
            power REAL NOT NULL,
            true_peak_dbtp REAL,
            sample_peak_dbfs REAL,
            PRIMARY KEY (programme, t)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS alarms (
            t REAL NOT NULL,
            kind TEXT NOT NULL,
            subject TEXT NOT NULL,
            programme INTEGER,
            state TEXT NOT NULL,
            value REAL,
            unit TEXT);
        CREATE INDEX IF NOT EXISTS alarms_t ON alarms (t);
        CREATE TABLE IF NOT EXISTS events (
            t REAL NOT NULL,
            kind TEXT NOT NULL,
            programme INTEGER,
            detail TEXT,
            value REAL);
        CREATE INDEX IF NOT EXISTS events_t ON events (t);
        CREATE TABLE IF NOT EXISTS faults (
            programme INTEGER NOT NULL,
            t REAL NOT NULL,
            cause TEXT NOT NULL,
            PRIMARY KEY (programme, t)) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS alarm_causes (
            t REAL NOT NULL,
            kind TEXT NOT NULL,
            subject TEXT NOT NULL,
            cause TEXT NOT NULL);
        CREATE INDEX IF NOT EXISTS alarm_causes_t ON alarm_causes (t);
        """

    /// Tables added to version 1 since it was first written, each optional to a reader (a
    /// log from before them has none of their rows): `faults` — the blocks a fault on the
    /// bus (an xrun, a connection change) could be in (`cause`: `xrun`, `connection`), so a
    /// report keeps the clean maxima beside the others; `alarm_causes` — the cause of a true
    /// peak or clip alarm raised near such a fault, joined to `alarms` on (t, kind, subject).
    /// The first five tables' columns are as they were, so nothing that reads or writes them
    /// changes.
    public static let optionalTables = ["faults", "alarm_causes"]

}

/// What a programme is, as the log records it (a run with another layout or target is
/// another row).
public struct LoggedProgramme: Sendable, Equatable {
    public var name: String
    /// 0-based inputs (written 1-based).
    public var channels: [Int]
    public var target: LoudnessTarget?
    public init(name: String, channels: [Int], target: LoudnessTarget?) {
        self.name = name
        self.channels = channels
        self.target = target
    }
}

/// The loudness and incident log (`--log PATH`): SQLite in WAL mode, written by its own
/// thread in one transaction about every second. Producers (the worker, the control input,
/// the main thread) only append to a buffer under a short lock; a file that cannot be
/// written (a full disk, a read-only path) is said once and the rows wait (up to
/// `pendingLimit`, then the oldest are dropped and counted) until it can be again; metering
/// never waits for it. A `kill -9` loses at most the rows of the last second; a power cut
/// may lose the last transactions (synchronous=NORMAL in WAL mode) but never corrupts the file.
public final class LogWriter: @unchecked Sendable {
    // @unchecked Sendable: `pending` is a Mutex; the database is the writer thread's own.
    public let path: String
    private let programmes: [LoggedProgramme]
    /// How many programmes the log records.
    public var programmeCount: Int { programmes.count }
    private let retentionDays: Double?
    private let pending = Mutex<[Row]>([])
    /// Rows dropped because the log could not be written for too long, and failed commits.
    public let rowsLost = Counter()
    public let failures = Counter()
    /// Rows written.
    public let rowsWritten = Counter()
    private let stopping = Atomic<Bool>(false)
    private let wake = WakeSignal()
    private var thread: PosixThread?
    /// The most rows kept while the file cannot be written (about 10 minutes of 32 programmes).
    public static let pendingLimit = 200_000
    /// Seconds between commits.
    public let commitInterval: Double

    enum Row {
        case block(programme: Int, t: Double, index: Int, power: Double, truePeak: Double?, samplePeak: Double?, fault: FaultCause?)
        case alarm(AlarmEvent)
        case event(t: Double, kind: String, programme: Int?, detail: String?, value: Double?)
    }

    // The writer thread's own.
    private var database: Database?
    private var ids: [Int] = []
    private var lastT: [Double] = []
    private var insertBlock: Statement?
    private var insertAlarm: Statement?
    private var insertEvent: Statement?
    private var insertFault: Statement?
    private var insertAlarmCause: Statement?
    private var failing = false
    private var clockStepped = false
    private var nextOpen = 0.0
    private var nextPrune = 0.0
    /// The file, claimed for this writer (`LogFile`): held until the writer stops.
    private var file: LogFile?
    /// Wall time at the start, and the monotonic clock then (s): every time the log stamps is
    /// the start's wall time plus the monotonic time since (`now`), so a wall-clock step never
    /// reaches the log's times.
    private let unixAtStart: Double
    private let monotonicAtStart: Double

    /// Opens the log (creating it and its tables); a failure is said once, and the writer
    /// tries again every 10 s — but never after a refusal that cannot change (a link, a
    /// directory, a device, another application's database). `file`: the file already claimed
    /// (`claim`), so that the start could refuse it with an exit status.
    public init(path: String, programmes: [LoggedProgramme], retentionDays: Double? = nil, commitInterval: Double = 1, file: LogFile? = nil) {
        self.path = path
        self.programmes = programmes
        self.retentionDays = retentionDays
        self.commitInterval = commitInterval
        self.file = file
        unixAtStart = LogWriter.unixNow()
        monotonicAtStart = LogWriter.monotonicNow()
        lastT = Array(repeating: -Double.infinity, count: programmes.count)
        open(now: LogWriter.unixNow())
    }

    /// Claims `path` before the run starts: the file, or nil when it cannot be created now
    /// (the writer tries again); throws a refusal that ends the run (`LogFile.Refusal`:
    /// permanent, or in use by another jackvu).
    public static func claim(_ path: String) throws(LogFile.Refusal) -> LogFile? {
        do { return try LogFile(path: path) } catch {
            if error.kind == .cannotOpen { return nil }
            throw error
        }
    }

    /// Now, as the log stamps it: the wall time at the start plus the monotonic time since
    /// (Unix seconds). Any thread.
    public func now() -> Double { time(monotonic: LogWriter.monotonicNow()) }

    /// A monotonic-clock instant (s, CLOCK_MONOTONIC) as the log stamps it. Any thread.
    public func time(monotonic seconds: Double) -> Double { unixAtStart + (seconds - monotonicAtStart) }

    /// How far the wall clock has stepped from the log's time (`now`), seconds: 0 until
    /// someone steps it (NTP after a bad start, an operator, a VM restored). Any thread.
    public func wallClockOffset() -> Double { LogWriter.unixNow() - now() }

    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    public func start() {
        thread = PosixThread(name: "jackvu-log") { [self] in run() }
    }

    /// The time of the latest block a log at `path` holds (any programme), nil for none or a
    /// file that cannot be read: `jackvu analyze --log` appends a file after it, so that two
    /// analyses into one log follow each other instead of interleaving. Call after `claim`
    /// (which refuses what is not a jackvu log).
    public static func latestBlockTime(path: String) -> Double? {
        guard let db = try? Database(path: path, write: false, create: false),
              let query = try? db.prepare("SELECT max(t) FROM blocks"), (try? query.step()) == true else { return nil }
        return query.number(0).flatMap { $0.isFinite ? $0 : nil }
    }

    /// Writes what is pending and closes the file. Idempotent.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
        thread?.join()
        thread = nil
    }

    // MARK: Producers (any thread; a short lock)

    /// A 100 ms block; `fault`: a fault on the bus (an xrun, a connection change) could be
    /// in its peaks (the report then keeps the clean maxima beside the others).
    public func block(programme: Int, t: Double, index: Int, power: Double, truePeak: Double?, samplePeak: Double?, fault: FaultCause? = nil) {
        append(.block(programme: programme, t: t, index: index, power: power, truePeak: truePeak, samplePeak: samplePeak, fault: fault))
    }

    public func alarm(_ e: AlarmEvent) { append(.alarm(e)) }

    /// A chain event: `start`, `stop`, `server_lost`, `server_back`, `server_stalled`,
    /// `server_responding`, `reconnect`, `xruns`,
    /// `overruns`, `reset`, `pause`, `resume`, `mark`, `clock_step`, `rows_lost`.
    /// `t`: Unix seconds (default: `now()`, the log's clock).
    public func event(_ kind: String, t: Double? = nil, programme: Int? = nil, detail: String? = nil, value: Double? = nil) {
        append(.event(t: t ?? now(), kind: kind, programme: programme, detail: detail, value: value))
    }

    /// Producers wait while the writer is far behind, instead of rows being dropped (`jackvu
    /// analyze --log`, which produces faster than real time; never the live worker).
    public var waitsWhenFull = false

    private func append(_ row: Row) {
        if waitsWhenFull {
            while pending.withLock({ $0.count }) >= LogWriter.pendingLimit / 2 { usleep(2000) }
        }
        let dropped = pending.withLock { rows -> Bool in
            if rows.count >= LogWriter.pendingLimit {
                rows.removeFirst(rows.count / 10)
                return true
            }
            rows.append(row)
            return false
        }
        if dropped { rowsLost.add(LogWriter.pendingLimit / 10) }
    }

    public static func unixNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    // MARK: The writer thread

    private func run() {
        while true {
            let stop = stopping.load(ordering: .relaxed)
            if !stop { _ = wake.wait(timeout: commitInterval) }
            commit()
            if stop || stopping.load(ordering: .relaxed) && pending.withLock({ $0.isEmpty }) { break }
        }
        commit()
        insertBlock = nil
        insertAlarm = nil
        insertEvent = nil
        insertFault = nil
        insertAlarmCause = nil
        database = nil
        file?.release()
    }

    /// Writes every pending row in one transaction; on failure they stay pending.
    private func commit() {
        let now = self.now()
        if database == nil {
            guard now >= nextOpen else { return }
            open(now: now)
            guard database != nil else { return }
        }
        let rows = pending.withLock { rows -> [Row] in
            defer { rows.removeAll(keepingCapacity: true) }
            return rows
        }
        guard !rows.isEmpty || (retentionDays != nil && now >= nextPrune) else { return }
        // A failed transaction writes nothing: the times go back to what was committed.
        let committedT = lastT
        do throws(Database.Failure) {
            try write(rows, now: now)
            rowsWritten.add(rows.count)
            if failing {
                printError("--log \(path): writing again (\(rowsLost.count) rows lost in all)")
                failing = false
            }
        } catch {
            try? database?.execute("ROLLBACK")
            lastT = committedT
            failures.add()
            // Keep the rows for the next try, ahead of what came in since.
            pending.withLock { $0.insert(contentsOf: rows, at: 0) }
            if !failing {
                failing = true
                printError("--log \(path): cannot write: \(error.description) (metering goes on; the rows wait, and are kept up to \(LogWriter.pendingLimit))")
            }
        }
    }

    private func write(_ rows: [Row], now: Double) throws(Database.Failure) {
        guard let db = database, let insertBlock, let insertAlarm, let insertEvent, let insertFault, let insertAlarmCause else { return }
        try db.execute("BEGIN")
        for row in rows {
            switch row {
            case .block(let p, var t, let index, let power, let tp, let sp, let fault):
                guard ids.indices.contains(p) else { continue }
                // Times per programme only go forward (the primary key): a clock stepped back
                // leaves the blocks 1 ms apart until it has caught up (said, and logged, once
                // per step of more than a second).
                if t <= lastT[p] {
                    if lastT[p] - t > 1 && !clockStepped {
                        clockStepped = true
                        printError("--log \(path): the clock stepped back by \(Int((lastT[p] - t).rounded())) s; blocks are stamped 1 ms apart until it has caught up")
                        try insertEvent.run([.double(lastT[p]), .text("clock_step"), .null, .null, .double(t - lastT[p])])
                    }
                    t = lastT[p] + 0.001
                } else {
                    clockStepped = false
                }
                lastT[p] = t
                try insertBlock.run([.int(ids[p]), .double(t), .int(index), .double(power),
                                     tp.map { .double($0) } ?? .null, sp.map { .double($0) } ?? .null])
                if let fault { try insertFault.run([.int(ids[p]), .double(t), .text(fault.rawValue)]) }
            case .alarm(let e):
                try insertAlarm.run([.double(e.unixTime), .text(e.kind.rawValue), .text(e.subject),
                                     e.programme.flatMap { ids.indices.contains($0) ? .int(ids[$0]) : nil } ?? .null,
                                     .text(e.state), .double(e.value), .text(e.kind.unit)])
                if let cause = e.cause {
                    try insertAlarmCause.run([.double(e.unixTime), .text(e.kind.rawValue), .text(e.subject), .text(cause.rawValue)])
                }
            case .event(let t, let kind, let p, let detail, let value):
                try insertEvent.run([.double(t), .text(kind), p.flatMap { ids.indices.contains($0) ? .int(ids[$0]) : nil } ?? .null,
                                     detail.map { .text($0) } ?? .null, value.map { .double($0) } ?? .null])
            }
        }
        if let days = retentionDays, now >= nextPrune {
            let before = now - days * 86400
            for table in ["blocks", "alarms", "events", "faults", "alarm_causes"] { try db.execute("DELETE FROM \(table) WHERE t < \(before)") }
            nextPrune = now + 3600
        }
        try db.execute("COMMIT")
    }

    /// Opens the file, creates the tables, finds or adds the programmes.
    private func open(now: Double) {
        nextOpen = now + 10
        if file == nil {
            do { file = try LogFile(path: path) } catch {
                if error.isPermanent {
                    // A link, a directory, a device, another application's database: waiting
                    // cannot change that. Said once; no more tries.
                    nextOpen = .infinity
                    printError("\(error.description); not logging (metering goes on)")
                } else if !failing {
                    failing = true
                    printError("\(error.description) (metering goes on; trying again every 10 s)")
                }
                failures.add()
                return
            }
        }
        do throws(Database.Failure) {
            let db = try Database(path: path, write: true, create: true)
            try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            try db.execute(LogSchema.sql)
            // jackvu's mark (`LogFile` knows its logs by it) and the schema's version.
            try db.execute("PRAGMA application_id = \(LogFile.applicationID); PRAGMA user_version = \(LogSchema.version);")
            // One transaction for the whole set-up (each statement of its own would be a WAL
            // commit: 32 programmes made a quarter of a megabyte of WAL).
            try db.execute("BEGIN")
            try db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', '\(LogSchema.version)')")
            var found: [Int] = []
            for p in programmes {
                let channels = p.channels.map { String($0 + 1) }.joined(separator: ",")
                let query = try db.prepare(
                    "SELECT id FROM programmes WHERE name = ?1 AND channels = ?2 AND profile IS ?3 AND target_lufs IS ?4 "
                        + "AND tolerance_lu IS ?5 AND max_true_peak_dbtp IS ?6 ORDER BY id DESC LIMIT 1")
                let t = p.target
                let values: [Statement.Value] = [
                    .text(p.name), .text(channels), t.map { .text($0.profile) } ?? .null, t.map { .double($0.targetLUFS) } ?? .null,
                    t.map { .double($0.toleranceLU) } ?? .null, t.map { .double($0.maxTruePeakDBTP) } ?? .null,
                ]
                query.bind(values)
                if try query.step(), let id = query.int(0) {
                    found.append(id)
                } else {
                    let insert = try db.prepare(
                        "INSERT INTO programmes (name, channels, profile, target_lufs, tolerance_lu, max_true_peak_dbtp, max_short_term_lufs, first_seen) "
                            + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
                    try insert.run(values + [t?.maxShortTermLUFS.map { .double($0) } ?? .null, .double(now)])
                    found.append(Int(sqlite3_last_insert_rowid(db.handle)))
                }
                // Times go on from the last block — unless it lies in the future (a run whose
                // clock was stepped ahead stamped it): then from the true time.
                let last = try db.prepare("SELECT max(t) FROM blocks WHERE programme = ?1 AND t <= ?2")
                last.bind([.int(found.last!), .double(now + 1)])
                if try last.step(), let t = last.number(0) { lastT[found.count - 1] = t }
            }
            try db.execute("COMMIT")
            insertBlock = try db.prepare("INSERT INTO blocks VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
            insertAlarm = try db.prepare("INSERT INTO alarms VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            insertEvent = try db.prepare("INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5)")
            insertFault = try db.prepare("INSERT OR REPLACE INTO faults VALUES (?1, ?2, ?3)")
            insertAlarmCause = try db.prepare("INSERT INTO alarm_causes VALUES (?1, ?2, ?3, ?4)")
            ids = found
            database = db
            if failing {
                printError("--log \(path): open again")
                failing = false
            }
        } catch {
            failures.add()
            insertBlock = nil
            insertAlarm = nil
            insertEvent = nil
            insertFault = nil
            insertAlarmCause = nil
            if !failing {
                failing = true
                printError("--log \(path): cannot open: \(error.description) (metering goes on; trying again every 10 s)")
            }
        }
    }
}
