import DSP
import Outputs
@testable import TerminalDisplay
import XCTest

/// The terminal screen as a pure function: what a person sees at 80×24 and other sizes, with
/// and without colours, and the escape sequences that update it. (The real terminal is tested
/// under tmux in the integration tests.)
final class LayoutTests: XCTestCase {
    let rms = DisplayScale(
        name: "RMS", unit: "dBFS", range: -60...0, yellowFrom: -18, redFrom: -6,
        marks: DisplayScale.marks(-60...0, step: 10), holdIsSamplePeak: true)

    func context(channels: Int = 2) -> DisplayContext {
        DisplayContext(
            clientName: "jackvu", channels: channels, meter: rms, barsFromHz: 60, barsToHz: 18000, holdSeconds: 1.5,
            rate: 20)
    }

    /// A snapshot with an A4 on channel 1 at −21 dBFS RMS and silence elsewhere.
    func snapshot(channels: Int = 2, clips: Int = 0) -> Snapshot {
        var s = Snapshot(channels: channels, barCount: 48)
        s.sequence = 10
        s.sampleRate = 48000
        s.status.bufferFrames = 256
        s.status.xruns = 3
        s.status.overruns = 1
        s.channels[0].pitchHz = 440
        s.channels[0].pitchNote = Note(frequency: 440)
        s.channels[0].pitchConfidence = 0.99
        s.channels[0].peakFrequencyHz = 440
        s.channels[0].peakNote = Note(frequency: 440)
        s.channels[0].rmsDBFS = -21
        s.channels[0].meter = Float((-21.0 + 60) / 60)
        s.channels[0].hold = Float((-15.0 + 60) / 60)
        s.channels[0].clips = clips
        s.channels[0].bars[20] = 0.9
        s.channels[0].bars[10] = 0.3
        s.loudness.momentary = -23
        s.loudness.shortTerm = -23.4
        s.loudness.integrated = -23.1
        s.loudness.range = 2.5
        s.channels[0].maxTruePeakDBTP = -17.9
        return s
    }

    let color = TerminalCapabilities(colors: true, unicode: true)

    /// An active alarm: a banner on the second line, in both views, naming each one; none
    /// without.
    func testActiveAlarmsShowAsABanner() {
        var s = snapshot()
        XCTAssertFalse(Layout.render(s, context: context(), state: ViewState(), width: 80, height: 24, capabilities: color).text.contains("ALARM"))
        let alarms = AlarmEngine(rules: [AlarmRule(kind: .silence, settings: AlarmSettings(level: 0, raise: 0, clear: 0)),
                                         AlarmRule(kind: .clip, settings: AlarmSettings(level: -100, raise: 0, clear: 0))])
        s.channels[1].truePeakDBTP = -50
        alarms.evaluate(s, monotonic: 1, unix: 1)
        s.alarms = alarms.board
        for view in [ViewState.View.meters, .loudness] {
            var state = ViewState()
            state.view = view
            let screen = Layout.render(s, context: context(), state: state, width: 80, height: 24, capabilities: color)
            let line = screen.line(1)
            XCTAssertTrue(line.hasPrefix(" ALARM  silence programme"), "\(view): \(line)")
            XCTAssertTrue(line.contains("clip ch/2"), "\(view): \(line)")
            XCTAssertEqual(screen[3, 1].style.color, .red, "red")
        }
    }

    /// A stalled server (connected, no process cycles): the title bar says so in red over the
    /// frozen readings, in both views; a gone server is its own state; a running one neither.
    func testAStalledServerShowsInTheTitle() {
        var s = snapshot()
        XCTAssertFalse(Layout.render(s, context: context(), state: ViewState(), width: 80, height: 24, capabilities: color).line(0).contains("STALLED"))
        s.status.serverResponding = false
        for view in [ViewState.View.meters, .loudness] {
            var state = ViewState()
            state.view = view
            let screen = Layout.render(s, context: context(), state: state, width: 80, height: 24, capabilities: color)
            XCTAssertTrue(screen.line(0).contains("JACK SERVER STALLED: readings frozen"), "\(view): \(screen.line(0))")
            XCTAssertEqual(screen[2, 0].style.color, .red, "red title bar")
        }
        s.status.serverConnected = false
        let gone = Layout.render(s, context: context(), state: ViewState(), width: 80, height: 24, capabilities: color).line(0)
        XCTAssertTrue(gone.contains("NO JACK SERVER") && !gone.contains("STALLED"), gone)
    }

    /// Programmes (`--programme`): a row each beside the note with its short-term and
    /// integrated loudness and its state; two fit, eight show four and say how many more; a
    /// single default programme with a target says the profile and its state.
    func testProgrammesShowARowEachWithTheirState() {
        for count in [2, 8] {
            var s = snapshot(channels: 2 * count)
            s.programmes = (0..<count).map { i in
                var p = ProgrammeSnapshot(name: "prog\(i)", channels: [2 * i, 2 * i + 1], target: LoudnessTarget.profile("ebu-r128"))
                p.loudness.integrated = i == 1 ? -20 : -23
                p.loudness.shortTerm = -23.5
                return p
            }
            let text = Layout.render(s, context: context(channels: 2 * count), state: ViewState(), width: 80, height: 24, capabilities: color).text
            XCTAssertTrue(text.contains("Programme  S LUFS I LUFS"), text)
            XCTAssertTrue(text.contains("prog0     -23.5  -23.0 OK"), text)
            XCTAssertTrue(text.contains("prog1     -23.5  -20.0 HIGH"), text)
            if count == 8 {
                XCTAssertTrue(text.contains("prog2") && !text.contains("prog4 "), text)
                XCTAssertTrue(text.contains("+5 more"), text)
            }
        }
        var s = snapshot()
        s.programmes[0].target = LoudnessTarget.profile("atsc-a85")
        let text = Layout.render(s, context: context(), state: ViewState(), width: 80, height: 24, capabilities: color).text
        XCTAssertTrue(text.contains("Target atsc-a85 OK"), text)
        // Paused (the `i` key, the control input's pause, a stopped transport): said.
        s.programmes[0].paused = true
        XCTAssertTrue(Layout.render(s, context: context(), state: ViewState(), width: 80, height: 24, capabilities: color).text
            .contains("Loudness  PAUSED"))
    }

    /// What a newcomer found at 80×24: the tuning needle stops a column short of the loudness
    /// block at every cents value; a silent channel's `-inf` is dim, not green; a silent
    /// pair's correlation is a dim dash, not a yellow `+0.00`.
    func testNeedleSilenceAndSilentPairsAt80x24() {
        for cents in stride(from: -50.0, through: 50, by: 5) {
            var s = snapshot(channels: 4)
            s.channels[0].pitchNote = Note(frequency: 440 * pow(2, cents / 1200))
            let screen = Layout.render(s, context: context(channels: 4), state: ViewState(), width: 80, height: 24, capabilities: color)
            let needleRow = (1...5).first { screen.line($0).contains("─") }
            let row = screen.line(needleRow ?? 3)
            XCTAssertNotNil(needleRow, "no needle at \(cents) cents")
            // The loudness block starts at column 53; the needle keeps column 52 free.
            let chars = Array(row)
            XCTAssertTrue(chars.count < 53 || chars[52] == " ", "\(cents) cents: '\(row)'")
            XCTAssertFalse(chars.dropFirst(52).contains { "─┼█".contains($0) }, "\(cents) cents: '\(row)'")
        }
        var s = snapshot(channels: 4)
        s.correlations = [0.98, 0]
        s.channels[2].rmsDBFS = Decibels.floor
        s.channels[3].rmsDBFS = Decibels.floor
        s.channels[2].meter = 0
        let screen = Layout.render(s, context: context(channels: 4), state: ViewState(), width: 80, height: 24, capabilities: color)
        let last = screen.line(23)
        XCTAssertTrue(last.contains("1-2 +0.98") && last.contains("3-4   -"), last)
        XCTAssertFalse(last.contains("3-4 +0.00"), last)
        let meter3 = (0..<24).first { screen.line($0).hasPrefix(" 3 ") }!
        XCTAssertTrue(screen.line(meter3).contains("-inf"), screen.line(meter3))
        let x = Array(screen.line(meter3)).firstIndex(of: "-") ?? 0  // the row's only '-' is -inf's
        XCTAssertEqual(screen[x, meter3].style.dim, true, "-inf is dim")
        XCTAssertNil(screen[x, meter3].style.color, "-inf has no zone colour")
    }

    func testEightyByTwentyFourShowsEverything() {
        let screen = Layout.render(snapshot(), context: context(), state: ViewState(), width: 80, height: 24, capabilities: color)
        XCTAssertEqual(screen.height, 24)
        let text = screen.text
        XCTAssertTrue(screen.line(0).contains("48000 Hz") && screen.line(0).contains("256 frames"), screen.line(0))
        XCTAssertTrue(screen.line(0).contains("xruns 3") && screen.line(0).contains("overruns 1"), screen.line(0))
        XCTAssertTrue(text.contains("440.0 Hz  A4"), text)
        XCTAssertTrue(text.contains("confidence 0.99"), text)
        XCTAssertTrue(text.contains("I  -23.1 LUFS"), text)
        XCTAssertTrue(text.contains("M  -23.0  S  -23.4 LUFS"), text)
        XCTAssertTrue(text.contains("LRA   2.5 LU"), text)
        XCTAssertTrue(text.contains("TP max -17.9 dBTP"), text)
        // The table's further programme readings beside LRA: PLR = −17.9 − (−23.1) LU.
        XCTAssertTrue(text.contains("LRA   2.5 LU  PLR   5.2 LU"), text)
        let narrow = Layout.render(snapshot(), context: context(), state: ViewState(), width: 79, height: 24, capabilities: color)
        XCTAssertTrue(narrow.line(23).contains("LRA 2.5 LU  PLR 5.2 LU"), narrow.line(23))
        XCTAssertTrue(text.contains("Correlation  1-2 +0.00"), text)
        // The big note: the A glyph's top row, drawn with block characters.
        XCTAssertTrue(screen.line(1).hasPrefix("   ██"), screen.line(1))
        // A meter row per channel with a reading, and the scale with its unit.
        let meter1 = (0..<24).map(screen.line).first { $0.hasPrefix(" 1 ") }!
        let meter2 = (0..<24).map(screen.line).first { $0.hasPrefix(" 2 ") }!
        XCTAssertTrue(meter1.contains("█") && meter1.contains("-21.0") && meter1.hasSuffix("A4"), meter1)
        XCTAssertTrue(meter2.contains("-inf") && !meter2.contains("█"), meter2)
        XCTAssertNotNil((0..<24).map(screen.line).first { $0.contains("-60") && $0.hasSuffix("RMS dBFS") })
        // The spectrum: frequency labels and bars.
        XCTAssertNotNil((0..<24).map(screen.line).first { $0.hasPrefix("Hz") && $0.contains("1k") && $0.contains("250") })
        XCTAssertTrue(text.contains("Spectrum, input 1"))
    }

    func testMeterBarLengthColoursAndPeakHold() {
        let screen = Layout.render(snapshot(), context: context(), state: ViewState(), width: 80, height: 24, capabilities: color)
        let y = (0..<24).first { screen.line($0).hasPrefix(" 1 ") }!
        // Bar columns 3 ..< 3 + w; −21 dBFS fills 39/60 of it.
        let w = 80 - 20 - 1
        let filled = (3..<(3 + w)).filter { screen[$0, y].character == "█" }.count
        XCTAssertEqual(Double(filled), Double(w) * 39 / 60, accuracy: 1.5)
        // Green below −18 dBFS, yellow above it.
        XCTAssertEqual(screen[3, y].style.color, .green)
        let holdColumn = 3 + Int(Double(w) * 45 / 60)
        XCTAssertEqual(screen[holdColumn, y].character, "▌")
        XCTAssertEqual(screen[holdColumn, y].style.color, .yellow)
    }

    func testClipIndicator() {
        let screen = Layout.render(snapshot(clips: 2), context: context(), state: ViewState(), width: 80, height: 24, capabilities: color)
        let line = (0..<24).map(screen.line).first { $0.hasPrefix(" 1 ") }!
        XCTAssertTrue(line.contains("CLIP"), line)
    }

    func testEightChannelsFitIn80x24AndManyScroll() {
        let eight = Layout.render(snapshot(channels: 8), context: context(channels: 8), state: ViewState(), width: 80, height: 24, capabilities: color)
        for c in 1...8 { XCTAssertNotNil((0..<24).map(eight.line).first { $0.hasPrefix(String(format2(c)) + " ") }, "channel \(c)") }
        var state = ViewState()
        state.selected = 40
        let many = Layout.render(snapshot(channels: 64), context: context(channels: 64), state: state, width: 80, height: 24, capabilities: color)
        let rows = (0..<24).map(many.line)
        XCTAssertNotNil(rows.first { $0.hasPrefix("41 ") }, "the selected channel is shown")
        XCTAssertNotNil(rows.first { $0.contains("/64") }, "the window is labelled")
        XCTAssertTrue(rows[0].contains("ch 41/64"))
    }

    private func format2(_ n: Int) -> String { n < 10 ? " \(n)" : "\(n)" }

    func testWithoutColourOrUnicode() {
        let plain = TerminalCapabilities(colors: false, unicode: false)
        var s = snapshot()
        s.channels[0].meter = Float((-3.0 + 60) / 60)
        let screen = Layout.render(s, context: context(), state: ViewState(), width: 80, height: 24, capabilities: plain)
        let line = (0..<24).map(screen.line).first { $0.hasPrefix(" 1 ") }!
        // Zones by character: '=' green, '+' yellow, '#' red.
        XCTAssertTrue(line.contains("===") && line.contains("+++") && line.contains("#"), line)
        XCTAssertFalse(screen.text.unicodeScalars.contains { $0.value > 127 }, "ASCII only")
        let update = ScreenDiff.update(from: nil, to: screen, colors: false)
        XCTAssertNil(update.range(of: "\u{1B}\\[[0-9;]*3[1-7][;m]", options: .regularExpression), "no colour codes")
        // With colours on, the same screen carries colour codes (the red reading of −3 dBFS).
        XCTAssertNotNil(ScreenDiff.update(from: nil, to: screen, colors: true).range(of: "\u{1B}[0;31m"))
    }

    func testDiffWritesOnlyChangedCells() {
        var a = Screen(width: 20, height: 5)
        a.put("hello", x: 1, y: 1)
        let first = ScreenDiff.update(from: nil, to: a, colors: true)
        XCTAssertTrue(first.contains("\u{1B}[2J"), "the first frame clears")
        XCTAssertEqual(ScreenDiff.update(from: a, to: a, colors: true), "\u{1B}[?2026h\u{1B}[?2026l")
        var b = a
        b.put("J", x: 1, y: 1)
        XCTAssertEqual(ScreenDiff.update(from: a, to: b, colors: true), "\u{1B}[?2026h\u{1B}[2;2HJ\u{1B}[?2026l")
        var c = a
        c.put("X", x: 6, y: 3, style: CellStyle(color: .red))
        XCTAssertEqual(
            ScreenDiff.update(from: a, to: c, colors: true), "\u{1B}[?2026h\u{1B}[4;7H\u{1B}[0;31mX\u{1B}[0m\u{1B}[?2026l")
        // A new size redraws everything.
        XCTAssertTrue(ScreenDiff.update(from: a, to: Screen(width: 30, height: 5), colors: true).contains("\u{1B}[2J"))
    }

    func testTooSmallAndWaiting() {
        XCTAssertTrue(Layout.render(nil, context: context(), state: ViewState(), width: 30, height: 10, capabilities: color).line(0).contains("too small"))
        let waiting = Layout.render(nil, context: context(), state: ViewState(), width: 80, height: 24, capabilities: color)
        XCTAssertTrue(waiting.text.contains("waiting for audio"))
    }

    func testHelpAndPause() {
        var state = ViewState()
        state.help = true
        state.paused = true
        let screen = Layout.render(snapshot(), context: context(), state: state, width: 80, height: 24, capabilities: color)
        XCTAssertTrue(screen.text.contains("reset measurements") && screen.text.contains("q           quit"))
        XCTAssertTrue(screen.line(0).contains("PAUSED"))
    }

    func testKeys() {
        XCTAssertEqual(KeyParser.actions(Array("q".utf8)), [.quit])
        XCTAssertEqual(KeyParser.actions(Array("rp?".utf8)), [.reset, .pause, .help])
        XCTAssertEqual(KeyParser.actions(Array("iI".utf8)), [.integration, .integration])
        XCTAssertEqual(KeyParser.actions([0x09, 0x1B, 0x5B, 0x5A]), [.next, .previous])
        XCTAssertEqual(KeyParser.actions(Array("\u{1B}[A\u{1B}[B\u{1B}[C\u{1B}[D\u{1B}OA".utf8)), [.previous, .next, .next, .previous, .previous])
        XCTAssertEqual(KeyParser.actions(Array("\u{1B}[1;5C".utf8)), [.next])
        XCTAssertEqual(KeyParser.actions([0x0C, 0x1B]), [.redraw, .escape])
        XCTAssertEqual(KeyParser.actions(Array("xyz".utf8)), [])
        XCTAssertEqual(KeyParser.actions(Array("l30+=-s".utf8)), [.view, .programme(2), .programme(nil), .longer, .longer, .shorter, .scale])
    }

    /// The loudness view at 80×24 with one, two and eight programmes: every programme's line
    /// (name, readings, state) and its history graph; a loud stretch reads red above the
    /// target line, a quiet one yellow, one on target green; no point older than the span is
    /// drawn; the +18 scale squeezes the same history into fewer cells.
    func testLoudnessViewWithOneTwoAndEightProgrammesAt80x24() {
        for count in [1, 2, 8] {
            var s = snapshot(channels: count)
            s.programmes = (0..<count).map { i in
                var p = ProgrammeSnapshot(name: count == 1 ? "" : "prog\(i + 1)", channels: [i], target: LoudnessTarget.profile("ebu-r128"))
                p.loudness.shortTerm = -23
                p.loudness.integrated = -23
                return p
            }
            // Ten minutes of history: 200 s at −33 LUFS (quiet), 200 s at −23, 200 s at −15 (loud),
            // and a point 11 minutes old that must not show.
            var series = LoudnessHistory.Series()
            for t in 0..<600 {
                series.times.append(Double(t))
                let level: Float = t < 200 ? -33 : t < 400 ? -23 : -15
                series.shortTerm.append(level)
                series.momentary.append(level + 1)
            }
            series.times.insert(-60, at: 0)
            series.shortTerm.insert(-5, at: 0)
            series.momentary.insert(-5, at: 0)
            var state = ViewState()
            state.view = .loudness
            let history = HistoryView(series: Array(repeating: series, count: count), now: 600)
            let screen = Layout.render(s, context: context(channels: count), state: state, width: 80, height: 24, capabilities: color, history: history)
            let lines = screen.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            XCTAssertTrue(lines[1].hasPrefix("Last 10 min, EBU +9 scale, LU"), lines[1])
            for i in 0..<count {
                let name = count == 1 ? ProgrammeSnapshot.defaultName : "prog\(i + 1)"
                XCTAssertTrue(lines.contains { $0.hasPrefix(" \(i + 1) \(name)") && $0.contains("S -23.0") && $0.hasSuffix("OK") },
                              "programme \(i + 1) of \(count):\n\(screen.text)")
            }
            XCTAssertFalse(screen.text.contains("more programmes"), screen.text)
            // The graph of the first programme: its rows below its line.
            let first = lines.firstIndex { $0.hasPrefix(" 1 ") }!
            let graphRows = count == 1 ? 21 : count == 2 ? 10 : 1
            let graph = Array(lines[(first + 1)...(first + graphRows)])
            let width = 80 - 4 - 1
            func column(_ c: Int) -> [Cell] { (0..<graphRows).map { screen[4 + c, first + 1 + $0] } }
            func zones(_ cells: [Cell]) -> Set<TerminalColor> { Set(cells.compactMap { $0.character == " " || $0.character == "·" ? nil : $0.style.color }) }
            XCTAssertEqual(zones(column(5)), [.yellow], "quiet: \(graph)")
            XCTAssertEqual(zones(column(width / 2)), [.green], "on target: \(graph)")
            XCTAssertEqual(zones(column(width - 3)), [.red], "loud: \(graph)")
            // Louder draws higher: more eighths filled in the loud column than the quiet one.
            func eighths(_ cells: [Cell]) -> Int {
                cells.reduce(0) { n, cell in n + (["▁": 1, "▂": 2, "▃": 3, "▄": 4, "▅": 5, "▆": 6, "▇": 7, "█": 8][String(cell.character)] ?? 0) }
            }
            XCTAssertGreaterThan(eighths(column(width - 3)), eighths(column(width / 2)))
            XCTAssertGreaterThan(eighths(column(width / 2)), eighths(column(5)))
            // On +9, −15 LUFS is +8 LU: just under the top (27 LU over the graph's eighths).
            XCTAssertEqual(Double(eighths(column(width - 3))) / Double(graphRows * 8), 26.0 / 27, accuracy: 1.0 / Double(graphRows * 8))
            state.scale = .plus18
            let wide = Layout.render(s, context: context(channels: count), state: state, width: 80, height: 24, capabilities: color, history: history)
            XCTAssertTrue(wide.line(1).contains("EBU +18 scale"))
            let loud18 = (0..<graphRows).map { wide[4 + width - 3, first + 1 + $0] }
            XCTAssertEqual(Double(eighths(loud18)) / Double(graphRows * 8), 44.0 / 54, accuracy: 1.0 / Double(graphRows * 8))
        }
    }

    /// A chosen programme (1 … 9) is marked and named in the title, for r and i.
    func testChosenProgrammeIsShown() {
        var s = snapshot(channels: 2)
        s.programmes = [ProgrammeSnapshot(name: "main", channels: [0]), ProgrammeSnapshot(name: "ad", channels: [1])]
        var state = ViewState()
        state.view = .loudness
        state.programme = 1
        let screen = Layout.render(s, context: context(), state: state, width: 80, height: 24, capabilities: color)
        XCTAssertTrue(screen.line(0).contains("keys: ad"), screen.line(0))
        XCTAssertTrue(screen.text.contains(">2 ad"), screen.text)
        XCTAssertFalse(screen.text.contains(">1 main"), screen.text)
    }

    func testCapabilitiesFromTheEnvironment() {
        let full = terminalCapabilities(environment: ["TERM": "xterm-256color", "LANG": "en_GB.UTF-8"])
        XCTAssertEqual(full.0, TerminalCapabilities(colors: true, unicode: true))
        XCTAssertTrue(full.addressable)
        XCTAssertFalse(terminalCapabilities(environment: ["TERM": "xterm", "NO_COLOR": "1", "LANG": "C.UTF-8"]).0.colors)
        XCTAssertTrue(terminalCapabilities(environment: ["TERM": "xterm", "NO_COLOR": "", "LANG": "C.UTF-8"]).0.colors)
        let dumb = terminalCapabilities(environment: ["TERM": "dumb", "LANG": "C.UTF-8"])
        XCTAssertFalse(dumb.0.colors || dumb.addressable)
        XCTAssertFalse(terminalCapabilities(environment: ["TERM": "xterm", "LANG": "C"]).0.unicode)
    }

    func testScaleMarksAndZones() {
        XCTAssertEqual(DisplayScale.marks(-60...0, step: 10), [-60, -50, -40, -30, -20, -10, 0])
        XCTAssertEqual(rms.zone(of: -30), .green)
        XCTAssertEqual(rms.zone(of: -18), .yellow)
        XCTAssertEqual(rms.zone(of: -6), .red)
        XCTAssertEqual(rms.value(ofFraction: 0.5), -30)
        let edges = context().barEdgesHz(bars: 48, sampleRate: 48000)
        XCTAssertEqual(edges.count, 49)
        XCTAssertEqual(edges.first!, 60, accuracy: 1e-9)
        XCTAssertEqual(edges.last!, 18000, accuracy: 1e-6)
        XCTAssertEqual(context().barEdgesHz(bars: 4, sampleRate: 22050).last!, 11025, accuracy: 1e-6)
    }
}

extension LayoutTests {
    /// A channel reading the table shows as an extra (the crest factor) is in the selected
    /// channel's detail, by label, value and unit, with no code of its own in the layout:
    /// channel 1's sine (peak −18, RMS −21.01: 3.0 dB), then channel 2 selected (silence: -).
    func testTheSelectedChannelsDetailShowsItsExtras() {
        var s = snapshot()
        s.channels[0].peakDBFS = -18
        s.channels[0].rmsDBFS = -21.01
        for width in [80, 120] {
            let screen = Layout.render(s, context: context(), state: ViewState(), width: width, height: 24, capabilities: color)
            XCTAssertTrue(screen.text.contains("crest 3.0 dB"), "\(width) columns:\n\(screen.text)")
        }
        var state = ViewState()
        state.selected = 1
        XCTAssertTrue(Layout.render(s, context: context(), state: state, width: 80, height: 24, capabilities: color).text.contains("crest - dB"))
    }
}

extension LayoutTests {
    /// The keys as the display applies them, without a terminal (`ViewState.apply`): views
    /// toggle, `+`/`-` step the history window (or the spectrogram's span in its view),
    /// `n`/`p` go round the channels, `i` pauses what runs and resumes what is paused (the
    /// selected programme, or every one), `r` resets it; quit and redraw go to the caller.
    func testTheKeysChangeTheViewAndAskForWhatTheyMean() {
        var state = ViewState()
        var s = snapshot()
        XCTAssertEqual(state.apply(.quit, shown: s, channels: 2), .quit)
        XCTAssertEqual(state.apply(.redraw, shown: s, channels: 2), .redraw)
        XCTAssertEqual(state.apply(.view, shown: s, channels: 2), .none)
        XCTAssertEqual(state.view, .loudness)
        let minutes = state.historyMinutes
        _ = state.apply(.longer, shown: s, channels: 2)
        XCTAssertGreaterThan(state.historyMinutes, minutes)
        _ = state.apply(.spectrogram, shown: s, channels: 2)
        XCTAssertEqual(state.view, .spectrogram)
        let span = state.spectrogramSeconds
        _ = state.apply(.shorter, shown: s, channels: 2)
        XCTAssertLessThan(state.spectrogramSeconds, span)
        _ = state.apply(.previous, shown: s, channels: 2)
        XCTAssertEqual(state.selected, 1, "round from the first channel to the last")
        _ = state.apply(.next, shown: s, channels: 2)
        XCTAssertEqual(state.selected, 0)
        XCTAssertEqual(state.apply(.integration, shown: s, channels: 2), .integration(nil, pause: true), "running: pause every programme")
        s.programmes[0].paused = true
        XCTAssertEqual(state.apply(.integration, shown: s, channels: 2), .integration(nil, pause: false), "paused: resume")
        XCTAssertEqual(state.apply(.reset, shown: s, channels: 2), .reset(nil))
    }
}
