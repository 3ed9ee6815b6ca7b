import DSP
import Outputs

/// The loudness history the terminal's loudness view draws: each programme's points
/// (`LoudnessHistory.series`) and the monotonic time now, seconds.
public struct HistoryView: Sendable, Equatable {
    public var series: [LoudnessHistory.Series]
    public var now: Double

    public init(series: [LoudnessHistory.Series], now: Double) {
        self.series = series
        self.now = now
    }
}

/// EBU Tech 3341's two loudness scales, relative to the target (or to −23 LUFS without one):
/// "+9" from −18 to +9 LU, "+18" from −36 to +18 LU.
public enum LoudnessScale: Sendable, Equatable {
    case plus9, plus18

    public var range: ClosedRange<Double> { self == .plus9 ? -18...9 : -36...18 }
    public var name: String { self == .plus9 ? "+9" : "+18" }
}

extension Painter {
    /// The loudness view (`l`): one block per programme: its readings on a line, then its
    /// short-term loudness over the last `state.historyMinutes` minutes as columns on the
    /// chosen EBU scale, coloured against its target (green within the tolerance, yellow
    /// below, red above), the target as a dotted line and each column's max momentary as a dot
    /// above the bar. With many programmes a block shrinks to two lines (readings and a graph
    /// line of eighth blocks); what does not fit is counted.
    mutating func drawLoudnessView(_ s: Snapshot, state: ViewState, history: HistoryView?, top: Int) {
        let scale = state.scale
        let minutes = state.historyMinutes
        let header = width >= 100
            ? "Loudness, last \(minutes) min, EBU \(scale.name) scale (LU against the target)"
            : "Last \(minutes) min, EBU \(scale.name) scale, LU"
        let x = screen.put(header, x: 0, y: top, style: CellStyle(dim: true))
        let keys = "l meters  +/- span  s scale" + (s.programmes.count > 1 ? "  1-\(min(9, s.programmes.count)),0 choose" : "")
        screen.put(keys, x: max(x + 2, width - keys.count), y: top, style: CellStyle(dim: true), maxWidth: max(0, width - x - 2))
        let count = s.programmes.count
        let available = height - top - 1
        // Blocks of at least two lines (its readings and a graph line), sharing the height.
        let perBlock = max(2, available / max(1, count))
        let shown = min(count, available / perBlock)
        let leftOver = count - shown
        let rows = perBlock
        for p in 0..<shown {
            let y = top + 1 + p * rows
            let graphRows = rows - 1 - (leftOver > 0 && p == shown - 1 ? 1 : 0)
            drawProgrammeLine(s, programme: p, selected: state.programme == p, y: y)
            if graphRows > 0 {
                let series = history.flatMap { p < $0.series.count ? $0.series[p] : nil }
                drawHistory(series, now: history?.now ?? 0, target: s.programmes[p].target, scale: scale,
                            seconds: Double(minutes * 60), y: y + 1, rows: graphRows)
            }
        }
        if leftOver > 0 {
            screen.put("+\(leftOver) more programmes (a taller terminal, or --http, shows all)", x: 0, y: height - 1,
                       style: CellStyle(dim: true))
        }
    }

    /// A programme's readings in one line: name, M, S, I, LRA, max true peak, state.
    mutating func drawProgrammeLine(_ s: Snapshot, programme p: Int, selected: Bool, y: Int) {
        let prog = s.programmes[p]
        let l = prog.loudness
        let label = prog.shownName
        let name = label.count > 10 ? String(label.prefix(9)) + "~" : label
        var x = screen.put((selected ? ">" : " ") + "\(p + 1) " + name + String(repeating: " ", count: 10 - name.count), x: 0, y: y,
                           style: CellStyle(bold: true, reverse: selected))
        x = screen.put(" M" + Layout.pad(Layout.lufs(l.momentary), 6) + " S" + Layout.pad(Layout.lufs(l.shortTerm), 6), x: x, y: y)
        x = screen.put(" I" + Layout.pad(Layout.lufs(l.integrated), 6), x: x, y: y, style: CellStyle(bold: true))
        x = screen.put(" LUFS", x: x, y: y, style: CellStyle(dim: true))
        if width >= 80 {
            x = screen.put(" LRA" + Layout.pad(fixed(l.range, 1), 5), x: x, y: y)
            let tp = s.maxTruePeakDBTP(programme: p)
            let limit = prog.target?.maxTruePeakDBTP ?? -1
            x = screen.put(" TP" + Layout.pad(tp > -100 ? fixed(Double(tp), 1) : "-inf", 6), x: x, y: y,
                           style: Double(tp) >= limit ? style(.red, bold: true) : .plain)
            // A maximum an xrun set: marked (its cause and the clean maximum in the meters view).
            if let fault = s.maxTruePeakFault(programme: p) { x = screen.put("*" + fault.cause.rawValue, x: x, y: y, style: style(.yellow, bold: true)) }
        }
        if prog.paused {
            screen.put(" PAUSED", x: x, y: y, style: style(.yellow, bold: true))
        } else if let state = s.state(programme: p) {
            let cell = stateCell(state)
            screen.put(" " + cell.text, x: x, y: y, style: cell.style)
        }
    }

    /// Short-term loudness over the last `seconds` as columns, newest on the right, in `rows`
    /// lines with the scale's labels on the left.
    mutating func drawHistory(_ series: LoudnessHistory.Series?, now: Double, target: LoudnessTarget?, scale: LoudnessScale,
                              seconds: Double, y: Int, rows: Int)
    {
        let reference = target?.targetLUFS ?? -23
        let tolerance = target?.toleranceLU ?? 1
        let labelWidth = 4
        let graphWidth = width - labelWidth - 1
        guard graphWidth > 4 else { return }
        let lo = scale.range.lowerBound, hi = scale.range.upperBound
        // Labels: the top, the target (0) and the bottom, where there are lines for them.
        func row(of lu: Double) -> Int { rows - 1 - min(rows - 1, max(0, Int(((lu - lo) / (hi - lo) * Double(rows)).rounded(.down)))) }
        let targetRow = row(of: 0)
        if rows >= 3 {
            screen.put(Layout.pad("+" + fixed(hi, 0), labelWidth - 1), x: 0, y: y, style: CellStyle(dim: true))
            screen.put(Layout.pad(fixed(lo, 0), labelWidth - 1), x: 0, y: y + rows - 1, style: CellStyle(dim: true))
        }
        screen.put(Layout.pad("0", labelWidth - 1), x: 0, y: y + targetRow, style: CellStyle(dim: true))
        let dot: Unicode.Scalar = capabilities.unicode ? "·" : "."
        for c in 0..<graphWidth {
            screen[labelWidth + c, y + targetRow] = Cell(dot, CellStyle(dim: true))
        }
        guard let series, !series.times.isEmpty else { return }
        // Each column: the largest short-term and momentary of the points in its time slot.
        let slot = seconds / Double(graphWidth)
        var shortTerm = [Double](repeating: -.infinity, count: graphWidth)
        var momentary = [Double](repeating: -.infinity, count: graphWidth)
        // A point sums up the second before it: it fills every column that second touches.
        for i in series.times.indices {
            let age = now - series.times[i]
            guard age >= 0, age < seconds else { continue }
            let newest = graphWidth - 1 - Int(age / slot)
            let oldest = max(0, graphWidth - 1 - Int(min(seconds - 1e-9, age + 1) / slot))
            guard newest >= 0 else { continue }
            for column in oldest...newest {
                shortTerm[column] = max(shortTerm[column], Double(series.shortTerm[i]))
                momentary[column] = max(momentary[column], Double(series.momentary[i]))
            }
        }
        let eighths: [Unicode.Scalar] = capabilities.unicode ? [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"] : [" ", " ", " ", " ", "#", "#", "#", "#", "#"]
        for c in 0..<graphWidth where shortTerm[c] > -70 {
            let relative = shortTerm[c] - reference
            let zone: DisplayScale.Zone = abs(relative) <= tolerance ? .green : relative < 0 ? .yellow : .red
            // Height in eighths of a line, at least one for audio above the scale's bottom.
            let height = Int((min(1, max(0, (relative - lo) / (hi - lo))) * Double(rows * 8)).rounded())
            for r in 0..<rows {
                let filled = min(8, max(0, height - r * 8))
                guard filled > 0 else { break }
                screen[labelWidth + c, y + rows - 1 - r] = Cell(eighths[filled], style(zone))
            }
            // The max momentary, as a dot above the bar.
            if rows >= 3 && momentary[c] > shortTerm[c] + 0.5 {
                let m = momentary[c] - reference
                let r = row(of: min(hi - 0.001, m))
                if r < rows - 1 - (height - 1) / 8 {
                    screen[labelWidth + c, y + r] = Cell(capabilities.unicode ? "•" : "'", CellStyle(dim: true))
                }
            }
        }
    }
}
