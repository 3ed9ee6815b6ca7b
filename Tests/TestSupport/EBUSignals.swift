import Foundation

/// The EBU Tech 3341 / 3342 minimum-requirements test signals, synthesised as the
/// specifications describe them: 1 kHz sines at per-channel peak levels in dBFS, in phase in
/// all channels, back to back with continuous phase. Planar: one array per channel.
public enum EBUSignals {
    /// A tone segment: `seconds` long at `dBFS` peak (nil: silence).
    public struct Segment: Sendable {
        public var seconds: Double
        public var dBFS: Double?
        public init(seconds: Double, dBFS: Double?) {
            self.seconds = seconds
            self.dBFS = dBFS
        }
    }

    /// Tech 3341 cases 11 and 14 ("live" maxima): for i = 0 … 19, i·`delay` s of silence,
    /// `tone` s at −38 + i dBFS, then silence up to `period` = 2·`tone` s in all. Segment i ends
    /// at (i + 1)·`period` s. Case 11: delay 0.15, tone 3; case 14: delay 0.02, tone 0.4.
    public static func successiveTones(delay: Double, tone: Double) -> (segments: [Segment], period: Double) {
        var segments: [Segment] = []
        for i in 0..<20 {
            segments += [Segment(seconds: Double(i) * delay, dBFS: nil), Segment(seconds: tone, dBFS: -38 + Double(i)),
                         Segment(seconds: tone - Double(i) * delay, dBFS: nil)]
        }
        return (segments, 2 * tone)
    }

    /// Stereo (or `channels`) 1 kHz segments at `sampleRate`; `gains` scales each channel (dB).
    public static func tones(_ segments: [Segment], sampleRate: Int = 48000, channelGains: [Double] = [0, 0]) -> [[Float]] {
        var mono: [Float] = []
        var n = 0
        for s in segments {
            let count = Int((s.seconds * Double(sampleRate)).rounded())
            let amplitude = s.dBFS.map { pow(10, $0 / 20) } ?? 0
            mono.reserveCapacity(mono.count + count)
            for _ in 0..<count {
                mono.append(Float(amplitude * sin(2 * Double.pi * 1000 * Double(n) / Double(sampleRate))))
                n += 1
            }
        }
        return channelGains.map { g in
            let k = Float(pow(10, g / 20))
            return k == 1 ? mono : mono.map { $0 * k }
        }
    }

    /// `seconds` of a sine at `frequency` (Hz), peak `amplitude`, starting `phaseDegrees`,
    /// with 10 ms fade-in and fade-out (Tech 3341 cases 15–19), stereo.
    public static func taperedSine(frequency: Double, amplitude: Double, phaseDegrees: Double, sampleRate: Int = 48000,
                            seconds: Double = 1) -> [[Float]] {
        let count = Int(seconds * Double(sampleRate))
        let fade = Int(0.01 * Double(sampleRate))
        let phase = phaseDegrees * Double.pi / 180
        let x = (0..<count).map { i -> Float in
            let ramp = min(1, Double(min(i, count - 1 - i)) / Double(fade))
            return Float(ramp * amplitude * sin(2 * Double.pi * frequency * Double(i) / Double(sampleRate) + phase))
        }
        return [x, x]
    }

    /// Tech 3341 cases 20–23: a sine at fs/6, amplitude 0.5, holding one period of a sine at
    /// fs/4, amplitude 1.0, continuous in phase at both ends; synthesised at 4·fs, low-pass
    /// filtered below fs/2 and decimated by 4 starting at `offset` (0 … 3). Tapered ends.
    public static func interSamplePeak(offset: Int, sampleRate: Int = 48000) -> [[Float]] {
        let up = 4
        let high = Double(up * sampleRate)
        var x: [Double] = []
        // 0.5 s of fs/6 (period 24 samples at 4·fs), ending on an upward zero crossing.
        let basePeriod = 24, burstPeriod = 16
        let cycles = sampleRate / 2 / (basePeriod / up) / up * up
        for i in 0..<(cycles * basePeriod) { x.append(0.5 * sin(2 * Double.pi * Double(i) / Double(basePeriod))) }
        for i in 0..<burstPeriod { x.append(sin(2 * Double.pi * Double(i) / Double(burstPeriod))) }
        for i in 0..<(cycles * basePeriod) { x.append(0.5 * sin(2 * Double.pi * Double(i) / Double(basePeriod))) }
        // Taper 10 ms at each end.
        let fade = Int(0.01 * high)
        for i in 0..<fade {
            let g = Double(i) / Double(fade)
            x[i] *= g
            x[x.count - 1 - i] *= g
        }
        // Anti-alias: windowed-sinc (Blackman) low-pass at 0.45·fs, 511 taps, at 4·fs.
        let taps = 511, mid = taps / 2
        let cutoff = 0.45 * Double(sampleRate) / high
        let h = (0..<taps).map { k -> Double in
            let m = Double(k - mid)
            let sinc = m == 0 ? 2 * cutoff : sin(2 * Double.pi * cutoff * m) / (Double.pi * m)
            let w = 0.42 - 0.5 * cos(2 * Double.pi * Double(k) / Double(taps - 1)) + 0.08 * cos(4 * Double.pi * Double(k) / Double(taps - 1))
            return sinc * w
        }
        var y: [Float] = []
        var i = offset
        while i < x.count {
            var acc = 0.0
            for k in 0..<taps {
                let j = i + mid - k
                if j >= 0 && j < x.count { acc += h[k] * x[j] }
            }
            y.append(Float(acc))
            i += up
        }
        return [y, y]
    }
}

/// Writes planar float channels as a 32-bit float WAV file (WAVE_FORMAT_IEEE_FLOAT).
public func writeWAV(_ path: String, _ channels: [[Float]], sampleRate: Int = 48000) throws {
    let frames = channels[0].count
    let c = channels.count
    var data = Data()
    func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    let dataBytes = UInt32(frames * c * 4)
    data.append(contentsOf: Array("RIFF".utf8)); u32(36 + dataBytes)
    data.append(contentsOf: Array("WAVE".utf8))
    data.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(3); u16(UInt16(c))
    u32(UInt32(sampleRate)); u32(UInt32(sampleRate * c * 4)); u16(UInt16(c * 4)); u16(32)
    data.append(contentsOf: Array("data".utf8)); u32(dataBytes)
    var interleaved = [Float](repeating: 0, count: frames * c)
    for ch in 0..<c { for i in 0..<frames { interleaved[i * c + ch] = channels[ch][i] } }
    interleaved.withUnsafeBytes { data.append(contentsOf: $0) }
    try data.write(to: URL(fileURLWithPath: path))
}
