#if canImport(Glibc)
import Glibc
#endif
import DSP
import JackVU
import Outputs

/// `jackvu-bench simd|worker`: the benchmarks of BENCHMARKS.md that need no JACK server.
/// Build with `-c release`; timings in a debug build mean nothing.
@main
enum Bench {
    static func main() {
        let args = Array(CommandLine.arguments.dropFirst())
        switch args.first {
        case "simd": simd()
        case "worker": worker(seconds: args.count > 1 ? Double(args[1]) ?? 60 : 60)
        default:
            print("usage: jackvu-bench simd | worker [SECONDS]")
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

    static func worker(seconds: Double) {
        let rate = 48000
        print("Worker (Analyzer) CPU time, default settings (FFT 4096, 75% overlap, 48 bars), \(rate) Hz, 256-frame chunks, \(Int(seconds)) s of audio")
        print("channels   CPU s   CPU ms per s of audio per channel   real-time factor")
        for channels in [1, 2, 8] {
            var c = Configuration()
            c.channels = channels
            let analyzer = try! Analyzer(configuration: c, sampleRate: rate)
            var snapshot = Snapshot(channels: channels, barCount: c.bars)
            let chunk = 256
            let buffers = (0..<channels).map { ch -> UnsafeMutablePointer<Float> in
                let p = UnsafeMutablePointer<Float>.allocate(capacity: rate)
                var seed = UInt32(ch + 1)
                for i in 0..<rate {  // a tone plus noise, one second, looped
                    seed = seed &* 1_664_525 &+ 1_013_904_223
                    p[i] = 0.3 * sinf(2 * .pi * 440 * Float(i) / Float(rate)) + 0.05 * Float(Int32(bitPattern: seed)) / Float(Int32.max)
                }
                return p
            }
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
