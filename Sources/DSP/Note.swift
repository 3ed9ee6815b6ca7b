#if canImport(Glibc)
import Glibc
#endif

/// A musical note: the nearest equal-tempered semitone to a frequency, and how far off it is.
///
/// MIDI convention: A4 = MIDI 69 = 440 Hz (settable reference), middle C = C4 = MIDI 60,
/// sharps spelled `C#`.
public struct Note: Equatable, Sendable, CustomStringConvertible {
    /// MIDI note number of the nearest semitone (60 = C4).
    public let midi: Int
    /// Deviation of the frequency from that semitone, in cents (−50 ... +50).
    public let cents: Double

    static let names = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]

    /// The lowest frequency that gets a note name, in Hz.
    public static let minimumFrequency: Double = 30

    /// The nearest note to `frequency` (Hz), or nil below `minimumFrequency` or for a
    /// non-finite input. Real-time safe.
    public init?(frequency: Double, reference a4: Double = 440) {
        guard frequency.isFinite, frequency >= Note.minimumFrequency else { return nil }
        let exact = 69 + 12 * log2(frequency / a4)
        let nearest = exact.rounded()
        midi = Int(nearest)
        cents = 100 * (exact - nearest)
    }

    /// A note by MIDI number, exactly on pitch.
    public init(midi: Int) {
        self.midi = midi
        cents = 0
    }

    /// Pitch class, e.g. `C#`. Real-time safe (a constant string).
    public var pitchClass: String { Note.names[((midi % 12) + 12) % 12] }

    /// Octave number, MIDI convention (middle C is in octave 4).
    public var octave: Int { Int((Double(midi) / 12).rounded(.down)) - 1 }

    /// The note's name, e.g. `A4`, `C#4`, `C-1`. Allocates only beyond the small-string size.
    public var name: String { "\(pitchClass)\(octave)" }

    /// The equal-tempered frequency of this note's semitone, in Hz.
    public func nominalFrequency(reference a4: Double = 440) -> Double {
        a4 * pow(2, Double(midi - 69) / 12)
    }

    public var description: String { name }
}
