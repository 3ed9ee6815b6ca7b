#if canImport(Glibc)
import Glibc
#endif
import Outputs
import Synchronization

/// The pictures' data for the browser (goniometer points, spectrogram columns), packed into
/// binary WebSocket frames beside each JSON update: a float reading is 6–10 bytes of JSON, a
/// point or a spectrogram cell here 1 byte.
///
/// A frame, little-endian: the bytes `J V P 1`, then sections, each a type byte, a u32
/// length and its bytes:
/// - 1, goniometer: u16 pairs, u16 points; per pair its inputs (u16 left, u16 right, 0-based),
///   its name (u8 length, UTF-8: `1-2`, or a programme's `NAME L-R`), its balance (dB), mid and
///   side levels (dBFS) as three f32 (`Snapshot.pairLevels`), an f32 scale (the largest
///   |sample| of its points, linear) and `points` × (i8 left, i8 right) = round(127 × sample /
///   scale), oldest first (`Snapshot.goniometer`);
/// - 2, spectrogram columns: u16 channels, u16 bars, u16 columns, f32 seconds between columns
///   (the newest column is now); then per column, oldest first, per channel its bars as u8
///   (the bar's 0 … 1 × 255: −80 … 0 dB, as the spectrum bars). A live frame carries one
///   column (the update's bars); the history sent after the hello, the recent minutes;
/// - 3, loudness histograms: u16 programmes, u16 bins, f32 the lowest bin's LUFS, f32 the bin
///   width, LU; per programme its name (u8 length, UTF-8; empty for the default programme)
///   and `bins` × u16, the percentage of its short-term windows in the bin × 100
///   (`ProgrammeSnapshot.histogram`). Sent when it changed, and at least once a second;
/// - 4, bit meter: u16 channels; per channel u8 word depth, u8 headroom bits, u8 quantised
///   (16, 24 or 0), u8 flags (1: constant), f32 its DC offset, dBFS (`ChannelSnapshot.bits`).
///
/// At the default 20 updates a second, 8 channels (4 pairs, 48 bars) cost 4 × (24 + 512) +
/// 8 × 48 + 8 × 8 + 30 bytes a frame, 50 KB/s (`WebDisplayTests` measures the whole stream).
public enum PictureFrame {
    public static let magic: [UInt8] = [0x4A, 0x56, 0x50, 0x31]  // "JVP1"
    public static let goniometerSection: UInt8 = 1
    public static let spectrogramSection: UInt8 = 2
    public static let histogramSection: UInt8 = 3
    public static let bitsSection: UInt8 = 4

    /// The live frame for `snapshot`: its goniometer points (when it has them) and one
    /// spectrogram column of every channel's bars.
    public static func live(_ snapshot: Snapshot, seconds: Double, histograms: Bool = false) -> [UInt8] {
        var out = magic
        out.reserveCapacity(64 + snapshot.goniometer.count + snapshot.channels.count * (snapshot.channels.first?.bars.count ?? 0))
        let points = snapshot.goniometerPoints
        if points > 0 {
            section(&out, goniometerSection) { body in
                put16(&body, snapshot.pairs.count)
                put16(&body, points)
                for p in snapshot.pairs.indices {
                    let subject = snapshot.pairs[p]
                    let name = subject.programme.map { "\(snapshot.programmes[$0].name) \(subject.label)" }
                        ?? "\(subject.left + 1)-\(subject.right + 1)"
                    put16(&body, subject.left)
                    put16(&body, subject.right)
                    let bytes = Array(name.utf8.prefix(255))
                    body.append(UInt8(bytes.count))
                    body.append(contentsOf: bytes)
                    let levels = p < snapshot.pairLevels.count ? snapshot.pairLevels[p] : PairLevels()
                    putFloat(&body, levels.balanceDB)
                    putFloat(&body, levels.midDBFS)
                    putFloat(&body, levels.sideDBFS)
                    let base = 2 * points * p
                    var scale: Float = 0
                    for k in base..<(base + 2 * points) { scale = max(scale, abs(snapshot.goniometer[k])) }
                    putFloat(&body, scale)
                    let gain = scale > 0 ? 127 / scale : 0
                    for k in base..<(base + 2 * points) {
                        body.append(UInt8(bitPattern: Int8(max(-127, min(127, (snapshot.goniometer[k] * gain).rounded())))))
                    }
                }
            }
        }
        let bars = snapshot.channels.first?.bars.count ?? 0
        section(&out, spectrogramSection) { body in
            put16(&body, snapshot.channels.count)
            put16(&body, bars)
            put16(&body, 1)
            putFloat(&body, Float(seconds))
            for c in snapshot.channels { appendColumn(&body, c.bars, count: bars) }
        }
        section(&out, bitsSection) { body in
            put16(&body, snapshot.channels.count)
            for c in snapshot.channels {
                body.append(UInt8(clamping: c.bits.depth))
                body.append(UInt8(clamping: c.bits.headroom))
                body.append(UInt8(clamping: c.bits.quantised))
                body.append(c.bits.constant ? 1 : 0)
                putFloat(&body, c.dcDBFS)
            }
        }
        let bins = snapshot.programmes.first?.histogram.count ?? 0
        if histograms && bins > 0 {
            section(&out, histogramSection) { body in
                put16(&body, snapshot.programmes.count)
                put16(&body, bins)
                putFloat(&body, Float(ProgrammeSnapshot.histogramFromLUFS))
                putFloat(&body, Float(ProgrammeSnapshot.histogramBinLU))
                for p in snapshot.programmes {
                    let name = Array(p.name.utf8.prefix(255))
                    body.append(UInt8(name.count))
                    body.append(contentsOf: name)
                    for k in 0..<bins {
                        let v = k < p.histogram.count && p.histogram[k].isFinite ? p.histogram[k] : 0
                        put16(&body, Int((max(0, min(100, v)) * 100).rounded()))
                    }
                }
            }
        }
        return out
    }

    /// A history frame: `columns` columns of `channels × bars` bytes each, oldest first.
    static func spectrogram(channels: Int, bars: Int, columns: Int, seconds: Double, cells: ArraySlice<UInt8>) -> [UInt8] {
        var out = magic
        out.reserveCapacity(32 + cells.count)
        section(&out, spectrogramSection) { body in
            put16(&body, channels)
            put16(&body, bars)
            put16(&body, columns)
            putFloat(&body, Float(seconds))
            body.append(contentsOf: cells)
        }
        return out
    }

    static func appendColumn(_ body: inout [UInt8], _ bars: [Float], count: Int) {
        for b in 0..<count {
            let v = b < bars.count ? bars[b] : 0
            body.append(UInt8(max(0, min(255, (v.isFinite ? v : 0) * 255)).rounded()))
        }
    }

    private static func section(_ out: inout [UInt8], _ type: UInt8, _ fill: (inout [UInt8]) -> Void) {
        var body: [UInt8] = []
        fill(&body)
        out.append(type)
        put32(&out, body.count)
        out.append(contentsOf: body)
    }

    private static func put16(_ out: inout [UInt8], _ v: Int) {
        let x = UInt16(clamping: v)
        out.append(UInt8(x & 0xFF)); out.append(UInt8(x >> 8))
    }
    private static func put32(_ out: inout [UInt8], _ v: Int) {
        let x = UInt32(clamping: v)
        for s in stride(from: 0, to: 32, by: 8) { out.append(UInt8((x >> UInt32(s)) & 0xFF)) }
    }
    private static func putFloat(_ out: inout [UInt8], _ v: Float) { put32(&out, Int(v.bitPattern)) }
}

/// The spectrogram's recent minutes for a browser that connects late: every channel's bars,
/// a column every `columnSeconds` (the largest value of each bar over the updates in it), the
/// newest `capacity` columns. Fed on the output thread; read on the HTTP threads.
final class SpectrogramHistory: @unchecked Sendable {
    // @unchecked Sendable: all state is in the Mutex.
    static let columnSeconds = 0.2
    /// Five minutes.
    static let capacity = 1500
    private struct State {
        var channels = 0, bars = 0
        var cells: [UInt8] = []  // a ring of `capacity` columns
        var count = 0, next = 0
        var pending: [UInt8] = []
        var pendingSince = 0
        var hasPending = false
    }
    private let state = Mutex(State())

    func add(_ snapshot: Snapshot, now: Int) {
        let channels = snapshot.channels.count, bars = snapshot.channels.first?.bars.count ?? 0
        guard channels > 0, bars > 0 else { return }
        var column: [UInt8] = []
        column.reserveCapacity(channels * bars)
        for c in snapshot.channels { PictureFrame.appendColumn(&column, c.bars, count: bars) }
        state.withLock { s in
            if s.channels != channels || s.bars != bars {
                s = State()
                s.channels = channels
                s.bars = bars
                s.cells = [UInt8](repeating: 0, count: SpectrogramHistory.capacity * channels * bars)
            }
            if !s.hasPending {
                s.pending = column
                s.pendingSince = now
                s.hasPending = true
            } else {
                for k in column.indices where column[k] > s.pending[k] { s.pending[k] = column[k] }
            }
            if Double(now - s.pendingSince) >= SpectrogramHistory.columnSeconds * 1e9 {
                let size = channels * bars
                s.cells.replaceSubrange((s.next * size)..<((s.next + 1) * size), with: s.pending)
                s.next = (s.next + 1) % SpectrogramHistory.capacity
                s.count = min(s.count + 1, SpectrogramHistory.capacity)
                s.hasPending = false
            }
        }
    }

    /// The history as a frame (nil before the first column).
    func frame() -> [UInt8]? {
        state.withLock { s -> [UInt8]? in
            guard s.count > 0 else { return nil }
            let size = s.channels * s.bars
            let first = (s.next - s.count + SpectrogramHistory.capacity) % SpectrogramHistory.capacity
            var cells: [UInt8] = []
            cells.reserveCapacity(s.count * size)
            for k in 0..<s.count {
                let j = (first + k) % SpectrogramHistory.capacity
                cells.append(contentsOf: s.cells[(j * size)..<((j + 1) * size)])
            }
            return PictureFrame.spectrogram(
                channels: s.channels, bars: s.bars, columns: s.count, seconds: SpectrogramHistory.columnSeconds, cells: cells[...])
        }
    }
}
