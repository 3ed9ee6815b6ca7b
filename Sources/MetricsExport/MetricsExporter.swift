import DSP
import Outputs
import Prometheus
import Realtime
import Synchronization
import Version

/// Every reading a fleet's monitoring needs, as Prometheus metrics (`/metrics` on `--http`
/// and on the metrics-only `--metrics` listener): set from each update on the output thread,
/// read by a scrape on the HTTP server's threads from the registry (atomics), so a scrape
/// never touches the analysis or audio threads and never waits for them.
///
/// Names follow Prometheus' conventions: the `jackvu_` prefix, the unit as a suffix (`_lufs`,
/// `_lu`, `_dbfs`, `_dbtp`, `_seconds`, `_hertz`), `_total` for counters; labels `programme`
/// (`all` for the one programme over every channel without `--programme`), `channel` (1 …
/// N), `state`, and with `--alarm` `alarm` and `subject`. The set is fixed for a run: 17 series
/// for the instance, 5 per channel, 12 per programme and 8 more per programme with a target,
/// 2 per alarm (see README, "Prometheus").
///
/// Two sources of families. The list below, chosen once: the metric names are what a
/// facility's alert rules and dashboards are written against, a contract by Prometheus'
/// conventions (counters with `_total`, a target state as a state set, names that say the
/// quantity) that must not change when a JSON key or an OSC address does. And every family the
/// reading table declares with its field (`ReadingField.metric`: PLR, `jackvu_plr_lu`), so a
/// reading added to the table reaches `/metrics` with no line here. Either way the values come
/// from the snapshot's own readings (`LoudnessSnapshot`, `ChannelSnapshot`, the table's fields,
/// `Snapshot.state(programme:)`, `Snapshot.maxTruePeakDBTP(programme:)`): no reading is
/// computed twice.
public final class MetricsExporter: @unchecked Sendable {
    // @unchecked Sendable: the registry and its metrics are thread-safe; `channels` and
    // `programmes` are built once, on the output thread, before the first scrape reads them
    // through the registry only.
    public let registry = PrometheusCollectorRegistry()
    /// Scrapes served (for the status and tests).
    public let scrapes = Realtime.Counter()

    private struct ChannelMetrics {
        let peak, rms, truePeak, maxTruePeak: Gauge
        let clips: Prometheus.Counter
        var clipsSeen = 0
    }

    private struct ProgrammeMetrics {
        let momentary, shortTerm, integrated, range, maxMomentary, maxShortTerm, maxTruePeak, duration, paused: Gauge
        /// The max true peak over the clean periods, and 1 while the maximum is one a fault set.
        let cleanMaxTruePeak, maxTruePeakByFault: Gauge
        let deviation: Gauge?
        let target: Gauge?
        let states: [(LoudnessTarget.State, Gauge)]
    }

    private let sampleRate, bufferFrames, serverConnected, serverResponding, inputsConnected: Gauge
    private let callbackMean, callbackP99, callbackMax: Gauge
    private var totals: [(counter: Prometheus.Counter, read: (Snapshot.Status) -> Int, seen: Int)]
    private var channels: [ChannelMetrics] = []
    private var programmes: [ProgrammeMetrics] = []
    /// The reading table's families (`ReadingField.metric`): each field's gauge per subject.
    private var tableGauges: [(field: ReadingField, subject: Int, gauge: Gauge)] = []
    /// On request (`--send bits`, `--send stereo`): the bit meter per channel, the balance and
    /// mid and side levels per pair.
    private let withBits: Bool, withStereo: Bool
    private var bitMetrics: [(depth: Gauge, headroom: Gauge, quantised: Gauge, dc: Gauge, constant: Gauge)] = []
    private var stereoMetrics: [(balance: Gauge, mid: Gauge, side: Gauge)] = []
    /// With `--alarm`: per alarm (kind and subject) whether it is active, and its raises.
    private var alarms: [(active: Gauge, raised: Prometheus.Counter, seen: Int)] = []
    private let channelCount: Int

    /// `client`: the JACK client's name (a label of `jackvu_build_info`); `bits`, `stereo`: the
    /// families of those readings too (5 series per channel, 3 per pair), when `--send` names
    /// them (the readings are computed then).
    public init(client: String, channels: Int, bits: Bool = false, stereo: Bool = false) {
        channelCount = channels
        withBits = bits
        withStereo = stereo
        let r = registry
        let info = r.makeGauge(descriptor: MetricsExporter.named("jackvu_build_info", "Always 1: the jackvu version and JACK client name of this instance."), labels: [("version", JackVUVersion.string), ("client", client)])
        info.set(to: 1)
        sampleRate = r.makeGauge(descriptor: MetricsExporter.named("jackvu_sample_rate_hertz", "The JACK server's sample rate."))
        bufferFrames = r.makeGauge(descriptor: MetricsExporter.named("jackvu_buffer_frames", "The JACK server's buffer size (frames per period)."))
        serverConnected = r.makeGauge(descriptor: MetricsExporter.named("jackvu_server_connected", "1 while a JACK server is connected, 0 while jackvu waits for it."))
        serverResponding = r.makeGauge(descriptor: MetricsExporter.named("jackvu_server_responding", "1 while the JACK server runs process cycles; 0 while it is gone or stalled (connected, no cycle for 4 periods, at least 1.5 s): the readings are then frozen."))
        inputsConnected = r.makeGauge(descriptor: MetricsExporter.named("jackvu_inputs_connected", "Inputs with at least one connection."))
        callbackMean = r.makeGauge(descriptor: MetricsExporter.named("jackvu_callback_mean_seconds", "Mean duration of the process callback since the start."))
        callbackP99 = r.makeGauge(descriptor: MetricsExporter.named("jackvu_callback_p99_seconds", "99th percentile of the process callback's duration (to a factor of two)."))
        callbackMax = r.makeGauge(descriptor: MetricsExporter.named("jackvu_callback_max_seconds", "Longest process callback since the start."))
        func counter(_ name: String, _ help: String, _ read: @escaping (Snapshot.Status) -> Int) -> (Prometheus.Counter, (Snapshot.Status) -> Int, Int) {
            (r.makeCounter(descriptor: MetricsExporter.named(name, help)), read, 0)
        }
        totals = [
            counter("jackvu_xruns_total", "Xruns the JACK server reported.") { $0.xruns },
            counter("jackvu_overruns_total", "Process cycles whose audio was dropped because the analysis fell behind.") { $0.overruns },
            counter("jackvu_reconnects_total", "Reconnections to a JACK server that had gone away.") { $0.reconnects },
            counter("jackvu_process_cycles_total", "Process cycles run.") { $0.cycles },
            counter("jackvu_output_skipped_total", "Updates an output skipped because it was still busy (stdout, displays).") { $0.outputSkipped },
            counter("jackvu_osc_send_failures_total", "OSC datagrams that could not be sent (--osc).") { $0.oscSendFailures },
            counter("jackvu_osc_port_dropped_total", "OSC packets dropped on the osc MIDI port.") { $0.oscPortDropped },
            counter("jackvu_control_rejected_total", "Control packets ignored (--listen: malformed, unknown, oversized).") { $0.controlRejected },
            counter("jackvu_nonfinite_samples_total", "Non-finite or absurd input samples replaced by silence.") { $0.nonFiniteSamples },
        ]
    }

    private static func channelMetrics(_ r: PrometheusCollectorRegistry, _ c: Int) -> ChannelMetrics {
        let labels = [("channel", String(c + 1))]
        return ChannelMetrics(
            peak: r.makeGauge(descriptor: MetricsExporter.named("jackvu_channel_peak_dbfs", "Sample peak of the analysis block."), labels: labels),
            rms: r.makeGauge(descriptor: MetricsExporter.named("jackvu_channel_rms_dbfs", "RMS of the analysis block (a full-scale sine reads -3.01)."), labels: labels),
            truePeak: r.makeGauge(descriptor: MetricsExporter.named("jackvu_channel_true_peak_dbtp", "True peak (ITU-R BS.1770-4) since the previous update."), labels: labels),
            maxTruePeak: r.makeGauge(descriptor: MetricsExporter.named("jackvu_channel_max_true_peak_dbtp", "Largest true peak since the start or a reset."), labels: labels),
            clips: r.makeCounter(descriptor: MetricsExporter.named("jackvu_channel_clips_total", "Clips (runs of full-scale samples) since the start or a reset."), labels: labels))
    }

    private static func programmeMetrics(_ r: PrometheusCollectorRegistry, _ p: ProgrammeSnapshot) -> ProgrammeMetrics {
        let labels = [("programme", p.shownName)]
        func gauge(_ name: String, _ help: String) -> Gauge { r.makeGauge(descriptor: MetricsExporter.named(name, help), labels: labels) }
        let stateHelp = "1 for the programme's state against its target (pending, within, above, below, true-peak-over, short-term-over), 0 for the others."
        let states: [(LoudnessTarget.State, Gauge)] = p.target == nil ? [] : LoudnessTarget.State.allCases.map { state in
            (state, r.makeGauge(descriptor: MetricsExporter.named("jackvu_target_state", stateHelp), labels: labels + [("state", state.rawValue)]))
        }
        return ProgrammeMetrics(
            momentary: gauge("jackvu_momentary_loudness_lufs", "Momentary loudness (400 ms, EBU R 128)."),
            shortTerm: gauge("jackvu_short_term_loudness_lufs", "Short-term loudness (3 s, EBU R 128)."),
            integrated: gauge("jackvu_integrated_loudness_lufs", "Integrated loudness since the start or a reset (gated, ITU-R BS.1770-4)."),
            range: gauge("jackvu_loudness_range_lu", "Loudness range (EBU Tech 3342)."),
            maxMomentary: gauge("jackvu_max_momentary_loudness_lufs", "Largest momentary loudness since the start or a reset."),
            maxShortTerm: gauge("jackvu_max_short_term_loudness_lufs", "Largest short-term loudness since the start or a reset."),
            maxTruePeak: gauge("jackvu_max_true_peak_dbtp", "Largest true peak of the programme's channels since the start or a reset."),
            duration: gauge("jackvu_integrated_duration_seconds", "Audio the integrated loudness covers (paused time left out)."),
            paused: gauge("jackvu_programme_paused", "1 while the programme's integration is paused (control input, i key, transport stopped)."),
            cleanMaxTruePeak: gauge("jackvu_clean_max_true_peak_dbtp", "Largest true peak of the programme's channels over the periods no xrun disturbed (equal to jackvu_max_true_peak_dbtp unless a fault set that)."),
            maxTruePeakByFault: gauge("jackvu_max_true_peak_by_fault", "1 while the programme's max true peak is one an xrun set (see the JSON's max_true_peak_cause), 0 otherwise."),
            deviation: p.target == nil ? nil : gauge("jackvu_target_deviation_lu", "Integrated loudness minus the target (EBU Tech 3341's LU mode)."),
            target: p.target == nil ? nil : gauge("jackvu_target_lufs", "The programme's target loudness (--target)."),
            states: states)
    }

    /// The channel count this exporter was made for.
    public var channelsExpected: Int { channelCount }

    /// Sets every metric from an update. On the output thread only.
    public func record(_ s: Snapshot) {
        if channels.isEmpty { channels = (0..<s.channels.count).map { Self.channelMetrics(registry, $0) } }
        if programmes.isEmpty {
            programmes = s.programmes.map { Self.programmeMetrics(registry, $0) }
            tableGauges = Self.tableGauges(registry, s)
        }
        for t in tableGauges { t.gauge.set(to: Self.finite(t.field.value(s, t.subject).number ?? .nan)) }
        if alarms.isEmpty && !s.alarms.states.isEmpty {
            alarms = s.alarms.states.map { a in
                let labels = [("alarm", a.kind.rawValue), ("subject", a.subject)]
                return (registry.makeGauge(descriptor: Self.named("jackvu_alarm_active", "1 while the alarm (--alarm) is raised, 0 otherwise."), labels: labels),
                        registry.makeCounter(descriptor: Self.named("jackvu_alarms_raised_total", "Times the alarm was raised since the start."), labels: labels), 0)
            }
        }
        for i in 0..<min(alarms.count, s.alarms.states.count) {
            alarms[i].active.set(to: s.alarms.states[i].active ? 1 : 0)
            MetricsExporter.advance(alarms[i].raised, to: s.alarms.states[i].raised, seen: &alarms[i].seen)
        }
        sampleRate.set(to: Double(s.sampleRate))
        bufferFrames.set(to: Double(s.status.bufferFrames))
        serverConnected.set(to: s.status.serverConnected ? 1 : 0)
        serverResponding.set(to: s.status.serverResponding ? 1 : 0)
        inputsConnected.set(to: Double(s.status.inputsConnected))
        callbackMean.set(to: Double(s.status.callbackMeanMicroseconds) / 1e6)
        callbackP99.set(to: Double(s.status.callbackP99Microseconds) / 1e6)
        callbackMax.set(to: Double(s.status.callbackMaxMicroseconds) / 1e6)
        for i in totals.indices {
            MetricsExporter.advance(totals[i].counter, to: totals[i].read(s.status), seen: &totals[i].seen)
        }
        if withBits && bitMetrics.isEmpty {
            bitMetrics = s.channels.indices.map { c in
                let labels = [("channel", String(c + 1))]
                func gauge(_ name: String, _ help: String) -> Gauge { registry.makeGauge(descriptor: Self.named(name, help), labels: labels) }
                return (gauge("jackvu_channel_bit_depth_bits", "Bits from full scale down to the lowest bit any sample of the analysis block sets: 16 for 16-bit audio, 24 for 24-bit, more for float; 0 for digital silence (--send bits)."),
                        gauge("jackvu_channel_headroom_bits", "Bits unused above the highest bit in use (6 dB each; 32 for digital silence)."),
                        gauge("jackvu_channel_quantised_bits", "16 or 24 while every sample is a word of that size, else 0."),
                        gauge("jackvu_channel_dc_offset_dbfs", "The DC offset: the mean over about a second."),
                        gauge("jackvu_channel_constant", "1 while every sample of the analysis block is one constant, not 0 (a stuck source)."))
            }
        }
        for c in 0..<min(bitMetrics.count, s.channels.count) {
            let b = s.channels[c].bits
            bitMetrics[c].depth.set(to: Double(b.depth))
            bitMetrics[c].headroom.set(to: Double(b.headroom))
            bitMetrics[c].quantised.set(to: Double(b.quantised))
            bitMetrics[c].dc.set(to: Self.finite(Double(s.channels[c].dcDBFS)))
            bitMetrics[c].constant.set(to: b.constant ? 1 : 0)
        }
        if withStereo && stereoMetrics.isEmpty {
            stereoMetrics = s.pairs.map { pair in
                let labels = pair.programme.map { [("programme", s.programmes[$0].name), ("pair", pair.label)] }
                    ?? [("pair", "\(pair.left + 1)-\(pair.right + 1)")]
                func gauge(_ name: String, _ help: String) -> Gauge { registry.makeGauge(descriptor: Self.named(name, help), labels: labels) }
                return (gauge("jackvu_pair_balance_db", "The left leg's level less the right's over the correlation's 0.3 s window (+ to the left; --send stereo)."),
                        gauge("jackvu_pair_mid_dbfs", "The level of (L + R)/2 over the same window."),
                        gauge("jackvu_pair_side_dbfs", "The level of (L - R)/2 over the same window."))
            }
        }
        for p in 0..<min(stereoMetrics.count, s.pairLevels.count) {
            stereoMetrics[p].balance.set(to: Double(s.pairLevels[p].balanceDB))
            stereoMetrics[p].mid.set(to: Self.finite(Double(s.pairLevels[p].midDBFS)))
            stereoMetrics[p].side.set(to: Self.finite(Double(s.pairLevels[p].sideDBFS)))
        }
        for c in 0..<min(channels.count, s.channels.count) {
            let ch = s.channels[c]
            channels[c].peak.set(to: Self.finite(Double(ch.peakDBFS)))
            channels[c].rms.set(to: Self.finite(Double(ch.rmsDBFS)))
            channels[c].truePeak.set(to: Self.finite(Double(ch.truePeakDBTP)))
            channels[c].maxTruePeak.set(to: Self.finite(Double(ch.maxTruePeakDBTP)))
            MetricsExporter.advance(channels[c].clips, to: ch.clips, seen: &channels[c].clipsSeen)
        }
        for p in 0..<min(programmes.count, s.programmes.count) {
            let m = programmes[p], prog = s.programmes[p], l = prog.loudness
            m.momentary.set(to: Self.finite(l.momentary))
            m.shortTerm.set(to: Self.finite(l.shortTerm))
            m.integrated.set(to: Self.finite(l.integrated))
            m.range.set(to: Self.finite(l.range))
            m.maxMomentary.set(to: Self.finite(l.maxMomentary))
            m.maxShortTerm.set(to: Self.finite(l.maxShortTerm))
            m.maxTruePeak.set(to: Self.finite(Double(s.maxTruePeakDBTP(programme: p))))
            let fault = s.maxTruePeakFault(programme: p)
            m.cleanMaxTruePeak.set(to: Self.finite(fault?.clean ?? Double(s.maxTruePeakDBTP(programme: p))))
            m.maxTruePeakByFault.set(to: fault == nil ? 0 : 1)
            m.duration.set(to: prog.measuredSeconds)
            m.paused.set(to: prog.paused ? 1 : 0)
            if let target = prog.target {
                m.target?.set(to: target.targetLUFS)
                m.deviation?.set(to: Self.finite(l.integrated - target.targetLUFS))
                let state = s.state(programme: p)
                for (candidate, gauge) in m.states { gauge.set(to: candidate == state ? 1 : 0) }
            }
        }
    }

    /// A gauge for each field the reading table gives a family, per channel or programme.
    private static func tableGauges(_ r: PrometheusCollectorRegistry, _ s: Snapshot) -> [(field: ReadingField, subject: Int, gauge: Gauge)] {
        var out: [(field: ReadingField, subject: Int, gauge: Gauge)] = []
        for reading in Readings.table {
            for field in reading.fields {
                guard let family = field.metric else { continue }
                let subjects: [(Int, [(String, String)])]
                switch reading.scope {
                case .channel: subjects = s.channels.indices.map { ($0, [("channel", String($0 + 1))]) }
                case .programme: subjects = s.programmes.indices.map { ($0, [("programme", s.programmes[$0].shownName)]) }
                case .instance: subjects = [(0, [])]
                case .pair: subjects = s.pairs.indices.map { q in
                    (q, s.pairs[q].programme.map { [("programme", s.programmes[$0].name), ("pair", s.pairs[q].label)] }
                        ?? [("pair", "\(s.pairs[q].left + 1)-\(s.pairs[q].right + 1)")])
                }
                }
                for (subject, labels) in subjects {
                    out.append((field, subject, r.makeGauge(descriptor: named(family.name, family.help), labels: labels)))
                }
            }
        }
        return out
    }

    /// A metric's full name and help text (the name carries its unit already).
    static func named(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// A counter that follows an absolute count (which a reset may bring back to 0).
    private static func advance(_ counter: Prometheus.Counter, to value: Int, seen: inout Int) {
        if value < seen {
            counter.reset()
            seen = 0
        }
        if value > seen { counter.increment(by: Int64(value - seen)) }
        seen = value
    }

    /// Readings as Prometheus reads them: jackvu's floors (silence) stay finite.
    private static func finite(_ v: Double) -> Double { v.isFinite ? max(v, -200) : -200 }

    /// The exposition: Prometheus' text format 0.0.4, or OpenMetrics 1.0 (`openMetrics`: what
    /// a scraper asks for with `Accept: application/openmetrics-text`): the counters' families
    /// without `_total` in their TYPE and HELP lines, and `# EOF` at the end.
    ///
    /// A rendering is reused for `reuseSeconds` (per format): however fast a client asks, the
    /// registry is rendered at most a few times a second, so a flood of scrapes costs the
    /// HTTP threads little CPU and cannot starve the analysis on a small machine.
    public func exposition(openMetrics: Bool) -> String {
        exposition(openMetrics: openMetrics, at: monotonicNanoseconds())
    }

    /// The same at a given monotonic time (nanoseconds), for tests.
    func exposition(openMetrics: Bool, at now: Int) -> String {
        scrapes.add()
        if let cached = cache.withLock({ c in c[openMetrics ? 1 : 0].flatMap { now - $0.at < Int(Self.reuseSeconds * 1e9) ? $0.text : nil } }) {
            return cached
        }
        let rendered = render(openMetrics: openMetrics)
        cache.withLock { $0[openMetrics ? 1 : 0] = (now, rendered) }
        return rendered
    }

    /// How long a rendering is served again.
    public static let reuseSeconds = 0.25
    private let cache = Mutex<[(at: Int, text: String)?]>([nil, nil])

    private func render(openMetrics: Bool) -> String {
        let text = registry.emitToString()
        guard openMetrics else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        var counters = Set<String>()
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("# TYPE "), line.hasSuffix(" counter") {
                let name = line.dropFirst(7).dropLast(8)
                let family = name.hasSuffix("_total") ? String(name.dropLast(6)) : String(name)
                counters.insert(family)
                out += "# TYPE \(family) counter\n"
            } else if line.hasPrefix("# HELP ") {
                let rest = line.dropFirst(7)
                let name = rest.prefix { $0 != " " }
                let family = name.hasSuffix("_total") ? String(name.dropLast(6)) : String(name)
                out += "# HELP \(family)" + rest.dropFirst(name.count) + "\n"
            } else {
                out += line + "\n"
            }
        }
        _ = counters
        return out + "# EOF\n"
    }

    /// The content types of the two formats.
    public static let textContentType = "text/plain; version=0.0.4; charset=utf-8"
    public static let openMetricsContentType = "application/openmetrics-text; version=1.0.0; charset=utf-8"

    /// Whether a scraper's Accept header asks for OpenMetrics.
    public static func wantsOpenMetrics(accept: String?) -> Bool {
        accept?.contains("application/openmetrics-text") ?? false
    }
}
