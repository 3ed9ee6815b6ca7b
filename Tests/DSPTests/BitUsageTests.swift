import Foundation
import XCTest

@testable import DSP

/// The bit meter's readings and the pair levels, on made-up samples whose answers are known.
final class BitUsageTests: XCTestCase {
    private func usage(_ x: [Float]) -> BitUsage { x.withUnsafeBufferPointer { BitUsage($0) } }

    /// Random words of 16 and 24 bits, float noise, silence; odd lengths (the tail) too.
    func testWordDepthHeadroomAndQuantisation() {
        var rng = SystemRandomNumberGenerator()
        func words(_ bits: Int, count: Int, peak: Double) -> [Float] {
            let full = Double(1 << (bits - 1))
            // The first sample at the peak, so that even 5 samples reach it, and an odd word, so
            // that even 5 samples use the word's last bit (the 24-bit peak's word is even, and
            // four random words beside it are all even one time in 16: such a block truly
            // reads 23 bits — CI met it once).
            return (0..<count).map { i in
                var word = ((i == 0 ? peak : Double.random(in: -peak...peak, using: &rng)) * full).rounded()
                if i == 0 && word.truncatingRemainder(dividingBy: 2) == 0 { word -= 1 }
                return Float(word / full)
            }
        }
        for count in [4096, 4093, 5] {
            let w16 = usage(words(16, count: count, peak: 0.9))
            XCTAssertEqual(w16.depth, 16, "16-bit words, \(count)")
            XCTAssertEqual(w16.quantised, 16)
            XCTAssertEqual(w16.headroom, 0, "a sample above half full scale")
            let w24 = usage(words(24, count: count, peak: 0.2))
            XCTAssertEqual(w24.depth, 24, "24-bit words, \(count)")
            XCTAssertEqual(w24.quantised, 24)
            XCTAssertEqual(w24.headroom, 2, "peaks between an eighth and a quarter of full scale")
            // A float signal computed in double precision (a filter's, a gain's output) uses
            // every bit its samples' significands reach.
            let float = usage((0..<count).map { i in Float(0.7 * sin(Double(i) * 0.1 + 0.3)) })
            // (Samples near a zero crossing reach below 2^-31; five samples of 0.2–0.7 reach
            // their own significands' last bits only, 2^-25 or so.)
            if count > 5 { XCTAssertEqual(float.depth, 32, "float audio uses every bit") } else { XCTAssertGreaterThan(float.depth, 24) }
            XCTAssertEqual(float.quantised, 0)
        }
        // 16-bit words padded into a 24-bit path are 16-bit; a gain of 0.5 on them is 17.
        let padded = words(16, count: 1024, peak: 0.5)
        XCTAssertEqual(usage(padded).depth, 16)
        XCTAssertEqual(usage(padded.map { $0 * 0.5 }).depth, 17)
        XCTAssertEqual(usage(padded.map { $0 * 0.5 }).quantised, 24)
        let silence = usage([Float](repeating: 0, count: 1000))
        XCTAssertEqual(silence, BitUsage(), "digital silence: depth 0, headroom 32")
        XCTAssertEqual(usage([Float](repeating: 0, count: 1000) + [1.5]).headroom, 0, "beyond full scale is the top bit")
    }

    func testDCOffset() {
        let x = (0..<4800).map { i in Float(0.01 + 0.5 * sin(2 * Double.pi * 1000 * Double(i) / 48000)) }
        XCTAssertEqual(usage(x).mean, 0.01, accuracy: 1e-5)
        XCTAssertFalse(usage(x).constant)
    }

    /// A constant is named (across tallies added up), however long; one sample off it, or
    /// silence, is not.
    func testConstant() {
        var still = [Float](repeating: 0.251_188_64, count: 48_000)
        XCTAssertTrue(usage(still).constant)
        var a = BitTally(), b = BitTally()
        still.withUnsafeBufferPointer { a = BitTally(UnsafeBufferPointer(rebasing: $0[0..<100])); b = BitTally(UnsafeBufferPointer(rebasing: $0[100...])) }
        a.add(b)
        XCTAssertTrue(a.usage.constant)
        still[30_000] = 0.251_188_7
        XCTAssertFalse(usage(still).constant)
        XCTAssertFalse(usage([Float](repeating: 0, count: 100)).constant, "silence is silence")
    }

    /// Identical legs: balance 0, mid the legs' level, no side; one leg inverted: no mid; the
    /// right leg 6.02 dB down: balance +6.02; one leg alone: the balance at its limit.
    func testPairBalanceMidAndSide() {
        let fs = 48000.0
        // 3 s: the 0.3 s window has filled to within 0.0001 dB.
        let tone = (0..<144000).map { i in Float(0.5 * sin(2 * Double.pi * 1000 * Double(i) / fs)) }
        func levels(_ l: [Float], _ r: [Float]) -> (balanceDB: Double, midSquare: Double, sideSquare: Double) {
            var m = CorrelationMeter(sampleRate: fs)
            l.withUnsafeBufferPointer { a in r.withUnsafeBufferPointer { b in m.process(a, b) } }
            return m.levels
        }
        let legDB = 20 * log10(0.5 / 2.0.squareRoot())  // −9.03 dBFS
        let same = levels(tone, tone)
        XCTAssertEqual(same.balanceDB, 0, accuracy: 1e-9)
        XCTAssertEqual(10 * log10(same.midSquare), legDB, accuracy: 0.05)
        XCTAssertLessThan(same.sideSquare, 1e-12)
        let inverted = levels(tone, tone.map { -$0 })
        XCTAssertLessThan(inverted.midSquare, 1e-12)
        XCTAssertEqual(10 * log10(inverted.sideSquare), legDB, accuracy: 0.05)
        XCTAssertEqual(levels(tone, tone.map { $0 / 2 }).balanceDB, 20 * log10(2.0), accuracy: 1e-3)
        XCTAssertEqual(levels(tone, [Float](repeating: 0, count: tone.count)).balanceDB, -Double(Decibels.floor))
        XCTAssertEqual(levels([Float](repeating: 0, count: 10), [Float](repeating: 0, count: 10)).balanceDB, 0)
    }
}
