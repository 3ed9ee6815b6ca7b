#if canImport(Glibc)
import Glibc
#endif
import DSP

extension Bench {
    /// `jackvu-bench integration`: what one update of the gated readings (integrated loudness
    /// and loudness range, once a second) costs after a minute, an hour, a day and a week of
    /// integration: the full computation over every block (every reading before the
    /// histogram; the meter's first hour now) against the histogram (`LoudnessHistogram`, the
    /// meter after its first hour). Block loudness is a random walk between −60 and −5 LUFS.
    static func integration() {
        var seed: UInt64 = 88172645463325252
        func random() -> Double {
            seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
            return Double(seed % 1_000_000) / 1_000_000
        }
        print("gated readings per update (integrated + range), ms; best of 3")
        print("duration   blocks      full computation   histogram   |difference| integrated / range, LU")
        var walk = -23.0
        var powers: [Double] = []
        var histogram = LoudnessHistogram()
        for (name, blocks) in [("1 minute", 600), ("1 hour", 36_000), ("1 day", 864_000), ("1 week", 6_048_000)] {
            while powers.count < blocks {
                walk = min(-5, max(-60, walk + (random() - 0.5) * 1.5))
                let p = LoudnessMeter.power(ofLUFS: walk)
                powers.append(p)
                histogram.add(p)
            }
            var full = Double.infinity, binned = Double.infinity
            var exact = (0.0, 0.0), approximate = (0.0, 0.0)
            for _ in 0..<3 {
                var t0 = monotonic()
                exact = (LoudnessMeter.integrated(ofGatingBlocks: powers), LoudnessMeter.loudnessRange(ofShortTermPowers: powers))
                full = min(full, monotonic() - t0)
                t0 = monotonic()
                approximate = (histogram.integrated(), histogram.loudnessRange)
                binned = min(binned, monotonic() - t0)
            }
            print(pad(name, 10) + " " + pad(String(blocks), 11) + " " + pad(format3(full * 1000), 18) + " " + pad(format3(binned * 1000), 11)
                  + " \(abs(exact.0 - approximate.0)) / \(abs(exact.1 - approximate.1))")
        }
        print("memory: the histogram \(2 * LoudnessHistogram.binCount * 12 / 1024) KB per programme (two), whatever the duration; the full computation 16 bytes a block (13.8 MB a day)")
    }

    private static func format3(_ x: Double) -> String {
        let r = (x * 1000).rounded() / 1000
        return "\(r)"
    }
}
