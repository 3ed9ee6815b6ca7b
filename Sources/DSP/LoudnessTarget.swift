/// A programme loudness target (`--target`): the loudness a programme should integrate to,
/// the tolerance around it, the largest true peak permitted, and (for short-form content) the
/// largest short-term loudness. The published profiles are in `profiles`, each with its
/// source; `--tolerance` and `--max-true-peak` change any of them, and a bare number is a
/// custom target.
public struct LoudnessTarget: Sendable, Equatable {
    /// The profile's name (`ebu-r128`, …; `custom` for a number).
    public var profile: String
    /// Target integrated loudness, LUFS.
    public var targetLUFS: Double
    /// The integrated loudness may lie this far either side of the target, LU.
    public var toleranceLU: Double
    /// The largest true peak permitted, dBTP.
    public var maxTruePeakDBTP: Double
    /// The largest short-term loudness permitted, LUFS (EBU R 128 s1), or nil.
    public var maxShortTermLUFS: Double?

    public init(profile: String, targetLUFS: Double, toleranceLU: Double, maxTruePeakDBTP: Double, maxShortTermLUFS: Double? = nil) {
        self.profile = profile
        self.targetLUFS = targetLUFS
        self.toleranceLU = toleranceLU
        self.maxTruePeakDBTP = maxTruePeakDBTP
        self.maxShortTermLUFS = maxShortTermLUFS
    }

    /// The published profiles, with where each figure comes from (the README's table cites
    /// the same, and says which figures are contested).
    public static let profiles: [LoudnessTarget] = [
        // EBU R 128 (2020): −23.0 LUFS; ±0.5 LU, ±1.0 LU "for live programmes" (use
        // --tolerance 1); max true peak −1 dBTP.
        LoudnessTarget(profile: "ebu-r128", targetLUFS: -23, toleranceLU: 0.5, maxTruePeakDBTP: -1),
        // EBU R 128 s1 (2016), short-form content (adverts, promos): as R 128, and the max
        // short-term loudness at most −18 LUFS (+5 LU).
        LoudnessTarget(profile: "ebu-r128-s1", targetLUFS: -23, toleranceLU: 0.5, maxTruePeakDBTP: -1, maxShortTermLUFS: -18),
        // ATSC A/85:2013 (US television, the CALM Act): −24 LKFS, ±2 dB, −2 dBTP.
        LoudnessTarget(profile: "atsc-a85", targetLUFS: -24, toleranceLU: 2, maxTruePeakDBTP: -2),
        // AES TD1004.1.15-10 (streaming and network file playback): −16 to −20 LUFS (here
        // −18 ± 2 LU), max peak −1 dBTP.
        LoudnessTarget(profile: "aes-streaming", targetLUFS: -18, toleranceLU: 2, maxTruePeakDBTP: -1),
        // Spotify's published normalisation level (−14 LUFS) and its advice of −1 dBTP; it
        // publishes no tolerance: ±1 LU is jackvu's choice.
        LoudnessTarget(profile: "spotify", targetLUFS: -14, toleranceLU: 1, maxTruePeakDBTP: -1),
        // YouTube publishes no figure: −14 LUFS is what its player is measured to normalise
        // to (contested); −1 dBTP, ±1 LU as for Spotify.
        LoudnessTarget(profile: "youtube", targetLUFS: -14, toleranceLU: 1, maxTruePeakDBTP: -1),
        // Apple's Sound Check and its mastering guidance (Apple Digital Masters): −16 LUFS,
        // −1 dBTP; ±1 LU is jackvu's choice.
        LoudnessTarget(profile: "apple-music", targetLUFS: -16, toleranceLU: 1, maxTruePeakDBTP: -1),
    ]

    /// The profile named `name`, or nil.
    public static func profile(_ name: String) -> LoudnessTarget? { profiles.first { $0.profile == name } }

    /// Where a programme stands against its target.
    public enum State: String, Sendable, CaseIterable {
        /// No integrated loudness yet (no 400 ms block above the −70 LUFS gate).
        case pending
        case within
        case above
        case below
        /// The max short-term loudness above the profile's limit (R 128 s1).
        case shortTermOver = "short-term-over"
        /// The max true peak above the profile's limit (said before the loudness).
        case truePeakOver = "true-peak-over"
    }

    /// The state of a programme with these readings: true peak first, then short-term, then
    /// the integrated loudness against target ± tolerance (the edges count as within).
    public func state(integratedLUFS: Double, maxShortTermLUFS: Double, maxTruePeakDBTP: Double) -> State {
        if maxTruePeakDBTP > self.maxTruePeakDBTP { return .truePeakOver }
        if let limit = self.maxShortTermLUFS, maxShortTermLUFS > limit { return .shortTermOver }
        guard integratedLUFS > LoudnessMeter.floor else { return .pending }
        // Rounded to 0.1 LU first, as meters show it: −22.54 reads −22.5, within ±0.5.
        let deviation = ((integratedLUFS - targetLUFS) * 10).rounded() / 10
        if deviation > toleranceLU { return .above }
        if deviation < -toleranceLU { return .below }
        return .within
    }
}
