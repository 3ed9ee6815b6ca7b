#if canImport(Glibc)
import Glibc
#endif
import DSP
import Analysis
import Vocabulary

/// `jackvu-bench`: the benchmarks of BENCHMARKS.md of the analysis core alone — the SIMD
/// helpers, the worker's CPU per meter and per `--send` list, programmes, bad input, the true
/// peak's lanes, the integration's cost over a week — on DSP and Analysis only (no JACK, no
/// outputs). A running jackvu is measured from outside by `jackvu-probe`. Build with
/// `-c release`; timings in a debug build mean nothing.
@main
enum Bench {
    static func main() {
        let args = Array(CommandLine.arguments.dropFirst())
        switch args.first {
        case "simd": simd()
        case "worker": worker(seconds: args.count > 1 ? Double(args[1]) ?? 60 : 60)
        case "send": send(seconds: args.count > 1 ? Double(args[1]) ?? 30 : 30)
        case "programmes": programmes(seconds: args.count > 1 ? Double(args[1]) ?? 10 : 10)
        case "meters": meters(seconds: args.count > 1 ? Double(args[1]) ?? 10 : 10, channels: args.count > 2 ? Int(args[2]) ?? 2 : 2)
        case "bad-audio": badAudio(seconds: args.count > 1 ? Double(args[1]) ?? 20 : 20)
        case "truepeak-lanes": truePeakLanes(seconds: args.count > 1 ? Double(args[1]) ?? 10 : 10, channels: args.count > 2 ? Int(args[2]) ?? 8 : 8)
        case "integration": integration()
        default:
            print("usage: jackvu-bench simd | worker [SECONDS] | bad-audio [SECONDS] | truepeak-lanes [SECONDS [CHANNELS]] | send [SECONDS] | meters [SECONDS [CHANNELS]] | programmes [SECONDS] | integration")
            print("(a running jackvu measured from outside: jackvu-probe)")
            exit(args.isEmpty ? 0 : 64)
        }
    }

    // MARK: SIMD helpers against the scalar loops their documentation shows

    static func simd() {
        let n = 4096
        let a = UnsafeMutableBufferPointer<Float>.allocate(capacity: n)
        let b = UnsafeMutableBufferPointer<Float>.allocate(capacity: n)
        let c = UnsafeMutableBufferPointer<Float>.allocate(capacity: 2 * n)
        let r = UnsafeMutableBufferPointer<Float>.allocate(capacity: n)
        var seed: UInt32 = 1
        for i in 0..<n {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            a[i] = Float(Int32(bitPattern: seed)) / Float(Int32.max)
            b[i] = Float(i % 97) / 97
        }
        for i in 0..<(2 * n) { c[i] = a[i % n] - 0.25 }
        let ca = UnsafeBufferPointer(a), cb = UnsafeBufferPointer(b), cc = UnsafeBufferPointer(c)

        print("SIMD helpers vs scalar loops, \(n)-sample buffers, best of 7 rounds (ns per call)")
        print("helper                    SIMD ns   scalar ns   scalar/SIMD")
        compare("multiply(a, b)", { Vector.multiply(ca, cb, result: r); sink(r[7]) },
                { scalarMultiply(ca, cb, r); sink(r[7]) })
        compare("sumOfSquares", { sink(Vector.sumOfSquares(ca)) }, { sink(scalarSumOfSquares(ca)) })
        compare("sum", { sink(Vector.sum(ca)) }, { sink(scalarSum(ca)) })
        compare("maxMagnitude", { sink(Vector.maxMagnitude(ca)) }, { sink(scalarMaxMagnitude(ca)) })
        compare("magnitudes(interleaved)", { Vector.magnitudes(interleaved: cc, scale: 0.5, result: r); sink(r[9]) },
                { scalarMagnitudes(cc, 0.5, r); sink(r[9]) })
        compare("fill", { Vector.fill(r, with: 0.5); sink(r[3]) }, { scalarFill(r, 0.5); sink(r[3]) })
    }

    static func compare(_ name: String, _ simd: () -> Void, _ scalar: () -> Void) {
        var bestSIMD = Double.infinity, bestScalar = Double.infinity
        let calls = 20_000
        for _ in 0..<7 {  // alternate, so both see the same machine noise
            bestSIMD = min(bestSIMD, time(calls, simd))
            bestScalar = min(bestScalar, time(calls, scalar))
        }
        let pad = { (s: String, w: Int) in s + String(repeating: " ", count: max(0, w - s.count)) }
        print(pad(name, 24), pad(fmt(bestSIMD), 9), pad(fmt(bestScalar), 11), fmt(bestScalar / bestSIMD) + "×")
    }

    static func time(_ calls: Int, _ body: () -> Void) -> Double {
        let t0 = monotonic()
        for _ in 0..<calls { body() }
        return (monotonic() - t0) * 1e9 / Double(calls)
    }

    // MARK: Worker CPU time per second of audio

    /// CPU time of the analysis for `kinds` (what `--send` computes), 2 channels.
    static func cpuPerChannelSecond(
        kinds: MessageKinds, seconds: Double, channels: Int = 2, programmes: [String] = [], displayed: Bool = false
    ) -> Double {
        let rate = 48000, chunk = 256
        // As `jackvu --send KINDS` (with the displays: `--tui`) computes it, with the default
        // meter on the ports (RMS, which needs nothing more).
        var c = AnalysisSettings()
        c.channels = channels
        c.programmes = programmes.map { try! Programme.parse($0) }
        let analyzer = try! Analyzer(settings: c, sampleRate: rate, features: .needed(kinds: kinds, displayed: displayed))
        var snapshot = analyzer.makeSnapshot()
        let buffers = testSignal(channels: channels, rate: rate)
        let total = Int(seconds * Double(rate))
        let t0 = threadCPU()
        var offset = 0
        while offset < total {
            let at = offset % rate
            let n = min(chunk, rate - at)
            analyzer.append(frames: n, from: { UnsafePointer(buffers[$0] + at) }) { analyzer.write(into: &snapshot) }
            offset += n
        }
        let cpu = threadCPU() - t0
        sink(snapshot.channels[0].rmsDBFS)
        for b in buffers { b.deallocate() }
        return cpu / seconds / Double(channels) * 1000
    }

    /// One second of a 440 Hz tone plus noise per channel (looped by the callers).
    static func testSignal(channels: Int, rate: Int) -> [UnsafeMutablePointer<Float>] {
        (0..<channels).map { ch -> UnsafeMutablePointer<Float> in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: rate)
            var seed = UInt32(ch + 1)
            for i in 0..<rate {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                p[i] = 0.3 * sinf(2 * .pi * 440 * Float(i) / Float(rate)) + 0.05 * Float(Int32(bitPattern: seed)) / Float(Int32.max)
            }
            return p
        }
    }

    static func pad(_ s: String, _ w: Int) -> String { s + String(repeating: " ", count: max(0, w - s.count)) }

    /// Worker CPU (ms per second of audio per channel) of each `--send` list, best of 3 runs
    /// alternating between the lists.
    static func bestOfThree(_ lists: [String], seconds: Double, channels: Int) -> [Double] {
        // "LIST+displays": what a display adds (the pictures: goniometer, bit meter, histogram).
        let selections = lists.map { try! MessageKinds.parse($0.replacing("+displays", with: "")) }
        var best = [Double](repeating: .infinity, count: selections.count)
        for _ in 0..<3 {
            for (i, kinds) in selections.enumerated() {
                best[i] = min(best[i], cpuPerChannelSecond(
                    kinds: kinds, seconds: seconds, channels: channels, displayed: lists[i].hasSuffix("+displays")))
            }
        }
        return best
    }

    /// 64 channels' loudness as today's one programme, and as 1, 8 and 32 programmes of their
    /// own (`--send rms,loudness,programme,target,plr,correlation`), best of 3 alternating.
    static func programmes(seconds: Double) {
        let channels = 64
        print("Worker CPU per second of audio per channel, loudness by programme, \(channels) channels, 48 kHz, 256-frame chunks, \(Int(seconds)) s of audio per run, best of 3 alternating")
        let kinds = try! MessageKinds.parse("rms,loudness,programme,target,plr,correlation")
        let cases: [(String, [String])] = [
            ("default programme (64 ch)", []),
            ("1 programme (64 ch)", ["all=1-64"]),
            ("8 programmes (7.1 each)", (0..<8).map { "p\($0)=\(8 * $0 + 1)-\(8 * $0 + 8):7.1" }),
            ("32 programmes (stereo)", (0..<32).map { "p\($0)=\(2 * $0 + 1)-\(2 * $0 + 2)" }),
        ]
        var best = [Double](repeating: .infinity, count: cases.count)
        for _ in 0..<3 {
            for (i, c) in cases.enumerated() {
                best[i] = min(best[i], cpuPerChannelSecond(kinds: kinds, seconds: seconds, channels: channels, programmes: c.1))
            }
        }
        print(pad("programmes", 28), "ms/s/ch", "  vs default")
        for (i, c) in cases.enumerated() { print(pad(c.0, 28), pad(fmt(best[i]), 7), "  " + fmt(best[i] / best[0]) + "×") }
    }

    /// Each meter alone (`--send rms,KIND`: the block levels plus that meter) and all of
    /// them, best of 3 runs alternating: where the worker's time goes.
    static func meters(seconds: Double, channels: Int) {
        print("Worker CPU per second of audio per channel, each meter alone (--send rms,KIND) and all, \(channels) channels, 48 kHz, 256-frame chunks, \(Int(seconds)) s of audio per run, best of 3 alternating")
        let lists = ["rms", "rms,bars", "rms,pitch", "rms,thirds", "rms,truepeak", "rms,loudness", "rms,vu", "rms,ppm", "rms,k", "rms,dpeak",
                     "rms,correlation", "rms,bits", "rms,stereo", "rms,histogram", "all", "all+displays"]
        let best = bestOfThree(lists, seconds: seconds, channels: channels)
        // Cycles per sample at the measured clock (`measuredMegahertz`), and the share of this
        // build's measured single-precision peak (`peakFlopsPerSecond`) that a meter's
        // arithmetic reaches: its floating-point operations per sample, counted from the code
        // (below), over its cycles per sample less the block levels' (`rms`, in every list).
        let megahertz = measuredMegahertz()
        let peak = peakFlopsPerSecond()
        let peakPerCycle = peak / (megahertz * 1e6)
        let counted = flopsPerSample(sampleRate: 48000)
        print("--send              ms CPU per s per channel   cycles/sample (less rms)   flops/sample   share of peak")
        for (i, list) in lists.enumerated() {
            let cycles = (best[i] - (i == 0 ? 0 : best[0])) * 1e-3 * megahertz * 1e6 / 48000
            var line = pad(list, 20) + pad(fmt(best[i]), 27) + pad(String(Int(cycles.rounded())), 27)
            if let flops = counted[list] {
                line += pad(String(Int(flops.rounded())), 15) + fmt(100 * flops / (cycles * peakPerCycle)) + " %"
            }
            print(line)
        }
        print("peak of this build: \(fmt(peak / 1e9)) GFLOP/s on one core (twelve independent SIMD4 multiply-add chains), \(fmt(peakPerCycle)) flops a cycle at the measured \(Int(megahertz)) MHz (\(Int(cpuMegahertz())) MHz stated)")
    }

    /// The clock /proc/cpuinfo states for the first CPU, MHz.
    static func cpuMegahertz() -> Double {
        guard let f = fopen("/proc/cpuinfo", "r") else { return 0 }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, 512, f) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasPrefix("cpu MHz"), let colon = text.firstIndex(of: ":") {
                return Double(String(text[text.index(after: colon)...].filter { !$0.isWhitespace })) ?? 0
            }
        }
        return 0
    }

    /// Single-precision multiplies and adds per second on this thread, as this build compiles
    /// them (no FMA in the default x86-64 target): twelve independent chains of
    /// a = a·m + c on SIMD4 vectors, enough to cover the multiply and add latencies; best of 3.
    static func peakFlopsPerSecond() -> Double {
        (0..<3).map { _ in multiplyAddRate(iterations: 20_000_000) }.max()!
    }

    @inline(never)
    static func multiplyAddRate(iterations: Int) -> Double {
        let m = SIMD4<Float>(repeating: 0.9999999), c = SIMD4<Float>(repeating: 1e-7)
        var a0 = SIMD4<Float>(repeating: 1), a1 = a0 + c, a2 = a1 + c, a3 = a2 + c, a4 = a3 + c, a5 = a4 + c
        var a6 = a5 + c, a7 = a6 + c, a8 = a7 + c, a9 = a8 + c, a10 = a9 + c, a11 = a10 + c
        let t0 = threadCPU()
        for _ in 0..<iterations {
            a0 = a0 * m + c; a1 = a1 * m + c; a2 = a2 * m + c; a3 = a3 * m + c
            a4 = a4 * m + c; a5 = a5 * m + c; a6 = a6 * m + c; a7 = a7 * m + c
            a8 = a8 * m + c; a9 = a9 * m + c; a10 = a10 * m + c; a11 = a11 * m + c
        }
        let t = threadCPU() - t0
        sink((a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11).sum())
        return Double(iterations * 12 * 8) / t
    }

    /// The core's clock as it runs now: one chain of dependent single-precision adds, each
    /// waiting for the one before, runs at one add per `addLatency` cycles (2 on AMD's Zen 5,
    /// this machine's CPU family 26; 3 on Zen 2–4; 4 on Intel's recent cores: set
    /// JACKVU_ADD_LATENCY); the clock /proc/cpuinfo states is the base clock, not the boost.
    @inline(never)
    static func measuredMegahertz() -> Double {
        let latency = Double(getenv("JACKVU_ADD_LATENCY").flatMap { Int(String(cString: $0)) } ?? 2)
        let c = SIMD4<Float>(repeating: 1e-7)
        var best = 0.0
        for _ in 0..<3 {
            var a = SIMD4<Float>(repeating: 1)
            let iterations = 100_000_000
            let t0 = threadCPU()
            for _ in 0..<iterations { a = a + c }
            best = max(best, Double(iterations) / (threadCPU() - t0))
            sink(a.sum())
        }
        return best * latency / 1e6
    }

    /// Floating-point operations per sample per channel of each meter's arithmetic, counted from
    /// the code (multiplies, adds, subtracts; not compares, absolute values or moves):
    /// - true peak: the 4× values of every frame (`TruePeakMeter`, folded): 12 sums, 12
    ///   differences, 3 × 12 multiplies, 3 × 11 adds, c4 and c12: 95 (crests' sixteen phases
    ///   not counted: they are few);
    /// - 1/3 octaves (`ThirdOctaveLanes`): per band per sample at its stage's rate three
    ///   sections of 5 and one of 4, the square and the sum: 21; per stage sample the shared
    ///   numerator 1 and, but in the last stage, the low-pass's 28.5 (numerator 3, three sections
    ///   of 7 and one of 4, the gain on every second sample);
    /// - the FFT bars and YIN, per hop computed (23.4 a second at the defaults): a real FFT of
    ///   4,096 points counted as FFTW counts it, 2.5·N·log₂N; the bars add the window (N), the
    ///   magnitudes (3 a bin) and the sums (2 a bin); YIN three FFTs, the cross spectrum (6 a
    ///   bin) and its 2N prefix sums and N/2 normalised differences (about 6 each).
    static func flopsPerSample(sampleRate: Int) -> [String: Double] {
        let fs = Double(sampleRate)
        let rates = ThirdOctaveBank(sampleRate: fs).bandRates
        var thirds = 0.0
        let stages = Set(rates)
        for rate in stages {
            let bands = Double(rates.filter { $0 == rate }.count)
            let last = rate == stages.min()
            thirds += (bands * 21 + 1 + (last ? 0 : 28.5)) * rate / fs
        }
        let n = Double(FFTSize.default), fft = 2.5 * n * log2(n)
        let computedHopsPerSample = 1 / 2048.0  // every second hop of 1,024 frames
        let bars = (fft + n + 3 * n / 2 + 2 * n / 2) * computedHopsPerSample
        let yin = (3 * fft + 6 * n / 2 + 2 * n + 6 * n / 2) * computedHopsPerSample
        return ["rms,truepeak": 95, "rms,thirds": thirds, "rms,bars": bars, "rms,pitch": yin]
    }

    /// `--send peak,rms` against every message, alternating, best of 3 each.
    static func send(seconds: Double) {
        print("Worker CPU per second of audio per channel by --send, 2 channels, 48 kHz, \(Int(seconds)) s of audio per run, best of 3 alternating")
        let lists = ["peak,rms", "all", "rms,pitch", "peak,rms,loudness"]
        let best = bestOfThree(lists, seconds: seconds, channels: 2)
        print("--send              ms CPU per s per channel   vs all")
        for (i, list) in lists.enumerated() {
            print(pad(list, 20), pad(fmt(best[i]), 27), fmt(best[1] / best[i]) + "× less")
        }
    }

    static func worker(seconds: Double) {
        let rate = 48000
        print("Worker (Analyzer) CPU time, default settings (FFT 4096, 75% overlap, 48 bars), \(rate) Hz, 256-frame chunks, \(Int(seconds)) s of audio")
        print("channels   CPU s   CPU ms per s of audio per channel   real-time factor")
        for channels in [1, 2, 8] {
            var c = AnalysisSettings()
            c.channels = channels
            let analyzer = try! Analyzer(settings: c, sampleRate: rate)
            var snapshot = analyzer.makeSnapshot()
            let chunk = 256
            let buffers = testSignal(channels: channels, rate: rate)
            let total = Int(seconds * Double(rate))
            let t0 = threadCPU()
            var offset = 0
            while offset < total {
                let at = offset % rate
                let n = min(chunk, rate - at)
                analyzer.append(frames: n, from: { UnsafePointer(buffers[$0] + at) }) {
                    analyzer.write(into: &snapshot)
                }
                offset += n
            }
            let cpu = threadCPU() - t0
            sink(snapshot.channels[0].rmsDBFS)
            let perChannel = cpu / seconds / Double(channels) * 1000
            print("\(channels)          \(fmt(cpu))   \(fmt(perChannel))                               \(fmt(seconds / cpu))×")
        }
    }

    /// The worker's cost with bad input: each 256-frame chunk is copied (as the ring holds
    /// it), sanitized (`Vector.sanitize`, as `Worker.drain` does) and analysed, for a tone, for
    /// audio that is all NaN, a tone with every 8th sample NaN, and all subnormal; and the tone
    /// without the sanitizing pass. 2 channels at 48 kHz, best of 3 runs, alternating.
    static func badAudio(seconds: Double) {
        let rate = 48000, channels = 2, chunk = 256
        let tone = testSignal(channels: channels, rate: rate)
        func variant(_ make: (Int, Float) -> Float) -> [UnsafeMutablePointer<Float>] {
            (0..<channels).map { c in
                let p = UnsafeMutablePointer<Float>.allocate(capacity: rate)
                for i in 0..<rate { p[i] = make(i, tone[c][i]) }
                return p
            }
        }
        let inputs: [(String, [UnsafeMutablePointer<Float>], Bool)] = [
            ("tone, not sanitized", tone, false),
            ("tone", tone, true),
            ("every 8th sample NaN", variant { i, x in i % 8 == 0 ? .nan : x }, true),
            ("all NaN", variant { _, _ in .nan }, true),
            ("all +infinity", variant { _, _ in .infinity }, true),
            ("all subnormal", variant { _, _ in .leastNonzeroMagnitude }, true),
        ]
        let scratch = (0..<channels).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: chunk) }
        var best = [Double](repeating: .infinity, count: inputs.count)
        for _ in 0..<3 {
            for (k, input) in inputs.enumerated() {
                var c = AnalysisSettings()
                c.channels = channels
                let analyzer = try! Analyzer(settings: c, sampleRate: rate)
                var snapshot = analyzer.makeSnapshot()
                let total = Int(seconds * Double(rate))
                let t0 = threadCPU()
                var offset = 0
                while offset < total {
                    let at = offset % rate
                    let n = min(chunk, rate - at)
                    for ch in 0..<channels {
                        scratch[ch].update(from: input.1[ch] + at, count: n)
                        if input.2 { sink(Float(Vector.sanitize(UnsafeMutableBufferPointer(start: scratch[ch], count: n)))) }
                    }
                    analyzer.append(frames: n, from: { UnsafePointer(scratch[$0]) }) { analyzer.write(into: &snapshot) }
                    offset += n
                }
                best[k] = min(best[k], threadCPU() - t0)
                sink(snapshot.channels[0].rmsDBFS)
            }
        }
        print("Worker with bad input: copy + Vector.sanitize + Analyzer, \(channels) channels, \(rate) Hz, \(chunk)-frame chunks, \(Int(seconds)) s of audio, best of 3")
        print("input                      CPU ms per s of audio per channel   / tone")
        for (k, input) in inputs.enumerated() {
            let perChannel = best[k] / seconds / Double(channels) * 1000
            let name = input.0 + String(repeating: " ", count: max(0, 26 - input.0.count))
            print("\(name) \(fmt(perChannel))                                 \(fmt(best[k] / best[1]))×")
        }
    }

    // MARK: Scalar loops, exactly as the helpers' documentation shows them

    @inline(never) static func scalarMultiply(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>, _ r: UnsafeMutableBufferPointer<Float>) {
        for i in 0..<a.count { r[i] = a[i] * b[i] }
    }
    @inline(never) static func scalarSumOfSquares(_ a: UnsafeBufferPointer<Float>) -> Float {
        var s: Float = 0
        for x in a { s += x * x }
        return s
    }
    @inline(never) static func scalarSum(_ a: UnsafeBufferPointer<Float>) -> Float {
        var s: Float = 0
        for x in a { s += x }
        return s
    }
    @inline(never) static func scalarMaxMagnitude(_ a: UnsafeBufferPointer<Float>) -> Float {
        var m: Float = 0
        for x in a { m = max(m, abs(x)) }
        return m
    }
    @inline(never) static func scalarMagnitudes(_ c: UnsafeBufferPointer<Float>, _ scale: Float, _ r: UnsafeMutableBufferPointer<Float>) {
        for k in 0..<(c.count / 2) { r[k] = (c[2 * k] * c[2 * k] + c[2 * k + 1] * c[2 * k + 1]).squareRoot() * scale }
    }
    @inline(never) static func scalarFill(_ r: UnsafeMutableBufferPointer<Float>, _ v: Float) {
        for i in 0..<r.count { r[i] = v }
    }

    // MARK: Helpers

    nonisolated(unsafe) static var sinkValue: Float = 0
    @inline(never) static func sink(_ x: Float) { sinkValue += x }

    static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func threadCPU() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func fmt(_ x: Double) -> String {
        let scaled = (x * 100).rounded() / 100
        return String(scaled)
    }
}

