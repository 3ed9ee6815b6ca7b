import DSP
import Foundation
import Analysis
import Settings
import Outputs
import XCTest

/// The worker's analysis without threads or JACK: frames in, snapshots out.
final class AnalyzerTests: XCTestCase {
    private func sine(_ f: Double, rate: Double, count: Int, amplitude: Double) -> [Float] {
        (0..<count).map { Float(amplitude * sin(2 * Double.pi * f * Double($0) / rate)) }
    }

    /// Feeds `channels` in chunks of the given sizes (cycling); returns the snapshot after
    /// the last hop and the number of hop callbacks.
    private func run(_ analyzer: Analyzer, _ channels: [[Float]], chunks: [Int]) -> (Snapshot, Int) {
        var snapshot = Snapshot(channels: channels.count, barCount: analyzer.settings.bars)
        var hops = 0
        var offset = 0
        var k = 0
        let total = channels[0].count
        while offset < total {
            let n = min(chunks[k % chunks.count], total - offset)
            k += 1
            withPointers(channels, offset) { pointers in
                analyzer.append(frames: n, from: { pointers[$0] }) {
                    hops += 1
                    analyzer.write(into: &snapshot)
                }
            }
            offset += n
        }
        return (snapshot, hops)
    }


    /// A feature brings what it needs (`AnalysisFeatures.implications`): an analyzer asked only
    /// for the loudness histogram measures the loudness it is made of — a 5 s 1 kHz tone of
    /// peak −19.49 dBFS (−22.5 LUFS: a full-scale sine reads −3.01) fills the one 1 LU bin of
    /// −23 … −22 LUFS.
    func testAFeatureBringsWhatItNeeds() throws {
        XCTAssertTrue(AnalysisFeatures.histogram.withImplied.contains(.loudness))
        XCTAssertTrue(AnalysisFeatures.everyHop.withImplied.contains(.live))
        XCTAssertEqual(AnalysisFeatures.all.withImplied, .all, "all needs nothing more")
        var c = Configuration()
        c.channels = 1
        let analyzer = try Analyzer(configuration: c, sampleRate: 48000, features: [.live, .histogram])
        XCTAssertTrue(analyzer.features.contains(.loudness))
        var s = analyzer.makeSnapshot()
        let tone = sine(1000, rate: 48000, count: 5 * 48000, amplitude: 0.106)
        tone.withUnsafeBufferPointer { b in analyzer.append(frames: b.count, from: { _ in b.baseAddress! }) { analyzer.write(into: &s) } }
        let histogram = s.programmes[0].histogram
        XCTAssertEqual(histogram.count, ProgrammeSnapshot.histogramBins)
        let fullest = try XCTUnwrap(histogram.indices.max { histogram[$0] < histogram[$1] })
        XCTAssertEqual(-70 + fullest * Int(ProgrammeSnapshot.histogramBinLU), -23, "\(histogram)")
        XCTAssertGreaterThan(histogram[fullest], 90)
    }

    func testStreamingToneAt48kNamesA4AndMeasuresLevels() throws {
        let analyzer = try Analyzer(configuration: Configuration(), sampleRate: 48000)
        XCTAssertEqual(analyzer.hopSize, 1024)  // 4096 × (1 − 0.75)
        let tone = sine(440, rate: 48000, count: 48000, amplitude: 0.25)  // −12.04 dBFS peak
        let silence = [Float](repeating: 0, count: 48000)
        let (s, hops) = run(analyzer, [tone, silence], chunks: [256])
        XCTAssertEqual(hops, 48000 / 1024)
        XCTAssertEqual(s.sequence, hops)
        XCTAssertEqual(s.channels[0].peakNote?.name, "A4")
        XCTAssertEqual(s.channels[0].peakFrequencyHz, 440, accuracy: 0.5)
        XCTAssertEqual(Double(s.channels[0].rmsDBFS), 20 * log10(0.25) - 3.0103, accuracy: 0.05)
        XCTAssertEqual(Double(s.channels[0].peakDBFS), 20 * log10(0.25), accuracy: 0.05)
        // Display level: (RMS + 60) / 60 once risen.
        XCTAssertEqual(Double(s.channels[0].level), (20 * log10(0.25) - 3.0103 + 60) / 60, accuracy: 0.002)
        XCTAssertNil(s.channels[1].peakNote)
        XCTAssertEqual(s.channels[1].rmsDBFS, Decibels.floor)
        XCTAssertEqual(s.channels[1].level, 0)
    }

    /// The note played is the fundamental, not the loudest partial: F#3 (185 Hz) whose third
    /// harmonic (C#5, 555 Hz) is 12 dB louder. `pitch` names F#3, `peakfreq` the harmonic.
    func testPitchNamesTheFundamentalWhenAHarmonicIsLouder() throws {
        let f0 = 184.997  // F#3
        let fundamental = sine(f0, rate: 48000, count: 48000, amplitude: 0.05)
        let third = sine(3 * f0, rate: 48000, count: 48000, amplitude: 0.05 * pow(10, 12 / 20))
        let signal = zip(fundamental, third).map { $0 + $1 }
        var c = Configuration()
        c.channels = 1
        let (s, _) = run(try Analyzer(configuration: c, sampleRate: 48000), [signal], chunks: [256])
        XCTAssertEqual(s.channels[0].pitchNote?.name, "F#3")
        XCTAssertEqual(s.channels[0].pitchHz, f0, accuracy: 0.5)
        XCTAssertGreaterThanOrEqual(s.channels[0].pitchConfidence, c.pitchConfidence)
        XCTAssertEqual(s.channels[0].peakNote?.name, "C#5", "the FFT peak is the louder third harmonic")
        let line = AddressSpace(prefix: "/jackvu").messages(for: s).first { $0.address == "/jackvu/ch/1/pitch" }
        XCTAssertEqual(line?.typeTags, "fsff")
        XCTAssertEqual(line?.arguments[1], .string("F#3"))
    }

    /// Silence and white noise name no note: `0 "-" 0 CONFIDENCE`.
    func testSilenceAndNoiseNameNoNote() throws {
        var c = Configuration()
        c.channels = 2
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<48000).map { _ in Float.random(in: -0.5...0.5, using: &generator) }
        let silence = [Float](repeating: 0, count: 48000)
        let (s, _) = run(try Analyzer(configuration: c, sampleRate: 48000), [silence, noise], chunks: [512])
        for ch in s.channels {
            XCTAssertNil(ch.pitchNote)
            XCTAssertEqual(ch.pitchHz, 0)
        }
        XCTAssertLessThan(s.channels[1].pitchConfidence, c.pitchConfidence, "noise has a low confidence")
        let pitch = AddressSpace(prefix: "/jackvu").messages(for: s).filter { $0.address.hasSuffix("/pitch") }
        XCTAssertEqual(pitch.map(\.text), [
            "/jackvu/ch/1/pitch fsff 0.000000 \"-\" 0.000000 0.000000\n",
            OSCMessage("/jackvu/ch/2/pitch", [.float(0), .string("-"), .float(0), .float(Float(s.channels[1].pitchConfidence))]).text,
        ])
    }

    /// The block is full only after fft-size frames: until then the worker publishes nothing.
    func testBlockIsFullAfterOneFFTSize() throws {
        let analyzer = try Analyzer(configuration: Configuration(), sampleRate: 48000)
        let tone = sine(440, rate: 48000, count: 4096, amplitude: 0.5)
        var fullAt: [Bool] = []
        withPointers([tone, tone], 0) { p in
            analyzer.append(frames: 4096, from: { p[$0] }) { fullAt.append(analyzer.isBlockFull) }
        }
        XCTAssertEqual(fullAt, [false, false, false, true])
        var s = Snapshot(channels: 2, barCount: 48, bandCount: analyzer.bandCount)
        analyzer.write(into: &s)
        XCTAssertEqual(Double(s.channels[0].rmsDBFS), 20 * log10(0.5) - 3.0103, accuracy: 0.1, "full block: the steady RMS")
        // The maxima are the readings of a meter that has only risen so far, and the readings
        // are the tone's, not the floor: a sine of amplitude 0.5 peaks at −6.02 dBTP.
        XCTAssertEqual(Double(s.channels[0].truePeakDBTP), 20 * log10(0.5), accuracy: 0.05)
        XCTAssertEqual(Double(s.channels[0].maxTruePeakDBTP), 20 * log10(0.5), accuracy: 0.05)
        XCTAssertGreaterThan(s.loudness.momentary, -40, "the momentary loudness has the tone")
        XCTAssertEqual(s.loudness.maxMomentary, s.loudness.momentary, accuracy: 0.01)
        XCTAssertEqual(s.loudness.maxShortTerm, s.loudness.shortTerm, accuracy: 0.01)
    }

    /// The spectrum and the pitch are computed when an output can read them: at 20 updates a
    /// second and 47 hops a second (48 kHz, 1,024-frame hops) every second hop, the channels
    /// taking turns, all of them at the hop that fills the block; every hop at a rate above
    /// the hops' and with `.everyHop` (the MIDI notes port). A level that grows every hop
    /// changes the bars at each hop they are computed.
    func testSpectraAndPitchPacedToTheOutputRate() throws {
        let hop = 1024, hops = 12
        let growing: [Float] = (0..<(hop * hops)).map { i in Float(0.02 * Double(i / hop + 1) * sin(2 * Double.pi * 1000 * Double(i) / 48000)) }
        func changes(_ analyzer: Analyzer) -> [[Bool]] {
            var s = Snapshot(channels: 2, barCount: 48, bandCount: analyzer.bandCount)
            var previous = [Array(s.channels[0].bars), Array(s.channels[1].bars)]
            var changed: [[Bool]] = [[], []]
            withPointers([growing, growing], 0) { p in
                analyzer.append(frames: growing.count, from: { p[$0] }) {
                    analyzer.write(into: &s)
                    for c in 0..<2 {
                        changed[c].append(Array(s.channels[c].bars) != previous[c])
                        previous[c] = Array(s.channels[c].bars)
                    }
                }
            }
            return changed
        }
        let paced = try Analyzer(configuration: Configuration(), sampleRate: 48000)
        XCTAssertEqual(paced.spectrumPace, 2)
        let even = (1...hops).map { $0 % 2 == 0 }, odd = (1...hops).map { $0 % 2 == 1 }
        // Hop 4 fills the block: both channels then.
        XCTAssertEqual(changes(paced), [even, odd.enumerated().map { $0.element || $0.offset == 3 }])
        let fast = try Analyzer(configuration: Configuration(), sampleRate: 48000)
        fast.readingsPerSecond = 100
        XCTAssertEqual(fast.spectrumPace, 1)
        XCTAssertEqual(changes(fast), [[Bool]](repeating: [Bool](repeating: true, count: hops), count: 2))
        let notes = try Analyzer(configuration: Configuration(), sampleRate: 48000, features: Analyzer.Features.all.union(.everyHop))
        XCTAssertEqual(notes.spectrumPace, 1)
        XCTAssertTrue(Analyzer.Features.needed(for: Configuration(), midiNotes: true).contains(.everyHop))
        XCTAssertFalse(Analyzer.Features.needed(for: Configuration()).contains(.everyHop))
    }

    /// What a connection change leaves out (`heldMaxima`, `restore`): a full-scale step and
    /// clipping samples fed between the two (with the filter's ringing after them) count for
    /// no true-peak maximum, sample peak or clip, while the frames before and after do; the
    /// loudness still hears them.
    func testMaximaLeaveOutAStretchButLoudnessHearsIt() throws {
        let analyzer = try Analyzer(configuration: Configuration(), sampleRate: 48000)
        let quiet = sine(997, rate: 48000, count: 4800, amplitude: 0.1)  // −20 dBTP
        let loud = [Float](repeating: 1, count: 256)  // a step to full scale: clips
        withPointers([quiet, quiet], 0) { p in analyzer.append(frames: 4800, from: { p[$0] }) {} }
        var before = Snapshot(channels: 2, barCount: 48, bandCount: analyzer.bandCount)
        analyzer.write(into: &before)
        let kept = analyzer.heldMaxima(channel: 0)
        withPointers([loud, quiet], 0) { p in analyzer.append(frames: 256, from: { p[$0] }) {} }
        // (The stretch with the true-peak filter's ringing after it, as live: 256 frames or
        // a period from the change, which the ringing of a step at its start stays within.)
        withPointers([quiet, quiet], 0) { p in analyzer.append(frames: 64, from: { p[$0] }) {} }
        analyzer.restore(kept, channel: 0)
        withPointers([quiet, quiet], 64) { p in analyzer.append(frames: 4800 - 64, from: { p[$0] }) {} }
        var after = Snapshot(channels: 2, barCount: 48, bandCount: analyzer.bandCount)
        analyzer.write(into: &after)
        XCTAssertEqual(Double(after.channels[0].maxTruePeakDBTP), -20, accuracy: 0.05)
        XCTAssertEqual(after.channels[0].clips, 0)
        XCTAssertEqual(Double(analyzer.totals(channel: 0).samplePeakDBFS), -20, accuracy: 0.05)
        XCTAssertGreaterThan(after.loudness.maxMomentary, before.loudness.maxMomentary + 3, "the loudness heard the step")
        // Without the restore the same audio counts.
        withPointers([loud, quiet], 0) { p in analyzer.append(frames: 256, from: { p[$0] }) {} }
        withPointers([quiet, quiet], 0) { p in analyzer.append(frames: 4800, from: { p[$0] }) {} }
        analyzer.write(into: &after)
        XCTAssertGreaterThan(Double(after.channels[0].maxTruePeakDBTP), -0.5)
        XCTAssertEqual(after.channels[0].clips, 1)
    }

    /// After a restart of the analysis block (a connection change, a gap) nothing is published
    /// until the block is full again (4 hops of 1,024 frames): the true peak of those hops goes
    /// with the first update published — and, should the run end first, with the end
    /// (`takeRecentTruePeakDBTP`, `samplePeakSinceHopDBFS`: the log's last block), as does the
    /// sample peak of what came since the last published hop, before the restart too. A
    /// stretch left out of the maxima stays out of it, and what an update showed before the
    /// restart is not shown again. (Before: the first update after a
    /// restart and the end read −20 dB, the quiet tone's, for a −6 dB burst in the refill.)
    func testTheRefillAfterARestartReachesTheNextUpdateAndTheEnd() throws {
        let quiet = sine(1000, rate: 48000, count: 8192, amplitude: 0.1)  // −20 dBTP
        let burst = sine(1000, rate: 48000, count: 288, amplitude: 0.5)  // −6 dB, 6 whole periods
        func analyzer() throws -> Analyzer {
            let a = try Analyzer(configuration: Configuration(), sampleRate: 48000)
            XCTAssertEqual(a.hopSize, 1024)
            withPointers([quiet, quiet], 0) { p in a.append(frames: 8192, from: { p[$0] }) {} }
            return a
        }
        func feed(_ a: Analyzer, _ x: [Float], _ frames: Int, excluding: [Int]? = nil, into published: inout [Snapshot]) {
            var got: [Snapshot] = []
            withPointers([x, x], 0) { p in
                let hop = {
                    guard a.isBlockFull else { return }
                    var s = Snapshot(channels: 2, barCount: 48, bandCount: a.bandCount)
                    a.write(into: &s)
                    got.append(s)
                }
                if let excluding { a.append(frames: frames, from: { p[$0] }, leavingOutMaximaOf: excluding, hop: hop) } else { a.append(frames: frames, from: { p[$0] }, hop: hop) }
            }
            published += got
        }
        // The burst in the refill's first hop: the first update after the restart has it.
        var published: [Snapshot] = []
        let a = try analyzer()
        a.restartBlock()
        feed(a, burst, 288, into: &published)
        feed(a, quiet, 4096, into: &published)
        XCTAssertEqual(published.count, 1, "the block full again after 4 hops")
        XCTAssertEqual(Double(published.first?.channels[0].truePeakDBTP ?? -200), -6.02, accuracy: 0.3, "the first update after the restart")
        // The run ends during the refill, a hop after the restart.
        published = []
        let b = try analyzer()
        b.restartBlock()
        feed(b, burst, 288, into: &published)
        feed(b, quiet, 1024, into: &published)
        XCTAssertEqual(published.count, 0)
        XCTAssertEqual(b.takeRecentTruePeakDBTP(channel: 0), -6.02, accuracy: 0.3, "the end's true peak")
        XCTAssertEqual(b.samplePeakSinceHopDBFS(channel: 0), -6.02, accuracy: 0.05, "the end's sample peak")
        // The burst before the restart, since the last published hop; the end a hop later.
        let c = try analyzer()
        feed(c, burst, 288, into: &published)
        c.restartBlock()
        feed(c, quiet, 1024 + 288, into: &published)
        XCTAssertEqual(published.count, 0)
        XCTAssertEqual(c.takeRecentTruePeakDBTP(channel: 0), -6.02, accuracy: 0.3, "the end's true peak, the burst before the restart")
        XCTAssertEqual(c.samplePeakSinceHopDBFS(channel: 0), -6.02, accuracy: 0.05, "the end's sample peak, the burst before the restart")
        // A connection change on channel 1: the burst at its start, with a hop inside the
        // stretch left out, counts for channel 1's update only if it is not left out.
        let d = try analyzer()
        d.restartBlock()
        var burstThenQuiet = burst
        burstThenQuiet += quiet.prefix(1200 - 288)
        feed(d, burstThenQuiet, 1200, excluding: [1], into: &published)
        feed(d, quiet, 4096 - 1200, into: &published)
        XCTAssertEqual(published.count, 1)
        XCTAssertEqual(Double(published.first?.channels[0].truePeakDBTP ?? -200), -6.02, accuracy: 0.3, "channel 0 heard the burst")
        XCTAssertEqual(Double(published.first?.channels[1].truePeakDBTP ?? -200), -20, accuracy: 0.1, "channel 1's stretch is left out")
        // The burst in the last update before the restart is not shown again after it.
        let e = try analyzer()
        published = []
        feed(e, burstThenQuiet, 1024, into: &published)
        XCTAssertEqual(Double(published.first?.channels[1].truePeakDBTP ?? -200), -6.02, accuracy: 0.3)
        e.restartBlock()
        feed(e, quiet, 1200, excluding: [1], into: &published)
        feed(e, quiet, 4096 - 1200, into: &published)
        XCTAssertEqual(published.count, 2)
        XCTAssertEqual(Double(published.last?.channels[1].truePeakDBTP ?? -200), -20, accuracy: 0.1, "the burst counted twice")
    }

    /// `--send` decides what is computed: peak and RMS need neither the FFT, YIN, loudness
    /// nor the meters; the meter port's `--meter` source is always computed.
    func testSelectionDecidesWhatIsComputed() throws {
        var c = Configuration()
        c.send = try MessageKinds.parse("peak,rms")
        XCTAssertEqual(Analyzer.Features.needed(for: c), [.live])
        c.meterSource = .momentary
        XCTAssertEqual(Analyzer.Features.needed(for: c), [.live, .loudness])
        XCTAssertTrue(Analyzer.Features.needed(for: c, midiNotes: true).contains(.yin))
        // The metrics' families need their readings whatever --send says (loudness, true
        // peak, the digital peak's clips), the on-request ones' only when sent.
        c.meterSource = .rms
        c.metrics = try Configuration.httpAddress("9100", option: "--metrics")
        let metrics = Analyzer.Features.needed(for: c)
        XCTAssertEqual(metrics, [.live, .loudness, .truePeak, .dpeak], "\(metrics)")
        XCTAssertFalse(metrics.contains(.bits), "the bit meter's families only with --send bits")
        c.metrics = nil
        c.send = .all
        XCTAssertEqual(Analyzer.Features.needed(for: c), .all)
        XCTAssertThrowsError(try MessageKinds.parse("peak,nope")) { error in
            XCTAssertTrue("\(error)".contains("'nope' is not a message kind"), "\(error)")
        }
        // Only the selected messages are made.
        c.send = try MessageKinds.parse("rms,pitch")
        let s = Snapshot(channels: 2, barCount: 4)
        let addresses = AddressSpace(prefix: "/jackvu", kinds: c.send).messages(for: s).map(\.address)
        XCTAssertEqual(addresses, ["/jackvu/ch/1/rms", "/jackvu/ch/1/pitch", "/jackvu/ch/2/rms", "/jackvu/ch/2/pitch"])
    }

    /// The sample-rate regression through the streaming path: a 48 kHz signal analysed as
    /// 44.1 kHz is not A4; analysed at the true rate it is.
    func testSampleRateRegressionWhenStreaming() throws {
        let tone = sine(440, rate: 48000, count: 16384, amplitude: 0.5)
        let (wrong, _) = run(try Analyzer(configuration: Configuration(), sampleRate: 44100), [tone, tone], chunks: [512])
        XCTAssertNotEqual(wrong.channels[0].peakNote?.name, "A4")
        let (right, _) = run(try Analyzer(configuration: Configuration(), sampleRate: 48000), [tone, tone], chunks: [512])
        XCTAssertEqual(right.channels[0].peakNote?.name, "A4")
    }

    /// Results do not depend on how the frames are chunked (as JACK buffer sizes vary).
    func testChunkingDoesNotChangeResults() throws {
        var c = Configuration()
        c.channels = 1
        c.fftSize = 2048
        c.overlap = 0.5
        let tone = sine(1234.5, rate: 44100, count: 20000, amplitude: 0.7)
        let (a, ha) = run(try Analyzer(configuration: c, sampleRate: 44100), [tone], chunks: [64])
        let (b, hb) = run(try Analyzer(configuration: c, sampleRate: 44100), [tone], chunks: [1, 7, 1000, 333, 4096])
        XCTAssertEqual(ha, hb)
        XCTAssertEqual(a.channels[0].bars, b.channels[0].bars)
        XCTAssertEqual(a.channels[0].peakFrequencyHz, b.channels[0].peakFrequencyHz)
        XCTAssertEqual(a.channels[0].rmsDBFS, b.channels[0].rmsDBFS)
        XCTAssertEqual(a.channels[0].peakFrequencyHz, 1234.5, accuracy: 0.5)
    }

    /// The meter port values move with every piece of audio, not every hop: one 256-frame
    /// period of a tone after silence already lifts the RMS, peak and true-peak meters, long
    /// before the 1024-frame hop completes; at each hop the RMS meter equals the block's RMS.
    func testMeterValuesFollowEveryPeriod() throws {
        for source in [MeterSource.rms, .peak, .truepeak] {
            var c = Configuration()
            c.channels = 1
            c.meterSource = source
            let analyzer = try Analyzer(configuration: c, sampleRate: 48000, features: Analyzer.Features.needed(for: c))
            let silence = [Float](repeating: 0, count: 8192)
            _ = run(analyzer, [silence], chunks: [256])
            XCTAssertEqual(analyzer.meterValue(channel: 0), 0, "\(source): silence on the floor")
            let tone = sine(1000, rate: 48000, count: 256, amplitude: 0.5)
            var hops = 0
            withPointers([tone], 0) { p in analyzer.append(frames: 256, from: { p[$0] }) { hops += 1 } }
            XCTAssertEqual(hops, 0, "no hop completed yet")
            let value = analyzer.meterValue(channel: 0)
            XCTAssertGreaterThan(value, 0.5, "\(source) after one period of a -6 dBFS tone: \(value)")
        }
        // At a hop's end the RMS meter is the block's RMS, as the text output's level.
        var c = Configuration()
        c.channels = 1
        let analyzer = try Analyzer(configuration: c, sampleRate: 48000)
        let (s, _) = run(analyzer, [sine(440, rate: 48000, count: 16384, amplitude: 0.25)], chunks: [256])
        XCTAssertEqual(Double(analyzer.meterValue(channel: 0)), Double(s.channels[0].level), accuracy: 1e-5)
        XCTAssertEqual(Double(s.channels[0].level), (Double(s.channels[0].rmsDBFS) + 60) / 60, accuracy: 1e-4)
    }

    /// After the tone stops, the display level falls at --fall dB/s and the hold waits --hold s.
    func testDisplayBallistics() throws {
        var c = Configuration()
        c.channels = 1
        c.fallDBPerSecond = 30
        c.holdSeconds = 0.5
        let analyzer = try Analyzer(configuration: c, sampleRate: 48000)
        let tone = sine(1000, rate: 48000, count: 48000, amplitude: 1)
        let (loud, _) = run(analyzer, [tone], chunks: [480])
        XCTAssertEqual(Double(loud.channels[0].level), (60 - 3.0103) / 60, accuracy: 0.002)
        XCTAssertEqual(Double(loud.channels[0].hold), 1, accuracy: 0.002)
        // 0.25 s of silence: the block empties after 4096 samples, then the level falls.
        let (later, _) = run(analyzer, [[Float](repeating: 0, count: 12288)], chunks: [480])
        let elapsed = Double(12288) / 48000  // 0.256 s, i.e. 12 hops
        XCTAssertEqual(Double(later.channels[0].hold), 1, accuracy: 0.002, "still holding")
        // The level falls at 30 dB/s, no faster (it may not fall before the first silent hop
        // ends, nor for the hop in which the silence began: two hops of 21.3 ms): 3 or
        // 300 dB/s would be far outside.
        let hop = 1024 / 48000.0
        let fell = (Double(loud.channels[0].level) - Double(later.channels[0].level)) * 60
        XCTAssertLessThanOrEqual(fell, 30 * elapsed + 0.1, "no faster than --fall")
        XCTAssertGreaterThanOrEqual(fell, 30 * (elapsed - 2 * hop), "as fast as --fall")
        // Another 0.5 s of silence: 0.756 s after the tone the hold (0.5 s after the last hop
        // with the tone in its block, at most 0.1 s after the tone) has been falling at 30 dB/s
        // for 0.156–0.256 s.
        let (released, _) = run(analyzer, [[Float](repeating: 0, count: 24000)], chunks: [480])
        let since = Double(12288 + 24000) / 48000
        let holdFell = (1 - Double(released.channels[0].hold)) * 60
        XCTAssertLessThanOrEqual(holdFell, 30 * (since - 0.5) + 0.1, "held --hold s")
        XCTAssertGreaterThanOrEqual(holdFell, 30 * (since - 0.5 - 0.1 - hop), "released after --hold s")
    }

    func testAddressSpaceMessages() {
        var s = Snapshot(channels: 2, barCount: 3, bandCount: 2)
        s.sequence = 1
        s.sampleRate = 48000
        s.channels[0].peakDBFS = -12
        s.channels[0].rmsDBFS = -15.01
        s.channels[0].level = 0.75
        s.channels[0].hold = 0.8
        s.channels[0].meter = 0.75
        s.channels[0].bars = [0, 0.5, 1]
        s.channels[0].thirds = [-30, -40]
        s.channels[0].peakFrequencyHz = 440
        s.channels[0].peakNote = Note(frequency: 440)
        s.channels[0].pitchHz = 220
        s.channels[0].pitchNote = Note(frequency: 220)
        s.channels[0].pitchConfidence = 0.95
        s.channels[0].truePeakDBTP = -11.5
        s.channels[0].maxTruePeakDBTP = -10
        s.channels[0].heldPeakDBFS = -11
        s.channels[0].clips = 2
        s.channels[0].vu = -1
        s.channels[0].ppm = 4.5
        s.channels[0].k = 5
        s.correlations = [0.5]
        s.loudness.momentary = -20
        s.loudness.shortTerm = -21
        s.loudness.integrated = -23
        s.loudness.range = 4
        s.loudness.maxMomentary = -18
        s.loudness.maxShortTerm = -19
        s.status.xruns = 2
        s.status.overruns = 3
        s.status.cycles = 99
        s.status.callbackMeanMicroseconds = 1.5
        s.status.callbackMaxMicroseconds = 20
        s.status.callbackP99Microseconds = 2.048
        let lines = AddressSpace(prefix: "/studio/a").messages(for: s).map(\.text)
        XCTAssertEqual(Array(lines.prefix(14)).joined(), """
            /studio/a/ch/1/peak f -12.000000
            /studio/a/ch/1/rms f -15.010000
            /studio/a/ch/1/level f 0.750000
            /studio/a/ch/1/hold f 0.800000
            /studio/a/ch/1/meter f 0.750000
            /studio/a/ch/1/truepeak ff -11.500000 -10.000000
            /studio/a/ch/1/dpeak fi -11.000000 2
            /studio/a/ch/1/vu f -1.000000
            /studio/a/ch/1/ppm f 4.500000
            /studio/a/ch/1/k f 5.000000
            /studio/a/ch/1/pitch fsff 220.000000 "A3" 0.000000 0.950000
            /studio/a/ch/1/peakfreq fsf 440.000000 "A4" 0.000000
            /studio/a/ch/1/bars fff 0.000000 0.500000 1.000000
            /studio/a/ch/1/thirds ff -30.000000 -40.000000

            """)
        XCTAssertEqual(Array(lines.suffix(13)).joined(), """
            /studio/a/pair/1/correlation f 0.500000
            /studio/a/loudness/momentary f -20.000000
            /studio/a/loudness/shortterm f -21.000000
            /studio/a/loudness/integrated f -23.000000
            /studio/a/loudness/range f 4.000000
            /studio/a/loudness/max_momentary f -18.000000
            /studio/a/loudness/max_shortterm f -19.000000
            /studio/a/loudness/plr f 13.000000
            /studio/a/loudness/max_truepeak f -10.000000
            /studio/a/loudness/duration f 0.000000
            /studio/a/loudness/paused i 0
            /studio/a/status iiiiiiiiiiii 48000 2 3 0 99 0 0 0 1 0 0 0
            /studio/a/callback fff 1.500000 2.048000 20.000000

            """)
        XCTAssertEqual(lines.count, 2 * 14 + 13)  // PLR: −10 dBTP − (−23 LUFS); no target: no relative, no state
    }

    /// A sample-rate change (48 → 44.1 kHz, as after a reconnect to a server at another rate)
    /// keeps the running measurements: 10 s of a tone 10 dB louder at 48 kHz, then 10 s of the
    /// quieter one at 44.1 kHz integrate to 10·log10((1 + 0.1) / 2) = −2.60 dB below the louder
    /// part, as one programme would; the maximum momentary loudness is the louder part's. A
    /// fresh analyzer would have measured the quieter part alone (−10 dB). Three runs of
    /// full-scale samples at 48 kHz stay counted as clips, and their 0 dBTP stays the maximum
    /// true peak, after the change.
    func testMeasurementsContinueAcrossASampleRateChange() throws {
        var c = Configuration()
        c.channels = 1
        let first = try Analyzer(configuration: c, sampleRate: 48000)
        var loud = sine(1000, rate: 48000, count: 480_000, amplitude: 0.1)
        for (start, count) in [(100_000, 2), (200_000, 1), (300_000, 3)] {
            for i in start..<start + count { loud[i] = i == 200_000 ? -1 : 1 }
        }
        let (before, _) = run(first, [loud], chunks: [48000])
        XCTAssertEqual(before.channels[0].clips, 3)
        XCTAssertGreaterThanOrEqual(before.channels[0].maxTruePeakDBTP, 0)
        let louder = first.finalLoudness().integrated
        let second = try Analyzer(configuration: c, sampleRate: 44100)
        second.continueMeasurements(from: first)
        let quieter = sine(1000, rate: 44100, count: 441_000, amplitude: 0.1 * pow(10, -0.5))
        let (after, _) = run(second, [quieter], chunks: [44100])
        XCTAssertEqual(after.channels[0].clips, 3, "clips carried over")
        XCTAssertEqual(after.channels[0].maxTruePeakDBTP, before.channels[0].maxTruePeakDBTP, accuracy: 0.01, "max true peak carried over")
        XCTAssertLessThan(after.channels[0].truePeakDBTP, -24, "the quieter tone's own true peak")
        let both = second.finalLoudness()
        XCTAssertEqual(both.integrated, louder - 2.60, accuracy: 0.1, "integrated over both rates")
        XCTAssertEqual(both.maxMomentary, first.finalLoudness().maxMomentary, accuracy: 0.01, "the louder part's maximum")
        let fresh = try Analyzer(configuration: c, sampleRate: 44100)
        let (alone, _) = run(fresh, [quieter], chunks: [44100])
        XCTAssertEqual(alone.channels[0].clips, 0)
        XCTAssertLessThan(alone.channels[0].maxTruePeakDBTP, -24)
        XCTAssertEqual(fresh.finalLoudness().integrated, louder - 10, accuracy: 0.1, "the quieter part alone")
    }

    func testConfigurationValidation() {
        var c = Configuration()
        XCTAssertNoThrow(try c.validate())
        c.fftSize = 3000
        XCTAssertThrowsError(try c.validate()) { XCTAssertEqual(($0 as? ConfigurationError)?.option, "--fft-size") }
        c = Configuration()
        c.overlap = 0.99
        XCTAssertThrowsError(try c.validate())
        c = Configuration()
        c.prefix = "/a/"
        XCTAssertThrowsError(try c.validate())
        c = Configuration()
        c.barsFromHz = 20000
        XCTAssertThrowsError(try c.validate())
    }

    /// The meter ports' pretty names say what `--meter` puts on them and the scale their
    /// 0 … 1 spans (the ranges `meterValue` maps), whatever the source.
    func testMeterPortPrettyNamesFollowTheMeterSource() {
        var c = Configuration()
        XCTAssertEqual(c.meterPortPrettyName(1), "Meter 1 (RMS, 0..1 = -60..0 dBFS)")
        c.meterFloorDBFS = -90
        c.meterSource = .peak
        XCTAssertEqual(c.meterPortPrettyName(2), "Meter 2 (Peak, 0..1 = -90..0 dBFS)")
        c.meterSource = .truepeak
        XCTAssertEqual(c.meterPortPrettyName(3), "Meter 3 (True peak, 0..1 = -90..0 dBTP)")
        c.meterSource = .vu
        XCTAssertEqual(c.meterPortPrettyName(1), "Meter 1 (VU, 0..1 = -20..3 VU)")
        c.meterSource = .ppm
        c.ppmType = .bbc
        XCTAssertEqual(c.meterPortPrettyName(1), "Meter 1 (PPM BBC, 0..1 = 1..7 mark)")
        c.ppmType = .din
        XCTAssertEqual(c.meterPortPrettyName(1), "Meter 1 (PPM DIN, 0..1 = -50..5 dB)")
        c.meterSource = .k
        c.kHeadroom = 14
        XCTAssertEqual(c.meterPortPrettyName(1), "Meter 1 (K-14, 0..1 = -40..14 dB)")
        c.meterSource = .shortterm
        XCTAssertEqual(c.meterPortPrettyName(8), "Meter 8 (Short-term, 0..1 = -59..-5 LUFS)")
        c.meterSource = .momentary
        c.meterFloorDBFS = -47.5
        XCTAssertEqual(c.meterPortPrettyName(1), "Meter 1 (Momentary, 0..1 = -59..-5 LUFS)")
        c.meterSource = .rms
        XCTAssertEqual(c.meterPortPrettyName(1), "Meter 1 (RMS, 0..1 = -47.5..0 dBFS)")
        // --meter takes exactly the meters the scale table has, in its order.
        XCTAssertEqual(MeterSource.allCases.map(\.rawValue), MeterScales.names.map(\.name))
    }
}

/// `--workers`: the per-channel work spread over threads gives exactly the one-thread results.
final class ChannelPoolTests: XCTestCase {
    func testEveryChannelOnceOnAnyNumberOfThreads() {
        for threads in [1, 2, 3, 5] {
            let pool = ChannelPool(threads: threads)
            defer { pool.stop() }
            for count in [0, 1, 2, 3, 7, 64, 256] {
                for _ in 0..<50 {
                    let hits = UnsafeMutablePointer<Int>.allocate(capacity: max(1, count))
                    hits.initialize(repeating: 0, count: max(1, count))
                    pool.forEach(count) { c in hits[c] += 1 }
                    XCTAssertEqual((0..<count).filter { hits[$0] != 1 }, [], "\(threads) threads, \(count) channels")
                    hits.deallocate()
                }
            }
        }
    }

    func testSeveralWorkersGiveTheSameReadings() throws {
        var c = Configuration()
        c.channels = 6
        let rate = 48000
        let signals: [[Float]] = (0..<6).map { ch in
            (0..<(rate * 2)).map { i in Float(0.3 * sin(2 * Double.pi * Double(220 * (ch + 1)) * Double(i) / Double(rate))) + Float(ch) * 0.01 }
        }
        func analyse(threads: Int) throws -> Snapshot {
            let analyzer = try Analyzer(configuration: c, sampleRate: rate)
            analyzer.pool = ChannelPool(threads: threads)
            defer { analyzer.pool.stop() }
            var s = Snapshot(channels: 6, barCount: c.bars, bandCount: analyzer.bandCount)
            withPointers(signals, 0) { base in
                var offset = 0
                while offset < rate * 2 {
                    let n = min(256, rate * 2 - offset)
                    let pointers = base.map { $0 + offset }
                    analyzer.append(frames: n, from: { pointers[$0] }) { analyzer.write(into: &s) }
                    offset += n
                }
            }
            return s
        }
        let one = try analyse(threads: 1), three = try analyse(threads: 3)
        for ch in 0..<6 {
            XCTAssertEqual(one.channels[ch].rmsDBFS, three.channels[ch].rmsDBFS)
            XCTAssertEqual(one.channels[ch].bars, three.channels[ch].bars)
            XCTAssertEqual(one.channels[ch].thirds, three.channels[ch].thirds)
            XCTAssertEqual(one.channels[ch].pitchHz, three.channels[ch].pitchHz)
            XCTAssertEqual(one.channels[ch].truePeakDBTP, three.channels[ch].truePeakDBTP)
            XCTAssertEqual(one.channels[ch].vu, three.channels[ch].vu)
            XCTAssertEqual(one.channels[ch].level, three.channels[ch].level)
        }
        XCTAssertEqual(one.loudness.momentary, three.loudness.momentary)
        XCTAssertEqual(one.correlations, three.correlations)
        XCTAssertEqual(Double(one.channels[0].pitchHz), 220, accuracy: 1)
    }

    /// The 1/3 octaves of many channels run in lane groups of eight (here 8 + 3): each
    /// channel's levels reach its own place in the snapshot.
    func testThirdsOfElevenChannelsEachInTheirPlace() throws {
        var c = Configuration()
        c.channels = 11
        c.send = MessageKinds([.thirds])
        let rate = 48000
        let analyzer = try Analyzer(configuration: c, sampleRate: rate, features: Analyzer.Features.needed(for: c))
        let centres = ThirdOctaveBank(sampleRate: Double(rate)).centres
        let bandOf = (0..<11).map { 6 + 2 * $0 }  // 100 Hz, 160 Hz, … 10 kHz
        let signals: [[Float]] = (0..<11).map { ch in
            (0..<rate).map { i in Float(0.5 * sin(2 * Double.pi * centres[bandOf[ch]] * Double(i) / Double(rate))) }
        }
        var s = Snapshot(channels: 11, barCount: c.bars, bandCount: analyzer.bandCount)
        withPointers(signals, 0) { base in
            var offset = 0
            while offset < rate {
                let n = min(256, rate - offset)
                let pointers = base.map { $0 + offset }
                analyzer.append(frames: n, from: { pointers[$0] }) { analyzer.write(into: &s) }
                offset += n
            }
        }
        for ch in 0..<11 {
            let loudest = s.channels[ch].thirds.indices.max { s.channels[ch].thirds[$0] < s.channels[ch].thirds[$1] }
            XCTAssertEqual(loudest, bandOf[ch], "channel \(ch + 1)")
            XCTAssertEqual(Double(s.channels[ch].thirds[bandOf[ch]]), -9.03, accuracy: 0.5, "channel \(ch + 1)")
        }
    }
}

/// Runs `body` with pointers to copies of `channels` from `offset` on, valid for its whole run.
fileprivate func withPointers(_ channels: [[Float]], _ offset: Int, _ body: ([UnsafePointer<Float>]) -> Void) {
    let copies = channels.map { Array($0[offset...]) }
    var pointers: [UnsafePointer<Float>] = []
    var buffers: [UnsafeMutablePointer<Float>] = []
    for c in copies {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: c.count)
        p.initialize(from: c, count: c.count)
        buffers.append(p)
        pointers.append(UnsafePointer(p))
    }
    body(pointers)
    for b in buffers { b.deallocate() }
}
