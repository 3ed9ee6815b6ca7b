import DSP
import Vocabulary

/// Turns each channel's pitch (the YIN note, named only when confident) into MIDI note-on and
/// note-off messages for the `notes` port (`--midi-notes`).
///
/// Timing: a note starts when the same note has been named on `stableHops` successive hops
/// (2: about 43 ms at 48 kHz with the default 4096-sample FFT and 75 % overlap), and stops
/// when no note (or another note) has been named for `stableHops` hops; a change of note is a
/// note-off followed by a note-on. Channel N plays on MIDI channel N (channels above 16 wrap).
/// Velocity follows the block's RMS: 1 at −60 dBFS … 127 at 0 dBFS.
public struct NoteFollower {
    /// Hops a note (or its absence) must last before it counts.
    static let stableHops = 2

    private var playing: [Int?]
    private var candidate: [Int?]
    private var count: [Int]

    public init(channels: Int) {
        playing = Array(repeating: nil, count: channels)
        candidate = Array(repeating: nil, count: channels)
        count = Array(repeating: 0, count: channels)
    }

    /// The MIDI messages for this hop's snapshot (3 bytes each), in order.
    public mutating func update(_ snapshot: Snapshot, emit: ([UInt8]) -> Void) {
        for (c, ch) in snapshot.channels.enumerated() where c < playing.count {
            let note = ch.pitchNote.map(\.midi).flatMap { (0...127).contains($0) ? $0 : nil }
            if note == candidate[c] {
                count[c] += 1
            } else {
                candidate[c] = note
                count[c] = 1
            }
            guard count[c] >= NoteFollower.stableHops, candidate[c] != playing[c] else { continue }
            let status = UInt8(c % 16)
            if let old = playing[c] { emit([0x80 | status, UInt8(old), 64]) }
            if let new = candidate[c] {
                // Clamped before the conversion: a level of any size (or -inf) gives 1...127.
                let scaled = ((Double(ch.rmsDBFS) + 60) / 60 * 127).rounded()
                let velocity = scaled >= 1 ? Int(min(127, scaled)) : 1
                emit([0x90 | status, UInt8(new), UInt8(velocity)])
            }
            playing[c] = candidate[c]
        }
    }

    /// Note-offs for every playing note (when stopping).
    public mutating func allOff(emit: ([UInt8]) -> Void) {
        for c in playing.indices {
            if let old = playing[c] { emit([0x80 | UInt8(c % 16), UInt8(old), 64]) }
            playing[c] = nil
        }
    }
}
