@testable import DSP
import XCTest

/// The kernels compiled for AVX2 (`DSPAVX2`) give the baseline's values but for the rounding
/// of their fused multiply-adds, where the machine runs them (elsewhere both sides are the
/// baseline's).
final class WideKernelTests: XCTestCase {
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
                for start in [0, 1, 7, 64, 100] {
                    for count in 1...64 {
                        let wide = TruePeakMeter.largestMidpoint(of: x, start, count)
                        let baseline = TruePeakMeter.largestMidpoint(start, count) {
                            x.loadUnaligned(fromByteOffset: $0 * MemoryLayout<Float>.stride, as: SIMD8<Float>.self)
                        }
                        XCTAssertEqual(wide, baseline, accuracy: 1e-6, "start \(start), \(count) frames")
                    }
                }
            }
        }
    }
}
