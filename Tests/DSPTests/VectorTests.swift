import DSP
import XCTest

/// Each helper against the plain scalar loop its documentation shows, over lengths that
/// exercise the SIMD body and every tail length.
final class VectorTests: XCTestCase {
    private func randomSignal(_ n: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<n).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state) >> 40) / Float(1 << 23)
        }
    }

    func testAgainstScalarLoops() {
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 31, 100, 1024, 1031] {
            let a = randomSignal(n, seed: UInt64(n) + 1)
            let b = randomSignal(n, seed: UInt64(n) + 99)
            var product = [Float](repeating: 0, count: n)
            var scaled = [Float](repeating: 0, count: n)
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    product.withUnsafeMutableBufferPointer { Vector.multiply(pa, pb, result: $0) }
                }
                scaled.withUnsafeMutableBufferPointer { Vector.multiply(pa, scalar: 0.5, result: $0) }
                let sum = Vector.sum(pa)
                let squares = Vector.sumOfSquares(pa)
                let maxMag = Vector.maxMagnitude(pa)
                XCTAssertEqual(sum, a.reduce(0, +), accuracy: 1e-3, "n=\(n)")
                XCTAssertEqual(squares, a.reduce(0) { $0 + $1 * $1 }, accuracy: 1e-3, "n=\(n)")
                XCTAssertEqual(maxMag, a.map(abs).max() ?? 0, "n=\(n)")
            }
            XCTAssertEqual(product, zip(a, b).map { $0 * $1 }, "n=\(n)")
            XCTAssertEqual(scaled, a.map { $0 * 0.5 }, "n=\(n)")
        }
    }

    func testMagnitudesOfInterleavedComplex() {
        for n in [1, 8, 9, 17, 64] {
            let c = randomSignal(2 * n, seed: 7)
            var m = [Float](repeating: -1, count: n)
            c.withUnsafeBufferPointer { pc in
                m.withUnsafeMutableBufferPointer { Vector.magnitudes(interleaved: pc, scale: 2, result: $0) }
            }
            for k in 0..<n {
                XCTAssertEqual(m[k], (c[2 * k] * c[2 * k] + c[2 * k + 1] * c[2 * k + 1]).squareRoot() * 2, accuracy: 1e-6)
            }
        }
    }

    func testMaxIndexFillAndDecibels() {
        let a: [Float] = [0.1, 0.5, 0.2, 0.5, -0.9]
        a.withUnsafeBufferPointer { p in
            XCTAssertEqual(Vector.maxIndex(p, in: 0..<4)?.index, 1)  // first of the ties
            XCTAssertEqual(Vector.maxIndex(p, in: 2..<5)?.index, 3)
            XCTAssertNil(Vector.maxIndex(p, in: 3..<3))
        }
        var f = [Float](repeating: 0, count: 19)
        f.withUnsafeMutableBufferPointer { Vector.fill($0, with: 3) }
        XCTAssertEqual(f, [Float](repeating: 3, count: 19))
        var db = [Float](repeating: 0, count: 3)
        [Float(1), 0.1, 0].withUnsafeBufferPointer { p in
            db.withUnsafeMutableBufferPointer { Vector.amplitudeToDecibels(p, floor: 1e-6, result: $0) }
        }
        XCTAssertEqual(db[0], 0, accuracy: 1e-6)
        XCTAssertEqual(db[1], -20, accuracy: 1e-5)
        XCTAssertEqual(db[2], -120, accuracy: 1e-4)
    }

    func testFFTOfKnownSine() throws {
        let fft = try RealFFT(size: 256)
        for i in 0..<256 { fft.input[i] = Float(cos(2 * Double.pi * 8 * Double(i) / 256)) }
        fft.forward()
        XCTAssertEqual(fft.output[16], 128, accuracy: 1e-3)  // bin 8, real part: A·N/2
        XCTAssertEqual(fft.output[17], 0, accuracy: 1e-3)
        XCTAssertEqual(fft.output[18], 0, accuracy: 1e-3)
        XCTAssertThrowsError(try RealFFT(size: 300))
    }

    /// `sanitize` replaces NaN, ±∞ and samples beyond ±10^4 with 0 and counts them, flushes
    /// subnormals uncounted, and leaves everything else (loud float audio included) alone —
    /// in the SIMD body and the scalar tail alike.
    func testSanitize() {
        let bad: [Float] = [.nan, .infinity, -.infinity, 1e20, -1e20, 10_000.5, -3e4]
        let kept: [Float] = [0, 1, -1, 0.5, 8, -9_999.5, 10_000, -10_000, .leastNormalMagnitude]
        for length in [7, 8, 19, 64] {
            var x = (0..<length).map { kept[$0 % kept.count] }
            var expected = x
            for (j, i) in stride(from: 1, to: length, by: 3).enumerated() {
                x[i] = bad[j % bad.count]
                expected[i] = 0
            }
            let replaced = (length - 1 + 2) / 3  // indices 1, 4, 7, … below length
            x[0] = .leastNonzeroMagnitude  // subnormal: flushed, not counted
            expected[0] = 0
            let n = x.withUnsafeMutableBufferPointer { (b: inout UnsafeMutableBufferPointer<Float>) -> Int in Vector.sanitize(b) }
            XCTAssertEqual(n, replaced, "length \(length)")
            XCTAssertEqual(x.map(\.bitPattern), expected.map(\.bitPattern), "length \(length)")
        }
    }
}
