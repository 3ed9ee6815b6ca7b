#if canImport(Glibc)
import Glibc
#endif
import DSP
import Outputs

/// Everything a jackvu run is told, validated. The command line builds one; tests and tools
/// may build their own.
public struct Configuration: Equatable, Sendable {
    /// JACK client name (`--name`).
    public var clientName = "jackvu"
    /// JACK server name (`--server`); nil: `$JACK_DEFAULT_SERVER`, else the default server.
    public var serverName: String?
    /// Number of audio inputs and meter outputs (`--channels`).
    public var channels = 2
    /// The most inputs jackvu takes (the server's port limit may be lower: jackd -p).
    /// The most channels (`--channels`). What bounds a run is rather the JACK server's port
    /// limit (jackvu needs 2 × N + 1 ports: `jackd -p`/`--port-max`), the CPU (every meter
    /// costs about 2.7 ms per second per channel at 48 kHz: 512 channels held on two cores,
    /// 1,024 did not; BENCHMARKS.md) and memory (the capture ring keeps a second per channel,
    /// 4 bytes a frame: 192 KB a channel at 48 kHz).
    public static let maxChannels = 1024
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
    /// FFT size in samples (`--fft-size`).
    public var fftSize = FFTSize.default
    /// Fraction of each FFT frame shared with the next (`--overlap`), 0 ..< 1.
    public var overlap = 0.75
    /// Number of spectrum bars (`--bars`).
    public var bars = 48
    /// Lower edge of the first bar, in Hz (`--bars-from`).
    public var barsFromHz = 60.0
    /// Upper edge of the last bar, in Hz (`--bars-to`).
    public var barsToHz = 18000.0
    /// Text updates per second at most (`--rate`).
    public var rate = 20.0
    /// OSC address prefix (`--prefix`).
    public var prefix = "/jackvu"
    /// Level shown as 0 on the meter ports and in `level`/`hold`, in dBFS (`--meter-floor`).
    public var meterFloorDBFS = -60.0
    /// Fall rate of the display values, in dB per second (`--fall`).
    public var fallDBPerSecond = 20.0
    /// How long `hold` keeps a new peak before falling, in seconds (`--hold`).
    public var holdSeconds = 1.5
    /// Loudness channel layout (`--layout`); nil: from the channel count (1 mono, 2 stereo,
    /// 5 → 5.0, 6 → 5.1; any other count weights every channel 1).
    public var layout: ChannelLayout?
    /// Loudness programmes (`--programme`); empty: one programme over every channel, weighted
    /// by `layout` (`resolvedProgrammes`).
    public var programmes: [Programme] = []
    /// `--target`s, in the order given (a programme's own beats the one for all).
    public var targets: [TargetChoice] = []
    /// `--tolerance` (LU) and `--max-true-peak` (dBTP): replace the chosen profile's figures
    /// (a custom target's default: 1 LU and −1 dBTP).
    public var toleranceLU: Double?
    public var maxTruePeakDBTP: Double?
    /// Integrate loudness only while the JACK transport rolls (`--follow-transport`): the
    /// process callback reads the transport every period and the worker leaves out exactly
    /// the periods in which it stood.
    public var followTransport = false
    /// With `followTransport`: reset every programme when the transport starts rolling at
    /// frame 0 (`--reset-at-zero`).
    public var resetAtZero = false
    /// What `meter_N` carries (`--meter`).
    public var meterSource = MeterSource.rms
    /// The sine level that reads 0 VU, dBFS (`--vu-reference`).
    public var vuReferenceDBFS = -18.0
    /// PPM type (`--ppm`) and the alignment level it reads as its reference mark
    /// (`--ppm-alignment`, dBFS).
    public var ppmType = PPMType.ebu
    public var ppmAlignmentDBFS = -18.0
    /// How integrated loudness is gated (`--gating`).
    public var gating = Gating.bs1770_4
    /// K-System scale (`--k-scale`): 20, 14 or 12.
    public var kHeadroom = 20
    /// The message kinds every output sends (`--send`); a meter no output needs is not
    /// computed.
    public var send = MessageKinds.all
    /// Below this YIN confidence (0 … 1) `pitch` names no note (`--pitch-confidence`).
    public var pitchConfidence = 0.8
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

    public init() {}

    /// Samples between analyses for a sample rate-independent FFT size and overlap.
    public var hopSize: Int { max(1, Int((Double(fftSize) * (1 - overlap)).rounded())) }

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

    /// The scale the meter ports' 0 … 1 spans and the displays draw the meter bar on
    /// (`--meter`), with its colour zones (`MeterScales`).
    public var meterScale: DisplayScale {
        MeterScales.scale(meterSource.rawValue, MeterScales.Parameters(floorDBFS: meterFloorDBFS, ppmType: ppmType, kHeadroom: kHeadroom))!
    }

    /// The pretty name of meter port `number` (1-based) in JACK's metadata: the quantity and
    /// the scale its 0 … 1 value spans, e.g. "Meter 1 (VU, 0..1 = -20..3 VU)".
    public func meterPortPrettyName(_ number: Int) -> String {
        let scale = meterScale
        func text(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
        return "Meter \(number) (\(scale.name), 0..1 = \(text(scale.range.lowerBound))..\(text(scale.range.upperBound)) \(scale.unit))"
    }

    /// The programmes metered, each with its target: `programmes`, or without them the
    /// default programme (every channel, `layout`, no loudspeaker pairs of its own: its
    /// correlations are the channel pairs').
    public var resolvedProgrammes: [Programme] {
        var list = programmes
        if list.isEmpty {
            var all = Programme(name: "", channels: Array(0..<channels), layout: layout ?? ChannelLayout.forChannelCount(channels))
            all.pairs = []
            list = [all]
        }
        for i in list.indices { list[i].target = target(for: list[i].name) }
        return list
    }

    /// The target of programme `name` (`--target NAME=…`, else `--target …` for all), with
    /// `--tolerance` and `--max-true-peak` applied; nil without one.
    public func target(for name: String) -> LoudnessTarget? {
        guard let choice = targets.last(where: { $0.programme == name && !name.isEmpty }) ?? targets.last(where: { $0.programme == nil })
        else { return nil }
        var t = choice.profile.flatMap(LoudnessTarget.profile)
            ?? LoudnessTarget(profile: "custom", targetLUFS: choice.customLUFS ?? -23, toleranceLU: 1, maxTruePeakDBTP: -1)
        if let toleranceLU { t.toleranceLU = toleranceLU }
        if let maxTruePeakDBTP { t.maxTruePeakDBTP = maxTruePeakDBTP }
        return t
    }

    /// The loudspeaker pairs whose phase correlation is read, as input indices, and the
    /// programme each belongs to (nil: the channel pairs (1, 2), (3, 4), … of the default
    /// programme, `PREFIX/pair/P/…`).
    public var correlationPairs: [(left: Int, right: Int, subject: PairSubject)] {
        var out: [(left: Int, right: Int, subject: PairSubject)] = []
        if programmes.isEmpty {
            for p in 0..<(channels / 2) {
                out.append((2 * p, 2 * p + 1, PairSubject(programme: nil, label: String(p + 1), left: 2 * p, right: 2 * p + 1)))
            }
        }
        for (index, p) in programmes.enumerated() {
            for pair in p.pairs {
                let left = p.channels[pair.left], right = p.channels[pair.right]
                out.append((left, right, PairSubject(programme: index, label: pair.label, left: left, right: right)))
            }
        }
        return out
    }

    /// Loudness weights for the configured channels.
    public var loudnessWeights: [Double] {
        (layout ?? ChannelLayout.forChannelCount(channels))?.weights ?? Array(repeating: 1, count: channels)
    }

    /// The DSP settings at `sampleRate`.
    public func spectrum(sampleRate: Double) -> SpectrumConfiguration {
        SpectrumConfiguration(
            sampleRate: sampleRate, fftSize: fftSize, barCount: bars,
            minFrequency: barsFromHz, maxFrequency: barsToHz)
    }
}

/// What the live client writes on stdout and how `jackvu analyze` prints.
public enum OutputFormat: String, CaseIterable, Sendable {
    /// OSC-style text lines; `analyze`'s summaries as aligned text.
    case text
    /// One JSON object per line; `analyze`'s summaries as one JSON array.
    case json
}

/// A setting that is out of range; `option` names the command-line option.
public struct ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let option: String
    public let message: String

    public init(option: String, message: String) {
        self.option = option
        self.message = message
    }

    public var description: String { "\(option) \(message)" }
}

/// What the meter ports carry: one of the meters, mapped linearly from its scale to 0 … 1.
public enum MeterSource: String, CaseIterable, Sendable {
    /// RMS display level on the `--meter-floor` … 0 dBFS scale (with `--fall`).
    case rms
    /// Digital peak with hold, `--meter-floor` … 0 dBFS.
    case peak
    /// True peak, `--meter-floor` … 0 dBTP.
    case truepeak
    /// VU, −20 … +3 VU.
    case vu
    /// PPM on the `--ppm` type's scale (e.g. −12 … +12 dB for EBU, marks 1 … 7 for BBC).
    case ppm
    /// K-System, −40 … +K dB on the `--k-scale` scale.
    case k
    /// Momentary loudness, −59 … −5 LUFS (the EBU +18 scale around −23 LUFS).
    case momentary
    /// Short-term loudness, −59 … −5 LUFS.
    case shortterm
}
