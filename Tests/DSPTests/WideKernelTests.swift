@testable import DSP
import XCTest

/// The kernels compiled for AVX2 (`DSPAVX2`) give the baseline's values but for the rounding
/// of their fused multiply-adds, where the machine runs them (elsewhere both sides are the
/// baseline's).
final class WideKernelTests: XCTestCase {
    /// Each block's sample maximum, every length and block size the true peak uses and a few
    /// others, equal to the scan sample by sample (a maximum has no rounding).
    func testBlockMaximaAreTheScans() {
        var seed: UInt64 = 11
        let x: [Float] = (0..<1_100).map { _ in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52)
        }
        var maxima = [Float](repeating: -1, count: 1_100)
        for block in [1, 7, 8, 64, 100] {
            for count in [0, 1, 5, 63, 64, 65, 1_000, 1_024, 1_100] {
                maxima.withUnsafeMutableBufferPointer { Vector.blockMaxMagnitudes(x, count: count, block: block, into: $0.baseAddress!) }
                for b in 0..<((count + block - 1) / block) {
                    let scan = x[(b * block)..<min(count, (b + 1) * block)].reduce(Float(0)) { max($0, abs($1)) }
                    XCTAssertEqual(maxima[b], scan, "block \(b) of \(block), \(count) samples")
                }
            }
        }
    }

    /// 24-bit stereo frames to planar floats: every value exactly the sample-by-sample
    /// conversion's (k / 2³¹ of the three bytes at the top of an Int32), every byte pattern
    /// over random frames, counts 0 to 33 (the multiple of four done, the rest left).
    func testStereoInt24IsTheScalarConversion() {
        var seed: UInt64 = 17
        let bytes: [UInt8] = (0..<(33 * 6 + 8)).map { _ in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: seed >> 56)
        }
        for count in 0...33 {
            var left = [Float](repeating: .nan, count: 33), right = left
            let done = bytes.withUnsafeBytes { b in
                left.withUnsafeMutableBufferPointer { l in
                    right.withUnsafeMutableBufferPointer { r in
                        Vector.stereoInt24ToFloat(b.baseAddress!, count: count, left: l.baseAddress!, right: r.baseAddress!)
                    }
                }
            }
            XCTAssertEqual(done, MachineFeatures.x86_64v3 ? count & ~3 : 0)
            func sample(_ at: Int) -> Float {
                let u = UInt32(bytes[at]) << 8 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 24
                return Float(Int32(bitPattern: u)) / 2_147_483_648
            }
            for i in 0..<done {
                XCTAssertEqual(left[i], sample(6 * i), "frame \(i) of \(count), left")
                XCTAssertEqual(right[i], sample(6 * i + 3), "frame \(i) of \(count), right")
            }
            XCTAssertTrue(left[done...].allSatisfy(\.isNaN), "nothing written past the frames done")
        }
    }

    /// Mono 24-bit samples, eight a vector where the machine has AVX2: every count from 0
    /// to 33, each sample the scalar conversion's, nothing written past the samples done.
    func testMonoInt24IsTheScalarConversion() {
        var seed: UInt64 = 29
        let bytes: [UInt8] = (0..<(33 * 3 + 8)).map { _ in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: seed >> 56)
        }
        for count in 0...33 {
            var out = [Float](repeating: .nan, count: 33)
            let done = bytes.withUnsafeBytes { b in
                out.withUnsafeMutableBufferPointer { Vector.monoInt24ToFloat(b.baseAddress!, count: count, into: $0.baseAddress!) }
            }
            XCTAssertEqual(done, MachineFeatures.x86_64v3 ? count & ~7 : 0)
            for i in 0..<done {
                let u = UInt32(bytes[3 * i]) << 8 | UInt32(bytes[3 * i + 1]) << 16 | UInt32(bytes[3 * i + 2]) << 24
                XCTAssertEqual(out[i], Float(Int32(bitPattern: u)) / 2_147_483_648, "sample \(i) of \(count)")
            }
            XCTAssertTrue(out[done...].allSatisfy(\.isNaN), "nothing written past the samples done")
        }
    }

    /// The inner midpoints bound the whole ones as `innerMidpointResidual` says:
    /// |midpoint| ≤ |inner midpoint| + residual × max|x| under the filter, over noise, a loud
    /// sine at each frequency where the outer taps weigh most, and single spikes at each outer
    /// tap (where the bound is tight: a residual 1 % smaller fails). The residual itself is
    /// 2·Σ|h₈[k]| over the eight outer folded taps, computed here from the filter's phases.
    func testInnerMidpointsBoundTheWholeOnes() {
        let h8 = TruePeakMeter.phasesInDouble[8], first = TruePeakMeter.innerMidpointFirst
        let outer = 2 * h8[0..<first].reduce(0) { $0 + abs($1) }
        XCTAssertEqual(Double(TruePeakMeter.innerMidpointResidual), outer * 1.001, accuracy: 1e-6)
        let history = TruePeakMeter.history, frames = 64
        var signals: [[Float]] = [0.3, 0.45, 0.49].map { f in
            (0..<(history + frames + 8)).map { Float(0.9 * sin(2 * Double.pi * f * Double($0) + 0.7)) }
        }
        var seed: UInt64 = 5
        signals.append((0..<(history + frames + 8)).map { _ in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52)
        })
        // The sample pattern at which the outer taps all add up: x[i − k] = x[i − 23 + k] =
        // sign(h₈[k]) for k < first, 0 at the inner taps.
        var tight = [Float](repeating: 0, count: history + frames + 8)
        let frame = history + 30
        for k in 0..<first {
            tight[frame - k] = h8[k] < 0 ? -1 : 1
            tight[frame - (TruePeakMeter.taps - 1 - k)] = h8[k] < 0 ? -1 : 1
        }
        signals.append(tight)
        for (n, signal) in signals.enumerated() {
            signal.withUnsafeBufferPointer { b in
                let x = UnsafeRawPointer(b.baseAddress! + history)
                for start in stride(from: 0, to: frames, by: 8) {
                    let whole = TruePeakMeter.largestMidpoint(of: x, start, 8)
                    let inner = TruePeakMeter.largestMidpoint(of: x, start, 8, from: first)
                    let near = b[(start)..<(history + start + 8)].reduce(Float(0)) { max($0, abs($1)) }
                    XCTAssertLessThanOrEqual(whole, inner + TruePeakMeter.innerMidpointResidual * near, "signal \(n), frames from \(start)")
                }
                if n == signals.count - 1 {
                    let whole = TruePeakMeter.largestMidpoint(of: x, frame - history, 1)
                    let inner = TruePeakMeter.largestMidpoint(of: x, frame - history, 1, from: first)
                    XCTAssertEqual(inner, 0)
                    XCTAssertGreaterThan(whole, 0.99 * Float(outer), "the bound is tight here")
                }
            }
        }
    }

    /// The true peak's largest midpoint of a block, every start and length a block can have,
    /// on noise, a loud sine and silence with one spike: within 10⁻⁶ (float's rounding over
    /// twelve multiply-adds of samples within ±1), far inside the 10⁻⁴ margin with which the
    /// true peak compares a block's midpoints to skip it.
    func testLargestMidpointIsTheBaselines() {
        XCTAssertEqual(TruePeakMeter.midpointSums != nil, MachineFeatures.x86_64v3)
        let history = TruePeakMeter.history, frames = 200
        var seed: UInt64 = 3
        let signals: [[Float]] = [
            (0..<(history + frames + 8)).map { _ in
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                return Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52)
            },
            (0..<(history + frames + 8)).map { Float(0.99 * sin(2 * Double.pi * 11_025 * Double($0) / 48_000 + 0.3)) },
            (0..<(history + frames + 8)).map { $0 == history + 70 ? -0.7 : 0 },
        ]
        for signal in signals {
            signal.withUnsafeBufferPointer { b in
                let x = UnsafeRawPointer(b.baseAddress! + history)
                for first in [0, TruePeakMeter.innerMidpointFirst] {
                    for start in [0, 1, 7, 64, 100] {
                        for count in 1...64 {
                            let wide = TruePeakMeter.largestMidpoint(of: x, start, count, from: first)
                            let baseline = TruePeakMeter.largestMidpoint(start, count, from: first) {
                                x.loadUnaligned(fromByteOffset: $0 * MemoryLayout<Float>.stride, as: SIMD8<Float>.self)
                            }
                            XCTAssertEqual(wide, baseline, accuracy: 1e-6, "from tap \(first), start \(start), \(count) frames")
                        }
                    }
                }
            }
        }
    }
}
