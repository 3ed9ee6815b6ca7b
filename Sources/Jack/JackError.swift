/// Errors of the Jack module. Every case carries what a user needs to act on it.
public enum JackError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No JACK server answered (server name, or nil for the default one).
    case serverUnavailable(server: String?)
    /// The server's process runs but did not answer a client's open within `seconds`.
    case serverNotAnswering(server: String?, seconds: Double, request: String = "a client's open")
    /// The client name is taken and jackvu asked for exactly that name.
    case nameInUse(String)
    /// `jack_client_open` failed for another reason (JACK status bits).
    case openFailed(status: UInt32)
    /// A port could not be registered.
    case portRegistrationFailed(String)
    /// `jack_activate` failed.
    case activationFailed
    /// A port regex does not compile.
    case invalidPattern(String)
    /// Connecting two ports failed (JACK's error code).
    case connectionFailed(source: String, destination: String, code: Int32)
    /// Setting a metadata property failed.
    case metadataFailed(port: String, key: String)

    public var description: String {
        switch self {
        case .serverUnavailable(let server):
            if let server { return "cannot connect to JACK server '\(server)': is it running?" }
            return "cannot connect to the default JACK server: is it running? (start one, e.g. jackd -d dummy)"
        case .serverNotAnswering(let server, let seconds, let request):
            return "the JACK server \(server.map { "'\($0)'" } ?? "(the default)") does not answer: \(request) took more than "
                + "\(Int(seconds)) s (is jackd stopped or hung? jack_lsp will hang too)"
        case .nameInUse(let name):
            return "a JACK client named '\(name)' is already running (choose another with --name)"
        case .openFailed(let status):
            return "cannot open a JACK client (JACK status 0x\(String(status, radix: 16)))"
        case .portRegistrationFailed(let name):
            return "cannot register JACK port '\(name)'"
        case .activationFailed:
            return "cannot activate the JACK client"
        case .invalidPattern(let pattern):
            return "'\(pattern)' is not a valid port regular expression"
        case .connectionFailed(let source, let destination, let code):
            return "cannot connect '\(source)' to '\(destination)' (JACK error \(code))"
        case .metadataFailed(let port, let key):
            return "cannot set metadata \(key) on '\(port)'"
        }
    }
}
