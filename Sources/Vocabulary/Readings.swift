import DSP

// jackvu's vocabulary of readings: one table (`Readings.table`) says, for every kind of
// message, what it is, in which unit, what analysis it needs, how it goes out as OSC and as
// JSON, and whether and how the displays show it. `--send`, the analysis features computed,
// the OSC address space (and so the oscdump-style text), JSON lines, the browser page's data,
// `/metrics`' further families and `jackvu analyze`'s summary (`SummaryLine`) all derive from it: a new reading is its DSP and one
// entry here. (The model: LSP plugins' metadata tables, which declare each port once, with
// its unit and range, for every wrapper to derive from.)
//
// `--meter`'s scales are in the same place (`MeterScales`): the meter ports' 0 … 1 mapping,
// their pretty-names and the displays' bar all read one scale.

/// What the analysis computes. A meter that no output or port needs is left out.
public struct AnalysisFeatures: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// FFT bars, peak frequency and note.
    public static let spectrum = AnalysisFeatures(rawValue: 1)
    /// YIN pitch.
    public static let yin = AnalysisFeatures(rawValue: 2)
    /// 1/3-octave bands.
    public static let thirds = AnalysisFeatures(rawValue: 4)
    /// VU meter.
    public static let vu = AnalysisFeatures(rawValue: 8)
    /// Per-hop block levels and display ballistics, and integrated loudness and range
    /// kept current while running (a summary needs them only at the end).
    public static let live = AnalysisFeatures(rawValue: 16)
    /// PPM.
    public static let ppm = AnalysisFeatures(rawValue: 32)
    /// K-System meter.
    public static let k = AnalysisFeatures(rawValue: 64)
    /// Digital peak with hold and the clip count.
    public static let dpeak = AnalysisFeatures(rawValue: 128)
    /// Phase correlation of channel pairs.
    public static let correlation = AnalysisFeatures(rawValue: 256)
    /// EBU R 128 loudness.
    public static let loudness = AnalysisFeatures(rawValue: 512)
    /// True peak (BS.1770).
    public static let truePeak = AnalysisFeatures(rawValue: 1024)
    /// The bits in use and the DC offset of each block (`BitUsage`).
    public static let bits = AnalysisFeatures(rawValue: 2048)
    /// Each pair's latest sample points, for the displays' goniometer (`GoniometerTrace`).
    public static let goniometer = AnalysisFeatures(rawValue: 4096)
    /// Each programme's short-term loudness distribution (`ProgrammeSnapshot.histogram`).
    public static let histogram = AnalysisFeatures(rawValue: 8192)
    /// The spectrum and the pitch at every hop, not paced to the outputs' rate
    /// (`Analyzer.readingsPerSecond`): the MIDI `notes` port follows every hop.
    public static let everyHop = AnalysisFeatures(rawValue: 16384)
    /// VU, PPM, K, digital peak, correlation.
    public static let meters: AnalysisFeatures = [.vu, .ppm, .k, .dpeak, .correlation]
    /// Every feature there is or will be (a snapshot made by hand counts as computing all).
    public static let every = AnalysisFeatures(rawValue: ~0)
    /// What a file summary needs: loudness and true peak over the whole file.
    public static let summary: AnalysisFeatures = [.loudness, .truePeak]
    /// What the default `--send` (all) needs: every feature but those of the readings sent
    /// only on request (`.bits`).
    public static let all: AnalysisFeatures = [.spectrum, .yin, .thirds, .meters, .live, .summary]
    /// What each feature needs computed for it: the histogram is of the short-term loudness
    /// (the loudness meter's); every hop's spectrum and pitch are live hops'.
    public static let implications: [(feature: AnalysisFeatures, needs: AnalysisFeatures)] = [
        (.histogram, .loudness),
        (.everyHop, .live),
    ]

    /// What the message kinds `kinds` need, and with `displayed` what the displays show
    /// (every displayed reading, the goniometer's points, the bit meter and the loudness
    /// histogram), with their implications; `.live` always (a host running a summary asks for
    /// `.summary` instead).
    public static func needed(kinds: MessageKinds, displayed: Bool) -> AnalysisFeatures {
        var f: AnalysisFeatures = [.live]
        for kind in kinds.kinds { f.formUnion(kind.reading.features) }
        if displayed {
            for r in Readings.table where r.display != nil { f.formUnion(r.features) }
            f.formUnion([.goniometer, .bits, .histogram])
        }
        return f.withImplied
    }

    /// These features with everything they need (`implications`), transitively.
    public var withImplied: AnalysisFeatures {
        var f = self
        while true {
            let more = AnalysisFeatures.implications.reduce(f) { f.isSuperset(of: $1.feature) ? $0.union($1.needs) : $0 }
            if more == f { return f }
            f = more
        }
    }
}

/// The unit of a reading's value. A JSON key carries it as its suffix where it has one.
public enum ReadingUnit: String, Sendable, CaseIterable {
    case dBFS, dBTP, LUFS, LU, Hz, VU
    /// dB on a meter's own scale (K-System).
    case dB
    /// On the `--ppm` type's scale: dB, or marks 1 … 7 for the BBC meter.
    case ppmScale = "PPM scale"
    case cents
    /// A display position, 0 … 1.
    case fraction = "0..1"
    /// −1 … +1.
    case correlation = "-1..+1"
    /// A note name (C4, A#3), `-` or null when none.
    case note
    /// A count since the start (or reset).
    case count
    /// 1 or 0 (JSON true or false).
    case flag
    /// Microseconds.
    case microseconds = "us"
    /// Seconds.
    case seconds = "s"
    /// A word from a documented set (a target state, a profile's name).
    case text
    /// A number of bits (of a sample word).
    case bits
    /// A percentage.
    case percent = "%"

    /// The suffix a JSON key in this unit ends with (nil: none required).
    public var jsonSuffix: String? {
        switch self {
        case .dBFS: return "_dbfs"
        case .dBTP: return "_dbtp"
        case .LUFS: return "_lufs"
        case .LU: return "_lu"
        case .Hz: return "_hz"
        case .VU: return "vu"
        case .dB: return "_db"
        case .cents: return "cents"
        case .seconds: return "_s"
        case .percent: return "_pct"
        default: return nil
        }
    }
}

/// One value of a reading for one subject (a channel, a pair, the programme, the instance).
public enum ReadingValue {
    /// OSC `f`; JSON a number with three decimals, null when not finite.
    case float(Float)
    case double(Double)
    /// OSC `i` (clamped to 32 bits); JSON an integer.
    case int(Int)
    /// OSC `i` wrapping at 32 bits (a counter that may pass 2³¹); JSON an integer.
    case wrappingInt(Int)
    /// OSC `i` 1 or 0; JSON true or false.
    case bool(Bool)
    /// OSC `s`, the note's name or `-`; JSON its name or null.
    case note(Note?)
    /// OSC `s`; JSON a string.
    case text(String)
    /// OSC one `f` each; JSON an array.
    case floats([Float])
    /// No value yet (PLR before there is an integrated loudness): the message is left out of
    /// OSC and the text (which never carry NaN), the JSON value is null.
    case missing
    /// JSON an object by output of objects by counter (`{"stdout": {"skipped": 0}}`); not in
    /// OSC (its `/status` keeps its documented positional layout).
    case counters([OutputCounter])
    /// OSC one `s` each; JSON an array of strings.
    case strings([String])
    /// JSON only: the alarm changes as objects (`AlarmEvent.json`).
    case alarmEvents([AlarmEvent])
}

/// One field of a message: its JSON key (which carries its unit), its unit and its value.
public struct ReadingField: Sendable {
    /// Where the field goes: both forms, or only one (an argument the other form has
    /// elsewhere or never had).
    public enum Wire: Sendable { case both, oscOnly, jsonOnly }
    public let key: String
    public let unit: ReadingUnit
    public let wire: Wire
    /// Its Prometheus family on `/metrics` (nil: none of its own; the families named before
    /// the table could say so are `MetricsExporter`'s fixed list).
    public let metric: MetricFamily?
    /// The meter `--meter` may put on the meter ports from it (nil: none).
    public let meter: ReadingMeter?
    /// Its lines in `jackvu analyze`'s summary (its value over the whole file); none: only a
    /// further reading's (`ReadingDisplay.extra`) line by its label, or none.
    public let summary: [SummaryLine]
    /// Its column in a compliance report (nil: none; only what the log's blocks hold).
    public let report: ReportColumn?
    public let value: @Sendable (Snapshot, Int) -> ReadingValue

    public init(_ key: String, _ unit: ReadingUnit, wire: Wire = .both, metric: MetricFamily? = nil, meter: ReadingMeter? = nil,
                summary: [SummaryLine] = [], report: ReportColumn? = nil, _ value: @escaping @Sendable (Snapshot, Int) -> ReadingValue) {
        self.key = key
        self.unit = unit
        self.wire = wire
        self.metric = metric
        self.meter = meter
        self.summary = summary
        self.report = report
        self.value = value
    }
}

extension ReadingField {
    /// This field, reading as none (`.missing`) from a snapshot whose analysis did not compute
    /// `features` (`Snapshot.features`).
    func needing(_ features: AnalysisFeatures) -> ReadingField {
        let value = self.value
        return ReadingField(key, unit, wire: wire, metric: metric, meter: meter, summary: summary, report: report) { s, i in
            s.features.isSuperset(of: features) ? value(s, i) : .missing
        }
    }
}

/// A meter of `--meter`: the meter ports carry a reading field's value mapped from this scale
/// to 0 … 1; their pretty-names in JACK's metadata and the displays' bar read the same scale.
public struct ReadingMeter: Sendable {
    /// `--meter`'s name for it, and what it is (for `--help`).
    public let name: String
    public let summary: String
    /// Its scale, with the colour zones, on the options it depends on.
    public let scale: @Sendable (MeterScales.Parameters) -> DisplayScale
    /// The analyzer's own value of it, brought up to date every period (a JACK cycle) with
    /// the ballistics the ports show; nil: the field's value at each analysis hop.
    public let live: LiveMeter?
    /// Where `--help` lists it (lower first; meters that do not say come after, in the
    /// table's order).
    public let listed: Int

    public init(_ name: String, _ summary: String, live: LiveMeter? = nil, listed: Int = .max,
                scale: @escaping @Sendable (MeterScales.Parameters) -> DisplayScale) {
        self.name = name
        self.summary = summary
        self.live = live
        self.listed = listed
        self.scale = scale
    }
}

/// The meters the analyzer keeps up to date every period, sample-accurate, for the ports.
public enum LiveMeter: Sendable, Equatable {
    /// The RMS display level (with `--fall`); the digital peak with hold; the true peak's
    /// display value; the VU, PPM and K readings; the channel's programme's momentary and
    /// short-term loudness.
    case rmsLevel, heldPeak, truePeak, vu, ppm, k, momentary, shortTerm
}

/// A reading field's Prometheus family: its full name (the `jackvu_` prefix and the unit as a
/// suffix, by Prometheus' conventions; counters end in `_total`), its help and its type. A
/// series per subject of the reading's scope — label `channel` (1 … N), `programme` (its shown
/// name), `pair` (`1-2`; `programme` and `pair` for a programme's loudspeaker pair), none for
/// the instance — set from the field's value at each update: the exporter's floor, −200, while
/// it has none (as every family there reads silence). The names are a contract with a
/// facility's alert rules and dashboards (they change with no JSON key or OSC address).
public struct MetricFamily: Sendable {
    public enum Kind: Sendable, Equatable {
        /// The value.
        case gauge
        /// Follows the field's absolute count (a reset starts it again).
        case counter
        /// A series per value the field's text may take (label `state`): 1 for the one it has,
        /// 0 for the others.
        case stateSet([String])
    }

    public let name: String
    public let help: String
    public let kind: Kind
    /// Only for programmes with a target.
    public let withTarget: Bool
    /// Only when `--send` names its reading (a specialist reading's families).
    public let whenSent: Bool
    /// Its value where it is not the field's own number (nil: the field's).
    public let value: (@Sendable (Snapshot, Int) -> Double)?

    public init(_ name: String, _ help: String, _ kind: Kind = .gauge, withTarget: Bool = false, whenSent: Bool = false,
                value: (@Sendable (Snapshot, Int) -> Double)? = nil) {
        self.name = name
        self.help = help
        self.kind = kind
        self.withTarget = withTarget
        self.whenSent = whenSent
        self.value = value
    }
}

/// One OSC message of a reading: the last part of its address and its arguments in order.
public struct ReadingMessage: Sendable {
    public let name: String
    public let fields: [ReadingField]
    public init(_ name: String, _ fields: [ReadingField]) {
        self.name = name
        self.fields = fields
    }
}

/// How the displays show a reading.
public enum ReadingDisplay: Sendable, Equatable {
    /// Drawn by the displays' own layout (meters, note, spectrum, the loudness block, the
    /// title's counters).
    case layout
    /// A further reading: shown by label, value (to `decimals` places) and unit, with no
    /// display code of its own — a programme's beside the loudness block and in the file
    /// summary; a channel's in the selected channel's detail and on each channel's line of
    /// the file summary (its value over the whole file there).
    case extra(label: String, decimals: Int)
}

/// One reading: a message kind of `--send`, and everything derived from it.
public struct Reading: Sendable {
    /// Whom one value describes, and so where its messages go: `PREFIX/ch/N/…`,
    /// `PREFIX/pair/P/…`, `PREFIX/loudness/…` (the programme), `PREFIX/…` (this jackvu).
    public enum Scope: Sendable, Equatable { case channel, pair, programme, instance }

    /// The name `--send` and the control input's `send` take; for channel readings also
    /// the last part of the address.
    public let kind: String
    /// What it is, for `--help` and the README.
    public let summary: String
    public let scope: Scope
    /// What the analysis must compute for it.
    public let features: AnalysisFeatures
    public let messages: [ReadingMessage]
    /// The JSON object an instance reading's fields go in (`status`, `callback_us`).
    public let jsonObject: String?
    /// Whether it exists only live (status counters; not in `jackvu analyze --stream`).
    public let liveOnly: Bool
    /// How the displays show it (nil: they do not).
    public let display: ReadingDisplay?
    /// Sent only when `--send` names it (not part of `all`, the default): a specialist
    /// reading whose messages most receivers would not want by default.
    public let onRequest: Bool

    public init(
        _ kind: String, _ summary: String, scope: Scope, features: AnalysisFeatures = [], messages: [ReadingMessage],
        jsonObject: String? = nil, liveOnly: Bool = false, display: ReadingDisplay? = nil, onRequest: Bool = false
    ) {
        self.kind = kind
        self.summary = summary
        self.scope = scope
        self.features = features
        // Each field reads as none where the analysis did not compute what it needs.
        self.messages = features.isEmpty ? messages : messages.map { m in ReadingMessage(m.name, m.fields.map { $0.needing(features) }) }
        self.jsonObject = jsonObject
        self.liveOnly = liveOnly
        self.display = display
        self.onRequest = onRequest
    }

    /// A reading of one message named as the kind.
    public init(
        _ kind: String, _ summary: String, scope: Scope, features: AnalysisFeatures = [], fields: [ReadingField],
        jsonObject: String? = nil, liveOnly: Bool = false, display: ReadingDisplay? = nil, onRequest: Bool = false
    ) {
        self.init(kind, summary, scope: scope, features: features, messages: [ReadingMessage(kind, fields)],
                  jsonObject: jsonObject, liveOnly: liveOnly, display: display, onRequest: onRequest)
    }

    /// Every field, in message order.
    public var fields: [ReadingField] { messages.flatMap(\.fields) }
}

/// The table.
public enum Readings {
    /// Every reading, in the order their messages come (per channel, then pairs, then the
    /// programme, then the instance) and their JSON keys.
    public static let table: [Reading] = [
        // Per channel N: PREFIX/ch/N/KIND.
        Reading("peak", "sample peak of the analysis block, dBFS", scope: .channel, fields: [
            ReadingField("peak_dbfs", .dBFS, metric: MetricFamily("jackvu_channel_peak_dbfs", "Sample peak of the analysis block."), summary: [
                SummaryLine(.channel, "peak", key: "sample_peak_dbfs", order: 1),
                SummaryLine(.fileMaximum, "sample peak", key: "sample_peak_dbfs", order: 5),
            ], report: ReportColumn(.maxSamplePeak, "max_sample_peak_dbfs", name: "max sample peak", heading: nil, order: 5)) { s, i in .float(s.channels[i].peakDBFS) },
        ], display: .layout),
        Reading("rms", "RMS of the analysis block, dBFS", scope: .channel, fields: [
            ReadingField("rms_dbfs", .dBFS, metric: MetricFamily("jackvu_channel_rms_dbfs", "RMS of the analysis block (a full-scale sine reads -3.01)."), meter: MeterScales.rms, summary: [SummaryLine(.channel, "RMS", order: 0, jsonOrder: 2)]) { s, i in .float(s.channels[i].rmsDBFS) },
        ], display: .layout),
        Reading("level", "display level 0..1", scope: .channel, fields: [
            ReadingField("level", .fraction) { s, i in .float(s.channels[i].level) },
        ], display: .layout),
        Reading("hold", "peak-hold display value 0..1", scope: .channel, fields: [
            ReadingField("hold", .fraction) { s, i in .float(s.channels[i].hold) },
        ], display: .layout),
        Reading("meter", "the meter port's value 0..1", scope: .channel, fields: [
            ReadingField("meter", .fraction) { s, i in .float(s.channels[i].meter) },
        ], display: .layout),
        Reading("truepeak", "true peak, dBTP", scope: .channel, features: .truePeak, fields: [
            ReadingField("true_peak_dbtp", .dBTP, metric: MetricFamily("jackvu_channel_true_peak_dbtp", "True peak (ITU-R BS.1770-4) since the previous update."), meter: MeterScales.truePeak, summary: [
                SummaryLine(.channel, "true peak", order: 2, jsonOrder: 0), SummaryLine(.fileMaximum, "true peak", order: 4),
            ]) { s, i in .float(s.channels[i].truePeakDBTP) },
            ReadingField("max_true_peak_dbtp", .dBTP, metric: MetricFamily("jackvu_channel_max_true_peak_dbtp", "Largest true peak since the start or a reset.")) { s, i in
                .float(s.channels[i].maxTruePeakDBTP)
            },
        ], display: .layout),
        // Only when a fault set the maximum: its cause and the maximum over the clean periods
        // (OSC: no message while the maximum is clean; JSON: null).
        Reading("peakfault", "what set the max true peak when an xrun did, and the clean max, dBTP", scope: .channel,
                features: .truePeak, fields: [
            ReadingField("max_true_peak_cause", .text) { s, i in s.channels[i].maxTruePeakFault.map { .text($0.cause.rawValue) } ?? .missing },
            ReadingField("clean_max_true_peak_dbtp", .dBTP) { s, i in s.channels[i].maxTruePeakFault.map { .double($0.clean) } ?? .missing },
        ], display: .layout),
        Reading("dpeak", "digital peak with hold, dBFS, and clips", scope: .channel, features: .dpeak, fields: [
            ReadingField("dpeak_dbfs", .dBFS, meter: MeterScales.peak) { s, i in .float(s.channels[i].heldPeakDBFS) },
            ReadingField("clips", .count, metric: MetricFamily("jackvu_channel_clips_total", "Clips (runs of full-scale samples) since the start or a reset.", .counter)) { s, i in .int(s.channels[i].clips) },
        ], display: .layout),
        Reading("vu", "VU meter", scope: .channel, features: .vu, fields: [
            ReadingField("vu", .VU, meter: MeterScales.vu) { s, i in .float(s.channels[i].vu) },
        ]),
        Reading("ppm", "PPM", scope: .channel, features: .ppm, fields: [
            ReadingField("ppm", .ppmScale, meter: MeterScales.ppm) { s, i in .float(s.channels[i].ppm) },
        ]),
        Reading("k", "K-System meter", scope: .channel, features: .k, fields: [
            ReadingField("k_db", .dB, meter: MeterScales.k) { s, i in .float(s.channels[i].k) },
        ]),
        // How far the block's sample peak stands above its RMS: a sine 3.01 dB, a square 0,
        // speech and music 12 to 20; a heavily limited master 6 to 8 (null in silence). On
        // request; the displays show it by the selected channel's detail, the file summary over
        // the whole file. Its meter has no colour zones: a crest factor is neither good nor bad.
        Reading("crest", "crest factor: the analysis block's sample peak minus its RMS, dB", scope: .channel, fields: [
            ReadingField("crest_db", .dB,
                         metric: MetricFamily("jackvu_crest_factor_db", "The analysis block's sample peak minus its RMS, dB (a sine 3.01, a square 0); -200 in silence."),
                         meter: ReadingMeter("crest", "crest factor, 0 .. 30 dB") { _ in
                             DisplayScale(name: "Crest", unit: "dB", range: 0...30, yellowFrom: 30, redFrom: 30,
                                          marks: DisplayScale.marks(0...30, step: 6), holdIsSamplePeak: false)
                         }) { s, i in
                let ch = s.channels[i]
                return ch.rmsDBFS > Decibels.floor && ch.peakDBFS > Decibels.floor ? .float(ch.peakDBFS - ch.rmsDBFS) : .missing
            },
        ], display: .extra(label: "crest", decimals: 1), onRequest: true),
        Reading("pitch", "the note played (YIN)", scope: .channel, features: .yin, fields: [
            ReadingField("pitch_hz", .Hz) { s, i in .double(s.channels[i].pitchHz) },
            ReadingField("note", .note) { s, i in .note(s.channels[i].pitchNote) },
            ReadingField("cents", .cents) { s, i in .double(s.channels[i].pitchNote?.cents ?? 0) },
            ReadingField("pitch_confidence", .fraction) { s, i in .double(s.channels[i].pitchConfidence) },
        ], display: .layout),
        Reading("peakfreq", "the FFT peak frequency and its note", scope: .channel, features: .spectrum, fields: [
            ReadingField("peakfreq_hz", .Hz) { s, i in .double(s.channels[i].peakFrequencyHz) },
            ReadingField("peakfreq_note", .note) { s, i in .note(s.channels[i].peakNote) },
            ReadingField("peakfreq_cents", .cents) { s, i in .double(s.channels[i].peakNote?.cents ?? 0) },
        ], display: .layout),
        Reading("bars", "spectrum bars", scope: .channel, features: .spectrum, fields: [
            ReadingField("bars", .fraction) { s, i in .floats(s.channels[i].bars) },
        ], display: .layout),
        Reading("thirds", "1/3-octave bands", scope: .channel, features: .thirds, fields: [
            ReadingField("thirds_dbfs", .dBFS) { s, i in .floats(s.channels[i].thirds) },
        ]),
        // A bit meter over the analysis block (`BitUsage`): 16 for 16-bit audio in a float
        // path, 24 for 24-bit, 32 for float; 0 depth and 32 headroom for digital silence.
        Reading("bits", "the bits in use over the analysis block (word depth, headroom, 16- or 24-bit quantised), its DC offset and whether it is constant", scope: .channel,
                features: .bits, fields: [
            ReadingField("bit_depth", .bits, metric: MetricFamily("jackvu_channel_bit_depth_bits", "Bits from full scale down to the lowest bit any sample of the analysis block sets: 16 for 16-bit audio, 24 for 24-bit, more for float; 0 for digital silence (--send bits).", whenSent: true)) { s, i in .int(s.channels[i].bits.depth) },
            ReadingField("headroom_bits", .bits, metric: MetricFamily("jackvu_channel_headroom_bits", "Bits unused above the highest bit in use (6 dB each; 32 for digital silence).", whenSent: true)) { s, i in .int(s.channels[i].bits.headroom) },
            ReadingField("quantised_bits", .bits, metric: MetricFamily("jackvu_channel_quantised_bits", "16 or 24 while every sample is a word of that size, else 0.", whenSent: true)) { s, i in .int(s.channels[i].bits.quantised) },
            ReadingField("dc_dbfs", .dBFS, metric: MetricFamily("jackvu_channel_dc_offset_dbfs", "The DC offset: the mean over about a second.", whenSent: true)) { s, i in .float(s.channels[i].dcDBFS) },
            ReadingField("constant", .flag, metric: MetricFamily("jackvu_channel_constant", "1 while every sample of the analysis block is one constant, not 0 (a stuck source).", whenSent: true)) { s, i in .bool(s.channels[i].bits.constant) },
        ], onRequest: true),
        // Per channel pair P = (1, 2), (3, 4), …: PREFIX/pair/P/KIND; JSON an array by pair.
        Reading("correlation", "phase correlation of channel pairs", scope: .pair, features: .correlation, fields: [
            ReadingField("correlation", .correlation) { s, p in .float(s.correlations[p]) },
        ], display: .layout),
        // Over the correlation's 0.3 s window: balance = left less right level (dB, + to the
        // left), mid (L + R)/2 and side (L − R)/2 levels, dBFS.
        Reading("stereo", "balance (left less right level, dB) and mid and side levels ((L+R)/2, (L-R)/2, dBFS) of channel pairs",
                scope: .pair, features: .correlation, fields: [
            ReadingField("balance_db", .dB, metric: MetricFamily("jackvu_pair_balance_db", "The left leg's level less the right's over the correlation's 0.3 s window (+ to the left; --send stereo).", whenSent: true)) { s, p in .float(s.pairLevels[p].balanceDB) },
            ReadingField("mid_dbfs", .dBFS, metric: MetricFamily("jackvu_pair_mid_dbfs", "The level of (L + R)/2 over the same window.", whenSent: true)) { s, p in .float(s.pairLevels[p].midDBFS) },
            ReadingField("side_dbfs", .dBFS, metric: MetricFamily("jackvu_pair_side_dbfs", "The level of (L - R)/2 over the same window.", whenSent: true)) { s, p in .float(s.pairLevels[p].sideDBFS) },
        ], onRequest: true),
        // Per programme: PREFIX/loudness/NAME for the default programme (JSON in "loudness"),
        // PREFIX/programme/P/NAME for programme P of --programme (JSON in "programmes": {"P": …}).
        Reading("loudness", "EBU R 128 loudness", scope: .programme, features: .loudness, messages: [
            ReadingMessage("momentary", [ReadingField("momentary_lufs", .LUFS, metric: MetricFamily("jackvu_momentary_loudness_lufs", "Momentary loudness (400 ms, EBU R 128)."), meter: MeterScales.momentary) { s, p in .double(s.programmes[p].loudness.momentary) }]),
            ReadingMessage("shortterm", [ReadingField("short_term_lufs", .LUFS, metric: MetricFamily("jackvu_short_term_loudness_lufs", "Short-term loudness (3 s, EBU R 128)."), meter: MeterScales.shortTerm) { s, p in .double(s.programmes[p].loudness.shortTerm) }]),
            ReadingMessage("integrated", [ReadingField("integrated_lufs", .LUFS, metric: MetricFamily("jackvu_integrated_loudness_lufs", "Integrated loudness since the start or a reset (gated, ITU-R BS.1770-4)."), summary: [
                SummaryLine(.programme, "integrated", order: 0), SummaryLine(.file, "integrated", order: 0),
            ], report: ReportColumn(.integrated, "integrated_lufs", name: "integrated", heading: "Integrated", order: 0)) { s, p in .double(s.programmes[p].loudness.integrated) }]),
            ReadingMessage("range", [ReadingField("range_lu", .LU, metric: MetricFamily("jackvu_loudness_range_lu", "Loudness range (EBU Tech 3342)."), summary: [
                SummaryLine(.programme, "loudness range", level: false, order: 1),
                SummaryLine(.file, "loudness range", key: "loudness_range_lu", level: false, order: 1),
            ], report: ReportColumn(.range, "range_lu", name: "loudness range", heading: "LRA", floor: -1, order: 1)) { s, p in .double(s.programmes[p].loudness.range) }]),
            ReadingMessage("max_momentary", [ReadingField("max_momentary_lufs", .LUFS, metric: MetricFamily("jackvu_max_momentary_loudness_lufs", "Largest momentary loudness since the start or a reset."), summary: [
                SummaryLine(.programme, "max momentary", order: 2), SummaryLine(.file, "max momentary", order: 2),
            ], report: ReportColumn(.maxMomentary, "max_momentary_lufs", name: "max momentary", heading: "Max M", order: 2)) { s, p in .double(s.programmes[p].loudness.maxMomentary) }]),
            ReadingMessage("max_shortterm", [ReadingField("max_short_term_lufs", .LUFS, metric: MetricFamily("jackvu_max_short_term_loudness_lufs", "Largest short-term loudness since the start or a reset."), summary: [
                SummaryLine(.programme, "max short-term", order: 3), SummaryLine(.file, "max short-term", order: 3),
            ], report: ReportColumn(.maxShortTerm, "max_shortterm_lufs", name: "max short-term", heading: "Max S", order: 3)) { s, p in .double(s.programmes[p].loudness.maxShortTerm) }]),
        ], display: .layout),
        Reading("plr", "peak-to-loudness ratio, LU (max true peak - integrated)", scope: .programme,
                features: [.loudness, .truePeak], fields: [
            ReadingField("plr_lu", .LU, metric: MetricFamily(
                "jackvu_plr_lu", "Peak-to-loudness ratio: the programme's max true peak minus its integrated loudness (EBU R 128 s1); -200 before the first gated block."),
                summary: [SummaryLine(.programme, "PLR", level: false, order: 5), SummaryLine(.file, "PLR", level: false, order: 6)],
                report: ReportColumn(.plr, "plr_lu", name: "PLR", heading: "PLR", floor: -.infinity, order: 6)) { s, p in
                let plr = LoudnessMeter.peakToLoudnessRatio(
                    maxTruePeakDBTP: Double(s.maxTruePeakDBTP(programme: p)), integratedLUFS: s.programmes[p].loudness.integrated)
                return plr.isFinite ? .double(plr) : .missing
            },
        ], display: .extra(label: "PLR", decimals: 1)),
        Reading("programme", "the programme's max true peak (dBTP), integrated duration (s) and pause state", scope: .programme,
                features: [.loudness, .truePeak], messages: [
            ReadingMessage("max_truepeak", [ReadingField("max_true_peak_dbtp", .dBTP, metric: MetricFamily("jackvu_max_true_peak_dbtp", "Largest true peak of the programme's channels since the start or a reset."), summary: [SummaryLine(.programme, "max true peak", order: 4)],
                report: ReportColumn(.maxTruePeak, "max_truepeak_dbtp", name: "max true peak", heading: "Max TP", order: 4)) { s, p in
                .float(s.maxTruePeakDBTP(programme: p))
            }]),
            ReadingMessage("duration", [ReadingField("duration_s", .seconds, metric: MetricFamily("jackvu_integrated_duration_seconds", "Audio the integrated loudness covers (paused time left out)."), summary: [SummaryLine(.programme, "duration", level: false, order: 6, jsonOrder: 8)]) { s, p in .double(s.programmes[p].measuredSeconds) }]),
            ReadingMessage("paused", [ReadingField("paused", .flag, metric: MetricFamily("jackvu_programme_paused", "1 while the programme's integration is paused (control input, i key, transport stopped).")) { s, p in .bool(s.programmes[p].paused) }]),
        ]),
        // Where the short-term loudness has been: % of the short-term windows in each 1 LU
        // bin from −70 LUFS up (70 bins; the last from −1 LUFS up), recomputed once a second.
        Reading("histogram", "the short-term loudness histogram: % of short-term windows per 1 LU bin from -70 LUFS (70 bins)",
                scope: .programme, features: .histogram, fields: [
            ReadingField("histogram_pct", .percent) { s, p in .floats(s.programmes[p].histogram) },
        ], onRequest: true),
        // Only for a maximum a fault set (an xrun, a connection change near it): its cause and
        // the maximum over the clean periods (OSC: a message per such maximum; JSON: null).
        Reading("maxfault", "what set the programme's maxima when a fault did, and the clean maxima", scope: .programme,
                features: [.loudness, .truePeak], messages: [
            ReadingMessage("maxfault_truepeak", [
                ReadingField("max_true_peak_cause", .text, metric: MetricFamily(
                    "jackvu_max_true_peak_by_fault", "1 while the programme's max true peak is one an xrun set (see the JSON's max_true_peak_cause), 0 otherwise.",
                    value: { s, p in s.maxTruePeakFault(programme: p) == nil ? 0 : 1 })) { s, p in s.maxTruePeakFault(programme: p).map { .text($0.cause.rawValue) } ?? .missing },
                ReadingField("clean_max_true_peak_dbtp", .dBTP, metric: MetricFamily(
                    "jackvu_clean_max_true_peak_dbtp", "Largest true peak of the programme's channels over the periods no xrun disturbed (equal to jackvu_max_true_peak_dbtp unless a fault set that).",
                    value: { s, p in s.maxTruePeakFault(programme: p)?.clean ?? Double(s.maxTruePeakDBTP(programme: p)) })) { s, p in s.maxTruePeakFault(programme: p).map { .double($0.clean) } ?? .missing },
            ]),
            ReadingMessage("maxfault_momentary", [
                ReadingField("max_momentary_cause", .text) { s, p in s.programmes[p].loudness.maxMomentaryFault.map { .text($0.cause.rawValue) } ?? .missing },
                ReadingField("clean_max_momentary_lufs", .LUFS) { s, p in s.programmes[p].loudness.maxMomentaryFault.map { .double($0.clean) } ?? .missing },
            ]),
            ReadingMessage("maxfault_shortterm", [
                ReadingField("max_short_term_cause", .text) { s, p in s.programmes[p].loudness.maxShortTermFault.map { .text($0.cause.rawValue) } ?? .missing },
                ReadingField("clean_max_short_term_lufs", .LUFS) { s, p in s.programmes[p].loudness.maxShortTermFault.map { .double($0.clean) } ?? .missing },
            ]),
        ], display: .layout),
        Reading("target", "loudness relative to the programme's target (LU) and its state", scope: .programme,
                features: [.loudness, .truePeak], messages: [
            ReadingMessage("relative", [
                ReadingField("relative_momentary_lu", .LU) { s, p in Readings.relative(s, p, \.momentary) },
                ReadingField("relative_short_term_lu", .LU) { s, p in Readings.relative(s, p, \.shortTerm) },
                ReadingField("relative_integrated_lu", .LU, metric: MetricFamily(
                    "jackvu_target_deviation_lu", "Integrated loudness minus the target (EBU Tech 3341's LU mode).", withTarget: true)) { s, p in Readings.relative(s, p, \.integrated) },
            ]),
            ReadingMessage("state", [
                ReadingField("state", .text, metric: MetricFamily(
                    "jackvu_target_state", "1 for the programme's state against its target (pending, within, above, below, true-peak-over, short-term-over), 0 for the others.",
                    .stateSet(LoudnessTarget.State.allCases.map(\.rawValue)), withTarget: true)) { s, p in s.state(programme: p).map { .text($0.rawValue) } ?? .missing },
                ReadingField("profile", .text) { s, p in s.programmes[p].target.map { .text($0.profile) } ?? .missing },
                ReadingField("target_lufs", .LUFS, metric: MetricFamily("jackvu_target_lufs", "The programme's target loudness (--target).", withTarget: true)) { s, p in s.programmes[p].target.map { .double($0.targetLUFS) } ?? .missing },
                ReadingField("tolerance_lu", .LU) { s, p in s.programmes[p].target.map { .double($0.toleranceLU) } ?? .missing },
                ReadingField("true_peak_limit_dbtp", .dBTP) { s, p in s.programmes[p].target.map { .double($0.maxTruePeakDBTP) } ?? .missing },
            ]),
        ], display: .layout),
        // This jackvu, live only: PREFIX/KIND; JSON in its own object.
        // While the server is stalled (connected, no process cycles) or gone: PREFIX/server s
        // (`stalled`, `gone`), the readings beside it frozen; nothing while it runs.
        Reading("server", "the JACK server's state while it is stalled or gone", scope: .instance, fields: [
            ReadingField("state", .text) { s, _ in
                s.status.serverStalled ? .text("stalled") : s.status.serverConnected ? .missing : .text("gone")
            },
        ], jsonObject: "server", liveOnly: true, display: .layout),
        Reading("status", "status counters", scope: .instance, fields: [
            ReadingField("sample_rate_hz", .Hz, wire: .oscOnly, metric: MetricFamily("jackvu_sample_rate_hertz", "The JACK server's sample rate.")) { s, _ in .int(s.sampleRate) },
            ReadingField("xruns", .count, metric: MetricFamily("jackvu_xruns_total", "Xruns the JACK server reported.", .counter)) { s, _ in .int(s.status.xruns) },
            ReadingField("overruns", .count, metric: MetricFamily("jackvu_overruns_total", "Process cycles whose audio was dropped because the analysis fell behind.", .counter)) { s, _ in .int(s.status.overruns) },
            ReadingField("skipped_updates", .count, metric: MetricFamily(
                "jackvu_output_skipped_total", "Updates an output skipped because it was still busy (stdout, displays).", .counter)) { s, _ in .int(s.status.outputSkipped) },
            ReadingField("cycles", .count, metric: MetricFamily("jackvu_process_cycles_total", "Process cycles run.", .counter)) { s, _ in .wrappingInt(s.status.cycles) },
            ReadingField("buffer_frames", .count, wire: .jsonOnly, metric: MetricFamily("jackvu_buffer_frames", "The JACK server's buffer size (frames per period).")) { s, _ in .int(s.status.bufferFrames) },
            ReadingField("osc_send_failures", .count, metric: MetricFamily("jackvu_osc_send_failures_total", "OSC datagrams that could not be sent (--osc).", .counter)) { s, _ in .int(s.status.oscSendFailures) },
            ReadingField("osc_port_dropped", .count, metric: MetricFamily("jackvu_osc_port_dropped_total", "OSC packets dropped on the osc MIDI port.", .counter)) { s, _ in .int(s.status.oscPortDropped) },
            ReadingField("control_rejected", .count, metric: MetricFamily(
                "jackvu_control_rejected_total", "Control packets ignored (--listen: malformed, unknown, oversized).", .counter)) { s, _ in .int(s.status.controlRejected) },
            ReadingField("server_connected", .flag, metric: MetricFamily(
                "jackvu_server_connected", "1 while a JACK server is connected, 0 while jackvu waits for it.")) { s, _ in .bool(s.status.serverConnected) },
            ReadingField("reconnects", .count, metric: MetricFamily("jackvu_reconnects_total", "Reconnections to a JACK server that had gone away.", .counter)) { s, _ in .int(s.status.reconnects) },
            ReadingField("nonfinite_samples", .count, metric: MetricFamily(
                "jackvu_nonfinite_samples_total", "Non-finite or absurd input samples replaced by silence.", .counter)) { s, _ in .int(s.status.nonFiniteSamples) },
            ReadingField("inputs_connected", .count, metric: MetricFamily("jackvu_inputs_connected", "Inputs with at least one connection.")) { s, _ in .int(s.status.inputsConnected) },
            // 0 while the server is gone or stalled (connected, but no process cycle for the
            // watchdog's time): the readings beside it are the last ones, frozen.
            ReadingField("server_responding", .flag, wire: .jsonOnly, metric: MetricFamily(
                "jackvu_server_responding",
                "1 while the JACK server runs process cycles; 0 while it is gone or stalled (connected, no cycle for 4 periods, at least 1.5 s): the readings are then frozen.")) { s, _ in .bool(s.status.serverResponding) },
            ReadingField("outputs", .count, wire: .jsonOnly) { s, _ in .counters(s.outputCounters) },
        ], jsonObject: "status", liveOnly: true, display: .layout),
        Reading("callback", "process callback timing", scope: .instance, fields: [
            ReadingField("mean", .microseconds, metric: MetricFamily(
                "jackvu_callback_mean_seconds", "Mean duration of the process callback since the start.", value: { s, _ in Double(s.status.callbackMeanMicroseconds) / 1e6 })) { s, _ in .float(s.status.callbackMeanMicroseconds) },
            ReadingField("p99", .microseconds, metric: MetricFamily(
                "jackvu_callback_p99_seconds", "99th percentile of the process callback's duration (to a factor of two).",
                value: { s, _ in Double(s.status.callbackP99Microseconds) / 1e6 })) { s, _ in .float(s.status.callbackP99Microseconds) },
            ReadingField("max", .microseconds, metric: MetricFamily(
                "jackvu_callback_max_seconds", "Longest process callback since the start.", value: { s, _ in Double(s.status.callbackMaxMicroseconds) / 1e6 })) { s, _ in .float(s.status.callbackMaxMicroseconds) },
        ], jsonObject: "callback_us", liveOnly: true),
        // With `--alarm`: PREFIX/alarms iis… — alarms active now, raises since the start, then
        // the active ones as "KIND SUBJECT"; JSON also the changes since the last update. Each
        // change also goes out on its own as PREFIX/alarm (AddressSpace).
        Reading("alarms", "alarm states (--alarm)", scope: .instance, fields: [
            ReadingField("active", .count) { s, _ in s.alarms.states.isEmpty ? .missing : .int(s.alarms.activeCount) },
            ReadingField("raised", .count) { s, _ in s.alarms.states.isEmpty ? .missing : .int(s.alarms.raisedTotal) },
            ReadingField("list", .text) { s, _ in
                s.alarms.states.isEmpty ? .missing : .strings(s.alarms.states.filter(\.active).map(\.name))
            },
            ReadingField("events", .text, wire: .jsonOnly) { s, _ in s.alarms.states.isEmpty ? .missing : .alarmEvents(s.alarms.fresh) },
            ReadingField("command_failures", .count, wire: .jsonOnly) { s, _ in s.alarms.states.isEmpty ? .missing : .int(s.alarms.commandFailures) },
            ReadingField("commands_dropped", .count, wire: .jsonOnly) { s, _ in s.alarms.states.isEmpty ? .missing : .int(s.alarms.commandsDropped) },
        ], jsonObject: "alarms", liveOnly: true, display: .layout),
    ]

    /// The reading of a kind.
    public static func reading(_ kind: String) -> Reading? { table.first { $0.kind == kind } }

    /// A loudness reading of programme `p` relative to its target, LU (EBU Tech 3341's "LU"
    /// mode: the reading minus the target; silence's floor, −120 LUFS, reads −97 LU against
    /// −23); missing without a target.
    public static func relative(_ s: Snapshot, _ p: Int, _ reading: KeyPath<LoudnessSnapshot, Double>) -> ReadingValue {
        guard let target = s.programmes[p].target else { return .missing }
        return .double(s.programmes[p].loudness[keyPath: reading] - target.targetLUFS)
    }

    /// One further programme reading (`ReadingDisplay.extra`) of a snapshot, as the
    /// displays and the file summary show it.
    public struct Extra: Sendable {
        /// Its JSON key, label and unit ("plr_lu", "PLR", "LU").
        public let key: String, label: String, unit: String
        /// Its value (not finite: none yet) and the decimals it is shown to.
        public let value: Double
        public let decimals: Int
        /// The value as shown: "12.0", or "-" when there is none.
        public var text: String { value.isFinite ? fixed(value, decimals) : "-" }
    }

    /// The further readings (`ReadingDisplay.extra`) of a snapshot's `subject` in `scope` — the
    /// default programme's unless said — in the table's order.
    public static func extras(_ s: Snapshot, scope: Reading.Scope = .programme, subject: Int = 0) -> [Extra] {
        table.flatMap { r -> [Extra] in
            guard case .extra(let label, let decimals)? = r.display, r.scope == scope else { return [] }
            return r.fields.filter { $0.wire != .oscOnly }.map { f in
                Extra(key: f.key, label: label, unit: f.unit.rawValue, value: f.value(s, subject).number ?? .nan, decimals: decimals)
            }
        }
    }

    /// The further readings' descriptions, for a display that draws them from the JSON
    /// (the browser page's hello): key, label, unit, decimals and scope (`channel`, `programme`).
    public static var extrasJSON: String {
        table.flatMap { r -> [String] in
            guard case .extra(let label, let decimals)? = r.display else { return [] }
            return r.fields.filter { $0.wire != .oscOnly }.map { f in
                "{\"key\": \(jsonString(f.key)), \"label\": \(jsonString(label)), \"unit\": \(jsonString(f.unit.rawValue)), "
                    + "\"decimals\": \(decimals), \"scope\": \(jsonString(r.scope == .channel ? "channel" : r.scope == .pair ? "pair" : "programme"))}"
            }
        }.joined(separator: ", ")
    }

    /// The kinds whose readings the displays show.
    public static var displayed: MessageKinds {
        MessageKinds(table.indices.filter { table[$0].display != nil }.map { MessageKind(index: $0) })
    }
}

/// What `--meter` puts on the meter ports, and the scale its 0 … 1 value spans: each meter is
/// a reading field's (`ReadingField.meter`), and the ports' values, their pretty-names in JACK's
/// metadata and the displays' bar all derive from it. The scales' colour zones: dBFS meters
/// green below −18, yellow to −6, red above (true peak: −6 and −1 dBTP, the R 128 limit); VU
/// yellow from −3, red from 0 VU; PPM yellow from the alignment mark, red from the permitted
/// maximum (+9 dB; DIN 0 dB; BBC 4 and 6); K-System green to 0, yellow to +4, red above
/// (Katz); loudness yellow from −23 LUFS (the R 128 target), red from −18 (the +18 scale of
/// EBU Tech 3341, −59 … −5 LUFS).
public enum MeterScales {
    /// What a scale depends on.
    public struct Parameters: Sendable, Equatable {
        /// `--meter-floor`, dBFS.
        public var floorDBFS: Double
        public var ppmType: PPMType
        /// `--k-scale`.
        public var kHeadroom: Int
        public init(floorDBFS: Double, ppmType: PPMType, kHeadroom: Int) {
            self.floorDBFS = floorDBFS
            self.ppmType = ppmType
            self.kHeadroom = kHeadroom
        }
    }

    /// Every meter `--meter` takes, with its reading and field, in the order `--help` lists
    /// them (`ReadingMeter.listed`, then the table's).
    public static var meters: [(meter: ReadingMeter, reading: Reading, field: ReadingField)] {
        let all = Readings.table.flatMap { r in r.fields.compactMap { f in f.meter.map { ($0, r, f) } } }
        return all.enumerated().sorted { ($0.element.0.listed, $0.offset) < ($1.element.0.listed, $1.offset) }.map(\.element)
    }

    /// The meters `--meter` takes, with what each is.
    public static var names: [(name: String, summary: String)] { meters.map { ($0.meter.name, $0.meter.summary) } }

    /// The meter named `name`, with its reading and field.
    public static func meter(_ name: String) -> (meter: ReadingMeter, reading: Reading, field: ReadingField)? {
        meters.first { $0.meter.name == name }
    }

    /// The scale of meter `name` (nil: no such meter).
    public static func scale(_ name: String, _ p: Parameters) -> DisplayScale? { meter(name)?.meter.scale(p) }

    /// Marks every `step` of a dBFS scale from `floor` to 0, the step by the floor's depth.
    static func dBFSMarks(_ floor: Double) -> [Double] {
        DisplayScale.marks(floor...0, step: floor <= -90 ? 20.0 : floor <= -40 ? 10.0 : floor <= -20 ? 6.0 : 3.0)
    }

    static let rms = ReadingMeter("rms", "RMS display level, --meter-floor .. 0 dBFS (with --fall)", live: .rmsLevel, listed: 0) { p in
        DisplayScale(name: "RMS", unit: "dBFS", range: p.floorDBFS...0, yellowFrom: -18, redFrom: -6, marks: dBFSMarks(p.floorDBFS), holdIsSamplePeak: true)
    }
    static let peak = ReadingMeter("peak", "digital peak with hold, --meter-floor .. 0 dBFS", live: .heldPeak, listed: 1) { p in
        DisplayScale(name: "Peak", unit: "dBFS", range: p.floorDBFS...0, yellowFrom: -18, redFrom: -6, marks: dBFSMarks(p.floorDBFS), holdIsSamplePeak: true)
    }
    static let truePeak = ReadingMeter("truepeak", "true peak, --meter-floor .. 0 dBTP", live: .truePeak, listed: 2) { p in
        DisplayScale(name: "True peak", unit: "dBTP", range: p.floorDBFS...0, yellowFrom: -6, redFrom: -1, marks: dBFSMarks(p.floorDBFS), holdIsSamplePeak: true)
    }
    static let vu = ReadingMeter("vu", "VU, -20 .. +3 VU", live: .vu, listed: 3) { _ in
        DisplayScale(name: "VU", unit: "VU", range: VUMeter.scale, yellowFrom: -3, redFrom: 0,
                     marks: [-20, -10, -7, -5, -3, -2, -1, 0, 1, 2, 3], holdIsSamplePeak: false)
    }
    static let ppm = ReadingMeter("ppm", "PPM on the --ppm type's scale", live: .ppm, listed: 4) { p in
        let scale = p.ppmType.scale
        let (yellow, red, step): (Double, Double, Double)
        switch p.ppmType {
        case .ebu: (yellow, red, step) = (0, 9, 4)
        case .nordic: (yellow, red, step) = (0, 9, 6)
        case .din: (yellow, red, step) = (-9, 0, 5)
        case .bbc: (yellow, red, step) = (4, 6, 1)
        }
        return DisplayScale(
            name: "PPM \(p.ppmType.rawValue.uppercased())", unit: p.ppmType == .bbc ? "mark" : "dB", range: scale,
            yellowFrom: yellow, redFrom: red, marks: DisplayScale.marks(scale, step: step), holdIsSamplePeak: false)
    }
    static let k = ReadingMeter("k", "K-System, -40 .. +K dB (--k-scale)", live: .k, listed: 5) { p in
        let range = -40...Double(p.kHeadroom)
        return DisplayScale(name: "K-\(p.kHeadroom)", unit: "dB", range: range, yellowFrom: 0, redFrom: 4,
                            marks: DisplayScale.marks(range, step: 4), holdIsSamplePeak: false)
    }
    static let momentary = ReadingMeter("momentary", "momentary loudness, -59 .. -5 LUFS", live: .momentary, listed: 6) { _ in loudness("Momentary") }
    static let shortTerm = ReadingMeter("shortterm", "short-term loudness, -59 .. -5 LUFS", live: .shortTerm, listed: 7) { _ in loudness("Short-term") }

    static func loudness(_ name: String) -> DisplayScale {
        DisplayScale(name: name, unit: "LUFS", range: -59...(-5), yellowFrom: -23, redFrom: -18,
                     marks: stride(from: -59.0, through: -5, by: 6).map { $0 }, holdIsSamplePeak: false)
    }
}
