import DSP

/// One channel's analysis results at one hop.
public struct ChannelSnapshot: Sendable {
    /// Sample peak of the analysis block, in dBFS.
    public var peakDBFS: Float = Decibels.floor
    /// RMS of the analysis block, in dBFS.
    public var rmsDBFS: Float = Decibels.floor
    /// Display level 0 ... 1 (RMS with instant rise and `--fall`), the value of `meter_N`.
    public var level: Float = 0
    /// Peak-hold display value 0 ... 1 (sample peak, held `--hold` seconds, then falling).
    public var hold: Float = 0
    /// Spectrum bars, 0 ... 1.
    public var bars: [Float]
    /// Peak frequency in Hz, 0 for silence.
    public var pitchHz: Double = 0
    /// Nearest note of the peak, nil for silence or below 30 Hz.
    public var note: Note?

    public init(barCount: Int) {
        bars = [Float](repeating: 0, count: barCount)
    }
}

/// Everything the outputs need at one moment: written by the worker, read by the output
/// thread through a `TripleBuffer` (never copied, so its arrays are never reallocated).
public struct Snapshot: Sendable {
    /// Hops analysed so far (0: nothing yet).
    public var sequence = 0
    /// Frames analysed so far.
    public var framesAnalysed = 0
    /// The server's sample rate, in Hz.
    public var sampleRate = 0
    /// Per channel.
    public var channels: [ChannelSnapshot]
    /// Status counters.
    public var status = Status()

    public struct Status: Sendable, Equatable {
        /// xruns the server reported.
        public var xruns = 0
        /// Process cycles whose audio was dropped because the worker fell behind.
        public var overruns = 0
        /// Text updates skipped because stdout was slow.
        public var outputSkipped = 0
        /// Process cycles run.
        public var cycles = 0
        /// Mean and maximum duration of the process callback since the start, in microseconds.
        public var callbackMeanMicroseconds: Float = 0
        public var callbackMaxMicroseconds: Float = 0
        /// 99 % of the cycles took less than this, in microseconds (to a factor of two).
        public var callbackP99Microseconds: Float = 0
        public init() {}
    }

    public init(channels: Int, barCount: Int) {
        self.channels = (0..<channels).map { _ in ChannelSnapshot(barCount: barCount) }
    }
}
