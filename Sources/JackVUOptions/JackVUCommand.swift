#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import DSP
import Analysis
import Settings
import Outputs
import Version

extension ChannelLayout: ExpressibleByArgument {}
extension PPMType: ExpressibleByArgument {}
extension MeterSource: ExpressibleByArgument {}
extension OutputFormat: ExpressibleByArgument {}

/// Analysis options shared by the live client and `jackvu analyze`.
public struct AnalysisOptions: ParsableArguments {
    public init() {}

    @Option(name: .customLong("fft-size"), help: ArgumentHelp("FFT size in samples: a power of two from 256 to 65536.", valueName: "n"))
    var fftSize = 4096

    @Option(name: .long, help: ArgumentHelp("Overlap of successive FFT frames, as a fraction or a percentage (0-0.95, e.g. 0.75 or 75%). A new analysis comes every fft-size * (1 - overlap) samples.", valueName: "fraction"))
    var overlap = "75%"

    @Option(name: .long, help: ArgumentHelp("Number of log-spaced spectrum bars.", valueName: "n"))
    var bars = 48

    @Option(name: .customLong("bars-from"), help: ArgumentHelp("Lower edge of the first bar, in Hz.", valueName: "Hz"))
    var barsFrom = 60.0

    @Option(name: .customLong("bars-to"), help: ArgumentHelp("Upper edge of the last bar, in Hz (at most the Nyquist frequency).", valueName: "Hz"))
    var barsTo = 18000.0

    @Option(name: .long, help: ArgumentHelp("OSC address prefix of every message.", valueName: "path"))
    var prefix = "/jackvu"

    @Option(name: .long, help: ArgumentHelp("Loudness channel layout of the default programme (every channel): \(ChannelLayout.allCases.map(\.rawValue).joined(separator: ", ")) (ITU-R BS.2051 orders: 5.1 is L R C LFE Ls Rs). Default: from the channel count (1, 2, 5, 6; other counts weight every channel 1).", valueName: "layout"))
    var layout: ChannelLayout?

    @Option(name: .long, help: ArgumentHelp(
        "A loudness programme of its own: NAME=CHANNELS[:LAYOUT], channels as ranges and lists (main=1-6:5.1, stereo=7-8, ad=9:dual-mono, mix=1-4:weights=1,1,1.41,1.41). Repeatable (at most 32); a channel may be in several. Each gets momentary, short-term and integrated loudness, range, maxima, PLR and its loudspeaker pairs' correlation at PREFIX/programme/NAME/.",
        valueName: "name=channels[:layout]"))
    var programme: [String] = []

    @Option(name: .long, parsing: .unconditionalSingleValue, help: ArgumentHelp(
        "Loudness target of every programme, or of one (NAME=TARGET): a profile (\(LoudnessTarget.profiles.map(\.profile).joined(separator: ", "))) or a loudness in LUFS (e.g. -16). Adds readings relative to it (LU) and a state (within, above, below, true-peak-over). Repeatable.",
        valueName: "[name=]profile-or-LUFS"))
    var target: [String] = []

    @Option(name: .long, help: ArgumentHelp("Tolerance around the target, in LU (replaces the profile's; custom targets: 1; e.g. 1 for EBU R 128's live programmes).", valueName: "LU"))
    var tolerance: Double?

    @Option(name: .customLong("max-true-peak"), parsing: .unconditional, help: ArgumentHelp("Largest true peak the target permits, in dBTP (replaces the profile's; custom targets: -1).", valueName: "dBTP"))
    var maxTruePeak: Double?

    @Option(name: .long, help: ArgumentHelp("What the meter ports carry, mapped to 0..1: \(MeterScales.names.map { "\($0.name) (\($0.summary))" }.joined(separator: "; ")).", valueName: "meter"))
    var meter = MeterSource.rms

    @Option(name: .customLong("meter-floor"), parsing: .unconditional, help: ArgumentHelp(
        "Level shown as 0 on the meter ports and in level/hold, in dBFS (0 dBFS shows as 1).", valueName: "dBFS"))
    var meterFloor = -60.0

    @Option(name: .long, help: ArgumentHelp("Fall rate of the display values (level, hold, digital peak), in dB per second.", valueName: "dB/s"))
    var fall = 20.0

    @Option(name: .long, help: ArgumentHelp("How long the peak hold keeps a new peak before falling, in seconds.", valueName: "s"))
    var hold = 1.5

    @Option(name: .customLong("vu-reference"), parsing: .unconditional, help: ArgumentHelp("Sine level that reads 0 VU, in dBFS.", valueName: "dBFS"))
    var vuReference = -18.0

    @Option(name: .long, help: ArgumentHelp("PPM type (IEC 60268-10): din (type I), nordic (type I, Nordic scale), bbc (type IIa), ebu (type IIb).", valueName: "type"))
    var ppm = PPMType.ebu

    @Option(name: .customLong("ppm-alignment"), parsing: .unconditional, help: ArgumentHelp("Level the PPM reads as alignment (its TEST/0 dB mark, BBC mark 4, DIN -9 dB), in dBFS.", valueName: "dBFS"))
    var ppmAlignment = -18.0

    @Option(name: .customLong("k-scale"), help: ArgumentHelp("K-System scale: 20, 14 or 12 (0 on the scale is that many dB below full scale).", valueName: "n"))
    var kScale = 20

    @Option(name: .long, help: ArgumentHelp(
        "Message kinds to send, comma-separated (default: all): \(MessageKind.allCases.map(\.rawValue).joined(separator: ",")). all is every kind but \(MessageKind.allCases.filter(\.reading.onRequest).map(\.rawValue).joined(separator: " and ")), sent only when named (all,bits). A meter no output needs is not computed.",
        valueName: "list"))
    var send = "all"

    @Option(name: .long, help: ArgumentHelp(
        "How integrated loudness is gated: bs1770-4 (-70 LUFS absolute, -10 LU relative: EBU R 128; the default), bs1770-1 (ungated: the mean over the whole measurement) or relative:LU (another relative gate, -40 to 0 LU). The loudness range keeps EBU Tech 3342's gates.",
        valueName: "gating"))
    var gating = "bs1770-4"

    @Option(name: .customLong("pitch-confidence"), help: ArgumentHelp(
        "YIN confidence (0-1) below which pitch names no note (reads 0 \"-\" 0 CONFIDENCE).", valueName: "0-1"))
    var pitchConfidence = 0.8

    /// Fills the analysis settings of `c`.
    public func apply(to c: inout Configuration) throws(ConfigurationError) {
        c.fftSize = fftSize
        c.overlap = try JackVUCommand.parseFraction(overlap)
        c.bars = bars
        c.barsFromHz = barsFrom
        c.barsToHz = barsTo
        c.prefix = prefix
        c.layout = layout
        c.programmes = try programme.map { (text: String) throws(ConfigurationError) in try Programme.parse(text) }
        c.targets = try target.map { (text: String) throws(ConfigurationError) in try TargetChoice.parse(text) }
        c.toleranceLU = tolerance
        c.maxTruePeakDBTP = maxTruePeak
        c.meterSource = meter
        c.meterFloorDBFS = meterFloor
        c.fallDBPerSecond = fall
        c.holdSeconds = hold
        c.vuReferenceDBFS = vuReference
        c.ppmType = ppm
        c.ppmAlignmentDBFS = ppmAlignment
        c.kHeadroom = kScale
        do { c.send = try MessageKinds.parse(send) } catch {
            throw ConfigurationError(option: "--send", message: error.description)
        }
        c.pitchConfidence = pitchConfidence
        c.gating = try gatingChoice()
    }

    /// `--gating` parsed.
    func gatingChoice() throws(ConfigurationError) -> Gating {
        do { return try Gating.parse(gating) } catch { throw ConfigurationError(option: "--gating", message: error.description) }
    }
}

/// The `jackvu` command line: the live client, and `jackvu analyze`. A library of its own so
/// that the in-process client (`jackvu.so`, `jack_load -i "OPTIONS"`) takes the same options.
public struct JackVUCommand: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "jackvu",
        abstract: "Meter and analyse JACK audio in real time: levels, loudness, spectrum and pitch on CV meter ports, as OSC-style text, over OSC, and on a terminal or browser display.",
        usage: "jackvu [<options>]\njackvu analyze [<options>] <file> ...\njackvu report [<options>] <log>",
        discussion: """
            jackvu registers audio inputs in_1..in_N and CV outputs meter_1..meter_N, and analyses \
            every input: sample peak, RMS, true peak, VU, PPM, K-System, EBU R 128 loudness, an \
            FFT spectrum as log-spaced bars, 1/3-octave bands, the peak frequency and the YIN \
            fundamental with their note names. On a terminal it draws the terminal display \
            (the note, a meter per input, the spectrum, loudness); otherwise, or with --text, \
            it prints the results to stdout as OSC-style text, one message per line, exactly as \
            oscdump prints them (or as JSON lines, --format json):
              /jackvu/ch/1/rms f -21.030151
              /jackvu/ch/1/pitch fsff 440.000000 "A4" 0.012345 0.990000
            --http 8080 serves the same display to browsers at http://127.0.0.1:8080/.
            The same messages go out as OSC bundles over UDP (--osc) and as JACK MIDI events on \
            the osc port. meter_N carries channel N's --meter value on a 0..1 scale (default: RMS, linear \
            over --meter-floor..0 dBFS). It runs until SIGINT or SIGTERM; SIGHUP restarts the \
            measurements (integrated loudness, loudness range, maxima, clip counts). The sample \
            rate is always the JACK server's. `jackvu analyze FILE...` runs the same analysis \
            on audio files.

            When the JACK server goes away, jackvu says so once and waits for a server of the \
            same name to come back (retrying every 0.1 s, backing off to 1 s), then registers \
            its ports again and re-applies --connect; its measurements go on. --connect also \
            connects matching ports that appear later.

            Exit codes: 0 stopped by a signal, q, or a closed stdout (as `jackvu | head`); 64 bad \
            option or value; 66 a --connect-once pattern matches no port; 68 an --osc host does \
            not resolve; 69 no JACK server at the start (or it shut down, with --no-reconnect); \
            70 internal failure; 71 --listen cannot bind its address; 73 the --log file is not \
            a jackvu log's (a link, a device, another database); 74 stdout cannot be \
            written; 75 the client name is taken, or another jackvu writes the --log file. (71 also: --http cannot bind its \
            address; 68: its host does not resolve; 64 also: --tui without a terminal.)
            """,
        version: JackVUVersion.string,
        subcommands: [AnalyzeCommand.self, ReportCommand.self])

    @OptionGroup(title: "JACK and outputs")
    public var live: LiveOptions

    @OptionGroup(title: "Analysis options")
    public var analysis: AnalysisOptions

    @Flag(name: .customLong("rt-canary"), help: .private)
    public var realtimeCanary = false

    /// The options a session manager or the in-process form sets.
    public var name: String { get { live.name } set { live.name = newValue } }
    public var quiet: Bool { get { live.quiet } set { live.quiet = newValue } }
    public var text: Bool { live.text }
    public var tui: Bool { live.tui }
    public var format: OutputFormat? { live.format }

    /// Whether the terminal display runs (`--tui`, or stdout is a terminal).
    public var usesTerminal: Bool { tui || (!quiet && !text && format == nil && isatty(1) != 0) }

    /// The validated configuration.
    public func makeConfiguration() throws(ConfigurationError) -> Configuration {
        var c = Configuration()
        c.clientName = live.name
        c.serverName = live.server
        c.channels = live.channels
        c.workers = live.workers
        c.connect = live.connect
        if let raw = getenv("JACKVU_TEST_STALL_WORKER") {
            let parts = String(cString: raw).split(separator: ":").compactMap { Double($0) }
            if parts.count == 2 { c.testStallWorker = .init(after: parts[0], seconds: parts[1]) }
        }
        c.followGraph = !live.connectOnce
        c.reconnect = !live.noReconnect
        c.rate = live.rate
        c.format = live.outputFormat
        if tui && text { throw ConfigurationError(option: "--tui", message: "and --text exclude each other") }
        if tui && format != nil {
            throw ConfigurationError(option: "--format", message: "applies to the text stream; it cannot be used with --tui")
        }
        if quiet && (tui || text || format != nil) {
            throw ConfigurationError(option: "--quiet", message: "excludes --tui, --text and --format")
        }
        let terminal = usesTerminal
        c.stdoutStream = !terminal && !quiet
        c.httpOrigins = live.httpOrigin
        if let text = live.httpLimits {
            guard let limits = HTTPLimits.parse(text) else {
                throw ConfigurationError(
                    option: "--http-limits",
                    message: "'\(text)': expected CONNECTIONS[,PER_ADDRESS[,WEBSOCKETS_PER_ADDRESS]]: connections 1 to 1024, per address at most that, WebSockets per address 1 to \(HTTPLimits.maxWebSockets)")
            }
            c.httpLimits = limits
        }
        c.displayed = terminal || live.http != nil || live.metrics != nil
        c.oscPort = !live.noOSCPort
        c.midiNotes = live.midiNotes
        c.followTransport = live.followTransport
        c.resetAtZero = live.resetAtZero
        c.controlFrom = live.controlFrom
        c.subscribeTimeout = live.subscribeTimeout
        for text in live.alarm {
            do { c.alarms += try AlarmRule.parse(text) } catch { throw ConfigurationError(option: "--alarm", message: error.description) }
        }
        c.alarms = AlarmRule.merge(c.alarms)
        c.onAlarm = live.onAlarm
        c.onAlarmTimeout = live.onAlarmTimeout
        c.log = live.log
        c.logRetentionDays = live.logRetention
        try analysis.apply(to: &c)
        c.realtimeCanary = realtimeCanary
        try c.validate()
        // The addresses, parsed once (resolved when the run starts).
        for url in live.osc { c.oscDestinations.append(try Configuration.oscEndpoint(url)) }
        c.listen = try live.listen.map { (text: String) throws(ConfigurationError) in try Configuration.listenEndpoint(text) }
        c.http = try live.http.map { (text: String) throws(ConfigurationError) in try Configuration.httpAddress(text) }
        c.metrics = try live.metrics.map { (text: String) throws(ConfigurationError) in try Configuration.httpAddress(text, option: "--metrics") }
        return c
    }

    /// `0.75` or `75%` → 0.75.
    static func parseFraction(_ text: String) throws(ConfigurationError) -> Double {
        let trimmed = text.trimmingSuffix("%")
        guard let value = Double(trimmed.text), value.isFinite else {
            throw ConfigurationError(option: "--overlap", message: "'\(text)' is not a number (e.g. 0.75 or 75%)")
        }
        if trimmed.hadSuffix { return value / 100 }
        guard value < 1 else {
            throw ConfigurationError(
                option: "--overlap", message: "\(text) is not a fraction below 1 (for a percentage write \(text)%)")
        }
        return value
    }
}

/// `jackvu analyze FILE...`.
public struct AnalyzeCommand: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Analyse audio files (WAV, FLAC, OGG and more, at any sample rate) with the live client's pipeline.",
        discussion: """
            For each file, prints a summary: integrated loudness, loudness range, max momentary \
            and short-term loudness (EBU R 128), true peak, sample peak and RMS per channel. With \
            --stream it prints instead the update stream the live client would print for that \
            audio, one update per hop, each led by PREFIX/time (seconds of audio). A file that \
            cannot be read gets one line on stderr and the others are still analysed. \
            --format json (before or after `analyze`) prints summaries as one JSON array and \
            streams as one JSON object per line.

            Exit codes: 0 all files analysed, or the reader of stdout went away (as `| head`); \
            64 bad option or value; 66 a file could not be read; 74 stdout cannot be written.
            """)

    /// `--format` is jackvu's own option (text or json), shared with the live client: summaries
    /// become one JSON array, streams one JSON object per line.
    @ParentCommand public var parent: JackVUCommand

    public var format: OutputFormat { parent.live.outputFormat }

    @Flag(name: .long, help: "Print the update stream (one update per hop) instead of a summary.")
    public var stream = false

    @OptionGroup(title: "Analysis options")
    public var analysis: AnalysisOptions

    @Option(name: .long, help: ArgumentHelp(
        "Also write a compliance report of the (one) file: HTML, JSON or CSV by the name's extension (out.html, out.json, out.csv); the same report `jackvu report` makes from a log.",
        valueName: "file"))
    public var report: String?

    /// `--log FILE` (jackvu's own option, shared with the live client): the files' 100 ms
    /// loudness blocks go into that log, time-stamped as if the audio had started at
    /// `--log-start`.
    public var log: String? { parent.live.log }

    @Option(name: .customLong("log-start"), help: ArgumentHelp("With --log: when the first file's audio starts (2026-11-25T06:00:00Z, or Unix seconds; default: now); the files follow each other.", valueName: "time"))
    public var logStart: String?

    @Argument(help: ArgumentHelp("Audio files to analyse; - reads a WAV from standard input (ffmpeg -i IN.mxf -f wav - | jackvu analyze -).", valueName: "file"))
    public var files: [String]

    public func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one file to analyse") }
        if files.filter({ $0 == "-" }).count > 1 { throw ValidationError("'-' (standard input) can be read once: name it once") }
        if report != nil && files.count != 1 { throw ValidationError("--report makes the report of one file: give one") }
        if logStart != nil && log == nil { throw ValidationError("--log-start needs --log") }
    }

    public func makeConfiguration() throws(ConfigurationError) -> Configuration {
        var c = Configuration()
        try analysis.apply(to: &c)
        // --alarm (jackvu's own option): the signal's alarms, judged at every hop as live.
        for text in parent.live.alarm {
            do { c.alarms += try AlarmRule.parse(text) } catch { throw ConfigurationError(option: "--alarm", message: error.description) }
        }
        c.alarms = AlarmRule.merge(c.alarms)
        if let layout = c.layout { c.channels = layout.channelCount }
        // Checked against each file's channels when it is read.
        if let last = c.programmes.flatMap(\.channels).max() { c.channels = max(c.channels, last + 1) }
        try c.validate()
        return c
    }
}

/// `jackvu report LOG`.
public struct ReportCommand: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Make a loudness compliance report from a log (--log): HTML, JSON or CSV.",
        discussion: """
            Recomputes, from the logged 100 ms blocks, each programme's integrated loudness, \
            loudness range, max momentary and short-term loudness (ITU-R BS.1770-4, EBU R 128, \
            EBU Tech 3342), max true peak, PLR, the time its short-term loudness lay outside \
            the target's tolerance, and its alarms, with pass or fail against its target (the \
            one logged, or --target [NAME=]PROFILE|LUFS with --tolerance and --max-true-peak). \
            --programme NAME (repeatable) reports those programmes only (`programme` for the \
            default one). The HTML page is self-contained (the loudness over time \
            as inline SVG, the target band, alarms shaded) and prints to PDF. Segments split \
            the range: at the marks sent as PREFIX/mark NAME (--segments marks), every N \
            minutes (--segments every:N), or by a CSV schedule of NAME,START,END lines \
            (--schedule FILE). Times are ISO 8601 UTC (2026-11-25T06:00:00Z, 2026-11-25) or \
            Unix seconds. The log may be in use: the report reads what has been committed.

            Exit codes: 0 report written; 64 bad option or value; 66 the log (or schedule) \
            cannot be read; 74 the report cannot be written.
            """)

    @Argument(help: ArgumentHelp("The log (jackvu --log FILE).", valueName: "log"))
    public var log: String

    @Option(name: .long, help: ArgumentHelp("Start of the range (default: the log's first block).", valueName: "time"))
    public var from: String?

    @Option(name: .long, help: ArgumentHelp("End of the range (default: the log's last block).", valueName: "time"))
    public var to: String?

    /// jackvu's own options, shared with the live client and `analyze`: `--programme NAME`
    /// (repeatable) reports that programme only (its name; `programme` for the default one);
    /// `--target [NAME=]PROFILE|LUFS`, `--tolerance` and `--max-true-peak` judge against
    /// that target instead of the logged one.
    @ParentCommand public var parent: JackVUCommand

    public var programme: [String] { parent.analysis.programme }
    var target: [String] { parent.analysis.target }
    var tolerance: Double? { parent.analysis.tolerance }
    var maxTruePeak: Double? { parent.analysis.maxTruePeak }

    @Option(name: .long, help: ArgumentHelp("Split the range: marks (at each PREFIX/mark) or every:MINUTES.", valueName: "how"))
    public var segments: String?

    @Option(name: .long, help: ArgumentHelp("Split the range by a CSV schedule of NAME,START,END lines.", valueName: "file"))
    public var schedule: String?

    @Option(name: [.short, .long], help: ArgumentHelp("Write the report to this file: HTML, JSON or CSV by its extension (default: HTML on stdout).", valueName: "file"))
    public var output: String?

    @Option(name: .long, help: ArgumentHelp("The form on stdout: html, json or csv.", valueName: "form"))
    public var type: String?

    public func validate() throws {
        if segments != nil && schedule != nil { throw ValidationError("--segments and --schedule exclude each other") }
        if let type, !["html", "json", "csv"].contains(type) { throw ValidationError("--type must be html, json or csv, got '\(type)'") }
        if let output, !["html", "htm", "json", "csv"].contains(where: { output.lowercased().hasSuffix("." + $0) }) {
            throw ValidationError("--output '\(output)': name it .html, .json or .csv (the form follows the extension)")
        }
        if let segments, segments != "marks" {
            guard segments.hasPrefix("every:"), let m = Double(segments.dropFirst(6)), m >= 1, m <= 10080 else {
                throw ValidationError("--segments must be marks or every:MINUTES (1 to 10080), got '\(segments)'")
            }
        }
    }

    /// The targets as `--target` of the live client reads them (the programme's own logged
    /// target when none applies).
    public func targetConfiguration() throws(ConfigurationError) -> Configuration {
        var c = Configuration()
        for t in target { c.targets.append(try TargetChoice.parse(t)) }
        c.toleranceLU = tolerance
        c.maxTruePeakDBTP = maxTruePeak
        c.gating = try parent.analysis.gatingChoice()
        if let tolerance, !(tolerance > 0 && tolerance <= 20) {
            throw ConfigurationError(option: "--tolerance", message: "must be above 0 and at most 20 LU, got \(tolerance)")
        }
        return c
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> (text: String, hadSuffix: Bool) {
        hasSuffix(suffix) ? (String(dropLast(suffix.count)), true) : (self, false)
    }
}

extension AddressRange: ExpressibleByArgument {
    public init?(argument: String) { try? self.init(parsing: argument) }
}

/// The live client's own options: JACK, its outputs and its control input (the analysis
/// options are `AnalysisOptions`, shared with `jackvu analyze`). `--help` lists them first.
public struct LiveOptions: ParsableArguments {
    public init() {}

    @Option(name: .long, help: ArgumentHelp("JACK client name; ports are NAME:in_N and NAME:meter_N.", valueName: "name"))
    public var name = "jackvu"

    @Option(name: .long, help: ArgumentHelp("JACK server to use (default: $JACK_DEFAULT_SERVER, else the default server).", valueName: "name"))
    public var server: String?

    @Option(name: .long, help: ArgumentHelp("Number of inputs and meter ports (1-1024; jackvu needs 2 x N + 1 ports, and the JACK server's port limit, jackd -p, may be lower).", valueName: "n"))
    public var channels = 2

    @Option(name: .long, help: ArgumentHelp("Analysis threads sharing the channels (1-64; default: one per 64 channels, at most the cores).", valueName: "n"))
    public var workers: Int?

    @Option(name: .long, help: ArgumentHelp(
        "Connect output ports matching this regex (as jack_lsp lists them) to the inputs, in order, now and whenever matching ports appear. Repeat for further inputs; a regex matching several ports fills successive inputs. Connections are only ever added.",
        valueName: "port-or-regex"))
    public var connect: [String] = []

    @Option(name: .long, help: ArgumentHelp("Updates per second, at most (every output): 0.01 (one every 100 s) to 1000.", valueName: "Hz"))
    public var rate = 20.0

    @Option(name: .long, help: ArgumentHelp("What stdout carries: text (OSC-style lines, as oscdump prints them; the default) or json (one object per update; with analyze, summaries as one JSON array). Implies --text.", valueName: "format"))
    public var format: OutputFormat?

    /// `--format`, text when not given.
    public var outputFormat: OutputFormat { format ?? .text }

    @Flag(name: .long, help: "Draw the terminal display: a note, a meter per input, the spectrum, loudness (the default when stdout is a terminal). Keys: q quit, r reset, i pause/resume loudness integration, 1-9 choose the programme r and i act on (0 all), l loudness view (+/- span, s scale), p pause the display, Tab/arrows select the input, ? help.")
    public var tui = false

    @Flag(name: .long, help: "Write the text stream on stdout even when it is a terminal.")
    public var text = false

    @Flag(name: .long, help: "No text on stdout and no terminal display: for services and session managers (the meter ports, --osc, --http and the osc port still carry every result).")
    public var quiet = false

    @Option(name: .long, help: ArgumentHelp(
        "Serve the browser display at http://ADDRESS:PORT/ (a WebSocket at /ws, the latest update as JSON at /snapshot). A bare PORT listens on 127.0.0.1 only; name an address (0.0.0.0:PORT, [::]:PORT) to serve other machines.",
        valueName: "[address:]port"))
    public var http: String?

    @Option(name: .long, help: ArgumentHelp(
        "Serve Prometheus metrics alone at http://ADDRESS:PORT/metrics (also at /metrics of --http). A bare PORT listens on 127.0.0.1 only; name an address (0.0.0.0:PORT) for a Prometheus on another machine.",
        valueName: "[address:]port"))
    public var metrics: String?

    @Option(name: .customLong("http-origin"), help: ArgumentHelp(
        "Also accept the browser display's WebSocket from pages of this origin (e.g. https://wall.example:8443); by default only the display's own page may open it. Repeatable.",
        valueName: "origin"))
    public var httpOrigin: [String] = []

    @Option(name: .customLong("http-limits"), help: ArgumentHelp(
        "Connections the --http and --metrics servers hold at once, in all and per client address, and browser WebSockets per address (default 64,16,8: one address never takes more than a quarter). Beyond them a connection is closed at once; a request head must be whole within 10 s and 16 KiB (414/431 otherwise); only GET and HEAD are served (405 otherwise).",
        valueName: "n[,per-address[,websockets]]"))
    public var httpLimits: String?

    @Option(name: .long, help: ArgumentHelp(
        "Also send every update as OSC bundles over UDP to udp://HOST:PORT (or osc.udp://HOST:PORT/). Repeatable.",
        valueName: "url"))
    public var osc: [String] = []

    @Flag(name: .customLong("connect-once"), help: "Apply --connect only at the start (and after a reconnect), not to ports that appear later; a pattern that matches nothing is then an error.")
    public var connectOnce = false

    @Flag(name: .customLong("no-reconnect"), help: "Exit (status 69) when the JACK server goes away, instead of waiting for it to come back.")
    public var noReconnect = false

    @Flag(name: .customLong("follow-transport"), help: "Integrate loudness only while the JACK transport rolls: a stopped transport freezes every programme's readings (its periods are left out exactly).")
    public var followTransport = false

    @Flag(name: .customLong("reset-at-zero"), help: "With --follow-transport: reset every programme when the transport starts rolling at frame 0.")
    public var resetAtZero = false

    @Flag(name: .customLong("no-osc-port"), help: "Do not register the osc MIDI port (OSC packets as JACK MIDI events).")
    public var noOSCPort = false

    @Flag(name: .customLong("midi-notes"), help: "Register a notes MIDI port that plays the pitch of each channel as MIDI notes.")
    public var midiNotes = false

    @Option(name: .long, help: ArgumentHelp(
        "Accept OSC control messages (reset, rate, send, subscribe, unsubscribe) on udp://ADDRESS:PORT; a bare PORT listens on 127.0.0.1 only.",
        valueName: "url-or-port"))
    public var listen: String?

    @Option(name: .customLong("control-from"), help: ArgumentHelp(
        "Read --listen's commands from these sources only (repeatable; ADDRESS or ADDRESS/BITS, e.g. 192.168.1.0/24). Default: loopback (127.0.0.0/8, ::1) only; naming any replaces that default. Packets from elsewhere are counted and ignored.",
        valueName: "range"))
    public var controlFrom: [AddressRange] = []

    @Option(name: .customLong("subscribe-timeout"), help: ArgumentHelp(
        "How long a /subscribe lasts unless the subscriber sends it again, in seconds (1 to 3600).", valueName: "s"))
    public var subscribeTimeout = Subscriptions.defaultLifetime

    @Option(name: .long, help: ArgumentHelp(
        "Watch for an alarm: all, a kind (\(AlarmKind.allCases.map(\.rawValue).joined(separator: ", "))), a list (silence,clip), or KIND:level=L,raise=S,clear=S. Defaults: silence below -40 dBFS for 10 s (clear after 2 s), stuck within 1 LU for 30 s, clip at a full-scale run or above 0 dBTP, truepeak above the target's maximum (-1 dBTP), loudness short-term above target + tolerance for 10 s, integrated outside tolerance after 60 s, phase below -0.3 for 3 s, leg below -60 dBFS for 3 s, server gone, xruns above 1 a minute, overruns, disconnected inputs. Repeatable; a later rule of a kind replaces an earlier one. Adds a CV port per programme (alarm, alarm_NAME: 1.0 while any of its alarms is active).",
        valueName: "alarm"))
    public var alarm: [String] = []

    @Option(name: .customLong("on-alarm"), help: ArgumentHelp(
        "Run this shell command on every alarm raise and clear, with JACKVU_ALARM, JACKVU_SUBJECT, JACKVU_PROGRAMME, JACKVU_STATE (raised, cleared), JACKVU_VALUE, JACKVU_UNIT, JACKVU_TIME (ISO 8601 UTC) and JACKVU_CLIENT in its environment. One at a time, in order; at most 64 waiting; stopped after --on-alarm-timeout.",
        valueName: "command"))
    public var onAlarm: String?

    @Option(name: .customLong("on-alarm-timeout"), help: ArgumentHelp("Seconds an --on-alarm command may run before it is stopped (SIGTERM, then SIGKILL 1 s later).", valueName: "s"))
    public var onAlarmTimeout = 10.0

    @Option(name: .long, help: ArgumentHelp(
        "Keep a loudness and incident log in this SQLite file: every programme's 100 ms loudness blocks and peaks, alarms and chain events, written once a second (WAL). `jackvu report FILE` makes compliance reports from it.",
        valueName: "file"))
    public var log: String?

    @Option(name: .customLong("log-retention"), help: ArgumentHelp("Delete log rows older than this many days (checked hourly).", valueName: "days"))
    public var logRetention: Double?
}
