import Synchronization

/// A fixed number of `Float` values, each stored and loaded atomically (relaxed), for values
/// that are independent of each other: the worker stores each channel's meter value and the
/// process callback loads it.
public final class AtomicFloatArray: @unchecked Sendable {
    // @unchecked Sendable: every access to an element is an atomic load or store.

    /// Number of values.
    public let count: Int
    /// The values' bit patterns.
    private let bits: UnsafeMutablePointer<Atomic<UInt32>>

    /// `count` values, all `initial`. Not real-time safe (allocates).
    public init(count: Int, initial: Float = 0) {
        self.count = count
        bits = .allocate(capacity: max(1, count))
        for i in 0..<count { (bits + i).initialize(to: Atomic(initial.bitPattern)) }
    }

    deinit {
        for i in 0..<count { _ = (bits + i).move() }
        bits.deallocate()
    }

    /// Value `i`. Real-time safe.
    @inline(__always)
    public subscript(i: Int) -> Float {
        get { Float(bitPattern: bits[i].load(ordering: .relaxed)) }
        set { bits[i].store(newValue.bitPattern, ordering: .relaxed) }
    }
}

/// An event counter any thread may bump and read (relaxed). Real-time safe.
public final class Counter: @unchecked Sendable {
    // @unchecked Sendable: the only state is an atomic.
    private let value = Atomic<Int>(0)

    public init() {}

    /// Adds `n`. Real-time safe.
    @inline(__always)
    public func add(_ n: Int = 1) { value.add(n, ordering: .relaxed) }

    /// Current count. Real-time safe.
    public var count: Int { value.load(ordering: .relaxed) }

    /// Stores `n`. Real-time safe.
    public func store(_ n: Int) { value.store(n, ordering: .relaxed) }

    /// Raises the stored value to `n` if `n` is larger (a running maximum). Real-time safe.
    public func raise(to n: Int) {
        var current = value.load(ordering: .relaxed)
        while n > current {
            let (exchanged, original) = value.compareExchange(
                expected: current, desired: n, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}

/// A value one thread sets and others read, relaxed: a rate, a size, a frame index, a flag —
/// not a count (`Counter`). Real-time safe.
public final class SharedValue: @unchecked Sendable {
    // @unchecked Sendable: the only state is an atomic.
    private let atomic: Atomic<Int>

    public init(_ initial: Int = 0) { atomic = Atomic(initial) }

    /// Sets it. Real-time safe.
    @inline(__always)
    public func store(_ n: Int) { atomic.store(n, ordering: .relaxed) }

    /// What it is now. Real-time safe.
    @inline(__always)
    public var value: Int { atomic.load(ordering: .relaxed) }
}

/// A fixed number of integer counters, each updated atomically (relaxed). Real-time safe.
public final class AtomicCounterArray: @unchecked Sendable {
    // @unchecked Sendable: every access to an element is atomic.

    /// Number of counters.
    public let count: Int
    private let values: UnsafeMutablePointer<Atomic<Int>>

    /// `count` counters at 0. Not real-time safe (allocates).
    public init(count: Int) {
        self.count = count
        values = .allocate(capacity: max(1, count))
        for i in 0..<count { (values + i).initialize(to: Atomic(0)) }
    }

    deinit {
        for i in 0..<count { _ = (values + i).move() }
        values.deallocate()
    }

    /// Adds `n` to counter `i` (clamped to the last counter). Real-time safe.
    @inline(__always)
    public func add(_ n: Int, at i: Int) {
        values[min(max(0, i), count - 1)].add(n, ordering: .relaxed)
    }

    /// Stores `n` in counter `i`. Real-time safe.
    public func store(_ n: Int, at i: Int) { values[i].store(n, ordering: .relaxed) }

    /// Counter `i`. Real-time safe.
    public subscript(i: Int) -> Int { values[i].load(ordering: .relaxed) }
}
