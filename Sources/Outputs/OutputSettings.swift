import Vocabulary

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

/// What the live client writes on stdout and how `jackvu analyze` prints.
public enum OutputFormat: String, CaseIterable, Sendable {
    /// OSC-style text lines; `analyze`'s summaries as aligned text.
    case text
    /// One JSON object per line; `analyze`'s summaries as one JSON array.
    case json
}
