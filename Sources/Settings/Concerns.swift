// A run's settings by concern, each beside what uses it: the analysis's (`AnalysisSettings`)
// in Analysis, the outputs' and the displays' (`OutputSettings`, `DisplaySettings`) in
// Outputs, the alarms' (`AlarmingSettings`) in the vocabulary with the alarms, and here the JACK
// client's and the log's. `Configuration` holds one of each and reads and writes their fields
// under the options' names; each component of a host is given only its part: the connection
// keeper the client's, the output factory and loop the outputs', the alarms and the log theirs.

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

/// The loudness and incident log (`--log`, `--log-retention`).
public struct LogSettings: Equatable, Sendable {
    /// The log's file; nil: none.
    public var path: String?
    /// The days it keeps; nil: everything.
    public var retentionDays: Double?
    public init() {}
}
