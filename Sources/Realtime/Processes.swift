#if canImport(Glibc)
import Glibc
#endif
import CRealtime

/// Starting a helper process, in one place for every caller (the `--on-alarm` command, the
/// in-process client's metadata helper), and the environment, read once. Not real-time safe.
public enum ChildProcess {
    /// This process's environment, by name, as it was when first asked for (the program's
    /// start): the terminal display's `TERM` and `COLORTERM`, the `--on-alarm` command's and
    /// the helpers' environments start from it.
    public static let environment: [String: String] = {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") { out[String(text[..<eq])] = String(text[text.index(after: eq)...]) }
            p += 1
        }
        return out
    }()

    /// Where the child's standard output goes.
    public enum Output: Sendable { case null, stderr }

    /// Starts `arguments` (an absolute path first) with `environment` in a process group of
    /// its own (so that stopping it stops what it started too), stdin from /dev/null, its
    /// stdout to `output`, its stderr to this process's (`.stderr`) or /dev/null (`.null`),
    /// and none of this process's other descriptors (sockets, the log; inside jackd the
    /// server's client sockets, which a copy held open would keep registered). With
    /// `defaultSignals` no signal is blocked and SIGPIPE has its default action (this
    /// process's threads block the signals its main thread waits for). Returns its pid, or
    /// the errno of the failure; the caller reaps it.
    public static func spawn(_ arguments: [String], environment: [String: String], output: Output, defaultSignals: Bool) -> Result<pid_t, SpawnError> {
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        switch output {
        case .null:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .stderr:
            posix_spawn_file_actions_adddup2(&actions, 2, 1)
        }
        jackvu_spawn_close_from_fd(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var flags = POSIX_SPAWN_SETPGROUP
        if defaultSignals {
            var none = sigset_t()
            sigemptyset(&none)
            var defaults = sigset_t()
            sigemptyset(&defaults)
            sigaddset(&defaults, SIGPIPE)
            posix_spawnattr_setsigmask(&attributes, &none)
            posix_spawnattr_setsigdefault(&attributes, &defaults)
            flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        return rc == 0 ? .success(pid) : .failure(SpawnError(code: rc))
    }

    /// Ends the process group `pid` leads and reaps `pid`: first SIGTERM to `pid` alone (a
    /// shell that traps it ends once its current command has finished: a `jack_property`
    /// killed inside its write would leave JACK's metadata database locked for every later
    /// client), and after `grace` seconds SIGKILL to the whole group.
    public static func stop(_ pid: pid_t, grace: Double) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var waited = 0.0
        while waited < grace {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno != EINTR) { return }
            usleep(10_000)
            waited += 0.01
        }
        kill(-pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}

/// A process that could not be started: the errno, said in words.
public struct SpawnError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public var description: String { String(cString: strerror(code)) }
}
