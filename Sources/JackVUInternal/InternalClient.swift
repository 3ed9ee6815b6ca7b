#if canImport(Glibc)
import Glibc
#endif
import Jack
import Analysis
import JackVU
import Settings
import JackVUOptions
import Outputs
import Realtime
import Synchronization
import Version

// jackvu as a JACK internal client: `jack_load -i "OPTIONS" jackvu jackvu` loads jackvu.so into
// the server, which calls `jack_initialize` with a client it opened for it; `jack_unload jackvu`
// calls `jack_finish`. The engine is the command's (the same options, ports, metadata and
// outputs), on a thread of its own inside jackd; the process callback runs on the server's
// real-time thread, with no inter-process wake-up per period. Not in process: the terminal
// and browser displays and the Prometheus listener (they belong to a terminal or a web
// server, not to jackd: an HTTP server's event-loop threads would run inside the JACK
// server's process and outlive jack_unload), reconnecting
// (the server's end is the process's end) and session managers. Stdout and stderr are
// jackd's: the text stream is off unless --text or --format asks for it.

/// The loaded instance (one per server: a second `jack_load` of the same library is refused).
final class Instance: @unchecked Sendable {
    // @unchecked Sendable: `failure` is written by the engine thread before it signals
    // `started`, and read after that wait.
    let engine: Engine
    let started = WakeSignal()
    var failure: String?
    var thread: PosixThread?

    init(engine: Engine) { self.engine = engine }
}

nonisolated(unsafe) private var instance: Instance?
private let lock = Mutex(())

/// Splits the `-i` string into arguments: words separated by spaces, with '…' or "…" quoting.
func splitArguments(_ text: String) -> [String] {
    var out: [String] = []
    var current = ""
    var quote: Character?
    var inWord = false
    for ch in text {
        if let q = quote {
            if ch == q { quote = nil } else { current.append(ch) }
        } else if ch == "'" || ch == "\"" {
            quote = ch
            inWord = true
        } else if ch == " " || ch == "\t" || ch == "\n" {
            if inWord { out.append(current) }
            current = ""
            inWord = false
        } else {
            current.append(ch)
            inWord = true
        }
    }
    if inWord { out.append(current) }
    return out
}

@_cdecl("jack_initialize")
public func jackInitialize(_ client: OpaquePointer?, _ loadInit: UnsafePointer<CChar>?) -> Int32 {
    guard let client else { return 1 }
    return lock.withLock { _ -> Int32 in
        guard instance == nil else {
            printError("jackvu is already loaded in this server (one in-process jackvu per server; run the command for more)")
            return 1
        }
        let arguments = splitArguments(loadInit.map { String(cString: $0) } ?? "")
        var command: JackVUCommand
        do { command = try JackVUCommand.parse(arguments) } catch {
            printError("\(oneLineMessage(JackVUCommand.message(for: error))) (jack_load -i \"OPTIONS\": see jackvu --help)")
            return 1
        }
        if command.tui || command.live.http != nil || command.live.metrics != nil {
            printError("--tui, --http and --metrics are not available in process (use the jackvu command for a display or a Prometheus target)")
            return 1
        }
        if !command.text && command.format == nil { command.quiet = true }
        let adopted = Client(adopting: client)
        command.name = adopted.name
        let engine: Engine
        do {
            engine = try Engine(configuration: try command.makeConfiguration(), client: adopted)
        } catch let error as EngineError {
            printError(error.message)
            return 1
        } catch {
            printError("\(error)")
            return 1
        }
        let loaded = Instance(engine: engine)
        engine.onStarted = { _ in loaded.started.signal() }
        loaded.thread = PosixThread(name: "jackvu-engine") {
            do throws(EngineError) { try loaded.engine.run() } catch {
                loaded.failure = error.message
                loaded.started.signal()
            }
        }
        // jack_initialize returns once the client is active (or has failed).
        loaded.started.wait(timeout: 60)
        if let failure = loaded.failure {
            printError(failure)
            loaded.thread?.join()
            return 1
        }
        instance = loaded
        return 0
    }
}

@_cdecl("jack_finish")
public func jackFinish(_ argument: UnsafeMutableRawPointer?) {
    lock.withLock { _ in
        guard let loaded = instance else { return }
        loaded.engine.stop()
        loaded.thread?.join()
        instance = nil
    }
}
