#if canImport(Glibc)
import Glibc
#endif

/// Decibel conversions. Real-time safe.
public enum Decibels {
    /// The lowest level jackvu reports, in dB (dBFS for levels): digital silence reads this.
    public static let floor: Float = -120

    /// `20 * log10(max(amplitude, 10^(floor/20)))`: an amplitude ratio in dB, never below
    /// `floor` (default `Decibels.floor`). NaN reads as the floor. Real-time safe.
    @inlinable
    public static func fromAmplitude(_ amplitude: Float, floor: Float = Decibels.floor) -> Float {
        let a = Swift.abs(amplitude)
        guard a > 0 else { return floor }  // also false for NaN
        return Swift.max(floor, 20 * log10f(a))
    }

    /// `10 * log10(power)`, never below `floor`. Real-time safe.
    @inlinable
    public static func fromPower(_ power: Float, floor: Float = Decibels.floor) -> Float {
        guard power > 0 else { return floor }  // also false for NaN
        return Swift.max(floor, 10 * log10f(power))
    }

    /// `10^(dB / 20)`: the amplitude ratio of a level in dB. Real-time safe.
    @inlinable
    public static func toAmplitude(_ decibels: Float) -> Float {
        powf(10, decibels / 20)
    }
}
