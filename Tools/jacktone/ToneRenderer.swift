#if canImport(Glibc)
import Glibc
#endif
import Jack
import Realtime
import ToneSynth

/// The real-time renderer: takes new requests from the triple buffer and lets the synth fill
/// the output port. Preallocated; no allocation, no lock, no I/O.
final class ToneRenderer: ProcessHandler, @unchecked Sendable {
    // @unchecked Sendable: `synth` and `appliedGeneration` are touched only by the process
    // callback (and by warm-up before activation); requests arrive through a triple buffer.
    let port: Port
    let requests: TripleBuffer<ToneRequest>
    /// The server's sample rate in Hz (updated by the notification handler).
    let sampleRate: Counter
    /// Number of voices still sounding after the last cycle.
    let sounding = Counter()
    private let synth: ToneSynth
    private let appliedGeneration: UnsafeMutablePointer<Int>

    init(port: Port, requests: TripleBuffer<ToneRequest>, sampleRate: Counter, rampSeconds: Double) {
        self.port = port
        self.requests = requests
        self.sampleRate = sampleRate
        synth = ToneSynth(rampSeconds: rampSeconds)
        appliedGeneration = .allocate(capacity: 1)
        appliedGeneration.initialize(to: -1)
    }

    deinit { appliedGeneration.deallocate() }

    /// Real-time safe.
    func process(_ scope: ProcessScope) -> Bool {
        requests.refresh()
        requests.withFront { request in
            if request.generation != appliedGeneration.pointee {
                synth.apply(request)
                appliedGeneration.pointee = request.generation
            }
        }
        sounding.store(synth.render(into: scope.output(port), sampleRate: Double(max(1, sampleRate.count))))
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
