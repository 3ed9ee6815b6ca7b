#if canImport(Glibc)
import Glibc
#endif
import DSP
import Realtime
import Synchronization

/// Counters and values the JACK notification thread, the worker and the output thread share.
final class SharedState: @unchecked Sendable {
    // @unchecked Sendable: every field is atomic or an atomic-based counter.
    let xruns = Counter()
    let outputSkipped = Counter()
    /// The server's sample rate as last reported, in Hz.
    let serverSampleRate = Counter()
    /// The server's buffer size as last reported, in frames.
    let serverBufferSize = Counter()
    /// Set when everything should stop.
    let stopping = Atomic<Bool>(false)
    /// Set (by SIGHUP) to restart the measurements: integrated loudness, range, maxima.
    let resetRequested = Atomic<Bool>(false)
}

/// The worker thread: drains the ring into the `Analyzer`, publishes each hop's results as a
/// `Snapshot` and the meter ports' values. Never blocks the real-time thread (it only reads
/// the ring and stores atomics) and is never blocked by the outputs (triple buffer).
final class Worker: @unchecked Sendable {
    // @unchecked Sendable: after `start`, `analyzer` is touched by the worker thread only;
    // everything else is immutable or thread-safe.
    private let configuration: Configuration
    private let ring: AudioRing
    private let wake: WakeSignal
    private let meterValues: AtomicFloatArray
    private let snapshots: TripleBuffer<Snapshot>
    private let shared: SharedState
    private let processor: CaptureProcessor
    private var analyzer: Analyzer
    private var thread: PosixThread?

    init(configuration: Configuration, analyzer: Analyzer, ring: AudioRing, wake: WakeSignal,
         meterValues: AtomicFloatArray, snapshots: TripleBuffer<Snapshot>, shared: SharedState,
         processor: CaptureProcessor)
    {
        self.configuration = configuration
        self.analyzer = analyzer
        self.ring = ring
        self.wake = wake
        self.meterValues = meterValues
        self.snapshots = snapshots
        self.shared = shared
        self.processor = processor
    }

    func start() {
        thread = PosixThread(name: "jackvu-worker") { [self] in run() }
    }

    /// Waits for the thread; call after setting `shared.stopping` and signalling `wake`.
    func join() {
        thread?.join()
        thread = nil
    }

    private func run() {
        while !shared.stopping.load(ordering: .relaxed) {
            wake.wait(timeout: 0.1)
            followSampleRate()
            if shared.resetRequested.exchange(false, ordering: .relaxed) { analyzer.resetMeasurements() }
            drain()
        }
    }

    /// The sample rate always comes from the server: on a change, analyse at the new rate
    /// from a clean start (frames already in the ring were captured at the old one).
    private func followSampleRate() {
        let rate = shared.serverSampleRate.count
        guard rate > 0, rate != analyzer.sampleRate,
            let replacement = try? Analyzer(configuration: configuration, sampleRate: rate)
        else { return }
        analyzer = replacement
        ring.discardReadable()
    }

    private func drain() {
        let available = ring.readableFrames
        guard available > 0 else { return }
        // The readable frames lie in at most two contiguous pieces (the ring wraps).
        let (first, second) = ring.regions(channel: 0, frames: available)
        analyzer.append(frames: first.count, from: { ring.regions(channel: $0, frames: available).first.baseAddress! }, hop: publish)
        if second.count > 0 {
            analyzer.append(frames: second.count, from: { ring.regions(channel: $0, frames: available).second.baseAddress! }, hop: publish)
        }
        ring.consume(frames: available)
    }

    private func publish() {
        for c in 0..<meterValues.count { meterValues[c] = analyzer.meterValue(channel: c) }
        snapshots.withBack { snapshot in
            analyzer.write(into: &snapshot)
            snapshot.status.xruns = shared.xruns.count
            snapshot.status.overruns = ring.overruns
            snapshot.status.outputSkipped = shared.outputSkipped.count
            let cycles = processor.cycles.count
            snapshot.status.cycles = cycles
            snapshot.status.callbackMeanMicroseconds =
                cycles > 0 ? Float(processor.busyNanoseconds.count) / Float(cycles) / 1000 : 0
            snapshot.status.callbackMaxMicroseconds = Float(processor.maxBusyNanoseconds.count) / 1000
            snapshot.status.callbackP99Microseconds = processor.durationQuantileMicroseconds(0.99)
        }
        snapshots.publish()
    }
}
