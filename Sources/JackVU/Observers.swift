import Analysis
import Outputs
import Realtime

/// What takes each analysis result on the worker thread before it is published: the MIDI
/// notes, the alarms and the log (with the alarm ports' values), the loudness history. The
/// worker hands every result to each observer in its list and knows none by name; one factory
/// (`Observers.make`) builds the list, as `OutputFactory` builds the outputs'.
protocol AnalysisObserver: AnyObject {
    /// Takes one result, on the worker thread, before it is published; may set what it owns
    /// in it (the alarms' states), never after.
    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer)
    /// An event of the run (`reset`, `pause`, a stall), for the log.
    func event(_ kind: String, programme: Int?, detail: String?)
    /// The run ends (the notes sounding are turned off).
    func finish()
}

extension AnalysisObserver {
    func event(_ kind: String, programme: Int?, detail: String?) {}
    func finish() {}
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
    func finish() { follower.allOff { queue.push($0) } }
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

extension AlarmsAndLog: AnalysisObserver {
    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer) { observe(&snapshot, analyzer: analyzer, meterValues: meterValues) }
}

enum Observers {
    /// A live run's observers, in the order each result reaches them: the notes (with
    /// `--midi-notes`: `notes`, the port's queue), the alarms and the log (when either is on),
    /// the loudness history (for the displays).
    static func make(channels: Int, notes: PacketQueue?, alarmsAndLog: AlarmsAndLog?, history: LoudnessHistory?) -> [any AnalysisObserver] {
        var list: [any AnalysisObserver] = []
        if let notes { list.append(NoteObserver(channels: channels, queue: notes)) }
        if let alarmsAndLog, alarmsAndLog.isActive { list.append(alarmsAndLog) }
        if let history { list.append(HistoryObserver(history)) }
        return list
    }
}
