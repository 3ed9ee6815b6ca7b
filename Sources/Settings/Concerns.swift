import Outputs
import Vocabulary

// A run's settings by concern. `Configuration` holds one of each (and the analysis's own,
// `AnalysisSettings`, in the Analysis module) and reads and writes their fields under the
// options' names; each component of a host is given only its part: the connection keeper
// the client's, the output factory and loop the outputs', the alarms and the log theirs.

/// The JACK client: who it is, on which server, what it connects to its inputs and what it
/// does when the server goes (`--name`, `--server`, `--connect`, `--connect-once`,
/// `--no-reconnect`).
public struct ClientSettings: Equatable, Sendable {
    /// JACK client name (`--name`).
    public var name = "jackvu"
    /// JACK server name (`--server`); nil: `$JACK_DEFAULT_SERVER`, else the default server.
    public var server: String?
    /// Port regexes to connect to the inputs, in order (`--connect`).
    public var connect: [String] = []
    /// Whether `connect` also applies to matching ports that appear later (`--connect-once`:
    /// no; then a pattern that matches nothing at the start is an error).
    public var followGraph = true
    /// Whether jackvu waits for a server that went away and reconnects (`--no-reconnect`:
    /// no, it exits 69).
    public var reconnect = true
    /// Debug aid for the real-time test: the process callback allocates (hidden option).
    public var realtimeCanary = false
    public init() {}
}

/// The outputs of the readings: the stream on stdout, OSC over UDP, the `osc` and `notes`
/// MIDI ports, the control input (`--prefix`, `--send`, `--format`, `--osc`, `--no-osc-port`,
/// `--midi-notes`, `--listen`, `--control-from`, `--subscribe-timeout`).
public struct OutputSettings: Equatable, Sendable {
    /// OSC address prefix (`--prefix`).
    public var prefix = "/jackvu"
    /// The message kinds every output sends (`--send`); a meter no output needs is not
    /// computed.
    public var send = MessageKinds.all
    /// What the live client writes on stdout (`--format`): OSC-style text or JSON lines.
    public var format = OutputFormat.text
    /// OSC destinations (`--osc`), parsed (`Configuration.oscEndpoint`); resolved when the run
    /// starts.
    public var oscDestinations: [OSCEndpoint] = []
    /// The `osc` MIDI port (on unless `--no-osc-port`).
    public var oscPort = true
    /// The `notes` MIDI port (`--midi-notes`).
    public var midiNotes = false
    /// Where the OSC control input listens (`--listen`, parsed by `listenEndpoint`), nil for
    /// none.
    public var listen: OSCEndpoint?
    /// Sources the control input reads (`--control-from`); empty: loopback only.
    public var controlFrom: [AddressRange] = []
    /// How long a `subscribe` lasts unless renewed, seconds (`--subscribe-timeout`).
    public var subscribeTimeout = Subscriptions.defaultLifetime
    /// Whether stdout carries the text or JSON stream (false when the terminal display draws
    /// there).
    public var stdoutStream = true
    public init() {}
}

/// The displays and the HTTP listeners (`--tui`, `--http`, `--metrics`, `--http-origin`,
/// `--http-limits`).
public struct DisplaySettings: Equatable, Sendable {
    /// A display (terminal or browser) is on: the features they show are computed whatever
    /// `--send` says.
    public var displayed = false
    /// Where the browser display listens (`--http`, parsed by `httpAddress`), nil for none.
    public var http: HTTPListenAddress?
    /// Where the metrics-only listener listens (`--metrics`), nil for none.
    public var metrics: HTTPListenAddress?
    /// Origins whose pages may open the browser display's WebSocket besides its own
    /// (`--http-origin`, e.g. `https://wall.example:8443`).
    public var origins: [String] = []
    /// What the HTTP listeners let in (`--http-limits`).
    public var limits = HTTPLimits()
    public init() {}
}

/// The alarms (`--alarm`, `--on-alarm`, `--on-alarm-timeout`).
public struct AlarmingSettings: Equatable, Sendable {
    /// The alarms watched (none by default).
    public var rules: [AlarmRule] = []
    /// The command run on each alarm raise and clear, and the longest it may run, seconds.
    public var command: String?
    public var commandTimeout = 10.0
    public init() {}
}

/// The loudness and incident log (`--log`, `--log-retention`).
public struct LogSettings: Equatable, Sendable {
    /// The log's file; nil: none.
    public var path: String?
    /// The days it keeps; nil: everything.
    public var retentionDays: Double?
    public init() {}
}

/// What the live client writes on stdout and how `jackvu analyze` prints.
public enum OutputFormat: String, CaseIterable, Sendable {
    /// OSC-style text lines; `analyze`'s summaries as aligned text.
    case text
    /// One JSON object per line; `analyze`'s summaries as one JSON array.
    case json
}
