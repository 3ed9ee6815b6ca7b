/// Sample peak and RMS of a block of samples, in dBFS.
///
/// 0 dBFS is a sample value of ±1.0; so a full-scale sine reads 0.00 dBFS peak and
/// −3.01 dBFS RMS. Levels never read below `Decibels.floor`.
public struct BlockLevel: Equatable, Sendable {
    /// Largest absolute sample value (linear).
    public var peak: Float
    /// Mean of the squared samples (linear power).
    public var meanSquare: Float

    public init(peak: Float = 0, meanSquare: Float = 0) {
        self.peak = peak
        self.meanSquare = meanSquare
    }

    /// Measures `block`. Real-time safe.
    public init(_ block: UnsafeBufferPointer<Float>) {
        peak = Vector.maxMagnitude(block)
        meanSquare = block.isEmpty ? 0 : Vector.sumOfSquares(block) / Float(block.count)
    }

    /// Sample peak in dBFS.
    public var peakDBFS: Float { Decibels.fromAmplitude(peak) }
    /// RMS in dBFS.
    public var rmsDBFS: Float { Decibels.fromPower(meanSquare) }
}

/// Meter ballistics of the classic peak/average meter (the original AVMeter example): the
/// reading rises instantly to a louder input, holds for `holdTime`, then falls at `fallRate`
/// (dB per second) until the input catches it again.
///
/// Works in dB; `update` is called once per analysis block with the block's duration.
/// Real-time safe.
public struct Ballistics: Equatable, Sendable {
    /// How long a new maximum is held before falling, in seconds (0: no hold).
    public var holdTime: Double
    /// Fall rate after the hold, in dB per second.
    public var fallRate: Double
    /// The lowest reading, in dB.
    public var floor: Double
    /// Current reading, in dB.
    public private(set) var value: Double
    /// Hold time left, in seconds.
    private var holdLeft: Double = 0

    public init(holdTime: Double, fallRate: Double, floor: Double = Double(Decibels.floor)) {
        self.holdTime = holdTime
        self.fallRate = fallRate
        self.floor = floor
        value = floor
    }

    /// Feeds one block's level (`input`, dB) that lasted `elapsed` seconds; returns the new
    /// reading in dB. Real-time safe.
    @discardableResult
    public mutating func update(_ input: Double, elapsed: Double) -> Double {
        let x = input.isNaN ? floor : max(floor, input)
        if x >= value {
            value = x
            holdLeft = holdTime
        } else {
            // Spend what is left of the hold, then fall for the rest of the block.
            let holding = min(holdLeft, elapsed)
            holdLeft -= holding
            value = max(x, value - fallRate * (elapsed - holding))
        }
        return value
    }

    /// Drops the reading to the floor.
    public mutating func reset() {
        value = floor
        holdLeft = 0
    }
}

/// Maps a level in dB to a display value 0 ... 1: `floor` dB (default −60) → 0, 0 dB → 1,
/// linear in dB between them (the original app's −60 ... 0 dBFS mapping).
public struct MeterScale: Equatable, Sendable {
    /// Level shown as 0, in dB (negative).
    public var floor: Float

    public init(floor: Float = -60) {
        self.floor = floor
    }

    /// `clamp((dB − floor) / −floor, 0, 1)`. Real-time safe.
    @inlinable
    public func displayValue(_ decibels: Float) -> Float {
        guard decibels == decibels else { return 0 }
        return min(1, max(0, (decibels - floor) / -floor))
    }
}
