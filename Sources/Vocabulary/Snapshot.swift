import DSP

/// One channel's analysis results at one hop.
public struct ChannelSnapshot: Sendable {
    /// Sample peak of the analysis block, in dBFS.
    public var peakDBFS: Float = Decibels.floor
    /// RMS of the analysis block, in dBFS.
    public var rmsDBFS: Float = Decibels.floor
    /// Display level 0 ... 1 (RMS with instant rise and `--fall`), the value of `meter_N` with
    /// `--meter rms`.
    public var level: Float = 0
    /// Peak-hold display value 0 ... 1 (sample peak, held `--hold` seconds, then falling).
    public var hold: Float = 0
    /// Spectrum bars, 0 ... 1.
    public var bars: [Float]
    /// FFT peak frequency in Hz, 0 for silence.
    public var peakFrequencyHz: Double = 0
    /// Nearest note of the FFT peak, nil for silence or below 30 Hz.
    public var peakNote: Note?
    /// The pitch played: the YIN fundamental in Hz, 0 when no note is named (silence, or a
    /// confidence below the threshold).
    public var pitchHz: Double = 0
    /// Its note, nil when none is named.
    public var pitchNote: Note?
    /// YIN's confidence 0 … 1 (also when no note is named).
    public var pitchConfidence: Double = 0
    /// True peak since the previous hop and since the start/reset, dBTP.
    public var truePeakDBTP: Float = Decibels.floor
    public var maxTruePeakDBTP: Float = Decibels.floor
    /// What set `maxTruePeakDBTP` when a fault did (an xrun on the server: `FaultCause`),
    /// and then the largest true peak over the clean periods alone, dBTP; nil when the
    /// maximum is the programme's own.
    public var maxTruePeakFault: MaximumFault?
    /// Digital peak with hold and fall, dBFS, and the clip count.
    public var heldPeakDBFS: Float = Decibels.floor
    public var clips = 0
    /// VU reading, VU.
    public var vu: Float = -60
    /// PPM reading on the chosen type's scale.
    public var ppm: Float = -60
    /// K-System reading, dB on the K scale.
    public var k: Float = -60
    /// 1/3-octave band levels, dBFS.
    public var thirds: [Float]
    /// The value on `meter_N`, 0 … 1.
    public var meter: Float = 0
    /// The bits in use over the analysis block, and its DC offset (|mean|), dBFS.
    public var bits = BitUsage()
    public var dcDBFS: Float = Decibels.floor

    public init(barCount: Int, bandCount: Int = 0) {
        bars = [Float](repeating: 0, count: barCount)
        thirds = [Float](repeating: Decibels.floor, count: bandCount)
    }
}

/// Programme loudness (EBU R 128), LUFS / LU.
public struct LoudnessSnapshot: Sendable, Equatable {
    public var momentary = LoudnessMeter.floor
    public var shortTerm = LoudnessMeter.floor
    public var integrated = LoudnessMeter.floor
    public var range = 0.0
    public var maxMomentary = LoudnessMeter.floor
    public var maxShortTerm = LoudnessMeter.floor
    /// What set each maximum when a fault did, with the clean maximum (nil: the programme's own).
    public var maxMomentaryFault: MaximumFault?
    public var maxShortTermFault: MaximumFault?
    public init() {}
}

/// What disturbed the audio on the bus (not jackvu's own overruns, which set no maximum at all).
public enum FaultCause: String, Sendable, Equatable {
    /// The server reported an xrun: the graph's audio near it may be cut or doubled.
    case xrun
    /// An input's connections changed (a source patched, unpatched or gone).
    case connection
}

/// A held maximum that a fault set: the cause, and the maximum over the clean periods alone.
public struct MaximumFault: Sendable, Equatable {
    public var cause: FaultCause
    /// The largest value outside every fault's stretch (the floor when there was none).
    public var clean: Double
    public init(cause: FaultCause, clean: Double) {
        self.cause = cause
        self.clean = clean
    }
}

/// One loudness programme's readings (`--programme`; without it the default programme over
/// every channel).
public struct ProgrammeSnapshot: Sendable {
    /// Its name; empty for the default programme (addresses `PREFIX/loudness/…`).
    public var name: String
    /// The name people and other tools see: its own, or `defaultName` for the default
    /// programme — the same in `/metrics`, both displays, `/history`, the alarms and the
    /// reports (the log keeps the empty name as its key).
    public var shownName: String { ProgrammeSnapshot.shownName(name) }
    /// The default programme's name where it is shown (`--programme` cannot take it).
    public static let defaultName = "programme"
    public static func shownName(_ name: String) -> String { name.isEmpty ? defaultName : name }
    public var loudness = LoudnessSnapshot()
    /// Its inputs, 0-based (its largest true peak is theirs: `Snapshot.maxTruePeakDBTP`).
    public var channels: [Int]
    /// The audio its integrated loudness covers, seconds (paused time left out).
    public var measuredSeconds = 0.0
    /// Its target, or nil.
    public var target: LoudnessTarget?
    /// Whether its integration is paused (`pause`, or a stopped transport with
    /// `--follow-transport`).
    public var paused = false
    /// Where its short-term loudness has been (`.histogram`): the percentage of short-term
    /// windows in each 1 LU bin from −70 LUFS (`histogramFromLUFS`) up, the last bin holding
    /// everything from −1 LUFS; empty when not computed. Recomputed once a second of audio.
    public var histogram: [Float] = []
    public static let histogramFromLUFS = -70.0
    public static let histogramBinLU = 1.0
    public static let histogramBins = 70

    public init(name: String, channels: [Int], target: LoudnessTarget? = nil) {
        self.name = name
        self.channels = channels
        self.target = target
    }

}

/// Whose phase correlation a pair value is.
public struct PairSubject: Sendable, Equatable {
    /// The programme (an index into `Snapshot.programmes`), or nil for the channel pairs
    /// (1, 2), (3, 4), … of the default programme.
    public var programme: Int?
    /// `1`, `2`, … for channel pairs; the loudspeakers' labels (`L-R`, `Ls-Rs`) in a
    /// programme.
    public var label: String
    /// Its two inputs, 0-based.
    public var left: Int
    public var right: Int

    public init(programme: Int?, label: String, left: Int, right: Int) {
        self.programme = programme
        self.label = label
        self.left = left
        self.right = right
    }
}

/// Everything the outputs need at one moment: written by the worker, read by the output
/// thread through a `TripleBuffer` (never copied there, so its arrays are never reallocated).
public struct Snapshot: Sendable {
    /// Hops analysed so far (0: nothing yet).
    public var sequence = 0
    /// Frames analysed so far.
    public var framesAnalysed = 0
    /// The server's sample rate, in Hz.
    public var sampleRate = 0
    /// When the last analysed frame was captured, as an OSC (NTP) time tag: seconds since
    /// 1900 in the upper 32 bits, the fraction in the lower; 0 when unknown (files).
    public var timeTag: UInt64 = 0
    /// When the worker published this snapshot, on the monotonic clock (ns); 0 when unknown.
    public var publishedNanoseconds = 0
    /// Per channel.
    public var channels: [ChannelSnapshot]
    /// Phase correlation of each pair in `pairs`.
    public var correlations: [Float]
    /// Per pair, over the correlation's window: the balance and the mid and side levels.
    public var pairLevels: [PairLevels]
    /// Per pair (in `pairs`' order), its latest points for the goniometer, oldest first, as
    /// left/right sample pairs: `goniometerPoints` each (`GoniometerTrace`); empty when no
    /// display asks for them.
    public var goniometer: [Float]
    public var goniometerPoints: Int { pairs.isEmpty ? 0 : goniometer.count / (2 * pairs.count) }
    /// Whose each correlation is: the channel pairs (1, 2), (3, 4), … without programmes,
    /// else each programme's loudspeaker pairs.
    public var pairs: [PairSubject]
    /// The loudness programmes: the default one (named ""), or those of `--programme`.
    public var programmes: [ProgrammeSnapshot]
    /// The first programme's loudness (the default programme's, over all channels).
    public var loudness: LoudnessSnapshot {
        get { programmes[0].loudness }
        set { programmes[0].loudness = newValue }
    }
    /// Status counters.
    public var status = Status()
    /// The fault this update's peaks are near (`FaultLabels`: an xrun shortly before or
    /// after), nil when they are clean.
    public var peakFault: FaultCause?
    /// A fault on the bus near this update's audio (an xrun, a connection change: from a
    /// period before it to the analysis block after), whatever the readings made of it: the
    /// log marks the update's blocks with it (`faults`), so a report labels the maxima they set.
    public var blockFault: FaultCause?
    /// The alarms (`--alarm`): every alarm's state and the latest changes.
    public var alarms = AlarmBoard()
    /// The outputs' own counters, by output and name (`SnapshotOutput.counters`), as the
    /// worker read them from the outputs' registry before publishing.
    public var outputCounters: [OutputCounter] = []
    /// What the analysis computed for this snapshot (`Analyzer.features`): a reading whose
    /// features are not among them reads as none (`ReadingValue.missing`: JSON null, no OSC
    /// message), not as the floor its fields hold. A snapshot made by hand: everything.
    public var features = AnalysisFeatures.every

    /// Audio time of this snapshot, seconds.
    public var audioTime: Double { sampleRate > 0 ? Double(framesAnalysed) / Double(sampleRate) : 0 }

    public struct Status: Sendable, Equatable {
        /// xruns the server reported.
        public var xruns = 0
        /// Process cycles whose audio was dropped because the worker fell behind.
        public var overruns = 0
        /// Updates skipped by an output that could not keep up (stdout was slow).
        public var outputSkipped = 0
        /// Process cycles run.
        public var cycles = 0
        /// The server's buffer size (frames per period).
        public var bufferFrames = 0
        /// OSC datagrams that could not be sent (host unreachable, port refused, socket full).
        public var oscSendFailures = 0
        /// OSC packets dropped on the `osc` MIDI port (queue full or too large for the port).
        public var oscPortDropped = 0
        /// Control packets ignored (malformed, unknown, oversized).
        public var controlRejected = 0
        /// Whether jackvu has a JACK server now (false while it waits for one to come back).
        public var serverConnected = true
        /// Whether the server runs process cycles (false while it is gone, and while it is
        /// connected but has run none for the watchdog's time: stalled). While false, the
        /// readings are the last ones analysed, frozen: stale.
        public var serverResponding = true
        /// Connected but running no cycles (`ServerWatchdog`): the readings are stale.
        public var serverStalled: Bool { serverConnected && !serverResponding }
        /// Times jackvu reconnected to a server that had gone away.
        public var reconnects = 0
        /// NaN, infinite and absurd (beyond ±10⁴) input samples, replaced by silence before analysis.
        public var nonFiniteSamples = 0
        /// Inputs with at least one connection (a source that went away leaves its input
        /// unconnected).
        public var inputsConnected = 0
        /// Mean and maximum duration of the process callback since the start, in microseconds.
        public var callbackMeanMicroseconds: Float = 0
        public var callbackMaxMicroseconds: Float = 0
        /// 99 % of the cycles took less than this, in microseconds (to a factor of two, never
        /// above the maximum).
        public var callbackP99Microseconds: Float = 0
        public init() {}
    }

    /// A snapshot for `channels` inputs, with these programmes and pairs (default: the
    /// default programme and the channel pairs).
    public init(
        channels: Int, barCount: Int, bandCount: Int = 0, programmes: [ProgrammeSnapshot]? = nil, pairs: [PairSubject]? = nil,
        goniometerPoints: Int = 0, histogramBins: Int = 0
    ) {
        self.channels = (0..<channels).map { _ in ChannelSnapshot(barCount: barCount, bandCount: bandCount) }
        self.pairs = pairs ?? (0..<(channels / 2)).map { PairSubject(programme: nil, label: String($0 + 1), left: 2 * $0, right: 2 * $0 + 1) }
        self.programmes = programmes ?? [ProgrammeSnapshot(name: "", channels: Array(0..<channels))]
        correlations = [Float](repeating: 0, count: self.pairs.count)
        pairLevels = [PairLevels](repeating: PairLevels(), count: self.pairs.count)
        goniometer = [Float](repeating: 0, count: 2 * goniometerPoints * self.pairs.count)
        if histogramBins > 0 {
            for p in self.programmes.indices { self.programmes[p].histogram = [Float](repeating: 0, count: histogramBins) }
        }
    }
}

/// A pair's balance and mid and side levels (`CorrelationMeter.levels`).
public struct PairLevels: Sendable, Equatable {
    /// The left leg's level less the right's, dB (+ to the left; 0 for silence).
    public var balanceDB: Float = 0
    /// (L + R)/2 and (L − R)/2, RMS dBFS.
    public var midDBFS: Float = Decibels.floor
    public var sideDBFS: Float = Decibels.floor
    public init() {}
}

extension Snapshot {
    /// The largest true peak of programme `p`'s channels since the start or reset, dBTP.
    public func maxTruePeakDBTP(programme p: Int) -> Float {
        programmes[p].channels.reduce(Decibels.floor) { $1 < channels.count ? max($0, channels[$1].maxTruePeakDBTP) : $0 }
    }

    /// What set programme `p`'s max true peak when a fault did (the channel holding it was
    /// labelled), with the largest clean true peak of its channels; nil when it is clean.
    public func maxTruePeakFault(programme p: Int) -> MaximumFault? {
        let own = programmes[p].channels.filter { $0 < channels.count }
        guard let top = own.max(by: { channels[$0].maxTruePeakDBTP < channels[$1].maxTruePeakDBTP }),
              let fault = channels[top].maxTruePeakFault else { return nil }
        let clean = own.map { channels[$0].maxTruePeakFault?.clean ?? Double(channels[$0].maxTruePeakDBTP) }.max() ?? fault.clean
        return MaximumFault(cause: fault.cause, clean: clean)
    }

    /// Whether both inputs of `pair` are silent (RMS below −90 dBFS): its correlation means
    /// nothing then.
    public func isSilent(_ pair: PairSubject) -> Bool {
        [pair.left, pair.right].allSatisfy { $0 >= channels.count || channels[$0].rmsDBFS < -90 }
    }

    /// Where programme `p` stands against its target (nil without one).
    public func state(programme p: Int) -> LoudnessTarget.State? {
        programmes[p].target?.state(
            integratedLUFS: programmes[p].loudness.integrated, maxShortTermLUFS: programmes[p].loudness.maxShortTerm,
            maxTruePeakDBTP: Double(maxTruePeakDBTP(programme: p)))
    }

    /// A copy that shares no array storage with this one (so the worker, which reuses its
    /// buffers, never has to copy on write).
    public func deepCopy() -> Snapshot {
        var copy = self
        copy.channels = channels.withUnsafeBufferPointer { Array($0) }
        for i in copy.channels.indices {
            copy.channels[i].bars = channels[i].bars.withUnsafeBufferPointer { Array($0) }
            copy.channels[i].thirds = channels[i].thirds.withUnsafeBufferPointer { Array($0) }
        }
        copy.correlations = correlations.withUnsafeBufferPointer { Array($0) }
        copy.pairLevels = pairLevels.withUnsafeBufferPointer { Array($0) }
        copy.goniometer = goniometer.withUnsafeBufferPointer { Array($0) }
        copy.programmes = programmes.withUnsafeBufferPointer { Array($0) }
        for p in copy.programmes.indices where !programmes[p].histogram.isEmpty {
            copy.programmes[p].histogram = programmes[p].histogram.withUnsafeBufferPointer { Array($0) }
        }
        return copy
    }
}

/// One counter of one output (`SnapshotOutput.counters`): e.g. `stdout` `skipped` 3.
public struct OutputCounter: Sendable, Equatable {
    public var output: String
    public var name: String
    public var value: Int
    public init(output: String, name: String, value: Int) {
        self.output = output
        self.name = name
        self.value = value
    }
}
