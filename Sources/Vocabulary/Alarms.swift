#if canImport(Glibc)
import Glibc
#endif
import DSP

// Alarms: conditions jackvu watches for on its own readings — a programme gone silent or
// stuck, clipping, loudness off its target, a loudspeaker pair out of phase or with a leg
// lost, the signal chain failing — each with a threshold, a time to raise and a time to
// clear (hysteresis: a pause in speech is not an incident). The worker evaluates them at
// every update on the audio's own time (so a freewheeling or file run raises at the same
// audio instants as a live one); the chain's alarms run on the monotonic clock (with the
// server gone no audio arrives). Their states and changes go into the snapshot, and so into
// every output; the command (`--on-alarm`) and the log take the changes.

/// The kinds of alarm, their subjects, units and documented defaults.
public enum AlarmKind: String, Sendable, CaseIterable {
    /// A programme's loudest channel's sample peak below `level` dBFS.
    case silence
    /// A programme's momentary loudness staying within ±`level`/2 LU (a test tone, a stuck
    /// buffer); silence does not count (its own alarm).
    case stuck
    /// A channel clipping: a run of samples at full scale, or its true peak above `level` dBTP.
    case clip
    /// A programme's true peak above its target's maximum (−1 dBTP without a target, EBU R 128).
    case truepeak
    /// A programme's short-term loudness above its target + tolerance (with a target only).
    case loudness
    /// A programme's integrated loudness outside its target's tolerance, once `level`
    /// seconds have been integrated (with a target only).
    case integrated
    /// A loudspeaker pair's phase correlation below `level` (both legs carrying signal).
    case phase
    /// One leg of a pair below `level` dBFS (RMS) while the other is at least 20 dB above it.
    case leg
    /// The JACK server gone, or stalled (connected but running no process cycles: `ServerWatchdog`).
    case server
    /// More than `level` xruns in the last minute.
    case xruns
    /// More than `level` overruns (audio dropped because the analysis fell behind) in the last minute.
    case overruns
    /// Fewer inputs connected than the most that were connected since the start.
    case disconnected

    public enum Scope: Sendable { case programme, channel, pair, instance }

    public var scope: Scope {
        switch self {
        case .silence, .stuck, .truepeak, .loudness, .integrated: return .programme
        case .clip: return .channel
        case .phase, .leg: return .pair
        case .server, .xruns, .overruns, .disconnected: return .instance
        }
    }

    /// The unit of the value it reports (`levelMeaning` says the threshold's).
    public var unit: String {
        switch self {
        case .silence, .leg: return "dBFS"
        case .stuck: return "LUFS"
        case .loudness, .integrated: return "LU"
        case .clip, .truepeak: return "dBTP"
        case .phase: return "correlation"
        case .xruns, .overruns: return "per minute"
        case .server: return "state"
        case .disconnected: return "inputs"
        }
    }

    /// The defaults: threshold, seconds to raise, seconds to clear. Sources: silence as
    /// silentjack's −40 dB, with the 10 s a broadcast silence sensor typically waits (10–30 s)
    /// and 2 s of audio back to clear; phase at −0.3 as the issue and common practice for
    /// mono compatibility; true peak at EBU R 128's −1 dBTP; the rest jackvu's choices
    /// (docs/alarms-and-log.md).
    public var defaults: AlarmSettings {
        switch self {
        case .silence: return AlarmSettings(level: -40, raise: 10, clear: 2)
        case .stuck: return AlarmSettings(level: 1, raise: 30, clear: 1)
        case .clip: return AlarmSettings(level: 0, raise: 0, clear: 2)
        case .truepeak: return AlarmSettings(level: -1, raise: 0, clear: 2)
        case .loudness: return AlarmSettings(level: 0, raise: 10, clear: 5)
        case .integrated: return AlarmSettings(level: 60, raise: 0, clear: 0)
        case .phase: return AlarmSettings(level: -0.3, raise: 3, clear: 2)
        case .leg: return AlarmSettings(level: -60, raise: 3, clear: 2)
        case .server: return AlarmSettings(level: 0, raise: 0, clear: 0)
        case .xruns: return AlarmSettings(level: 1, raise: 0, clear: 10)
        case .overruns: return AlarmSettings(level: 0, raise: 0, clear: 10)
        case .disconnected: return AlarmSettings(level: 0, raise: 1, clear: 0)
        }
    }

    /// What `level` means, for `--help` and errors.
    public var levelMeaning: String {
        switch self {
        case .silence: return "level: dBFS (sample peak) below which the programme is silent"
        case .stuck: return "level: LU the momentary loudness must move by (the value reported: the momentary loudness, LUFS)"
        case .clip: return "level: dBTP above which a true peak is a clip"
        case .truepeak: return "level: dBTP maximum without a target (a target's own maximum otherwise)"
        case .loudness: return "level: LU allowed above target + tolerance"
        case .integrated: return "level: seconds integrated before the alarm may raise"
        case .phase: return "level: correlation below which a pair is out of phase"
        case .leg: return "level: dBFS (RMS) below which a leg is lost"
        case .server: return "level: unused (the value reported: 1 running, 0 gone, -1 stalled)"
        case .xruns, .overruns: return "level: the count a minute that may pass"
        case .disconnected: return "level: unused"
        }
    }
}

/// An alarm's threshold (`level`, in its kind's unit) and times, seconds.
public struct AlarmSettings: Sendable, Equatable {
    public var level: Double
    public var raise: Double
    public var clear: Double
    public init(level: Double, raise: Double, clear: Double) {
        self.level = level
        self.raise = raise
        self.clear = clear
    }
}

/// One `--alarm` rule: a kind with its settings.
public struct AlarmRule: Sendable, Equatable {
    public var kind: AlarmKind
    public var settings: AlarmSettings

    public init(kind: AlarmKind, settings: AlarmSettings? = nil) {
        self.kind = kind
        self.settings = settings ?? kind.defaults
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Parses `--alarm` values: `all` (every kind with its defaults), `KIND`,
    /// `KIND:level=L,raise=S,clear=S` (any of the three), or a comma list of kinds
    /// (`silence,clip`). Later rules of a kind replace earlier ones (`merge`).
    public static func parse(_ text: String) throws(ParseError) -> [AlarmRule] {
        if text == "all" { return AlarmKind.allCases.map { AlarmRule(kind: $0) } }
        guard let colon = text.firstIndex(of: ":") else {
            var out: [AlarmRule] = []
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let kind = AlarmKind(rawValue: String(name)) else { throw unknown(String(name)) }
                out.append(AlarmRule(kind: kind))
            }
            return out
        }
        let name = String(text[..<colon])
        guard let kind = AlarmKind(rawValue: name) else { throw unknown(name) }
        var s = kind.defaults
        for pair in text[text.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = Double(parts[1]), value.isFinite else {
                throw ParseError(description: "'\(text)': expected KEY=NUMBER (level, raise, clear), got '\(pair)'")
            }
            switch parts[0] {
            case "level": s.level = value
            case "raise", "clear":
                guard value >= 0, value <= 86400 else {
                    throw ParseError(description: "'\(text)': \(parts[0]) must be 0 to 86400 seconds")
                }
                if parts[0] == "raise" { s.raise = value } else { s.clear = value }
            default:
                throw ParseError(description: "'\(text)': unknown setting '\(parts[0])' (level, raise, clear; \(kind.levelMeaning))")
            }
        }
        return [AlarmRule(kind: kind, settings: s)]
    }

    private static func unknown(_ name: String) -> ParseError {
        ParseError(description: "unknown alarm '\(name)' (all, \(AlarmKind.allCases.map(\.rawValue).joined(separator: ", ")))")
    }

    /// Rules in order, a later rule of a kind replacing an earlier one.
    public static func merge(_ rules: [AlarmRule]) -> [AlarmRule] {
        var out: [AlarmRule] = []
        for r in rules {
            if let i = out.firstIndex(where: { $0.kind == r.kind }) { out[i] = r } else { out.append(r) }
        }
        return out
    }
}

/// One alarm of one subject (a programme, a channel, a pair, the instance) and where it stands.
public struct AlarmState: Sendable, Equatable {
    public var kind: AlarmKind
    /// `programme/NAME` (or `programme` for the default one), `ch/N`, `pair/P` or
    /// `programme/NAME/pair/L-R`, `jack`.
    public var subject: String
    /// The programme it belongs to (an index into `Snapshot.programmes`), or nil.
    public var programme: Int?
    public var active = false
    /// The value that raised or cleared it, in the kind's unit (the latest while active).
    public var value = 0.0
    /// When it last changed, Unix seconds.
    public var since = 0.0
    /// Times it was raised since the start.
    public var raised = 0

    /// `KIND SUBJECT`: how messages and the banner name it.
    public var name: String { "\(kind.rawValue) \(subject)" }
}

/// One raise or clear.
public struct AlarmEvent: Sendable, Equatable {
    /// 1, 2, … since the start.
    public var sequence: Int
    public var kind: AlarmKind
    public var subject: String
    public var programme: Int?
    public var raised: Bool
    public var value: Double
    /// Unix seconds (wall clock), and the audio time (seconds analysed) it happened at.
    public var unixTime: Double
    public var audioTime: Double
    /// For a true-peak or clip alarm raised near a fault on the bus (an xrun: `FaultCause`),
    /// the fault: the peak may be the fault's, not the programme's. nil otherwise.
    public var cause: FaultCause?

    public init(sequence: Int, kind: AlarmKind, subject: String, programme: Int?, raised: Bool, value: Double, unixTime: Double, audioTime: Double) {
        self.sequence = sequence
        self.kind = kind
        self.subject = subject
        self.programme = programme
        self.raised = raised
        self.value = value
        self.unixTime = unixTime
        self.audioTime = audioTime
    }

    public var state: String { raised ? "raised" : "cleared" }

    /// As a JSON object: `{"seq": 3, "alarm": "silence", "subject": "programme/News",
    /// "state": "raised", "value": -80.2, "unit": "dBFS", "time": "2026-11-25T03:21:07.125Z",
    /// "audio_time_s": 12.3}`.
    public var json: String {
        "{\"seq\": \(sequence), \"alarm\": \"\(kind.rawValue)\", \"subject\": \(jsonString(subject)), \"state\": \"\(state)\", "
            + "\"value\": \(ReadingValue.double(value).json), \"unit\": \"\(kind.unit)\", \"time\": \"\(AlarmEvent.iso8601(unixTime))\", "
            + "\"audio_time_s\": \(ReadingValue.double(audioTime).json)"
            + (cause.map { ", \"cause\": \"\($0.rawValue)\"" } ?? "") + "}"
    }

    /// Unix seconds as ISO 8601 UTC with milliseconds: `2026-11-25T03:21:07.125Z`.
    public static func iso8601(_ unix: Double) -> String {
        // Years 0 to 9999 only: beyond, or not finite, no date (a log's absurd time).
        guard unix.isFinite, unix >= -62_167_219_200, unix < 253_402_300_800 else { return "invalid time \(unix)" }
        var t = time_t(unix.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        let ms = Int(((unix - unix.rounded(.down)) * 1000).rounded(.down))
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(msText)Z"
    }
}

/// The alarms' part of a snapshot: every alarm's state and the latest changes.
public struct AlarmBoard: Sendable {
    public var states: [AlarmState] = []
    /// The latest changes (at most `recentLimit`), oldest first: an output that skipped
    /// snapshots takes those newer than the last it sent.
    public var recent: [AlarmEvent] = []
    public static let recentLimit = 64
    /// Changes not yet handed out by the output thread (set there, per update).
    public var fresh: [AlarmEvent] = []
    /// `--on-alarm` runs that failed (non-zero exit, signal, timeout, not started), and
    /// changes dropped because too many were waiting for the command.
    public var commandFailures = 0
    public var commandsDropped = 0
    public init() {}

    public var activeCount: Int { states.reduce(0) { $0 + ($1.active ? 1 : 0) } }
    public var raisedTotal: Int { states.reduce(0) { $0 + $1.raised } }
    /// Whether any alarm of programme `p` is active.
    public func isActive(programme p: Int) -> Bool { states.contains { $0.active && $0.programme == p } }
}

/// Evaluates the alarm rules on each snapshot. One thread (the worker).
public final class AlarmEngine: @unchecked Sendable {
    // @unchecked Sendable: used by one thread at a time.
    public let rules: [AlarmRule]
    public private(set) var board = AlarmBoard()
    private var tracks: [Track] = []
    private var built = false
    private var sequence = 0
    /// The most inputs connected at once so far.
    private var mostConnected = 0
    /// (monotonic seconds, xruns, overruns) a second apart over the last minute.
    private var history: [(t: Double, xruns: Int, overruns: Int)] = []

    private struct Track {
        var rule: AlarmRule
        /// The subject's index (programme, channel or pair).
        var index: Int
        var badSince: Double?
        var goodSince: Double?
        /// Stuck: the level the window started at and when.
        var anchor = 0.0
        var anchorSince = 0.0
        var lastClips = 0
    }

    public init(rules: [AlarmRule]) {
        self.rules = rules
    }

    /// Builds the alarm list for a snapshot's layout (once).
    private func build(_ s: Snapshot) {
        built = true
        for rule in rules {
            switch rule.kind.scope {
            case .programme:
                for p in s.programmes.indices {
                    if rule.kind == .loudness || rule.kind == .integrated, s.programmes[p].target == nil { continue }
                    add(rule, p, subject: AlarmEngine.programmeSubject(s.programmes[p].name), programme: p)
                }
            case .channel:
                for c in s.channels.indices {
                    let p = s.programmes.firstIndex { $0.channels.contains(c) && !$0.name.isEmpty }
                    add(rule, c, subject: "ch/\(c + 1)", programme: p ?? (s.programmes.count == 1 ? 0 : nil))
                }
            case .pair:
                for q in s.pairs.indices {
                    let pair = s.pairs[q]
                    let subject = pair.programme.map { "\(AlarmEngine.programmeSubject(s.programmes[$0].name))/pair/\(pair.label)" } ?? "pair/\(pair.label)"
                    add(rule, q, subject: subject, programme: pair.programme ?? (s.programmes.count == 1 ? 0 : nil))
                }
            case .instance:
                add(rule, 0, subject: "jack", programme: nil)
            }
        }
    }

    /// `programme/NAME`, or `programme` for the default programme.
    public static func programmeSubject(_ name: String) -> String { name.isEmpty ? "programme" : "programme/\(name)" }

    private func add(_ rule: AlarmRule, _ index: Int, subject: String, programme: Int?) {
        tracks.append(Track(rule: rule, index: index))
        board.states.append(AlarmState(kind: rule.kind, subject: subject, programme: programme))
    }

    /// Evaluates every alarm on `s`; `monotonic` and `unix` are seconds on those clocks now.
    /// Returns the changes (also kept in `board.recent`).
    @discardableResult
    public func evaluate(_ s: Snapshot, monotonic: Double, unix: Double) -> [AlarmEvent] {
        if !built { build(s) }
        guard !tracks.isEmpty else { return [] }
        let audio = s.audioTime
        mostConnected = max(mostConnected, s.status.inputsConnected)
        if history.last.map({ monotonic - $0.t >= 1 }) ?? true {
            history.append((monotonic, s.status.xruns, s.status.overruns))
            history.removeAll { monotonic - $0.t > 60 }
        }
        var events: [AlarmEvent] = []
        for i in tracks.indices {
            let kind = tracks[i].rule.kind
            let t = kind.scope == .instance ? monotonic : audio
            // Signal alarms only while audio arrives: a gone or stalled server freezes them as they are.
            guard let (bad, value) = condition(&tracks[i], s, time: t) else { continue }
            var state = board.states[i]
            let settings = tracks[i].rule.settings
            if !state.active {
                tracks[i].goodSince = nil
                if bad {
                    let since = tracks[i].badSince ?? t
                    tracks[i].badSince = since
                    // (Stuck counts its raise time in its condition.)
                    if t - since >= (kind == .stuck ? 0 : settings.raise) {
                        state.active = true
                        state.raised += 1
                        state.value = value
                        state.since = unix
                        var raised = event(state, raised: true, unix: unix, audio: audio)
                        // A peak raised near an xrun says so: it may be the fault's.
                        if kind == .truepeak || kind == .clip { raised.cause = s.peakFault }
                        events.append(raised)
                    }
                } else {
                    tracks[i].badSince = nil
                }
            } else {
                tracks[i].badSince = nil
                if bad {
                    tracks[i].goodSince = nil
                    state.value = value
                } else {
                    let since = tracks[i].goodSince ?? t
                    tracks[i].goodSince = since
                    if t - since >= settings.clear {
                        state.active = false
                        state.value = value
                        state.since = unix
                        events.append(event(state, raised: false, unix: unix, audio: audio))
                    }
                }
            }
            board.states[i] = state
        }
        if !events.isEmpty {
            board.recent.append(contentsOf: events)
            if board.recent.count > AlarmBoard.recentLimit { board.recent.removeFirst(board.recent.count - AlarmBoard.recentLimit) }
        }
        return events
    }

    private func event(_ state: AlarmState, raised: Bool, unix: Double, audio: Double) -> AlarmEvent {
        sequence += 1
        return AlarmEvent(
            sequence: sequence, kind: state.kind, subject: state.subject, programme: state.programme, raised: raised,
            value: state.value, unixTime: unix, audioTime: audio)
    }

    /// Whether the alarm's condition holds now, and its value; nil when it cannot be judged
    /// now (no audio: the server is gone).
    private func condition(_ track: inout Track, _ s: Snapshot, time t: Double) -> (Bool, Double)? {
        let level = track.rule.settings.level
        let kind = track.rule.kind
        if kind.scope != .instance && (!s.status.serverConnected || s.status.serverStalled) { return nil }
        switch kind {
        case .silence:
            let peak = s.programmes[track.index].channels.reduce(Double(Decibels.floor)) { max($0, Double(s.channels[$1].peakDBFS)) }
            return (peak < level, peak)
        case .stuck:
            let m = s.programmes[track.index].loudness.momentary
            // Silence (below the absolute gate) is the silence alarm's.
            if m <= -70 || abs(m - track.anchor) > level / 2 {
                track.anchor = m
                track.anchorSince = t
                return (false, m)
            }
            // Stuck once the level has stayed put for the raise time (counted here, from the
            // window's start: a step in the level starts it again, and so clears an active
            // alarm after the clear time).
            return (t - track.anchorSince >= track.rule.settings.raise, m)
        case .clip:
            let ch = s.channels[track.index]
            let clipped = ch.clips > track.lastClips || Double(ch.truePeakDBTP) > level
            track.lastClips = ch.clips
            return (clipped, Double(ch.truePeakDBTP))
        case .truepeak:
            let p = s.programmes[track.index]
            let limit = p.target?.maxTruePeakDBTP ?? level
            let peak = p.channels.reduce(Double(Decibels.floor)) { max($0, Double(s.channels[$1].truePeakDBTP)) }
            return (peak > limit, peak)
        case .loudness:
            let p = s.programmes[track.index]
            guard let target = p.target else { return (false, 0) }
            let over = p.loudness.shortTerm - (target.targetLUFS + target.toleranceLU)
            return (over > level, p.loudness.shortTerm - target.targetLUFS)
        case .integrated:
            let p = s.programmes[track.index]
            guard let target = p.target, p.loudness.integrated > LoudnessMeter.floor else { return (false, 0) }
            let off = p.loudness.integrated - target.targetLUFS
            return (p.measuredSeconds >= level && abs(off) > target.toleranceLU, off)
        case .phase:
            let pair = s.pairs[track.index]
            let r = Double(s.correlations[track.index])
            let quiet = [pair.left, pair.right].contains { s.channels[$0].rmsDBFS < -60 }
            return (!quiet && r < level, r)
        case .leg:
            let pair = s.pairs[track.index]
            let a = Double(s.channels[pair.left].rmsDBFS), b = Double(s.channels[pair.right].rmsDBFS)
            let lost = min(a, b) < level && max(a, b) >= level + 20
            return (lost, min(a, b))
        case .server:
            // 1 running, 0 gone, −1 stalled (connected, no process cycles).
            let state: Double = !s.status.serverConnected ? 0 : s.status.serverStalled ? -1 : 1
            return (state != 1, state)
        case .xruns, .overruns:
            guard let first = history.first else { return (false, 0) }
            let now = kind == .xruns ? s.status.xruns : s.status.overruns
            let then = kind == .xruns ? first.xruns : first.overruns
            let count = Double(max(0, now - then))
            return (count > level, count)
        case .disconnected:
            return (s.status.inputsConnected < mostConnected, Double(s.status.inputsConnected))
        }
    }

}
