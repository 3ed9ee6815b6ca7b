import DSP

/// The analysis of all channels, hop by hop, with no threads and no JACK: the worker feeds it
/// from the ring, the benchmark and tests feed it directly.
///
/// Each channel keeps its last `fftSize` samples (the *analysis block*). Every `hopSize` new
/// samples the block is analysed: sample peak and RMS over the block, the spectrum (bars,
/// peak frequency, note), and the display values with their ballistics.
///
/// One thread at a time. `append` and `write(into:)` do not allocate.
public final class Analyzer: @unchecked Sendable {
    // @unchecked Sendable: used by one thread at a time (the worker); it owns all its buffers.

    public let configuration: Configuration
    /// Sample rate, in Hz.
    public let sampleRate: Int
    /// Samples between analyses.
    public let hopSize: Int
    /// Hops analysed.
    public private(set) var hops = 0
    /// Frames analysed (a multiple of `hopSize`).
    public var framesAnalysed: Int { hops * hopSize }

    private let channels: [ChannelAnalysis]
    /// New samples in the current hop (the same for every channel).
    private var filled = 0

    /// Plans the FFTs and allocates every buffer. Not real-time safe.
    public init(configuration: Configuration, sampleRate: Int) throws(DSPError) {
        self.configuration = configuration
        self.sampleRate = sampleRate
        hopSize = min(configuration.hopSize, configuration.fftSize)
        let spectrum = configuration.spectrum(sampleRate: Double(sampleRate))
        var made: [ChannelAnalysis] = []
        for _ in 0..<configuration.channels {
            made.append(try ChannelAnalysis(spectrum: spectrum, configuration: configuration))
        }
        channels = made
    }

    /// Appends `frames` new frames; `source(c)` points at channel c's `frames` samples.
    /// Calls `hop()` after each completed hop, when the results are ready to `write(into:)`.
    /// Real-time safe if `hop` is.
    public func append(
        frames: Int, from source: (Int) -> UnsafePointer<Float>, hop: () -> Void
    ) {
        var offset = 0
        while offset < frames {
            let n = min(frames - offset, hopSize - filled)
            for (c, channel) in channels.enumerated() {
                channel.store(source(c) + offset, count: n, at: filled, hopSize: hopSize)
            }
            filled += n
            offset += n
            if filled == hopSize {
                let elapsed = Double(hopSize) / Double(sampleRate)
                for channel in channels { channel.analyze(hopSize: hopSize, elapsed: elapsed) }
                filled = 0
                hops += 1
                hop()
            }
        }
    }

    /// Writes the latest results into `snapshot`, which must have been made for this
    /// configuration (same channels and bars). Real-time safe.
    public func write(into snapshot: inout Snapshot) {
        snapshot.sequence = hops
        snapshot.framesAnalysed = framesAnalysed
        snapshot.sampleRate = sampleRate
        for c in channels.indices {
            channels[c].write(into: &snapshot.channels[c])
        }
    }

    /// Channel `c`'s display level 0 ... 1 (the meter port's value). Real-time safe.
    public func level(channel c: Int) -> Float { channels[c].displayLevel }
}

/// One channel's analysis state.
final class ChannelAnalysis {
    /// The analysis block: the last `fftSize` samples, oldest first.
    private let block: UnsafeMutableBufferPointer<Float>
    private let spectrum: SpectrumAnalyzer
    private let scale: MeterScale
    /// RMS display ballistics (no hold).
    private var levelBallistics: Ballistics
    /// Peak-hold display ballistics.
    private var holdBallistics: Ballistics
    /// Last block's level.
    private var level = BlockLevel()
    /// Display values, 0 ... 1.
    private(set) var displayLevel: Float = 0
    private var displayHold: Float = 0

    init(spectrum configuration: SpectrumConfiguration, configuration c: Configuration) throws(DSPError) {
        spectrum = try SpectrumAnalyzer(configuration: configuration)
        block = .allocate(capacity: configuration.fftSize)
        block.initialize(repeating: 0)
        scale = MeterScale(floor: Float(c.meterFloorDBFS))
        levelBallistics = Ballistics(holdTime: 0, fallRate: c.fallDBPerSecond)
        holdBallistics = Ballistics(holdTime: c.holdSeconds, fallRate: c.fallDBPerSecond)
    }

    deinit { block.deallocate() }

    /// Copies `count` new samples to their place in the block's last hop.
    @inline(__always)
    func store(_ samples: UnsafePointer<Float>, count: Int, at filled: Int, hopSize: Int) {
        let start = block.count - hopSize + filled
        (block.baseAddress! + start).update(from: samples, count: count)
    }

    /// Analyses the block, then shifts it by one hop to make room for the next.
    func analyze(hopSize: Int, elapsed: Double) {
        let samples = UnsafeBufferPointer(block)
        level = BlockLevel(samples)
        spectrum.analyze(samples)
        let rms = Double(level.rmsDBFS)
        let peak = Double(level.peakDBFS)
        displayLevel = scale.displayValue(Float(levelBallistics.update(rms, elapsed: elapsed)))
        displayHold = scale.displayValue(Float(holdBallistics.update(peak, elapsed: elapsed)))
        let base = block.baseAddress!
        base.update(from: base + hopSize, count: block.count - hopSize)
    }

    func write(into s: inout ChannelSnapshot) {
        s.peakDBFS = level.peakDBFS
        s.rmsDBFS = level.rmsDBFS
        s.level = displayLevel
        s.hold = displayHold
        let bars = spectrum.bars
        for i in 0..<min(bars.count, s.bars.count) { s.bars[i] = bars[i] }
        s.pitchHz = spectrum.peak?.frequency ?? 0
        s.note = spectrum.peak?.note
    }
}
