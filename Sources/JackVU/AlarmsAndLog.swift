#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Settings
import DSP
import LoudnessLog
import Outputs
import Realtime

/// What watches the readings (`--alarm`, `--on-alarm`, `--log`): at every update the worker
/// publishes, it evaluates the alarms (their states go into the snapshot, the alarm ports
/// and the command's queue) and hands the log the programmes' new 100 ms blocks, their peaks
/// and the chain's events. Runs on the worker thread; the command and the log have threads
/// of their own and only ever take from queues.
final class AlarmsAndLog: @unchecked Sendable {
    // @unchecked Sendable: used by the worker thread only, after `init`.
    private let alarms: AlarmEngine?
    let runner: AlarmCommandRunner?
    let log: LogWriter?
    private let channels: Int
    private let alarmPorts: Int
    /// The meter and alarm ports' values (the alarm ports' are set here).
    let meterValues: AtomicFloatArray
    /// The log's blocks, peaks, faulted maxima and chain events.
    private let recorder: LogRecorder?

    /// The wall clock's step from the log's time last said and logged, seconds.
    private var clockOffset = 0.0

    /// `logFile`: the log's file as the start claimed it (nil: not yet, or no `--log`).
    /// `programmes`: the programmes metered, with their targets; `ports`: where the meter
    /// ports' and alarm ports' values go.
    init(_ c: AlarmingSettings, log logging: LogSettings, programmes: [Programme], ports: PortPlan, meterValues: AtomicFloatArray,
         clientName: String, logFile: LogFile? = nil) {
        self.meterValues = meterValues
        alarms = c.rules.isEmpty ? nil : AlarmEngine(rules: c.rules)
        runner = c.command.map {
            AlarmCommandRunner(command: $0, timeout: c.commandTimeout, clientName: clientName, programmeNames: programmes.map(\.name))
        }
        log = logging.path.map {
            LogWriter(path: $0, programmes: programmes.map { LoggedProgramme(name: $0.name, channels: $0.channels, target: $0.target) },
                      retentionDays: logging.retentionDays, file: logFile)
        }
        channels = ports.channels
        alarmPorts = ports.alarms.count
        recorder = log.map { LogRecorder(log: $0, programmes: programmes.count) }
    }

    var isActive: Bool { alarms != nil || log != nil }

    func start() {
        runner?.start()
        log?.event("start")
        log?.start()
    }

    func stop() {
        log?.event("stop")
        runner?.stop()
        log?.stop()
    }

    /// A chain event for the log (resets, pauses, marks), from any thread.
    func event(_ kind: String, programme: Int? = nil, detail: String? = nil) {
        log?.event(kind, programme: programme, detail: detail)
    }

    /// At each published update, on the worker thread.
    func observe(_ snapshot: inout Snapshot, analyzer: Analyzer, meterValues: AtomicFloatArray) {
        // With a log, its clock (the start's wall time plus monotonic time), so that alarms
        // and blocks share it and a wall-clock step reaches neither.
        let unix = log?.now() ?? LogWriter.unixNow()
        let monotonic = Double(monotonicNanoseconds()) / 1e9
        if let log { noticeClockStep(log) }
        if let alarms {
            let changes = alarms.evaluate(snapshot, monotonic: monotonic, unix: unix)
            for e in changes {
                runner?.enqueue(e)
                log?.alarm(e)
            }
            snapshot.alarms = alarms.board
            snapshot.alarms.commandFailures = runner?.failures.count ?? 0
            snapshot.alarms.commandsDropped = runner?.dropped.count ?? 0
            for p in 0..<alarmPorts where channels + p < meterValues.count {
                meterValues[channels + p] = alarms.board.isActive(programme: p) ? 1 : 0
            }
        }
        recorder?.record(snapshot, analyzer: analyzer, unix: unix)
    }

    /// A wall clock stepped by more than a second from the log's time (forward or back, or
    /// back again): said once per step and logged as `clock_step` (value: the step, s). The
    /// log's times go on from the monotonic clock; a restart takes the wall clock then.
    private func noticeClockStep(_ log: LogWriter) {
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
