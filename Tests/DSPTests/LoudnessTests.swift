import DSP
import TestSupport
import XCTest

/// EBU Tech 3341 (cases 1–6, 9–23) and Tech 3342 (cases 1–4), synthesised per the
/// specifications, with their tolerances; plus BS.1770's published 48 kHz coefficients.
final class LoudnessTests: XCTestCase {
    typealias S = EBUSignals.Segment

    /// Runs `signal` through a fresh meter in uneven chunks; `step` sees every 10 ms step.
    @discardableResult
    private func measure(_ signal: [[Float]], layout: ChannelLayout = .stereo, sampleRate: Int = 48000,
                         meter: LoudnessMeter? = nil, step: (LoudnessMeter) -> Void = { _ in }) -> LoudnessMeter {
        let m = meter ?? LoudnessMeter(sampleRate: sampleRate, layout: layout)
        let frames = signal[0].count
        let pointers = signal.map { ch in ch.withUnsafeBufferPointer { $0.baseAddress! } }
        var offset = 0
        var k = 0
        let chunks = [256, 1000, 4800, 17]
        while offset < frames {
            let n = min(chunks[k % chunks.count], frames - offset)
            k += 1
            withExtendedLifetime(signal) {
                m.process(frames: n, from: { pointers[$0] + offset }) { step(m) }
            }
            offset += n
        }
        return m
    }

    /// Channel-parallel K-weighting: a meter with many channels (in SIMD lanes of 8, 4 or 2,
    /// with padding lanes) reads the weighted sum of what one-channel meters (the scalar
    /// filters) read, within 1e-5 relative in power, for different signals per channel fed in
    /// pieces of varying size.
    func testKWeightingLanesSumTheOneChannelMeters() {
        let rate = 48000
        for weights in [[Double](repeating: 1, count: 8), [1, 1, 1, 0, 1.41, 1.41], (0..<11).map { 1 + Double($0) / 10 },
                        [1, 1, 1], [0.5, 2], [1.41]] {
            let channels = weights.count, n = rate * 3
            let signals: [[Float]] = (0..<channels).map { ch in
                var seed = UInt64(ch + 5)
                let f = 30 * pow(1.9, Double(ch))
                return (0..<n).map { i in
                    seed = seed &* 6364136223846793005 &+ 1442695040888963407
                    let noise = Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52) * 0.02
                    let gate = (i / 9000 + ch) % 3 == 0 ? 0.1 : 1.0
                    return Float(gate * 0.2 * sin(2 * Double.pi * f * Double(i) / Double(rate))) + noise
                }
            }
            let meter = LoudnessMeter(sampleRate: rate, weights: weights)
            let alone = (0..<channels).map { _ in LoudnessMeter(sampleRate: rate, weights: [1]) }
            func power(_ lufs: Double) -> Double { pow(10, (lufs + 0.691) / 10) }
            var compared = 0
            TestSignals.inPieces(signals, sizes: [256, 1, 1000, 64, 4096, 333]) { pointers, m, step in
                meter.process(frames: m, from: { pointers[$0] })
                for c in 0..<channels { alone[c].process(frames: m, from: { _ in pointers[c] }) }
                guard meter.stepCount >= 40 else { return }
                let momentary = (0..<channels).reduce(0.0) { $0 + weights[$1] * power(alone[$1].momentary) }
                let shortTerm = (0..<channels).reduce(0.0) { $0 + weights[$1] * power(alone[$1].shortTerm) }
                XCTAssertEqual(power(meter.momentary) / momentary, 1, accuracy: 1e-5, "\(channels) channels \(weights): momentary")
                XCTAssertEqual(power(meter.shortTerm) / shortTerm, 1, accuracy: 1e-5, "\(channels) channels \(weights): short-term")
                compared += 1
            }
            XCTAssertGreaterThan(compared, 100)
            XCTAssertGreaterThan(meter.momentary, -40, "the signals reach the meter")
        }
    }

    /// A pair's K-weighting as two stretches of time side by side, a lone channel's as four,
    /// and so on up to eight channels (a file's long calls, on a machine with AVX2: five
    /// channels' four stretches in five registers, six channels' two in three): every step's
    /// momentary and short-term loudness, the maxima, the integrated loudness and the
    /// loudness range read as the one-stretch path reads them (fed in step-sized pieces), to
    /// 10⁻⁹ LU — a later stretch's 200 ms warm-up leaves 10⁻²¹ of its state, and none at all
    /// would leave 10⁻⁴ LU. A call that starts mid-step, one with a tail too short to split,
    /// other rates (44.1 kHz: an odd step of 441).
    func testStretchesOfUpToEightChannelsReadAsOne() {
        for (channels, rate) in [(2, 48000), (2, 44100), (2, 8000), (1, 48000), (1, 44100), (5, 48000), (6, 44100)] {
            let n = rate * 14
            let signals: [[Float]] = (0..<channels).map { ch in
                var seed = UInt64(ch + 11)
                return (0..<n).map { i in
                    seed = seed &* 6364136223846793005 &+ 1442695040888963407
                    let noise = Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52) * 0.05
                    let level = [1.0, 0.05, 0.4, 0.01][(i / (rate / 2 + 7 * ch)) % 4]
                    return Float(level * 0.3 * sin(2 * Double.pi * (40 + 900 * Double(ch)) * Double(i) / Double(rate))) + noise * Float(level)
                }
            }
            let label = "\(channels) channel(s) at \(rate) Hz"
            func readings(_ sizes: [Int]) -> (LoudnessMeter, [Double]) {
                let meter = LoudnessMeter(sampleRate: rate, weights: Array(repeating: 1, count: channels))
                var steps: [Double] = []
                TestSignals.inPieces(signals, sizes: sizes) { pointers, m, _ in
                    meter.process(frames: m, from: { pointers[$0] }) { steps += [meter.momentary, meter.shortTerm] }
                }
                return (meter, steps)
            }
            let size = rate / 100
            let (split, splitSteps) = readings([17, rate * 5 + 3, rate * 6, rate])
            // Calls of a step each after the first two (too short to split), each filter call
            // starting where the split path's first stretch starts one.
            let (one, oneSteps) = readings([17, size - 17] + Array(repeating: size, count: 14 * 100))
            // 5 s, 6 s and the last 2 s call: each long enough for two stretches of at least
            // 0.8 s; four such need 2.6 s.
            XCTAssertEqual(split.splitPieces, MachineFeatures.x86_64v3 ? (channels % 2 == 0 ? 3 : 2) : 0, "\(label): the long calls ran as stretches")
            XCTAssertEqual(one.splitPieces, 0)
            XCTAssertEqual(splitSteps.count, oneSteps.count, label)
            // The first stretch of the first long call (its first second: the second stretch's
            // warm-up is further on) is the one-stretch path's but for the fused multiply-adds'
            // rounding (2.6 × 10⁻¹² LU at most here).
            let first = zip(splitSteps.prefix(200), oneSteps.prefix(200)).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThan(first, 1e-10, "\(label): the first stretch")
            let apart = zip(splitSteps, oneSteps).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThan(apart, 1e-9, "\(label): the steps' readings")
            for (a, b) in [(split.integrated, one.integrated), (split.loudnessRange, one.loudnessRange),
                           (split.maxMomentary, one.maxMomentary), (split.maxShortTerm, one.maxShortTerm)] {
                XCTAssertEqual(a, b, accuracy: 1e-9, label)
            }
            XCTAssertGreaterThan(one.loudnessRange, 1, "\(label): the levels change")
            // `framesToSplit` is the shortest call that splits, from a step's start (the
            // longest lead).
            let least = LoudnessMeter(sampleRate: rate, weights: Array(repeating: 1, count: channels)).framesToSplit
            XCTAssertEqual(least > 0, MachineFeatures.x86_64v3, label)
            if least > 0 {
                for (frames, pieces) in [(least, 1), (least - 1, 0)] {
                    let meter = LoudnessMeter(sampleRate: rate, weights: Array(repeating: 1, count: channels))
                    TestSignals.inPieces(signals, sizes: [frames]) { pointers, m, piece in
                        if piece == 1 { meter.process(frames: m, from: { pointers[$0] }) }
                    }
                    XCTAssertEqual(meter.splitPieces, pieces, "\(label): a first call of \(frames) frames")
                }
            }
        }
    }

    func testKWeightingMatchesBS1770At48k() {
        let shelf = KWeighting.shelf(sampleRate: 48000)
        let hp = KWeighting.highPass(sampleRate: 48000)
        // ITU-R BS.1770-4, Tables 1 and 2.
        XCTAssertEqual(shelf.b0, 1.53512485958697, accuracy: 1e-8)
        XCTAssertEqual(shelf.b1, -2.69169618940638, accuracy: 1e-8)
        XCTAssertEqual(shelf.b2, 1.19839281085285, accuracy: 1e-8)
        XCTAssertEqual(shelf.a1, -1.69065929318241, accuracy: 1e-8)
        XCTAssertEqual(shelf.a2, 0.73248077421585, accuracy: 1e-8)
        XCTAssertEqual(hp.b0, 1.0)
        XCTAssertEqual(hp.b1, -2.0)
        XCTAssertEqual(hp.b2, 1.0)
        XCTAssertEqual(hp.a1, -1.99004745483398, accuracy: 1e-8)
        XCTAssertEqual(hp.a2, 0.99007225036621, accuracy: 1e-8)
        // The pre-filter lifts high frequencies by about +4 dB.
        XCTAssertEqual(20 * log10(shelf.magnitude(at: 16000, sampleRate: 48000)), 4, accuracy: 0.1)
    }

    // MARK: Tech 3341 cases 1–6: M, S, I of steady and gated tones

    func testCase1And2SteadyStereoTones() {
        for level in [-23.0, -33.0] {
            let m = measure(EBUSignals.tones([S(seconds: 20, dBFS: level)]))
            XCTAssertEqual(m.momentary, level, accuracy: 0.1, "M at \(level)")
            XCTAssertEqual(m.shortTerm, level, accuracy: 0.1, "S at \(level)")
            XCTAssertEqual(m.integrated, level, accuracy: 0.1, "I at \(level)")
        }
    }

    func testCase3To5Gating() {
        let cases: [[S]] = [
            [S(seconds: 10, dBFS: -36), S(seconds: 60, dBFS: -23), S(seconds: 10, dBFS: -36)],
            [S(seconds: 10, dBFS: -72), S(seconds: 10, dBFS: -36), S(seconds: 60, dBFS: -23),
             S(seconds: 10, dBFS: -36), S(seconds: 10, dBFS: -72)],
            [S(seconds: 20, dBFS: -26), S(seconds: 20.1, dBFS: -20), S(seconds: 20, dBFS: -26)],
        ]
        for (i, segments) in cases.enumerated() {
            XCTAssertEqual(measure(EBUSignals.tones(segments)).integrated, -23, accuracy: 0.1, "case \(i + 3)")
        }
    }

    func testCase6FivePointZero() {
        // L, R −28; C −24; Ls, Rs −30 dBFS.
        let signal = EBUSignals.tones([S(seconds: 20, dBFS: 0)], channelGains: [-28, -28, -24, -30, -30])
        XCTAssertEqual(measure(signal, layout: .surround50).integrated, -23, accuracy: 0.1)
        // 5.1 with a loud LFE: the LFE is excluded.
        var withLFE = signal
        withLFE.insert(EBUSignals.tones([S(seconds: 20, dBFS: -3)], channelGains: [0])[0], at: 3)
        XCTAssertEqual(measure(withLFE, layout: .surround51).integrated, -23, accuracy: 0.1)
    }

    // MARK: Cases 9–14: the time scales

    /// Every reading after `settled` steps of `signal` is −23 ± 0.1 LUFS; returns how many
    /// steps were checked.
    private func assertConstantAfter(_ settled: Int, _ signal: [[Float]], _ reading: (LoudnessMeter) -> Double,
                                     file: StaticString = #filePath, line: UInt = #line) -> Int
    {
        var worst = 0.0, checked = 0
        measure(signal) { m in
            guard m.stepCount >= settled else { return }
            worst = max(worst, abs(reading(m) + 23))
            checked += 1
        }
        XCTAssertLessThanOrEqual(worst, 0.1, file: file, line: line)
        return checked
    }

    /// At the end of segment i of `EBUSignals.successiveTones`, `maximum` reads −38 + i LUFS.
    private func assertSuccessiveMaxima(delay: Double, tone: Double, _ maximum: (LoudnessMeter) -> Double,
                                        file: StaticString = #filePath, line: UInt = #line)
    {
        let (segments, period) = EBUSignals.successiveTones(delay: delay, tone: tone)
        let ends = (1...20).map { Int((Double($0) * period * 100).rounded()) }  // in 10 ms steps
        var readings: [Int: Double] = [:]
        measure(EBUSignals.tones(segments)) { m in
            if ends.contains(m.stepCount) { readings[m.stepCount] = maximum(m) }
        }
        for (i, end) in ends.enumerated() {
            XCTAssertEqual(readings[end] ?? 0, -38 + Double(i), accuracy: 0.1, "segment \(i)", file: file, line: line)
        }
    }

    func testCase9ShortTermConstantAfter3s() {
        let signal = EBUSignals.tones(Array(repeating: [S(seconds: 1.34, dBFS: -20), S(seconds: 1.66, dBFS: -30)], count: 5).flatMap { $0 })
        XCTAssertGreaterThan(assertConstantAfter(300, signal) { $0.shortTerm }, 1000)
    }

    func testCase10MaxShortTermPerFile() {
        for i in 0..<20 {
            let m = measure(EBUSignals.tones([S(seconds: Double(i) * 0.15, dBFS: nil), S(seconds: 3, dBFS: -23), S(seconds: 1, dBFS: nil)]))
            XCTAssertEqual(m.maxShortTerm, -23, accuracy: 0.1, "segment \(i)")
        }
    }

    func testCase11MaxShortTermLive() {
        assertSuccessiveMaxima(delay: 0.15, tone: 3) { $0.maxShortTerm }
    }

    func testCase12MomentaryConstantAfter1s() {
        let signal = EBUSignals.tones(Array(repeating: [S(seconds: 0.18, dBFS: -20), S(seconds: 0.22, dBFS: -30)], count: 25).flatMap { $0 })
        XCTAssertGreaterThan(assertConstantAfter(100, signal) { $0.momentary }, 800)
    }

    /// A meter that updates momentary loudness only every 100 ms misses most of these.
    func testCase13MaxMomentaryPerFile() {
        for i in 0..<20 {
            let m = measure(EBUSignals.tones([S(seconds: Double(i) * 0.02, dBFS: nil), S(seconds: 0.4, dBFS: -23), S(seconds: 1, dBFS: nil)]))
            XCTAssertEqual(m.maxMomentary, -23, accuracy: 0.1, "segment \(i)")
        }
    }

    func testCase14MaxMomentaryLive() {
        assertSuccessiveMaxima(delay: 0.02, tone: 0.4) { $0.maxMomentary }
    }

    // MARK: Cases 15–23: true peak (+0.2 / −0.4 dB)

    private func truePeakDB(_ signal: [[Float]], sampleRate: Int = 48000) -> Double {
        let meter = TruePeakMeter(sampleRate: sampleRate, channels: signal.count)
        let pointers = signal.map { ch in ch.withUnsafeBufferPointer { $0.baseAddress! } }
        var offset = 0
        while offset < signal[0].count {
            let n = min(333, signal[0].count - offset)
            withExtendedLifetime(signal) { meter.process(frames: n, from: { pointers[$0] + offset }) }
            offset += n
        }
        return Double(Decibels.fromAmplitude((0..<signal.count).map { meter.maxPeak(channel: $0) }.max()!))
    }

    private func assertTruePeak(_ value: Double, _ expected: Double, _ label: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertLessThanOrEqual(value, expected + 0.2, label, file: file, line: line)
        XCTAssertGreaterThanOrEqual(value, expected - 0.4, label, file: file, line: line)
    }

    /// Channel-parallel true peak: channels fed eight at a time in SIMD lanes read exactly
    /// what they read fed one at a time (latest, recent, maximum and sample peaks), at 16×
    /// and 1× oversampling, for 8 + 3 channels in pieces of varying size.
    func testTruePeakLanesReadAsOneChannelAtATime() {
        for rate in [48000, 96000, 192000] {
            let channels = 11, n = rate / 2
            let signals: [[Float]] = (0..<channels).map { ch in
                var seed = UInt64(ch + 9)
                return (0..<n).map { i in
                    seed = seed &* 6364136223846793005 &+ 1442695040888963407
                    let noise = Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52) * 0.1
                    let f = Double(rate) / 4 * (0.3 + 0.05 * Double(ch))  // near fs/4: inter-sample peaks
                    return Float(0.5 * sin(2 * Double.pi * f * Double(i) / Double(rate) + Double(ch))) + noise
                }
            }
            let lanes = TruePeakMeter(sampleRate: rate, channels: channels), alone = TruePeakMeter(sampleRate: rate, channels: channels)
            lanes.tracksLatest = true
            alone.tracksLatest = true
            TestSignals.inPieces(signals, sizes: [256, 1, 1000, 64, 3000, 333]) { pointers, m, step in
                lanes.process(frames: m, channels: 0, count: 8, from: { pointers[$0] })
                lanes.process(frames: m, channels: 8, count: 3, from: { pointers[8 + $0] })
                for c in 0..<channels { alone.process(frames: m, from: pointers[c], channel: c) }
                for c in 0..<channels {
                    XCTAssertEqual(lanes.latestPeak(channel: c), alone.latestPeak(channel: c), "\(rate) Hz, channel \(c), piece \(step)")
                    if step % 4 == 0 { XCTAssertEqual(lanes.takeRecentPeak(channel: c), alone.takeRecentPeak(channel: c)) }
                }
            }
            for c in 0..<channels {
                XCTAssertEqual(lanes.maxPeak(channel: c), alone.maxPeak(channel: c), "\(rate) Hz, channel \(c)")
                XCTAssertEqual(lanes.samplePeak(channel: c), alone.samplePeak(channel: c), "\(rate) Hz, channel \(c)")
                if rate < 192000 {
                    XCTAssertGreaterThan(lanes.maxPeak(channel: c), lanes.samplePeak(channel: c), "inter-sample peaks found at \(rate) Hz")
                }
            }
        }
    }

    /// A summary's true peak skips the blocks that cannot beat the peak so far — by their
    /// samples, by their midpoints — and still reads what the lanes (which skip nothing) read,
    /// to the last bit: noise clipped and turned down (inter-sample peaks 3–4 dB over its
    /// samples, where the midpoints' bound matters) under a slow ramp, so that new maxima keep
    /// coming in blocks whose samples are not the largest; the same with a tremolo and quiet
    /// stretches; bursts of 12 kHz (a quarter of the rate, at 45°) in quiet noise; a rising
    /// 18 kHz tone, whose crests lie between samples and midpoints (a midpoint bound without
    /// its residual skips its blocks and reads it low).
    /// A call's passes of 1,024 samples read the input in place where it holds their history
    /// and the samples past them, else a copy: a lone spike (its peak the sample itself, at
    /// phase 0 of the frame 12 samples later) on either side of a pass's edge, or of a call's,
    /// reads its own height, as the eight-channel path (always a copy) reads it.
    func testTruePeakAcrossTheEdgesOfPassesAndCalls() {
        let frames = 8192
        for at in [0, 1023, 1024, 1030, 2047, 2048, 5000, 7160, 8191] {
            var signal = [Float](repeating: 0, count: frames)
            signal[at] = -0.5
            let alone = TruePeakMeter(sampleRate: 48000, channels: 1), lanes = TruePeakMeter(sampleRate: 48000, channels: 1)
            for call in 0..<2 {
                signal.withUnsafeBufferPointer { b in
                    alone.process(frames: frames, from: b.baseAddress!, channel: 0)
                    lanes.process(frames: frames, channels: 0, count: 1, from: { _ in b.baseAddress! })
                }
                if call == 0 { signal[at] = 0 }  // the second call silent: a spike late in the first shows in it
            }
            XCTAssertEqual(alone.maxPeak(channel: 0), 0.5, "a spike at \(at)")
            XCTAssertEqual(alone.maxPeak(channel: 0), lanes.maxPeak(channel: 0), "a spike at \(at)")
        }
    }

    func testTruePeakSkippingReadsAsNoSkipping() {
        let rate = 48000, n = rate * 3
        var seed: UInt64 = 77
        func noise() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52)
        }
        var lowPassed: Float = 0
        let signals: [[Float]] = [
            (0..<n).map { i in max(-0.3, min(0.3, noise())) * (0.5 + Float(i) / Float(n) * 1.5) },
            (0..<n).map { i in
                lowPassed = 0.7 * lowPassed + 0.3 * noise()
                let tremolo = Float(0.5 + 0.5 * sin(2 * Double.pi * 0.8 * Double(i) / Double(rate)))
                return max(-0.4, min(0.4, lowPassed * 1.5)) * tremolo * tremolo
            },
            (0..<n).map { i in
                // A quarter of the rate at 45°: every sample 3 dB below the crests between them.
                let burst = (i / 2400) % 5 == 4 ? Float(0.6 * sin(2 * Double.pi * 12000 * Double(i) / Double(rate) + Double.pi / 4)) : 0
                return burst + 0.02 * noise()
            },
            // 18 kHz rising, its crests a quarter, a twelfth and five twelfths of a sample
            // after a sample: never on the 2× grid of samples and midpoints (at most 0.92 of
            // a crest there), and every block brings a new maximum.
            (0..<n).map { i in
                let f = 18_000.0 / Double(rate)
                let rising = min(1, Double(i) / (0.9 * Double(n)))  // then held (the last samples wait 12 for the filter)
                return Float((0.1 + 0.8 * rising) * sin(2 * Double.pi * f * (Double(i) - 0.25) + Double.pi / 2))
            },
        ]
        let channels = signals.count
        let lanes = TruePeakMeter(sampleRate: rate, channels: channels), alone = TruePeakMeter(sampleRate: rate, channels: channels)
        TestSignals.inPieces(signals, sizes: [4096, 256, 1000, 64, 8192, 333]) { pointers, m, _ in
            lanes.process(frames: m, channels: 0, count: channels, from: { pointers[$0] })
            for c in 0..<channels { alone.process(frames: m, from: pointers[c], channel: c) }
        }
        for c in 0..<channels {
            XCTAssertEqual(alone.maxPeak(channel: c), lanes.maxPeak(channel: c), "channel \(c)")
            XCTAssertGreaterThan(alone.maxPeak(channel: c), alone.samplePeak(channel: c) * 1.01, "inter-sample peaks in channel \(c)")
        }
    }

    func testCases15To19TruePeakOfSines() {
        let fs = 48000.0
        assertTruePeak(truePeakDB(EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 0)), -6, "case 15")
        assertTruePeak(truePeakDB(EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 45)), -6, "case 16")
        assertTruePeak(truePeakDB(EBUSignals.taperedSine(frequency: fs / 6, amplitude: 0.5, phaseDegrees: 60)), -6, "case 17")
        assertTruePeak(truePeakDB(EBUSignals.taperedSine(frequency: fs / 8, amplitude: 0.5, phaseDegrees: 67.5)), -6, "case 18")
        assertTruePeak(truePeakDB(EBUSignals.taperedSine(frequency: fs / 4, amplitude: 1.41, phaseDegrees: 45)), 3, "case 19")
        // The sample peak of case 16 under-reads by 3 dB: the true-peak meter must not.
        let case16 = EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 45)
        XCTAssertEqual(Double(Decibels.fromAmplitude(case16[0].map(abs).max()!)), -9.03, accuracy: 0.05)
    }

    func testCases20To23InterSamplePeaks() {
        for offset in 0..<4 {
            assertTruePeak(truePeakDB(EBUSignals.interSamplePeak(offset: offset)), 0, "case \(20 + offset)")
        }
    }

    /// A 16×-oversampled reference: the band-limited interpolation of `x` (a Kaiser-windowed
    /// sinc, β 10, 1,024 taps, in Double: flat to about 23.8 kHz at 48 kHz) at sixteen points
    /// per sample on both sides of the 64 largest samples (a band-limited signal's peak lies
    /// next to one of its largest samples; see TruePeakMeter).
    private func reference16(_ x: [Float]) -> Double {
        let half = 512, beta = 10.0
        func i0(_ v: Double) -> Double {
            var sum = 1.0, term = 1.0, k = 1.0
            while term > 1e-15 * sum { term *= (v / (2 * k)) * (v / (2 * k)); sum += term; k += 1 }
            return sum
        }
        // kernel[p][j]: weight of x[n + j − half] for the point n + p/16.
        let kernel: [[Double]] = (0..<16).map { p in
            (0..<(2 * half)).map { j in
                let t = Double(half - j) + Double(p) / 16
                let r = t / Double(half)
                guard abs(r) < 1 else { return 0 }
                let sinc = t == 0 ? 1 : sin(Double.pi * t) / (Double.pi * t)
                return sinc * i0(beta * (1 - r * r).squareRoot()) / i0(beta)
            }
        }
        let largest = x.indices.sorted { abs(x[$0]) > abs(x[$1]) }.prefix(64)
        var peak = 0.0
        for centre in largest {
            for n in [centre - 1, centre] {
                for p in 0..<16 {
                    var acc = 0.0
                    for j in 0..<(2 * half) {
                        let m = n + j - half
                        if m >= 0 && m < x.count { acc += kernel[p][j] * Double(x[m]) }
                    }
                    peak = max(peak, abs(acc))
                }
            }
        }
        return 20 * log10(peak)
    }

    /// True peak within 0.05 dB of the 16× reference: pink noise band-limited to 20 Hz–20 kHz
    /// (random-phase multitones, 240 log-spaced partials: equal power per octave; seeds
    /// printed), the EBU Tech 3341 true-peak cases 15–23, and 5 ms bursts at 19.2 kHz at eight
    /// phases (where 4× points alone read up to 0.44 dB low). BS.1770-4's own 4× filter read these
    /// pink noises up to 0.15 dB low.
    func testTruePeakAgainstA16TimesReference() {
        let fs = 48000.0
        var cases: [(String, [Float])] = []
        for seed: UInt64 in [11, 12, 13] {
            var state = seed
            func uniform() -> Double {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return Double(state >> 11) / Double(1 << 53)
            }
            let n = 24000, parts = 240
            var x = [Double](repeating: 0, count: n)
            for k in 0..<parts {
                let f = 20 * pow(1000, (Double(k) + uniform()) / Double(parts))
                let (w, phase) = (2 * Double.pi * f / fs, 2 * Double.pi * uniform())
                // sin by rotation: (c, s) advances by w per sample.
                var (c, s) = (cos(phase), sin(phase))
                let (cw, sw) = (cos(w), sin(w))
                for i in 0..<n { x[i] += s; (c, s) = (c * cw - s * sw, s * cw + c * sw) }
            }
            let fade = 480
            for i in 0..<fade { let g = 0.5 - 0.5 * cos(Double.pi * Double(i) / Double(fade)); x[i] *= g; x[n - 1 - i] *= g }
            let scale = 0.5 / x.map(abs).max()!
            cases.append(("pink noise, seed \(seed)", x.map { Float($0 * scale) }))
        }
        cases += [
            ("case 15", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 0)[0]),
            ("case 16", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 45)[0]),
            ("case 17", EBUSignals.taperedSine(frequency: fs / 6, amplitude: 0.5, phaseDegrees: 60)[0]),
            ("case 18", EBUSignals.taperedSine(frequency: fs / 8, amplitude: 0.5, phaseDegrees: 67.5)[0]),
            ("case 19", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 1.41, phaseDegrees: 45)[0]),
        ]
        for offset in 0..<4 { cases.append(("case \(20 + offset)", EBUSignals.interSamplePeak(offset: offset)[0])) }
        // 19.2 kHz: 10 4×-steps a period, so every crest of |x| (five steps apart) falls at
        // the same offset from the 4× points; at phase 0 halfway between two, where 4× points
        // alone read 0.44 dB low (1 − cos(π/10)).
        let f = 4 * fs / 10
        for k in 0..<8 {
            let phase = Double(k) * Double.pi / 16
            var x = [Float](repeating: 0, count: 2400)
            for i in 0..<240 {
                let hann = 0.5 - 0.5 * cos(2 * Double.pi * (Double(i) + 0.5) / 240)
                x[1000 + i] = Float(0.5 * hann * sin(2 * Double.pi * f * Double(i) / fs + phase))
            }
            cases.append(("19.2 kHz burst, phase \(k)π/16", x))
        }
        for (label, x) in cases {
            let reference = reference16(x)
            let measured = truePeakDB([x])
            print(String(format: "%@: reference %.3f dBTP, meter %+.4f dB", label, reference, measured - reference))
            XCTAssertEqual(measured, reference, accuracy: 0.05, label)
        }
    }

    /// The end of the audio (`finish`): the phases of the last 12 samples, which the filter
    /// holds back for the samples after them, read with silence after the end as the 16×
    /// reference reads them (within 0.05 dB; 1.9 to 25 dB low without), channel by channel
    /// and in lanes alike: a lone loudest last sample after a quiet sine, and 12 kHz rising
    /// over the last 48 samples to its loudest at the end, at four phases.
    func testTruePeakOfAFilesLastSamples() {
        let fs = 48000.0
        var cases: [[Float]] = [(0..<4799).map { Float(0.05 * sin(2 * Double.pi * 997 * Double($0) / fs)) } + [0.9]]
        for k in 0..<4 {
            cases.append((0..<4800).map { i in
                let rise = Double(max(0, i - 4752)) / 48, envelope = sin(Double.pi / 2 * rise) * sin(Double.pi / 2 * rise)
                let burst = 0.8 * envelope * sin(2 * Double.pi * 12_000 * Double(i) / fs + Double(k) * Double.pi / 8)
                return Float(0.05 * sin(2 * Double.pi * 997 * Double(i) / fs) + burst)
            })
        }
        let channels = 8
        let alone = TruePeakMeter(sampleRate: 48000, channels: cases.count), lanes = TruePeakMeter(sampleRate: 48000, channels: channels)
        let padded = (0..<channels).map { cases[$0 % cases.count] }
        TestSignals.inPieces(padded, sizes: [1000, 333, 4096]) { pointers, m, _ in
            lanes.process(frames: m, channels: 0, count: channels, from: { pointers[$0] })
            for c in cases.indices { alone.process(frames: m, from: pointers[c], channel: c) }
        }
        let before = cases.indices.map { Double(Decibels.fromAmplitude(alone.maxPeak(channel: $0))) }
        for c in cases.indices { alone.finish(channel: c) }
        lanes.finish(channels: 0, count: channels)
        for (c, x) in cases.enumerated() {
            let reference = reference16(x)
            let measured = Double(Decibels.fromAmplitude(alone.maxPeak(channel: c)))
            XCTAssertEqual(measured, reference, accuracy: 0.05, "case \(c)")
            XCTAssertLessThan(before[c], reference - 1.5, "case \(c) before the end")
            XCTAssertEqual(lanes.maxPeak(channel: c), alone.maxPeak(channel: c), "case \(c) in lanes")
            XCTAssertGreaterThanOrEqual(alone.maxPeak(channel: c), alone.samplePeak(channel: c), "case \(c)")
        }
    }

    func testTruePeakAt44100And96000() {
        for rate in [44100, 96000] {
            let s = EBUSignals.taperedSine(frequency: Double(rate) / 4, amplitude: 0.5, phaseDegrees: 45, sampleRate: rate)
            assertTruePeak(truePeakDB(s, sampleRate: rate), -6, "\(rate) Hz")
        }
    }

    // MARK: Tech 3342 cases 1–4: loudness range (±1 LU; aim ±0.1)

    func testLoudnessRangeCases1To4() {
        let cases: [([Double], Double)] = [
            ([-20, -30], 10), ([-20, -15], 5), ([-40, -20], 20), ([-50, -35, -20, -35, -50], 15),
        ]
        for (i, (levels, expected)) in cases.enumerated() {
            let m = measure(EBUSignals.tones(levels.map { S(seconds: 20, dBFS: $0) }))
            XCTAssertEqual(m.loudnessRange, expected, accuracy: 0.1, "Tech 3342 case \(i + 1)")
        }
    }

    func testResetStartsAgain() {
        let m = measure(EBUSignals.tones([S(seconds: 5, dBFS: -10)]))
        m.reset()
        measure(EBUSignals.tones([S(seconds: 5, dBFS: -30)]), meter: m)
        XCTAssertEqual(m.integrated, -30, accuracy: 0.1)
        XCTAssertEqual(m.maxMomentary, -30, accuracy: 0.1)
        XCTAssertEqual(LoudnessMeter(sampleRate: 48000, layout: .stereo).integrated, LoudnessMeter.floor)
    }

    func testOtherSampleRates() {
        for rate in [44100, 96000, 32000] {
            let m = measure(EBUSignals.tones([S(seconds: 10, dBFS: -23)], sampleRate: rate), sampleRate: rate)
            XCTAssertEqual(m.integrated, -23, accuracy: 0.1, "\(rate) Hz")
        }
    }
}
