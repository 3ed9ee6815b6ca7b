import Synchronization

/// Publishes the latest value from one writer thread to one reader thread without locks and
/// without waiting on either side (a triple buffer).
///
/// Three preallocated values: the writer owns one ("back"), the reader owns one ("front"), and
/// the third sits in the middle. `publish()` swaps back and middle and marks the middle fresh;
/// `refresh()` swaps front and middle if it is fresh. Both are one atomic exchange.
///
/// Values are mutated in place and read in place (`withBack`, `withFront`), never copied out,
/// so a value that holds arrays is not copied on write: the writer keeps them uniquely
/// referenced and never reallocates them. The writer must overwrite every field it
/// publishes: the back value it gets holds what it published two rounds ago.
public final class TripleBuffer<Value>: @unchecked Sendable {
    // @unchecked Sendable: at any time each slot index is held by exactly one of writer
    // (`back`), reader (`front`) or the atomic `state` (middle). Slots change hands only
    // through the acquire-release exchange on `state`, which orders the writer's stores to a
    // slot before the reader's loads from it.

    /// Three values.
    private let slots: UnsafeMutablePointer<Value>
    /// Middle slot index (bits 0–1) and the fresh flag (bit 2).
    private let state: Atomic<Int>
    /// Writer's slot index; touched by the writer only.
    private var back: Int = 0
    /// Reader's slot index; touched by the reader only.
    private var front: Int = 1
    private static var freshBit: Int { 4 }

    /// Three values made by `make`, which must not share mutable storage between calls.
    /// Not real-time safe (allocates).
    public init(_ make: () -> Value) {
        slots = .allocate(capacity: 3)
        for i in 0..<3 { (slots + i).initialize(to: make()) }
        state = Atomic(2)
    }

    deinit {
        slots.deinitialize(count: 3)
        slots.deallocate()
    }

    /// Writer: mutates the back value in place. Real-time safe if `body` is.
    @inline(__always)
    public func withBack<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try body(&slots[back])
    }

    /// Writer: makes the back value the latest, to be picked up by the reader. Real-time safe.
    public func publish() {
        let old = state.exchange(back | TripleBuffer.freshBit, ordering: .acquiringAndReleasing)
        back = old & 3
    }

    /// Reader: takes the latest published value if there is one newer than the front; returns
    /// whether the front changed. Real-time safe.
    @discardableResult
    public func refresh() -> Bool {
        guard state.load(ordering: .relaxed) & TripleBuffer.freshBit != 0 else { return false }
        let old = state.exchange(front, ordering: .acquiringAndReleasing)
        front = old & 3
        return true
    }

    /// Reader: reads the front value in place. Real-time safe if `body` is.
    @inline(__always)
    public func withFront<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try body(&slots[front])
    }
}
