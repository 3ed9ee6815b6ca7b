import Analysis
import Settings
import DSP
import Jack
import Realtime

/// What the process callback writes into and the threads behind it read: the ring, the meter
/// levels, the MIDI queues, the cycle statistics and the clock anchor. It outlives JACK
/// clients: when the server goes away and comes back, a new `CaptureProcessor` for the new
/// client's ports works on the same `CaptureBuffers`, so the worker and the outputs go on.
final class CaptureBuffers: Sendable {
    /// Where the input frames go.
    let ring: AudioRing
    /// Each channel's display level 0 ... 1, written by the worker.
    let meterValues: AtomicFloatArray
    /// 1 for each meter port that has a connection (or may have: all start at 1), set when
    /// the graph changes: a port nobody reads is not filled (each `jack_port_get_buffer` is a
    /// walk through the server's graph that costs more than the fill).
    let meterConnected: AtomicCounterArray
    /// Wakes the worker early (never from the real-time callback: only a freewheeling one,
    /// which is not real time, signals it).
    let wake: WakeSignal
    /// Debug aid for the real-time test: allocate in the callback so RTSan must catch it.
    let canary: Bool
    /// Process cycles run.
    let cycles = Counter()
    /// Sum and maximum of the callback's own duration, in nanoseconds.
    let busyNanoseconds = Counter()
    let maxBusyNanoseconds = Counter()
    /// Cycles by duration: bucket b counts durations of 2^(b-1) ..< 2^b nanoseconds.
    let durationHistogram = AtomicCounterArray(count: 64)
    /// Ring index and JACK time of the latest cycle's first frame.
    let clock = ClockAnchor()
    /// OSC packets queued for the `osc` port (nil with `--no-osc-port`).
    let oscQueue: PacketQueue?
    /// The largest event the `osc` port's empty buffer takes, bytes, as last seen.
    let oscMaxEvent = Counter()
    /// Note messages queued for the `notes` port (nil without `--midi-notes`).
    let notesQueue: PacketQueue?
    /// 1 while the server freewheels (an offline bounce); set by the notification thread.
    let freewheeling = SharedValue()
    /// Signalled by the worker when it has made room in the ring, for a freewheeling callback.
    let space = WakeSignal()
    /// Ring frames before this index are to be dropped unanalysed (a new client's warm-up):
    /// set by the engine's thread, acted on by the worker, the ring's only consumer;
    /// `discardEverything` while the warm-up runs.
    let discardBefore = SharedValue()
    static let discardEverything = Int.max

    /// Per input: 1 + the ring index of the first frame of the latest cycle in which its
    /// connections changed (0: none yet), written by the callback, read by the worker, which
    /// leaves that audio out of the maxima and starts its block afresh (see
    /// `CaptureProcessor.process`).
    let connectionChangedAt: AtomicCounterArray
    /// Per input: 1 when the main thread saw its connection count change (a change the
    /// callback cannot see in the buffer address: a second source added, say), and the count
    /// of such looks, so that the callback reads the flags only after one.
    let connectionHints: AtomicCounterArray
    let connectionHintGeneration = Counter()
    /// Gaps in the audio of cycles this client missed (its callback ran too late for the
    /// server, which counts an xrun and goes on without it: the audio of those periods never
    /// reaches jackvu, and what comes next joins what came before with a step): the ring
    /// index of the first frame after each, marked by the callback before the ring's commit
    /// and taken by the worker, which leaves the join out of every channel's maxima and starts
    /// its block afresh, as after a gap of its own (and the whole stretch, when it fell so far
    /// behind that joins were written over).
    let joins = MarkRing(slots: 8)
    /// Frames within which a hint adds nothing to a change the callback saw itself.
    static let hintCoverFrames = 16384

    /// With `--follow-transport`: the ring's last channel carries the transport, per frame
    /// (`CaptureBuffers.transportStopped`, `…Rolling`, `…RollingFromZero`).
    var followsTransport: Bool { ring.channels > inputs }
    /// The audio inputs (the meter values after theirs are the programmes' alarm ports').
    let inputs: Int
    /// 1 while the transport rolled in the last cycle (the callback's own memory).
    let transportRolled = SharedValue()
    /// The transport channel's values: stopped, rolling, and the first cycle of a roll that
    /// starts at frame 0.
    static let transportStopped: Float = 0, transportRolling: Float = 1, transportRollingFromZero: Float = 2

    init(ring: AudioRing, inputs: Int, meterValues: AtomicFloatArray, wake: WakeSignal, canary: Bool,
         oscQueue: PacketQueue? = nil, notesQueue: PacketQueue? = nil)
    {
        self.ring = ring
        self.inputs = inputs
        self.meterValues = meterValues
        meterConnected = AtomicCounterArray(count: meterValues.count)
        for c in 0..<meterValues.count { meterConnected.store(1, at: c) }
        connectionChangedAt = AtomicCounterArray(count: inputs)
        connectionHints = AtomicCounterArray(count: inputs)
        self.wake = wake
        self.canary = canary
        self.oscQueue = oscQueue
        self.notesQueue = notesQueue
    }

    /// What a run with `ports` at `sampleRate` needs: a ring of at least a second (and 32768
    /// frames; with `--follow-transport` one channel more, the transport's), the `osc` and
    /// `notes` ports' queues when those ports exist.
    convenience init(ports: PortPlan, followTransport: Bool, canary: Bool, sampleRate: Int, wake: WakeSignal) {
        self.init(
            ring: AudioRing(channels: ports.channels + (followTransport ? 1 : 0), minimumCapacity: max(sampleRate, 32768)),
            inputs: ports.channels, meterValues: AtomicFloatArray(count: ports.channels + ports.alarms.count), wake: wake, canary: canary,
            oscQueue: ports.oscPrettyName != nil ? PacketQueue(minimumCapacity: 1 << 16) : nil,
            notesQueue: ports.notes ? PacketQueue(minimumCapacity: 4096) : nil)
    }

    /// Forgets the warm-up: statistics start at activation.
    func resetStatistics() {
        cycles.store(0)
        busyNanoseconds.store(0)
        maxBusyNanoseconds.store(0)
        for b in 0..<durationHistogram.count { durationHistogram.store(0, at: b) }
    }

    /// The duration (µs) below which `fraction` of the cycles so far finished, to a factor of
    /// two (the upper edge of its histogram bucket). Not real-time safe; any thread.
    func durationQuantileMicroseconds(_ fraction: Double) -> Float {
        var total = 0
        for b in 0..<durationHistogram.count { total += durationHistogram[b] }
        guard total > 0 else { return 0 }
        var seen = 0
        for b in 0..<durationHistogram.count {
            seen += durationHistogram[b]
            if Double(seen) >= fraction * Double(total) { return Float(1 << b) / 1000 }
        }
        return Float(maxBusyNanoseconds.count) / 1000
    }
}

/// The real-time half of jackvu: JACK's process callback, for one client's ports.
///
/// Per cycle, and nothing else: copy each input port's frames into the ring and publish them
/// with the cycle's start time (`clock`); fill each meter port with its channel's latest
/// display level; copy the OSC packets and MIDI notes that other threads queued into the
/// MIDI ports' buffers; count the cycle and its duration. (A meter port with no connection is
/// left as it is: nobody reads it.) It does not wake the worker: waking
/// is a futex system call (tens of microseconds on a virtual machine); the worker paces
/// itself, once per period. Everything it touches is allocated before activation and every
/// field is a `let`, so there is no allocation, no lock, no system call, no exclusivity
/// bookkeeping and no I/O on this path (RealtimeSanitizer and strace check it in the tests).
final class CaptureProcessor: ProcessHandler {
    /// Audio inputs, in channel order.
    let inputs: [AudioInPort]
    /// CV meter outputs, in channel order.
    let meters: [AudioOutPort]
    /// The `osc` and `notes` MIDI ports, when registered.
    let oscPort: MIDIOutPort?
    let notesPort: MIDIOutPort?
    /// What it writes into (outlives this client).
    let capture: CaptureBuffers
    /// Each input's buffer address in the previous cycle (0 before the first), and the hint
    /// generation last acted on: the callback's own memory (only the callback touches
    /// `lastBuffers`: plain memory, allocated here, freed with the processor).
    nonisolated(unsafe) let lastBuffers: UnsafeMutablePointer<Int>
    let hintsSeen = Counter()
    /// The callback's own memory of the last cycle: where JACK's frame clock starts the next
    /// one (nil: unknown), its period and whether the server freewheeled.
    struct LastCycle {
        var nextFrame: UInt32?
        var frames = 0
        var freewheeling = 0
    }
    nonisolated(unsafe) let lastCycle: UnsafeMutablePointer<LastCycle>
    /// Whether an input's buffer address tells a connection change: JACK2 hands an input its
    /// one source's buffer, or its own, the same every cycle; PipeWire's JACK alternates
    /// between buffers of its own every cycle, so there only the main thread's hints count.
    let addressesTell: Bool

    init(inputs: [AudioInPort], meters: [AudioOutPort], capture: CaptureBuffers, oscPort: MIDIOutPort? = nil, notesPort: MIDIOutPort? = nil) {
        lastBuffers = .allocate(capacity: max(1, inputs.count))
        lastBuffers.initialize(repeating: 0, count: max(1, inputs.count))
        lastCycle = .allocate(capacity: 1)
        lastCycle.initialize(to: LastCycle())
        hintsSeen.store(capture.connectionHintGeneration.count)
        addressesTell = !Client.isPipeWire
        self.inputs = inputs
        self.meters = meters
        self.capture = capture
        self.oscPort = oscPort
        self.notesPort = notesPort
    }

    deinit {
        lastBuffers.deallocate()
        lastCycle.deallocate()
    }

    /// Whether cycles were missed before this one: JACK's frame clock starts it further on
    /// than the last one ended, with the same period and the server neither entering nor
    /// leaving freewheeling (either may start the clock afresh). Remembers this cycle. Real-time safe.
    @inline(__always)
    private func missedCycles(_ scope: ProcessScope, freewheeling: Int) -> Bool {
        let last = lastCycle.pointee
        let known = scope.cycleStartMicroseconds != 0
        var missed = false
        if known, let next = last.nextFrame, last.frames == scope.frames, last.freewheeling == freewheeling {
            missed = next != scope.cycleStartFrames
        }
        lastCycle.pointee = LastCycle(
            nextFrame: known ? scope.cycleStartFrames &+ UInt32(truncatingIfNeeded: scope.frames) : nil,
            frames: scope.frames, freewheeling: freewheeling)
        return missed
    }

    /// Real-time safe.
    func process(_ scope: ProcessScope) -> Bool {
        let start = monotonicNanoseconds()
        let frames = scope.frames
        let capture = capture
        let ring = capture.ring
        let freewheeling = capture.freewheeling.value
        let missed = missedCycles(scope, freewheeling: freewheeling)
        if freewheeling != 0 && !ring.hasSpace(for: frames) {
            // Freewheeling: not real time, and the bounce must not lose audio: wait for the
            // worker to make room instead of dropping the block. (Never in real time.)
            capture.wake.signal()
            while capture.freewheeling.value != 0 && !ring.hasSpace(for: frames) { _ = capture.space.wait(timeout: 0.01) }
        }
        if ring.reserve(frames: frames) {  // else: dropped and counted by the ring
            let first = ring.framesWritten
            capture.clock.store(frame: first, microseconds: scope.cycleStartMicroseconds)
            if missed { capture.joins.mark(first) }
            // Connection changes take effect at a cycle's start. JACK2 hands an input the
            // buffer of its one source (or its own, silent or mixed), so a new address is a
            // change in this very cycle; the main thread's hints cover the rest, later (and
            // everything under PipeWire, whose buffers change every cycle).
            let generation = capture.connectionHintGeneration.count
            let hinted = generation != hintsSeen.count
            if hinted { hintsSeen.store(generation) }
            for c in 0..<inputs.count {
                let input = scope.input(inputs[c])
                let address = Int(bitPattern: input.baseAddress)
                let last = lastBuffers[c]
                var changed = addressesTell && last != 0 && address != last
                if hinted && capture.connectionHints[c] != 0 {
                    capture.connectionHints.store(0, at: c)
                    let marked = capture.connectionChangedAt[c]
                    changed = changed || marked == 0 || first - (marked - 1) > CaptureBuffers.hintCoverFrames
                }
                if changed { capture.connectionChangedAt.store(first + 1, at: c) }
                if address != last { lastBuffers[c] = address }
                if let samples = input.baseAddress, input.count == frames {
                    ring.copyIn(channel: c, from: samples, frames: frames)
                }
            }
            if capture.followsTransport {
                let transport = scope.transport()
                let fromZero = transport.rolling && transport.frame == 0 && capture.transportRolled.value == 0
                capture.transportRolled.store(transport.rolling ? 1 : 0)
                ring.fill(
                    channel: inputs.count,
                    with: fromZero ? CaptureBuffers.transportRollingFromZero : transport.rolling ? CaptureBuffers.transportRolling : CaptureBuffers.transportStopped,
                    frames: frames)
            }
            ring.commit(frames: frames)
        }
        for c in 0..<meters.count where capture.meterConnected[c] != 0 {
            Vector.fill(scope.output(meters[c]), with: capture.meterValues[c])
        }
        if let oscPort, let oscQueue = capture.oscQueue {
            CaptureProcessor.copyEvents(from: oscQueue, to: scope.midiOutput(oscPort), maxSeen: capture.oscMaxEvent)
        }
        if let notesPort, let notesQueue = capture.notesQueue {
            CaptureProcessor.copyEvents(from: notesQueue, to: scope.midiOutput(notesPort), maxSeen: nil)
        }
        if capture.canary { allocateOnPurpose(capture.cycles.count) }
        capture.cycles.add()
        let busy = monotonicNanoseconds() - start
        capture.busyNanoseconds.add(busy)
        capture.maxBusyNanoseconds.raise(to: busy)
        capture.durationHistogram.add(1, at: Int.bitWidth - busy.leadingZeroBitCount)
        return true
    }

    /// Copies queued packets into a MIDI port's buffer, at the cycle's first frame, while they
    /// fit; a packet too large for even an empty buffer is dropped (counted by the queue), one
    /// that does not fit what is left waits for the next cycle. Real-time safe.
    @inline(__always)
    static func copyEvents(from queue: PacketQueue, to buffer: MIDIOutputBuffer, maxSeen: Counter?) {
        let capacity = buffer.maxEventSize
        if let maxSeen, capacity != Int.max, maxSeen.count != capacity { maxSeen.store(capacity) }
        while let (first, second) = queue.peek() {
            if first.count + second.count > capacity {
                queue.drop()
                continue
            }
            guard buffer.write(at: 0, first, second) else { break }
            queue.pop()
        }
    }
}

/// Allocates a heap array the optimiser cannot remove (the `--rt-canary` debug aid).
@inline(never)
func allocateOnPurpose(_ n: Int) {
    let a = [Int](repeating: n, count: 64 + n % 7)
    withExtendedLifetime(a) {}
    if a[0] == -42 { print("unreachable") }
}
