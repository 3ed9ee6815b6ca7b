import DSP
import Vocabulary

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
/// An xrun is noticed after the fact (the server's notification reaches jackvu's threads
/// later, by up to `xrunLateness` on a busy machine): its fault reaches back that far, and
/// a maximum that rose in an update already published within it is labelled then, and those
/// updates leave the clean maximum (which counts an update for good only once no late xrun
/// can reach it).
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
    /// How far back a late-noticed xrun reaches, frames; the start of the latest one's reach
    /// while the next update has yet to take it.
    private let lateFrames: Int
    private var lateFrom: Int?

    /// How late an xrun's notification may come, seconds: the server's notification thread,
    /// then jackvu's, both ordinary threads that a loaded machine delays (the audio has gone
    /// on to the ring meanwhile) — and the server tells its clients one after another, so a
    /// stalled client (the usual cause of the xrun) can hold up the others' notification by
    /// its own stall. A second: a CI machine's run of the live test showed half a second was
    /// not always enough.
    public static let xrunLateness = 1.0

    struct Tracked: Sendable {
        var held = -Double.infinity
        /// The clean maximum over the updates no late xrun can reach any more, and the
        /// clean updates since (ring end index, value), oldest first.
        var settled = -Double.infinity
        var recent: [(end: Int, value: Double)] = []
        var fault: FaultCause?
        /// The ring end index of the update the held maximum last rose in.
        var riseEnd = Int.min

        var clean: Double { recent.reduce(settled) { max($0, $1.value) } }

        init() { recent.reserveCapacity(64) }
    }

    /// `periodFrames`: the server's period; `blockFrames`: the analysis block.
    public init(channels: Int, programmes: Int, sampleRate: Int, periodFrames: Int, blockFrames: Int) {
        before = 2 * max(1, periodFrames)
        peakAfter = blockFrames + 2 * max(1, periodFrames)
        momentaryAfter = Int(0.4 * Double(sampleRate)) + 2 * max(1, periodFrames)
        shortTermAfter = 3 * sampleRate + 2 * max(1, periodFrames)
        lateFrames = Int(FaultLabels.xrunLateness * Double(sampleRate))
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
        if cause == .xrun { lateFrom = min(lateFrom ?? .max, start - lateFrames) }
    }

    /// Labels `s`, the update whose audio ends at ring index `end`.
    public mutating func label(_ s: inout Snapshot, through end: Int) {
        let from = lastEnd ?? end
        lastEnd = end
        let late = lateFrom.map { (from: $0, cause: FaultCause.xrun) }
        lateFrom = nil
        let settledBefore = end - before - lateFrames
        func faulty(_ until: Int) -> Bool { reaches(from: from, through: end, until: until) }
        let peakFaulty = faulty(peakUntil)
        s.peakFault = peakFaulty ? cause : nil
        s.blockFault = faulty(blockUntil) ? cause : nil
        for c in 0..<min(peaks.count, s.channels.count) {
            let ch = s.channels[c]
            s.channels[c].maxTruePeakFault = FaultLabels.track(
                &peaks[c], held: Double(ch.maxTruePeakDBTP), latest: Double(ch.truePeakDBTP), faulty: peakFaulty, cause: cause,
                end: end, late: late, settledBefore: settledBefore)
        }
        for p in 0..<min(momentary.count, s.programmes.count) {
            let l = s.programmes[p].loudness
            s.programmes[p].loudness.maxMomentaryFault = FaultLabels.track(
                &momentary[p], held: l.maxMomentary, latest: l.momentary, faulty: faulty(momentaryUntil), cause: cause,
                end: end, late: late, settledBefore: settledBefore)
            s.programmes[p].loudness.maxShortTermFault = FaultLabels.track(
                &shortTerm[p], held: l.maxShortTerm, latest: l.shortTerm, faulty: faulty(shortTermUntil), cause: cause,
                end: end, late: late, settledBefore: settledBefore)
        }
    }

    /// The fault the audio after the last update may hold, up to ring index `end` (the
    /// stop's: the log's last blocks, which no update labels, take it): the latest fault when
    /// it reaches that audio, by `label`'s rule for the blocks (`Snapshot.blockFault`).
    public func tailFault(through end: Int) -> FaultCause? {
        reaches(from: lastEnd ?? end, through: end, until: blockUntil) ? cause : nil
    }

    /// Whether the latest fault, reaching a reading until ring index `until`, is in the audio
    /// from `from` through `end`.
    private func reaches(from: Int, through end: Int, until: Int) -> Bool { end >= start && from <= until }

    /// A faulted maximum no more than this above the clean one (dB, LU) is the programme's
    /// own: a steady signal's short-term loudness moves by thousandths of a LU, and a label
    /// is for what a fault added, not for rounding.
    static let sameWithin = 0.05

    /// One held maximum: its label, and the clean maximum beside it (nil when clean). `end`:
    /// the update's ring end index; `late`: a late-noticed fault's reach, when one came since
    /// the last update; updates that ended before `settledBefore` count for good.
    static func track(
        _ t: inout Tracked, held: Double, latest: Double, faulty: Bool, cause: FaultCause,
        end: Int = 0, late: (from: Int, cause: FaultCause)? = nil, settledBefore: Int = .min
    ) -> MaximumFault? {
        if held < t.held - 1e-6 {
            // A reset: both start again.
            t = Tracked()
        }
        if let late {
            // The updates it reaches were not clean after all; a maximum one of them set is
            // the fault's.
            t.recent.removeAll { $0.end >= late.from }
            if t.fault == nil && t.riseEnd >= late.from { t.fault = late.cause }
        }
        let rose = held > t.held + 1e-6
        if rose {
            t.fault = faulty ? cause : nil
            t.riseEnd = end
        }
        t.held = held
        // A clean update's value; the held maximum itself while it is unlabelled (it rose in a
        // clean update, or reached one).
        if !faulty { t.recent.append((end, t.fault == nil ? held : min(latest, held))) }
        while let first = t.recent.first, first.end < settledBefore {
            t.settled = max(t.settled, first.value)
            t.recent.removeFirst()
        }
        // Reached in a clean period too (within `sameWithin`): the programme's own after all.
        let clean = t.clean
        if clean >= t.held - sameWithin && t.fault != nil {
            t.fault = nil
            t.recent.append((end, held))
        }
        return t.fault.map { MaximumFault(cause: $0, clean: clean.isFinite ? clean : Double(Decibels.floor)) }
    }
}
