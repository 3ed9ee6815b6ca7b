#if canImport(Glibc)
import Glibc
#endif
import CJack

/// The environment, and starting a helper process that nobody waits for. Not real-time safe.
public enum ProcessEnvironment {
    /// This process's environment, by name (the `--on-alarm` command's starts from it).
    public static func current() -> [String: String] {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") { out[String(text[..<eq])] = String(text[text.index(after: eq)...]) }
            p += 1
        }
        return out
    }

    /// Starts `arguments` (an absolute path first) with `environment` in a process group of
    /// its own; returns its pid (the caller reaps it: `stop(_:)`), or nil. No thread is left
    /// waiting for it: inside jackd, code of jackvu.so still running after `jack_unload`
    /// unmapped the library would crash the server.
    static func spawn(_ arguments: [String], environment: [String: String]) -> pid_t? {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        // The child gets /dev/null for stdin, stdout and stderr and none of this process's
        // other descriptors: inside jackd those are the server's client sockets, and a copy
        // held open would keep every client that leaves registered.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        jackvu_spawn_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var pid: pid_t = 0
        guard posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp) == 0 else { return nil }
        return pid
    }

    /// Ends the process group `pid` leads (if it still runs) and reaps `pid`.
    static func stop(_ pid: pid_t) {
        kill(-pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
