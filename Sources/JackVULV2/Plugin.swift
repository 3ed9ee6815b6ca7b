#if canImport(Glibc)
import Glibc
#endif
import Analysis
import CLV2
import Consumers
import DSP
import LV2Description
import LoudnessLog
import Outputs
import Realtime
import Synchronization

/// jackvu as an LV2 plugin (the fourth host of the analysis, after the command, the
/// in-process client and `jackvu analyze`): `run()` only copies the audio through and into a
/// preallocated ring, and reads the values the worker last stored; the analysis runs on a
/// thread of the plugin's own (`jackvu-lv2`), so a host's audio thread never does an FFT, a
/// true-peak filter bank or a loudness gate. The forms and ports: `LV2Description`.
final class PluginInstance: @unchecked Sendable {
    // @unchecked Sendable: the ports' addresses are the host's to set (connect_port, never
    // during run); `run` is the host's audio thread, the worker its own; they share the ring,
    // the atomics and the flags only.
    let form: LV2Description.Form
    let ports: [LV2Description.Port]
    /// Where the host connected each port (its buffer).
    let locations: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// Audio ports and the reading ports, by index.
    let audioIn: [Int], audioOut: [Int]
    let readingPorts: [Int]
    let resetPort: Int, pausePort: Int, targetPort: Int, tolerancePort: Int, transportPort: Int, followPort: Int
    let targetLUFSPort: Int, maxTruePeakPort: Int
    let freeWheelingPort: Int, oscPortPort: Int
    /// The `osc_port` control as run() last read it.
    let oscPort = Atomic<Int>(0)
    /// The JSON lines file (`LV2Description.jsonParameter`): set by a `patch:Set` on the
    /// control port (run()) or by the host's state (restore); the worker opens it.
    let jsonPath: PathSlot
    /// The loudness log (`LV2Description.logParameter`), as the JSON lines file.
    let logPath: PathSlot
    /// The OSC destinations (`LV2Description.oscParameter`, an `atom:String`), as the paths.
    let oscURLs: PathSlot
    /// Each parameter's URID, its value's atom type and its slot: what `patch:Set`, a state
    /// save and a restore take.
    let parameters: [(key: UInt32, type: UInt32, slot: PathSlot)]
    /// The URIDs of the atom types a `time:Position` event is read with (0: the host maps
    /// none, and the transport is taken as rolling).
    let urids: URIDs
    /// Whether the host's transport rolled at the last position it sent (1 or 0; the audio
    /// thread's own memory).
    let rolling: UnsafeMutablePointer<Float>
    /// The readings (and alarm states) the worker last stored, in `readingPorts`' order.
    let values: AtomicFloatArray
    let ring: AudioRing
    let resetRequests = Atomic<Int>(0)
    let paused = Atomic<Bool>(false)
    /// The `target` and `tolerance` controls as run() last read them (the tolerance's bits).
    let targetChoice = Atomic<Int>(1)
    let toleranceBits = Atomic<UInt32>(0)
    /// The `target_lufs` and `max_true_peak` controls as run() last read them (their bits).
    let targetLUFSBits = Atomic<UInt32>(0)
    let maxTruePeakBits = Atomic<UInt32>(Float(1).bitPattern)
    /// The trigger's last value (the audio thread's own memory: a pointer, so that no
    /// exclusivity bookkeeping runs on the audio thread).
    let lastReset: UnsafeMutablePointer<Float>
    /// Test aid (`JACKVU_LV2_CANARY=1` at instantiation): the first run() allocates once, so a
    /// test can see that RealtimeSanitizer watches run().
    let canary: UnsafeMutablePointer<Int>
    private let stopping = Atomic<Bool>(false)
    private var worker: PosixThread?
    let sampleRate: Int

    init?(form: LV2Description.Form, sampleRate: Double, features: UnsafePointer<UnsafePointer<LV2_Feature>?>?) {
        guard sampleRate >= 8000, sampleRate <= 768_000 else { return nil }
        self.form = form
        self.sampleRate = Int(sampleRate.rounded())
        ports = LV2Description.ports(form)
        locations = .allocate(capacity: ports.count)
        locations.initialize(repeating: nil, count: ports.count)
        lastReset = .allocate(capacity: 1)
        lastReset.initialize(to: 0)
        rolling = .allocate(capacity: 1)
        rolling.initialize(to: 0)
        urids = URIDs(features: features)
        let (json, log, osc) = (PathSlot(), PathSlot(), PathSlot())
        (jsonPath, logPath, oscURLs) = (json, log, osc)
        parameters = [(urids.json, urids.path, json), (urids.log, urids.path, log), (urids.osc, urids.string, osc)].filter { $0.key != 0 }
        canary = .allocate(capacity: 1)
        canary.initialize(to: getenv("JACKVU_LV2_CANARY").map { String(cString: $0) == "1" ? 1 : 0 } ?? 0)
        jackvu_lv2_rtsan_init()
        var ins: [Int] = [], outs: [Int] = [], readings: [Int] = [], reset = 0, pause = 0, target = 0, tolerance = 0
        var transport = 0, follow = 0, freeWheeling = 0, oscPortIndex = 0, targetLUFS = 0, maxTruePeak = 0
        for p in ports {
            switch p.kind {
            case .audioIn: ins.append(p.index)
            case .audioOut: outs.append(p.index)
            case .reading, .alarm, .alarmsActive: readings.append(p.index)
            case .reset: reset = p.index
            case .pause: pause = p.index
            case .target: target = p.index
            case .tolerance: tolerance = p.index
            case .transport: transport = p.index
            case .followTransport: follow = p.index
            case .freeWheeling: freeWheeling = p.index
            case .oscPort: oscPortIndex = p.index
            case .targetLUFS: targetLUFS = p.index
            case .maxTruePeak: maxTruePeak = p.index
            }
        }
        (transportPort, followPort, freeWheelingPort, oscPortPort) = (transport, follow, freeWheeling, oscPortIndex)
        (audioIn, audioOut, readingPorts, resetPort, pausePort) = (ins, outs, readings, reset, pause)
        (targetPort, tolerancePort, targetLUFSPort, maxTruePeakPort) = (target, tolerance, targetLUFS, maxTruePeak)
        values = AtomicFloatArray(count: readings.count)
        for (k, i) in readings.enumerated() { values[k] = Float(ports[i].defaultValue) }
        // Two seconds of audio: the worker may fall that far behind before a block is dropped.
        // One channel more: the transport, per frame (1 rolling, 0 standing), as the JACK
        // client's ring carries it with --follow-transport.
        ring = AudioRing(channels: form.channels + 1, minimumCapacity: 2 * self.sampleRate)
        var c = AnalysisSettings()
        c.followTransport = true
        c.channels = form.channels
        c.layout = form.layout
        // One programme of the form's layout: its loudspeaker pairs are the correlation's.
        if form.channels > 1 { c.programmes = [Programme(name: form.name, channels: Array(0..<form.channels), layout: form.layout)] }
        guard let analyzer = try? Analyzer(settings: c, sampleRate: self.sampleRate, features: LV2Description.features) else { return nil }
        let work = Work(instance: self, analyzer: analyzer)
        worker = PosixThread(name: "jackvu-lv2") { work.run() }
    }


    deinit {
        locations.deallocate()
        lastReset.deallocate()
        rolling.deallocate()
        canary.deallocate()
    }

    /// Ends the worker (cleanup).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        worker?.join()
        worker = nil
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// The host's audio thread. Real-time safe: copies, atomics, no allocation, lock or call
    /// into the system — unless the host free-wheels (`free_wheeling`, an offline render):
    /// then no real-time deadline holds, and a full ring is waited for (the worker makes room
    /// within milliseconds) rather than a block left unmeasured. A run of 0 frames only
    /// updates the controls and the reading ports.
    func run(frames n: Int) {
        let freeWheeling = (locations[freeWheelingPort]?.assumingMemoryBound(to: Float.self).pointee ?? 0) > 0.5
        if !freeWheeling { jackvu_lv2_rtsan_enter() }
        defer { if !freeWheeling { jackvu_lv2_rtsan_exit() } }
        if canary.pointee == 1 {
            canary.pointee = 0
            let bad = UnsafeMutablePointer<Float>.allocate(capacity: 64)  // deliberately: the test's canary
            bad.deallocate()
        }
        for c in 0..<audioIn.count {
            guard let input = locations[audioIn[c]]?.assumingMemoryBound(to: Float.self),
                  let output = locations[audioOut[c]]?.assumingMemoryBound(to: Float.self) else { continue }
            if input != output { output.update(from: input, count: n) }
        }
        // The transport: rolling unless the integration follows it and it stands (the state
        // at the last position the host sent, for the whole period).
        let follow = urids.position != 0 && (locations[followPort]?.assumingMemoryBound(to: Float.self).pointee ?? 0) > 0.5
        if let events = locations[transportPort] { readEvents(events, positions: follow) }
        let gate: Float = follow ? rolling.pointee : 1
        // Into the ring; free-wheeling, in pieces of at most a quarter of it, each waited for.
        var done = 0
        while done < n {
            let m = freeWheeling ? min(n - done, ring.capacity / 4) : n
            // (Waited for without counting: nothing is dropped while free-wheeling.)
            while freeWheeling && !ring.hasSpace(for: m) && !isStopping { sched_yield() }
            guard ring.reserve(frames: m) else { break }
            for c in 0..<audioIn.count {
                if let input = locations[audioIn[c]]?.assumingMemoryBound(to: Float.self) {
                    ring.copyIn(channel: c, from: input + done, frames: m)
                } else {
                    ring.fill(channel: c, with: 0, frames: m)
                }
            }
            ring.fill(channel: audioIn.count, with: gate, frames: m)
            ring.commit(frames: m)
            done += m
        }
        if let reset = locations[resetPort]?.assumingMemoryBound(to: Float.self).pointee {
            if reset > 0.5 && lastReset.pointee <= 0.5 { resetRequests.add(1, ordering: .relaxed) }
            lastReset.pointee = reset
        }
        if let pause = locations[pausePort]?.assumingMemoryBound(to: Float.self).pointee {
            paused.store(pause > 0.5, ordering: .relaxed)
        }
        if let target = locations[targetPort]?.assumingMemoryBound(to: Float.self).pointee, target.isFinite {
            targetChoice.store(Int(max(0, min(Float(LV2Description.targetChoices.count - 1), target.rounded()))), ordering: .relaxed)
        }
        if let tolerance = locations[tolerancePort]?.assumingMemoryBound(to: Float.self).pointee, tolerance.isFinite {
            toleranceBits.store(max(0, min(10, tolerance)).bitPattern, ordering: .relaxed)
        }
        if let lufs = locations[targetLUFSPort]?.assumingMemoryBound(to: Float.self).pointee, lufs.isFinite {
            targetLUFSBits.store(max(-60, min(0, lufs)).bitPattern, ordering: .relaxed)
        }
        if let peak = locations[maxTruePeakPort]?.assumingMemoryBound(to: Float.self).pointee, peak.isFinite {
            maxTruePeakBits.store(max(-20, min(1, peak)).bitPattern, ordering: .relaxed)
        }
        if let port = locations[oscPortPort]?.assumingMemoryBound(to: Float.self).pointee, port.isFinite {
            oscPort.store(Int(max(0, min(65535, port.rounded()))), ordering: .relaxed)
        }
        // Index loops only: an iterator over an array is generic code that, unoptimised,
        // allocates its coroutine frames (RealtimeSanitizer caught `enumerated()` here).
        for k in 0..<readingPorts.count {
            locations[readingPorts[k]]?.assumingMemoryBound(to: Float.self).pointee = values[k]
        }
    }
}

extension PluginInstance {
    /// Reads the events of the control port's atom sequence (LV2 atom layout: a sequence
    /// header, then events of a 64-bit time, an atom header and its body, each padded to 8
    /// bytes; an object's body is its id, its type and properties of a key, a context and an
    /// atom): `time:Position` objects, whether the transport rolls (`time:speed` ≠ 0), when
    /// `positions`; `patch:Set` of a parameter (the JSON lines file, the log: an `atom:Path`;
    /// the OSC destinations: an `atom:String`) always. Real-time safe: pointer reads, and a copy
    /// of the value into its preallocated slot.
    func readEvents(_ sequence: UnsafeMutableRawPointer, positions: Bool) {
        let u = urids
        guard u.object != 0 else { return }
        let size = Int(sequence.load(as: UInt32.self))  // the sequence body's size
        var at = 16  // atom header (8) and the sequence body's unit and pad (8)
        let end = 8 + size
        while at + 16 <= end {
            let bodySize = Int(sequence.load(fromByteOffset: at + 8, as: UInt32.self))
            let type = sequence.load(fromByteOffset: at + 12, as: UInt32.self)
            let body = at + 16
            guard body + bodySize <= end else { break }
            if (type == u.object || type == u.blank) && bodySize >= 8 {
                let otype = sequence.load(fromByteOffset: body + 4, as: UInt32.self)
                var property: UInt32 = 0
                var value: (UnsafeRawPointer, Int, UInt32)?
                var p = body + 8
                while p + 16 <= body + bodySize {
                    let key = sequence.load(fromByteOffset: p, as: UInt32.self)
                    let valueSize = Int(sequence.load(fromByteOffset: p + 8, as: UInt32.self))
                    let valueType = sequence.load(fromByteOffset: p + 12, as: UInt32.self)
                    guard p + 16 + valueSize <= body + bodySize else { break }
                    if otype == u.position && positions && key == u.speed {
                        var speed: Double = 1
                        if valueType == u.float && valueSize >= 4 { speed = Double(sequence.load(fromByteOffset: p + 16, as: Float.self)) }
                        if valueType == u.double && valueSize >= 8 { speed = sequence.loadUnaligned(fromByteOffset: p + 16, as: Double.self) }
                        rolling.pointee = speed != 0 ? 1 : 0
                    }
                    if otype == u.patchSet && key == u.patchProperty && valueType == u.urid && valueSize >= 4 {
                        property = sequence.load(fromByteOffset: p + 16, as: UInt32.self)
                    }
                    if otype == u.patchSet && key == u.patchValue && (valueType == u.path || valueType == u.string) {
                        value = (UnsafeRawPointer(sequence + p + 16), valueSize, valueType)
                    }
                    p += 16 + ((valueSize + 7) & ~7)
                }
                if let (bytes, count, type) = value {
                    // (An index loop: an array's iterator allocates unoptimised.)
                    for i in 0..<parameters.count where parameters[i].key == property && parameters[i].type == type {
                        parameters[i].slot.store(bytes, count: count)
                    }
                }
            }
            at = body + ((bodySize + 7) & ~7)
        }
    }
}

/// A parameter's text (a file path, or the OSC destinations) handed from the host's threads (run(), or a state restore) to the worker,
/// without a lock or an allocation: a preallocated buffer under a sequence count (odd while
/// it is written); the worker copies it out and takes it if the count held still. One writer
/// at a time: LV2 never runs `run()` and a state restore together.
final class PathSlot: @unchecked Sendable {
    // @unchecked Sendable: the buffer is guarded by `sequence` (a seqlock).
    static let capacity = 4096
    private let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: PathSlot.capacity)
    private let length = Atomic<Int>(0)
    private let sequence = Atomic<Int>(0)

    deinit { bytes.deallocate() }

    /// Stores `count` bytes (a NUL and what follows it left out); a path longer than the
    /// slot is refused (left as it was).
    func store(_ source: UnsafeRawPointer, count: Int) {
        var n = 0
        let s = source.assumingMemoryBound(to: UInt8.self)
        while n < count && s[n] != 0 { n += 1 }
        guard n < PathSlot.capacity else { return }
        sequence.add(1, ordering: .sequentiallyConsistent)
        bytes.update(from: s, count: n)
        length.store(n, ordering: .sequentiallyConsistent)
        sequence.add(1, ordering: .sequentiallyConsistent)
    }

    /// The path, when it was stored again since generation `seen` (which it updates); nil
    /// when not (or while a store is under way: the next call takes it).
    func changed(since seen: inout Int) -> String? {
        guard sequence.load(ordering: .sequentiallyConsistent) != seen, let (path, generation) = load() else { return nil }
        seen = generation
        return path
    }

    /// The path (empty: none) and the generation it belongs to, nil while a store is under way.
    func load() -> (path: String, generation: Int)? {
        let before = sequence.load(ordering: .sequentiallyConsistent)
        guard before % 2 == 0 else { return nil }
        let n = length.load(ordering: .sequentiallyConsistent)
        let copy = Array(UnsafeBufferPointer(start: bytes, count: min(n, PathSlot.capacity)))
        guard sequence.load(ordering: .sequentiallyConsistent) == before else { return nil }
        return (String(decoding: copy, as: UTF8.self), before)
    }
}

/// The target's controls as the worker last took them (floats by their bits).
struct TargetSettings: Equatable {
    var choice: Int, tolerance: UInt32, lufs: UInt32, maxTruePeak: UInt32

    /// As jackvu's options make it: `target_lufs` below 0 a target of one's own (as `--target
    /// -16`: tolerance 1 LU, −1 dBTP), else the chosen profile (none: no target); then the
    /// tolerance (above 0) and the maximum true peak (0 or below) in place of its own.
    var target: LoudnessTarget? {
        let lufs = Double(Float(bitPattern: lufs)), tolerance = Double(Float(bitPattern: tolerance))
        let peak = Double(Float(bitPattern: maxTruePeak))
        var t = lufs < 0 ? LoudnessTarget(profile: "custom", targetLUFS: lufs, toleranceLU: 1, maxTruePeakDBTP: -1)
            : choice > 0 ? LoudnessTarget.profile(LV2Description.targetChoices[choice]) : nil
        if tolerance > 0 { t?.toleranceLU = tolerance }
        if peak <= 0 { t?.maxTruePeakDBTP = peak }
        return t
    }
}

/// The URIDs the transport's events are read with, mapped at instantiation.
struct URIDs: Sendable {
    var object: UInt32 = 0, blank: UInt32 = 0, float: UInt32 = 0, double: UInt32 = 0, position: UInt32 = 0, speed: UInt32 = 0
    /// `patch:Set`, its `patch:property` (an `atom:URID`) and `patch:value` (an `atom:Path`),
    /// and the JSON lines file's parameter.
    var patchSet: UInt32 = 0, patchProperty: UInt32 = 0, patchValue: UInt32 = 0, urid: UInt32 = 0, path: UInt32 = 0, json: UInt32 = 0
    var log: UInt32 = 0, string: UInt32 = 0, osc: UInt32 = 0

    init(features: UnsafePointer<UnsafePointer<LV2_Feature>?>?) {
        guard var f = features else { return }
        while let feature = f.pointee {
            if String(cString: feature.pointee.URI) == "http://lv2plug.in/ns/ext/urid#map", let data = feature.pointee.data {
                let map = data.assumingMemoryBound(to: LV2_URID_Map.self)
                func id(_ uri: String) -> UInt32 { jackvu_lv2_map(map, uri) }
                object = id("http://lv2plug.in/ns/ext/atom#Object")
                blank = id("http://lv2plug.in/ns/ext/atom#Blank")
                float = id("http://lv2plug.in/ns/ext/atom#Float")
                double = id("http://lv2plug.in/ns/ext/atom#Double")
                position = id("http://lv2plug.in/ns/ext/time#Position")
                speed = id("http://lv2plug.in/ns/ext/time#speed")
                patchSet = id("http://lv2plug.in/ns/ext/patch#Set")
                patchProperty = id("http://lv2plug.in/ns/ext/patch#property")
                patchValue = id("http://lv2plug.in/ns/ext/patch#value")
                urid = id("http://lv2plug.in/ns/ext/atom#URID")
                path = id("http://lv2plug.in/ns/ext/atom#Path")
                json = id(LV2Description.jsonParameter)
                log = id(LV2Description.logParameter)
                string = id("http://lv2plug.in/ns/ext/atom#String")
                osc = id(LV2Description.oscParameter)
            }
            f += 1
        }
    }
}

/// The worker: takes the ring's audio every `pollMicroseconds` (it paces itself: waking it
/// from the audio thread would be a system call), runs the analysis and stores each reading
/// port's value from the snapshot, through the reading table's fields.
private final class Work: @unchecked Sendable {
    // @unchecked Sendable: used by the worker thread alone after it starts.
    /// How long the worker sleeps when the ring is empty: half a hop (1024 frames, 21 ms at
    /// 48 kHz), so a reading is at most 10 ms later than its hop; every 2 ms, the wake-ups
    /// cost more than the analysis of a stereo bus (in jalv: half the worker's 10 ms a second).
    static let pollMicroseconds: useconds_t = 10_000
    unowned let instance: PluginInstance
    let analyzer: Analyzer
    var snapshot: Snapshot
    /// What each output port shows: a reading's field for a subject, or the alarms.
    enum Output {
        case field(ReadingField, Int)
        case alarm(AlarmKind)
        case alarmsActive
    }
    let outputs: [Output]
    let defaults: [Float]
    /// jackvu's alarms of the audio (`LV2Description.alarmKinds`), judged at every hop on the
    /// audio's own time.
    let alarms: AlarmEngine
    var resetsSeen = 0
    /// The ring's overruns already taken (`skipGap`), the frames after the latest gap still
    /// to leave out of the maxima, and the stderr line's pace.
    var overrunsSeen = 0
    var gapsSeen = 0
    var pendingGaps: [Int] = []
    var excludedFrames = 0
    var fellBehind = RepeatedWarning()
    /// Non-finite or absurd samples from the host (NaN, ±∞, beyond ±10⁴: an upstream plugin's
    /// fault), replaced by silence before any meter sees them (as the JACK client does, so
    /// that none is poisoned), counted in the JSON's `status` and said on stderr at most once
    /// per 10 s with the count.
    var nonFinite = 0
    var nonFiniteSaid = RepeatedWarning()
    var wasPaused = false
    var targetSeen: TargetSettings?
    /// The OSC outputs: `osc_port` (its port and the socket to it), the `osc` parameter's
    /// destinations (its generation, the text still to resolve, the sockets), the output
    /// sending to them all (`OutputFactory.osc`), and when it last sent.
    var oscPortSeen = 0
    var osc: OSCSender?
    var oscGeneration = 0
    var oscToResolve: String?
    var destinations: [OSCSender] = []
    var oscOutput: (any SnapshotOutput)?
    /// The datagrams that could not be sent (a destination's port closed, its network down),
    /// said on stderr at most once per 10 s with the count, and counted in the JSON's
    /// `status`.
    let oscFailures = Counter()
    var oscFailuresSeen = 0
    var oscRefused = RepeatedWarning()
    let resolved = ResolvedDestinations()
    var resolver: PosixThread?
    var lastSent = 0
    let addressSpace: AddressSpace
    let json: JSONLines
    /// The JSON lines file or socket (`jsonPath`): its generation, the sink, and the audio
    /// frame after which it gets its next line.
    var jsonGeneration = 0
    var jsonOutput: (any SnapshotOutput)?
    var nextLine = 0
    /// The loudness log (`logPath`): its generation and its writer.
    var logGeneration = 0
    var log: LogWriter?
    /// The observers of each hop (`Observers.make`): the alarms, and the log when one is set;
    /// made again when the log's path changes (the alarms' state is `alarms`'s).
    var observers: ObserverList

    init(instance: PluginInstance, analyzer: Analyzer) {
        self.instance = instance
        self.analyzer = analyzer
        snapshot = analyzer.makeSnapshot()
        // The readings, and the plugin's own counters (`status`: the audio the analysis fell
        // behind on, the samples replaced, the OSC datagrams refused; the rest of the status
        // is the JACK client's): in the JSON lines and over OSC alike.
        var kinds = MessageKinds(LV2Description.oscKinds.compactMap(MessageKind.init(rawValue:)))
        kinds.insert(.status)
        addressSpace = AddressSpace(prefix: "/jackvu", kinds: kinds, onlyFields: [.status: LV2Description.statusFields])
        json = JSONLines(kinds: kinds, onlyFields: [.status: LV2Description.statusFields])
        defaults = instance.readingPorts.map { Float(instance.ports[$0].defaultValue) }
        outputs = instance.readingPorts.map { i in
            switch instance.ports[i].kind {
            case .alarm(let kind): return .alarm(kind)
            case .alarmsActive: return .alarmsActive
            case .reading(let key, let subject):
                let scope: Reading.Scope = LV2Description.channelKeys.contains(key) ? .channel : LV2Description.pairKeys.contains(key) ? .pair : .programme
                guard let (_, field) = LV2Description.field(key, scope: scope) else { preconditionFailure("no reading field \(key)") }
                return .field(field, subject)
            default: preconditionFailure("not an output port")
            }
        }
        alarms = AlarmEngine(rules: LV2Description.alarmKinds(instance.form).map { AlarmRule(kind: $0) })
        observers = Work.observers(alarms: alarms, log: nil)
    }

    /// The plugin's observers: its alarms, judged on the audio's own time (a host may render
    /// faster than real time), and the loudness log at each hop.
    static func observers(alarms: AlarmEngine, log: LogWriter?) -> ObserverList {
        var plan = ObserverPlan()
        plan.alarms = alarms
        plan.clock = .audioOnWall
        plan.log = log
        return Observers.make(plan)
    }

    func run() {
        let ring = instance.ring
        while !instance.isStopping {
            let resets = instance.resetRequests.load(ordering: .relaxed)
            if resets != resetsSeen {
                resetsSeen = resets
                analyzer.resetMeasurements()
            }
            let paused = instance.paused.load(ordering: .relaxed)
            if paused != wasPaused {
                wasPaused = paused
                analyzer.setPaused(paused, programme: 0)
            }
            // The target (the snapshot's: its state and the relative readings come from it).
            let settings = TargetSettings(
                choice: instance.targetChoice.load(ordering: .relaxed), tolerance: instance.toleranceBits.load(ordering: .relaxed),
                lufs: instance.targetLUFSBits.load(ordering: .relaxed), maxTruePeak: instance.maxTruePeakBits.load(ordering: .relaxed))
            if settings != targetSeen {
                targetSeen = settings
                snapshot.programmes[0].target = settings.target
            }
            sendOSC()
            guard ring.readableFrames > 0 || ring.overruns != overrunsSeen else {
                usleep(Work.pollMicroseconds)
                continue
            }
            analyseReadable()
        }
        // The end (cleanup: the host runs the plugin no more): the audio still in the ring,
        // and the log's last block with it (as the JACK client's worker: no silence after
        // it, which the host's signal may not have).
        if ring.readableFrames > 0 || ring.overruns != overrunsSeen { analyseReadable() }
        observers.finish()
        closeLog()
        resolver?.join()
    }

    /// Analyses the ring's readable frames, cut at the gaps `run()` left when it found the
    /// ring full and dropped a period (the worker fell behind: a loaded machine, or a host
    /// faster than real time that does not say it free-wheels). As the JACK client's worker
    /// does, nothing is analysed across a gap as if it were one signal: the analysis block
    /// starts again at it, and the step it leaves in every filter's history counts for no
    /// maximum (`gapFrames` frames). Said on stderr, at most once per 10 s, with the count.
    func analyseReadable() {
        let ring = instance.ring
        let available = ring.readableFrames
        let start = ring.framesRead, end = start + available
        let overruns = ring.overruns
        if overruns != overrunsSeen {
            if let held = fellBehind.occurred(at: monotonicNanoseconds()) {
                let since = held > 0 ? " (and \(held) more times since)" : ""
                Work.say("the analysis fell behind the host: \(overruns - overrunsSeen) periods of audio were not metered\(since)")
            }
            overrunsSeen = overruns
            snapshot.status.overruns = overruns
            let places = ring.gaps(since: &gapsSeen)
            pendingGaps += places ?? [end]
            if places == nil {
                // More gaps than the ring remembers: where they are is unknown, so what is
                // readable now is let go and the analysis starts again after it.
                ring.consume(frames: available)
                return
            }
        }
        guard available > 0 else { return }
        sanitise(available)
        let (first, _) = ring.regions(channel: 0, frames: available)
        var cuts = [start, start + first.count, end] + pendingGaps.filter { $0 > start && $0 < end }
        cuts = Array(Set(cuts)).sorted()
        for (a, b) in zip(cuts, cuts.dropFirst()) where b > a {
            if pendingGaps.contains(a) {
                analyzer.restartBlock()
                excludedFrames = Work.gapFrames
            }
            let offset = a - start, piece = first.count
            analyse(frames: b - a) { c in
                let (one, two) = ring.regions(channel: c, frames: available)
                return offset < piece ? one.baseAddress! + offset : two.baseAddress! + (offset - piece)
            }
        }
        ring.consume(frames: available)
        pendingGaps.removeAll { $0 < end }
    }

    /// Replaces the non-finite and absurd samples of the `available` readable frames by
    /// silence (`Vector.sanitize`, the ring's copy: the host's audio passes through as it
    /// came), counted and said.
    func sanitise(_ available: Int) {
        let ring = instance.ring
        var replaced = 0
        for c in 0..<ring.channels {
            let (a, b) = ring.regions(channel: c, frames: available)
            replaced += Vector.sanitize(UnsafeMutableBufferPointer(mutating: a))
            if b.count > 0 { replaced += Vector.sanitize(UnsafeMutableBufferPointer(mutating: b)) }
        }
        guard replaced > 0 else { return }
        nonFinite += replaced
        snapshot.status.nonFiniteSamples = nonFinite
        if let held = nonFiniteSaid.occurred(at: monotonicNanoseconds()) {
            let since = held > 0 ? " (and \(held) more times since the last line)" : ""
            Work.say("non-finite or absurd input samples (NaN, ±∞, beyond ±10⁴) replaced by silence: \(nonFinite) so far\(since)")
        }
    }

    /// The frames after a gap that count for no maximum: the true-peak filter rings for
    /// 24 frames after a step; 256, as the JACK client leaves out after a connection change.
    static let gapFrames = 256

    /// Analyses `frames` from `source`; those still within a gap's `excludedFrames` count
    /// for the loudness, levels and spectrum, not for the maxima and clip counts.
    func analyse(frames: Int, from source: (Int) -> UnsafePointer<Float>) {
        var done = 0
        if excludedFrames > 0 {
            let n = min(frames, excludedFrames)
            analyzer.append(frames: n, from: source, leavingOutMaximaOf: Array(0..<instance.form.channels), hop: publish)
            excludedFrames -= n
            done = n
        }
        if done < frames { analyzer.append(frames: frames - done, from: { source($0) + done }, hop: publish) }
    }

    /// The readings as OSC bundles to `osc_port` on 127.0.0.1 and to the `osc` parameter's
    /// destinations, `LV2Description.oscRate` a second (the worker's thread: a socket's send
    /// never waits, and a refused one is dropped: the next comes a tenth of a second later).
    /// The destinations' names are resolved on a thread of their own (`jackvu-lv2-osc`): a
    /// lookup may take seconds, which the worker must not wait for; one at a time, the last
    /// text set winning. A URL that is not one, or does not resolve: one line on stderr.
    func sendOSC() {
        let port = instance.oscPort.load(ordering: .relaxed)
        if port != oscPortSeen {
            oscPortSeen = port
            osc = port > 0 ? (try? OSCEndpoint(url: "osc.udp://127.0.0.1:\(port)")).flatMap { try? OSCSender(endpoint: $0) } : nil
            oscOutput = nil
        }
        if let text = instance.oscURLs.changed(since: &oscGeneration) { oscToResolve = text }
        if let done = resolved.take() {
            destinations = done
            oscOutput = nil
        }
        if let text = oscToResolve, !resolved.busy.load(ordering: .acquiring) {
            oscToResolve = nil
            resolver?.join()  // (done: not busy)
            resolved.busy.store(true, ordering: .releasing)
            let handoff = resolved
            resolver = PosixThread(name: "jackvu-lv2-osc") { handoff.put(Work.senders(text)) }
        }
        guard osc != nil || !destinations.isEmpty, snapshot.sampleRate > 0 else { return }
        let now = monotonicNanoseconds()
        guard now - lastSent >= 1_000_000_000 / LV2Description.oscRate else { return }
        lastSent = now
        if oscOutput == nil {
            oscOutput = OutputFactory.osc(to: (osc.map { [$0] } ?? []) + destinations, prefix: addressSpace.prefix, failures: oscFailures)
        }
        oscOutput?.take(OutputUpdate(snapshot: snapshot, addressSpace: addressSpace, json: json))
        let failures = oscFailures.count
        snapshot.status.oscSendFailures = failures
        if failures != oscFailuresSeen, oscRefused.occurred(at: now) != nil {
            Work.say("OSC: datagrams to a destination could not be sent (its port closed, or its network down): \(failures) so far (said at most every 10 s)")
            oscFailuresSeen = failures
        }
    }

    /// A socket to each of `text`'s OSC URLs (separated by spaces or commas; `--osc`'s forms),
    /// resolved; each that is not a URL or does not resolve gets one line on stderr.
    static func senders(_ text: String) -> [OSCSender] {
        text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\n" || $0 == "\t" }).compactMap { url in
            do {
                return try OSCSender(endpoint: try OSCEndpoint(url: String(url)))
            } catch {
                say("OSC destination: \(error)")
                return nil
            }
        }
    }

    /// A JSON line of the readings (jackvu's `--format json`, the OSC output's selection)
    /// written to the JSON lines file or socket (`LineSink`) after each second of audio (live,
    /// a second; a host rendering offline gets as many lines as the audio has seconds); the
    /// sink opened when its path changes. After each hop.
    func writeJSON() {
        if let path = instance.jsonPath.changed(since: &jsonGeneration) {
            jsonOutput = path.isEmpty ? nil : OutputFactory.lines(to: path, say: Work.say)
        }
        guard let jsonOutput, snapshot.sampleRate > 0, snapshot.framesAnalysed >= nextLine else { return }
        nextLine = (snapshot.framesAnalysed / snapshot.sampleRate + 1) * snapshot.sampleRate
        jsonOutput.take(OutputUpdate(snapshot: snapshot, addressSpace: addressSpace, json: json))
    }

    /// The loudness log (its blocks, peaks and events, as jackvu's `--log`), opened when its
    /// path changes (claimed: one writer a file), the previous one closed with a `stop` event;
    /// a log that cannot be opened gets one line on stderr. Before each hop's observers.
    func openLog() {
        guard let path = instance.logPath.changed(since: &logGeneration) else { return }
        closeLog()
        guard !path.isEmpty else { return }
        do {
            // Claimed now or not at all (the JACK client retries a log it cannot create yet;
            // a plugin's user sets the path again).
            let file = try LogFile(path: path)
            let p = snapshot.programmes[0]
            log = LogWriter(path: path, programmes: [LoggedProgramme(name: p.name, channels: p.channels, target: p.target)], file: file)
            observers = Work.observers(alarms: alarms, log: log)
            observers.start()
        } catch {
            Work.say("cannot use the loudness log \(path) (\(error))")
        }
    }

    /// One line on stderr, which hosts keep as their log.
    static func say(_ message: String) {
        let line = "jackvu (LV2): \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    /// Ends the log: a `stop` event, and its writer's last transaction.
    func closeLog() {
        guard log != nil else { return }
        observers.stop()
        log = nil
        observers = Work.observers(alarms: alarms, log: nil)
    }

    /// After a hop: the snapshot, its observers (the alarms, the log), each reading port's
    /// value, the JSON line.
    func publish() {
        analyzer.write(into: &snapshot)
        snapshot.publishedNanoseconds = monotonicNanoseconds()
        openLog()
        observers.observe(&snapshot, analyzer: analyzer)
        for (k, output) in outputs.enumerated() {
            let field: ReadingField, subject: Int
            switch output {
            case .alarm(let kind):
                instance.values[k] = snapshot.alarms.states.contains { $0.kind == kind && $0.active } ? 1 : 0
                continue
            case .alarmsActive:
                instance.values[k] = Float(snapshot.alarms.activeCount)
                continue
            case .field(let f, let s): (field, subject) = (f, s)
            }
            let v: Float
            switch field.value(snapshot, subject) {
            // The target state: its place among the states (−1: no target).
            case .text(let t): v = Float(LV2Description.states.firstIndex(of: t) ?? -1)
            // No value (no target, no integrated loudness yet): the port's default.
            case .missing: v = field.unit == .text ? -1 : defaults[k]
            case let value: v = value.number.map { Float($0) } ?? .nan
            }
            if v.isFinite { instance.values[k] = v }
        }
        writeJSON()
    }
}

// MARK: The C entry point

/// The descriptors, one per form, made once (their URI strings live as long as the library);
/// never written after (nonisolated(unsafe): the pointers are read-only data to every thread).
nonisolated(unsafe) private let descriptors: [UnsafeMutablePointer<LV2_Descriptor>] = LV2Description.forms.map { form in
    let d = UnsafeMutablePointer<LV2_Descriptor>.allocate(capacity: 1)
    d.initialize(to: LV2_Descriptor(
        URI: UnsafePointer(strdup(form.uri)),
        instantiate: { descriptor, rate, _, features in
            guard let descriptor, let uri = descriptor.pointee.URI,
                  let form = LV2Description.forms.first(where: { $0.uri == String(cString: uri) }),
                  let instance = PluginInstance(form: form, sampleRate: rate, features: features) else { return nil }
            return LV2_Handle(Unmanaged.passRetained(instance).toOpaque())
        },
        connect_port: { handle, port, location in
            guard let handle else { return }
            let instance = Unmanaged<PluginInstance>.fromOpaque(handle).takeUnretainedValue()
            if Int(port) < instance.ports.count { instance.locations[Int(port)] = location }
        },
        activate: nil,
        run: { handle, frames in
            guard let handle else { return }
            Unmanaged<PluginInstance>.fromOpaque(handle).takeUnretainedValue().run(frames: Int(frames))
        },
        deactivate: nil,
        cleanup: { handle in
            guard let handle else { return }
            let instance = Unmanaged<PluginInstance>.fromOpaque(handle)
            instance.takeUnretainedValue().stop()
            instance.release()
        },
        extension_data: { uri in
            guard let uri, String(cString: uri) == "http://lv2plug.in/ns/ext/state#interface" else { return nil }
            return UnsafeRawPointer(stateInterface)
        }))
    return d
}

/// LV2 state: what a host saves with its session beside the control ports' values — the JSON
/// lines file's and the log's paths (abstract when the host maps paths, so a session can move)
/// and the OSC destinations.
nonisolated(unsafe) private let stateInterface: UnsafeMutablePointer<LV2_State_Interface> = {
    let i = UnsafeMutablePointer<LV2_State_Interface>.allocate(capacity: 1)
    i.initialize(to: LV2_State_Interface(
        save: { handle, store, storeHandle, _, features in
            guard let handle, let store else { return LV2_STATE_ERR_UNKNOWN }
            let instance = Unmanaged<PluginInstance>.fromOpaque(handle).takeUnretainedValue()
            for (key, type, slot) in instance.parameters {
                guard let (path, _) = slot.load(), !path.isEmpty else { continue }
                let status = jackvu_lv2_store_path(store, storeHandle, key, type, path, type == instance.urids.path ? 1 : 0, features)
                guard status == LV2_STATE_SUCCESS else { return status }
            }
            return LV2_STATE_SUCCESS
        },
        restore: { handle, retrieve, retrieveHandle, _, features in
            guard let handle, let retrieve else { return LV2_STATE_ERR_UNKNOWN }
            let instance = Unmanaged<PluginInstance>.fromOpaque(handle).takeUnretainedValue()
            for (key, type, slot) in instance.parameters {
                var buffer = [CChar](repeating: 0, count: PathSlot.capacity)
                let length = jackvu_lv2_retrieve_path(
                    retrieve, retrieveHandle, key, type, type == instance.urids.path ? 1 : 0, features, &buffer, buffer.count)
                guard length >= 0 else { return LV2_STATE_ERR_UNKNOWN }
                buffer.withUnsafeBytes { slot.store($0.baseAddress!, count: length) }
            }
            return LV2_STATE_SUCCESS
        }))
    return i
}()

/// LV2's entry point: the descriptor of form `index`, nil past the last.
@_cdecl("lv2_descriptor")
public func lv2Descriptor(_ index: UInt32) -> UnsafePointer<LV2_Descriptor>? {
    Int(index) < descriptors.count ? UnsafePointer(descriptors[Int(index)]) : nil
}

/// The `osc` parameter's destinations, handed from the thread that resolves them to the worker.
final class ResolvedDestinations: Sendable {
    private let senders = Mutex<[OSCSender]?>(nil)
    /// Set by the worker when it starts a resolver, cleared by the resolver when it is done.
    let busy = Atomic<Bool>(false)

    func put(_ resolved: [OSCSender]) {
        senders.withLock { $0 = resolved }
        busy.store(false, ordering: .releasing)
    }

    /// What a resolver finished since the last call (nil: nothing new).
    func take() -> [OSCSender]? {
        senders.withLock { value in
            defer { value = nil }
            return value
        }
    }
}

