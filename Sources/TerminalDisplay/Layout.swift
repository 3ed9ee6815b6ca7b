#if canImport(Glibc)
import Glibc
#endif
import DSP
import Outputs

/// What the person at the terminal chose: the selected channel, pause, help.
public struct ViewState: Sendable, Equatable {
    /// The channel whose note and spectrum are shown (0-based).
    public var selected = 0
    /// The display is frozen (the analysis goes on).
    public var paused = false
    /// The key help is shown.
    public var help = false
    /// Per channel: the bar's own held maximum (0 … 1), for meters whose snapshot `hold` is on
    /// another scale (see `DisplayScale.holdIsSamplePeak`).
    public var heldMeter: [Float] = []
    /// What is shown: the meters, or every programme's loudness history (`l`).
    public var view = View.meters
    public enum View: Sendable, Equatable { case meters, loudness, goniometer, spectrogram }
    /// The programme the `r` and `i` keys act on (0-based; nil: all), chosen with 1 … 9, 0.
    public var programme: Int?
    /// The history's time span, minutes (`+`, `-`: one of `historyWindows`).
    public var historyMinutes = 10
    public static let historyWindows = [1, 2, 5, 10, 30, 60]
    /// The loudness view's scale (`s`): EBU +9 or +18.
    public var scale = LoudnessScale.plus9
    /// The spectrogram's time span, seconds (`+`, `-` in its view: one of `spectrogramSpans`).
    public var spectrogramSeconds = 30
    public static let spectrogramSpans = [5, 15, 30, 60, 120, 300]

    public init() {}
}

/// How the terminal can draw: colours (not with `NO_COLOR` or a dumb terminal) and Unicode
/// block characters (a UTF-8 locale).
public struct TerminalCapabilities: Sendable, Equatable {
    public var colors: Bool
    public var unicode: Bool

    public init(colors: Bool, unicode: Bool) {
        self.colors = colors
        self.unicode = unicode
    }
}

/// The terminal screen as a pure function of a snapshot, the view state and the size, so it
/// is tested without a terminal. From the top:
///
/// - a title bar: client, sample rate, buffer size, xruns, overruns, skipped frames;
/// - the selected channel's note in big letters, its frequency, cents (with a tuning needle),
///   the pitch confidence and the FFT peak; beside it (80 columns or more) loudness;
/// - a meter bar per channel (the `--meter` quantity) with peak hold, reading, clip and note,
///   then the scale;
/// - the selected channel's spectrum bars with a dB axis and frequency labels;
/// - correlation of each channel pair, and loudness when it did not fit beside the note.
///
/// Colours (the basic palette): meters green below the scale's `yellowFrom`, yellow up to
/// `redFrom`, red above; spectrum bars by height: green in the lower 60 % (below −32 dB), yellow
/// to 80 % (−16 dB), red above.
public enum Layout {
    /// The smallest useful terminal; smaller ones get a one-line message.
    public static let minimumWidth = 40
    public static let minimumHeight = 12

    public static func render(
        _ snapshot: Snapshot?, context: DisplayContext, state: ViewState, width: Int, height: Int,
        capabilities: TerminalCapabilities, history: HistoryView? = nil, spectrogram: SpectrogramView? = nil
    ) -> Screen {
        var screen = Screen(width: width, height: height)
        guard width >= minimumWidth && height >= minimumHeight else {
            screen.put("jackvu: terminal too small (\(width)x\(height), need \(minimumWidth)x\(minimumHeight))", x: 0, y: 0)
            return screen
        }
        var painter = Painter(screen: screen, context: context, capabilities: capabilities)
        painter.draw(snapshot, state: state, history: history, spectrogram: spectrogram)
        if state.help { painter.drawHelp() }
        return painter.screen
    }

    /// Spectrum bar colour by height (0 … 1 of the bar's scale).
    public static func spectrumZone(_ fraction: Double) -> DisplayScale.Zone {
        fraction > 0.8 ? .red : fraction > 0.6 ? .yellow : .green
    }

    /// A loudness as the displays show it: one decimal, `-inf` below −70 LUFS (the gate).
    static func lufs(_ v: Double) -> String { v > -70 ? fixed(v, 1) : "-inf" }

    /// `text` right-aligned in `width` columns.
    static func pad(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }

    /// "440.0 Hz", "1.25 kHz".
    static func hertz(_ f: Double) -> String {
        f >= 1000 ? fixed(f / 1000, 2) + " kHz" : fixed(f, 1) + " Hz"
    }

    /// A short frequency label: "60", "500", "1k", "2.5k", "10k".
    static func shortHertz(_ f: Double) -> String {
        if f >= 1000 {
            let k = f / 1000
            return (k.rounded() == k ? String(Int(k)) : fixed(k, 1)) + "k"
        }
        return String(Int(f.rounded()))
    }
}

/// Draws one frame into a screen.
struct Painter {
    var screen: Screen
    let context: DisplayContext
    let capabilities: TerminalCapabilities
    var width: Int { screen.width }
    var height: Int { screen.height }

    init(screen: Screen, context: DisplayContext, capabilities: TerminalCapabilities) {
        self.screen = screen
        self.context = context
        self.capabilities = capabilities
    }

    func style(_ zone: DisplayScale.Zone, bold: Bool = false) -> CellStyle {
        switch zone {
        case .green: return CellStyle(color: .green, bold: bold)
        case .yellow: return CellStyle(color: .yellow, bold: bold)
        case .red: return CellStyle(color: .red, bold: bold)
        }
    }

    mutating func draw(_ snapshot: Snapshot?, state: ViewState, history: HistoryView?, spectrogram: SpectrogramView? = nil) {
        let channels = snapshot?.channels.count ?? context.channels
        let selected = min(max(0, state.selected), max(0, channels - 1))
        drawTitle(snapshot, state: state, selected: selected, channels: channels)
        defer { if let snapshot { drawAlarmBanner(snapshot) } }
        guard let s = snapshot, s.sequence > 0 else {
            screen.put("waiting for audio …", x: 2, y: 3, style: CellStyle(dim: true))
            return
        }
        switch state.view {
        case .loudness:
            drawLoudnessView(s, state: state, history: history, top: 1)
            return
        case .goniometer:
            drawGoniometerView(s, selected: selected, top: 1)
            return
        case .spectrogram:
            drawSpectrogramView(s, selected: selected, seconds: state.spectrogramSeconds, view: spectrogram, top: 1)
            return
        case .meters: break
        }
        let wide = width >= 80
        drawNote(s, channel: selected, y: 1)
        if wide { drawLoudnessBlock(s, x: width - 27, y: 1) }

        // Meters: one row a channel (a window round the selected one when they do not all fit),
        // then the scale. At least 3 rows stay for the spectrum, its labels and the last line.
        let top = 1 + BigFont.height + 1
        let bottomLines = 1 + 1  // frequency labels, last line
        let maxMeterRows = max(1, height - top - 1 - bottomLines - 3)
        let shown = min(channels, maxMeterRows)
        let first = min(max(0, selected - shown / 2), channels - shown)
        for row in 0..<shown {
            let c = first + row
            drawMeter(s.channels[c], channel: c, selected: c == selected, held: state.heldMeter.indices.contains(c) ? state.heldMeter[c] : nil, y: top + row)
        }
        drawScale(y: top + shown, first: first, shown: shown, total: channels)

        // Spectrum of the selected channel.
        let spectrumTop = top + shown + 1
        let spectrumRows = height - spectrumTop - bottomLines
        // Its title line also carries the selected channel's further readings of the table
        // (`Readings.extras`, scope channel: the crest factor), by label.
        let extras = Readings.extras(s, scope: .channel, subject: selected).map { "\($0.label) \($0.text) \($0.unit)   " }.joined()
        drawSpectrum(s.channels[selected], sampleRate: s.sampleRate, channel: selected, y: spectrumTop, rows: spectrumRows, detail: extras)

        // Last line: correlation, and loudness when it was not beside the note.
        drawLastLine(s, loudness: !wide, y: height - 1)
    }

    // MARK: Title

    mutating func drawTitle(_ s: Snapshot?, state: ViewState, selected: Int, channels: Int) {
        // Red while the server is stalled: every reading below is frozen.
        let bar = CellStyle(color: s?.status.serverStalled == true ? .red : nil, reverse: true)
        screen.fill(x: 0, y: 0, width: width, height: 1, with: Cell(" ", bar))
        var text = " \(context.clientName)"
        if let s, !s.status.serverConnected {
            text += "  NO JACK SERVER: waiting for it  xruns \(s.status.xruns)  overruns \(s.status.overruns)"
        } else if let s, s.status.serverStalled {
            text += "  JACK SERVER STALLED: readings frozen  xruns \(s.status.xruns)"
        } else if let s {
            text += "  \(s.sampleRate) Hz  \(s.status.bufferFrames) frames  xruns \(s.status.xruns)"
            text += "  overruns \(s.status.overruns)  skipped \(s.status.outputSkipped)"
        }
        let programme = state.programme.flatMap { p in s.flatMap { p < $0.programmes.count ? $0.programmes[p].name : nil } }
        let right = (state.paused ? "PAUSED  " : "") + (programme.map { "keys: \(ProgrammeSnapshot.shownName($0))  " } ?? "")
            + "ch \(selected + 1)/\(channels)  ? help "
        screen.put(text, x: 0, y: 0, style: bar, maxWidth: max(0, width - right.count - 1))
        screen.put(right, x: width - right.count, y: 0, style: CellStyle(bold: state.paused, reverse: true))
    }

    // MARK: Alarms

    /// While any alarm is active: the second line, red and reversed, names every active one
    /// (`ALARM  silence programme/News 12 s · clip ch/2`), over whatever the view drew there.
    mutating func drawAlarmBanner(_ s: Snapshot) {
        let active = s.alarms.states.filter(\.active)
        guard !active.isEmpty, height > 2 else { return }
        let now = Double(s.publishedNanoseconds) > 0 ? Painter.unixNow() : 0
        let names = active.map { a -> String in
            let seconds = now > 0 && a.since > 0 ? Int(max(0, now - a.since)) : nil
            return a.name + (seconds.map { " \($0) s" } ?? "")
        }
        let style = CellStyle(color: .red, bold: true, reverse: true)
        screen.fill(x: 0, y: 1, width: width, height: 1, with: Cell(" ", style))
        screen.put(" ALARM  " + names.joined(separator: " · "), x: 0, y: 1, style: style, maxWidth: width)
    }

    static func unixNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    // MARK: Note

    mutating func drawNote(_ s: Snapshot, channel: Int, y: Int) {
        let ch = s.channels[channel]
        let pixel: Unicode.Scalar = capabilities.unicode ? "█" : "#"
        let name = ch.pitchNote?.name ?? "-"
        let noteStyle = ch.pitchNote == nil ? CellStyle(dim: true) : CellStyle(color: .cyan, bold: true)
        BigFont.draw(name, into: &screen, x: 2, y: y, pixel: pixel, style: noteStyle)
        let x = 2 + max(BigFont.columns("C#-1"), BigFont.columns(name)) + 3
        let textWidth = (width >= 80 ? width - 28 : width) - x
        screen.put("Input \(channel + 1)  pitch", x: x, y: y, style: CellStyle(dim: true), maxWidth: textWidth)
        if let note = ch.pitchNote {
            var col = screen.put(Layout.hertz(ch.pitchHz), x: x, y: y + 1, style: CellStyle(bold: true), maxWidth: textWidth)
            col = screen.put("  \(note.name)", x: col, y: y + 1, style: CellStyle(color: .cyan, bold: true), maxWidth: max(0, x + textWidth - col))
            let cents = note.cents
            screen.put((cents >= 0 ? "+" : "") + fixed(cents, 0) + " cents", x: x, y: y + 2, maxWidth: textWidth)
            drawNeedle(cents: cents, x: x + 12, y: y + 2, width: min(21, textWidth - 13))
        } else {
            screen.put("no note", x: x, y: y + 1, style: CellStyle(dim: true), maxWidth: textWidth)
        }
        screen.put("confidence " + fixed(ch.pitchConfidence, 2), x: x, y: y + 3, style: CellStyle(dim: true), maxWidth: textWidth)
        let peak = ch.peakNote.map { "FFT peak " + Layout.hertz(ch.peakFrequencyHz) + " " + $0.name } ?? "FFT peak -"
        screen.put(peak, x: x, y: y + 4, style: CellStyle(dim: true), maxWidth: textWidth)
    }

    /// A tuning needle: −50 … +50 cents, the centre marked, in at most `w` columns (an odd
    /// number of them, so that the centre is one).
    mutating func drawNeedle(cents: Double, x: Int, y: Int, width w: Int) {
        guard w >= 7 else { return }
        let half = (w - 1) / 2
        for i in 0..<(2 * half + 1) {
            screen[x + i, y] = Cell(i == half ? (capabilities.unicode ? "┼" : "+") : (capabilities.unicode ? "─" : "-"), CellStyle(dim: true))
        }
        let pos = half + Int((cents / 50 * Double(half)).rounded())
        let zone: DisplayScale.Zone = abs(cents) <= 5 ? .green : abs(cents) <= 15 ? .yellow : .red
        screen[x + min(2 * half, max(0, pos)), y] = Cell(capabilities.unicode ? "█" : "|", style(zone, bold: true))
    }

    // MARK: Loudness

    /// A programme's state against its target, short (`OK`, `HIGH`, …), and its colour.
    func stateCell(_ state: LoudnessTarget.State) -> (text: String, style: CellStyle) {
        switch state {
        case .pending: return ("...", CellStyle(dim: true))
        case .within: return ("OK", style(.green, bold: true))
        case .below: return ("LOW", style(.yellow, bold: true))
        case .above: return ("HIGH", style(.red, bold: true))
        case .truePeakOver: return ("TP OVER", style(.red, bold: true))
        case .shortTermOver: return ("ST OVER", style(.red, bold: true))
        }
    }

    /// Several programmes (`--programme`): a row each, short-term and integrated loudness
    /// and the state against its target, in 27 columns and `rows` rows.
    mutating func drawProgrammes(_ s: Snapshot, x: Int, y: Int, rows: Int) {
        screen.put("Programme  S LUFS I LUFS", x: x, y: y, style: CellStyle(dim: true))
        let count = s.programmes.count
        let shown = count <= rows - 1 ? count : rows - 2
        for (i, p) in s.programmes.prefix(shown).enumerated() {
            let name = p.name.count > 8 ? String(p.name.prefix(7)) + "~" : p.name
            var cx = screen.put(name + String(repeating: " ", count: 8 - name.count), x: x, y: y + 1 + i)
            cx = screen.put(Layout.pad(Layout.lufs(p.loudness.shortTerm), 7), x: cx, y: y + 1 + i)
            cx = screen.put(Layout.pad(Layout.lufs(p.loudness.integrated), 7), x: cx, y: y + 1 + i, style: CellStyle(bold: true))
            if p.paused {
                screen.put(" PAUSED", x: cx, y: y + 1 + i, style: style(.yellow, bold: true), maxWidth: x + 27 - cx)
            } else if let state = s.state(programme: i) {
                let cell = stateCell(state)
                screen.put(" " + cell.text, x: cx, y: y + 1 + i, style: cell.style, maxWidth: x + 27 - cx)
            }
        }
        if shown < count { screen.put("+\(count - shown) more (--http shows all)", x: x, y: y + 1 + shown, style: CellStyle(dim: true), maxWidth: 27) }
    }

    mutating func drawLoudnessBlock(_ s: Snapshot, x: Int, y: Int) {
        if s.programmes.count > 1 || !s.programmes[0].name.isEmpty {
            drawProgrammes(s, x: x, y: y, rows: 5)
            return
        }
        let l = s.loudness
        if s.programmes[0].paused {
            screen.put("Loudness  PAUSED", x: x, y: y, style: style(.yellow, bold: true))
        } else if let target = s.programmes[0].target, let state = s.state(programme: 0) {
            let cell = stateCell(state)
            let cx = screen.put("Target " + target.profile + " ", x: x, y: y, style: CellStyle(dim: true), maxWidth: 19)
            screen.put(cell.text, x: cx, y: y, style: cell.style, maxWidth: x + 27 - cx)
        } else {
            screen.put("Loudness (EBU R 128)", x: x, y: y, style: CellStyle(dim: true))
        }
        screen.put("M " + Layout.pad(Layout.lufs(l.momentary), 6) + "  S " + Layout.pad(Layout.lufs(l.shortTerm), 6) + " LUFS", x: x, y: y + 1)
        screen.put("I " + Layout.pad(Layout.lufs(l.integrated), 6) + " LUFS", x: x, y: y + 2, style: CellStyle(bold: true))
        // LRA, then the further programme readings of the table (`Readings.extras`).
        let extras = Readings.extras(s).map { "  \($0.label) \(Layout.pad($0.text, 5)) \($0.unit)" }.joined()
        screen.put("LRA " + Layout.pad(fixed(l.range, 1), 5) + " LU" + extras, x: x, y: y + 3)
        let tp = s.maxTruePeakDBTP(programme: 0)
        let tpText = tp > -200 ? fixed(Double(tp), 1) : "-inf"
        let limit = s.programmes[0].target?.maxTruePeakDBTP ?? -1
        let end = screen.put("TP max " + Layout.pad(tpText, 5) + " dBTP", x: x, y: y + 4, style: Double(tp) >= limit ? style(.red, bold: true) : .plain)
        // A maximum an xrun set is said so, with the clean one.
        if let fault = s.maxTruePeakFault(programme: 0) {
            screen.put(" (\(fault.cause.rawValue); clean \(fixed(fault.clean, 1)))", x: end, y: y + 4, style: style(.yellow, bold: true))
        }
    }

    // MARK: Meters

    /// Columns of a meter row outside its bar: label 3, space, reading 6, space, clip 4,
    /// space, note 4.
    static let meterFixedColumns = 3 + 1 + 6 + 1 + 4 + 1 + 4
    var barWidth: Int { max(8, width - Painter.meterFixedColumns - 1) }

    mutating func drawMeter(_ ch: ChannelSnapshot, channel: Int, selected: Bool, held: Float?, y: Int) {
        let scale = context.meter
        let label = String(channel + 1)
        let labelText = String(repeating: " ", count: max(0, 2 - label.count)) + label + " "
        screen.put(labelText, x: 0, y: y, style: selected ? CellStyle(bold: true, reverse: true) : CellStyle(dim: true))

        let x0 = 3, w = barWidth
        let fraction = Double(min(1, max(0, ch.meter)))
        let eighths = Int((fraction * Double(w) * 8).rounded())
        let partial: [Unicode.Scalar] = ["▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        for i in 0..<w {
            // The zone of this cell's lower edge on the meter's scale.
            let value = scale.value(ofFraction: Float(Double(i) / Double(w)))
            let zone = scale.zone(of: value)
            let filled = min(8, max(0, eighths - i * 8))
            let cell: Cell
            if filled == 0 {
                cell = Cell(capabilities.unicode ? "·" : ".", CellStyle(dim: true))
            } else if !capabilities.colors {
                let c: Unicode.Scalar = zone == .red ? "#" : zone == .yellow ? "+" : "="
                cell = Cell(c, .plain)
            } else if filled == 8 || !capabilities.unicode {
                cell = Cell(capabilities.unicode ? "█" : "=", style(zone))
            } else {
                cell = Cell(partial[filled - 1], style(zone))
            }
            screen[x0 + i, y] = cell
        }
        // Peak hold: the sample peak on dBFS scales, else the bar's own held maximum.
        let hold = Double(scale.holdIsSamplePeak ? ch.hold : (held ?? ch.meter))
        if hold > 0 {
            let column = min(w - 1, Int(hold * Double(w)))
            let zone = scale.zone(of: scale.value(ofFraction: Float(hold)))
            screen[x0 + column, y] = Cell(capabilities.unicode ? "▌" : "|", style(zone, bold: true))
        }
        // Reading, clip, note.
        let reading = fraction <= 0 && scale.unit.hasPrefix("dB") || fraction <= 0 && scale.unit == "LUFS"
            ? "-inf" : fixed(scale.value(ofFraction: Float(fraction)), 1)
        var x = x0 + w + 1
        // Silence reads -inf, dim: no zone (it used to show green, as if the level were fine).
        screen.put(String(repeating: " ", count: max(0, 6 - reading.count)) + reading, x: x, y: y,
                   style: reading == "-inf" ? CellStyle(dim: true) : style(scale.zone(of: scale.value(ofFraction: Float(fraction)))))
        x += 7
        if ch.clips > 0 {
            screen.put("CLIP", x: x, y: y, style: capabilities.colors ? CellStyle(color: .red, bold: true, reverse: true) : CellStyle(bold: true, reverse: true))
        }
        x += 5
        if let note = ch.pitchNote { screen.put(note.name, x: x, y: y, style: CellStyle(color: .cyan), maxWidth: 4) }
    }

    mutating func drawScale(y: Int, first: Int, shown: Int, total: Int) {
        let scale = context.meter
        let x0 = 3, w = barWidth
        var lastEnd = -1
        for mark in scale.marks {
            let text = fixed(mark, mark.rounded() == mark ? 0 : 1)
            let column = x0 + Int((scale.fraction(of: mark) * Double(w - 1)).rounded())
            // Centre the label on its mark, kept inside the bar; skip it if it would touch the last.
            let start = min(x0 + w - text.count, max(x0, column - text.count / 2))
            guard start > lastEnd else { continue }
            screen.put(text, x: start, y: y, style: CellStyle(dim: true))
            lastEnd = start + text.count
        }
        let unit = scale.name + " " + scale.unit
        screen.put(unit, x: x0 + w + 1, y: y, style: CellStyle(dim: true), maxWidth: width - x0 - w - 1)
        if shown < total {
            let range = "\(first + 1)-\(first + shown)/\(total)"
            screen.put(range, x: 0, y: y, style: CellStyle(dim: true), maxWidth: 3)
        }
    }

    // MARK: Spectrum

    mutating func drawSpectrum(_ ch: ChannelSnapshot, sampleRate: Int, channel: Int, y: Int, rows: Int, detail: String = "") {
        guard rows >= 1 else { return }
        let axis = 4
        let x0 = axis, w = width - axis - 1
        // dB axis: the bars map −80 … 0 dB to 0 … 1.
        screen.put("  0", x: 0, y: y, style: CellStyle(dim: true))
        if rows >= 3 { screen.put("-40", x: 0, y: y + rows / 2, style: CellStyle(dim: true)) }
        if rows >= 2 { screen.put("-80", x: 0, y: y + rows - 1, style: CellStyle(dim: true)) }
        let bars = ch.bars
        guard !bars.isEmpty, w > 0 else { return }
        let eighthBlocks: [Unicode.Scalar] = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        for column in 0..<w {
            // The bars under this column (several when there are more bars than columns).
            let lo = column * bars.count / w
            let hi = max(lo + 1, (column + 1) * bars.count / w)
            var v: Float = 0
            for i in lo..<min(hi, bars.count) { v = max(v, bars[i]) }
            // A gap between bars that are two or more columns wide.
            let barStart = lo * w / bars.count
            let barEnd = (lo + 1) * w / bars.count
            if bars.count <= w && barEnd - barStart >= 2 && column == barEnd - 1 { continue }
            let eighths = Int((Double(min(1, max(0, v))) * Double(rows) * 8).rounded())
            for r in 0..<rows {
                let filled = min(8, max(0, eighths - r * 8))
                guard filled > 0 else { continue }
                let zone = Layout.spectrumZone(Double(r + 1) / Double(rows))
                let character: Unicode.Scalar
                if capabilities.unicode {
                    character = eighthBlocks[filled]
                } else {
                    character = filled >= 4 ? (zone == .red ? "#" : zone == .yellow ? "+" : "=") : "_"
                }
                screen[x0 + column, y + rows - 1 - r] = Cell(character, capabilities.colors ? style(zone) : .plain)
            }
        }
        // Frequency labels under the bars, at their log positions.
        let edges = context.barEdgesHz(bars: bars.count, sampleRate: sampleRate)
        guard let fMin = edges.first, let fMax = edges.last, fMax > fMin else { return }
        let labelY = y + rows
        var lastEnd = x0 - 1
        for f in [31.5, 63, 125, 250, 500, 1000, 2000, 4000, 8000, 16000] where f >= fMin && f <= fMax {
            let column = x0 + Int((log10(f / fMin) / log10(fMax / fMin) * Double(w - 1)).rounded())
            let text = Layout.shortHertz(f)
            let start = min(x0 + w - text.count, max(x0, column - text.count / 2))
            guard start > lastEnd else { continue }
            screen.put(text, x: start, y: labelY, style: CellStyle(dim: true))
            lastEnd = start + text.count
        }
        screen.put("Hz", x: 0, y: labelY, style: CellStyle(dim: true))
        let title = detail + "Spectrum, input \(channel + 1)"
        screen.put(title, x: max(axis, width - title.count - 2), y: y, style: CellStyle(dim: true))
    }

    // MARK: Last line

    mutating func drawLastLine(_ s: Snapshot, loudness: Bool, y: Int) {
        var x = 0
        if loudness {
            let l = s.loudness
            let extras = Readings.extras(s).map { "\($0.label) \($0.text) \($0.unit)  " }.joined()
            let name = s.programmes[0].name.isEmpty ? "" : s.programmes[0].name + (s.programmes.count > 1 ? " (+\(s.programmes.count - 1))" : "") + "  "
            x = screen.put(name + "M \(Layout.lufs(l.momentary))  S \(Layout.lufs(l.shortTerm))  I \(Layout.lufs(l.integrated)) LUFS  LRA \(fixed(l.range, 1)) LU  " + extras, x: x, y: y)
        }
        if s.correlations.isEmpty { return }
        x = screen.put("Correlation", x: x, y: y, style: CellStyle(dim: true))
        for (i, r) in s.correlations.enumerated() {
            // Zones and sign from the value as shown, so that 0.00 never shows red.
            let shown = (Double(r) * 100).rounded() / 100
            let value = (shown >= 0 ? "+" : "") + fixed(shown == 0 ? 0 : shown, 2)
            let pair = s.pairs[i]
            let label = pair.programme.map { "\(s.programmes[$0].name) \(pair.label)" } ?? "\(2 * i + 1)-\(2 * i + 2)"
            x = screen.put("  \(label) ", x: x, y: y, style: CellStyle(dim: true))
            // A silent pair has no phase: a dim dash, not a yellow +0.00.
            if s.isSilent(pair) {
                x = screen.put("  -  ", x: x, y: y, style: CellStyle(dim: true))
                if x >= width - 1 { break }
                continue
            }
            let zone: DisplayScale.Zone = shown < 0 ? .red : shown < 0.3 ? .yellow : .green
            x = screen.put(value, x: x, y: y, style: style(zone))
            if x >= width - 1 { break }
        }
    }

    // MARK: Help

    mutating func drawHelp() {
        let lines = [
            "jackvu — keys",
            "",
            "Tab, →, ↓   next input",
            "⇧Tab, ←, ↑  previous input",
            "r           reset measurements (of the chosen programme)",
            "i           pause / resume loudness integration (same)",
            "1 … 9, 0    choose programme N for r and i; 0: all",
            "l           loudness view: every programme's history",
            "+, -        history span 1, 2, 5, 10, 30, 60 min",
            "s           EBU +9 / +18 scale",
            "g           goniometer of the selected input's pair",
            "w           spectrogram (+, -: span 5 s … 5 min)",
            "p           pause / resume display",
            "Ctrl-L      redraw",
            "?           close this help",
            "q           quit",
            "",
            "Meter: \(context.meter.name) \(context.meter.unit), yellow from \(fixed(context.meter.yellowFrom, 0)), red from \(fixed(context.meter.redFrom, 0))",
        ]
        let w = min(width - 2, (lines.map(\.count).max() ?? 0) + 4)
        let h = min(height - 2, lines.count + 2)
        let x = (width - w) / 2, y = (height - h) / 2
        screen.fill(x: x, y: y, width: w, height: h, with: Cell(" ", CellStyle(reverse: true)))
        for (i, line) in lines.enumerated() where i + 1 < h - 1 {
            var text = line
            if !capabilities.unicode {
                for (u, a) in [("→", "Right"), ("↓", "Down"), ("←", "Left"), ("↑", "Up"), ("⇧", "Shift-"), ("—", "-")] {
                    text = text.replacing(u, with: a)
                }
            }
            screen.put(text, x: x + 2, y: y + 1 + i, style: CellStyle(bold: i == 0, reverse: true), maxWidth: w - 3)
        }
    }
}
