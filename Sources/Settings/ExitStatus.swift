/// jackvu's exit codes (the README and `--help` list them); values follow BSD sysexits.h.
public enum ExitStatus: Int32, Sendable {
    /// Stopped by SIGINT or SIGTERM, after closing the client cleanly.
    case success = 0
    /// A bad option or option value (EX_USAGE).
    case usage = 64
    /// A `--connect` pattern matched no port, or an input file could not be read
    /// (EX_NOINPUT).
    case noInput = 66
    /// An `--osc` host name does not resolve (EX_NOHOST).
    case noHost = 68
    /// No JACK server, or the server shut down while running (EX_UNAVAILABLE).
    case unavailable = 69
    /// An internal failure: FFTW, port registration, activation (EX_SOFTWARE).
    case software = 70
    /// A socket could not be made or bound (`--listen` on an address in use or not of this
    /// machine) (EX_OSERR).
    case osError = 71
    /// The `--log` file cannot be a jackvu log: a symbolic link, not a regular file, another
    /// application's database (EX_CANTCREAT).
    case cannotCreate = 73
    /// stdout was closed or could not be written (EX_IOERR).
    case ioError = 74
    /// The client name is already taken on the server; the `--log` file is in use by another
    /// jackvu (EX_TEMPFAIL).
    case nameInUse = 75
}

/// Why a run ended early: an exit status and one line for stderr.
public struct EngineError: Error, Sendable, CustomStringConvertible {
    public let status: ExitStatus
    public let message: String

    public init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { message }
}
