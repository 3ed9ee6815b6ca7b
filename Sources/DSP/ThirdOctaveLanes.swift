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

    /// One biquad section per lane (transposed direct form II), coefficients and state.
    struct Section: Sendable {
        var b0 = SIMD8<Float>(), b1 = SIMD8<Float>(), b2 = SIMD8<Float>(), a1 = SIMD8<Float>(), a2 = SIMD8<Float>()
        var s1 = SIMD8<Float>(), s2 = SIMD8<Float>()

        /// Lane l gets `lanes[l]`.
        init(_ lanes: [BiquadCoefficients]) {
            for l in 0..<ThirdOctaveLanes.width {
                b0[l] = Float(lanes[l].b0)
                b1[l] = Float(lanes[l].b1)
                b2[l] = Float(lanes[l].b2)
                a1[l] = Float(lanes[l].a1)
                a2[l] = Float(lanes[l].a2)
            }
        }

        @inline(__always)
        mutating func process(_ x: SIMD8<Float>) -> SIMD8<Float> {
            let y = b0 * x + s1
            s1 = b1 * x - a1 * y + s2
            s2 = b2 * x - a2 * y
            return y
        }

        /// Flushes tiny state values to zero, so silence does not leave denormals behind.
        mutating func flushDenormals() {
            let tiny = SIMD8<Float>(repeating: 1e-30)
            s1.replace(with: 0, where: s1 .< tiny .& s1 .> -tiny)
            s2.replace(with: 0, where: s2 .< tiny .& s2 .> -tiny)
        }
    }

    struct Stage: Sendable {
        /// Four sections (`ThirdOctaveBank.sectionsPerBand`) per group of lanes.
        var sections: [Section]
        /// Band index of lane l of group g at `8g + l`; -1 for a padding lane.
        var bands: [Int]
        /// Sum of squares per group since the last `takeLevels`, and the samples summed.
        var energy: [SIMD8<Double>]
        /// The single-precision part of the sums (at most `partialLength` samples).
        var partial: [SIMD8<Float>]
        var count = 0
        /// The anti-alias low-pass into the next stage (empty for the last stage).
        var lowPass: [Section]
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
            var sections: [Section] = []
            var bands: [Int] = []
            let groups = (members.count + slots - 1) / slots
            for g in 0..<groups {
                var laneDesigns: [[BiquadCoefficients]] = []
                for l in 0..<ThirdOctaveLanes.width {
                    let m = g * slots + l / cw
                    laneDesigns.append(designs[min(m, members.count - 1)])
                    bands.append(m < members.count && l % cw < channels ? members[m] : -1)
                }
                for s in 0..<ThirdOctaveBank.sectionsPerBand { sections.append(Section(laneDesigns.map { $0[s] })) }
            }
            let lowPass = k + 1 < stageCount
                ? ThirdOctaveBank.lowPass(cutoff: 0.3 * rate / 2, sampleRate: rate).map { Section(Array(repeating: $0, count: ThirdOctaveLanes.width)) }
                : []
            stages.append(Stage(
                sections: sections, bands: bands, energy: Array(repeating: SIMD8(), count: groups),
                partial: Array(repeating: SIMD8(), count: groups), lowPass: lowPass))
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
                stage.pointee.sections.withUnsafeMutableBufferPointer { sec in
                    stage.pointee.partial.withUnsafeMutableBufferPointer { p in
                        stage.pointee.energy.withUnsafeMutableBufferPointer { e in
                            let groups = e.count
                            var start = 0
                            while start < count {
                                let end = min(count, start + ThirdOctaveLanes.partialLength)
                                for i in start..<end {
                                    let v = input[i]
                                    for g in 0..<groups {
                                        let y = sec[4 * g + 3].process(sec[4 * g + 2].process(sec[4 * g + 1].process(sec[4 * g].process(v))))
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
                stage.pointee.count += count
                guard hasNext else { return }
                inputs[k + 1].withUnsafeMutableBufferPointer { next in
                    stage.pointee.lowPass.withUnsafeMutableBufferPointer { lp in
                        var keep = stage.pointee.keepNext
                        for i in 0..<count {
                            let y = lp[3].process(lp[2].process(lp[1].process(lp[0].process(input[i]))))
                            if keep {
                                next[produced] = y
                                produced += 1
                            }
                            keep.toggle()
                        }
                        stage.pointee.keepNext = keep
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
                let e = stages[k].energy[lane / ThirdOctaveLanes.width][lane % ThirdOctaveLanes.width]
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
