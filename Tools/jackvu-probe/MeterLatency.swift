#if canImport(Glibc)
import Glibc
#endif
import Jack
import Synchronization

/// `jackvu-probe meter-latency CLIENT [TRIALS]`: how long a level step at jackvu's input takes
/// to show on its meter port, in the server's frames. Two JACK clients of this process: a
/// stepper plays silence, then a 1 kHz sine at -6 dBFS into CLIENT:in_1; a watcher reads
/// CLIENT:meter_1. The delay of a trial is from the cycle whose buffer starts the sine to the
/// first cycle whose meter buffer leaves the floor (> 0.05 of the 0..1 scale), both on JACK's
/// cycle clock (every client sees the same start time for the same cycle), as frames. Between
/// trials the meter must fall back to the floor: run jackvu with a fast `--fall` (1000 dB/s).
/// Prints one line per trial and a summary: `median FRAMES frames (P periods)`.
enum MeterLatency {
    /// What the step client's cycles and the main thread share.
    final class Step: @unchecked Sendable {
        let on = Atomic<Bool>(false)
        let startedMicroseconds = Atomic<UInt64>(0)
    }

    /// What the watch client's cycles and the main thread share.
    final class Watch: @unchecked Sendable {
        let armed = Atomic<Bool>(false)
        let seenMicroseconds = Atomic<UInt64>(0)
        let value = Atomic<UInt32>(0)  // Float bits of the latest meter value
    }

    /// The stepper's cycle: silence, then from the cycle `step.on` is first seen a 1 kHz sine
    /// at -6 dBFS, noting that cycle's start.
    static func stepper(_ port: AudioOutPort, _ step: Step, sampleRate: Int) -> (ProcessScope) -> Bool {
        var phase: Float = 0, wasOn = false
        let increment = 2 * Float.pi * 1000 / Float(sampleRate)
        return { scope in
            let out = scope.output(port)
            let playing = step.on.load(ordering: .acquiring)
            if playing && !wasOn { step.startedMicroseconds.store(scope.cycleStartMicroseconds, ordering: .releasing) }
            wasOn = playing
            for i in 0..<out.count {
                out[i] = playing ? 0.5 * sinf(phase) : 0  // 0.5 = -6 dBFS peak
                phase += increment
                if phase > 2 * Float.pi { phase -= 2 * Float.pi }
            }
            return true
        }
    }

    /// The watcher's cycle: the meter's value, and while armed the first cycle it leaves the
    /// floor.
    static func watcher(_ port: AudioInPort, _ watch: Watch) -> (ProcessScope) -> Bool {
        { scope in
            let v = scope.input(port).first ?? 0
            watch.value.store(v.bitPattern, ordering: .relaxed)
            if v > 0.05 && watch.armed.load(ordering: .acquiring) {
                watch.seenMicroseconds.store(scope.cycleStartMicroseconds, ordering: .releasing)
                watch.armed.store(false, ordering: .releasing)
            }
            return true
        }
    }

    static func run(client target: String, trials: Int) {
        do {
            let stepClient = try Client(name: "jvlat-step-\(getpid())", server: nil)
            let watchClient = try Client(name: "jvlat-watch-\(getpid())", server: nil)
            let out = try stepClient.registerAudioOutput(name: "out"), input = try watchClient.registerAudioInput(name: "in")
            let stepper = Step(), watcher = Watch()
            stepClient.setHandlers(notifications: nil, process: MeterLatency.stepper(out, stepper, sampleRate: stepClient.sampleRate))
            watchClient.setHandlers(notifications: nil, process: MeterLatency.watcher(input, watcher))
            try stepClient.activate()
            try watchClient.activate()
            try stepClient.connect(out.name, to: "\(target):in_1")
            try watchClient.connect("\(target):meter_1", to: input.name)
            let rate = Double(stepClient.sampleRate), period = stepClient.bufferSize
            print("meter latency of \(target) at \(Int(rate)) Hz, \(period) frames per period, \(trials) trials")
            var delays: [Int] = []
            for trial in 1...trials {
                stepper.on.store(false, ordering: .releasing)
                // Wait for the meter to rest on the floor (and a little longer).
                var quiet = 0
                let deadline = Probe.monotonicSeconds() + 5
                while quiet < 10 && Probe.monotonicSeconds() < deadline {
                    quiet = Float(bitPattern: watcher.value.load(ordering: .relaxed)) < 0.01 ? quiet + 1 : 0
                    usleep(10_000)
                }
                guard quiet >= 10 else { print("trial \(trial): the meter did not fall back to the floor (use --fall 1000)"); continue }
                usleep(UInt32.random(in: 0..<UInt32(period * 1_000_000 / Int(rate))))  // a random phase against the worker
                watcher.seenMicroseconds.store(0, ordering: .relaxed)
                watcher.armed.store(true, ordering: .releasing)
                stepper.on.store(true, ordering: .releasing)
                let end = Probe.monotonicSeconds() + 1
                while watcher.seenMicroseconds.load(ordering: .acquiring) == 0 && Probe.monotonicSeconds() < end { usleep(1_000) }
                let seen = watcher.seenMicroseconds.load(ordering: .acquiring)
                let started = stepper.startedMicroseconds.load(ordering: .acquiring)
                guard seen > 0, started > 0, seen >= started else { print("trial \(trial): no step seen within 1 s"); continue }
                let frames = Int((Double(seen - started) * rate / 1e6).rounded())
                delays.append(frames)
                print("trial \(trial): \(frames) frames")
            }
            stepClient.close()
            watchClient.close()
            guard !delays.isEmpty else { print("no trial succeeded"); exit(1) }
            delays.sort()
            let median = delays[delays.count / 2]
            print("median \(median) frames (\(Probe.fmt(Double(median) / Double(period))) periods), min \(delays.first!), max \(delays.last!), \(delays.count) trials")
        } catch {
            print("meter-latency: \(error)")
            exit(69)
        }
    }
}
