import CSQLite

/// A small wrapper of SQLite's C API: a connection and prepared statements. One thread at a
/// time per connection.
public final class Database: @unchecked Sendable {
    // @unchecked Sendable: used by one thread at a time (the log's writer, or a report).
    let handle: OpaquePointer

    public struct Failure: Error, CustomStringConvertible {
        /// SQLite's result code (SQLITE_FULL, SQLITE_READONLY, …).
        public let code: Int32
        public let description: String
        /// Whether the disk is full, or the file or its folder cannot be written.
        public var isUnwritable: Bool {
            let primary = code & 0xFF
            return primary == SQLITE_FULL || primary == SQLITE_READONLY || primary == SQLITE_IOERR
                || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM
        }
    }

    /// Opens (and with `create`, creates) the database at `path`; read-only without `write`.
    /// A symbolic link is never followed for writing (`SQLITE_OPEN_NOFOLLOW`).
    public init(path: String, write: Bool, create: Bool) throws(Failure) {
        var db: OpaquePointer?
        let flags = (write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW : SQLITE_OPEN_READONLY) | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close_v2(db) }
            throw Failure(code: rc, description: message)
        }
        handle = db
        // A busy reader (sqlite3, a report) never stalls the writer for long.
        sqlite3_busy_timeout(db, 2000)
    }

    /// Opens a database someone else may have written, read-only and defensively
    /// (`jackvu_sqlite_untrusted`): strings and blobs of at most `maxLength` bytes.
    public static func untrusted(path: String, maxLength: Int32 = 1 << 20) throws(Failure) -> Database {
        let db = try Database(path: path, write: false, create: false)
        jackvu_sqlite_untrusted(db.handle, maxLength)
        return db
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs SQL with no results (several statements allowed).
    public func execute(_ sql: String) throws(Failure) {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &error)
        if rc != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(error)
            throw Failure(code: sqlite3_extended_errcode(handle), description: message)
        }
    }

    public func prepare(_ sql: String) throws(Failure) -> Statement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc) }
        return Statement(statement, database: self)
    }

    func failure(_ rc: Int32) -> Failure {
        Failure(code: sqlite3_extended_errcode(handle), description: String(cString: sqlite3_errmsg(handle)))
    }

    /// The first column of the first row of a query (nil: no row, or NULL).
    public func scalar(_ sql: String) throws(Failure) -> Double? {
        let s = try prepare(sql)
        return try s.step() ? s.double(0) : nil
    }
}

/// A prepared statement: bind (1-based), step, read columns (0-based), reset.
public final class Statement {
    let handle: OpaquePointer
    private let database: Database

    init(_ handle: OpaquePointer, database: Database) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    public func bind(_ values: [Value]) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (i, v) in values.enumerated() {
            let n = Int32(i + 1)
            switch v {
            case .null: sqlite3_bind_null(handle, n)
            case .int(let x): sqlite3_bind_int64(handle, n, Int64(x))
            case .double(let x): if x.isFinite { sqlite3_bind_double(handle, n, x) } else { sqlite3_bind_null(handle, n) }
            case .text(let s): sqlite3_bind_text(handle, n, s, -1, jackvu_sqlite_transient())
            }
        }
    }

    public enum Value {
        case null
        case int(Int)
        case double(Double)
        case text(String)
    }

    /// Steps once: true with a row to read, false when done.
    public func step() throws(Database.Failure) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw database.failure(rc)
    }

    /// Binds and runs to the end (an insert, an update).
    public func run(_ values: [Value]) throws(Database.Failure) {
        bind(values)
        while try step() {}
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    /// A column that holds a number (INTEGER or REAL) as a finite Double; nil for NULL, text
    /// (which `double` would read as 0), blobs, infinities and NaN.
    public func number(_ column: Int32) -> Double? {
        let type = sqlite3_column_type(handle, column)
        guard type == SQLITE_INTEGER || type == SQLITE_FLOAT else { return nil }
        let x = sqlite3_column_double(handle, column)
        return x.isFinite ? x : nil
    }
    /// A column that holds an integer within ±2⁵³ (nil otherwise: a REAL, text, NULL).
    public func integer(_ column: Int32) -> Int? {
        guard sqlite3_column_type(handle, column) == SQLITE_INTEGER else { return nil }
        let x = sqlite3_column_int64(handle, column)
        return abs(x) <= 1 << 53 ? Int(x) : nil
    }
    public func double(_ column: Int32) -> Double? { isNull(column) ? nil : sqlite3_column_double(handle, column) }
    public func int(_ column: Int32) -> Int? { isNull(column) ? nil : Int(sqlite3_column_int64(handle, column)) }
    public func text(_ column: Int32) -> String? {
        guard let p = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: p)
    }
}
