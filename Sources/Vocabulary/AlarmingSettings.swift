/// The alarms (`--alarm`, `--on-alarm`, `--on-alarm-timeout`).
public struct AlarmingSettings: Equatable, Sendable {
    /// The alarms watched (none by default).
    public var rules: [AlarmRule] = []
    /// The command run on each alarm raise and clear, and the longest it may run, seconds.
    public var command: String?
    public var commandTimeout = 10.0
    public init() {}
}
