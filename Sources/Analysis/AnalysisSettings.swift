#if canImport(Glibc)
import Glibc
#endif
import DSP
import Vocabulary

/// What the analysis is told: the channels, the meters' settings, the programmes and their
/// targets. The command line's `Configuration` holds one (`Configuration.analysis`) beside
/// what the client and the outputs are told; a host of the analysis alone (the LV2 plugin,
/// the bench) may build its own.
public struct AnalysisSettings: Equatable, Sendable {
    /// Number of audio inputs and meter outputs (`--channels`).
    public var channels = 2
    /// The most inputs jackvu takes (the server's port limit may be lower: jackd -p).
    /// The most channels (`--channels`). What bounds a run is rather the JACK server's port
    /// limit (jackvu needs 2 × N + 1 ports: `jackd -p`/`--port-max`), the CPU (every meter
    /// costs about 2.7 ms per second per channel at 48 kHz: 512 channels held on two cores,
    /// 1,024 did not; BENCHMARKS.md) and memory (the capture ring keeps a second per channel,
    /// 4 bytes a frame: 192 KB a channel at 48 kHz).
    public static let maxChannels = 1024
    /// FFT size in samples (`--fft-size`).
    public var fftSize = FFTSize.default
    /// Fraction of each FFT frame shared with the next (`--overlap`), 0 ..< 1.
    public var overlap = 0.75
    /// Number of spectrum bars (`--bars`).
    public var bars = 48
    /// Lower edge of the first bar, in Hz (`--bars-from`).
    public var barsFromHz = 60.0
    /// Upper edge of the last bar, in Hz (`--bars-to`).
    public var barsToHz = 18000.0
    /// Text updates per second at most (`--rate`).
    public var rate = 20.0
    /// Level shown as 0 on the meter ports and in `level`/`hold`, in dBFS (`--meter-floor`).
    public var meterFloorDBFS = -60.0
    /// Fall rate of the display values, in dB per second (`--fall`).
    public var fallDBPerSecond = 20.0
    /// How long `hold` keeps a new peak before falling, in seconds (`--hold`).
    public var holdSeconds = 1.5
    /// Loudness channel layout (`--layout`); nil: from the channel count (1 mono, 2 stereo,
    /// 5 → 5.0, 6 → 5.1; any other count weights every channel 1).
    public var layout: ChannelLayout?
    /// Loudness programmes (`--programme`); empty: one programme over every channel, weighted
    /// by `layout` (`resolvedProgrammes`).
    public var programmes: [Programme] = []
    /// `--target`s, in the order given (a programme's own beats the one for all).
    public var targets: [TargetChoice] = []
    /// `--tolerance` (LU) and `--max-true-peak` (dBTP): replace the chosen profile's figures
    /// (a custom target's default: 1 LU and −1 dBTP).
    public var toleranceLU: Double?
    public var maxTruePeakDBTP: Double?
    /// Integrate loudness only while the JACK transport rolls (`--follow-transport`): the
    /// process callback reads the transport every period and the worker leaves out exactly
    /// the periods in which it stood.
    public var followTransport = false
    /// With `followTransport`: reset every programme when the transport starts rolling at
    /// frame 0 (`--reset-at-zero`).
    public var resetAtZero = false
    /// What `meter_N` carries (`--meter`).
    public var meterSource = MeterSource.rms
    /// The sine level that reads 0 VU, dBFS (`--vu-reference`).
    public var vuReferenceDBFS = -18.0
    /// PPM type (`--ppm`) and the alignment level it reads as its reference mark
    /// (`--ppm-alignment`, dBFS).
    public var ppmType = PPMType.ebu
    public var ppmAlignmentDBFS = -18.0
    /// How integrated loudness is gated (`--gating`).
    public var gating = Gating.bs1770_4
    /// K-System scale (`--k-scale`): 20, 14 or 12.
    public var kHeadroom = 20
    /// Below this YIN confidence (0 … 1) `pitch` names no note (`--pitch-confidence`).
    public var pitchConfidence = 0.8

    public init() {}

    /// Samples between analyses for a sample rate-independent FFT size and overlap.
    public var hopSize: Int { max(1, Int((Double(fftSize) * (1 - overlap)).rounded())) }

    /// The scale the meter ports' 0 … 1 spans and the displays draw the meter bar on
    /// (`--meter`), with its colour zones (`MeterScales`).
    public var meterScale: DisplayScale {
        meterSource.entry.meter.scale(MeterScales.Parameters(floorDBFS: meterFloorDBFS, ppmType: ppmType, kHeadroom: kHeadroom))
    }

    /// The programmes metered, each with its target: `programmes`, or without them the
    /// default programme (every channel, `layout`, no loudspeaker pairs of its own: its
    /// correlations are the channel pairs').
    public var resolvedProgrammes: [Programme] {
        var list = programmes
        if list.isEmpty {
            var all = Programme(name: "", channels: Array(0..<channels), layout: layout ?? ChannelLayout.forChannelCount(channels))
            all.pairs = []
            list = [all]
        }
        for i in list.indices { list[i].target = target(for: list[i].name) }
        return list
    }

    /// The target of programme `name` (`--target NAME=…`, else `--target …` for all), with
    /// `--tolerance` and `--max-true-peak` applied; nil without one.
    public func target(for name: String) -> LoudnessTarget? {
        guard let choice = targets.last(where: { $0.programme == name && !name.isEmpty }) ?? targets.last(where: { $0.programme == nil })
        else { return nil }
        var t = choice.profile.flatMap(LoudnessTarget.profile)
            ?? LoudnessTarget(profile: "custom", targetLUFS: choice.customLUFS ?? -23, toleranceLU: 1, maxTruePeakDBTP: -1)
        if let toleranceLU { t.toleranceLU = toleranceLU }
        if let maxTruePeakDBTP { t.maxTruePeakDBTP = maxTruePeakDBTP }
        return t
    }

    /// The loudspeaker pairs whose phase correlation is read, as input indices, and the
    /// programme each belongs to (nil: the channel pairs (1, 2), (3, 4), … of the default
    /// programme, `PREFIX/pair/P/…`).
    public var correlationPairs: [(left: Int, right: Int, subject: PairSubject)] {
        var out: [(left: Int, right: Int, subject: PairSubject)] = []
        if programmes.isEmpty {
            for p in 0..<(channels / 2) {
                out.append((2 * p, 2 * p + 1, PairSubject(programme: nil, label: String(p + 1), left: 2 * p, right: 2 * p + 1)))
            }
        }
        for (index, p) in programmes.enumerated() {
            for pair in p.pairs {
                let left = p.channels[pair.left], right = p.channels[pair.right]
                out.append((left, right, PairSubject(programme: index, label: pair.label, left: left, right: right)))
            }
        }
        return out
    }

    /// Loudness weights for the configured channels.
    public var loudnessWeights: [Double] {
        (layout ?? ChannelLayout.forChannelCount(channels))?.weights ?? Array(repeating: 1, count: channels)
    }

    /// The DSP settings at `sampleRate`.
    public func spectrum(sampleRate: Double) -> SpectrumConfiguration {
        SpectrumConfiguration(
            sampleRate: sampleRate, fftSize: fftSize, barCount: bars,
            minFrequency: barsFromHz, maxFrequency: barsToHz)
    }
}

/// A setting that is out of range; `option` names the command-line option.
public struct ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let option: String
    public let message: String

    public init(option: String, message: String) {
        self.option = option
        self.message = message
    }

    public var description: String { "\(option) \(message)" }
}

/// What the meter ports carry: one of the meters of the reading table (`MeterScales.meters`,
/// `ReadingField.meter`), by the name `--meter` takes, mapped linearly from its scale to 0 … 1.
public struct MeterSource: RawRepresentable, CaseIterable, Sendable, Hashable {
    public let rawValue: String
    /// Nil for a name no reading's meter has.
    public init?(rawValue: String) {
        guard MeterScales.meter(rawValue) != nil else { return nil }
        self.rawValue = rawValue
    }
    private init(known: String) { rawValue = known }

    /// Every meter, in the table's order.
    public static var allCases: [MeterSource] { MeterScales.names.map { MeterSource(known: $0.name) } }

    /// Its meter, reading and field in the table.
    public var entry: (meter: ReadingMeter, reading: Reading, field: ReadingField) { MeterScales.meter(rawValue)! }

    public static let rms = MeterSource(known: "rms")
    public static let peak = MeterSource(known: "peak")
    public static let truepeak = MeterSource(known: "truepeak")
    public static let vu = MeterSource(known: "vu")
    public static let ppm = MeterSource(known: "ppm")
    public static let k = MeterSource(known: "k")
    public static let momentary = MeterSource(known: "momentary")
    public static let shortterm = MeterSource(known: "shortterm")
}
