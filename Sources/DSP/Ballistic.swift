#if canImport(Glibc)
import Glibc
#endif

/// A second-order low-pass with unit DC gain, `y'' + 2ζω·y' + ω²·y = ω²·u`, integrated per
/// sample (semi-implicit Euler: ω/fs ≪ 1 for meter time constants, so the error is far below
/// a hundredth of a dB). The moving-coil movement of a VU meter, and the RMS smoothing of a
/// K-meter. Real-time safe.
struct SecondOrderMovement: Sendable {
    /// Natural angular frequency ω (rad/s) times the sample period.
    let omegaDt: Double
    /// 2ζω times the sample period.
    let dampingDt: Double
    /// Position and velocity (per sample).
    var y = 0.0
    var v = 0.0

    init(omega: Double, zeta: Double, sampleRate: Double) {
        omegaDt = omega / sampleRate
        dampingDt = 2 * zeta * omega / sampleRate
    }

    @inline(__always)
    mutating func step(_ u: Double) -> Double {
        // v is in units of (value per second) / fs; y' = v·fs.
        v += omegaDt * omegaDt * (u - y) - dampingDt * v
        y += v
        return y
    }

    /// ω for which a unit step first reaches `fraction` after `seconds`, at damping `zeta`
    /// (found by bisection on the analytic step response).
    static func omega(reaching fraction: Double, after seconds: Double, zeta: Double) -> Double {
        func firstCrossing(_ omega: Double) -> Double {
            // Step response of the second-order system, sampled every 0.1 ms.
            var t = 0.0
            while t < 10 {
                let y: Double
                if zeta < 1 {
                    let wd = omega * (1 - zeta * zeta).squareRoot()
                    y = 1 - exp(-zeta * omega * t) * (cos(wd * t) + zeta / (1 - zeta * zeta).squareRoot() * sin(wd * t))
                } else {  // critically damped
                    y = 1 - exp(-omega * t) * (1 + omega * t)
                }
                if y >= fraction { return t }
                t += 1e-4
            }
            return .infinity
        }
        var lo = 0.1, hi = 1000.0
        for _ in 0..<60 {
            let mid = (lo * hi).squareRoot()
            if firstCrossing(mid) > seconds { lo = mid } else { hi = mid }
        }
        return (lo * hi).squareRoot()
    }
}

/// A VU meter per IEC 60268-17: full-wave average rectification, a movement that reaches 99 %
/// of its final deflection in 300 ms and overshoots by 1.25 % (the standard allows 1–1.5 %),
/// reading in VU relative to a reference level (0 VU: a sine at `referenceDBFS`, default
/// −18 dBFS as in EBU R 68). Scale −20 … +3 VU. One channel; real-time safe.
public struct VUMeter: Sendable {
    /// Rise time to 99 % (s) and overshoot of the movement.
    public static let riseTime = 0.3
    public static let overshoot = 0.0125
    /// The scale, VU.
    public static let scale: ClosedRange<Double> = -20...3

    /// The average rectified value of the reference sine, 2/π·A_ref.
    let referenceAverage: Double
    var movement: SecondOrderMovement

    public init(sampleRate: Double, referenceDBFS: Double = -18) {
        let lnOvershoot = log(VUMeter.overshoot)
        let zeta = -lnOvershoot / (Double.pi * Double.pi + lnOvershoot * lnOvershoot).squareRoot()
        let omega = SecondOrderMovement.omega(reaching: 0.99, after: VUMeter.riseTime, zeta: zeta)
        movement = SecondOrderMovement(omega: omega, zeta: zeta, sampleRate: sampleRate)
        referenceAverage = 2 / Double.pi * pow(10, referenceDBFS / 20)
    }

    /// Feeds samples. Real-time safe.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        var m = movement
        for x in samples { _ = m.step(Double(abs(x))) }
        if abs(m.y) < 1e-20 { m.y = 0; m.v = 0 }
        movement = m
    }

    /// The pointer's deflection relative to 0 VU (1.0 = 0 VU), for step-response checks.
    public var deflection: Double { movement.y / referenceAverage }

    /// The reading in VU (dB relative to the reference), at least −60.
    public var reading: Double { max(-60, 20 * log10(max(1e-9, movement.y / referenceAverage))) }
}

/// A K-System meter (Bob Katz): RMS on a scale whose 0 sits `headroom` dB below full scale —
/// K-20, K-14 or K-12. The RMS is sine-referenced (AES17: a sine reads its peak level), so a
/// sine at −20 dBFS peak reads 0 on K-20. Ballistics as in Fons Adriaensen's jkmeter, the
/// reference Linux K-meter: a critically damped second-order smoothing of the mean square that
/// reaches 99 % about 15 % sooner than a VU (0.26 s), without overshoot. One channel.
public struct KMeter: Sendable {
    /// Supported headrooms: K-20, K-14, K-12.
    public static let headrooms = [20, 14, 12]
    public static let riseTime = 0.26

    public let headroom: Double
    var movement: SecondOrderMovement

    public init(sampleRate: Double, headroom: Int = 20) {
        self.headroom = Double(headroom)
        let omega = SecondOrderMovement.omega(reaching: 0.99, after: KMeter.riseTime, zeta: 1)
        movement = SecondOrderMovement(omega: omega, zeta: 1, sampleRate: sampleRate)
    }

    /// Feeds samples. Real-time safe.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        var m = movement
        for x in samples { _ = m.step(Double(x) * Double(x)) }
        if abs(m.y) < 1e-30 { m.y = 0; m.v = 0 }
        movement = m
    }

    /// Sine-referenced RMS in dBFS (a sine reads its peak level).
    public var rmsDBFS: Double { 10 * log10(max(1e-14, 2 * movement.y)) }
    /// The reading on the K scale, dB (0 = −headroom dBFS).
    public var reading: Double { rmsDBFS + headroom }
}

/// Quasi-peak programme meters per IEC 60268-10 (and their national forms), each with its
/// published scale. Calibrated so a steady 1 kHz sine reads its peak level; the reading falls
/// linearly in dB.
///
/// Type II (BBC, EBU) follows the standard's tone-burst table: 5 kHz bursts of 10, 5, 1.5 and
/// 0.5 ms read 2, 4, 9 and 17 dB below the steady tone (as the BBC's PPM test files give it,
/// github.com/paulheneghanbbc/ppm-testing). One charging path cannot: tuned to the 10 ms
/// point, it reads 1.5 ms bursts 2.1 dB and 0.5 ms bursts 2.3 dB too low. So two paths charge
/// from the rectified signal in parallel, a fast one (τ 1.413 ms, weight 0.658) and a slow one
/// (τ 6.848 ms), and the reading is their weighted sum: fitted to the table, within 0.1 dB at
/// 10 and 5 ms, 0.42 dB at 1.5 ms and 0.2 dB at 0.5 ms (`MeterTests.testPPMTypeIIBurstTable`).
/// Type I (DIN, Nordic) keeps one path, fast enough that a burst of its 5 ms integration time
/// reads 2 dB low; its own burst table is not at hand here.
public enum PPMType: String, CaseIterable, Sendable {
    /// Type I, DIN 45406: integration 5 ms, fall 20 dB in 1.5 s; scale −50 … +5 dB with the
    /// alignment level at −9 dB.
    case din
    /// Type I, Nordic N9: integration 5 ms, fall 20 dB in 1.7 s; scale −36 … +9 dB, alignment
    /// ("TEST") at 0 dB.
    case nordic
    /// Type IIa, BBC: integration 10 ms, fall 24 dB in 2.8 s; scale marks 1 … 7, 4 dB apart,
    /// alignment at 4.
    case bbc
    /// Type IIb, EBU: integration 10 ms, fall 24 dB in 2.8 s; scale −12 … +12 dB, alignment
    /// ("TEST") at 0 dB.
    case ebu

    /// Integration time, seconds.
    public var integrationTime: Double { self == .din || self == .nordic ? 0.005 : 0.010 }
    /// Fall rate, dB per second.
    public var fallRate: Double {
        switch self {
        case .din: return 20 / 1.5
        case .nordic: return 20 / 1.7
        case .bbc, .ebu: return 24 / 2.8
        }
    }
    /// The scale's range, in its own units (dB, or marks for the BBC meter).
    public var scale: ClosedRange<Double> {
        switch self {
        case .din: return -50...5
        case .nordic: return -36...9
        case .bbc: return 1...7
        case .ebu: return -12...12
        }
    }
    /// The reading on this scale of a level `dB` relative to the alignment level.
    public func scaleValue(relativeToAlignment dB: Double) -> Double {
        switch self {
        case .din: return dB - 9
        case .nordic, .ebu: return dB
        case .bbc: return 4 + dB / 4
        }
    }
}

/// One channel of a quasi-peak programme meter (see `PPMType`). Real-time safe after init.
public struct PPMMeter: Sendable {
    public let type: PPMType
    /// Charge coefficient per sample of the slow path (type I: the only one).
    let attack: Float
    /// Charge coefficient per sample of the fast path, and its weight in the reading (type II;
    /// 0 weight for type I).
    let fastAttack: Float
    let fastWeight: Float
    /// Fall factor per sample (linear in dB).
    let release: Float
    /// Gain that makes a steady 1 kHz sine read its peak.
    let gain: Float
    /// Alignment level, dBFS (reads 0 dB relative).
    public let alignmentDBFS: Double
    /// The slow and fast paths' envelopes, linear.
    private var envelope: Float = 0, fastEnvelope: Float = 0

    /// Type II's fast path: time constant (s) and weight, fitted to the burst table.
    static let typeIIFast = (tau: 1.4129e-3, weight: 0.65778)
    /// Type II's slow path: time constant (s).
    static let typeIISlowTau = 6.8480e-3

    public init(type: PPMType, sampleRate: Double, alignmentDBFS: Double = -18) {
        self.type = type
        self.alignmentDBFS = alignmentDBFS
        let r = Float(pow(10, -type.fallRate / 20 / sampleRate))
        release = r
        // The weighted paths' highest reading for a sine of `frequency` lasting `seconds`
        // (by simulation at this rate).
        func envelopePeak(attack a: Float, fast: Float, weight w: Float, frequency: Double, seconds: Double) -> Float {
            var slow: Float = 0, quick: Float = 0, best: Float = 0
            let n = Int(seconds * sampleRate)
            for i in 0..<(n + Int(0.05 * sampleRate)) {
                let x: Float = i < n ? Float(abs(sin(2 * Double.pi * frequency * Double(i) / sampleRate))) : 0
                slow = x > slow ? slow + a * (x - slow) : slow * r
                quick = x > quick ? quick + fast * (x - quick) : quick * r
                best = max(best, (1 - w) * slow + w * quick)
            }
            return best
        }
        switch type {
        case .bbc, .ebu:
            attack = Float(1 - exp(-1 / (PPMMeter.typeIISlowTau * sampleRate)))
            fastAttack = Float(1 - exp(-1 / (PPMMeter.typeIIFast.tau * sampleRate)))
            fastWeight = Float(PPMMeter.typeIIFast.weight)
        case .din, .nordic:
            // The one attack that puts a burst of the integration time 2 dB below the steady tone.
            var lo: Float = 1e-5, hi: Float = 1
            for _ in 0..<40 {
                let a = (lo * hi).squareRoot()
                let burst = envelopePeak(attack: a, fast: 0, weight: 0, frequency: 5000, seconds: type.integrationTime)
                let steady = envelopePeak(attack: a, fast: 0, weight: 0, frequency: 5000, seconds: 0.5)
                if 20 * log10(burst / steady) < -2 { lo = a } else { hi = a }
            }
            attack = (lo * hi).squareRoot()
            fastAttack = 0
            fastWeight = 0
        }
        gain = 1 / envelopePeak(attack: attack, fast: fastAttack, weight: fastWeight, frequency: 1000, seconds: 0.5)
    }

    /// Feeds samples. Real-time safe.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        var env = envelope, quick = fastEnvelope
        let a = attack, f = fastAttack, r = release
        for s in samples {
            let x = abs(s)
            env = x > env ? env + a * (x - env) : env * r
            quick = x > quick ? quick + f * (x - quick) : quick * r
        }
        envelope = env < 1e-12 ? 0 : env
        fastEnvelope = quick < 1e-12 ? 0 : quick
    }

    /// The weighted paths, linear (before the calibration gain).
    static func combined(slow: Float, fast: Float, weight: Float) -> Float { (1 - weight) * slow + weight * fast }

    /// Level in dBFS (peak-calibrated), at least −150.
    public var levelDBFS: Double {
        max(-150, 20 * log10(max(1e-12, Double(PPMMeter.combined(slow: envelope, fast: fastEnvelope, weight: fastWeight) * gain))))
    }
    /// The reading on the type's scale.
    public var reading: Double { type.scaleValue(relativeToAlignment: levelDBFS - alignmentDBFS) }
}

/// A digital sample-peak meter with peak hold and an "over" counter: the held peak rises at
/// once, holds `holdTime` seconds, then falls at `fallRate` dB/s; every run of consecutive
/// samples at or above `clipLevel` (linear, default 1.0 = 0 dBFS) counts as one clip.
public struct DigitalPeakMeter: Sendable {
    private var ballistics: Ballistics
    public let clipLevel: Float
    /// Clips (runs of samples at or above the clip level) since the start or reset.
    public internal(set) var clips = 0
    /// Takes over `other`'s clip count (across a change of sample rate).
    public mutating func continueFrom(_ other: DigitalPeakMeter) { clips += other.clips }
    /// Whether the last sample was at or above the clip level.
    private var inClip = false
    /// Largest |sample| since the last `take` (linear).
    private var recent: Float = 0

    public init(holdTime: Double, fallRate: Double, clipLevel: Float = 1) {
        ballistics = Ballistics(holdTime: holdTime, fallRate: fallRate)
        self.clipLevel = clipLevel
    }

    /// Feeds samples. Real-time safe.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>) {
        var clipping = inClip
        var count = clips
        var peak = recent
        for s in samples {
            let x = abs(s)
            if x > peak { peak = x }
            if x >= clipLevel {
                if !clipping { count += 1 }
                clipping = true
            } else {
                clipping = false
            }
        }
        inClip = clipping
        clips = count
        recent = peak
    }

    /// Applies the ballistics to the peak since the last call over `elapsed` seconds; returns
    /// the held reading in dBFS. Real-time safe.
    public mutating func update(elapsed: Double) -> Double {
        let value = ballistics.update(Double(Decibels.fromAmplitude(recent)), elapsed: elapsed)
        recent = 0
        return value
    }

    /// Clears the hold and the clip count.
    public mutating func reset() {
        ballistics.reset()
        clips = 0
        recent = 0
    }
}

/// Phase correlation of a channel pair: Σ(l·r) / √(Σl²·Σr²) over an exponential window of
/// `timeConstant` seconds (default 0.3 s): +1 for identical channels, −1 for inverted ones,
/// near 0 for independent ones; 0 for silence. Real-time safe.
public struct CorrelationMeter: Sendable {
    private let decay: Double
    private var lr = 0.0, ll = 0.0, rr = 0.0

    public init(sampleRate: Double, timeConstant: Double = 0.3) {
        decay = exp(-1 / (timeConstant * sampleRate))
    }

    public mutating func process(_ left: UnsafeBufferPointer<Float>, _ right: UnsafeBufferPointer<Float>) {
        let k = decay
        var a = lr, b = ll, c = rr
        for i in 0..<min(left.count, right.count) {
            let l = Double(left[i]), r = Double(right[i])
            a = a * k + l * r
            b = b * k + l * l
            c = c * k + r * r
        }
        if b < 1e-30 { b = 0 }
        if c < 1e-30 { c = 0 }
        (lr, ll, rr) = (a, b, c)
    }

    /// −1 … +1.
    public var correlation: Double {
        let d = (ll * rr).squareRoot()
        return d > 1e-20 ? max(-1, min(1, lr / d)) : 0
    }

    /// The pair's levels over the same window: the left leg's less the right's (balance,
    /// dB: positive to the left; 0 when both are silent, ±`Decibels.floor`'s size when one is),
    /// and the mean squares of mid (L + R)/2 and side (L − R)/2 — a mono signal's mid reads
    /// its legs' level and its side nothing; the weights cancel in the balance.
    public var levels: (balanceDB: Double, midSquare: Double, sideSquare: Double) {
        let weight = 1 - decay  // the window's sums are 1/(1 − decay) times a mean
        let mid = max(0, (ll + 2 * lr + rr) / 4 * weight), side = max(0, (ll - 2 * lr + rr) / 4 * weight)
        let limit = -Double(Decibels.floor)
        let balance: Double
        switch (ll > 1e-20, rr > 1e-20) {
        case (true, true): balance = max(-limit, min(limit, 10 * log10(ll / rr)))
        case (true, false): balance = limit
        case (false, true): balance = -limit
        case (false, false): balance = 0
        }
        return (balance, mid, side)
    }
}

/// The VU, PPM and K meters of up to 8 channels at once, each channel in a SIMD lane: the
/// samples of the channels side by side, every recursion advancing 8 channels per step. Each
/// lane computes exactly what the one-channel meter computes (the same operations in the same
/// order, lane by lane). Real-time safe after init.
public struct MeterLanes: Sendable {
    public static let width = 8
    public let channels: Int
    private let vu: VUMeter?, ppm: PPMMeter?, k: KMeter?
    // The movements' and envelope's state, a lane per channel.
    private var vuY = SIMD8<Double>(), vuV = SIMD8<Double>()
    private var kY = SIMD8<Double>(), kV = SIMD8<Double>()
    private var ppmEnvelope = SIMD8<Float>(), ppmFastEnvelope = SIMD8<Float>()

    /// Lanes for `channels` (1…8) channels, with the meters given (nil: not computed); every
    /// lane uses the given meter's settings.
    public init(channels: Int, vu: VUMeter?, ppm: PPMMeter?, k: KMeter?) {
        precondition((1...MeterLanes.width).contains(channels))
        self.channels = channels
        self.vu = vu
        self.ppm = ppm
        self.k = k
    }

    /// Feeds `frames` frames; `source(lane)` points at that channel's samples.
    public mutating func process(frames: Int, from source: (Int) -> UnsafePointer<Float>) {
        // The channels' addresses in a SIMD vector: no array, no allocation.
        var bases = SIMD8<Int>()
        for lane in 0..<MeterLanes.width {
            bases[lane] = lane < channels ? Int(bitPattern: source(lane)) : 0
        }
        var x = SIMD8<Float>()
        let hasVU = vu != nil, hasPPM = ppm != nil, hasK = k != nil
        // VU: v += ω²·(|x| − y) − d·v; y += v. K: the same with x². PPM: attack or release.
        let vuW2 = SIMD8<Double>(repeating: vu.map { $0.movement.omegaDt * $0.movement.omegaDt } ?? 0)
        let vuD = SIMD8<Double>(repeating: vu?.movement.dampingDt ?? 0)
        let kW2 = SIMD8<Double>(repeating: k.map { $0.movement.omegaDt * $0.movement.omegaDt } ?? 0)
        let kD = SIMD8<Double>(repeating: k?.movement.dampingDt ?? 0)
        let attack = SIMD8<Float>(repeating: ppm?.attack ?? 0), release = SIMD8<Float>(repeating: ppm?.release ?? 0)
        let fastAttack = SIMD8<Float>(repeating: ppm?.fastAttack ?? 0)
        var vy = vuY, vv = vuV, ky = kY, kv = kV, env = ppmEnvelope, quick = ppmFastEnvelope
        for i in 0..<frames {
            for lane in 0..<channels {
                x[lane] = UnsafePointer<Float>(bitPattern: bases[lane])![i]
            }
            let a = unsafeBitCast(unsafeBitCast(x, to: SIMD8<UInt32>.self) & 0x7FFF_FFFF, to: SIMD8<Float>.self)  // |x|, exactly
            if hasVU {
                let u = SIMD8<Double>(a)
                vv += vuW2 * (u - vy) - vuD * vv
                vy += vv
            }
            if hasK {
                let xd = SIMD8<Double>(x)
                let u = xd * xd
                kv += kW2 * (u - ky) - kD * kv
                ky += kv
            }
            if hasPPM {
                let rising = env + attack * (a - env)
                env = (env * release).replacing(with: rising, where: a .> env)
                let quickRising = quick + fastAttack * (a - quick)
                quick = (quick * release).replacing(with: quickRising, where: a .> quick)
            }
        }
        // The one-channel meters' flushing of silence, lane by lane.
        let quietVU = (vy .< 1e-20) .& (vy .> -1e-20), quietK = (ky .< 1e-30) .& (ky .> -1e-30)
        vuY = vy.replacing(with: 0, where: quietVU)
        vuV = vv.replacing(with: 0, where: quietVU)
        kY = ky.replacing(with: 0, where: quietK)
        kV = kv.replacing(with: 0, where: quietK)
        ppmEnvelope = env.replacing(with: 0, where: env .< 1e-12)
        ppmFastEnvelope = quick.replacing(with: 0, where: quick .< 1e-12)
    }

    /// Channel `lane`'s VU reading (as `VUMeter.reading`); -60 without a VU meter.
    public func vuReading(lane: Int) -> Double {
        guard let vu else { return -60 }
        return max(-60, 20 * log10(max(1e-9, vuY[lane] / vu.referenceAverage)))
    }

    /// Channel `lane`'s PPM reading (as `PPMMeter.reading`); -60 without a PPM.
    public func ppmReading(lane: Int) -> Double {
        guard let ppm else { return -60 }
        let combined = PPMMeter.combined(slow: ppmEnvelope[lane], fast: ppmFastEnvelope[lane], weight: ppm.fastWeight)
        let level = max(-150, 20 * log10(max(1e-12, Double(combined * ppm.gain))))
        return ppm.type.scaleValue(relativeToAlignment: level - ppm.alignmentDBFS)
    }

    /// Channel `lane`'s K-System reading (as `KMeter.reading`); -60 without a K meter.
    public func kReading(lane: Int) -> Double {
        guard let k else { return -60 }
        return 10 * log10(max(1e-14, 2 * kY[lane])) + k.headroom
    }
}
