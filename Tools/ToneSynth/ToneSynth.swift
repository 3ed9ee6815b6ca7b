#if canImport(Glibc)
import Glibc
#endif

/// What the tone generator should play: up to `ToneRequest.capacity` sines, each at the same
/// peak amplitude. Plain values only (an inline array), so the real-time thread can read it
/// without touching the heap.
public struct ToneRequest: Sendable {
    public static let capacity = 16
    /// Frequencies in Hz; the first `count` are used.
    public var frequencies = InlineArray<16, Double>(repeating: 0)
    public var count = 0
    /// Peak amplitude of each sine (linear, 1.0 = 0 dBFS).
    public var amplitude = 0.0
    /// Bumped on every new request.
    public var generation = 0

    public init() {}

    /// A request for `frequencies` (at most `capacity` are kept). Not real-time safe.
    public init(frequencies list: [Double], amplitude: Double, generation: Int = 0) {
        count = min(list.count, ToneRequest.capacity)
        for k in 0..<count { frequencies[k] = list[k] }
        self.amplitude = amplitude
        self.generation = generation
    }
}

/// One sine voice; `gain` ramps linearly towards `target`, so that nothing starts, stops or
/// changes level with a click.
struct Voice {
    /// Frequency, Hz.
    var frequency = 0.0
    /// Phase, radians, 0 ..< 2π.
    var phase = 0.0
    /// Current amplitude (linear).
    var gain = 0.0
    /// Amplitude it ramps to (linear).
    var target = 0.0
    var isSounding: Bool { gain > 0 || target > 0 }
}

/// A bank of sine voices with linear amplitude ramps: the original tone generator's
/// allocation-free render loop, with a ramp on every start, stop and level change.
///
/// One thread at a time: the real-time thread calls `apply` and `render`.
public final class ToneSynth: @unchecked Sendable {
    // @unchecked Sendable: the voices are touched by one thread at a time (see above).

    /// Time a ramp takes from silence to full scale, in seconds.
    public let rampSeconds: Double
    /// Voices: twice the request capacity, so a full chord can fade out while the next fades in.
    private let voices: UnsafeMutablePointer<Voice>
    private let voiceCount = 2 * ToneRequest.capacity

    /// Not real-time safe (allocates).
    public init(rampSeconds: Double) {
        self.rampSeconds = rampSeconds
        voices = .allocate(capacity: voiceCount)
        voices.initialize(repeating: Voice(), count: voiceCount)
    }

    deinit { voices.deallocate() }

    /// Plays `request` from now on: voices not in it fade out, new frequencies fade in on a
    /// free voice, voices that stay ramp to the new amplitude. Real-time safe.
    public func apply(_ request: ToneRequest) {
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

    /// Writes the next `out.count` samples at `sampleRate` (Hz); returns the number of voices
    /// still sounding. Real-time safe.
    @discardableResult
    public func render(into out: UnsafeMutableBufferPointer<Float>, sampleRate: Double) -> Int {
        for i in 0..<out.count { out[i] = 0 }
        let step = 1 / max(1, rampSeconds * sampleRate)  // gain change per sample
        let twoPi = 2 * Double.pi
        var sounding = 0
        for v in 0..<voiceCount where voices[v].isSounding {
            var voice = voices[v]  // hot loop on a local copy
            let increment = twoPi * voice.frequency / sampleRate
            for i in 0..<out.count {
                if voice.gain < voice.target {
                    voice.gain = min(voice.target, voice.gain + step)
                } else if voice.gain > voice.target {
                    voice.gain = max(voice.target, voice.gain - step)
                }
                out[i] += Float(voice.gain * sin(voice.phase))
                voice.phase += increment
                if voice.phase >= twoPi { voice.phase -= twoPi }
            }
            voices[v] = voice
            if voice.isSounding { sounding += 1 }
        }
        return sounding
    }
}
