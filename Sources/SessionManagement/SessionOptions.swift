#if canImport(Glibc)
import Glibc
#endif

/// A program's options kept in a session: the command-line arguments, one per line, in the
/// file `options` of the directory the session manager names (`/nsm/client/open`'s path).
/// A line starting with `#` is a comment: an argument may hold any character but a newline,
/// and may not start with `#`.
public enum SessionOptions {
    /// The file under `directory`.
    public static func file(in directory: String) -> String { directory + "/options" }

    /// The saved arguments, or nil when the directory holds none yet (a new client).
    public static func load(from directory: String) throws(SessionError) -> [String]? {
        let path = file(in: directory)
        guard let f = fopen(path, "r") else {
            if errno == ENOENT { return nil }
            throw SessionError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(f) }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, f)
            if n <= 0 { break }
            text.append(contentsOf: buffer[0..<n])
        }
        return parse(String(decoding: text, as: UTF8.self))
    }

    /// The arguments in a file's text.
    public static func parse(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// The file's text for `arguments`.
    public static func render(_ arguments: [String], program: String) -> String {
        "# \(program) options, restored when the session opens: one argument per line\n"
            + arguments.map { $0 + "\n" }.joined()
    }

    /// Writes `arguments` under `directory` (created if needed), atomically: a reader sees the
    /// old file or the new one, never half of one. The temporary file is made by mkstemp
    /// (a new file of a unique name, O_EXCL: a symlink or file planted at a fixed name is
    /// never followed or overwritten), written and fsynced, renamed over the old one, and
    /// the directory fsynced, so that the rename itself survives a power cut.
    public static func save(_ arguments: [String], program: String, to directory: String) throws(SessionError) {
        for a in arguments where a.contains("\n") || a.hasPrefix("#") {
            throw SessionError("cannot save the argument '\(a)': it contains a newline or starts with #")
        }
        try makeDirectories(directory)
        let path = file(in: directory)
        var template = Array((path + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw SessionError("cannot write in \(directory): \(String(cString: strerror(errno)))")
        }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        fchmod(fd, 0o644)
        let bytes = Array(render(arguments, program: program).utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            written += n
        }
        let synced = written == bytes.count && fsync(fd) == 0
        let reason = String(cString: strerror(errno))
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let why = synced ? String(cString: strerror(errno)) : reason
            unlink(temporary)
            throw SessionError("cannot write \(path): \(why)")
        }
        // The directory entry: without this, a power cut can lose the rename.
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            fsync(dir)
            close(dir)
        }
    }

    /// `mkdir -p`.
    static func makeDirectories(_ path: String) throws(SessionError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw SessionError("cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }
}
