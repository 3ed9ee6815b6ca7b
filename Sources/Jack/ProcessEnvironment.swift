#if canImport(Glibc)
import Glibc
#endif
import CJack

/// The environment, and starting a helper process that nobody waits for. Not real-time safe.
enum ProcessEnvironment {
    static func current() -> [String: String] {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") { out[String(text[..<eq])] = String(text[text.index(after: eq)...]) }
            p += 1
        }
        return out
    }

    /// Starts `arguments` (an absolute path first) with `environment`, and reaps it on a
    /// detached thread so that it leaves no zombie.
    static func spawnDetached(_ arguments: [String], environment: [String: String]) {
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
        var pid: pid_t = 0
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, envp) == 0 else { return }
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        defer { pthread_attr_destroy(&attributes) }
        _ = pthread_create(&thread, &attributes, { arg in
            var status: Int32 = 0
            waitpid(pid_t(Int(bitPattern: arg)), &status, 0)
            return nil
        }, UnsafeMutableRawPointer(bitPattern: Int(pid)))
    }
}
