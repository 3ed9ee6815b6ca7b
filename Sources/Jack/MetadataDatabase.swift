#if canImport(Glibc)
import Glibc
#endif

/// JACK2's port metadata lives in a Berkeley DB environment in /dev/shm (`jack_db-UID`:
/// `metadata.db`, a hash database, with the lock regions `__db.00N`), shared by the server
/// and every client of the user. jackd 1.9.21 opens it with locking but without deadlock
/// detection, and two of its own operations can deadlock each other:
///
/// - the server removing a departing client's or port's properties walks the whole database
///   with a cursor (`JackMetadata::RemoveProperties`, at every client close and every port
///   unregistration: even a `jack_lsp` closing), holding a read lock on the bucket it is on
///   and taking the database's meta page for each step;
/// - a client's `jack_set_property` that makes the hash table grow holds the meta page for
///   writing while it waits to split a bucket: when that bucket is the one the server's cursor
///   is on, each waits for the other.
///
/// Nothing ever breaks that wait: the server's request thread and the client wait for ever,
/// the server answers no client again, and every later server of the user hangs on the same
/// locks until the environment is removed by hand. jackvu writes a few properties per port
/// at every start, so a start while any client leaves can hang the whole JACK server: on
/// this machine, 64-channel starts beside a loop of `jack_lsp` hung it within 16 and 40
/// starts (BENCHMARKS.md).
///
/// Berkeley DB has the remedy built in: run the deadlock detector whenever a lock must wait,
/// and reject one request of a cycle with DB_LOCK_DEADLOCK. The environment's `DB_CONFIG`
/// file asks for it (`set_lk_detect`), and any process that joins the environment afterwards
/// — jackvu's own libjack when it opens its client — records it in the shared lock region,
/// where it holds for every process until the environment is removed. `DB_LOCK_MINWRITE`
/// rejects the request of the locker holding the fewest write locks: in the cycle above the
/// server's read-only cursor (the client holds the meta page and its own bucket for writing),
/// whose removal then stops early and leaves that departed subject's remaining properties
/// behind. Rejecting the client's split instead would leave the hash table half split
/// (Berkeley DB's verifier: "item hashes incorrectly") — the policy matters.
public enum MetadataDatabase {
    /// What `DB_CONFIG` says: Berkeley DB's deadlock detector on every lock conflict.
    public static let configuration = """
        # Written by jackvu: run Berkeley DB's deadlock detector whenever a lock must wait, so
        # that jackd's removal of a departed client's properties and a client's
        # jack_set_property never wait for each other for ever (jackd 1.9.21 opens this
        # database without deadlock detection). The request of the locker with the fewest
        # write locks is rejected (the server's read-only cursor, not a client's bucket split).
        set_lk_detect DB_LOCK_MINWRITE

        """

    /// The environment's directory: JACK2's server directory (/dev/shm on Linux) and the user.
    public static var directory: String { "/dev/shm/jack_db-\(getuid())" }

    public enum Outcome: Equatable, Sendable {
        /// jackvu wrote the file (creating the directory if there was none).
        case written
        /// A `DB_CONFIG` was there already (or a link of that name): left as it is.
        case present
        /// PipeWire's JACK: no Berkeley DB.
        case notJACK2
        /// The path is not a directory of this user's (a link, a file, someone else's
        /// directory in the world-writable /dev/shm): nothing is written into it.
        case refused
        /// The file could not be written (errno): metadata works as before, without detection.
        case failed(Int32)
    }

    /// Asks for deadlock detection in JACK2's metadata database before libjack opens it
    /// (before the process's first client, and again before each later one, in case the
    /// environment was removed meanwhile). Never replaces a `DB_CONFIG` there is, never
    /// follows a link, and writes only into a directory of this user's. Cheap when done: an
    /// open of the directory and one failed exclusive create.
    @discardableResult
    public static func enableDeadlockDetection(directory: String = MetadataDatabase.directory, isJACK2: Bool = !Client.isPipeWire) -> Outcome {
        guard isJACK2 else { return .notJACK2 }
        // The mode JACK gives it (rwxr-x---); an existing directory is left as it is.
        if mkdir(directory, 0o750) != 0 && errno != EEXIST { return .failed(errno) }
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if dir < 0 { return errno == ENOTDIR || errno == ELOOP ? .refused : .failed(errno) }
        defer { close(dir) }
        var info = stat()
        guard fstat(dir, &info) == 0, info.st_uid == getuid() else { return .refused }
        let fd = openat(dir, "DB_CONFIG", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        if fd < 0 { return errno == EEXIST ? .present : .failed(errno) }
        defer { close(fd) }
        let written = configuration.withCString { write(fd, $0, strlen($0)) }
        if written != configuration.utf8.count {
            let error = written < 0 ? errno : EIO
            unlinkat(dir, "DB_CONFIG", 0)
            return .failed(error)
        }
        return .written
    }
}
