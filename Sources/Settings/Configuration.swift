#if canImport(Glibc)
import Glibc
#endif
import Analysis
import DSP
import Outputs

/// Everything a jackvu run is told, validated, by concern: the analysis (`analysis`,
/// `AnalysisSettings`), the JACK client (`client`), the outputs (`output`), the displays
/// (`display`), the alarms (`alarming`) and the log (`logging`) — each component of a host is
/// given only its part (the worker the analysis's, the connection keeper the client's and the
/// ports', the output factory and loop the outputs', the alarms and the log theirs). Their
/// fields read and write here under the options' names too. The command line builds one;
/// tests and tools may build their own.
public struct Configuration: Equatable, Sendable {
    /// Each concern's part; each component of a host is given only its own.
    public var client = ClientSettings()
    public var output = OutputSettings()
    public var display = DisplaySettings()
    public var alarming = AlarmingSettings()
    public var logging = LogSettings()

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

    // The concerns' settings, as the command line and the tests name them.
    public var clientName: String { get { client.name } set { client.name = newValue } }
    public var serverName: String? { get { client.server } set { client.server = newValue } }
    public var connect: [String] { get { client.connect } set { client.connect = newValue } }
    public var followGraph: Bool { get { client.followGraph } set { client.followGraph = newValue } }
    public var reconnect: Bool { get { client.reconnect } set { client.reconnect = newValue } }
    public var realtimeCanary: Bool { get { client.realtimeCanary } set { client.realtimeCanary = newValue } }
    public var prefix: String { get { output.prefix } set { output.prefix = newValue } }
    public var send: MessageKinds { get { output.send } set { output.send = newValue } }
    public var format: OutputFormat { get { output.format } set { output.format = newValue } }
    public var oscDestinations: [OSCEndpoint] { get { output.oscDestinations } set { output.oscDestinations = newValue } }
    public var oscPort: Bool { get { output.oscPort } set { output.oscPort = newValue } }
    public var midiNotes: Bool { get { output.midiNotes } set { output.midiNotes = newValue } }
    public var listen: OSCEndpoint? { get { output.listen } set { output.listen = newValue } }
    public var controlFrom: [AddressRange] { get { output.controlFrom } set { output.controlFrom = newValue } }
    public var subscribeTimeout: Double { get { output.subscribeTimeout } set { output.subscribeTimeout = newValue } }
    public var stdoutStream: Bool { get { output.stdoutStream } set { output.stdoutStream = newValue } }
    public var displayed: Bool { get { display.displayed } set { display.displayed = newValue } }
    public var http: HTTPListenAddress? { get { display.http } set { display.http = newValue } }
    public var metrics: HTTPListenAddress? { get { display.metrics } set { display.metrics = newValue } }
    public var httpOrigins: [String] { get { display.origins } set { display.origins = newValue } }
    public var httpLimits: HTTPLimits { get { display.limits } set { display.limits = newValue } }
    public var alarms: [AlarmRule] { get { alarming.rules } set { alarming.rules = newValue } }
    public var onAlarm: String? { get { alarming.command } set { alarming.command = newValue } }
    public var onAlarmTimeout: Double { get { alarming.commandTimeout } set { alarming.commandTimeout = newValue } }
    public var log: String? { get { logging.path } set { logging.path = newValue } }
    public var logRetentionDays: Double? { get { logging.retentionDays } set { logging.retentionDays = newValue } }

    /// The alarm ports: one per programme with `--alarm` (`alarm` for the default
    /// programme, `alarm_NAME` for each of `--programme`).
    public var alarmPortNames: [String] {
        alarms.isEmpty ? [] : resolvedProgrammes.map { $0.name.isEmpty ? "alarm" : "alarm_\($0.name)" }
    }
    public var alarmPortCount: Int { alarms.isEmpty ? 0 : max(1, programmes.count) }
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

extension Analyzer {
    /// An analyzer of what `configuration` tells the analysis (`Configuration.analysis`).
    public convenience init(configuration: Configuration, sampleRate: Int, features: Features = .all) throws(DSPError) {
        try self.init(settings: configuration.analysis, sampleRate: sampleRate, features: features)
    }
}

extension AnalysisFeatures {
    /// What the selected message kinds (`Readings.table`), the displays, the metrics, the
    /// meter ports (`--meter`), MIDI notes, the alarms and the log need.
    public static func needed(for c: Configuration, midiNotes: Bool = false) -> AnalysisFeatures {
        var f = AnalysisFeatures.needed(kinds: c.send, displayed: c.displayed)
        if midiNotes { f.formUnion([.yin, .everyHop]) }
        // The alarms judge levels, clips, true peaks, loudness and correlation; the log keeps
        // loudness blocks and peaks: whatever --send says.
        if !c.alarms.isEmpty { f.formUnion([.loudness, .truePeak, .dpeak, .correlation]) }
        if c.log != nil { f.formUnion([.loudness, .truePeak]) }
        // The Prometheus metrics (`--metrics`, and `/metrics` beside `--http`): what their
        // families' readings need (`MetricFamily`; those on request only when --send names
        // them, as their families are), whatever --send says — a scrape of an uncomputed
        // reading would read as none.
        if c.metrics != nil || c.http != nil {
            for r in Readings.table where r.fields.contains(where: { $0.metric.map { !$0.whenSent } ?? false }) { f.formUnion(r.features) }
        }
        // The meter on the ports: what its reading needs.
        f.formUnion(c.meterSource.entry.reading.features)
        return f.withImplied
    }
}
