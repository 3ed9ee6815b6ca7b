import Analysis
import DSP
import Outputs

/// What goes into the loudness log at each update a host of the analysis publishes: the
/// programmes' new 100 ms blocks with the peaks of their hops, the maxima a fault set
/// (`max_fault`), and the chain's events (the server lost and back, reconnects, xruns and
/// overruns). One recorder per log; the log's observer (`Consumers.HopLogObserver`, the live
/// client's and the LV2 plugin's) hands it the snapshots, on the analysis thread (the log
/// writes on a thread of its own, from its queue).
public final class LogRecorder: @unchecked Sendable {
    // @unchecked Sendable: used by one thread (the one publishing updates) after `init`.
    public let log: LogWriter
    /// Per programme: the log's block cursor.
    private var cursors: [Int]
    /// Per programme, its newest block, held for the peaks of the hops after it.
    private var blocks: HeldBlocks
    private var lastServer = true
    private var lastReconnects = 0
    private var lastXruns = 0
    private var lastOverruns = 0
    private var lastChainLog = 0.0
    /// Per programme and maximum (true peak, momentary, short-term): the faulted maximum last
    /// logged (nil: clean).
    private var faultsLogged: [[Double?]]

    public init(log: LogWriter, programmes: Int) {
        self.log = log
        cursors = Array(repeating: 0, count: programmes)
        faultsLogged = Array(repeating: [nil, nil, nil], count: programmes)
        blocks = HeldBlocks(programmes: programmes)
    }

    /// The end of the run, after the analysis's last audio (the host drained its ring): the
    /// blocks completed since the last update, and the true
    /// and sample peaks since the last hop, which no update carried, go with the held block
    /// (or the newest of those blocks, the newest ending at `unix`); every held block is
    /// written. Before the log's `stop`. `fault`: one that audio may hold (an xrun or a
    /// connection change no update came after to label it), which its blocks carry.
    public func finish(analyzer: Analyzer, unix: Double, fault: FaultCause? = nil) {
        let programmes = analyzer.settings.resolvedProgrammes
        // Each channel's peaks once (taking the true peak starts its next interval), for every
        // programme it is in.
        let channelPeaks = (0..<analyzer.settings.channels).map { c in
            (analyzer.takeRecentTruePeakDBTP(channel: c), analyzer.samplePeakSinceHopDBFS(channel: c))
        }
        for p in cursors.indices {
            raisePeaks(programme: p, channels: p < programmes.count ? programmes[p].channels : [], of: channelPeaks.count, fault: fault) {
                channelPeaks[$0]
            }
            take(programme: p, analyzer: analyzer, unix: unix)
            blocks.finish(programme: p, to: log)
        }
    }

    /// Writes the held blocks as they are (the log closes without `finish`: the LV2 plugin's
    /// log set to another path).
    public func flush() {
        blocks.flush(to: log)
    }

    /// An update: its blocks, peaks, faulted maxima and chain events, at the log's time `unix`.
    public func record(_ s: Snapshot, analyzer: Analyzer, unix: Double) {
        recordBlocksAndChain(s, analyzer: analyzer, unix: unix)
        recordFaultedMaxima(s)
    }

    /// A held maximum an xrun or a connection change set: logged as `max_fault` (value: the
    /// maximum; detail: which, the cause and the clean maximum) when it becomes labelled and
    /// again each time it rises by a dB/LU or more while labelled (a loudness maximum climbs
    /// with every update while its window fills: one event per update was hundreds), so the
    /// report's incidents say which peaks were not the programme's.
    private func recordFaultedMaxima(_ s: Snapshot) {
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

    private func recordBlocksAndChain(_ s: Snapshot, analyzer: Analyzer, unix: Double) {
        for p in s.programmes.indices where p < cursors.count {
            // The hop's peaks wait for the programme's next block. A fault near this update's
            // audio (`FaultLabels`): its blocks carry it, so that the report keeps the clean
            // maxima beside the others.
            raisePeaks(programme: p, channels: s.programmes[p].channels, of: s.channels.count, fault: s.blockFault) {
                (Double(s.channels[$0].truePeakDBTP), Double(s.channels[$0].peakDBFS))
            }
            take(programme: p, analyzer: analyzer, unix: unix)
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

    /// Programme `p`'s blocks completed since the last look, the newest ending at `unix` and
    /// the ones before 100 ms apart: held, the newest with the peaks since the block before.
    private func take(programme p: Int, analyzer: Analyzer, unix: Double) {
        var taken: [(t: Double, index: Int, power: Double)] = []
        let lost = analyzer.takeLoudnessBlocks(programme: p, after: &cursors[p]) { power, index in taken.append((0, index, power)) }
        if lost > 0 { log.event("blocks_lost", programme: p, value: Double(lost)) }
        for i in taken.indices { taken[i].t = unix - Double(taken.count - 1 - i) * 0.1 }
        blocks.hold(programme: p, taken, to: log)
    }

    /// Raises programme `p`'s pending peaks by those of its `channels` (below `count`):
    /// `peak(c)` is channel c's true and sample peak (dBTP, dBFS; the floor: none).
    private func raisePeaks(programme p: Int, channels: [Int], of count: Int, fault: FaultCause?, _ peak: (Int) -> (Double, Double)) {
        var tp: Double?, sp: Double?
        for c in channels where c < count {
            let (t, x) = peak(c)
            if t > Double(Decibels.floor) { tp = largerPeak(tp, t) }
            if x > Double(Decibels.floor) { sp = largerPeak(sp, x) }
        }
        blocks.raise(programme: p, truePeak: tp, samplePeak: sp, fault: fault)
    }
}
