#if canImport(Glibc)
import Glibc
#endif
import Analysis
import DSP
import Outputs

/// Everything a jackvu run is told, validated: what the analysis is told (`analysis`, whose
/// settings read and write here as if they were this one's own) and what the JACK client,
/// the outputs, the alarms and the log are. The command line builds one; tests and tools may
/// build their own.
public struct Configuration: Equatable, Sendable {
    /// JACK client name (`--name`).
    public var clientName = "jackvu"
    /// JACK server name (`--server`); nil: `$JACK_DEFAULT_SERVER`, else the default server.
    public var serverName: String?
    /// Worker threads for the analysis (`--workers`); nil: `defaultWorkers`.
    public var workers: Int?
    /// Channels one worker thread takes by default (about a fifth of a core here with every
    /// meter on: BENCHMARKS.md).
    public static let channelsPerWorker = 64

    /// `--workers`, or enough for the channel count (one per 64 channels), at most the cores.
    public var resolvedWorkers: Int {
        if let workers { return workers }
        let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        return min(cores, (channels + Configuration.channelsPerWorker - 1) / Configuration.channelsPerWorker)
    }
    /// Port regexes to connect to the inputs, in order (`--connect`).
    public var connect: [String] = []
    /// Whether `connect` also applies to matching ports that appear later (`--connect-once`:
    /// no; then a pattern that matches nothing at the start is an error).
    public var followGraph = true
    /// Whether jackvu waits for a server that went away and reconnects (`--no-reconnect`:
    /// no, it exits 69).
    public var reconnect = true
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
    /// A display (terminal or browser) is on: the features they show are computed whatever
    /// `send` says.
    public var displayed = false
    /// Where the browser display listens (`--http`, parsed by `httpAddress`), nil for none.
    public var http: HTTPListenAddress?
    /// Where the metrics-only listener listens (`--metrics`), nil for none.
    public var metrics: HTTPListenAddress?
    /// The alarms watched (`--alarm`; none by default).
    public var alarms: [AlarmRule] = []
    /// The command run on each alarm raise and clear (`--on-alarm`), and the longest it may
    /// run, seconds (`--on-alarm-timeout`).
    public var onAlarm: String?
    public var onAlarmTimeout = 10.0
    /// The loudness and incident log (`--log`), and the days it keeps (`--log-retention`).
    public var log: String?
    public var logRetentionDays: Double?

    /// The alarm ports: one per programme with `--alarm` (`alarm` for the default
    /// programme, `alarm_NAME` for each of `--programme`).
    public var alarmPortNames: [String] {
        alarms.isEmpty ? [] : resolvedProgrammes.map { $0.name.isEmpty ? "alarm" : "alarm_\($0.name)" }
    }
    public var alarmPortCount: Int { alarms.isEmpty ? 0 : max(1, programmes.count) }
    /// Origins whose pages may open the browser display's WebSocket besides its own
    /// (`--http-origin`, e.g. `https://wall.example:8443`).
    public var httpOrigins: [String] = []
    /// What the HTTP listeners (`--http`, `--metrics`) let in (`--http-limits`).
    public var httpLimits = HTTPLimits()
    /// Debug aid for the real-time test: the process callback allocates (hidden option).
    public var realtimeCanary = false
    /// Test aid: the worker stops for `seconds` once, `after` seconds after it started
    /// (`JACKVU_TEST_STALL_WORKER=AFTER:SECONDS` in the environment).
    public var testStallWorker: StallHook?
    public struct StallHook: Equatable, Sendable {
        public var after: Double
        public var seconds: Double
        public init(after: Double, seconds: Double) {
            self.after = after
            self.seconds = seconds
        }
    }

    /// What the analysis is told (its fields read and write through the properties below).
    public var analysis = AnalysisSettings()
    /// The most channels (`AnalysisSettings.maxChannels`).
    public static let maxChannels = AnalysisSettings.maxChannels

    // The analysis's settings, as the command line and the components have always named them.
    public var channels: Int { get { analysis.channels } set { analysis.channels = newValue } }
    public var fftSize: Int { get { analysis.fftSize } set { analysis.fftSize = newValue } }
    public var overlap: Double { get { analysis.overlap } set { analysis.overlap = newValue } }
    public var bars: Int { get { analysis.bars } set { analysis.bars = newValue } }
    public var barsFromHz: Double { get { analysis.barsFromHz } set { analysis.barsFromHz = newValue } }
    public var barsToHz: Double { get { analysis.barsToHz } set { analysis.barsToHz = newValue } }
    public var rate: Double { get { analysis.rate } set { analysis.rate = newValue } }
    public var meterFloorDBFS: Double { get { analysis.meterFloorDBFS } set { analysis.meterFloorDBFS = newValue } }
    public var fallDBPerSecond: Double { get { analysis.fallDBPerSecond } set { analysis.fallDBPerSecond = newValue } }
    public var holdSeconds: Double { get { analysis.holdSeconds } set { analysis.holdSeconds = newValue } }
    public var layout: ChannelLayout? { get { analysis.layout } set { analysis.layout = newValue } }
    public var programmes: [Programme] { get { analysis.programmes } set { analysis.programmes = newValue } }
    public var targets: [TargetChoice] { get { analysis.targets } set { analysis.targets = newValue } }
    public var toleranceLU: Double? { get { analysis.toleranceLU } set { analysis.toleranceLU = newValue } }
    public var maxTruePeakDBTP: Double? { get { analysis.maxTruePeakDBTP } set { analysis.maxTruePeakDBTP = newValue } }
    public var followTransport: Bool { get { analysis.followTransport } set { analysis.followTransport = newValue } }
    public var resetAtZero: Bool { get { analysis.resetAtZero } set { analysis.resetAtZero = newValue } }
    public var meterSource: MeterSource { get { analysis.meterSource } set { analysis.meterSource = newValue } }
    public var vuReferenceDBFS: Double { get { analysis.vuReferenceDBFS } set { analysis.vuReferenceDBFS = newValue } }
    public var ppmType: PPMType { get { analysis.ppmType } set { analysis.ppmType = newValue } }
    public var ppmAlignmentDBFS: Double { get { analysis.ppmAlignmentDBFS } set { analysis.ppmAlignmentDBFS = newValue } }
    public var gating: Gating { get { analysis.gating } set { analysis.gating = newValue } }
    public var kHeadroom: Int { get { analysis.kHeadroom } set { analysis.kHeadroom = newValue } }
    public var pitchConfidence: Double { get { analysis.pitchConfidence } set { analysis.pitchConfidence = newValue } }

    public init() {}

    /// Samples between analyses (`AnalysisSettings.hopSize`).
    public var hopSize: Int { analysis.hopSize }

    /// Throws the first invalid setting, with a message naming the option.
    public func validate() throws(ConfigurationError) {
        func check(_ ok: Bool, _ option: String, _ message: String) throws(ConfigurationError) {
            if !ok { throw ConfigurationError(option: option, message: message) }
        }
        try check(!clientName.isEmpty && clientName.utf8.count <= 63 && !clientName.contains(":"), "--name",
                  "must be 1 to 63 bytes without ':'")
        try check((1...Configuration.maxChannels).contains(channels), "--channels",
                  "must be from 1 to \(Configuration.maxChannels), got \(channels)")
        if let workers {
            try check((1...64).contains(workers), "--workers", "must be from 1 to 64, got \(workers)")
        }
        do { try FFTSize.validate(fftSize) } catch {
            throw ConfigurationError(option: "--fft-size", message: error.description)
        }
        try check(overlap >= 0 && overlap <= 0.95, "--overlap",
                  "must be from 0 to 0.95 (or 0% to 95%), got \(overlap)")
        try check((1...1024).contains(bars), "--bars", "must be from 1 to 1024, got \(bars)")
        try check(barsFromHz > 0 && barsFromHz < barsToHz, "--bars-from",
                  "must be above 0 Hz and below --bars-to (\(barsToHz) Hz)")
        let rates = ControlCommand.rateRange
        try check(rates.contains(rate), "--rate",
                  "must be from \(fixed(rates.lowerBound, 2)) to \(fixed(rates.upperBound, 0)) updates per second, got \(rate)")
        if let problem = OSCAddress.problem(withPrefix: prefix) {
            throw ConfigurationError(option: "--prefix", message: problem)
        }
        try check(meterFloorDBFS >= -200 && meterFloorDBFS <= -1, "--meter-floor",
                  "must be from -200 to -1 dBFS, got \(meterFloorDBFS)")
        try check(fallDBPerSecond > 0 && fallDBPerSecond.isFinite, "--fall", "must be above 0 dB/s")
        try check(holdSeconds >= 0 && holdSeconds <= 60, "--hold", "must be from 0 to 60 s")
        try check(onAlarmTimeout > 0 && onAlarmTimeout <= 3600, "--on-alarm-timeout", "must be above 0 and at most 3600 s, got \(onAlarmTimeout)")
        try check(onAlarm == nil || !alarms.isEmpty, "--on-alarm", "needs --alarm (which alarms to watch; --alarm all for every one)")
        if let days = logRetentionDays {
            try check(days > 0 && days <= 36500, "--log-retention", "must be above 0 and at most 36500 days, got \(days)")
            try check(log != nil, "--log-retention", "needs --log")
        }
        if let log { try check(!log.isEmpty, "--log", "needs a file path") }
        if let layout, layout.channelCount != channels {
            throw ConfigurationError(
                option: "--layout", message: "\(layout.rawValue) needs \(layout.channelCount) channels, not \(channels)")
        }
        try check(vuReferenceDBFS >= -60 && vuReferenceDBFS <= 0, "--vu-reference", "must be from -60 to 0 dBFS")
        try check(ppmAlignmentDBFS >= -60 && ppmAlignmentDBFS <= 0, "--ppm-alignment", "must be from -60 to 0 dBFS")
        try check(KMeter.headrooms.contains(kHeadroom), "--k-scale", "must be 20, 14 or 12")
        try check(pitchConfidence >= 0 && pitchConfidence <= 1, "--pitch-confidence", "must be from 0 to 1")
        if send.isEmpty { throw ConfigurationError(option: "--send", message: "must name at least one message kind") }
        let lifetimes = Subscriptions.lifetimeRange
        try check(lifetimes.contains(subscribeTimeout), "--subscribe-timeout",
                  "must be from \(Int(lifetimes.lowerBound)) to \(Int(lifetimes.upperBound)) s, got \(subscribeTimeout)")
        for origin in httpOrigins {
            let parts = origin.split(separator: "://", maxSplits: 1).map(String.init)
            try check(parts.count == 2 && ["http", "https"].contains(parts[0]) && !parts[1].isEmpty && !parts[1].contains("/"),
                      "--http-origin", "'\(origin)' is not an origin (http://HOST[:PORT] or https://HOST[:PORT], no path)")
        }
        for pattern in connect {
            try check(!pattern.isEmpty, "--connect", "must not be empty")
        }
        try validateProgrammes()
        if resetAtZero && !followTransport {
            throw ConfigurationError(option: "--reset-at-zero", message: "applies with --follow-transport")
        }
    }

    /// `--programme`, `--target`, `--tolerance` and `--max-true-peak` against each other and
    /// the inputs.
    private func validateProgrammes() throws(ConfigurationError) {
        if !programmes.isEmpty && layout != nil {
            throw ConfigurationError(option: "--layout", message: "weights the default programme; with --programme give each programme its layout (NAME=CHANNELS:LAYOUT)")
        }
        if programmes.count > Programme.maxCount {
            throw ConfigurationError(option: "--programme", message: "at most \(Programme.maxCount) programmes, got \(programmes.count)")
        }
        var names = Set<String>()
        for p in programmes {
            if !names.insert(p.name).inserted {
                throw ConfigurationError(option: "--programme", message: "'\(p.name)' is named twice")
            }
            if let beyond = p.channels.first(where: { $0 >= channels }) {
                throw ConfigurationError(
                    option: "--programme", message: "'\(p.name)': channel \(beyond + 1) does not exist (there are \(channels))")
            }
        }
        for t in targets {
            if let name = t.programme, !names.contains(name) {
                throw ConfigurationError(
                    option: "--target", message: "'\(name)' is no programme (" + (names.isEmpty ? "none is given with --programme" : names.sorted().joined(separator: ", ")) + ")")
            }
        }
        if targets.isEmpty && (toleranceLU != nil || maxTruePeakDBTP != nil) {
            throw ConfigurationError(option: toleranceLU != nil ? "--tolerance" : "--max-true-peak", message: "applies to a --target; give one")
        }
        if let toleranceLU, !(toleranceLU > 0 && toleranceLU <= 10) {
            throw ConfigurationError(option: "--tolerance", message: "must be above 0 and at most 10 LU, got \(toleranceLU)")
        }
        if let maxTruePeakDBTP, !(maxTruePeakDBTP >= -20 && maxTruePeakDBTP <= 3) {
            throw ConfigurationError(option: "--max-true-peak", message: "must be from -20 to 3 dBTP, got \(maxTruePeakDBTP)")
        }
    }

    /// An `--osc` destination (`udp://HOST:PORT`, `osc.udp://HOST:PORT/`); not resolved yet.
    public static func oscEndpoint(_ url: String) throws(ConfigurationError) -> OSCEndpoint {
        do { return try OSCEndpoint(url: url) } catch { throw ConfigurationError(option: "--osc", message: error.description) }
    }

    /// `--listen`: a URL, or a bare port meaning loopback (`7000` → `udp://127.0.0.1:7000`).
    public static func listenEndpoint(_ listen: String) throws(ConfigurationError) -> OSCEndpoint {
        let url = UInt16(listen).map { "udp://127.0.0.1:\($0)" } ?? listen
        do { return try OSCEndpoint(url: url) } catch { throw ConfigurationError(option: "--listen", message: error.description) }
    }

    /// `--http`: `PORT` (loopback) or `ADDRESS:PORT`.
    public static func httpAddress(_ text: String, option: String = "--http") throws(ConfigurationError) -> HTTPListenAddress {
        do { return try HTTPListenAddress(parsing: text) } catch { throw ConfigurationError(option: option, message: error.description) }
    }

    /// The meter ports' and the displays' scale (`AnalysisSettings.meterScale`).
    public var meterScale: DisplayScale { analysis.meterScale }

    /// The pretty name of meter port `number` (1-based) in JACK's metadata: the quantity and
    /// the scale its 0 … 1 value spans, e.g. "Meter 1 (VU, 0..1 = -20..3 VU)".
    public func meterPortPrettyName(_ number: Int) -> String {
        let scale = meterScale
        func text(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
        return "Meter \(number) (\(scale.name), 0..1 = \(text(scale.range.lowerBound))..\(text(scale.range.upperBound)) \(scale.unit))"
    }

    /// The programmes metered, each with its target (`AnalysisSettings.resolvedProgrammes`).
    public var resolvedProgrammes: [Programme] { analysis.resolvedProgrammes }

    /// The target of programme `name` (`AnalysisSettings.target(for:)`).
    public func target(for name: String) -> LoudnessTarget? { analysis.target(for: name) }

    /// The loudspeaker pairs whose correlation is read (`AnalysisSettings.correlationPairs`).
    public var correlationPairs: [(left: Int, right: Int, subject: PairSubject)] { analysis.correlationPairs }

    /// Loudness weights for the configured channels.
    public var loudnessWeights: [Double] { analysis.loudnessWeights }

    /// The DSP settings at `sampleRate`.
    public func spectrum(sampleRate: Double) -> SpectrumConfiguration { analysis.spectrum(sampleRate: sampleRate) }
}

/// What the live client writes on stdout and how `jackvu analyze` prints.
public enum OutputFormat: String, CaseIterable, Sendable {
    /// OSC-style text lines; `analyze`'s summaries as aligned text.
    case text
    /// One JSON object per line; `analyze`'s summaries as one JSON array.
    case json
}

extension Analyzer {
    /// An analyzer of what `configuration` tells the analysis (`Configuration.analysis`).
    public convenience init(configuration: Configuration, sampleRate: Int, features: Features = .all) throws(DSPError) {
        try self.init(settings: configuration.analysis, sampleRate: sampleRate, features: features)
    }
}

extension AnalysisFeatures {
    /// What the selected message kinds (`Readings.table`), the displays, the meter ports
    /// (`--meter`), MIDI notes, the alarms and the log need.
    public static func needed(for c: Configuration, midiNotes: Bool = false) -> AnalysisFeatures {
        var f = AnalysisFeatures.needed(kinds: c.send, displayed: c.displayed)
        if midiNotes { f.formUnion([.yin, .everyHop]) }
        // The alarms judge levels, clips, true peaks, loudness and correlation; the log keeps
        // loudness blocks and peaks: whatever --send says.
        if !c.alarms.isEmpty { f.formUnion([.loudness, .truePeak, .dpeak, .correlation]) }
        if c.log != nil { f.formUnion([.loudness, .truePeak]) }
        // The meter on the ports: what its reading needs.
        f.formUnion(c.meterSource.entry.reading.features)
        return f.withImplied
    }
}
