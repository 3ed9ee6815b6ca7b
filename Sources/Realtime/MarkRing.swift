import Synchronization

/// Positions one thread marks, in order, and another takes, in order, from a fixed number of
/// slots: the process callback marks where the audio of cycles it missed left a join, the
/// worker takes them. The marker never waits: a taker that falls more than `slots` marks
/// behind loses the oldest, and is told so (`Take.lost`) with the position they all came
/// before, so that it can treat the whole stretch as theirs instead of taking a mark written
/// over while it read for an older one. Marking is real-time safe: three atomic stores
/// and a fence (no instruction on x86-64).
public final class MarkRing: @unchecked Sendable {
    // @unchecked Sendable: every access to a slot or the count is atomic; one thread marks.

    /// What the taker gets next.
    public enum Take: Equatable, Sendable {
        /// The next mark, at this position.
        case mark(Int)
        /// Marks were written over before they were taken: all of them came before this
        /// position (the oldest mark still held, which is taken next) and after the last mark
        /// taken.
        case lost(before: Int)
    }

    /// How many marks are held.
    public let slots: Int
    private let values: UnsafeMutablePointer<Atomic<Int>>
    /// The marks begun (counted before the slot is written) and made (after): a taker that
    /// read a slot checks the first, which a mark that wrote over it has already moved.
    private let begun = Atomic<Int>(0)
    private let marked = Atomic<Int>(0)

    /// `slots` slots. Not real-time safe (allocates).
    public init(slots: Int) {
        precondition(slots > 0)
        self.slots = slots
        values = .allocate(capacity: slots)
        for i in 0..<slots { (values + i).initialize(to: Atomic(0)) }
    }

    deinit {
        for i in 0..<slots { _ = (values + i).move() }
        values.deallocate()
    }

    /// Marks `position` (not below the last one marked). One thread only. Real-time safe.
    @inline(__always)
    public func mark(_ position: Int) {
        let n = marked.load(ordering: .relaxed)
        begun.store(n + 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        values[n % slots].store(position, ordering: .relaxed)
        marked.store(n + 1, ordering: .releasing)
    }

    /// How many marks were ever made.
    public var count: Int { marked.load(ordering: .acquiring) }

    /// The next thing to take after the `taken` marks already taken, when its position is
    /// before `end` (a mark at or after it stays for a later call); `taken` moves past it.
    /// Loss is reported first, then the oldest mark held.
    public func next(after taken: inout Int, before end: Int) -> Take? {
        while true {
            let n = count
            guard taken < n else { return nil }
            let oldest = max(taken, n - slots)
            let value = values[oldest % slots].load(ordering: .relaxed)
            // The slot read must not have been written over meanwhile (a mark `slots` on
            // begun: its count is seen when its value was): then look again, from the new
            // oldest.
            atomicMemoryFence(ordering: .acquiring)
            guard begun.load(ordering: .relaxed) - slots <= oldest else { continue }
            if oldest > taken {
                taken = oldest
                return .lost(before: value)
            }
            guard value < end else { return nil }
            taken += 1
            return .mark(value)
        }
    }
}
