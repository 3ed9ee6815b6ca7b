#if canImport(Glibc)
import Glibc
#endif
import Analysis
import DSP
import LoudnessLog
import Outputs
import Realtime

/// What watches the readings (`--alarm`, `--on-alarm`, `--log`): at every update the worker
/// publishes, it evaluates the alarms (their states go into the snapshot, the alarm ports
/// and the command's queue) and hands the log the programmes' new 100 ms blocks, their peaks
/// and the chain's events. Runs on the worker thread; the command and the log have threads
/// of their own and only ever take from queues.
final class Watcher: @unchecked Sendable {
    // @unchecked Sendable: used by the worker thread only, after `init`.
    private let alarms: AlarmEngine?
    let runner: AlarmCommandRunner?
    let log: LogWriter?
    private let channels: Int
    private let alarmPorts: Int
    /// Per programme: the log's block cursor, and the largest true and sample peak of the
    /// hops since its last block.
    private var cursors: [Int]
    private var peaks: [(truePeak: Double?, samplePeak: Double?, fault: FaultCause?)]
    private var lastServer = true
    private var lastReconnects = 0
    private var lastXruns = 0
    private var lastOverruns = 0
    private var lastChainLog = 0.0

    /// The wall clock's step from the log's time last said and logged, seconds.
    private var clockOffset = 0.0
    /// Per programme and maximum (true peak, momentary, short-term): the faulted maximum last
    /// logged (nil: clean).
    private var faultsLogged: [[Double?]]

    /// `logFile`: the log's file as the start claimed it (nil: not yet, or no `--log`).
    init(configuration c: Configuration, clientName: String, logFile: LogFile? = nil) {
        let programmes = c.resolvedProgrammes
        alarms = c.alarms.isEmpty ? nil : AlarmEngine(rules: c.alarms)
        runner = c.onAlarm.map {
            AlarmCommandRunner(command: $0, timeout: c.onAlarmTimeout, clientName: clientName, programmeNames: programmes.map(\.name))
        }
        log = c.log.map {
            LogWriter(path: $0, programmes: programmes.map { LoggedProgramme(name: $0.name, channels: $0.channels, target: $0.target) },
                      retentionDays: c.logRetentionDays, file: logFile)
        }
        channels = c.channels
        alarmPorts = c.alarmPortCount
        cursors = Array(repeating: 0, count: programmes.count)
        faultsLogged = Array(repeating: [nil, nil, nil], count: programmes.count)
        peaks = Array(repeating: (nil, nil, nil), count: programmes.count)
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
        if let log {
            record(snapshot, analyzer: analyzer, log: log, unix: unix)
            recordFaultedMaxima(snapshot, log: log)
        }
    }

    /// A held maximum an xrun or a connection change set: logged as `max_fault` (value: the
    /// maximum; detail: which, the cause and the clean maximum) when it becomes labelled and
    /// again each time it rises by a dB/LU or more while labelled (a loudness maximum climbs
    /// with every update while its window fills: one event per update was hundreds), so the
    /// report's incidents say which peaks were not the programme's.
    private func recordFaultedMaxima(_ s: Snapshot, log: LogWriter) {
        for p in s.programmes.indices where p < faultsLogged.count {
            let l = s.programmes[p].loudness
            let maxima: [(String, String, Double, MaximumFault?)] = [
                ("true peak", "dBTP", Double(s.maxTruePeakDBTP(programme: p)), s.maxTruePeakFault(programme: p)),
                ("momentary", "LUFS", l.maxMomentary, l.maxMomentaryFault),
                ("short-term", "LUFS", l.maxShortTerm, l.maxShortTermFault),
            ]
            for (i, (name, unit, value, fault)) in maxima.enumerated() {
                guard let fault else {
                    faultsLogged[p][i] = nil
                    continue
                }
                if let logged = faultsLogged[p][i], value < logged + 1 { continue }
                faultsLogged[p][i] = value
                let clean = fault.clean > Double(Decibels.floor) ? "\(fixed(fault.clean, 1)) \(unit)" : "none yet"
                log.event(
                    "max_fault", programme: p,
                    detail: "max \(name) \(fixed(value, 1)) \(unit) set by \(fault.cause == .xrun ? "an xrun" : "a connection change"); clean max \(clean)",
                    value: value)
            }
        }
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

    private func record(_ s: Snapshot, analyzer: Analyzer, log: LogWriter, unix: Double) {
        for p in s.programmes.indices where p < cursors.count {
            // The hop's peaks wait for the programme's next block.
            var tp = peaks[p].truePeak, sp = peaks[p].samplePeak
            // A fault near this update's audio (`FaultLabels`): its blocks carry it, so that
            // the report keeps the clean maxima beside the others.
            let fault = s.blockFault ?? peaks[p].fault
            for c in s.programmes[p].channels where c < s.channels.count {
                let t = Double(s.channels[c].truePeakDBTP), x = Double(s.channels[c].peakDBFS)
                if t > Double(Decibels.floor) { tp = max(tp ?? t, t) }
                if x > Double(Decibels.floor) { sp = max(sp ?? x, x) }
            }
            var taken: [(Double, Int)] = []
            let lost = analyzer.takeLoudnessBlocks(programme: p, after: &cursors[p]) { power, index in taken.append((power, index)) }
            if lost > 0 { log.event("blocks_lost", programme: p, value: Double(lost)) }
            // Each block's end: the newest is now, the ones before 100 ms apart.
            for (i, (power, index)) in taken.enumerated() {
                let last = i == taken.count - 1
                log.block(programme: p, t: unix - Double(taken.count - 1 - i) * 0.1, index: index, power: power,
                          truePeak: last ? tp : nil, samplePeak: last ? sp : nil, fault: fault)
            }
            peaks[p] = taken.isEmpty ? (tp, sp, fault) : (nil, nil, nil)
        }
        // The chain: the server lost and back, reconnects, and xruns and overruns (summed over
        // at most a second).
        let st = s.status
        if st.serverConnected != lastServer {
            log.event(st.serverConnected ? "server_back" : "server_lost")
            lastServer = st.serverConnected
        }
        if st.reconnects > lastReconnects {
            log.event("reconnect", value: Double(st.reconnects - lastReconnects))
            lastReconnects = st.reconnects
        }
        if unix - lastChainLog >= 1 {
            if st.xruns > lastXruns { log.event("xruns", value: Double(st.xruns - lastXruns)) }
            if st.overruns > lastOverruns { log.event("overruns", value: Double(st.overruns - lastOverruns)) }
            lastXruns = st.xruns
            lastOverruns = st.overruns
            lastChainLog = unix
        }
    }
}
