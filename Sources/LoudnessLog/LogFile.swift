#if canImport(Glibc)
import Glibc
#endif
import CSQLite

/// The log's file, claimed for one jackvu: checked to be jackvu's to write and locked against
/// a second writer, before SQLite opens it.
///
/// - A symbolic link is refused (never followed: `O_NOFOLLOW`), so a link cannot make jackvu
///   create or write a file somewhere else; anything but a regular file or a new path (a
///   directory, a FIFO, a device such as `/dev/null`, a socket) is refused.
/// - An existing file must be empty, or an SQLite database that is a jackvu log: marked with
///   jackvu's `PRAGMA application_id` (`LogFile.applicationID`, set on every log jackvu opens),
///   or unmarked but holding nothing (a new database) or jackvu's tables (a log written before
///   the mark). Another application's database gains no tables.
/// - An exclusive `flock` on the file, held until the writer stops: a second jackvu on the same
///   log is refused (two writers interleaved their block numbers in one programme). SQLite's
///   own locks are `fcntl` locks, which `flock` does not touch.
///
/// Refusals that cannot change by waiting (`Refusal.isPermanent`) end the run at the start
/// (exit 73; 75 when another jackvu holds the log); a path that cannot be created now (a
/// read-only or missing folder, permissions) is said once and tried again, as before.
public final class LogFile: @unchecked Sendable {
    // @unchecked Sendable: the descriptor is only closed, once, by `release`.
    /// jackvu's SQLite application id: "jkvu".
    public static let applicationID: Int32 = 0x6A6B_7675
    public let path: String
    private var descriptor: Int32

    /// Why a log cannot be claimed.
    public struct Refusal: Error, CustomStringConvertible {
        public enum Kind: Sendable { case link, notRegular, foreign, inUse, cannotOpen }
        public let kind: Kind
        public let description: String
        /// Whether trying again cannot help (everything but a path that cannot be created now,
        /// and a log another process holds).
        public var isPermanent: Bool { kind != .cannotOpen && kind != .inUse }
    }

    /// Claims `path` for writing: see the type's description.
    public init(path: String) throws(Refusal) {
        self.path = path
        var st = stat()
        if lstat(path, &st) == 0 {
            try LogFile.checkType(st.st_mode, path)
        }
        // O_NOFOLLOW: a link put there since the check is refused too; O_NONBLOCK: a FIFO put
        // there cannot hang the open.
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o644)
        guard fd >= 0 else {
            let e = errno
            if e == ELOOP { throw Refusal(kind: .link, description: "--log \(path): is a symbolic link (not followed: name the file itself)") }
            if e == EISDIR { throw Refusal(kind: .notRegular, description: "--log \(path): is a directory (a log is a file)") }
            throw Refusal(kind: .cannotOpen, description: "--log \(path): cannot open: \(String(cString: strerror(e)))")
        }
        descriptor = fd
        do throws(Refusal) {
            guard fstat(fd, &st) == 0 else {
                throw Refusal(kind: .cannotOpen, description: "--log \(path): cannot open: \(String(cString: strerror(errno)))")
            }
            try LogFile.checkType(st.st_mode, path)
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let e = errno
                if e == EWOULDBLOCK {
                    throw Refusal(kind: .inUse, description: "--log \(path): is in use by another jackvu (one writer per log; give each its own file)")
                }
                throw Refusal(kind: .cannotOpen, description: "--log \(path): cannot lock: \(String(cString: strerror(e)))")
            }
            try LogFile.checkContent(fd: fd, size: Int(st.st_size), path: path)
        } catch {
            close(fd)
            descriptor = -1
            throw error
        }
    }

    deinit { release() }

    /// Gives the file up (the lock with it). Idempotent.
    public func release() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    private static func checkType(_ mode: mode_t, _ path: String) throws(Refusal) {
        switch mode & S_IFMT {
        case S_IFREG: return
        case S_IFLNK: throw Refusal(kind: .link, description: "--log \(path): is a symbolic link (not followed: name the file itself)")
        case S_IFDIR: throw Refusal(kind: .notRegular, description: "--log \(path): is a directory (a log is a file)")
        case S_IFIFO: throw Refusal(kind: .notRegular, description: "--log \(path): is a FIFO (a log is a regular file)")
        case S_IFCHR, S_IFBLK: throw Refusal(kind: .notRegular, description: "--log \(path): is a device (a log is a regular file)")
        case S_IFSOCK: throw Refusal(kind: .notRegular, description: "--log \(path): is a socket (a log is a regular file)")
        default: throw Refusal(kind: .notRegular, description: "--log \(path): is not a regular file")
        }
    }

    /// An empty file, or an SQLite database that is a jackvu log (its application id, or no
    /// mark and nothing but jackvu's tables).
    private static func checkContent(fd: Int32, size: Int, path: String) throws(Refusal) {
        guard size > 0 else { return }
        var header = [UInt8](repeating: 0, count: 100)
        let n = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 100, 0) }
        let magic = Array("SQLite format 3".utf8) + [0]
        guard n == 100, Array(header[0..<16]) == magic else {
            throw Refusal(kind: .foreign, description: "--log \(path): is not an SQLite database, so not a jackvu log (not overwritten)")
        }
        let id = header[68..<72].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        if Int32(bitPattern: id) == applicationID { return }
        guard id == 0 else {
            throw Refusal(kind: .foreign, description: "--log \(path): is another application's SQLite database (application id \(id)), not a jackvu log")
        }
        // Unmarked: nothing in it, or jackvu's own tables (a log from before the mark).
        var names: [String] = []
        do {
            let db = try Database.untrusted(path: path)
            let s = try db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")
            while try s.step() { names.append(s.text(0) ?? "") }
        } catch {
            throw Refusal(kind: .foreign, description: "--log \(path): cannot be read as an SQLite database (\(error.description)): not a jackvu log")
        }
        let own = Set(LogReader.tables)
        guard names.allSatisfy(own.contains), names.isEmpty || own.isSubset(of: Set(names)) else {
            let shown = names.prefix(5).map { Report.printable($0) }.joined(separator: ", ")
            throw Refusal(kind: .foreign, description: "--log \(path): is an SQLite database of another application (tables \(shown)\(names.count > 5 ? ", …" : "")), not a jackvu log")
        }
    }
}
