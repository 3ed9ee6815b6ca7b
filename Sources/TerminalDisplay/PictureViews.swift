#if canImport(Glibc)
import Glibc
#endif
import DSP
import Outputs

/// The spectrogram's columns the terminal keeps: every channel's bars at each update (as
/// bytes, 0 … 255 for the bars' 0 … 1), the newest `capacity` (five minutes at the update
/// rate). Belongs to the display thread.
public struct SpectrogramColumns: Sendable {
    public let capacity: Int
    private var channels = 0, bars = 0
    private var cells: [UInt8] = []
    private var next = 0
    public private(set) var count = 0

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    public mutating func add(_ s: Snapshot) {
        let c = s.channels.count, b = s.channels.first?.bars.count ?? 0
        guard c > 0, b > 0 else { return }
        if c != channels || b != bars {
            channels = c
            bars = b
            cells = [UInt8](repeating: 0, count: capacity * c * b)
            next = 0
            count = 0
        }
        var at = next * c * b
        for channel in s.channels {
            for k in 0..<b {
                let v = k < channel.bars.count ? channel.bars[k] : 0
                cells[at] = UInt8(max(0, min(255, (v.isFinite ? v : 0) * 255)).rounded())
                at += 1
            }
        }
        next = (next + 1) % capacity
        count = min(count + 1, capacity)
    }

    /// Channel `channel`'s newest `columns` columns, oldest first, each the largest of
    /// `group` updates (so a long span fits the width): the view's data.
    public func view(channel: Int, columns: Int, group: Int) -> SpectrogramView {
        var out: [[UInt8]] = []
        guard channel < channels, columns > 0 else { return SpectrogramView(columns: [], bars: bars) }
        let g = max(1, group)
        let available = min(count / g, columns)
        for k in stride(from: available - 1, through: 0, by: -1) {
            var column = [UInt8](repeating: 0, count: bars)
            for j in 0..<g {
                let back = k * g + j
                let index = (next - 1 - back + 2 * capacity) % capacity
                let base = (index * channels + channel) * bars
                for b in 0..<bars where cells[base + b] > column[b] { column[b] = cells[base + b] }
            }
            out.append(column)
        }
        return SpectrogramView(columns: out, bars: bars)
    }
}

/// What the spectrogram view draws: columns (oldest first) of bars (0 … 255, low to high).
public struct SpectrogramView: Sendable, Equatable {
    public var columns: [[UInt8]]
    public var bars: Int
    public init(columns: [[UInt8]], bars: Int) {
        self.columns = columns
        self.bars = bars
    }
}

extension Painter {
    /// The goniometer (`g`) of the pair the selected input is in: mid (L + R) up, side (R − L)
    /// across, in braille dots (2 × 4 a cell, about square on a terminal), auto gain; mono is
    /// a vertical line, an inverted leg a horizontal one, one leg alone a diagonal, uncorrelated
    /// signals a round cloud.
    mutating func drawGoniometerView(_ s: Snapshot, selected: Int, top: Int) {
        let pairs = s.pairs
        let p = pairs.firstIndex { $0.left == selected || $0.right == selected } ?? 0
        let points = s.goniometerPoints
        let name = pairs.isEmpty ? "-" : pairs[p].programme.map { "\(s.programmes[$0].name) \(pairs[p].label)" }
            ?? "\(pairs[p].left + 1)-\(pairs[p].right + 1)"
        screen.put("Goniometer, pair \(name)", x: 0, y: top, style: CellStyle(dim: true))
        let keys = "Tab input  g meters"
        screen.put(keys, x: max(0, width - keys.count), y: top, style: CellStyle(dim: true))
        let rows = height - top - 2
        guard !pairs.isEmpty, points > 0, rows > 2 else {
            screen.put(pairs.isEmpty ? "no channel pair (one input)" : "no points yet", x: 2, y: top + 2, style: CellStyle(dim: true))
            return
        }
        // A square of dots: `side` dots wide (2 a cell) and high (4 a cell).
        let side = min((width - 2) * 2, rows * 4) & ~3
        let cellsWide = side / 2, cellsHigh = side / 4
        let x0 = (width - cellsWide) / 2, y0 = top + 1
        var dots = [UInt8](repeating: 0, count: cellsWide * cellsHigh)
        let base = 2 * points * p
        var scale: Float = 0
        for k in base..<(base + 2 * points) { scale = max(scale, abs(s.goniometer[k])) }
        let half = Float(side) / 2, reach = 0.48 * Float(side) / (2 * Float(2).squareRoot())
        if scale > 0 {
            for k in 0..<points {
                let l = s.goniometer[base + 2 * k] / scale, r = s.goniometer[base + 2 * k + 1] / scale
                let x = Int((half + (r - l) * reach).rounded(.down)), y = Int((half - (l + r) * reach).rounded(.down))
                guard x >= 0, x < side, y >= 0, y < side else { continue }
                let bit: UInt8 = y % 4 == 3 ? (x % 2 == 0 ? 0x40 : 0x80) : UInt8(1 << ((y % 4) + (x % 2 == 0 ? 0 : 3)))
                dots[(y / 4) * cellsWide + x / 2] |= bit
            }
        }
        // The axes, dim, where no dot is: M and S through the centre.
        let axis = CellStyle(dim: true)
        for row in 0..<cellsHigh {
            for col in 0..<cellsWide {
                let d = dots[row * cellsWide + col]
                if d != 0 {
                    let ch: Unicode.Scalar = capabilities.unicode ? Unicode.Scalar(0x2800 + UInt32(d))! : "*"
                    screen[x0 + col, y0 + row] = Cell(ch, CellStyle(color: .green))
                } else if col == cellsWide / 2 {
                    screen[x0 + col, y0 + row] = Cell(capabilities.unicode ? "│" : "|", axis)
                } else if row == cellsHigh / 2 {
                    screen[x0 + col, y0 + row] = Cell(capabilities.unicode ? "─" : "-", axis)
                }
            }
        }
        screen.put("M", x: x0 + cellsWide / 2 + 1, y: y0, style: axis)
        screen.put("S", x: x0 + cellsWide - 1, y: y0 + cellsHigh / 2 - 1, style: axis)
        let level = scale > 0 ? fixed(Double(Decibels.fromAmplitude(scale)), 1) + " dBFS peak (auto gain)" : "silent"
        let correlation = p < s.correlations.count ? "  correlation " + (s.correlations[p] >= 0 ? "+" : "") + fixed(Double(s.correlations[p]), 2) : ""
        screen.put(level + (scale > 0 ? correlation : ""), x: 0, y: height - 1, style: scale > 0 ? .plain : CellStyle(dim: true))
        // Balance, mid and side, where the width has room beside it (80 columns: it does).
        if scale > 0, p < s.pairLevels.count {
            let l = s.pairLevels[p]
            func db(_ x: Float) -> String { x <= -119.5 ? "-inf" : fixed(Double(x), 1) }
            let balance = abs(l.balanceDB) >= 119.5 ? (l.balanceDB > 0 ? "L only" : "R only") : (l.balanceDB >= 0 ? "+" : "") + fixed(Double(l.balanceDB), 1)
            let text = "bal \(balance)  M \(db(l.midDBFS))  S \(db(l.sideDBFS))"
            screen.put(text, x: max(0, width - text.count - 1), y: height - 1)
        }
    }

    /// The spectrogram (`w`) of the selected input: time across (now at the right, `seconds`
    /// back), frequency up on the bars' log scale, two bands a row in coloured half blocks
    /// (blue, magenta, red, yellow, white from −56 dB up; shades without colour).
    mutating func drawSpectrogramView(_ s: Snapshot, selected: Int, seconds: Int, view: SpectrogramView?, top: Int) {
        let span = seconds >= 60 ? "\(seconds / 60) min" : "\(seconds) s"
        screen.put("Spectrogram, input \(selected + 1), last \(span)", x: 0, y: top, style: CellStyle(dim: true))
        let keys = "Tab input  +/- span  w meters"
        screen.put(keys, x: max(0, width - keys.count), y: top, style: CellStyle(dim: true))
        let labelWidth = 5, rows = height - top - 3
        let x0 = labelWidth, columns = width - labelWidth
        guard rows > 1, let view, view.bars > 0 else { return }
        // Frequency labels at their rows (the bars are log-spaced between the display's edges).
        let fMin = context.barsFromHz, fMax = min(context.barsToHz, Double(s.sampleRate) / 2)
        var lastRow = -2
        for f in [16_000.0, 8000, 4000, 2000, 1000, 500, 250, 125, 63] where f > fMin && f < fMax {
            let fraction: Double = 1 - log(f / fMin) / log(fMax / fMin)
            let row = top + 1 + Int((Double(rows) * fraction).rounded(.down))
            guard row > lastRow + 1, row < top + 1 + rows else { continue }
            screen.put(Layout.pad(Layout.shortHertz(f), labelWidth - 1), x: 0, y: row, style: CellStyle(dim: true))
            lastRow = row
        }
        let halves = rows * 2
        func level(_ column: [UInt8], half: Int) -> UInt8 {
            // Half-row `half` (0 at the bottom) covers these bars; its largest.
            let from = half * view.bars / halves, to = max(from + 1, (half + 1) * view.bars / halves)
            var v: UInt8 = 0
            for b in from..<min(to, view.bars) where column[b] > v { v = column[b] }
            return v
        }
        let first = columns - view.columns.count
        for (i, column) in view.columns.enumerated() {
            for row in 0..<rows {
                let upper = level(column, half: 2 * (rows - 1 - row) + 1), lower = level(column, half: 2 * (rows - 1 - row))
                if let cell = halfBlock(upper: upper, lower: lower) { screen[x0 + first + i, top + 1 + row] = cell }
            }
        }
        screen.put("-" + span, x: x0, y: top + 1 + rows, style: CellStyle(dim: true))
        screen.put("now", x: width - 3, y: top + 1 + rows, style: CellStyle(dim: true))
    }

    /// The colour of a level (0 … 255: −80 … 0 dB), nil below −56 dB.
    static func heat(_ v: UInt8) -> TerminalColor? {
        switch v {
        case ..<77: return nil
        case ..<115: return .blue
        case ..<153: return .magenta
        case ..<191: return .red
        case ..<230: return .yellow
        default: return .white
        }
    }

    /// A cell showing two levels: the upper half's colour over the lower's (`▀` with a
    /// background), one half alone, or shades / ASCII without colours or Unicode.
    func halfBlock(upper: UInt8, lower: UInt8) -> Cell? {
        let top = Painter.heat(upper), bottom = Painter.heat(lower)
        guard top != nil || bottom != nil else { return nil }
        if capabilities.colors && capabilities.unicode {
            switch (top, bottom) {
            case (let t?, let b?): return t == b ? Cell("█", CellStyle(color: t)) : Cell("▀", CellStyle(color: t, background: b))
            case (let t?, nil): return Cell("▀", CellStyle(color: t))
            case (nil, let b?): return Cell("▄", CellStyle(color: b))
            default: return nil
            }
        }
        let v = max(upper, lower)
        let shades: [Unicode.Scalar] = capabilities.unicode ? ["░", "▒", "▓", "█"] : [".", ":", "+", "#"]
        return Cell(shades[min(3, max(0, (Int(v) - 77) / 45))], .plain)
    }
}
