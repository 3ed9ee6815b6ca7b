import Synchronization

/// A single-producer single-consumer queue of byte packets (OSC packets, MIDI messages) in one
/// preallocated ring: each packet is a 4-byte length followed by its bytes, the next packet
/// starting at the next 4-byte boundary.
///
/// The producer (a non-real-time thread) calls `push`, which never waits: a packet that does
/// not fit is dropped and counted. The consumer (the JACK process callback) looks at the
/// oldest packet with `peek`, copies it out in at most two pieces (the ring may wrap inside
/// it), and `pop`s it. Indices count bytes since the start and only grow; acquire/release on
/// them orders the bytes before the index that announces them, as in `AudioRing`.
public final class PacketQueue: @unchecked Sendable {
    // @unchecked Sendable: the producer writes only bytes in [write, read + capacity), the
    // consumer reads only bytes in [read, write); the index pairs order those accesses.

    /// Capacity in bytes (a power of two).
    public let capacity: Int
    private let mask: Int
    private let storage: UnsafeMutablePointer<UInt8>
    private let writeIndex = Atomic<Int>(0)
    private let readIndex = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)

    /// A queue of at least `minimumCapacity` bytes. Not real-time safe (allocates).
    public init(minimumCapacity: Int) {
        var c = 64
        while c < minimumCapacity { c <<= 1 }
        capacity = c
        mask = c - 1
        storage = .allocate(capacity: c)
        storage.initialize(repeating: 0, count: c)
    }

    deinit { storage.deallocate() }

    /// Packets the producer dropped because the queue was full (or `push` was told to drop).
    public var droppedPackets: Int { dropped.load(ordering: .relaxed) }

    /// Counts a packet that was dropped before it reached the queue (e.g. too large to send).
    public func countDropped() { dropped.add(1, ordering: .relaxed) }

    /// Bytes a packet of `count` bytes takes in the ring.
    @inline(__always)
    private static func footprint(_ count: Int) -> Int { 4 + ((count + 3) & ~3) }

    /// Appends a packet; false (and counted) if it does not fit. Producer only; never waits.
    /// Real-time safe, though it is meant for the non-real-time side.
    @discardableResult
    public func push(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let w = writeIndex.load(ordering: .relaxed)
        let r = readIndex.load(ordering: .acquiring)
        let need = PacketQueue.footprint(bytes.count)
        guard bytes.count > 0, need <= capacity - (w - r) else {
            dropped.add(1, ordering: .relaxed)
            return false
        }
        var length = UInt32(bytes.count)
        withUnsafeBytes(of: &length) { copyIn($0, at: w) }
        copyIn(bytes, at: w + 4)
        writeIndex.store(w + need, ordering: .releasing)
        return true
    }

    /// `push` for an array. Not real-time safe (the caller's array).
    @discardableResult
    public func push(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { push($0) } }

    private func copyIn(_ bytes: UnsafeRawBufferPointer, at index: Int) {
        guard let src = bytes.baseAddress else { return }
        let start = index & mask
        let first = min(bytes.count, capacity - start)
        (storage + start).update(from: src.assumingMemoryBound(to: UInt8.self), count: first)
        if first < bytes.count {
            storage.update(from: src.assumingMemoryBound(to: UInt8.self) + first, count: bytes.count - first)
        }
    }

    /// The oldest packet as at most two contiguous pieces, or nil if the queue is empty.
    /// Consumer only. Real-time safe.
    @inline(__always)
    public func peek() -> (first: UnsafeBufferPointer<UInt8>, second: UnsafeBufferPointer<UInt8>)? {
        let r = readIndex.load(ordering: .relaxed)
        let w = writeIndex.load(ordering: .acquiring)
        guard w > r else { return nil }
        var length: UInt32 = 0
        withUnsafeMutableBytes(of: &length) { l in
            for i in 0..<4 { l[i] = storage[(r + i) & mask] }
        }
        let count = Int(length)
        let start = (r + 4) & mask
        let firstCount = min(count, capacity - start)
        return (UnsafeBufferPointer(start: storage + start, count: firstCount),
                UnsafeBufferPointer(start: storage, count: count - firstCount))
    }

    /// Removes the oldest packet (the one `peek` returned). Consumer only. Real-time safe.
    @inline(__always)
    public func pop() {
        let r = readIndex.load(ordering: .relaxed)
        guard writeIndex.load(ordering: .acquiring) > r, let (a, b) = peek() else { return }
        readIndex.store(r + PacketQueue.footprint(a.count + b.count), ordering: .releasing)
    }

    /// Removes the oldest packet and counts it as dropped (it cannot be delivered).
    /// Consumer only. Real-time safe.
    @inline(__always)
    public func drop() {
        pop()
        dropped.add(1, ordering: .relaxed)
    }

    /// Empties the queue from the consumer side (e.g. when the consumer starts again).
    public func discardAll() {
        readIndex.store(writeIndex.load(ordering: .acquiring), ordering: .releasing)
    }
}

/// The JACK frame clock at a known point of the ring: "ring frame `frame` was captured in the
/// cycle that started at `microseconds` on JACK's clock". The process callback stores one per
/// cycle; the worker reads the latest to timestamp what it analysed. A sequence lock: the
/// writer never waits; a reader retries while a store is under way.
public final class ClockAnchor: @unchecked Sendable {
    // @unchecked Sendable: all fields are atomics; the sequence number orders them.
    private let sequence = Atomic<Int>(0)
    private let frame = Atomic<Int>(0)
    private let microseconds = Atomic<UInt64>(0)

    public init() {}

    /// Stores an anchor. One writer (the process callback). Real-time safe.
    @inline(__always)
    public func store(frame f: Int, microseconds us: UInt64) {
        let s = sequence.load(ordering: .relaxed)
        sequence.store(s + 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        frame.store(f, ordering: .relaxed)
        microseconds.store(us, ordering: .relaxed)
        sequence.store(s + 2, ordering: .releasing)
    }

    /// The latest anchor, or nil if none was stored yet. Any thread; never blocks for long
    /// (retries only while a store is under way).
    public func load() -> (frame: Int, microseconds: UInt64)? {
        for _ in 0..<1000 {
            let s1 = sequence.load(ordering: .acquiring)
            if s1 & 1 != 0 { continue }
            let f = frame.load(ordering: .relaxed)
            let us = microseconds.load(ordering: .relaxed)
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == s1 { return s1 == 0 ? nil : (f, us) }
        }
        return nil
    }
}
