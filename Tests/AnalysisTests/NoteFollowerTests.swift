import DSP
import Outputs
import XCTest

@testable import Analysis

/// `--midi-notes`' note logic: the two-hop debounce, note changes, channel mapping and velocity.
final class NoteFollowerTests: XCTestCase {
    /// One hop's snapshot: each channel's note (nil: none named) at `rms` dBFS.
    private func hop(_ notes: [Int?], rms: Float = -15) -> Snapshot {
        var snapshot = Snapshot(channels: notes.count, barCount: 1)
        for (c, midi) in notes.enumerated() {
            snapshot.channels[c].pitchNote = midi.map { Note(midi: $0) }
            snapshot.channels[c].rmsDBFS = rms
        }
        return snapshot
    }

    private func run(_ follower: inout NoteFollower, _ hops: [[Int?]], rms: Float = -15) -> [[UInt8]] {
        var events: [[UInt8]] = []
        for notes in hops { follower.update(hop(notes, rms: rms)) { events.append($0) } }
        return events
    }

    func testANoteStartsAndStopsAfterTwoHopsAndAOneHopBlipIsIgnored() {
        var f = NoteFollower(channels: 1)
        XCTAssertEqual(run(&f, [[69]]), [], "one hop is not yet a note")
        XCTAssertEqual(run(&f, [[69]]), [[0x90, 69, 95]], "the second hop starts it (−15 dBFS: velocity 95)")
        XCTAssertEqual(run(&f, [[69], [69], [69]]), [], "a steady note does not retrigger")
        // A one-hop blip of another note, or of no note, changes nothing.
        XCTAssertEqual(run(&f, [[71], [69], [nil], [69], [69]]), [])
        // Two hops of silence end it.
        XCTAssertEqual(run(&f, [[nil]]), [])
        XCTAssertEqual(run(&f, [[nil]]), [[0x80, 69, 64]])
        XCTAssertEqual(run(&f, [[nil], [nil]]), [])
    }

    func testAChangeIsNoteOffThenNoteOnAndAllOffEndsEveryNote() {
        var f = NoteFollower(channels: 1)
        _ = run(&f, [[69], [69]])
        XCTAssertEqual(run(&f, [[71], [71]]), [[0x80, 69, 64], [0x90, 71, 95]])
        // A note that alternates every hop never settles: nothing changes.
        XCTAssertEqual(run(&f, [[72], [74], [72], [74]]), [])
        var off: [[UInt8]] = []
        f.allOff { off.append($0) }
        XCTAssertEqual(off, [[0x80, 71, 64]])
    }

    /// Channel N on MIDI channel N, wrapping above 16: input 2 → status 0x91, input 18 → 0x91.
    func testChannelsMapToMIDIChannelsAndWrapAbove16() {
        var f = NoteFollower(channels: 18)
        var notes = [Int?](repeating: nil, count: 18)
        notes[1] = 60
        notes[17] = 62
        notes[15] = 64
        let events = run(&f, [notes, notes])
        XCTAssertEqual(events, [[0x91, 60, 95], [0x9F, 64, 95], [0x91, 62, 95]])
    }

    /// Velocity: 1 at −60 dBFS and below (and for −inf), 127 at 0 dBFS and above, linear between.
    func testVelocityFollowsTheLevel() {
        for (rms, velocity) in [(Float(-80), UInt8(1)), (-.infinity, 1), (-60, 1), (-30, 64), (0, 127), (12, 127), (.nan, 1)] {
            var f = NoteFollower(channels: 1)
            XCTAssertEqual(run(&f, [[69], [69]], rms: rms).first?[2], velocity, "at \(rms) dBFS")
        }
    }
}
