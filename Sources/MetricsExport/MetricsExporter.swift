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
/// (`programme` for the one programme over every channel without `--programme`), `channel`
/// (1 … N), `pair`, `state`, and with `--alarm` `alarm` and `subject`. The set is fixed for a
/// run (see README, "Prometheus").
///
/// The families are the reading table's (`ReadingField.metric`: name, help, type — gauge,
/// counter or state set — and for which subjects), each set from its field's value, so a
/// reading added to the table reaches `/metrics` with no line here; the names are a contract
/// with a facility's alert rules and dashboards, by Prometheus' conventions, and change with no
/// JSON key or OSC address. Only the build information and the alarms' series (one per alarm,
/// whatever its subject) are this type's own. No reading is computed twice: every value is the
/// snapshot's.
public final class MetricsExporter: @unchecked Sendable {
    // @unchecked Sendable: the registry and its metrics are thread-safe; the series are built
    // once, on the output thread, before the first scrape reads them through the registry only.
    public let registry = PrometheusCollectorRegistry()
    /// Scrapes served (for the status and tests).
    public let scrapes = Realtime.Counter()

    /// One series of a table family for one subject.
    private enum Series {
        case gauge(Gauge)
        case counter(Prometheus.Counter, seen: Int)
        case states([(value: String, gauge: Gauge)])
    }
    /// Every table family's series (`ReadingField.metric`), each with its field and subject.
    private var series: [(family: MetricFamily, field: ReadingField, subject: Int, series: Series)] = []
    /// Whether the channels', pairs' and programmes' series are made (at the first update).
    private var subjectsMade = false
    /// With `--alarm`: per alarm (kind and subject) whether it is active, and its raises.
    private var alarms: [(active: Gauge, raised: Prometheus.Counter, seen: Int)] = []
    private let channelCount: Int
    /// The readings `--send` names whose families come only on request (`MetricFamily.whenSent`).
    private let sent: Set<String>

    /// `client`: the JACK client's name (a label of `jackvu_build_info`); `bits`, `stereo`: the
    /// families of those readings too (5 series per channel, 3 per pair), when `--send` names
    /// them (the readings are computed then).
    public init(client: String, channels: Int, bits: Bool = false, stereo: Bool = false) {
        channelCount = channels
        sent = Set((bits ? ["bits"] : []) + (stereo ? ["stereo"] : []))
        let info = registry.makeGauge(
            descriptor: MetricsExporter.named("jackvu_build_info", "Always 1: the jackvu version and JACK client name of this instance."),
            labels: [("version", JackVUVersion.string), ("client", client)])
        info.set(to: 1)
        // This instance's series from the start (a scrape before the first update has them).
        series = makeSeries(Snapshot(channels: 0, barCount: 0, programmes: [], pairs: []), scopes: [.instance])
    }

    /// The channel count this exporter was made for.
    public var channelsExpected: Int { channelCount }

    /// Sets every metric from an update. On the output thread only.
    public func record(_ s: Snapshot) {
        if !subjectsMade {
            series += makeSeries(s, scopes: [.channel, .pair, .programme])
            subjectsMade = true
        }
        for i in series.indices {
            let t = series[i]
            // Only gauges and counters have a number; a state set reads its field's text.
            var number: Double { t.family.value?(s, t.subject) ?? t.field.value(s, t.subject).number ?? .nan }
            switch t.series {
            case .gauge(let gauge): gauge.set(to: Self.finite(number))
            case .counter(let counter, var seen):
                let v = number
                MetricsExporter.advance(counter, to: v.isFinite ? Int(v) : 0, seen: &seen)
                series[i].series = .counter(counter, seen: seen)
            case .states(let states):
                let now: String? = if case .text(let text) = t.field.value(s, t.subject) { text } else { nil }
                for (value, gauge) in states { gauge.set(to: value == now ? 1 : 0) }
            }
        }
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
    }

    /// The series of every family the reading table declares for readings of `scopes`, per
    /// subject: `channel`, `programme`, `pair` labels, none for the instance.
    private func makeSeries(_ s: Snapshot, scopes: [Reading.Scope]) -> [(family: MetricFamily, field: ReadingField, subject: Int, series: Series)] {
        var out: [(family: MetricFamily, field: ReadingField, subject: Int, series: Series)] = []
        for reading in Readings.table where scopes.contains(reading.scope) {
            for field in reading.fields {
                guard let family = field.metric, !family.whenSent || sent.contains(reading.kind) else { continue }
                let subjects: [(Int, [(String, String)])]
                switch reading.scope {
                case .channel: subjects = s.channels.indices.map { ($0, [("channel", String($0 + 1))]) }
                case .programme:
                    subjects = s.programmes.indices.filter { !family.withTarget || s.programmes[$0].target != nil }
                        .map { ($0, [("programme", s.programmes[$0].shownName)]) }
                case .instance: subjects = [(0, [])]
                case .pair: subjects = s.pairs.indices.map { q in
                    (q, s.pairs[q].programme.map { [("programme", s.programmes[$0].name), ("pair", s.pairs[q].label)] }
                        ?? [("pair", "\(s.pairs[q].left + 1)-\(s.pairs[q].right + 1)")])
                }
                }
                let descriptor = Self.named(family.name, family.help)
                for (subject, labels) in subjects {
                    let made: Series = switch family.kind {
                    case .gauge: .gauge(registry.makeGauge(descriptor: descriptor, labels: labels))
                    case .counter: .counter(registry.makeCounter(descriptor: descriptor, labels: labels), seen: 0)
                    case .stateSet(let values):
                        .states(values.map { ($0, registry.makeGauge(descriptor: descriptor, labels: labels + [("state", $0)])) })
                    }
                    out.append((family, field, subject, made))
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
