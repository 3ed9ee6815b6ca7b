#if canImport(Glibc)
import Glibc
#endif

/// The meter a display draws as a bar: the snapshot's `meter` value 0 … 1 maps linearly onto
/// `range`, in `unit`; the bar is green below `yellowFrom`, yellow up to `redFrom`, red above.
public struct DisplayScale: Sendable, Equatable {
    /// The quantity's short name ("RMS", "VU", "PPM EBU", "K-20", "M", …).
    public var name: String
    /// Its unit ("dBFS", "dBTP", "VU", "dB", "LUFS", "mark").
    public var unit: String
    public var range: ClosedRange<Double>
    public var yellowFrom: Double
    public var redFrom: Double
    /// Scale marks to label, in the quantity's units.
    public var marks: [Double]
    /// True when the snapshot's `hold` (sample peak, `--hold` s) is on this scale (the dBFS
    /// meters); otherwise the display holds the bar's own maximum for `--hold` seconds.
    public var holdIsSamplePeak: Bool

    public init(
        name: String, unit: String, range: ClosedRange<Double>, yellowFrom: Double, redFrom: Double,
        marks: [Double], holdIsSamplePeak: Bool
    ) {
        self.name = name
        self.unit = unit
        self.range = range
        self.yellowFrom = yellowFrom
        self.redFrom = redFrom
        self.marks = marks
        self.holdIsSamplePeak = holdIsSamplePeak
    }

    /// The reading of a 0 … 1 meter value, in `unit`.
    public func value(ofFraction x: Float) -> Double {
        range.lowerBound + Double(min(1, max(0, x))) * (range.upperBound - range.lowerBound)
    }

    /// The 0 … 1 position of a reading.
    public func fraction(of value: Double) -> Double {
        min(1, max(0, (value - range.lowerBound) / (range.upperBound - range.lowerBound)))
    }

    /// The zone of a reading.
    public func zone(of value: Double) -> Zone {
        value >= redFrom ? .red : value >= yellowFrom ? .yellow : .green
    }

    public enum Zone: Sendable { case green, yellow, red }

    /// Marks every `step` units from the range's bottom to its top, inclusive.
    public static func marks(_ range: ClosedRange<Double>, step: Double) -> [Double] {
        var out: [Double] = []
        var v = (range.lowerBound / step).rounded(.up) * step
        while v <= range.upperBound + 1e-9 {
            out.append(v)
            v += step
        }
        return out
    }
}
