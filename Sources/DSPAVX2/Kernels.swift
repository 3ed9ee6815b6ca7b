/// DSP kernels compiled for x86-64 with AVX2 (Package.swift gives this module
/// `-target-cpu haswell` on x86-64: 256-bit vectors, three-operand instructions), where a
/// `SIMD4<Double>` is one register instead of two.
///
/// Nothing here may run on a machine without AVX2, BMI, F16C, FMA, LZCNT and MOVBE: `DSP`
/// calls in only after `MachineFeatures.x86_64v3` (compiled for the baseline) has said so.
/// So the module's interface is functions of pointers and integers alone — no type of its
/// own that another module could touch, no vector passed by value (a 256-bit vector crosses
/// a call differently with and without AVX) — and each function is `@inline(never)`, so
/// that none of its code is compiled into a baseline module. The kernels ask for fused
/// multiply-adds (`addingProduct`: one rounding where the baseline's multiply and add round
/// twice, so as exact or more): they differ from the baseline's arithmetic in the last bits
/// (loudness readings 10⁻¹¹ LU apart at most), and take a quarter less time.

/// The K-weighting of four lanes at once, each reading its own samples (a pair of channels
/// over two stretches of time, one channel over four, …): the shelf and the RLB high-pass
/// (numerator 1, −2, 1) in direct form I, two samples a step with the look-ahead recursion —
/// `KWeightingLanes.filter` of `DSP` step for step, each multiply and the add after it fused.
/// `n` samples from each of `lane0` … `lane3`; `state` the six vectors x1, x2, y1, y2 (the
/// shelf's past inputs and outputs — the latter also the high-pass's past inputs) and z1, z2
/// (the high-pass's past outputs), updated; `coefficients` the eleven vectors b0, b1, b2, a1,
/// a2, a1² − a2, a1·a2 of the shelf and a1, a2, a1² − a2, a1·a2 of the high-pass. Writes each
/// lane's Σ y² to `sums`.
@inline(never)
public func kWeightFourLanes(
    _ state: UnsafeMutablePointer<SIMD4<Double>>, _ coefficients: UnsafePointer<SIMD4<Double>>,
    _ lane0: UnsafePointer<Float>, _ lane1: UnsafePointer<Float>, _ lane2: UnsafePointer<Float>, _ lane3: UnsafePointer<Float>,
    _ n: Int, _ sums: UnsafeMutablePointer<SIMD4<Double>>
) {
    let b0 = coefficients[0], b1 = coefficients[1], b2 = coefficients[2], a1 = coefficients[3], a2 = coefficients[4]
    let c1 = coefficients[5], c2 = coefficients[6]
    let h1 = coefficients[7], h2 = coefficients[8], hc1 = coefficients[9], hc2 = coefficients[10]
    var x1 = state[0], x2 = state[1], y1 = state[2], y2 = state[3], z1 = state[4], z2 = state[5]
    @inline(__always) func sample(_ k: Int) -> SIMD4<Double> {
        SIMD4(Double(lane0[k]), Double(lane1[k]), Double(lane2[k]), Double(lane3[k]))
    }
    var sum = SIMD4<Double>(), sumB = SIMD4<Double>()
    var k = 0
    while k + 2 <= n {
        let xa = sample(k), xb = sample(k + 1)
        // The shelf (`BiquadLanes.process2`).
        let pa = (b0 * xa).addingProduct(b1, x1).addingProduct(b2, x2)
        let pb = (b0 * xb).addingProduct(b1, xa).addingProduct(b2, x1)
        let ya = pa - (a2 * y2).addingProduct(a1, y1)
        let yb = pb.addingProduct(-a1, pa) + (c2 * y2).addingProduct(c1, y1)
        // The high-pass (`processHighPass2`), its past inputs the shelf's past outputs.
        let qa = (ya - y1) - (y1 - y2)
        let qb = (yb - ya) - (ya - y1)
        let za = qa - (h2 * z2).addingProduct(h1, z1)
        let zb = qb.addingProduct(-h1, qa) + (hc2 * z2).addingProduct(hc1, z1)
        sum = sum.addingProduct(za, za)
        sumB = sumB.addingProduct(zb, zb)
        (x2, x1, y2, y1, z2, z1) = (xa, xb, ya, yb, za, zb)
        k += 2
    }
    if k < n {
        // One sample (`process`, `processHighPass`).
        let x = sample(k)
        let y = (b0 * x).addingProduct(b1, x1).addingProduct(b2, x2).addingProduct(-a2, y2).addingProduct(-a1, y1)
        let z = ((y - y1) - (y1 - y2)).addingProduct(-h2, z2).addingProduct(-h1, z1)
        sum = sum.addingProduct(z, z)
        (x2, x1, y2, y1, z2, z1) = (x1, x, y1, y, z1, z)
    }
    sum += sumB
    // `BiquadLanes.flushDenormals`: tiny values to zero, so silence leaves none behind.
    func flushed(_ v: SIMD4<Double>) -> SIMD4<Double> {
        let tiny = SIMD4<Double>(repeating: 1e-30)
        return v.replacing(with: 0, where: v .< tiny .& v .> -tiny)
    }
    state[0] = flushed(x1)
    state[1] = flushed(x2)
    state[2] = flushed(y1)
    state[3] = flushed(y2)
    state[4] = flushed(z1)
    state[5] = flushed(z2)
    sums.pointee = sum
}

/// The largest |midpoint| (the true peak's phase 8) of frames `start ..< start + count` of
/// `x`, eight frames a vector — `TruePeakMeter.largestMidpoint` of `DSP` step for step, its
/// multiply-adds fused: the midpoint of frame i is Σₖ `sums[k]`·(x[i − k] + x[i − (taps − 1 − k)])
/// for k < taps / 2 (the filter's symmetric taps folded). Writes the eight lanes' largest to
/// `largest` (the caller takes the largest lane).
@inline(never)
public func largestMidpoint(
    _ x: UnsafePointer<Float>, _ start: Int, _ count: Int, _ sums: UnsafePointer<Float>, _ taps: Int,
    _ largest: UnsafeMutablePointer<SIMD8<Float>>
) {
    let raw = UnsafeRawPointer(x)
    @inline(__always) func load(_ i: Int) -> SIMD8<Float> {
        raw.loadUnaligned(fromByteOffset: i * MemoryLayout<Float>.stride, as: SIMD8<Float>.self)
    }
    var best = SIMD8<Float>()
    var i = start
    while i < start + count {
        var m8 = SIMD8<Float>(repeating: sums[0]) * (load(i) + load(i - (taps - 1)))
        for k in 1..<(taps / 2) { m8 = m8.addingProduct(SIMD8<Float>(repeating: sums[k]), load(i - k) + load(i - (taps - 1 - k))) }
        m8.replace(with: -m8, where: m8 .< 0)
        let left = start + count - i
        if left < 8 { m8.replace(with: 0, where: .!(SIMD8<Int32>(0, 1, 2, 3, 4, 5, 6, 7) .< Int32(left))) }
        best.replace(with: m8, where: m8 .> best)
        i += 8
    }
    largest.pointee = best
}

/// The largest |x[i]| of each block of `block` samples of `x[0 ..< count]` in turn, in
/// `maxima[0]`, `maxima[1]`, … (the last block possibly shorter) — `Vector.blockMaxMagnitudes`
/// of `DSP` step for step (a maximum is exact: the same values).
@inline(never)
public func blockMaxMagnitudes(_ x: UnsafePointer<Float>, _ count: Int, _ block: Int, _ maxima: UnsafeMutablePointer<Float>) {
    let raw = UnsafeRawPointer(x)
    var b = 0, start = 0
    while start < count {
        let end = min(start + block, count)
        var acc = SIMD8<Float>()
        var i = start
        while i + 8 <= end {
            var v = raw.loadUnaligned(fromByteOffset: i * MemoryLayout<Float>.stride, as: SIMD8<Float>.self)
            v.replace(with: -v, where: v .< 0)
            acc.replace(with: v, where: v .> acc)
            i += 8
        }
        var half = acc.lowHalf
        half.replace(with: acc.highHalf, where: acc.highHalf .> half)
        var quarter = half.lowHalf
        quarter.replace(with: half.highHalf, where: half.highHalf .> quarter)
        var m = max(quarter[0], quarter[1])
        while i < end {
            m = max(m, abs(x[i]))
            i += 1
        }
        maxima[b] = m
        b += 1
        start = end
    }
}

/// Stereo frames of 24-bit little-endian integers (six bytes a frame) to two planar channels
/// of floats (±1 full scale), four frames at a time: 32 bytes loaded (eight past the four
/// frames: the caller's buffer has them), each sample's three bytes moved to the top of a
/// 32-bit lane by a byte shuffle (`vpshufb`), converted and scaled — exactly the values of a
/// sample-by-sample conversion (an integer's conversion and a scaling by a power of two are
/// exact). Returns the frames done: `count` rounded down to a multiple of four.
@inline(never)
public func stereoInt24ToFloat(
    _ frames: UnsafeRawPointer, _ count: Int, _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>
) -> Int {
    let whole = count & ~3
    let scale = SIMD8<Float>(repeating: 1 / 2_147_483_648)
    let z: UInt8 = 0
    var i = 0
    while i < whole {
        let v = (frames + 6 * i).loadUnaligned(as: SIMD32<UInt8>.self)
        // Lanes 0–3: the left samples of the four frames; 4–7: the right; each lane's low
        // byte 0, then the sample's three bytes.
        let lanes = SIMD32<UInt8>(
            z, v[0], v[1], v[2], z, v[6], v[7], v[8], z, v[12], v[13], v[14], z, v[18], v[19], v[20],
            z, v[3], v[4], v[5], z, v[9], v[10], v[11], z, v[15], v[16], v[17], z, v[21], v[22], v[23])
        let samples = SIMD8<Float>(unsafeBitCast(lanes, to: SIMD8<Int32>.self)) * scale
        UnsafeMutableRawPointer(left + i).storeBytes(of: samples.lowHalf, as: SIMD4<Float>.self)
        UnsafeMutableRawPointer(right + i).storeBytes(of: samples.highHalf, as: SIMD4<Float>.self)
        i += 4
    }
    return whole
}

/// Mono 24-bit little-endian integers (three bytes a sample) to floats (±1 full scale),
/// eight at a time: 32 bytes loaded (eight past the eight samples: the caller's buffer has
/// them), each sample's three bytes moved to the top of a 32-bit lane by a byte shuffle,
/// converted and scaled — exactly the values of a sample-by-sample conversion. Returns the
/// samples done: `count` rounded down to a multiple of eight.
@inline(never)
public func monoInt24ToFloat(_ samples: UnsafeRawPointer, _ count: Int, _ out: UnsafeMutablePointer<Float>) -> Int {
    let whole = count & ~7
    let scale = SIMD8<Float>(repeating: 1 / 2_147_483_648)
    let z: UInt8 = 0
    var i = 0
    while i < whole {
        let v = (samples + 3 * i).loadUnaligned(as: SIMD32<UInt8>.self)
        let lanes = SIMD32<UInt8>(
            z, v[0], v[1], v[2], z, v[3], v[4], v[5], z, v[6], v[7], v[8], z, v[9], v[10], v[11],
            z, v[12], v[13], v[14], z, v[15], v[16], v[17], z, v[18], v[19], v[20], z, v[21], v[22], v[23])
        let converted = SIMD8<Float>(unsafeBitCast(lanes, to: SIMD8<Int32>.self)) * scale
        UnsafeMutableRawPointer(out + i).storeBytes(of: converted, as: SIMD8<Float>.self)
        i += 8
    }
    return whole
}
