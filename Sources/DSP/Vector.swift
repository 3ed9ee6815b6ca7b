import DSPAVX2
#if canImport(Glibc)
import Glibc
#endif

// vDSP-like vector helpers written with Swift SIMD types.
//
// Every helper works on caller-owned buffers (in place or into `result`), never allocates and
// never throws, so all of them are real-time safe. Each doc comment shows the plain scalar loop
// that the helper computes; `jackvu-bench simd` compares them against exactly those loops.

/// Vector helpers over `Float` buffers, in the spirit of Apple's vDSP.
///
/// Lengths: where a helper takes two inputs, or an input and a `result`, it processes
/// `min` of their counts. Real-time safe.
public enum Vector {
    @usableFromInline typealias V8 = SIMD8<Float>

    @inlinable @inline(__always)
    static func load(_ p: UnsafePointer<Float>, _ i: Int) -> V8 {
        UnsafeRawPointer(p + i).loadUnaligned(as: V8.self)
    }

    @inlinable @inline(__always)
    static func store(_ v: V8, _ p: UnsafeMutablePointer<Float>, _ i: Int) {
        UnsafeMutableRawPointer(p + i).storeBytes(of: v, as: V8.self)
    }

    /// `for i in 0..<n { result[i] = a[i] * b[i] }`. `result` may alias `a` or `b`.
    /// Real-time safe.
    @inlinable
    public static func multiply(
        _ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>,
        result: UnsafeMutableBufferPointer<Float>
    ) {
        let n = min(a.count, b.count, result.count)
        guard n > 0, let pa = a.baseAddress, let pb = b.baseAddress, let pr = result.baseAddress
        else { return }
        var i = 0
        while i + 8 <= n {
            store(load(pa, i) * load(pb, i), pr, i)
            i += 8
        }
        while i < n {
            pr[i] = pa[i] * pb[i]
            i += 1
        }
    }

    /// `for i in 0..<n { result[i] = a[i] * scalar }`. `result` may alias `a`. Real-time safe.
    @inlinable
    public static func multiply(
        _ a: UnsafeBufferPointer<Float>, scalar: Float, result: UnsafeMutableBufferPointer<Float>
    ) {
        let n = min(a.count, result.count)
        guard n > 0, let pa = a.baseAddress, let pr = result.baseAddress else { return }
        let s = V8(repeating: scalar)
        var i = 0
        while i + 8 <= n {
            store(load(pa, i) * s, pr, i)
            i += 8
        }
        while i < n {
            pr[i] = pa[i] * scalar
            i += 1
        }
    }

    /// `var s: Float = 0; for x in a { s += x }; return s`. Real-time safe.
    @inlinable
    public static func sum(_ a: UnsafeBufferPointer<Float>) -> Float {
        guard let p = a.baseAddress else { return 0 }
        let n = a.count
        var acc0 = V8(), acc1 = V8()
        var i = 0
        while i + 16 <= n {
            acc0 += load(p, i)
            acc1 += load(p, i + 8)
            i += 16
        }
        var s = (acc0 + acc1).sum()
        while i < n {
            s += p[i]
            i += 1
        }
        return s
    }

    /// `var s: Float = 0; for x in a { s += x * x }; return s`. Real-time safe.
    @inlinable
    public static func sumOfSquares(_ a: UnsafeBufferPointer<Float>) -> Float {
        guard let p = a.baseAddress else { return 0 }
        let n = a.count
        var acc0 = V8(), acc1 = V8()
        var i = 0
        while i + 16 <= n {
            let x0 = load(p, i), x1 = load(p, i + 8)
            // Not addProduct: a fused multiply-add without FMA hardware in the baseline
            // x86-64 target becomes a library call per lane.
            acc0 += x0 * x0
            acc1 += x1 * x1
            i += 16
        }
        var s = (acc0 + acc1).sum()
        while i < n {
            s += p[i] * p[i]
            i += 1
        }
        return s
    }

    /// The largest lane of `v` (none NaN), by halves: the standard library's `max()` on a
    /// SIMD vector is a generic call, not inlined, that cost more than the scan it ended.
    @inlinable @inline(__always)
    public static func largest(_ v: SIMD8<Float>) -> Float {
        var a = v.lowHalf
        let b = v.highHalf
        a.replace(with: b, where: b .> a)
        return largest(a)
    }

    @inlinable @inline(__always)
    public static func largest(_ v: SIMD4<Float>) -> Float {
        var a = v.lowHalf
        let b = v.highHalf
        a.replace(with: b, where: b .> a)
        return Swift.max(a[0], a[1])
    }

    /// `var m: Float = 0; for x in a { m = max(m, abs(x)) }; return m`. Real-time safe.
    @inlinable
    public static func maxMagnitude(_ a: UnsafeBufferPointer<Float>) -> Float {
        guard let p = a.baseAddress else { return 0 }
        let n = a.count
        var acc = V8()
        var i = 0
        while i + 8 <= n {
            // Compare-and-select rather than pointwiseMax, whose NaN rules keep it scalar.
            var x = load(p, i)
            x.replace(with: -x, where: x .< 0)
            acc.replace(with: x, where: x .> acc)
            i += 8
        }
        var m = largest(acc)
        while i < n {
            m = Swift.max(m, Swift.abs(p[i]))
            i += 1
        }
        return m
    }

    /// `maxMagnitude` of each block of `block` samples of `x[0 ..< count]` in turn, in
    /// `maxima[0]`, `maxima[1]`, … (the last block possibly shorter): one call for many short
    /// blocks, through `DSPAVX2` where the machine has AVX2 (the same values). Real-time safe.
    public static func blockMaxMagnitudes(_ x: UnsafePointer<Float>, count: Int, block: Int, into maxima: UnsafeMutablePointer<Float>) {
        if MachineFeatures.x86_64v3 {
            DSPAVX2.blockMaxMagnitudes(x, count, block, maxima)
            return
        }
        var b = 0, start = 0
        while start < count {
            let end = Swift.min(start + block, count)
            maxima[b] = maxMagnitude(UnsafeBufferPointer(start: x + start, count: end - start))
            b += 1
            start = end
        }
    }

    /// Stereo frames of 24-bit little-endian integers (six bytes a frame; eight more bytes
    /// readable past the last) to two planar channels of floats, four frames at a time where
    /// the machine has AVX2 (`DSPAVX2.stereoInt24ToFloat`: a byte shuffle, the same values as
    /// frame by frame). Returns the frames done: `count` rounded down to a multiple of four,
    /// or 0 elsewhere (the caller converts the rest). Real-time safe.
    public static func stereoInt24ToFloat(_ frames: UnsafeRawPointer, count: Int, left: UnsafeMutablePointer<Float>,
                                          right: UnsafeMutablePointer<Float>) -> Int
    {
        MachineFeatures.x86_64v3 ? DSPAVX2.stereoInt24ToFloat(frames, count, left, right) : 0
    }

    /// Mono 24-bit little-endian integers (three bytes a sample; eight more bytes readable
    /// past the last) to floats, eight at a time where the machine has AVX2
    /// (`DSPAVX2.monoInt24ToFloat`: a byte shuffle, the same values as sample by sample).
    /// Returns the samples done: `count` rounded down to a multiple of eight, or 0 elsewhere
    /// (the caller converts the rest). Real-time safe.
    public static func monoInt24ToFloat(_ samples: UnsafeRawPointer, count: Int, into out: UnsafeMutablePointer<Float>) -> Int {
        MachineFeatures.x86_64v3 ? DSPAVX2.monoInt24ToFloat(samples, count, out) : 0
    }

    /// Magnitudes of interleaved complex values (re, im, re, im, …):
    /// `for k in 0..<n { result[k] = sqrt(c[2k] * c[2k] + c[2k+1] * c[2k+1]) * scale }`,
    /// with `n = min(c.count / 2, result.count)`. Real-time safe.
    @inlinable
    public static func magnitudes(
        interleaved c: UnsafeBufferPointer<Float>, scale: Float = 1,
        result: UnsafeMutableBufferPointer<Float>
    ) {
        let n = min(c.count / 2, result.count)
        guard n > 0, let pc = c.baseAddress, let pr = result.baseAddress else { return }
        let s = V8(repeating: scale)
        var k = 0
        while k + 8 <= n {
            let z = UnsafeRawPointer(pc + 2 * k).loadUnaligned(as: SIMD16<Float>.self)
            let re = z.evenHalf, im = z.oddHalf
            let m = re * re + im * im
            store(m.squareRoot() * s, pr, k)
            k += 8
        }
        while k < n {
            let re = pc[2 * k], im = pc[2 * k + 1]
            pr[k] = (re * re + im * im).squareRoot() * scale
            k += 1
        }
    }

    /// Index and value of the largest element in `range` (first one on ties):
    /// `var j = range.lowerBound; for i in range where a[i] > a[j] { j = i }; return (j, a[j])`.
    /// Returns nil for an empty range. Real-time safe.
    @inlinable
    public static func maxIndex(_ a: UnsafeBufferPointer<Float>, in range: Range<Int>)
        -> (index: Int, value: Float)?
    {
        let r = range.clamped(to: 0..<a.count)
        guard !r.isEmpty else { return nil }
        var best = r.lowerBound
        var bestValue = a[best]
        for i in r where a[i] > bestValue {
            best = i
            bestValue = a[i]
        }
        return (best, bestValue)
    }

    /// Amplitude to decibels: `for i in 0..<n { result[i] = 20 * log10(max(a[i], floor)) }`,
    /// with `floor` a linear amplitude (> 0). `result` may alias `a`. Real-time safe.
    @inlinable
    public static func amplitudeToDecibels(
        _ a: UnsafeBufferPointer<Float>, floor: Float, result: UnsafeMutableBufferPointer<Float>
    ) {
        let n = min(a.count, result.count)
        let floorDB = 20 * log10f(floor)
        for i in 0..<n {
            result[i] = Decibels.fromAmplitude(a[i], floor: floorDB)
        }
    }

    /// `for i in 0..<n { result[i] = value }`. Real-time safe.
    @inlinable
    public static func fill(_ result: UnsafeMutableBufferPointer<Float>, with value: Float) {
        guard let p = result.baseAddress else { return }
        let n = result.count
        let v = V8(repeating: value)
        var i = 0
        while i + 8 <= n {
            store(v, p, i)
            i += 8
        }
        while i < n {
            p[i] = value
            i += 1
        }
    }

    /// The largest sample magnitude the meters take: 10^4, +80 dBFS. Float audio may go past
    /// full scale, but not by this much: such a sample is damage, not audio (and a meter's
    /// sum of squares could overflow Float: a sample of 10^20 made every reading infinite).
    public static let sampleLimit: Float = 10_000

    /// Replaces NaN, ±infinity and samples beyond ±`sampleLimit` in `a` with 0 and returns
    /// how many it replaced; flushes subnormal samples to 0 (they are not
    /// counted: they are inaudible, but slow every IIR filter that meets them). Real-time
    /// safe; about one compare per sample when nothing is wrong.
    @inlinable
    public static func sanitize(_ a: UnsafeMutableBufferPointer<Float>) -> Int {
        guard let p = a.baseAddress else { return 0 }
        let n = a.count
        let largest = V8(repeating: sampleLimit), smallest = V8(repeating: .leastNormalMagnitude)
        let zero = V8()
        var replaced = 0
        var i = 0
        while i + 8 <= n {
            let x = load(p, i)
            let m = x.replacing(with: -x, where: x .< zero)
            // NaN fails every comparison, so `.!(m .<= largest)` is NaN, infinity or too large.
            let bad = .!(m .<= largest) .| ((m .< smallest) .& (m .> zero))
            if any(bad) {
                for j in i..<(i + 8) { replaced += fix(&p[j]) }
            }
            i += 8
        }
        while i < n {
            replaced += fix(&p[i])
            i += 1
        }
        return replaced
    }

    /// Sets a non-finite, out-of-range (beyond ±`sampleLimit`) or subnormal `x` to 0; returns
    /// 1 for a non-finite or out-of-range one.
    @inlinable
    static func fix(_ x: inout Float) -> Int {
        if !(x >= -sampleLimit && x <= sampleLimit) {  // NaN fails both
            x = 0
            return 1
        }
        if x.isSubnormal { x = 0 }
        return 0
    }
}
