import Synchronization

/// A single-producer single-consumer ring of audio frames: one preallocated ring per channel,
/// moved forward together by one pair of atomic indices, so the channels stay sample-aligned.
///
/// The producer (the JACK process callback) calls `reserve`, `copyIn` for each channel, then
/// `commit`; the consumer (the worker) reads `readableFrames`, `regions`/`copyOut`, then
/// `consume`. The producer never waits: when the consumer has fallen behind and a block does
/// not fit, the whole block is dropped and counted (`overrunFrames`, `overruns`), so every
/// frame either arrives in order or is counted as lost.
///
/// Indices count frames since the start and only grow; a position in the ring is
/// `index & mask`. The producer publishes with a release store of `writeIndex` after copying,
/// the consumer with a release store of `readIndex` after reading, and each side loads the
/// other's index with acquire, so the copied samples are visible before the index that
/// announces them.
public final class AudioRing: @unchecked Sendable {
    // @unchecked Sendable: `storage` is shared between exactly one producer thread and one
    // consumer thread. The producer only writes frames in [writeIndex, readIndex + capacity)
    // and the consumer only reads frames in [readIndex, writeIndex); the acquire/release pairs
    // on the two indices order those accesses, so no frame is read and written at once.
    // `lastGapPlace` is the producer's alone; the gap places are atomics published by a
    // release store of their count.

    /// Number of channels.
    public let channels: Int
    /// Capacity in frames (a power of two).
    public let capacity: Int
    /// `capacity - 1`.
    private let mask: Int
    /// `channels × capacity` samples, channel-major (planar).
    private let storage: UnsafeMutablePointer<Float>
    /// Frames written since the start; stored by the producer only.
    private let writeIndex = Atomic<Int>(0)
    /// Frames consumed since the start; stored by the consumer only.
    private let readIndex = Atomic<Int>(0)
    /// Frames the producer had to drop because the ring was full.
    private let droppedFrames = Atomic<Int>(0)
    /// Blocks the producer had to drop.
    private let droppedBlocks = Atomic<Int>(0)
    /// Where the latest gaps are (`gaps(since:)`): the write index at each distinct place a
    /// block was dropped, the last `gapSlots` of them, and how many places there were; the
    /// producer's last place (its own).
    public static let gapSlots = 8
    private let gapPlaces = AtomicCounterArray(count: AudioRing.gapSlots)
    private let gapCount = Atomic<Int>(0)
    private var lastGapPlace = -1

    /// Allocates `channels` rings of at least `minimumCapacity` frames each (rounded up to a
    /// power of two), filled with silence. Not real-time safe (allocates).
    public init(channels: Int, minimumCapacity: Int) {
        precondition(channels >= 1, "a ring needs at least one channel")
        precondition(minimumCapacity >= 1 && minimumCapacity <= 1 << 30, "capacity out of range")
        self.channels = channels
        var c = 1
        while c < minimumCapacity { c <<= 1 }
        capacity = c
        mask = c - 1
        storage = .allocate(capacity: channels * c)
        storage.initialize(repeating: 0, count: channels * c)
    }

    deinit {
        storage.deallocate()
    }

    @inline(__always)
    private func base(_ channel: Int) -> UnsafeMutablePointer<Float> {
        assert(channel >= 0 && channel < channels, "channel out of range")
        return storage + channel * capacity
    }

    // MARK: Producer

    /// Producer: whether `frames` frames fit now (nothing is counted). Real-time safe.
    @inline(__always)
    public func hasSpace(for frames: Int) -> Bool {
        capacity - (writeIndex.load(ordering: .relaxed) - readIndex.load(ordering: .acquiring)) >= frames
    }

    /// Producer: true if `frames` fit; otherwise counts the block as an overrun and returns
    /// false (the block must then be dropped: no `copyIn`, no `commit`). Real-time safe.
    @inline(__always)
    public func reserve(frames: Int) -> Bool {
        let w = writeIndex.load(ordering: .relaxed)
        let r = readIndex.load(ordering: .acquiring)
        if capacity - (w - r) >= frames { return true }
        droppedFrames.add(frames, ordering: .relaxed)
        droppedBlocks.add(1, ordering: .relaxed)
        if w != lastGapPlace {
            // A new place: the frames before `w` were captured before the gap, those after it
            // will be after. (Blocks dropped back to back leave one gap, at one place.)
            lastGapPlace = w
            let n = gapCount.load(ordering: .relaxed)
            gapPlaces.store(w, at: n % AudioRing.gapSlots)
            gapCount.store(n + 1, ordering: .releasing)
        }
        return false
    }

    /// Producer: copies `frames` samples from `source` into `channel` at the write position,
    /// after a successful `reserve(frames:)`. Real-time safe.
    @inline(__always)
    public func copyIn(channel: Int, from source: UnsafePointer<Float>, frames: Int) {
        let start = writeIndex.load(ordering: .relaxed) & mask
        let first = min(frames, capacity - start)
        let ring = base(channel)
        (ring + start).update(from: source, count: first)
        if first < frames {
            ring.update(from: source + first, count: frames - first)
        }
    }

    /// Producer: sets `frames` samples of `channel` at the write position to `value`, after
    /// a successful `reserve(frames:)`. Real-time safe.
    @inline(__always)
    public func fill(channel: Int, with value: Float, frames: Int) {
        let start = writeIndex.load(ordering: .relaxed) & mask
        let first = min(frames, capacity - start)
        let ring = base(channel)
        (ring + start).update(repeating: value, count: first)
        if first < frames { ring.update(repeating: value, count: frames - first) }
    }

    /// Producer: publishes `frames` frames copied into every channel. Real-time safe.
    @inline(__always)
    public func commit(frames: Int) {
        let w = writeIndex.load(ordering: .relaxed)
        assert(w + frames - readIndex.load(ordering: .relaxed) <= capacity, "ring overfilled")
        writeIndex.store(w + frames, ordering: .releasing)
    }

    // MARK: Consumer

    /// Consumer: frames ready to read. Real-time safe.
    @inline(__always)
    public var readableFrames: Int {
        writeIndex.load(ordering: .acquiring) - readIndex.load(ordering: .relaxed)
    }

    /// Consumer: the next `frames` readable samples of `channel` as at most two contiguous
    /// pieces (`second` is empty unless the region wraps). `frames` must not exceed
    /// `readableFrames`. Valid until `consume`. Real-time safe.
    @inline(__always)
    public func regions(channel: Int, frames: Int)
        -> (first: UnsafeBufferPointer<Float>, second: UnsafeBufferPointer<Float>)
    {
        let start = readIndex.load(ordering: .relaxed) & mask
        let firstCount = min(frames, capacity - start)
        let ring = UnsafePointer(base(channel))
        return (
            UnsafeBufferPointer(start: ring + start, count: firstCount),
            UnsafeBufferPointer(start: ring, count: frames - firstCount)
        )
    }

    /// Consumer: copies the next `destination.count` readable samples of `channel` into
    /// `destination` (which must not exceed `readableFrames`). Real-time safe.
    public func copyOut(channel: Int, into destination: UnsafeMutableBufferPointer<Float>) {
        guard let d = destination.baseAddress else { return }
        let (first, second) = regions(channel: channel, frames: destination.count)
        if let p = first.baseAddress { d.update(from: p, count: first.count) }
        if let p = second.baseAddress { (d + first.count).update(from: p, count: second.count) }
    }

    /// Consumer: releases `frames` read frames to the producer. Real-time safe.
    @inline(__always)
    public func consume(frames: Int) {
        let r = readIndex.load(ordering: .relaxed)
        assert(frames >= 0 && r + frames <= writeIndex.load(ordering: .acquiring), "consumed unread frames")
        readIndex.store(r + frames, ordering: .releasing)
    }

    /// Consumer: drops everything readable (e.g. after a reconfiguration). Real-time safe.
    public func discardReadable() {
        consume(frames: readableFrames)
    }

    /// Consumer: the places of the gaps (ring indices: the audio before each was captured
    /// before the gap, the audio from it on after) recorded since `seen` (a count the caller
    /// keeps, 0 at first; updated), oldest first; nil when more came than the ring remembers
    /// (`gapSlots`): then only that there were gaps is known. Not real-time safe (allocates).
    public func gaps(since seen: inout Int) -> [Int]? {
        let n = gapCount.load(ordering: .acquiring)
        defer { seen = n }
        guard n - seen <= AudioRing.gapSlots else { return nil }
        let places = (seen..<n).map { gapPlaces[$0 % AudioRing.gapSlots] }
        // A slot overwritten while it was read (the producer went on): as many as lost.
        return gapCount.load(ordering: .acquiring) - seen <= AudioRing.gapSlots ? places : nil
    }

    // MARK: Statistics (any thread)

    /// Frames dropped because the consumer fell behind. Any thread.
    public var overrunFrames: Int { droppedFrames.load(ordering: .relaxed) }
    /// Blocks (process cycles) dropped because the consumer fell behind. Any thread.
    public var overruns: Int { droppedBlocks.load(ordering: .relaxed) }
    /// Frames committed since the start. Any thread.
    public var framesWritten: Int { writeIndex.load(ordering: .acquiring) }
    /// Frames consumed since the start (the index of the next frame to read).
    public var framesRead: Int { readIndex.load(ordering: .relaxed) }
}
