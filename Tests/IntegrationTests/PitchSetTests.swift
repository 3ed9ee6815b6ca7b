#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// The note played, on real instrument notes: 50 notes of 16 General MIDI instruments (organs
/// with 16′ ranks, strings, brass, woodwinds, piano, guitar, bass) rendered by FluidSynth from
/// a soundfont other than the FluidR3 the pitch code was first written against (TimGM6mb,
/// Debian's `timgm6mb-soundfont`), read by `jackvu analyze --stream --send pitch` and by
/// aubio's `aubiopitch` (yinfft, its default) on the same files.
///
/// A note is read right when the median of its frames is within half a semitone of the key
/// played. `JACKVU_PITCH_SOUNDFONT` renders the set from another soundfont and prints the table
/// without asserting (BENCHMARKS.md has both tables).
final class PitchSetTests: XCTestCase {
    /// General MIDI program (0-based), its name, and the keys played.
    static let instruments: [(program: UInt8, name: String, keys: [UInt8])] = [
        (0, "Acoustic Grand Piano", [36, 60, 84]),
        (16, "Drawbar Organ (16′ rank)", [36, 48, 60, 72]),
        (19, "Church Organ (16′ rank)", [36, 48, 60, 72]),
        (20, "Reed Organ", [48, 60, 72]),
        (40, "Violin", [55, 69, 81]),
        (42, "Cello", [36, 48, 62]),
        (48, "String Ensemble 1", [48, 60, 72]),
        (56, "Trumpet", [54, 60, 72]),
        (57, "Trombone", [40, 52, 60]),
        (60, "French Horn", [41, 53, 65]),
        (71, "Clarinet", [50, 62, 74]),
        (73, "Flute", [60, 72, 84]),
        (68, "Oboe", [60, 70, 80]),
        (24, "Nylon Guitar", [40, 52, 64]),
        (32, "Acoustic Bass", [28, 40, 52]),
        (70, "Bassoon", [34, 46, 58]),
    ]
    /// Each note sounds 1.5 s and is followed by 1 s of silence (120 bpm, 480 ticks a beat).
    static let noteSeconds = 1.5, stepSeconds = 2.5

    /// A format-0 MIDI file: per instrument a program change, then its keys one after another.
    static func midiFile() -> [UInt8] {
        func quantity(_ value: Int) -> [UInt8] {
            var bytes = [UInt8(value & 0x7F)]
            var v = value >> 7
            while v > 0 { bytes.insert(UInt8(v & 0x7F) | 0x80, at: 0); v >>= 7 }
            return bytes
        }
        var track: [UInt8] = []
        var gap = 0
        for instrument in instruments {
            track += quantity(gap) + [0xC0, instrument.program]
            gap = 0
            for key in instrument.keys {
                track += quantity(gap) + [0x90, key, 100]
                track += quantity(1440) + [0x80, key, 0]  // 1.5 s
                gap = 960  // 1 s
            }
        }
        track += quantity(gap) + [0xFF, 0x2F, 0x00]
        func be32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> (24 - 8 * $0)) & 0xFF) } }
        return Array("MThd".utf8) + be32(6) + [0, 0, 0, 1, 0x01, 0xE0]
            + Array("MTrk".utf8) + be32(track.count) + track
    }

    static func midi(_ hz: Double) -> Double { 69 + 12 * log2(hz / 440) }

    func testInstrumentNotesAgainstAubio() throws {
        let custom = ProcessInfo.processInfo.environment["JACKVU_PITCH_SOUNDFONT"]
        let soundfont = custom ?? "/usr/share/sounds/sf2/TimGM6mb.sf2"
        guard FileManager.default.fileExists(atPath: soundfont) else {
            throw FixtureError("\(soundfont) is missing (the README's test command installs timgm6mb-soundfont)")
        }
        let directory = try makeTemporaryFolder("pitch")
        defer { removeTemporaryFolder(directory) }
        let mid = directory.appendingPathComponent("set.mid").path
        let stereo = directory.appendingPathComponent("stereo.wav").path
        let wav = directory.appendingPathComponent("set.wav").path
        try Data(Self.midiFile()).write(to: URL(fileURLWithPath: mid))
        // No reverb or chorus: each note ends before the next; mono, so both tools read the
        // same samples (aubio mixes channels down; jackvu reads channel 1).
        let render = try Executables.run(try Executables.resolve("fluidsynth"),
                                         ["-ni", "-q", "-R", "0", "-C", "0", "-g", "0.5", "-r", "48000", "-F", stereo, soundfont, mid],
                                         timeout: 120)
        XCTAssertEqual(render.status, 0, render.stderr)
        XCTAssertEqual(try Executables.run("sox", [stereo, wav, "remix", "1-2"]).status, 0)

        let jackvu = try Executables.run(try Executables.product("jackvu"),
                                         ["analyze", "--stream", "--send", "pitch", "--format", "json", wav], timeout: 300)
        XCTAssertEqual(jackvu.status, 0, jackvu.stderr)
        // (time, Hz) of every hop that names a note (confidence ≥ the default 0.8).
        let ours: [(Double, Double)] = jackvu.stdout.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let t = o["time_s"] as? Double,
                  let ch = (o["channels"] as? [[String: Any]])?.first,
                  let hz = ch["pitch_hz"] as? Double, hz > 0 else { return nil }
            return (t, hz)
        }
        let aubio = try Executables.run(try Executables.resolve("aubiopitch"), ["-i", wav, "-B", "4096", "-H", "1024"], timeout: 120)
        XCTAssertEqual(aubio.status, 0, aubio.stderr)
        let theirs: [(Double, Double)] = aubio.stdout.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ").compactMap { Double($0) }
            return f.count == 2 && f[1] > 0 ? (f[0], f[1]) : nil
        }

        // Frames from 0.4 s after the key (past the attack) to its release; the median note.
        func median(_ frames: [(Double, Double)], _ from: Double, _ to: Double) -> Double? {
            let v = frames.filter { $0.0 >= from && $0.0 <= to }.map { Self.midi($0.1) }.sorted()
            return v.isEmpty ? nil : v[v.count / 2]
        }
        var step = 0, ourRight = 0, theirRight = 0, total = 0
        var wrong: [String] = []
        var table = "| instrument | key | jackvu | aubio |\n|---|---|---|---|\n"
        for instrument in Self.instruments {
            for key in instrument.keys {
                let start = Double(step) * Self.stepSeconds
                step += 1
                let a = median(ours, start + 0.4, start + Self.noteSeconds)
                let b = median(theirs, start + 0.4, start + Self.noteSeconds)
                let aRight = a.map { abs($0 - Double(key)) < 0.5 } ?? false
                let bRight = b.map { abs($0 - Double(key)) < 0.5 } ?? false
                total += 1
                if aRight { ourRight += 1 } else { wrong.append("\(instrument.name) \(key)") }
                if bRight { theirRight += 1 }
                func cell(_ m: Double?, _ right: Bool) -> String {
                    (m.map { String(format: "%.2f", $0) } ?? "–") + (right ? "" : " ✗")
                }
                table += "| \(instrument.name) | \(key) | \(cell(a, aRight)) | \(cell(b, bRight)) |\n"
            }
        }
        print(table + "jackvu right on \(ourRight) of \(total) notes, aubio on \(theirRight)")
        if custom != nil { return }

        XCTAssertGreaterThanOrEqual(Self.instruments.count, 10)
        // Every note right but one: the church organ's C5, whose 16′ rank is 2 dB below its
        // loudest partial with a third harmonic only 10.7 dB down (a tone of its own by every
        // measure jackvu has: see YINPitch.subOctaveMinSineFraction). Before the sub-octave
        // rule all 8 notes of both 16′ organs read an octave low.
        XCTAssertEqual(wrong, ["Church Organ (16′ rank) 72"], "notes read wrong")
        XCTAssertGreaterThan(ourRight, theirRight, "aubio is the reference to beat on the same notes")
    }
}
