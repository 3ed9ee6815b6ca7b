import Settings

/// The ports a run registers, worked out once from the configuration: an input and a meter
/// per channel, an alarm port per programme with `--alarm`, the `osc` and `notes` MIDI ports;
/// with the pretty-names JACK's metadata gives them. The JACK connection registers them (at
/// the start and after every reconnect), the capture buffers are sized by them.
struct PortPlan: Sendable {
    /// Inputs, and meter ports (`meter_N`), one per channel.
    let channels: Int
    /// Each meter port's pretty-name: the quantity and the scale its 0 … 1 value spans.
    let meterPrettyNames: [String]
    /// The alarm ports (`alarm`, `alarm_NAME`) and their pretty-names.
    let alarms: [(name: String, prettyName: String)]
    /// The `osc` port's pretty-name (nil: no such port).
    let oscPrettyName: String?
    /// Whether the `notes` port exists.
    let notes: Bool

    init(_ c: Configuration) {
        channels = c.channels
        meterPrettyNames = (1...max(1, c.channels)).map { c.meterPortPrettyName($0) }
        alarms = zip(c.alarmPortNames, c.resolvedProgrammes).map { name, programme in
            (name, "Alarm \(programme.name.isEmpty ? "" : programme.name + " ")(0..1 = clear..active)")
        }
        oscPrettyName = c.oscPort ? "OSC readings (\(c.prefix))" : nil
        notes = c.midiNotes
    }

    /// Every port: two per channel, the alarm ports, the MIDI ports.
    var count: Int { 2 * channels + alarms.count + (oscPrettyName != nil ? 1 : 0) + (notes ? 1 : 0) }
}
