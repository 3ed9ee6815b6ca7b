#if canImport(Glibc)
import Glibc
#endif
import Analysis
import DSP
import LoudnessLog
import Outputs
import Realtime


/// What takes each analysis result on the analysis thread before it is published: the meter
/// ports' values, the MIDI notes, the alarms (with the alarm ports' values and `--on-alarm`),
/// the log, the loudness history. A host of the analysis — the command and the in-process client, `jackvu analyze`,
/// the LV2 plugin — hands every result to each observer in its list and knows none by name;
/// one factory (`Observers.make`) builds the list from what the host asks for
/// (`ObserverPlan`), as `OutputFactory` builds the outputs'.
public protocol AnalysisObserver: AnyObject {
    /// Takes one result, on the analysis thread, before it is published; may set what it
    /// owns in it (the alarms' states), never after.
    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer)
    /// After `frames` frames were analysed, with those frames (channel `c`'s at `planar + c ×
    /// stride`): called by a host that reads its audio in pieces of its own (a file), not
    /// only at the hops.
    func analysed(_ analyzer: Analyzer, planar: UnsafePointer<Float>, stride: Int, frames: Int)
    /// The analysis has taken all the audio there is for now (live: at each look at the ring,
    /// every period, whether or not a hop was published): for what follows the audio closer
    /// than the hops do (the meter ports).
    func caughtUp(_ analyzer: Analyzer)
    /// An event of the run (`reset`, `pause`, `mark`, a stall), for the log. From any thread
    /// (the control input's marks): only the log's takes it, into its writer's queue.
    func event(_ kind: String, programme: Int?, detail: String?)
    /// The run starts (threads of its own start: the command's, the log's).
    func start()
    /// The analysis ends, on its thread (the notes sounding are turned off). `fault`: one the
    /// audio after the last update may hold (live: `FaultLabels.tailFault`), for the log's
    /// last blocks; nil for a file or a plugin's host.
    func finish(fault: FaultCause?)
    /// The run ends, after the analysis and output threads (the command's and the log's
    /// threads stop, the log's last rows written).
    func stop()
}

extension AnalysisObserver {
    public func analysed(_ analyzer: Analyzer, planar: UnsafePointer<Float>, stride: Int, frames: Int) {}
    public func caughtUp(_ analyzer: Analyzer) {}
    public func event(_ kind: String, programme: Int?, detail: String?) {}
    public func start() {}
    public func finish(fault: FaultCause?) {}
    public func stop() {}
}

/// What a host asks the observer factory for.
public struct ObserverPlan {
    /// The meter ports (live): channel `c`'s `--meter` reading at `values[c]` for `channels`.
    public var meterPorts: (values: AtomicFloatArray, channels: Int)?
    /// The `notes` port's queue (`--midi-notes`; live only), for this many channels.
    public var notes: (queue: PacketQueue, channels: Int)?
    /// The alarms (`--alarm`), judged at every result on `clock`.
    public var alarms: AlarmEngine?
    public var clock: AlarmClock = .live
    /// `--on-alarm`'s runner, which each change is queued to.
    public var command: AlarmCommandRunner?
    /// The alarm ports: each programme's 1 or 0 at `values[first + p]` for `count` of them.
    public var alarmPorts: (values: AtomicFloatArray, first: Int, count: Int)?
    /// Keep the changes (`AlarmObserver.changes`) and hand each result's out in it (a file's
    /// stream and summary; live, the output thread hands out what it has not yet).
    public var keepsChanges = false
    /// The loudness log (`--log`), and when its blocks are taken.
    public var log: LogWriter?
    public var logTiming: LogTiming = .hops
    /// The displays' loudness history.
    public var history: LoudnessHistory?

    public init() {}

    /// When the log takes its blocks: at each published result, stamped by the log's clock
    /// (live, a plugin); or at each 100 ms of the audio read, stamped from `origin` on (a
    /// file: as if its audio had started then), kept for a report when `keep`.
    public enum LogTiming {
        case hops
        case blocks(programmes: [Programme], origin: Double, keep: Bool)
    }
}

/// The clock the alarms are judged on.
public enum AlarmClock: Sendable {
    /// Live: the monotonic clock; the log's wall time (the wall clock without a log).
    case live
    /// A file: the audio's own time; as wall time, `origin` plus it.
    case audio(origin: Double)
    /// A plugin: the audio's own time (a host may render faster than real time); the log's
    /// wall time (the wall clock without a log).
    case audioOnWall

    func times(_ s: Snapshot, log: LogWriter?) -> (monotonic: Double, unix: Double) {
        switch self {
        case .live: (s.publishedSeconds, log?.time(monotonic: s.publishedSeconds) ?? LogWriter.unixNow())
        case .audio(let origin): (s.audioTime, origin + s.audioTime)
        case .audioOnWall: (s.audioTime, log?.time(monotonic: s.publishedSeconds) ?? LogWriter.unixNow())
        }
    }
}

extension Snapshot {
    /// When the host published this result, on the monotonic clock (s): read once by the host
    /// and shared by every observer that stamps the result (the alarms' changes, the log's
    /// blocks), so that they agree; the clock now when the host did not say.
    var publishedSeconds: Double {
        Double(publishedNanoseconds > 0 ? publishedNanoseconds : monotonicNanoseconds()) / 1e9
    }
}

/// The observers a host asked for, in the order each result reaches them, and the handles a
/// host reads back (the alarms' changes, the blocks kept).
public final class ObserverList: @unchecked Sendable {
    // @unchecked Sendable: immutable; `observe`, `analysed` and `finish` are called by the
    // analysis thread only, `event` from any (see `AnalysisObserver.event`).
    private let observers: [any AnalysisObserver]
    public let alarms: AlarmObserver?
    public let blocks: BlockLogObserver?

    init(_ observers: [any AnalysisObserver], alarms: AlarmObserver?, blocks: BlockLogObserver?) {
        self.observers = observers
        self.alarms = alarms
        self.blocks = blocks
    }

    public func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) {
        for o in observers { o.observe(&snapshot, analyzer: analyzer) }
    }

    public func analysed(_ analyzer: Analyzer, planar: UnsafePointer<Float>, stride: Int, frames: Int) {
        for o in observers { o.analysed(analyzer, planar: planar, stride: stride, frames: frames) }
    }

    public func caughtUp(_ analyzer: Analyzer) {
        for o in observers { o.caughtUp(analyzer) }
    }

    public func event(_ kind: String, programme: Int? = nil, detail: String? = nil) {
        for o in observers { o.event(kind, programme: programme, detail: detail) }
    }

    public func start() { for o in observers { o.start() } }
    public func finish(fault: FaultCause? = nil) { for o in observers { o.finish(fault: fault) } }
    public func stop() { for o in observers { o.stop() } }
}

public enum Observers {
    /// The observers `plan` asks for, in the order each result reaches them: the meter ports,
    /// the notes, the alarms (whose changes the log records), the log, the loudness history.
    public static func make(_ plan: ObserverPlan) -> ObserverList {
        var list: [any AnalysisObserver] = []
        if let meters = plan.meterPorts { list.append(MeterPortsObserver(values: meters.values, channels: meters.channels)) }
        if let notes = plan.notes { list.append(NoteObserver(channels: notes.channels, queue: notes.queue)) }
        let alarms = plan.alarms.map {
            AlarmObserver($0, clock: plan.clock, command: plan.command, log: plan.log, ports: plan.alarmPorts, keepsChanges: plan.keepsChanges)
        }
        if let alarms { list.append(alarms) }
        var blocks: BlockLogObserver?
        switch plan.logTiming {
        case .hops:
            if let log = plan.log { list.append(HopLogObserver(log: log, programmes: log.programmeCount)) }
        case let .blocks(programmes, origin, keep):
            if plan.log != nil || keep {
                blocks = BlockLogObserver(programmes: programmes, kept: keep, writer: plan.log, origin: origin)
                list.append(blocks!)
            }
        }
        if let history = plan.history { list.append(HistoryObserver(history)) }
        return ObserverList(list, alarms: alarms, blocks: blocks)
    }
}

/// The meter ports (`--meter`): each channel's reading as the process callback writes it on
/// its CV port. Taken whenever the analysis has caught up with the audio (every period), not
/// at each published result, so that a level step reaches the port within a period or two.
final class MeterPortsObserver: AnalysisObserver {
    private let values: AtomicFloatArray
    private let channels: Int

    init(values: AtomicFloatArray, channels: Int) {
        self.values = values
        self.channels = min(channels, values.count)
    }

    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) {}

    func caughtUp(_ analyzer: Analyzer) {
        for c in 0..<channels { values[c] = analyzer.meterValue(channel: c) }
    }
}

/// The `notes` port: the pitch as MIDI notes (`--midi-notes`).
final class NoteObserver: AnalysisObserver {
    private var follower: NoteFollower
    private let queue: PacketQueue

    init(channels: Int, queue: PacketQueue) {
        follower = NoteFollower(channels: channels)
        self.queue = queue
    }

    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) { follower.update(snapshot) { queue.push($0) } }
    func finish(fault: FaultCause?) { follower.allOff { queue.push($0) } }
}

/// The displays' loudness history: a point a second of audio.
final class HistoryObserver: AnalysisObserver {
    private let history: LoudnessHistory
    private var recorder: HistoryRecorder
    /// The analyser's frames when the history last took a reading.
    private var frames = 0

    init(_ history: LoudnessHistory) {
        self.history = history
        recorder = HistoryRecorder(programmes: history.programmes.count)
    }

    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) {
        // The analyser starts again from 0 frames after a rate change.
        let now = analyzer.framesSeen
        let elapsed = Double(max(0, now - frames)) / Double(analyzer.sampleRate)
        frames = now
        recorder.take(snapshot, elapsed: elapsed, now: Double(snapshot.publishedNanoseconds) / 1e9, into: history)
    }
}

/// The alarms (`--alarm`): evaluated at every result on the host's clock; their states go
/// into the snapshot and the alarm ports, each change to `--on-alarm`'s queue and the log.
public final class AlarmObserver: AnalysisObserver, @unchecked Sendable {
    // @unchecked Sendable: used by the analysis thread only, after `init`.
    private let engine: AlarmEngine
    private let clock: AlarmClock
    private let command: AlarmCommandRunner?
    private let log: LogWriter?
    private let ports: (values: AtomicFloatArray, first: Int, count: Int)?
    private let keepsChanges: Bool
    /// The changes so far (with `keepsChanges`), timed as the clock says.
    public private(set) var changes: [AlarmEvent] = []

    init(_ engine: AlarmEngine, clock: AlarmClock, command: AlarmCommandRunner?, log: LogWriter?,
         ports: (values: AtomicFloatArray, first: Int, count: Int)?, keepsChanges: Bool) {
        self.engine = engine
        self.clock = clock
        self.command = command
        self.log = log
        self.ports = ports
        self.keepsChanges = keepsChanges
    }

    public func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) {
        let (monotonic, unix) = clock.times(snapshot, log: log)
        let new = engine.evaluate(snapshot, monotonic: monotonic, unix: unix)
        for e in new {
            command?.enqueue(e)
            log?.alarm(e)
        }
        snapshot.alarms = engine.board
        if keepsChanges {
            changes += new
            snapshot.alarms.fresh = new
        }
        snapshot.alarms.commandFailures = command?.failures.count ?? 0
        snapshot.alarms.commandsDropped = command?.dropped.count ?? 0
        if let ports {
            for p in 0..<ports.count where ports.first + p < ports.values.count {
                ports.values[ports.first + p] = engine.board.isActive(programme: p) ? 1 : 0
            }
        }
    }

    public func start() { command?.start() }
    public func stop() { command?.stop() }
}

/// The loudness log (`--log`) at each published result: the programmes' new 100 ms blocks and
/// their peaks, faulted maxima and the chain's events (`LogRecorder`), the run's events, and a
/// wall-clock step, all on the log's clock (the start's wall time plus monotonic time), so
/// that a wall-clock step reaches none of them.
final class HopLogObserver: AnalysisObserver, @unchecked Sendable {
    // @unchecked Sendable: used by the analysis thread only, after `init`.
    private let log: LogWriter
    private let recorder: LogRecorder
    /// The wall clock's step from the log's time last said and logged, seconds.
    private var clockOffset = 0.0

    init(log: LogWriter, programmes: Int) {
        self.log = log
        recorder = LogRecorder(log: log, programmes: programmes)
    }

    /// The analysis of the latest update (its blocks and peaks after the last one: `finish`).
    private weak var analyzer: Analyzer?

    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) {
        self.analyzer = analyzer
        noticeClockStep()
        recorder.record(snapshot, analyzer: analyzer, unix: log.time(monotonic: snapshot.publishedSeconds))
    }

    func caughtUp(_ analyzer: Analyzer) { self.analyzer = analyzer }

    /// The analysis has had its last audio: the blocks and peaks after the last update, and
    /// the blocks held for late peaks, written.
    func finish(fault: FaultCause?) {
        if let analyzer { recorder.finish(analyzer: analyzer, unix: log.now(), fault: fault) } else { recorder.flush() }
    }

    func event(_ kind: String, programme: Int?, detail: String?) { log.event(kind, programme: programme, detail: detail) }

    func start() {
        log.event("start")
        log.start()
    }

    func stop() {
        recorder.flush()
        log.event("stop")
        log.stop()
    }

    /// A wall clock stepped by more than a second from the log's time (forward or back, or
    /// back again): said once per step and logged as `clock_step` (value: the step, s). The
    /// log's times go on from the monotonic clock; a restart takes the wall clock then.
    private func noticeClockStep() {
        let offset = log.wallClockOffset()
        guard abs(offset - clockOffset) > 1 else { return }
        let step = offset - clockOffset
        clockOffset = offset
        printError(
            "the wall clock stepped \(step > 0 ? "forward" : "back") by \(fixed(abs(step), 1)) s; "
                + "the log's times go on from the monotonic clock (\(fixed(offset, 1)) s from the wall clock now)")
        log.event("clock_step", detail: "wall clock \(fixed(offset, 1)) s from the log's time", value: step)
    }
}

/// A file's 100 ms loudness blocks, per programme: kept for `--report`, written to `--log`
/// with the largest true and sample peak of the audio since the block before (as the live
/// log's blocks carry them), at the log's time for the file's start (`origin`). Taken as the
/// audio is read (`analysed`), not at the hops. Each programme's latest block is written when
/// the next one completes, and the last at the end (`finish`) with the peaks of the audio
/// after it too — the file's last part of a block and its last true peaks
/// (`Analyzer.finishAudio`), which no block follows: a `jackvu report` of the log then reads
/// the file's peaks as `analyze` does.
public final class BlockLogObserver: AnalysisObserver {
    let programmes: [Programme]
    let writer: LogWriter?
    let origin: Double
    /// The blocks kept for the report (empty: none asked for).
    public private(set) var kept: [[LoggedBlock]]
    private let keep: Bool
    private var cursors: [Int]
    /// Per programme, its latest block, held for the peaks of the audio after it.
    private var blocks: HeldBlocks
    /// The analysis, for the peaks after the last piece (`finish`).
    private weak var analyzer: Analyzer?

    init(programmes: [Programme], kept keep: Bool, writer: LogWriter?, origin: Double) {
        self.programmes = programmes
        self.writer = writer
        self.origin = origin
        self.keep = keep
        kept = Array(repeating: [], count: programmes.count)
        cursors = Array(repeating: 0, count: programmes.count)
        blocks = HeldBlocks(programmes: programmes.count)
    }

    public func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) {}

    /// After `frames` frames were analysed: with a log, each channel's peaks of them (taken
    /// once) go to its programmes' next block; then the blocks completed, kept and written.
    public func analysed(_ analyzer: Analyzer, planar: UnsafePointer<Float>, stride: Int, frames: Int) {
        self.analyzer = analyzer
        if writer != nil {
            takePeaks(analyzer) { c in Double(Decibels.fromAmplitude(Vector.maxMagnitude(UnsafeBufferPointer(start: planar + c * stride, count: frames)))) }
        }
        for p in programmes.indices {
            analyzer.takeLoudnessBlocks(programme: p, after: &cursors[p]) { power, index in
                let block = LoggedBlock(t: Double(index) / 10, index: index, power: power)
                if keep { kept[p].append(block) }
                blocks.hold(programme: p, [(origin + block.t, index, power)], to: writer)
            }
        }
    }

    /// The end of the file: the peaks after the last piece (the true peak's last samples)
    /// join those since the last block, which go with it; the last blocks are written.
    public func finish(fault: FaultCause?) {
        if writer != nil, let analyzer { takePeaks(analyzer) { _ in nil } }
        for p in programmes.indices { blocks.finish(programme: p, to: writer) }
    }

    /// Each channel's true peak since the last call (taken once) and `samplePeak(c)` into its
    /// programmes' peaks since their last block.
    private func takePeaks(_ analyzer: Analyzer, samplePeak: (Int) -> Double?) {
        let peaks = (0..<analyzer.settings.channels).map { c in (analyzer.takeRecentTruePeakDBTP(channel: c), samplePeak(c)) }
        for (p, programme) in programmes.enumerated() {
            for c in programme.channels where c < peaks.count {
                blocks.raise(programme: p, truePeak: peaks[c].0, samplePeak: peaks[c].1)
            }
        }
    }
}
