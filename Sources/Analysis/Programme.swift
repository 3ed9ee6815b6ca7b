import DSP
import Vocabulary

/// One loudness programme (`--programme NAME=CHANNELS[:LAYOUT]`): a name, the inputs it is
/// made of (a channel may belong to several programmes), each channel's loudness weight and
/// loudspeaker label, the loudspeaker pairs whose phase correlation is read, and its target.
public struct Programme: Sendable, Equatable {
    /// Its name (letters, digits, `-`, `_`): the OSC address `PREFIX/programme/NAME/…` and the
    /// JSON key; empty for the default programme (every channel, `--layout`), whose addresses
    /// stay `PREFIX/loudness/…`.
    public var name: String
    /// Its inputs, 0-based, in the layout's order.
    public var channels: [Int]
    /// The layout named (nil: explicit weights, or none for the count).
    public var layout: ChannelLayout?
    /// Each of its channels' weight G_i (ITU-R BS.1770-4), in `channels`' order.
    public var weights: [Double]
    /// Each of its channels' loudspeaker label (`L`, `Ls`, …; `1`, `2`, … without a layout).
    public var labels: [String]
    /// Its loudspeaker pairs, as indices into `channels`.
    public var pairs: [Pair]
    /// Its target (`--target`), or nil.
    public var target: LoudnessTarget?

    public struct Pair: Sendable, Equatable {
        public var left: Int
        public var right: Int
        /// `L-R`, `Ls-Rs`, … (OSC address part and JSON key).
        public var label: String
    }

    /// The most programmes one jackvu meters (`--programme` repeated).
    public static let maxCount = 32

    /// `layout` over `channels`, or equal weights and consecutive pairs when `layout` is nil.
    public init(name: String, channels: [Int], layout: ChannelLayout?, weights: [Double]? = nil, target: LoudnessTarget? = nil) {
        self.name = name
        self.channels = channels
        self.layout = layout
        self.target = target
        if let layout, layout.channelCount == channels.count {
            self.weights = layout.weights
            let names = layout.loudspeakers.map(\.label)
            labels = names
            pairs = layout.pairs.map { Pair(left: $0.left, right: $0.right, label: "\(names[$0.left])-\(names[$0.right])") }
        } else {
            self.weights = weights ?? Array(repeating: 1, count: channels.count)
            labels = channels.indices.map { String($0 + 1) }
            pairs = stride(from: 0, to: channels.count - 1, by: 2).map { Pair(left: $0, right: $0 + 1, label: "\($0 + 1)-\($0 + 2)") }
        }
    }

    /// The loudness weights over all `count` inputs of the client: this programme's weights
    /// at its channels, 0 elsewhere (the loudness meter skips the zeros).
    public func weights(overInputs count: Int) -> [Double] {
        var all = [Double](repeating: 0, count: count)
        for (i, c) in channels.enumerated() where c < count { all[c] += weights[i] }
        return all
    }

    /// Parses `NAME=CHANNELS[:LAYOUT]`: channels 1-based as ranges and lists (`1-6`, `7,8`,
    /// `1-2,5`), a layout name (`ChannelLayout`) or `weights=G1,G2,…`. Without a layout, the
    /// count decides as `--layout` does (1 mono, 2 stereo, 5 → 5.0, 6 → 5.1; otherwise every
    /// weight 1). Channels are checked against the inputs in `Configuration.validate`.
    public static func parse(_ text: String) throws(ConfigurationError) -> Programme {
        func fail(_ why: String) -> ConfigurationError {
            ConfigurationError(option: "--programme", message: "'\(text)': \(why) (NAME=CHANNELS[:LAYOUT], e.g. main=1-6:5.1)")
        }
        guard let equals = text.firstIndex(of: "=") else { throw fail("no '='") }
        let name = String(text[..<equals])
        if let problem = nameProblem(name) { throw fail(problem) }
        let rest = text[text.index(after: equals)...]
        let colon = rest.firstIndex(of: ":")
        let channelText = colon.map { rest[..<$0] } ?? rest
        let layoutText = colon.map { String(rest[rest.index(after: $0)...]) }
        var channels: [Int] = []
        for part in channelText.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]),
                  low >= 1, high >= low, high <= AnalysisSettings.maxChannels
            else { throw fail("'\(part)' is not a channel (1-\(AnalysisSettings.maxChannels)) or a range of them (e.g. 1-6)") }
            channels += Array((low - 1)...(high - 1))
        }
        if let repeated = channels.first(where: { c in channels.filter { $0 == c }.count > 1 }) {
            throw fail("channel \(repeated + 1) is named twice")
        }
        guard let layoutText else {
            return Programme(name: name, channels: channels, layout: ChannelLayout.forChannelCount(channels.count))
        }
        if layoutText.hasPrefix("weights=") {
            let values = layoutText.dropFirst("weights=".count).split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
            guard values.allSatisfy({ $0 != nil && $0!.isFinite && $0! >= 0 && $0! <= 10 }) else {
                throw fail("weights are numbers from 0 to 10")
            }
            guard values.count == channels.count else {
                throw fail("\(values.count) weights for \(channels.count) channels")
            }
            guard values.contains(where: { $0! > 0 }) else { throw fail("at least one weight must be above 0") }
            return Programme(name: name, channels: channels, layout: nil, weights: values.map { $0! })
        }
        guard let layout = ChannelLayout(rawValue: layoutText) else {
            throw fail("no layout '\(layoutText)' (\(ChannelLayout.allCases.map(\.rawValue).joined(separator: ", ")), or weights=G1,G2,...)")
        }
        guard layout.channelCount == channels.count else {
            throw fail("\(layout.rawValue) needs \(layout.channelCount) channels, not \(channels.count)")
        }
        return Programme(name: name, channels: channels, layout: layout)
    }

    /// Why `name` cannot name a programme, or nil.
    static func nameProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 32 else { return "a name is 1 to 32 characters" }
        guard name != ProgrammeSnapshot.defaultName else { return "'\(name)' names the default programme (the one over every channel without --programme)" }
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_"
        }
        return allowed ? nil : "a name is letters, digits, '-' and '_' (it is part of OSC addresses)"
    }
}

/// A `--target`: a profile or a number (LUFS), for every programme or for one (`NAME=…`).
public struct TargetChoice: Sendable, Equatable {
    /// The programme it is for; nil: every programme without one of its own.
    public var programme: String?
    /// The profile's name, or nil for a custom target.
    public var profile: String?
    /// A custom target's loudness, LUFS.
    public var customLUFS: Double?

    /// Parses `PROFILE`, `LUFS`, `NAME=PROFILE` or `NAME=LUFS`.
    public static func parse(_ text: String) throws(ConfigurationError) -> TargetChoice {
        var programme: String?
        var value = text
        if let equals = text.firstIndex(of: "=") {
            programme = String(text[..<equals])
            value = String(text[text.index(after: equals)...])
            if let problem = Programme.nameProblem(programme!) {
                throw ConfigurationError(option: "--target", message: "'\(text)': \(problem)")
            }
        }
        if let lufs = Double(value) {
            guard lufs.isFinite, (-60...0).contains(lufs) else {
                throw ConfigurationError(option: "--target", message: "'\(text)': a target loudness is from -60 to 0 LUFS")
            }
            return TargetChoice(programme: programme, profile: nil, customLUFS: lufs)
        }
        guard LoudnessTarget.profile(value) != nil else {
            throw ConfigurationError(
                option: "--target",
                message: "'\(text)': no profile '\(value)' (\(LoudnessTarget.profiles.map(\.profile).joined(separator: ", ")), or a loudness in LUFS, e.g. -16)")
        }
        return TargetChoice(programme: programme, profile: value, customLUFS: nil)
    }
}
