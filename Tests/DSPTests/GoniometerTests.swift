import DSP
import XCTest

/// The goniometer's trace: every `stride`-th sample pair, across calls of any size, the newest
/// `count` kept, written oldest first.
final class GoniometerTests: XCTestCase {
    func testEveryStrideThSamplePairNewestKeptOldestFirst() {
        var trace = GoniometerTrace(sampleRate: 48_000, count: 8)
        XCTAssertEqual(trace.stride, 4, "one point every 4 samples at 48 kHz")
        let left = (0..<100).map { Float($0) }, right = left.map { -$0 }
        // Pieces of odd sizes: the stride runs on across them.
        var at = 0
        for size in [3, 7, 1, 29, 60] {
            left[at..<(at + size)].withUnsafeBufferPointer { l in
                right[at..<(at + size)].withUnsafeBufferPointer { r in trace.process(l, r) }
            }
            at += size
        }
        var out = [Float](repeating: .nan, count: 16)
        out.withUnsafeMutableBufferPointer { trace.write(into: $0) }
        // Samples 0, 4, … 96: the newest eight are 68 … 96.
        XCTAssertEqual(stride(from: 0, to: 16, by: 2).map { out[$0] }, [68, 72, 76, 80, 84, 88, 92, 96])
        XCTAssertEqual(stride(from: 1, to: 16, by: 2).map { out[$0] }, [-68, -72, -76, -80, -84, -88, -92, -96])
        XCTAssertEqual(GoniometerTrace(sampleRate: 44_100).stride, 4)
        XCTAssertEqual(GoniometerTrace(sampleRate: 96_000).stride, 8)
        XCTAssertEqual(GoniometerTrace(sampleRate: 8_000).stride, 1)
    }
}
