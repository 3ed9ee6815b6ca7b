#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Analysis
import Settings
import JackVU
import JackVUOptions
import Outputs
import SessionManagement

/// jackvu in a session manager's session (NSM API; `NSM_URL` is set): it announces itself,
/// waits for the session's open, takes the client ID as its JACK client name and its options
/// from the session (`PATH/options`, written on the first open and on every save), and quits
/// without saving on SIGTERM, like every NSM client.
struct LiveSession {
    let client: NSMClient
    let open: NSMClient.Open

    /// Joins the session at `url`; returns the session and the command to run: the one saved
    /// in the session, else `given` (whose arguments are then saved).
    static func join(url: String, given: JackVUCommand, arguments: [String]) throws(EngineError) -> (LiveSession, JackVUCommand) {
        let client: NSMClient
        let open: NSMClient.Open
        do {
            // The receiving thread blocks the signals the engine waits for (it inherits the
            // mask); the main thread keeps them until the engine blocks them too.
            var signals = sigset_t(), previous = sigset_t()
            sigemptyset(&signals)
            for s in [SIGINT, SIGTERM, SIGUSR1, SIGHUP] { sigaddset(&signals, s) }
            pthread_sigmask(SIG_BLOCK, &signals, &previous)
            defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
            client = try NSMClient(url: url)
            let welcome = try client.announce(
                application: "jackvu", capabilities: "", executable: CommandLine.arguments.first.map(baseName) ?? "jackvu")
            printError("in a session of \(welcome.managerName.isEmpty ? "a session manager" : welcome.managerName) (NSM_URL \(url))")
            open = try client.waitForOpen()
        } catch {
            throw EngineError(.unavailable, error.message)
        }
        var command = given
        var saved: [String] = arguments
        do {
            if let restored = try SessionOptions.load(from: open.path) {
                saved = restored
                do { command = try JackVUCommand.parse(restored) } catch {
                    let message = "the options saved in \(SessionOptions.file(in: open.path)) are not valid: \(JackVUCommand.message(for: error))"
                    client.openFailed(.badProject, message)
                    throw EngineError(.usage, message)
                }
            } else {
                try SessionOptions.save(arguments, program: "jackvu", to: open.path)
            }
        } catch let error as EngineError {
            throw error
        } catch let error as SessionError {
            client.openFailed(.createFailed, error.message)
            throw EngineError(.ioError, error.message)
        } catch {
            throw EngineError(.software, "\(error)")
        }
        command.name = open.clientID
        // Under a session manager stdout goes to its log: no text stream unless asked for.
        if !command.text && command.format == nil && !command.tui { command.quiet = true }
        let path = open.path
        let arguments = saved
        client.onSave {
            do throws(SessionError) {
                try SessionOptions.save(arguments, program: "jackvu", to: path)
                return .success("saved")
            } catch {
                printError(error.message)
                return .failure(error)
            }
        }
        return (LiveSession(client: client, open: open), command)
    }

    /// Tells the session manager that jackvu runs.
    func started(as name: String) { client.opened("metering as \(name)") }

    /// Tells the session manager that jackvu could not start.
    func failed(_ error: EngineError) { client.openFailed(.launchFailed, error.message) }
}

private func baseName(_ path: String) -> String {
    path.split(separator: "/").last.map(String.init) ?? path
}
