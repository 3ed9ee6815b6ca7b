#if canImport(Glibc)
import Glibc
#endif
import Jack
import Realtime
import ToneSynth

/// The real-time renderer: takes new requests from the triple buffer and lets the synth fill
/// the output port. Preallocated; no allocation, no lock, no I/O. The client's process
/// callback is a closure that calls `process` (`Client.setHandlers(notifications:process:)`).
final class ToneRenderer: @unchecked Sendable {
    // @unchecked Sendable: `synth` and `appliedGeneration` are touched only by the process
    // callback (and by warm-up before activation); requests arrive through a triple buffer.
    let port: AudioOutPort
    let requests: TripleBuffer<ToneRequest>
    /// The server's sample rate in Hz (updated by the notification handler).
    let sampleRate: Counter
    /// Number of voices still sounding after the last cycle.
    let sounding = Counter()
    /// Test aid (`inject` on stdin): the next `injectFrames` output samples are replaced by
    /// `injectKind`'s value — 1 NaN, 2 +infinity, 3 −infinity, 4 a subnormal — so that the
    /// meters' handling of bad audio can be tested with a real client.
    let injectKind = Counter()
    let injectFrames = Counter()
    private let synth: ToneSynth
    private let appliedGeneration: UnsafeMutablePointer<Int>

    /// `--inverted`: the output with its polarity inverted.
    let inverted: AudioOutPort?

    /// `--noise`: white noise ports, each with its own generator (xorshift64*), peaking at
    /// `noisePeak`.
    let noise: [AudioOutPort]
    let noisePeak: Float
    /// `--dc`: a constant added to the output; `--bits`: the output rounded to words of that
    /// many bits (0: not).
    let offset: Float
    let wordBits: Int
    private let noiseState: UnsafeMutablePointer<UInt64>

    init(
        port: AudioOutPort, requests: TripleBuffer<ToneRequest>, sampleRate: Counter, rampSeconds: Double, inverted: AudioOutPort? = nil,
        noise: [AudioOutPort] = [], noisePeak: Float = 0, offset: Float = 0, wordBits: Int = 0
    ) {
        self.offset = offset
        self.wordBits = wordBits
        self.noise = noise
        self.noisePeak = noisePeak
        noiseState = .allocate(capacity: max(1, noise.count))
        for k in 0..<max(1, noise.count) { (noiseState + k).initialize(to: 0x9E37_79B9_7F4A_7C15 &* UInt64(k + 1)) }
        self.port = port
        self.inverted = inverted
        self.requests = requests
        self.sampleRate = sampleRate
        synth = ToneSynth(rampSeconds: rampSeconds)
        appliedGeneration = .allocate(capacity: 1)
        appliedGeneration.initialize(to: -1)
    }

    deinit {
        appliedGeneration.deallocate()
        noiseState.deallocate()
    }

    /// Real-time safe.
    func process(_ scope: ProcessScope) -> Bool {
        requests.refresh()
        requests.withFront { request in
            if request.generation != appliedGeneration.pointee {
                synth.apply(request)
                appliedGeneration.pointee = request.generation
            }
        }
        let output = scope.output(port)
        sounding.store(synth.render(into: output, sampleRate: Double(max(1, sampleRate.count))))
        let remaining = injectFrames.count
        if remaining > 0 {
            let value: Float
            switch injectKind.count {
            case 1: value = .nan
            case 2: value = .infinity
            case 3: value = -.infinity
            default: value = .leastNonzeroMagnitude
            }
            let n = min(remaining, output.count)
            for i in 0..<n { output[i] = value }
            injectFrames.store(remaining - n)
        }
        if offset != 0 || wordBits > 0 {
            let scale = wordBits > 0 ? Float(1 << (wordBits - 1)) : 1
            let top = (scale - 1) / scale
            for i in 0..<output.count {
                var x = output[i] + offset
                if wordBits > 0 { x = min(top, max(-1, (x * scale).rounded() / scale)) }
                output[i] = x
            }
        }
        if let inverted {
            let out = scope.output(inverted)
            for i in 0..<min(out.count, output.count) { out[i] = -output[i] }
        }
        for (k, p) in noise.enumerated() {
            let out = scope.output(p)
            var x = noiseState[k]
            let scale = noisePeak / Float(1 << 23)
            for i in 0..<out.count {
                x ^= x >> 12; x ^= x << 25; x ^= x >> 27
                let r = x &* 0x2545_F491_4F6C_DD1D
                out[i] = Float(Int32(truncatingIfNeeded: r >> 40) - (1 << 23)) * scale
            }
            noiseState[k] = x
        }
        return true
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
