#if canImport(Glibc)
import Glibc
#endif

/// The 1/3-octave bands of up to 8 channels at once: `ThirdOctaveBank`'s bands, stages and
/// filters, with the filters of several channels side by side in the lanes of one
/// single-precision vector. A vector holds `channelWidth` channels (1, 2, 4 or 8: the channel
/// count rounded up to a power of two) times `8 / channelWidth` bands of one stage — 8
/// channels × 1 band, 4 × 2, 2 × 4 or 1 × 8 — so every lane does useful work whatever the
/// channel count; the anti-alias low-pass into each next stage runs for all the channels in
/// one vector too.
///
/// Single precision doubles what one SIMD instruction does against the bank's double-precision
/// band pairs; the multirate stages keep every band between 0.11 and 0.22 of its stage's rate
/// (0.45 at the full rate), where single-precision poles stay well inside the unit circle.
/// The sums of squares are carried in double precision (single precision for 64 samples at a
/// time). N channels read exactly what each channel alone reads in lanes (tested); against
/// the double-precision bank the readings differ by single precision's rounding, which sits
/// far below the input: measured at most 0.0003 dB at 44.1 and 48 kHz and 0.006 dB in a band
/// at −97.6 dBFS at 96 kHz, tested within 0.005 dB above −90 dBFS and 0.02 dB below — far
/// below what a display shows or IEC 61260's tolerances (class 1 met, tested). Real-time safe
/// after init.
public struct ThirdOctaveLanes: Sendable {
    public static let width = 8
    /// Samples summed in single precision before they are added to the double-precision sums.
    static let partialLength = 64

    /// Channels (1 … 8).
    public let channels: Int
    /// Lanes per band in a vector: the channel count rounded up to a power of two.
    public let channelWidth: Int
    /// The exact centre frequencies of the bands kept, Hz (as `ThirdOctaveBank.centres`).
    public let centres: [Double]
    public let sampleRate: Double
    private var stages: [Stage]
    /// Stage inputs: lane l carries channel `l % channelWidth`; `blockSize >> k` samples for
    /// stage k.
    private var inputs: [[SIMD8<Float>]]

    /// One second-order section's poles per lane, in direct form I with its numerator left to
    /// the caller: its state is its own last two outputs, y[n − 1] and y[n − 2].
    ///
    /// Every section of the bands has the numerator b₀(1 − z⁻²) (`ThirdOctaveBank.design`:
    /// zeros at DC and at the Nyquist frequency), every section of the anti-alias low-pass
    /// b₀(1 + 2z⁻¹ + z⁻²). So a section's numerator is its input's sum or difference with that
    /// input's own past — which is the previous section's state — and the four gains b₀ are
    /// taken out of the recursion and applied once: a band's to its sum of squares (squared),
    /// the low-pass's to each sample it keeps. A band section is then 2 multiplies and 3 adds
    /// where the transposed direct form II took 5 and 4, and its first section's numerator,
    /// x[n] − x[n − 2], is the same for every band of a stage: computed once.
    struct Poles: Sendable {
        var a1 = SIMD8<Float>(), a2 = SIMD8<Float>()
        var y1 = SIMD8<Float>(), y2 = SIMD8<Float>()

        /// Lane l gets `lanes[l]`'s denominator.
        init(_ lanes: [BiquadCoefficients]) {
            for l in 0..<ThirdOctaveLanes.width {
                a1[l] = Float(lanes[l].a1)
                a2[l] = Float(lanes[l].a2)
            }
        }

        /// The output for numerator output `u`.
        @inline(__always)
        mutating func process(_ u: SIMD8<Float>) -> SIMD8<Float> {
            let y = u - a1 * y1 - a2 * y2
            y2 = y1
            y1 = y
            return y
        }

        /// The output for `u`, as the next band section's numerator: y[n] − y[n − 2].
        @inline(__always)
        mutating func difference(_ u: SIMD8<Float>) -> SIMD8<Float> {
            let y = u - a1 * y1 - a2 * y2
            let next = y - y2
            y2 = y1
            y1 = y
            return next
        }

        /// Two samples at once (the state loaded and stored once for both): `difference` of
        /// `u.0`, then of `u.1`.
        @inline(__always)
        mutating func differences(_ u: (SIMD8<Float>, SIMD8<Float>)) -> (SIMD8<Float>, SIMD8<Float>) {
            let (p1, p2) = (y1, y2)
            let ya = u.0 - a1 * p1 - a2 * p2
            let yb = u.1 - a1 * ya - a2 * p1
            y2 = ya
            y1 = yb
            return (ya - p2, yb - p1)
        }

        /// `process` of `u.0`, then of `u.1`.
        @inline(__always)
        mutating func process(_ u: (SIMD8<Float>, SIMD8<Float>)) -> (SIMD8<Float>, SIMD8<Float>) {
            let (p1, p2) = (y1, y2)
            let ya = u.0 - a1 * p1 - a2 * p2
            let yb = u.1 - a1 * ya - a2 * p1
            y2 = ya
            y1 = yb
            return (ya, yb)
        }

        /// The output for `u`, as the next low-pass section's numerator: y[n] + 2y[n − 1] +
        /// y[n − 2].
        @inline(__always)
        mutating func sum(_ u: SIMD8<Float>) -> SIMD8<Float> {
            let y = u - a1 * y1 - a2 * y2
            let next = y + 2 * y1 + y2
            y2 = y1
            y1 = y
            return next
        }

        /// Flushes tiny state values to zero, so silence does not leave denormals behind.
        mutating func flushDenormals() {
            let tiny = SIMD8<Float>(repeating: 1e-30)
            y1.replace(with: 0, where: y1 .< tiny .& y1 .> -tiny)
            y2.replace(with: 0, where: y2 .< tiny .& y2 .> -tiny)
        }
    }

    struct Stage: Sendable {
        /// Four sections' poles (`ThirdOctaveBank.sectionsPerBand`) per group of lanes.
        var poles: [Poles]
        /// Per group: the square of the product of its sections' gains b₀, lane by lane.
        var gainSquared: [SIMD8<Double>]
        /// Band index of lane l of group g at `8g + l`; -1 for a padding lane.
        var bands: [Int]
        /// Sum of squares per group since the last `takeLevels` (before `gainSquared`), and
        /// the samples summed.
        var energy: [SIMD8<Double>]
        /// The single-precision part of the sums (at most `partialLength` samples).
        var partial: [SIMD8<Float>]
        var count = 0
        /// The stage's last two input samples (the first sections' numerators).
        var x1 = SIMD8<Float>(), x2 = SIMD8<Float>()
        /// The anti-alias low-pass into the next stage (empty for the last stage), the product
        /// of its sections' gains, and its last two input samples.
        var lowPass: [Poles]
        var lowPassGain: Float = 1
        var lowX1 = SIMD8<Float>(), lowX2 = SIMD8<Float>()
        var keepNext = false
    }

    /// Bands for `channels` (1 … 8) channels at `sampleRate`. Not real-time safe.
    public init(channels: Int, sampleRate: Double) {
        precondition((1...ThirdOctaveLanes.width).contains(channels))
        self.channels = channels
        self.sampleRate = sampleRate
        var cw = 1
        while cw < channels { cw *= 2 }
        channelWidth = cw
        let (centres, stageOf) = ThirdOctaveBank.plan(sampleRate: sampleRate)
        self.centres = centres
        let stageCount = (stageOf.max() ?? 0) + 1
        let slots = ThirdOctaveLanes.width / cw
        var stages: [Stage] = []
        for k in 0..<stageCount {
            let rate = sampleRate / Double(1 << k)
            let members = centres.indices.filter { stageOf[$0] == k }
            let designs = members.map { b in
                ThirdOctaveBank.design(low: centres[b] * pow(10, -0.05), high: centres[b] * pow(10, 0.05), sampleRate: rate)
            }
            for d in designs { for c in d { precondition(c.b1 == 0 && c.b2 == -c.b0, "a band section's numerator is b0(1 − z⁻²)") } }
            var poles: [Poles] = []
            var gains: [SIMD8<Double>] = []
            var bands: [Int] = []
            let groups = (members.count + slots - 1) / slots
            for g in 0..<groups {
                var laneDesigns: [[BiquadCoefficients]] = []
                for l in 0..<ThirdOctaveLanes.width {
                    let m = g * slots + l / cw
                    laneDesigns.append(designs[min(m, members.count - 1)])
                    bands.append(m < members.count && l % cw < channels ? members[m] : -1)
                }
                for s in 0..<ThirdOctaveBank.sectionsPerBand { poles.append(Poles(laneDesigns.map { $0[s] })) }
                var gain = SIMD8<Double>()
                for l in 0..<ThirdOctaveLanes.width {
                    let product = laneDesigns[l].reduce(1.0) { $0 * $1.b0 }
                    gain[l] = product * product
                }
                gains.append(gain)
            }
            let lowPassDesign = k + 1 < stageCount ? ThirdOctaveBank.lowPass(cutoff: 0.3 * rate / 2, sampleRate: rate) : []
            for c in lowPassDesign { precondition(c.b1 == 2 * c.b0 && c.b2 == c.b0, "a low-pass section's numerator is b0(1 + 2z⁻¹ + z⁻²)") }
            stages.append(Stage(
                poles: poles, gainSquared: gains, bands: bands, energy: Array(repeating: SIMD8(), count: groups),
                partial: Array(repeating: SIMD8(), count: groups),
                lowPass: lowPassDesign.map { Poles(Array(repeating: $0, count: ThirdOctaveLanes.width)) },
                lowPassGain: Float(lowPassDesign.reduce(1.0) { $0 * $1.b0 })))
        }
        self.stages = stages
        inputs = (0..<stageCount).map { [SIMD8<Float>](repeating: SIMD8(), count: max(1, ThirdOctaveBank.blockSize >> $0)) }
    }

    /// Number of bands kept.
    public var bandCount: Int { centres.count }

    /// Feeds `frames` frames; `source(c)` points at channel c's samples. Real-time safe.
    public mutating func process(frames: Int, from source: (Int) -> UnsafePointer<Float>) {
        // Each lane's channel address in a SIMD vector (no array, no allocation); lanes past
        // the channel count read channel 0 (their bands are not reported).
        var bases = SIMD8<Int>()
        for l in 0..<ThirdOctaveLanes.width {
            let c = l % channelWidth
            bases[l] = Int(bitPattern: source(c < channels ? c : 0))
        }
        var done = 0
        while done < frames {
            let n = min(ThirdOctaveBank.blockSize, frames - done)
            inputs[0].withUnsafeMutableBufferPointer { input in
                if channelWidth == 1 {
                    let x = UnsafePointer<Float>(bitPattern: bases[0])! + done
                    for i in 0..<n { input[i] = SIMD8(repeating: x[i]) }
                } else {
                    for i in 0..<n {
                        var v = SIMD8<Float>()
                        for l in 0..<ThirdOctaveLanes.width {
                            v[l] = UnsafePointer<Float>(bitPattern: bases[l])![done + i]
                        }
                        input[i] = v
                    }
                }
            }
            var count = n
            for k in stages.indices {
                count = runStage(k, count: count)
                if count == 0 { break }
            }
            done += n
        }
    }

    /// Runs stage k over its `count` input samples; returns how many samples it passed to the
    /// next stage.
    private mutating func runStage(_ k: Int, count: Int) -> Int {
        var produced = 0
        let hasNext = k + 1 < stages.count
        inputs.withUnsafeMutableBufferPointer { inputs in
            stages.withUnsafeMutableBufferPointer { stages in
                let stage = stages.baseAddress! + k
                let input = inputs[k]
                var x1 = stage.pointee.x1, x2 = stage.pointee.x2
                stage.pointee.poles.withUnsafeMutableBufferPointer { sec in
                    stage.pointee.partial.withUnsafeMutableBufferPointer { p in
                        stage.pointee.energy.withUnsafeMutableBufferPointer { e in
                            let groups = e.count
                            var start = 0
                            while start < count {
                                let end = min(count, start + ThirdOctaveLanes.partialLength)
                                // Two samples at a time, then the odd one left.
                                var i = start
                                while i + 1 < end {
                                    let v = input[i], v2 = input[i + 1]
                                    let w = (v - x2, v2 - x1)  // every band's first numerators
                                    x2 = v
                                    x1 = v2
                                    for g in 0..<groups {
                                        let s = sec.baseAddress! + 4 * g
                                        let y = s[3].process(s[2].differences(s[1].differences(s[0].differences(w))))
                                        p[g] += y.0 * y.0
                                        p[g] += y.1 * y.1
                                    }
                                    i += 2
                                }
                                for i in i..<end {
                                    let v = input[i]
                                    let w = v - x2  // every band's first numerator
                                    x2 = x1
                                    x1 = v
                                    for g in 0..<groups {
                                        let s = sec.baseAddress! + 4 * g
                                        let y = s[3].process(s[2].difference(s[1].difference(s[0].difference(w))))
                                        p[g] += y * y
                                    }
                                }
                                for g in 0..<groups {
                                    e[g] += SIMD8<Double>(p[g])
                                    p[g] = SIMD8()
                                }
                                start = end
                            }
                        }
                    }
                    for i in 0..<sec.count { sec[i].flushDenormals() }
                }
                stage.pointee.x1 = x1
                stage.pointee.x2 = x2
                stage.pointee.count += count
                guard hasNext else { return }
                inputs[k + 1].withUnsafeMutableBufferPointer { next in
                    stage.pointee.lowPass.withUnsafeMutableBufferPointer { lp in
                        var keep = stage.pointee.keepNext
                        var x1 = stage.pointee.lowX1, x2 = stage.pointee.lowX2
                        let gain = SIMD8<Float>(repeating: stage.pointee.lowPassGain)
                        for i in 0..<count {
                            let v = input[i]
                            let u = v + 2 * x1 + x2
                            x2 = x1
                            x1 = v
                            let y = lp[3].process(lp[2].sum(lp[1].sum(lp[0].sum(u))))
                            if keep {
                                next[produced] = y * gain
                                produced += 1
                            }
                            keep.toggle()
                        }
                        stage.pointee.keepNext = keep
                        stage.pointee.lowX1 = x1
                        stage.pointee.lowX2 = x2
                        for i in 0..<lp.count { lp[i].flushDenormals() }
                    }
                }
            }
        }
        return produced
    }

    /// Each channel's band RMS levels (dBFS) over the samples since the last call, as
    /// `write(channel, band, level)`, then starts a new interval. Real-time safe.
    public mutating func takeLevels(_ write: (_ channel: Int, _ band: Int, _ dBFS: Float) -> Void) {
        for k in stages.indices {
            let count = stages[k].count
            for (lane, b) in stages[k].bands.enumerated() where b >= 0 {
                let g = lane / ThirdOctaveLanes.width, l = lane % ThirdOctaveLanes.width
                let e = stages[k].energy[g][l] * stages[k].gainSquared[g][l]
                write(lane % channelWidth, b, count > 0 ? Decibels.fromPower(Float(e / Double(count))) : Decibels.floor)
            }
            for g in stages[k].energy.indices { stages[k].energy[g] = SIMD8() }
            stages[k].count = 0
        }
    }

    /// `takeLevels` into `levels`: channel c's band b at `c·stride + b`. Real-time safe.
    public mutating func takeLevels(into levels: UnsafeMutablePointer<Float>, stride: Int) {
        takeLevels { c, b, level in levels[c * stride + b] = level }
    }
}
