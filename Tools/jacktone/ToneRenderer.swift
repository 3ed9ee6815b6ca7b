#if canImport(Glibc)
import Glibc
#endif
import Jack
import Realtime

/// What the tone generator should play: up to `ToneRequest.capacity` sines, each at the same
/// peak amplitude. Plain values only (an inline array), so the real-time thread can read it
/// without touching the heap.
struct ToneRequest {
    static let capacity = 16
    /// Frequencies in Hz; the first `count` are used.
    var frequencies = InlineArray<16, Double>(repeating: 0)
    var count = 0
    /// Peak amplitude of each sine (linear, 1.0 = 0 dBFS).
    var amplitude = 0.0
    /// Bumped on every new request.
    var generation = 0
}

/// One sine voice; `gain` ramps linearly towards `target` so that nothing starts, stops or
/// changes with a click.
struct Voice {
    var frequency = 0.0
    /// Phase in radians, 0 ..< 2π.
    var phase = 0.0
    var gain = 0.0
    var target = 0.0
    var isSounding: Bool { gain > 0 || target > 0 }
}

/// The real-time renderer: sums the voices into the output port. Mutable state lives in
/// preallocated storage behind `let` pointers; no allocation, no lock, no I/O.
final class ToneRenderer: ProcessHandler, @unchecked Sendable {
    // @unchecked Sendable: `voices` and `appliedGeneration` are touched only by the process
    // callback (and by warm-up before activation); requests arrive through a triple buffer.
    let port: Port
    let requests: TripleBuffer<ToneRequest>
    /// The server's sample rate in Hz (updated by the notification handler).
    let sampleRate: Counter
    /// Length of a full ramp (0 → 1), in seconds.
    let rampSeconds: Double
    /// Number of voices still sounding after the last cycle.
    let sounding = Counter()
    private let voices: UnsafeMutablePointer<Voice>
    private let voiceCount = 2 * ToneRequest.capacity
    private let appliedGeneration: UnsafeMutablePointer<Int>

    init(port: Port, requests: TripleBuffer<ToneRequest>, sampleRate: Counter, rampSeconds: Double) {
        self.port = port
        self.requests = requests
        self.sampleRate = sampleRate
        self.rampSeconds = rampSeconds
        voices = .allocate(capacity: voiceCount)
        voices.initialize(repeating: Voice(), count: voiceCount)
        appliedGeneration = .allocate(capacity: 1)
        appliedGeneration.initialize(to: -1)
    }

    deinit {
        voices.deallocate()
        appliedGeneration.deallocate()
    }

    /// Real-time safe.
    func process(_ scope: ProcessScope) -> Bool {
        requests.refresh()
        requests.withFront { request in
            if request.generation != appliedGeneration.pointee {
                apply(request)
                appliedGeneration.pointee = request.generation
            }
        }
        let out = scope.output(port)
        let rate = Double(max(1, sampleRate.count))
        let step = 1 / max(1, rampSeconds * rate)  // gain change per sample
        for i in 0..<out.count { out[i] = 0 }
        var stillSounding = 0
        for v in 0..<voiceCount where voices[v].isSounding {
            var voice = voices[v]
            let increment = 2 * Double.pi * voice.frequency / rate
            for i in 0..<out.count {
                if voice.gain < voice.target {
                    voice.gain = min(voice.target, voice.gain + step)
                } else if voice.gain > voice.target {
                    voice.gain = max(voice.target, voice.gain - step)
                }
                out[i] += Float(voice.gain * sin(voice.phase))
                voice.phase += increment
                if voice.phase >= 2 * Double.pi { voice.phase -= 2 * Double.pi }
            }
            voices[v] = voice
            if voice.isSounding { stillSounding += 1 }
        }
        sounding.store(stillSounding)
        return true
    }

    /// Voices not in the request fade out; new frequencies start on a free voice and fade in;
    /// voices that stay change level with a ramp.
    private func apply(_ request: ToneRequest) {
        for v in 0..<voiceCount where voices[v].isSounding {
            var keep = false
            for k in 0..<request.count where request.frequencies[k] == voices[v].frequency { keep = true }
            voices[v].target = keep ? request.amplitude : 0
        }
        for k in 0..<request.count {
            let f = request.frequencies[k]
            var present = false
            for v in 0..<voiceCount where voices[v].isSounding && voices[v].frequency == f { present = true }
            if present { continue }
            for v in 0..<voiceCount where !voices[v].isSounding {
                voices[v] = Voice(frequency: f, phase: 0, gain: 0, target: request.amplitude)
                break
            }
        }
    }
}

/// Keeps the renderer's sample rate in step with the server and notices a shutdown.
final class ToneNotifications: NotificationHandler {
    let sampleRate: Counter
    let onShutdown: @Sendable (String) -> Void

    init(sampleRate: Counter, onShutdown: @escaping @Sendable (String) -> Void) {
        self.sampleRate = sampleRate
        self.onShutdown = onShutdown
    }

    func sampleRateChanged(_ rate: Int) { sampleRate.store(rate) }
    func serverShutdown(reason: String) { onShutdown(reason) }
}
