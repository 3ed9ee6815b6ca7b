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
    final class Stepper: ProcessHandler, @unchecked Sendable {
        let port: AudioOutPort
        let on = Atomic<Bool>(false)
        let startedMicroseconds = Atomic<UInt64>(0)
        var phase: Float = 0
        var wasOn = false
        var increment: Float = 0
        init(port: AudioOutPort) { self.port = port }
        func process(_ scope: ProcessScope) -> Bool {
            let out = scope.output(port)
            let playing = on.load(ordering: .acquiring)
            if playing && !wasOn { startedMicroseconds.store(scope.cycleStartMicroseconds, ordering: .releasing) }
            wasOn = playing
            for i in 0..<out.count {
                out[i] = playing ? 0.5 * sinf(phase) : 0  // 0.5 = -6 dBFS peak
                phase += increment
                if phase > 2 * Float.pi { phase -= 2 * Float.pi }
            }
            return true
        }
    }

    final class Watcher: ProcessHandler, @unchecked Sendable {
        let port: AudioInPort
        let armed = Atomic<Bool>(false)
        let seenMicroseconds = Atomic<UInt64>(0)
        let value = Atomic<UInt32>(0)  // Float bits of the latest meter value
        init(port: AudioInPort) { self.port = port }
        func process(_ scope: ProcessScope) -> Bool {
            let v = scope.input(port).first ?? 0
            value.store(v.bitPattern, ordering: .relaxed)
            if v > 0.05 && armed.load(ordering: .acquiring) {
                seenMicroseconds.store(scope.cycleStartMicroseconds, ordering: .releasing)
                armed.store(false, ordering: .releasing)
            }
            return true
        }
    }

    static func run(client target: String, trials: Int) {
        do {
            let stepClient = try Client(name: "jvlat-step-\(getpid())", server: nil)
            let watchClient = try Client(name: "jvlat-watch-\(getpid())", server: nil)
            let stepper = Stepper(port: try stepClient.registerAudioOutput(name: "out"))
            stepper.increment = 2 * Float.pi * 1000 / Float(stepClient.sampleRate)
            let watcher = Watcher(port: try watchClient.registerAudioInput(name: "in"))
            stepClient.setHandlers(process: stepper, notifications: nil)
            watchClient.setHandlers(process: watcher, notifications: nil)
            try stepClient.activate()
            try watchClient.activate()
            try stepClient.connect(stepper.port.name, to: "\(target):in_1")
            try watchClient.connect("\(target):meter_1", to: watcher.port.name)
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
