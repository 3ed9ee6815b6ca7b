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
/// after it (momentary loudness), 3 s after it (short-term). Each cause keeps its own
/// stretches (a connection change, whose peaks the worker leaves out, does not take over an
/// xrun's peak label), and a reading both reach takes the cause noticed last. When a held
/// maximum rises in a faulty update it is labelled with the cause; the clean maximum then is
/// the largest of the per-update values of the clean updates, and the label goes once the
/// clean maximum is within 0.05 dB/LU of it. A maximum that falls (a reset) starts both again.
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
    /// Per cause, the stretch of ring indices each reading's latest faults reach (`Reach`),
    /// and which cause was noticed last (it labels what both reach).
    private var xrunReach = Reach(), connectionReach = Reach()
    private var lastNoticed: FaultCause = .xrun
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

    /// The readings a fault can be in: the peaks, the momentary and short-term windows, and the
    /// updates' audio itself (`blockFault`).
    enum Reading: Int, CaseIterable { case peak, momentary, shortTerm, block }

    /// One cause's faults: for each reading, the stretch of ring indices (from, until) its
    /// latest faults reach. A fault that falls in or before the stretch already held widens
    /// it — two faults noticed in one look of the worker, say, the later-noticed lying earlier
    /// in the audio (a connection change the callback marked in frames an xrun's notification
    /// came after), must not cut the first's reach short; one after it starts a new stretch.
    struct Reach: Sendable {
        var from = [Int](repeating: .min, count: Reading.allCases.count)
        var until = [Int](repeating: .min, count: Reading.allCases.count)

        mutating func add(_ reading: Reading, from a: Int, until b: Int) {
            let k = reading.rawValue
            if a <= until[k] {
                from[k] = min(from[k], a)
                until[k] = max(until[k], b)
            } else {
                from[k] = a
                until[k] = b
            }
        }

        /// Whether the reading's stretch is in the audio from `a` through `b`.
        func reaches(_ reading: Reading, from a: Int, through b: Int) -> Bool {
            b >= from[reading.rawValue] && a <= until[reading.rawValue]
        }
    }

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
        lastNoticed = cause
        let start = index - before
        func add(_ r: inout Reach) {
            if peaks { r.add(.peak, from: start, until: index + peakAfter) }
            r.add(.block, from: start, until: index + peakAfter)
            r.add(.momentary, from: start, until: index + momentaryAfter)
            r.add(.shortTerm, from: start, until: index + shortTermAfter)
        }
        switch cause {
        case .xrun:
            add(&xrunReach)
            lateFrom = min(lateFrom ?? .max, start - lateFrames)
        case .connection: add(&connectionReach)
        }
    }

    /// The cause of a fault whose stretch for `reading` is in the audio from `from` through
    /// `end`: the one noticed last when both are.
    private func cause(_ reading: Reading, from: Int, through end: Int) -> FaultCause? {
        let xrun = xrunReach.reaches(reading, from: from, through: end)
        let connection = connectionReach.reaches(reading, from: from, through: end)
        if xrun && connection { return lastNoticed }
        return xrun ? .xrun : connection ? .connection : nil
    }

    /// Labels `s`, the update whose audio ends at ring index `end`.
    public mutating func label(_ s: inout Snapshot, through end: Int) {
        let from = lastEnd ?? end
        lastEnd = end
        let late = lateFrom.map { (from: $0, cause: FaultCause.xrun) }
        lateFrom = nil
        let settledBefore = end - before - lateFrames
        let peakCause = cause(.peak, from: from, through: end)
        let momentaryCause = cause(.momentary, from: from, through: end)
        let shortTermCause = cause(.shortTerm, from: from, through: end)
        s.peakFault = peakCause
        s.blockFault = cause(.block, from: from, through: end)
        for c in 0..<min(peaks.count, s.channels.count) {
            let ch = s.channels[c]
            s.channels[c].maxTruePeakFault = FaultLabels.track(
                &peaks[c], held: Double(ch.maxTruePeakDBTP), latest: Double(ch.truePeakDBTP), fault: peakCause,
                end: end, late: late, settledBefore: settledBefore)
        }
        for p in 0..<min(momentary.count, s.programmes.count) {
            let l = s.programmes[p].loudness
            s.programmes[p].loudness.maxMomentaryFault = FaultLabels.track(
                &momentary[p], held: l.maxMomentary, latest: l.momentary, fault: momentaryCause,
                end: end, late: late, settledBefore: settledBefore)
            s.programmes[p].loudness.maxShortTermFault = FaultLabels.track(
                &shortTerm[p], held: l.maxShortTerm, latest: l.shortTerm, fault: shortTermCause,
                end: end, late: late, settledBefore: settledBefore)
        }
    }

    /// The fault the audio after the last update may hold, up to ring index `end` (the
    /// stop's: the log's last blocks, which no update labels, take it): the latest fault when
    /// it reaches that audio, by `label`'s rule for the blocks (`Snapshot.blockFault`).
    public func tailFault(through end: Int) -> FaultCause? {
        cause(.block, from: lastEnd ?? end, through: end)
    }

    /// A faulted maximum no more than this above the clean one (dB, LU) is the programme's
    /// own: a steady signal's short-term loudness moves by thousandths of a LU, and a label
    /// is for what a fault added, not for rounding.
    static let sameWithin = 0.05

    /// One held maximum: its label, and the clean maximum beside it (nil when clean). `end`:
    /// the update's ring end index; `late`: a late-noticed fault's reach, when one came since
    /// the last update; updates that ended before `settledBefore` count for good.
    static func track(
        _ t: inout Tracked, held: Double, latest: Double, fault: FaultCause?,
        end: Int = 0, late: (from: Int, cause: FaultCause)? = nil, settledBefore: Int = .min
    ) -> MaximumFault? {
        let faulty = fault != nil
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
            t.fault = fault
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
