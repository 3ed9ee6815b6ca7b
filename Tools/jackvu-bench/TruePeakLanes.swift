import DSP

extension Bench {
    /// CPU per second of audio per channel of the live true peak (the peak of every 256-frame
    /// piece) of `channels` channels, fed one at a time (the filter's phases 0, 4, 8, 12 side by side
    /// in SIMD4 lanes) and together (the channels side by side in SIMD8 lanes), best of 3
    /// alternating, and that they agree.
    static func truePeakLanes(seconds: Double, channels: Int) {
        let rate = 48000, piece = 256
        let signal = testSignal(channels: channels, rate: rate)
        defer { for s in signal { s.deallocate() } }
        let pieces = Int(seconds) * rate / piece
        var aloneBest = Double.infinity, lanesBest = Double.infinity
        var difference: Float = 0
        for _ in 0..<3 {
            let alone = TruePeakMeter(sampleRate: rate, channels: channels), lanes = TruePeakMeter(sampleRate: rate, channels: channels)
            alone.tracksLatest = true
            lanes.tracksLatest = true
            var t0 = threadCPU()
            for p in 0..<pieces {
                let at = (p * piece) % (rate - piece)
                for c in 0..<channels { alone.process(frames: piece, from: UnsafePointer(signal[c] + at), channel: c) }
            }
            aloneBest = min(aloneBest, threadCPU() - t0)
            t0 = threadCPU()
            for p in 0..<pieces {
                let at = (p * piece) % (rate - piece)
                for first in stride(from: 0, to: channels, by: 8) {
                    lanes.process(frames: piece, channels: first, count: min(8, channels - first), from: { UnsafePointer(signal[first + $0] + at) })
                }
            }
            lanesBest = min(lanesBest, threadCPU() - t0)
            for c in 0..<channels { difference = max(difference, abs(alone.latestPeak(channel: c) - lanes.latestPeak(channel: c))) }
        }
        let perChannelSecond = 1000 / seconds / Double(channels)
        print("True peak (16 phases x 24 taps: 4x, then 16x at crests), \(channels) channels, 48 kHz, the peak of every 256-frame piece, \(Int(seconds)) s, best of 3 alternating")
        print("one channel at a time, phases in SIMD4 lanes   \(fmt(aloneBest * perChannelSecond)) ms CPU per s per channel")
        print("channels in SIMD8 lanes                        \(fmt(lanesBest * perChannelSecond)) ms CPU per s per channel")
        print("largest difference between their peaks: \(difference)")
    }
}
