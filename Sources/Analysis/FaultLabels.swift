import DSP
import Outputs

/// Labels the held maxima that a fault on the bus set, and keeps the maxima of the clean
/// periods beside them (issue: a click an xrun made must not pass for the programme's peak).
///
/// The worker tells it where each fault was, as a ring index (`fault(_:at:)`: an xrun when
/// the server's count moved, a connection change when the callback marked one), and hands it
/// every published snapshot with the stretch of ring indices that snapshot's update covers
/// (`label(_:through:)`). A stretch counts as faulty for a reading while the fault can still
/// be in what the reading measures: from a period before the fault (the xrun is seen after
/// it happened) to the analysis block after it (`blockFrames`, for the true peak), 0.4 s
/// after it (momentary loudness), 3 s after it (short-term). When a held maximum rises in a
/// faulty update it is labelled with the cause; the clean maximum then is the largest of the
/// per-update values of the clean updates, and the label goes once the clean maximum is within
/// 0.05 dB/LU of it. A maximum that falls (a reset) starts both again.
/// jackvu's own overruns are no fault here: the worker leaves that audio out of every maximum.
/// Pure logic, the worker's thread.
public struct FaultLabels: Sendable {
    /// The frames a fault reaches: before, and after for the peak, momentary and short-term.
    private let before: Int, peakAfter: Int, momentaryAfter: Int, shortTermAfter: Int
    /// The latest fault and the ring index until which it can reach each reading.
    private var cause: FaultCause = .xrun
    private var start = Int.min
    private var peakUntil = Int.min, momentaryUntil = Int.min, shortTermUntil = Int.min
    /// Until when the latest fault (of either cause) is in the updates' audio (`blockFault`).
    private var blockUntil = Int.min
    /// Per channel, and per programme for momentary and short-term: the held maximum last
    /// seen, its label, and the clean maximum.
    private var peaks: [Tracked]
    private var momentary: [Tracked]
    private var shortTerm: [Tracked]
    /// The ring index the previous update ended at.
    private var lastEnd: Int?

    struct Tracked: Sendable {
        var held = -Double.infinity
        var clean = -Double.infinity
        var fault: FaultCause?
    }

    /// `periodFrames`: the server's period; `blockFrames`: the analysis block.
    public init(channels: Int, programmes: Int, sampleRate: Int, periodFrames: Int, blockFrames: Int) {
        before = 2 * max(1, periodFrames)
        peakAfter = blockFrames + 2 * max(1, periodFrames)
        momentaryAfter = Int(0.4 * Double(sampleRate)) + 2 * max(1, periodFrames)
        shortTermAfter = 3 * sampleRate + 2 * max(1, periodFrames)
        peaks = Array(repeating: Tracked(), count: channels)
        momentary = Array(repeating: Tracked(), count: programmes)
        shortTerm = Array(repeating: Tracked(), count: programmes)
    }

    /// A fault at ring index `index`. `peaks: false` for a fault whose channel's peaks the
    /// worker leaves out already (a connection change): only the loudness windows over it
    /// are labelled.
    public mutating func fault(_ cause: FaultCause, at index: Int, peaks: Bool = true) {
        self.cause = cause
        start = index - before
        if peaks { peakUntil = index + peakAfter }
        blockUntil = index + peakAfter
        momentaryUntil = index + momentaryAfter
        shortTermUntil = index + shortTermAfter
    }

    /// Labels `s`, the update whose audio ends at ring index `end`.
    public mutating func label(_ s: inout Snapshot, through end: Int) {
        let from = lastEnd ?? end
        lastEnd = end
        func faulty(_ until: Int) -> Bool { end >= start && from <= until }
        let peakFaulty = faulty(peakUntil)
        s.peakFault = peakFaulty ? cause : nil
        s.blockFault = faulty(blockUntil) ? cause : nil
        for c in 0..<min(peaks.count, s.channels.count) {
            let ch = s.channels[c]
            s.channels[c].maxTruePeakFault = FaultLabels.track(
                &peaks[c], held: Double(ch.maxTruePeakDBTP), latest: Double(ch.truePeakDBTP), faulty: peakFaulty, cause: cause)
        }
        for p in 0..<min(momentary.count, s.programmes.count) {
            let l = s.programmes[p].loudness
            s.programmes[p].loudness.maxMomentaryFault = FaultLabels.track(
                &momentary[p], held: l.maxMomentary, latest: l.momentary, faulty: faulty(momentaryUntil), cause: cause)
            s.programmes[p].loudness.maxShortTermFault = FaultLabels.track(
                &shortTerm[p], held: l.maxShortTerm, latest: l.shortTerm, faulty: faulty(shortTermUntil), cause: cause)
        }
    }

    /// A faulted maximum no more than this above the clean one (dB, LU) is the programme's
    /// own: a steady signal's short-term loudness moves by thousandths of a LU, and a label
    /// is for what a fault added, not for rounding.
    static let sameWithin = 0.05

    /// One held maximum: its label, and the clean maximum beside it (nil when clean).
    static func track(_ t: inout Tracked, held: Double, latest: Double, faulty: Bool, cause: FaultCause) -> MaximumFault? {
        if held < t.held - 1e-6 {
            // A reset: both start again.
            t = Tracked()
        }
        if held > t.held + 1e-6 { t.fault = faulty ? cause : nil }
        t.held = held
        if !faulty { t.clean = max(t.clean, min(latest, held)) }
        // Reached in a clean period too (within `sameWithin`): the programme's own after all.
        if t.clean >= t.held - sameWithin { t.fault = nil }
        if t.fault == nil { t.clean = max(t.clean, held) }
        return t.fault.map { MaximumFault(cause: $0, clean: t.clean.isFinite ? t.clean : Double(Decibels.floor)) }
    }
}
