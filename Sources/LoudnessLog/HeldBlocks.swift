import Outputs

/// Per programme, its newest 100 ms block not yet in the log, and the largest true and sample
/// peaks of the audio not yet given to a block. A block carries the peaks of the audio after
/// the block before it, and the audio after the last block has no block to follow it: each
/// block is held until the next one comes, taking the peaks that arrive meanwhile, and the
/// last at the end (`finish`) takes the rest — so that the log holds every peak of the audio.
/// The live log's recorder (`LogRecorder`, at each update) and a file's (`BlockLogObserver`, as
/// the audio is read) both keep their blocks here.
public struct HeldBlocks {
    private struct Block {
        var t: Double, index: Int, power: Double
        var truePeak: Double?, samplePeak: Double?, fault: FaultCause?
    }
    private var held: [Block?]
    /// Per programme, the peaks no block has taken yet (nil: none), and the fault labelling them.
    private var pending: [(truePeak: Double?, samplePeak: Double?, fault: FaultCause?)]

    public init(programmes: Int) {
        held = Array(repeating: nil, count: programmes)
        pending = Array(repeating: (nil, nil, nil), count: programmes)
    }

    /// Raises programme `p`'s pending peaks by `truePeak` and `samplePeak` (dBTP, dBFS; nil:
    /// none); a `fault` labels them (until a block takes them).
    public mutating func raise(programme p: Int, truePeak: Double?, samplePeak: Double?, fault: FaultCause? = nil) {
        pending[p] = (largerPeak(pending[p].truePeak, truePeak), largerPeak(pending[p].samplePeak, samplePeak), fault ?? pending[p].fault)
    }

    /// Programme `p`'s new blocks, oldest first (`t`: its end on the log's clock): the held
    /// block is written to `log` and so is each new one but the newest, which is held. The
    /// newest takes the pending peaks — a batch of blocks came with one update, whose peaks
    /// end with the newest block's audio — and every one of them the pending fault.
    public mutating func hold(programme p: Int, _ blocks: [(t: Double, index: Int, power: Double)], to log: LogWriter?) {
        guard let newest = blocks.indices.last else { return }
        let (truePeak, samplePeak, fault) = pending[p]
        for (i, b) in blocks.enumerated() {
            write(programme: p, to: log)
            held[p] = Block(t: b.t, index: b.index, power: b.power,
                            truePeak: i == newest ? truePeak : nil, samplePeak: i == newest ? samplePeak : nil, fault: fault)
        }
        pending[p] = (nil, nil, nil)
    }

    /// The end of the audio: programme `p`'s pending peaks join its held block, which is
    /// written to `log`, with their fault.
    public mutating func finish(programme p: Int, to log: LogWriter?) {
        if var last = held[p] {
            last.truePeak = largerPeak(last.truePeak, pending[p].truePeak)
            last.samplePeak = largerPeak(last.samplePeak, pending[p].samplePeak)
            last.fault = pending[p].fault ?? last.fault
            held[p] = last
        }
        pending[p] = (nil, nil, nil)
        write(programme: p, to: log)
    }

    /// Writes every held block as it is (the log closes early: the LV2 plugin's set to
    /// another path).
    public mutating func flush(to log: LogWriter?) {
        for p in held.indices { write(programme: p, to: log) }
    }

    private mutating func write(programme p: Int, to log: LogWriter?) {
        guard let b = held[p] else { return }
        log?.block(programme: p, t: b.t, index: b.index, power: b.power, truePeak: b.truePeak, samplePeak: b.samplePeak, fault: b.fault)
        held[p] = nil
    }
}

/// The larger of two peaks (dB), either of which may be missing (nil: none yet).
public func largerPeak(_ a: Double?, _ b: Double?) -> Double? {
    guard let a else { return b }
    guard let b else { return a }
    return max(a, b)
}
