#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Consumers
import Settings
import DSP
import Jack
import Outputs
import Realtime
import Synchronization

/// Counters and values the JACK notification thread, the worker and the output threads share.
final class EngineState: @unchecked Sendable {
    // @unchecked Sendable: every field is atomic or an atomic-based counter.
    let xruns = Counter()
    let outputSkipped = Counter()
    /// OSC datagrams that could not be sent.
    let oscSendFailures = Counter()
    /// The server's sample rate as last reported, in Hz.
    let serverSampleRate = SharedValue()
    /// The server's buffer size as last reported, in frames.
    let serverBufferSize = SharedValue()
    /// Whether a JACK client is open now (false while the server is gone).
    let serverConnected = Atomic<Bool>(true)
    /// Reconnections to a server that had gone away.
    let reconnects = Counter()
    /// NaN and infinite input samples replaced by silence.
    let nonFiniteSamples = Counter()
    /// Inputs with at least one connection, as the main thread last counted them.
    let inputsConnected = SharedValue()
    /// Set when everything should stop.
    let stopping = Atomic<Bool>(false)
    /// Set while jackvu closes its own client (before `stopping`): the process cycles stop
    /// because of us, which the watchdog must not take for a stalled server (a 512-channel
    /// close takes about 3 s, past the watchdog's 2.5 s: a `server_stalled` at every stop).
    let closing = Atomic<Bool>(false)
    /// Set (by SIGHUP or the control input) to restart the measurements: integrated
    /// loudness, range, maxima.
    let resetRequested = Atomic<Bool>(false)
    /// Programmes (bit p: programme p) to reset, pause and resume, set by the control input
    /// and the terminal display, taken by the worker.
    let programmeResets = Atomic<UInt64>(0)
    let programmePauses = Atomic<UInt64>(0)
    let programmeResumes = Atomic<UInt64>(0)
    /// What the outputs need computed now (`Analyzer.Features` raw value); the control
    /// input's `send` may widen it.
    let neededFeatures: Atomic<Int>
    /// The outputs' rate now (`--rate`, or the control input's `rate`), updates per second, as
    /// a `Double`'s bit pattern: how often the worker computes the spectrum and the pitch
    /// (`Analyzer.readingsPerSecond`).
    let outputRate: Atomic<UInt64>

    init(neededFeatures: Analyzer.Features, outputRate: Double) {
        self.neededFeatures = Atomic(neededFeatures.rawValue)
        self.outputRate = Atomic(outputRate.bitPattern)
    }
}

/// The worker thread: drains the ring into the `Analyzer` and publishes each hop's results as a
/// `Snapshot`, handed first to its observers (the notes, the alarms and the log, the loudness
/// history); the observers that follow the audio closer (the meter ports) are told after each
/// look at the ring.
/// Never blocks the real-time thread (it only reads the ring and stores atomics) and is never
/// blocked by the outputs (triple buffer).
final class Worker: @unchecked Sendable {
    // @unchecked Sendable: after `start`, `analyzer` and the note follower are touched by the
    // worker thread only; everything else is immutable or thread-safe.
    /// What the analysis is told (a new analyzer at a new rate is made from it).
    private let settings: AnalysisSettings
    /// Test aid: the worker stops once (`Configuration.testStallWorker`).
    private let stallHook: Configuration.StallHook?
    private let snapshots: TripleBuffer<Snapshot>
    private let shared: EngineState
    /// What the process callback writes into: the ring, meter values, MIDI queues, statistics
    /// and clock (outlives JACK clients).
    private let capture: CaptureBuffers
    private var ring: AudioRing { capture.ring }
    private var wake: WakeSignal { capture.wake }
    /// Wakes the output thread after each publish.
    private let outputWake: WakeSignal
    /// A counter the control input keeps that the status message reports.
    private let controlRejected: Counter?
    private var analyzer: Analyzer
    /// The worker threads beside this one (`--workers`): they share the per-channel work.
    private let pool: ChannelPool
    /// The ring index of the analyser's first frame (less the frames discarded since).
    private var analyzerStart: Int
    /// The ring's overrun count when the worker last looked.
    private var lastOverruns = 0
    /// "analysis fell behind" and "cannot analyse at the server's rate", said at most once
    /// per 10 s each.
    private var fellBehind = RepeatedWarning()
    private var unsupportedRate = RepeatedWarning()
    /// The server runs at a rate the meters cannot honour: its audio is dropped unanalysed.
    private var rateUnsupported = false
    private var thread: PosixThread?
    /// Per input, the latest connection change the worker took (`CaptureBuffers.connectionChangedAt`),
    /// and the stretches of ring frames whose audio counts for no maximum.
    private var changesTaken: [Int]
    /// How many of the callback's joins (`CaptureBuffers.joins`) have been taken (or lost).
    private var joinsTaken: Int
    private var exclusions: [(channel: Int, start: Int, end: Int)] = []
    /// The outputs' counters, for the status (`OutputCounterRegistry`).
    private let outputCounters: OutputCounterRegistry?

    /// What takes each result before it is published, and each look at the ring's audio
    /// (`AnalysisObserver`: the meter ports, the notes, the alarms and the log, the loudness
    /// history).
    private let observers: ObserverList
    /// Notices a connected server that runs no process cycles.
    private var watchdog: ServerWatchdog
    /// A stall the watchdog saw and stderr and the log have not been told yet: when it was
    /// seen (monotonic ns) and how long the server had been quiet then (s).
    private var unsaidStall: (seen: Int, quiet: Double)?
    /// How much longer than the watchdog's 1.5 s a stall lasts, the server still connected,
    /// before it is said on stderr and logged. A server that shuts down stops its cycles before
    /// it tells its clients (jackd, loaded, took 2 s in a CI run): then its shutdown is the one
    /// line. (The readings, the status, `/metrics` and the `server` alarm show the stall at once.)
    static let stallGraceSeconds = 1.0
    /// Labels the maxima an xrun or a connection change set (`FaultLabels`), and the server's
    /// xrun count when the worker last looked.
    private var faults: FaultLabels
    private var xrunsSeen: Int

    /// `workers`: the channel pool's threads; `stall`: the test's stop of the worker.
    init(settings: AnalysisSettings, workers: Int, stall: Configuration.StallHook?, analyzer: Analyzer, capture: CaptureBuffers,
         snapshots: TripleBuffer<Snapshot>,
         shared: EngineState, outputWake: WakeSignal, controlRejected: Counter?, observers: ObserverList,
         outputCounters: OutputCounterRegistry? = nil)
    {
        self.outputCounters = outputCounters
        self.observers = observers
        changesTaken = (0..<settings.channels).map { capture.connectionChangedAt[$0] }
        joinsTaken = capture.joins.count
        self.settings = settings
        self.stallHook = stall
        self.analyzer = analyzer
        pool = ChannelPool(threads: min(workers, settings.channels))
        analyzer.pool = pool
        self.snapshots = snapshots
        self.shared = shared
        self.capture = capture
        self.outputWake = outputWake
        self.controlRejected = controlRejected
        analyzerStart = capture.ring.framesRead
        watchdog = ServerWatchdog(cycles: capture.cycles.count, now: monotonicNanoseconds())
        faults = Worker.faultLabels(settings, sampleRate: analyzer.sampleRate, periodFrames: shared.serverBufferSize.value)
        xrunsSeen = shared.xruns.count
        lastOverruns = ring.overruns
    }

    func start() {
        thread = PosixThread(name: "jackvu-worker") { [self] in run() }
    }

    /// Waits for the thread; call after setting `shared.stopping` and signalling `wake`.
    func join() {
        thread?.join()
        thread = nil
        pool.stop()
    }

    private func run() {
        var lastPublish = monotonicNanoseconds()
        var stall = stallHook.map { (at: lastPublish + Int($0.after * 1e9), seconds: $0.seconds) }
        while !shared.stopping.load(ordering: .relaxed) {
            // Paced by the period: the callback never wakes the worker (that would be a system
            // call on the real-time thread); resets, stops and a freewheeling callback do.
            wake.wait(timeout: period)
            if let s = stall, monotonicNanoseconds() >= s.at {
                usleep(UInt32(s.seconds * 1e6))
                stall = nil
            }
            followConfiguration()
            if shared.resetRequested.exchange(false, ordering: .relaxed) {
                analyzer.resetMeasurements()
                event("reset")
            }
            applyProgrammeRequests()
            let changed = watchServer()
            if drain() > 0 {
                lastPublish = monotonicNanoseconds()
            } else if changed || monotonicNanoseconds() - lastPublish > 500_000_000 {
                // No audio (the server is gone, stalled or stopped): publish the state as it is
                // twice a second (and at once when the server stalls), so the outputs and
                // displays show the status — with the server gone or stalled even when the
                // block is not full (the audio stopped right after a connection change had
                // started it afresh); otherwise only a full block's readings.
                if shared.serverConnected.load(ordering: .relaxed) && !watchdog.stalled { publish() } else { publishNow() }
                lastPublish = monotonicNanoseconds()
            }
        }
        // The end (the client is closed: nothing more comes): the audio still in the ring (a
        // period or two when the worker keeps up; at most half a second of it when it had
        // fallen behind, so that a stop stays prompt), so that the log's last block has it.
        // Not `finishAudio`: the signal goes on after jackvu stops listening, and silence
        // after its last samples would be a step no one played (a sine's true peak read
        // 0.3 dB high at the stop).
        drain(atMost: max(1, analyzer.sampleRate / 2))
        // That audio's blocks in the log, labelled when a fault reaches them (an xrun there,
        // or cycles missed, would otherwise set the programme's peak unlabelled).
        observers.finish(fault: faults.tailFault(through: analyzerStart + analyzer.framesSeen - 1))
    }

    /// An event of the run, for the observers (the log).
    private func event(_ kind: String, programme: Int? = nil, detail: String? = nil) {
        observers.event(kind, programme: programme, detail: detail)
    }

    static func faultLabels(_ c: AnalysisSettings, sampleRate: Int, periodFrames: Int) -> FaultLabels {
        FaultLabels(
            channels: c.channels, programmes: c.resolvedProgrammes.count, sampleRate: sampleRate, periodFrames: periodFrames,
            blockFrames: c.fftSize)
    }

    /// The watchdog's look at the callback's cycles: a stall, and the end of one, said once
    /// each on stderr and logged — a stall once it has lasted `stallGraceSeconds` more with the
    /// server still there (one that ends or goes away before is not said, nor its end).
    /// Returns whether the state changed.
    private func watchServer() -> Bool {
        guard !shared.closing.load(ordering: .relaxed) else { return false }
        let rate = shared.serverSampleRate.value, frames = shared.serverBufferSize.value
        let now = monotonicNanoseconds()
        let change = watchdog.observe(
            cycles: capture.cycles.count, now: now,
            connected: shared.serverConnected.load(ordering: .relaxed), freewheeling: capture.freewheeling.value != 0,
            periodSeconds: rate > 0 && frames > 0 ? Double(frames) / Double(rate) : 0)
        switch change {
        case .stalled(let seconds):
            unsaidStall = (now, seconds)
            return true
        case .responding(let seconds):
            guard unsaidStall == nil else {
                unsaidStall = nil
                return true
            }
            printError("the JACK server runs again after a stall of \(fixed(seconds, 1)) s")
            event("server_responding", detail: "stalled \(fixed(seconds, 1)) s")
            return true
        case nil:
            if let stall = unsaidStall, Double(now - stall.seen) / 1e9 >= Worker.stallGraceSeconds {
                unsaidStall = nil
                let seconds = stall.quiet + Double(now - stall.seen) / 1e9
                printError(
                    "the JACK server has run no process cycle for \(fixed(seconds, 1)) s: it is stalled "
                        + "(the readings are frozen until it runs again)")
                event("server_stalled", detail: "\(fixed(seconds, 1)) s without a cycle")
            }
            return false
        }
    }

    /// Resets, pauses and resumes of single programmes, as asked since the last look.
    private func applyProgrammeRequests() {
        let resets = shared.programmeResets.exchange(0, ordering: .relaxed)
        let pauses = shared.programmePauses.exchange(0, ordering: .relaxed)
        let resumes = shared.programmeResumes.exchange(0, ordering: .relaxed)
        guard resets | pauses | resumes != 0 else { return }
        for p in 0..<64 {
            let bit: UInt64 = 1 << UInt64(p)
            if resets & bit != 0 {
                analyzer.resetMeasurements(programme: p)
                event("reset", programme: p)
            }
            if pauses & bit != 0 {
                analyzer.setPaused(true, programme: p)
                event("pause", programme: p)
            }
            if resumes & bit != 0 {
                analyzer.setPaused(false, programme: p)
                event("resume", programme: p)
            }
        }
    }

    /// How long the worker waits between looks at the ring: one JACK period (the server's
    /// buffer size at its rate), at least 1 ms, at most 50 ms.
    private var period: Double {
        let rate = shared.serverSampleRate.value, frames = shared.serverBufferSize.value
        guard rate > 0, frames > 0 else { return 0.01 }
        return min(0.05, max(0.001, Double(frames) / Double(rate)))
    }

    /// The sample rate always comes from the server: on a change, analyse at the new rate
    /// from a clean start (frames already in the ring were captured at the old one). A
    /// selection that needs more than is computed starts the analysis again with it.
    private func followConfiguration() {
        let outputRate = Double(bitPattern: shared.outputRate.load(ordering: .relaxed))
        if outputRate != analyzer.readingsPerSecond { analyzer.readingsPerSecond = outputRate }
        let rate = shared.serverSampleRate.value
        let needed = Analyzer.Features(rawValue: shared.neededFeatures.load(ordering: .relaxed))
        let rateChanged = rate > 0 && rate != analyzer.sampleRate
        guard rateChanged || !analyzer.features.isSuperset(of: needed) else { return }
        let replacement: Analyzer
        do {
            replacement = try Analyzer(
                settings: settings, sampleRate: rate > 0 ? rate : analyzer.sampleRate,
                features: analyzer.features.union(needed))
        } catch {
            // A server rate the meters cannot honour: said (once per 10 s), and the readings
            // stay those of the last supported rate rather than wrong ones.
            if rateChanged, unsupportedRate.occurred(at: monotonicNanoseconds()) != nil {
                printError("cannot analyse at the server's rate: \(error.description)")
            }
            if rateChanged { rateUnsupported = true }
            return
        }
        rateUnsupported = false
        // The running measurements (integrated loudness, range, maxima, clips) go on.
        replacement.continueMeasurements(from: analyzer)
        replacement.pool = pool
        replacement.readingsPerSecond = outputRate
        analyzer = replacement
        if rateChanged {
            ring.discardReadable()
            faults = Worker.faultLabels(settings, sampleRate: rate, periodFrames: shared.serverBufferSize.value)
        }
        analyzerStart = ring.framesRead
    }

    /// Drops the next `frames` readable frames unanalysed; the analysis block starts again
    /// after them (no block spans the gap).
    private func drop(frames: Int) {
        ring.consume(frames: frames)
        analyzerStart += frames
        analyzer.restartBlock()
        // What follows the gap is a step for every filter (their history is from before
        // it): like a connection change, it counts for no maximum.
        let at = ring.framesRead
        for c in 0..<settings.channels { exclusions.append((channel: c, start: at, end: at + exclusionFrames)) }
    }

    /// The stretch a connection change or a gap leaves out of the maxima: one period, at
    /// least 256 frames (the true-peak filter's ringing after a step is 24 frames).
    private var exclusionFrames: Int { max(256, shared.serverBufferSize.value) }

    /// Analyses every frame in the ring (the oldest `atMost`); returns how many there were.
    @discardableResult
    private func drain(atMost most: Int = .max) -> Int {
        if rateUnsupported {
            ring.consume(frames: ring.readableFrames)
            return 0
        }
        // A new client's warm-up, and the audio before its connections took effect.
        let limit = capture.discardBefore.value
        let early = limit == CaptureBuffers.discardEverything ? ring.readableFrames : min(limit - ring.framesRead, ring.readableFrames)
        if early > 0 { drop(frames: early) }
        let overruns = ring.overruns
        if overruns != lastOverruns {
            // The callback dropped audio because the ring was full: what is in it now was
            // captured before the gap, what comes next after it. Analyse neither across the
            // gap: drop the stale frames and start the analysis block again.
            let stale = ring.readableFrames
            drop(frames: stale)
            // Under overload this happens every period: said once per 10 s, with a count.
            if let held = fellBehind.occurred(at: monotonicNanoseconds()) {
                let since = held > 0 ? " (and \(held) more times since the last report; all counted in the status's overruns)" : ""
                printError(
                    "analysis fell behind: \(overruns - lastOverruns) process cycles of audio were dropped; "
                        + "\(stale) older frames discarded, the analysis block starts again\(since)")
            }
            lastOverruns = overruns
        }
        let available = min(ring.readableFrames, most)
        // An xrun on the server since the last look: the audio now in the ring is near it.
        let xruns = shared.xruns.count
        if xruns != xrunsSeen {
            xrunsSeen = xruns
            faults.fault(.xrun, at: ring.framesRead + available)
        }
        guard available > 0 else { return 0 }
        // NaN and infinity would poison every filter state they reach: silence instead, counted.
        var replaced = 0
        for c in 0..<ring.channels {
            let (a, b) = ring.regions(channel: c, frames: available)
            replaced += Vector.sanitize(UnsafeMutableBufferPointer(mutating: a))
            if b.count > 0 { replaced += Vector.sanitize(UnsafeMutableBufferPointer(mutating: b)) }
        }
        if replaced > 0 { shared.nonFiniteSamples.add(replaced) }
        takeConnectionChanges(before: ring.framesRead + available)
        takeJoins(before: ring.framesRead + available)
        let ring = self.ring
        if exclusions.isEmpty {
            // The usual case: the readable frames in at most two contiguous pieces (the ring
            // wraps), nothing to leave out.
            let (first, second) = ring.regions(channel: 0, frames: available)
            analyzer.append(frames: first.count, from: { ring.regions(channel: $0, frames: available).first.baseAddress! }, hop: publish)
            if second.count > 0 {
                analyzer.append(frames: second.count, from: { ring.regions(channel: $0, frames: available).second.baseAddress! }, hop: publish)
            }
        } else {
            analyseAroundExclusions(available)
        }
        ring.consume(frames: available)
        if capture.freewheeling.value != 0 { capture.space.signal() }
        // Every look at the ring (each period), not every hop: the meter ports.
        observers.caughtUp(analyzer)
        return available
    }

    /// Analyses the `available` readable frames cut where a connection change's or a gap's
    /// stretch begins or ends (and where the ring wraps): the block starts afresh at each
    /// stretch's start, and the stretch counts for none of its channel's maxima.
    private func analyseAroundExclusions(_ available: Int) {
        let ring = self.ring
        let (first, _) = ring.regions(channel: 0, frames: available)
        var cuts = [0, first.count, available]
        let start = ring.framesRead
        for e in exclusions {
            cuts.append(min(available, max(0, e.start - start)))
            cuts.append(min(available, max(0, e.end - start)))
        }
        cuts = Array(Set(cuts)).sorted()
        for (a, b) in zip(cuts, cuts.dropFirst()) where b > a {
            let piece = first.count
            let pointer = { (c: Int, offset: Int) -> UnsafePointer<Float> in
                let (one, two) = ring.regions(channel: c, frames: available)
                return offset < piece ? one.baseAddress! + offset : two.baseAddress! + (offset - piece)
            }
            let at = start + a
            // A change: the block starts afresh with it, so the first update after it is a
            // whole block of the new connections; its stretch counts for no maximum.
            if exclusions.contains(where: { $0.start == at }) { analyzer.restartBlock() }
            let excluded = exclusions.filter { $0.start <= at && at < $0.end }.map(\.channel)
            analyzer.append(frames: b - a, from: { pointer($0, a) }, leavingOutMaximaOf: excluded, hop: publish)
        }
        exclusions.removeAll { $0.end <= start + available }
    }

    /// The connection changes the callback marked in frames before `end` (ring index): each
    /// leaves the stretch from its cycle's start, one period and at least 256 frames long
    /// (the true-peak filter's ringing after a step is 24 frames), out of the channel's
    /// maxima and clip count.
    private func takeConnectionChanges(before end: Int) {
        let length = exclusionFrames
        for c in changesTaken.indices {
            let marked = capture.connectionChangedAt[c]
            guard marked != changesTaken[c], marked - 1 < end else { continue }
            changesTaken[c] = marked
            let from = max(marked - 1, ring.framesRead)
            exclusions.append((channel: c, start: from, end: marked - 1 + length))
            // Left out of the channel's maxima; the loudness windows over it are labelled.
            faults.fault(.connection, at: marked - 1, peaks: false)
        }
    }

    /// The joins the callback marked in frames before `end` (ring index) where it had missed
    /// cycles: the audio of those periods never came, and what follows is a step from what
    /// came before (a −3 dBFS sine's true peak read −2.2 dBTP across one in a test). Each leaves the stretch
    /// from the join, one period and at least 256 frames long, out of every channel's
    /// maxima and clip count (the block starts afresh there), and labels the loudness windows
    /// over it an xrun's, as the server counts it. Joins written over before this thread took
    /// them (more than the ring's slots since it last looked) leave out everything from the
    /// audio not yet analysed to the oldest join still held: they are somewhere in it.
    private func takeJoins(before end: Int) {
        while let take = capture.joins.next(after: &joinsTaken, before: end) {
            let (at, to) = switch take {
            case .mark(let join): (join, join + exclusionFrames)
            case .lost(let before): (ring.framesRead, max(before, ring.framesRead + exclusionFrames))
            }
            let from = max(at, ring.framesRead)
            for c in 0..<settings.channels { exclusions.append((channel: c, start: from, end: to)) }
            faults.fault(.xrun, at: at, peaks: false)
        }
    }

    /// When the frame at ring index `index` was captured, as an OSC time tag (0 if unknown):
    /// from the process callback's latest anchor (a cycle's start on JACK's clock), the sample
    /// rate, and the offset between JACK's clock and the real-time clock now.
    private func timeTag(ofRingIndex index: Int) -> UInt64 {
        guard let anchor = capture.clock.load(), anchor.microseconds > 0 else { return 0 }
        let offsetFrames = Double(index - anchor.frame)
        let jackMicroseconds = Double(anchor.microseconds) + offsetFrames * 1e6 / Double(analyzer.sampleRate)
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let jackNow = Double(Client.microsecondsNow())
        let realNow = Double(ts.tv_sec) * 1e6 + Double(ts.tv_nsec) / 1e3
        let unix = realNow - (jackNow - jackMicroseconds)
        return unix > 0 ? OSCBundle.timeTag(unixMicroseconds: UInt64(unix)) : 0
    }

    private func publish() {
        // Until the analysis block is full, its levels would read low: publish nothing.
        guard analyzer.isBlockFull else { return }
        publishNow()
    }

    /// Publishes the latest results whether or not the block is full: with the server gone,
    /// the outputs and displays must still get the status — also when the audio stopped right
    /// after a connection change had started the block afresh (a source that went away, then
    /// the server).
    private func publishNow() {
        let lastFrame = analyzerStart + analyzer.framesSeen - 1
        let tag = timeTag(ofRingIndex: lastFrame)
        snapshots.withBack { snapshot in
            analyzer.write(into: &snapshot)
            faults.label(&snapshot, through: lastFrame)
            snapshot.timeTag = tag
            snapshot.status.xruns = shared.xruns.count
            snapshot.status.overruns = ring.overruns
            snapshot.status.outputSkipped = shared.outputSkipped.count
            snapshot.status.oscSendFailures = shared.oscSendFailures.count
            snapshot.status.oscPortDropped = capture.oscQueue?.droppedPackets ?? 0
            snapshot.status.controlRejected = controlRejected?.count ?? 0
            if let outputCounters { snapshot.outputCounters = outputCounters.counters }
            let cycles = capture.cycles.count
            snapshot.status.cycles = cycles
            snapshot.status.bufferFrames = shared.serverBufferSize.value
            snapshot.status.serverConnected = shared.serverConnected.load(ordering: .relaxed)
            snapshot.status.serverResponding = snapshot.status.serverConnected && !watchdog.stalled
            snapshot.status.reconnects = shared.reconnects.count
            snapshot.status.nonFiniteSamples = shared.nonFiniteSamples.count
            snapshot.status.inputsConnected = shared.inputsConnected.value
            snapshot.status.callbackMeanMicroseconds =
                cycles > 0 ? Float(capture.busyNanoseconds.count) / Float(cycles) / 1000 : 0
            let maximum = Float(capture.maxBusyNanoseconds.count) / 1000
            snapshot.status.callbackMaxMicroseconds = maximum
            snapshot.status.callbackP99Microseconds = min(maximum, capture.durationQuantileMicroseconds(0.99))
            snapshot.publishedNanoseconds = monotonicNanoseconds()
            observers.observe(&snapshot, analyzer: analyzer)
        }
        snapshots.publish()
        outputWake.signal()
    }
}
