#if canImport(Glibc)
import Glibc
#endif
import DSP
import Vocabulary

/// The analysis of all channels, with no threads and no JACK: the worker feeds it from the
/// ring, `jackvu analyze` from files, the benchmark and tests directly.
///
/// Every new sample goes through the sample-accurate meters (loudness, true peak, VU, PPM,
/// K, digital peak, correlation, 1/3-octave bands) and into each channel's *analysis block*,
/// its last `fftSize` samples. Every `hopSize` new samples the block is analysed: sample peak
/// and RMS, the spectrum (bars, peak frequency, note), YIN, and the display ballistics.
///
/// One thread at a time. After `init`, `append` and `write(into:)` do not allocate, except
/// that the loudness history grows (one value per 100 ms) and that the integrated loudness
/// and loudness range are recomputed (a scan and a sort of that history) once per second of
/// audio.
public final class Analyzer: @unchecked Sendable {
    // @unchecked Sendable: used by one thread at a time (the worker); it owns all its buffers.

    /// What to compute. A meter that no output or port needs is left out (`--send`).
    public typealias Features = AnalysisFeatures

    /// What the analysis was told.
    public let settings: AnalysisSettings
    public let features: Features
    /// Sample rate, in Hz.
    public let sampleRate: Int
    /// Samples between analyses.
    public let hopSize: Int
    /// Hops analysed.
    public private(set) var hops = 0
    /// Frames analysed (a multiple of `hopSize`).
    public var framesAnalysed: Int { hops * hopSize }
    /// Frames appended so far.
    public private(set) var framesSeen = 0
    /// Whether the analysis block holds only audio (not the silence it started with): until
    /// then nothing should be published, or the first readings would be too low.
    public var isBlockFull: Bool { blockHops * hopSize >= settings.fftSize }
    /// Hops analysed since the block (re)started.
    private var blockHops = 0
    /// Whether the block was full at the last hop: a host publishes a hop only then
    /// (`isBlockFull`), so the hops after a restart of the block, until it is full again, are
    /// not published and their true peaks go with the first hop that is (`refilling`; not
    /// at the start, whose first update keeps its hop's true peak).
    private var lastHopFull = false
    private var refilling = false
    /// The samples since the last published hop, for `ChannelAnalysis.peakSinceHop`: the
    /// `filled` ones of the block's last hop, or nil while the hops since were not published
    /// either (the block filling) — then the whole block, which holds only what came since.
    private var sincePublished: Int? { lastHopFull ? filled : nil }
    /// How many spectra and pitch estimates a second the outputs read: the outputs' rate
    /// (`--rate`, or the control input's `rate`). Snapshots are written every hop (the meter
    /// ports, the alarms and the log want every one), but the outputs take only the newest at
    /// their rate, so a hop's FFT bars and YIN estimate are computed only when one is due:
    /// every `spectrumPace` hops, the channels taking turns (channel c at the hops where
    /// (hop + c) is a multiple of it), each estimate at most 1 / rate old when an output reads
    /// it. At the defaults (4096-point blocks, 75 % overlap, 20 updates a second) that is every
    /// second hop at 44.1 and 48 kHz: half the FFTs. With `.everyHop` (the MIDI `notes` port),
    /// every hop.
    public var readingsPerSecond: Double {
        didSet { spectrumPace = Analyzer.pace(readingsPerSecond, sampleRate: sampleRate, hopSize: hopSize, features: features) }
    }
    /// Hops from one spectrum and pitch estimate of a channel to its next (1: every hop).
    public private(set) var spectrumPace: Int

    static func pace(_ perSecond: Double, sampleRate: Int, hopSize: Int, features: Features) -> Int {
        guard !features.contains(.everyHop), perSecond > 0 else { return 1 }
        let hopsPerSecond = Double(sampleRate) / Double(hopSize)
        return max(1, min(1 << 20, Int(hopsPerSecond / perSecond)))
    }
    /// Number of 1/3-octave bands reported (0 without `.thirds`).
    public let bandCount: Int

    private let channels: [ChannelAnalysis]
    /// The 1/3-octave levels of the last hop (dBFS), `bandCount` per channel: the lane groups
    /// write them, the snapshot reads them.
    private let thirdLevels: UnsafeMutablePointer<Float>
    /// VU, PPM, K, 1/3 octaves and the live true peak of eight channels at a time, in SIMD
    /// lanes (`MeterLanes`, `ThirdOctaveLanes`, `TruePeakMeter.process(frames:channels:…)`).
    private let laneGroups: [LaneGroup]
    /// The channels whose true peak runs in the lane groups (live, full groups of eight), the
    /// first ones; the rest go channel by channel.
    private let truePeakLaneChannels: Int
    /// The loudness programmes (`--programme`, or the default one over every channel).
    private let programmes: [ProgrammeMeter]
    private let truePeak: TruePeakMeter
    /// The pairs whose phase correlation is read (`AnalysisSettings.correlationPairs`).
    private let pairChannels: [(left: Int, right: Int)]
    private var correlations: [CorrelationMeter]
    /// Each pair's latest sample points for the goniometer (only with `.goniometer`: the
    /// displays).
    private var goniometers: [GoniometerTrace]
    /// For each channel, the first programme it belongs to (its meter port's loudness with
    /// `--meter momentary|shortterm`), or 0.
    private let programmeOfChannel: [Int]
    /// New samples in the current hop (the same for every channel).
    private var filled = 0
    /// Below this YIN confidence no note is named.
    private let pitchConfidenceThreshold: Double
    /// The scale `meter_N`'s 0 … 1 spans (`--meter`).
    private let meterScale: DisplayScale
    /// `--meter`'s meter, and its values at the latest hop when it has none of the analyzer's
    /// own (`updateHopMeter`).
    private let meter: ReadingMeter
    private var hopMeter: [Float]

    /// Plans the FFTs and allocates every buffer. Not real-time safe.
    public init(settings: AnalysisSettings, sampleRate: Int, features: Features = .all) throws(DSPError) {
        try SampleRates.validate(sampleRate)
        self.settings = settings
        // What is asked for and what it needs (the histogram the loudness meter, …).
        let features = features.withImplied
        self.features = features
        self.sampleRate = sampleRate
        hopSize = min(settings.hopSize, settings.fftSize)
        readingsPerSecond = settings.rate
        spectrumPace = Analyzer.pace(settings.rate, sampleRate: sampleRate, hopSize: hopSize, features: features)
        transportRolling = !settings.followTransport
        let spectrum = settings.spectrum(sampleRate: Double(sampleRate))
        var made: [ChannelAnalysis] = []
        for _ in 0..<settings.channels {
            made.append(try ChannelAnalysis(spectrum: spectrum, configuration: settings, features: features))
        }
        channels = made
        let c = settings, fs = Double(sampleRate)
        let meters = !features.isDisjoint(with: [.vu, .ppm, .k]), thirds = features.contains(.thirds)
        let truePeak = TruePeakMeter(sampleRate: sampleRate, channels: settings.channels)
        truePeak.tracksLatest = features.contains(.live)
        self.truePeak = truePeak
        // Live, every period's peak is wanted: eight channels in lanes cost less than eight
        // one at a time (0.17 against 0.19 ms per second per channel), fewer do not (the
        // lanes cost the same however many are used); a summary skips quiet blocks instead.
        let inLanes = features.isSuperset(of: [.truePeak, .live]) ? c.channels / 8 * 8 : 0
        truePeakLaneChannels = inLanes
        laneGroups = stride(from: 0, to: meters || thirds || inLanes > 0 ? c.channels : 0, by: MeterLanes.width).map { first in
            let count = min(MeterLanes.width, c.channels - first)
            return LaneGroup(
                first: first, count: count, truePeak: first < inLanes ? truePeak : nil,
                meters: meters ? MeterLanes(
                    channels: count,
                    vu: features.contains(.vu) ? VUMeter(sampleRate: fs, referenceDBFS: c.vuReferenceDBFS) : nil,
                    ppm: features.contains(.ppm) ? PPMMeter(type: c.ppmType, sampleRate: fs, alignmentDBFS: c.ppmAlignmentDBFS) : nil,
                    k: features.contains(.k) ? KMeter(sampleRate: fs, headroom: c.kHeadroom) : nil) : nil,
                thirds: thirds ? ThirdOctaveLanes(channels: count, sampleRate: fs) : nil)
        }
        bandCount = thirds ? ThirdOctaveBank.bandCount(sampleRate: fs) : 0
        thirdLevels = .allocate(capacity: max(1, c.channels * bandCount))
        thirdLevels.initialize(repeating: Decibels.floor, count: max(1, c.channels * bandCount))
        pitchConfidenceThreshold = settings.pitchConfidence
        meterScale = settings.meterScale
        meter = settings.meterSource.entry.meter
        hopMeter = Array(repeating: 0, count: settings.channels)
        let resolved = settings.resolvedProgrammes
        programmes = resolved.map { ProgrammeMeter($0, inputs: c.channels, sampleRate: sampleRate, gating: c.gating) }
        programmeOfChannel = (0..<c.channels).map { ch in resolved.firstIndex { $0.channels.contains(ch) } ?? 0 }
        let pairs = settings.correlationPairs
        pairChannels = pairs.map { ($0.left, $0.right) }
        pairSubjects = pairs.map(\.subject)
        correlations = pairs.map { _ in CorrelationMeter(sampleRate: Double(sampleRate)) }
        goniometers = features.contains(.goniometer) ? pairs.map { _ in GoniometerTrace(sampleRate: Double(sampleRate)) } : []
        if features.contains(.histogram) {
            for p in programmes { p.distribution = [Float](repeating: 0, count: ProgrammeSnapshot.histogramBins) }
        }
    }

    private let pairSubjects: [PairSubject]

    /// A snapshot made for this analysis (its channels, bars, bands, programmes and pairs),
    /// for `write(into:)`.
    public func makeSnapshot() -> Snapshot {
        var snapshot = Snapshot(
            channels: channels.count, barCount: settings.bars, bandCount: bandCount,
            programmes: programmes.map { ProgrammeSnapshot(name: $0.programme.name, channels: $0.programme.channels, target: $0.programme.target) },
            pairs: pairSubjects, goniometerPoints: goniometers.first?.count ?? 0,
            histogramBins: features.contains(.histogram) ? ProgrammeSnapshot.histogramBins : 0)
        snapshot.features = features
        return snapshot
    }

    /// The programmes' names, in order ("" for the default programme).
    public var programmeNames: [String] { programmes.map(\.programme.name) }

    deinit { thirdLevels.deallocate() }

    /// The threads the per-channel work runs on (`--workers`); one by default.
    public var pool = ChannelPool(threads: 1)

    /// Appends `frames` new frames; `source(c)` points at channel c's `frames` samples.
    /// Calls `hop()` after each completed hop, when the results are ready to `write(into:)`.
    /// With `truePeak: false` the true-peak meter is left out: the caller feeds it the same
    /// frames through `appendTruePeak`, possibly on another thread, and reads the peaks only
    /// after both are done (a summary; the live per-hop peaks need it here).
    public func append(frames: Int, from source: (Int) -> UnsafePointer<Float>, truePeak withTruePeak: Bool = true,
                       hop: () -> Void)
    {
        var offset = 0
        let live = features.contains(.live)
        while offset < frames {
            // Live, a hop at a time (its block is analysed); for a summary, all at once (the
            // meters run sample by sample either way, and a piece costs its calls).
            let n = live ? min(frames - offset, hopSize - filled) : frames - offset
            if features.contains(.loudness) {
                if settings.followTransport {
                    appendLoudnessWhileRolling(frames: n, gate: source(settings.channels) + offset, from: { source($0) + offset })
                } else {
                    appendLoudness(frames: n, from: { source($0) + offset })
                }
            }
            let truePeakNow = withTruePeak && features.contains(.truePeak)
            let at = filled
            // Per-channel work, spread over the worker threads (`--workers`): every channel
            // takes the same frames before anything reads across channels.
            let laneChannels = truePeakLaneChannels
            pool.forEach(channels.count) { c in
                if truePeakNow && c >= laneChannels { truePeak.process(frames: n, from: source(c) + offset, channel: c) }
                channels[c].store(source(c) + offset, count: n, at: at, hopSize: hopSize)
            }
            let groups = laneGroups
            pool.forEach(groups.count) { g in
                groups[g].process(frames: n, truePeak: truePeakNow, from: { source(groups[g].first + $0) + offset })
            }
            if features.contains(.correlation) {
                for p in correlations.indices {
                    correlations[p].process(
                        UnsafeBufferPointer(start: source(pairChannels[p].left) + offset, count: n),
                        UnsafeBufferPointer(start: source(pairChannels[p].right) + offset, count: n))
                }
            }
            for p in goniometers.indices {
                goniometers[p].process(
                    UnsafeBufferPointer(start: source(pairChannels[p].left) + offset, count: n),
                    UnsafeBufferPointer(start: source(pairChannels[p].right) + offset, count: n))
            }
            filled += n
            offset += n
            framesSeen += n
            if features.contains(.live) {
                // The sample-accurate readings the meter ports show move on with every piece
                // (a JACK period, or what is left of a hop), not only every hop.
                let elapsed = Double(n) / Double(sampleRate)
                for (c, channel) in channels.enumerated() {
                    channel.advance(elapsed: elapsed, truePeak: truePeakNow ? truePeak.latestPeak(channel: c) : nil)
                }
            }
            while filled >= hopSize {
                if live {
                    // The spectrum and the pitch when due (`readingsPerSecond`), and always at
                    // the hop that fills the block: the first snapshot published has them.
                    let pace = spectrumPace, hop = blockHops + 1
                    let filling = hop * hopSize >= settings.fftSize && (hop - 1) * hopSize < settings.fftSize
                    let carrying = refilling && !lastHopFull, publishing = hop * hopSize >= settings.fftSize
                    pool.forEach(channels.count) { c in
                        channels[c].analyze(hopSize: hopSize, truePeak: truePeak.takeRecentPeak(channel: c), carrying: carrying,
                                            publishing: publishing, spectra: filling || (hop + c) % pace == 0)
                    }
                    if features.contains(.thirds) {
                        for group in laneGroups {
                            group.thirds?.takeLevels(into: thirdLevels + group.first * bandCount, stride: bandCount)
                        }
                    }
                    updateGatedReadings(force: false)
                }
                filled -= hopSize
                hops += 1
                blockHops += 1
                lastHopFull = isBlockFull
                if lastHopFull { refilling = false }
                hop()
            }
        }
    }

    /// Feeds every programme that is not paused.
    private func appendLoudness(frames n: Int, from source: (Int) -> UnsafePointer<Float>) {
        let meters = programmes
        pool.forEach(meters.count) { p in
            if !meters[p].paused { meters[p].loudness.process(frames: n, from: source) }
        }
    }

    /// With `--follow-transport`: feeds the programmes only the frames in which the transport
    /// rolled (`gate`, the ring's transport channel: 0 stopped, 1 rolling, 2 the first cycle of
    /// a roll from frame 0, which resets them first with `--reset-at-zero`).
    private func appendLoudnessWhileRolling(frames n: Int, gate: UnsafePointer<Float>, from source: (Int) -> UnsafePointer<Float>) {
        var start = 0
        while start < n {
            let value = gate[start]
            var end = start + 1
            while end < n && gate[end] == value { end += 1 }
            if value >= 1.5 && lastGate < 1.5 && settings.resetAtZero {
                for p in programmes.indices { resetMeasurements(programme: p) }
            }
            lastGate = value
            transportRolling = value >= 0.5
            if transportRolling {
                let from = start
                appendLoudness(frames: end - start, from: { source($0) + from })
            }
            start = end
        }
    }

    /// The transport channel's last value, and whether the transport rolled then.
    private var lastGate: Float = 0
    /// Whether the transport rolled in the latest frames (always, without `--follow-transport`).
    public private(set) var transportRolling = true

    /// What a connection change must not leave in channel `c`'s maxima: its true-peak maxima
    /// and sample peak, its clip count and peak hold, its meter ballistics.
    public struct HeldMaxima: Sendable {
        fileprivate var truePeak: TruePeakMeter.Maxima
        fileprivate var channel: ChannelAnalysis.Held
        fileprivate var lastHopFull: Bool
    }

    public func heldMaxima(channel c: Int) -> HeldMaxima {
        HeldMaxima(truePeak: truePeak.maxima(channel: c), channel: channels[c].held, lastHopFull: lastHopFull)
    }

    /// Puts channel `c`'s maxima back as they were (`heldMaxima`): the frames appended since
    /// count for the loudness, levels and spectrum, not for the maxima and clip count.
    public func restore(_ m: HeldMaxima, channel c: Int) {
        truePeak.restore(m.truePeak, channel: c)
        channels[c].held = m.channel
        // The true peak carried to the next published hop: as before the frames, unless a hop
        // among them began a block's refill — then nothing (what it took from before the
        // frames is back in the meter's recent peak, restored above).
        if m.lastHopFull && !lastHopFull { channels[c].clearRecentTruePeak() }
    }

    /// Channel `c`'s largest true peak since the previous call (dBTP; the floor when there was
    /// nothing), starting a new interval: for a host that gives out peaks per stretch of its
    /// own (`analyze --log`'s 100 ms blocks). With `.live` the hops take them, so only at the
    /// end (the log's last block): then with the true peak of the hops since the last
    /// published one, should the block be filling.
    public func takeRecentTruePeakDBTP(channel c: Int) -> Double {
        var peak = truePeak.takeRecentPeak(channel: c)
        if features.contains(.live) && !lastHopFull && channels.indices.contains(c) { peak = max(peak, channels[c].recentTruePeak) }
        return Double(Decibels.fromAmplitude(peak))
    }

    /// Appends frames that count for the loudness, levels and spectrum but not for the maxima
    /// and clip counts of `excluded` (a stretch after a gap or a connection change): their
    /// held maxima are put back as they were (`heldMaxima`, `restore`).
    public func append(frames: Int, from source: (Int) -> UnsafePointer<Float>, leavingOutMaximaOf excluded: [Int], hop: () -> Void) {
        let kept = excluded.map { heldMaxima(channel: $0) }
        append(frames: frames, from: source, hop: hop)
        for (c, m) in zip(excluded, kept) { restore(m, channel: c) }
    }

    /// Feeds the true-peak meter alone, for `channels` (see `append(frames:from:truePeak:hop:)`):
    /// the other channels may be fed the same frames by another call, possibly on another
    /// thread at the same time (each channel's state is its own).
    public func appendTruePeak(frames: Int, channels: Range<Int>, from source: (Int) -> UnsafePointer<Float>) {
        for c in channels { truePeak.process(frames: frames, from: source(c), channel: c) }
    }

    /// Channel `c`'s sample peak (dBFS; the floor when there was nothing) of the frames appended
    /// since the last published hop, which no snapshot has shown yet: for a live host's end
    /// (the log's last block). With `.live` only (the analysis block keeps the samples). With
    /// the block not full again after a restart, the whole block: it holds only what came since.
    public func samplePeakSinceHopDBFS(channel c: Int) -> Double {
        guard features.contains(.live), channels.indices.contains(c) else { return Double(Decibels.floor) }
        return Double(Decibels.fromAmplitude(channels[c].peakSinceHop(filled: sincePublished, hopSize: hopSize)))
    }

    /// The end of the audio (a file's, after its last frames and true peaks are appended): the
    /// true peak of the last samples, which its filter holds back, read with silence after
    /// them (`TruePeakMeter.finish`). Once; not real-time safe.
    public func finishAudio() {
        guard features.contains(.truePeak) else { return }
        for first in stride(from: 0, to: truePeakLaneChannels, by: 8) { truePeak.finish(channels: first, count: 8) }
        for c in truePeakLaneChannels..<channels.count { truePeak.finish(channel: c) }
    }

    /// Recomputes each programme's integrated loudness and range once per second of audio
    /// (or when forced).
    private func updateGatedReadings(force: Bool) {
        for p in programmes { p.updateGatedReadings(force: force) }
    }

    /// Writes the latest results into `snapshot`, which must have been made for this
    /// configuration (same channels, bars and bands).
    public func write(into snapshot: inout Snapshot) {
        snapshot.features = features
        snapshot.sequence = hops
        snapshot.framesAnalysed = framesAnalysed
        snapshot.sampleRate = sampleRate
        for c in channels.indices {
            channels[c].write(
                into: &snapshot.channels[c], maxTruePeak: truePeak.maxPeak(channel: c),
                pitchThreshold: pitchConfidenceThreshold,
                thirds: UnsafeBufferPointer(start: thirdLevels + c * bandCount, count: bandCount))
        }
        for p in correlations.indices where p < snapshot.correlations.count {
            snapshot.correlations[p] = Float(correlations[p].correlation)
            if p < snapshot.pairLevels.count {
                let l = correlations[p].levels
                snapshot.pairLevels[p] = PairLevels()
                snapshot.pairLevels[p].balanceDB = Float(l.balanceDB)
                snapshot.pairLevels[p].midDBFS = Decibels.fromPower(Float(l.midSquare))
                snapshot.pairLevels[p].sideDBFS = Decibels.fromPower(Float(l.sideSquare))
            }
        }
        if let points = goniometers.first?.count, snapshot.goniometer.count == 2 * points * goniometers.count {
            snapshot.goniometer.withUnsafeMutableBufferPointer { out in
                for p in goniometers.indices {
                    goniometers[p].write(into: UnsafeMutableBufferPointer(rebasing: out[(2 * points * p)..<(2 * points * (p + 1))]))
                }
            }
        }
        for c in channels.indices {
            snapshot.channels[c].vu = Float(vuReading(channel: c))
            snapshot.channels[c].ppm = Float(ppmReading(channel: c))
            snapshot.channels[c].k = Float(kReading(channel: c))
        }
        for (p, meter) in programmes.enumerated() where p < snapshot.programmes.count {
            snapshot.programmes[p].loudness = meter.readings()
            snapshot.programmes[p].measuredSeconds = meter.loudness.measuredSeconds
            snapshot.programmes[p].paused = meter.paused || !transportRolling
            if snapshot.programmes[p].histogram.count == meter.distribution.count {
                for k in meter.distribution.indices { snapshot.programmes[p].histogram[k] = meter.distribution[k] }
            }
        }
        updateHopMeter(snapshot)
        for c in channels.indices {
            snapshot.channels[c].meter = meterValue(channel: c, loudness: snapshot.programmes[programmeOfChannel[c]].loudness)
        }
    }

    /// Channel `c`'s VU, PPM and K readings (-60 when not computed).
    private func vuReading(channel c: Int) -> Double {
        laneGroups.isEmpty ? -60 : laneGroups[c / MeterLanes.width].meters?.vuReading(lane: c % MeterLanes.width) ?? -60
    }
    private func ppmReading(channel c: Int) -> Double {
        laneGroups.isEmpty ? -60 : laneGroups[c / MeterLanes.width].meters?.ppmReading(lane: c % MeterLanes.width) ?? -60
    }
    private func kReading(channel c: Int) -> Double {
        laneGroups.isEmpty ? -60 : laneGroups[c / MeterLanes.width].meters?.kReading(lane: c % MeterLanes.width) ?? -60
    }

    /// Channel `c`'s meter port value 0 … 1 (per `--meter`).
    public func meterValue(channel c: Int) -> Float {
        meterValue(channel: c, loudness: programmes[programmeOfChannel[c]].readings())
    }

    private func meterValue(channel c: Int, loudness l: LoudnessSnapshot) -> Float {
        let ch = channels[c]
        // The scale the ports' pretty-names and the displays show (`MeterScales`).
        func map(_ v: Double) -> Float { Float(meterScale.fraction(of: v)) }
        switch meter.live {
        case .rmsLevel: return ch.displayLevel
        case .heldPeak: return map(ch.heldPeak)
        case .truePeak: return map(ch.displayTruePeak)
        case .vu: return map(vuReading(channel: c))
        case .ppm: return map(ppmReading(channel: c))
        case .k: return map(kReading(channel: c))
        case .momentary: return map(l.momentary)
        case .shortTerm: return map(l.shortTerm)
        case nil: return hopMeter[c]
        }
    }

    /// A meter with no value of the analyzer's own (`ReadingMeter.live` nil): its field's
    /// value in the snapshot just written (a channel's own, or its programme's), mapped to
    /// the scale; held until the next hop. Not finite (none yet): 0.
    private func updateHopMeter(_ s: Snapshot) {
        guard meter.live == nil else { return }
        let field = settings.meterSource.entry.field, scope = settings.meterSource.entry.reading.scope
        for c in channels.indices {
            let subject = scope == .programme ? programmeOfChannel[c] : c
            let v = field.value(s, subject).number ?? .nan
            hopMeter[c] = v.isFinite ? Float(meterScale.fraction(of: v)) : 0
        }
    }

    /// Starts the measurements again: integrated loudness, range, maxima, true-peak maxima,
    /// clip counts.
    /// Takes over the running measurements of `old` (another sample rate, the same channels):
    /// integrated loudness, loudness range and their history, the loudness and true-peak
    /// maxima, clip counts. What depends on the rate (filters, the analysis block) starts
    /// afresh.
    public func continueMeasurements(from old: Analyzer) {
        for (new, previous) in zip(programmes, old.programmes) { new.continueFrom(previous) }
        truePeak.continueFrom(old.truePeak)
        for (new, previous) in zip(channels, old.channels) { new.continueFrom(previous) }
        lastGate = old.lastGate
        transportRolling = old.transportRolling
        updateGatedReadings(force: true)
    }

    /// Starts the analysis block again, empty (after a gap in the audio, so that no spectrum,
    /// level or pitch is built from audio on both sides of it): nothing is ready to publish
    /// until the block is full again. The running measurements go on.
    public func restartBlock() {
        for c in channels { c.clearBlock(keepingPeakOf: sincePublished, hopSize: hopSize) }
        refilling = true
        blockHops = 0
        filled = 0
    }

    public func resetMeasurements() {
        for p in programmes { p.reset() }
        truePeak.reset()
        for c in channels { c.resetMeasurements() }
    }

    /// Starts programme `p`'s measurements again: its loudness (integrated, range, maxima,
    /// duration) and its channels' true-peak maxima and clip counts (which the channels'
    /// own readings, and any other programme sharing a channel, see too).
    public func resetMeasurements(programme p: Int) {
        guard programmes.indices.contains(p) else { return }
        programmes[p].reset()
        for c in programmes[p].programme.channels {
            truePeak.reset(channel: c)
            channels[c].resetMeasurements()
        }
    }

    /// Pauses or resumes programme `p`'s integration: while paused its audio is left out of
    /// every loudness reading (they hold), as if cut from the programme.
    public func setPaused(_ paused: Bool, programme p: Int) {
        guard programmes.indices.contains(p) else { return }
        programmes[p].paused = paused
    }

    /// Programme `p`'s 100 ms loudness blocks completed after `cursor` (a log's reader:
    /// `LoudnessMeter.takeBlocks`); returns how many were lost to a reader too far behind.
    @discardableResult
    public func takeLoudnessBlocks(programme p: Int, after cursor: inout Int, _ body: (_ power: Double, _ index: Int) -> Void) -> Int {
        programmes[p].loudness.takeBlocks(after: &cursor, body)
    }

    /// Whether programme `p` is paused.
    public func isPaused(programme p: Int) -> Bool { programmes.indices.contains(p) && programmes[p].paused }

    // MARK: Whole-run results (for file summaries)

    /// The final integrated loudness (LUFS), loudness range (LU) and maxima of the first
    /// programme (the default one over every channel).
    public func finalLoudness() -> LoudnessSnapshot { finalLoudness(programme: 0) }

    /// The final readings of programme `p`.
    public func finalLoudness(programme p: Int) -> LoudnessSnapshot {
        programmes[p].updateGatedReadings(force: true)
        return programmes[p].readings()
    }

    /// The fewest frames a call needs for every programme's loudness to run its K-weighting
    /// as stretches of time side by side (`LoudnessMeter.framesToSplit`; 0 if none can): a
    /// file's reader sizes its chunks by it.
    public var loudnessFramesToSplit: Int { programmes.map(\.loudness.framesToSplit).max() ?? 0 }

    /// The audio programme `p` has integrated (s, paused time left out). Its largest true
    /// peak is its channels' (`Snapshot.maxTruePeakDBTP(programme:)`).
    public func measuredSeconds(programme p: Int) -> Double { programmes[p].loudness.measuredSeconds }

    /// Channel `c`'s largest true peak (dBTP), sample peak (dBFS) and RMS (dBFS) over
    /// everything appended since the start.
    public func totals(channel c: Int) -> (truePeakDBTP: Double, samplePeakDBFS: Double, rmsDBFS: Double) {
        let ch = channels[c]
        let rms = framesSeen > 0 ? ch.totalSquares / Double(framesSeen) : 0
        return (Double(Decibels.fromAmplitude(truePeak.maxPeak(channel: c))),
                Double(Decibels.fromAmplitude(truePeak.samplePeak(channel: c))),
                rms > 0 ? max(Double(Decibels.floor), 10 * log10(rms)) : Double(Decibels.floor))
    }
}

/// One channel's analysis state.
final class ChannelAnalysis {
    let features: Analyzer.Features
    /// The analysis block: the last `fftSize` samples, oldest first.
    private let block: UnsafeMutableBufferPointer<Float>
    private let spectrum: SpectrumAnalyzer?
    private let yin: YINPitch?
    private let scale: MeterScale
    private let sampleRate: Double
    /// RMS display ballistics (no hold).
    private var levelBallistics: Ballistics
    /// True-peak display ballistics for the meter ports (no hold).
    private var truePeakBallistics: Ballistics
    /// The true peak on the meter scale's terms (dBTP) after the ballistics.
    private(set) var displayTruePeak = Double(Decibels.floor)
    /// Sum of squares and count of the newest samples of the block: at least the last
    /// `fftSize - hopSize` samples, all `fftSize` when a hop completes (the RMS the meter ports
    /// show every period; the block's own RMS every hop).
    private var windowSquares = 0.0
    private var windowCount = 0
    /// Peak-hold display ballistics.
    private var holdBallistics: Ballistics
    /// Last block's level.
    private var level = BlockLevel()
    /// Display values, 0 ... 1.
    private(set) var displayLevel: Float = 0
    private var displayHold: Float = 0
    /// Last YIN estimate.
    private var pitch: YINEstimate?
    /// The bits in use over the last analysed block (`.bits`), and the DC offset: the blocks'
    /// means averaged over about a second (a one-pole of τ = 1 s across hops), so that a
    /// tone's leftover part-period in one block is not taken for an offset.
    private var bits = BitUsage()
    private var dcMean = 0.0, dcHops = 0
    /// The tallies of the block's hops (a ring; each sample tallied once, as its hop arrives).
    private var hopTallies: [BitTally]
    private var hopTallyCount = 0
    private var digitalPeak: DigitalPeakMeter
    private(set) var heldPeak = Double(Decibels.floor)
    /// True peak since the previous hop (linear).
    private(set) var recentTruePeak: Float = 0
    /// The sample peak (linear) of the samples since the previous published hop that a restart
    /// of the block emptied (`clearBlock`), for the end; 0 from the next published hop.
    private var peakBeforeRestart: Float = 0
    /// Whole-run sum of squares (the sample peak comes from the true-peak meter's scan).
    private(set) var totalSquares = 0.0

    init(spectrum configuration: SpectrumConfiguration, configuration c: AnalysisSettings, features: Analyzer.Features) throws(DSPError) {
        self.features = features
        let fs = configuration.sampleRate
        sampleRate = Double(fs)
        spectrum = features.contains(.spectrum) ? try SpectrumAnalyzer(configuration: configuration) : nil
        yin = features.contains(.yin) ? try YINPitch(sampleRate: fs, window: configuration.fftSize / 2) : nil
        block = .allocate(capacity: configuration.fftSize)
        block.initialize(repeating: 0)
        hopTallies = [BitTally](repeating: BitTally(), count: max(1, (configuration.fftSize + max(1, c.hopSize) - 1) / max(1, c.hopSize)))
        scale = MeterScale(floor: Float(c.meterFloorDBFS))
        levelBallistics = Ballistics(holdTime: 0, fallRate: c.fallDBPerSecond)
        truePeakBallistics = Ballistics(holdTime: 0, fallRate: c.fallDBPerSecond)
        holdBallistics = Ballistics(holdTime: c.holdSeconds, fallRate: c.fallDBPerSecond)
        digitalPeak = DigitalPeakMeter(holdTime: c.holdSeconds, fallRate: c.fallDBPerSecond)
    }

    deinit { block.deallocate() }

    /// Copies `count` new samples to their place in the block's last hop (only when the block
    /// is analysed: not for a summary) and feeds the sample-accurate meters.
    @inline(__always)
    func store(_ samples: UnsafePointer<Float>, count: Int, at filled: Int, hopSize: Int) {
        if features.contains(.live) {
            let start = block.count - hopSize + filled
            (block.baseAddress! + start).update(from: samples, count: count)
        }
        let buffer = UnsafeBufferPointer(start: samples, count: count)
        let squares = Double(Vector.sumOfSquares(buffer))
        totalSquares += squares
        if features.contains(.live) {
            windowSquares += squares
            windowCount += count
        }
        if features.contains(.dpeak) { digitalPeak.process(buffer) }
    }

    /// The largest |sample| of the `filled` samples stored since the last hop (`.live`; nil:
    /// the whole block), and of those before a restart of the block since the last published hop.
    func peakSinceHop(filled: Int?, hopSize: Int) -> Float {
        guard let filled else { return max(peakBeforeRestart, Vector.maxMagnitude(UnsafeBufferPointer(block))) }
        let n = min(filled, hopSize)
        guard n > 0 else { return peakBeforeRestart }
        return max(peakBeforeRestart, Vector.maxMagnitude(UnsafeBufferPointer(start: block.baseAddress! + (block.count - hopSize), count: n)))
    }

    /// Moves the display readings on by `elapsed` seconds of new samples (already stored):
    /// the RMS display level over the newest samples of the block, the digital peak hold, and
    /// the true peak of those samples (nil: not measured) with the display ballistics. What
    /// the meter ports carry is therefore at most one period old.
    func advance(elapsed: Double, truePeak: Float?) {
        let meanSquare = windowCount > 0 ? Float(max(0, windowSquares) / Double(windowCount)) : 0
        let rms = Double(Decibels.fromPower(meanSquare))
        displayLevel = scale.displayValue(Float(levelBallistics.update(rms, elapsed: elapsed)))
        if features.contains(.dpeak) { heldPeak = digitalPeak.update(elapsed: elapsed) }
        if let truePeak {
            displayTruePeak = truePeakBallistics.update(Double(Decibels.fromAmplitude(truePeak)), elapsed: elapsed)
        }
    }

    /// Analyses the block (its spectrum and pitch only with `spectra`), then shifts it by one
    /// hop to make room for the next. `carrying`: the previous hop was not published (the block
    /// was filling), so its true peak stays in this one's; `publishing`: this one will be (the
    /// block is full with it).
    func analyze(hopSize: Int, truePeak: Float, carrying: Bool, publishing: Bool, spectra: Bool) {
        let samples = UnsafeBufferPointer(block)
        level = BlockLevel(samples)
        if spectra {
            spectrum?.analyze(samples)
            pitch = yin?.estimate(samples)
        }
        if features.contains(.bits) {
            // The new hop's tally into the ring; the block's usage from the ring.
            let hop = min(hopSize, samples.count)
            hopTallies[hopTallyCount % hopTallies.count] = BitTally(UnsafeBufferPointer(rebasing: samples[(samples.count - hop)...]))
            hopTallyCount += 1
            var tally = BitTally()
            for t in hopTallies { tally.add(t) }
            bits = tally.usage
            // The plain mean of the blocks until the second is full, then the one-pole.
            dcHops += 1
            let k = min(exp(-Double(hopSize) / sampleRate), 1 - 1 / Double(dcHops))
            dcMean = dcMean * k + bits.mean * (1 - k)
        }
        recentTruePeak = carrying ? max(recentTruePeak, truePeak) : truePeak
        if publishing { peakBeforeRestart = 0 }
        let peak = Double(level.peakDBFS)
        let elapsed = Double(hopSize) / sampleRate
        displayHold = scale.displayValue(Float(holdBallistics.update(peak, elapsed: elapsed)))
        let base = block.baseAddress!
        base.update(from: base + hopSize, count: block.count - hopSize)
        // The window keeps the samples still in the block, summed afresh (no drift).
        let kept = block.count - hopSize
        windowSquares = Double(Vector.sumOfSquares(UnsafeBufferPointer(start: base, count: kept)))
        windowCount = min(windowCount, kept)
    }

    func write(into s: inout ChannelSnapshot, maxTruePeak: Float, pitchThreshold: Double, thirds: UnsafeBufferPointer<Float>) {
        s.peakDBFS = level.peakDBFS
        s.rmsDBFS = level.rmsDBFS
        s.level = displayLevel
        s.hold = displayHold
        if let spectrum {
            let bars = spectrum.bars
            for i in 0..<min(bars.count, s.bars.count) { s.bars[i] = bars[i] }
            s.peakFrequencyHz = spectrum.peak?.frequency ?? 0
            s.peakNote = spectrum.peak?.note
        }
        // The note played is named only when YIN is confident: never from noise or silence.
        let confidence = pitch?.confidence ?? 0
        let named = confidence >= pitchThreshold ? pitch : nil
        s.pitchHz = named?.frequency ?? 0
        s.pitchNote = named?.note
        s.pitchConfidence = confidence
        s.truePeakDBTP = Decibels.fromAmplitude(recentTruePeak)
        s.maxTruePeakDBTP = max(s.truePeakDBTP, Decibels.fromAmplitude(maxTruePeak))
        s.heldPeakDBFS = Float(heldPeak)
        s.clips = digitalPeak.clips
        for i in 0..<min(thirds.count, s.thirds.count) { s.thirds[i] = thirds[i] }
        s.bits = bits
        s.dcDBFS = Decibels.fromAmplitude(Float(abs(dcMean)))
    }

    /// Empties the block; the peak of its `filled` samples since the last hop is kept for
    /// `peakSinceHop` (a restart, say at a connection change in the last moments of a run,
    /// must not lose what the log's end still has to write).
    func clearBlock(keepingPeakOf filled: Int?, hopSize: Int) {
        peakBeforeRestart = peakSinceHop(filled: filled, hopSize: hopSize)
        block.update(repeating: 0)
        for i in hopTallies.indices { hopTallies[i] = BitTally() }
        windowSquares = 0
        windowCount = 0
    }

    /// The maxima a connection change leaves out (`Analyzer.heldMaxima`).
    struct Held: Sendable {
        var digitalPeak: DigitalPeakMeter
        var heldPeak: Double
        var displayTruePeak: Double
        var truePeakBallistics: Ballistics
        /// The true peak a hop inside the stretch took, carried to the next published hop
        /// otherwise (`analyze`'s `carrying`).
        var recentTruePeak: Float
    }

    var held: Held {
        get {
            Held(digitalPeak: digitalPeak, heldPeak: heldPeak, displayTruePeak: displayTruePeak, truePeakBallistics: truePeakBallistics,
                 recentTruePeak: recentTruePeak)
        }
        set {
            digitalPeak = newValue.digitalPeak
            heldPeak = newValue.heldPeak
            displayTruePeak = newValue.displayTruePeak
            truePeakBallistics = newValue.truePeakBallistics
            recentTruePeak = newValue.recentTruePeak
        }
    }

    func clearRecentTruePeak() { recentTruePeak = 0 }

    func continueFrom(_ old: ChannelAnalysis) {
        digitalPeak.continueFrom(old.digitalPeak)
        heldPeak = old.heldPeak
    }

    func resetMeasurements() {
        digitalPeak.reset()
        heldPeak = Double(Decibels.floor)
    }
}

/// The lanes of `count` (up to eight) channels from `first` on (`MeterLanes`,
/// `ThirdOctaveLanes`, the true peak), shared by reference so that the worker threads each
/// advance their own group.
final class LaneGroup: @unchecked Sendable {
    // @unchecked Sendable: one worker thread at a time advances a group (`ChannelPool`); the
    // true-peak meter's state for these channels is theirs alone.
    let first: Int
    let count: Int
    let truePeak: TruePeakMeter?
    var meters: MeterLanes?
    var thirds: ThirdOctaveLanes?

    init(first: Int, count: Int, truePeak: TruePeakMeter?, meters: MeterLanes?, thirds: ThirdOctaveLanes?) {
        self.first = first
        self.count = count
        self.truePeak = truePeak
        self.meters = meters
        self.thirds = thirds
    }

    func process(frames: Int, truePeak withTruePeak: Bool, from source: (Int) -> UnsafePointer<Float>) {
        meters?.process(frames: frames, from: source)
        thirds?.process(frames: frames, from: source)
        if withTruePeak { truePeak?.process(frames: frames, channels: first, count: count, from: source) }
    }
}

/// One programme's loudness meter (weighted over its channels, zero elsewhere) and its gated
/// readings, recomputed once per second of audio.
final class ProgrammeMeter: @unchecked Sendable {
    // @unchecked Sendable: one worker thread at a time (`ChannelPool`) advances a programme.
    let programme: Programme
    let loudness: LoudnessMeter
    var paused = false
    private var integrated = LoudnessMeter.floor
    private var range = 0.0
    private var lastGatingUpdate = -1
    /// The short-term distribution (`ProgrammeSnapshot.histogram`), when asked for.
    var distribution: [Float] = []

    init(_ programme: Programme, inputs: Int, sampleRate: Int, gating: Gating) {
        self.programme = programme
        loudness = LoudnessMeter(sampleRate: sampleRate, weights: programme.weights(overInputs: inputs))
        loudness.gating = gating
    }

    /// Recomputes the integrated loudness and range once per second of audio (or when
    /// forced); until the first gated block exists, every call (cheap, and a fresh start or
    /// reset shows a value as soon as there is one).
    func updateGatedReadings(force: Bool) {
        let step = loudness.stepCount
        guard force || lastGatingUpdate < 0 || integrated <= LoudnessMeter.floor
            || step - lastGatingUpdate >= 100 || step < lastGatingUpdate
        else { return }
        integrated = loudness.integrated
        range = loudness.loudnessRange
        if !distribution.isEmpty {
            distribution.withUnsafeMutableBufferPointer { loudness.shortTermDistribution(into: $0, binLU: ProgrammeSnapshot.histogramBinLU) }
        }
        lastGatingUpdate = step
    }

    /// The readings now (integrated and range as last recomputed).
    func readings() -> LoudnessSnapshot {
        var l = LoudnessSnapshot()
        l.momentary = loudness.momentary
        l.shortTerm = loudness.shortTerm
        l.maxMomentary = loudness.maxMomentary
        l.maxShortTerm = loudness.maxShortTerm
        l.integrated = integrated
        l.range = range
        return l
    }

    func reset() {
        loudness.reset()
        integrated = LoudnessMeter.floor
        range = 0
        lastGatingUpdate = -1
        for k in distribution.indices { distribution[k] = 0 }
    }

    func continueFrom(_ old: ProgrammeMeter) {
        loudness.continueFrom(old.loudness)
        integrated = old.integrated
        range = old.range
        paused = old.paused
        if distribution.count == old.distribution.count { distribution = old.distribution }
    }
}
