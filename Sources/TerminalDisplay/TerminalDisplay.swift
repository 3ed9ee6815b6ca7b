#if canImport(Glibc)
import Glibc
#endif
import Outputs
import Realtime
import Synchronization

/// The terminal display (`--tui`): the original app's screen for every channel at once, drawn
/// with plain escape sequences on its own thread. `show` only parks the newest snapshot (a
/// frame the thread had not drawn yet is replaced and counted as skipped); the thread draws
/// at most as fast as snapshots arrive (`--rate`), writes only the cells that changed, follows
/// resizes, and reads keys: q quits, r resets, i pauses the integration, p pauses the
/// display, 1 … 9 choose the programme r and i act on (0: all), l switches to the loudness
/// view (+/- its span, s its scale), g to the goniometer, w to the spectrogram (+/- its
/// span), ? help, Tab/arrows select the input, Ctrl-L redraws. The terminal is restored by `stop()` (every exit path of the engine ends
/// there) and, on a fatal signal, by a handler.
public final class TerminalDisplay: Display, @unchecked Sendable {
    public var name: String { "terminal" }
    // @unchecked Sendable: `pending` is a NewestValue, `stopping` atomic; the rest belongs to the
    // display thread (until it has been joined).
    private let context: DisplayContext
    private let terminal: Terminal
    private let capabilities: TerminalCapabilities
    private let pending = NewestValue<Snapshot>()
    private let stopping = Atomic<Bool>(false)
    private var thread: PosixThread?
    private let stopOnce = Mutex<Bool>(false)

    /// Frames drawn (for tests and benchmarks).
    public let framesDrawn = Counter()

    public enum OpenError: Error, CustomStringConvertible {
        case noTerminal
        public var description: String { "--tui: there is no terminal to draw on (use --text)" }
    }

    /// Takes over the terminal (stdout if it is one, else /dev/tty) and starts drawing.
    public init(context: DisplayContext, environment: [String: String]) throws(OpenError) {
        self.context = context
        let (capabilities, addressable) = terminalCapabilities(environment: environment)
        self.capabilities = capabilities
        do { terminal = try Terminal(addressable: addressable) } catch { throw .noTerminal }
        thread = PosixThread(name: "jackvu-tui") { [self] in run() }
    }

    public func show(_ snapshot: Snapshot) {
        if pending.put(snapshot.deepCopy()) { context.skipped.add() }
    }

    public func stop() {
        let first = stopOnce.withLock { done in defer { done = true }; return !done }
        guard first else { return }
        stopping.store(true, ordering: .relaxed)
        thread?.join()
        thread = nil
        terminal.restore()
    }

    // MARK: The display thread

    private func run() {
        var state = ViewState()
        var shown: Snapshot?
        var onScreen: Screen?
        var lastPlain = 0
        var heldSince: [Int] = []
        var dirty = true
        // The spectrogram's columns, five minutes at the update rate.
        var columns = SpectrogramColumns(capacity: Int((Double(ViewState.spectrogramSpans.last ?? 300) * context.rate).rounded(.up)))
        while !stopping.load(ordering: .relaxed) {
            // Keys (waiting for them paces the loop: at most 20 ms between looks at the slot).
            let keys = terminal.readKeys(waiting: 20)
            if !keys.isEmpty {
                apply(keys, to: &state, shown: shown, onScreen: &onScreen)
                dirty = true
            }
            if let s = pending.take(), !state.paused {
                columns.add(s)
                updateHeld(&state, &heldSince, s)
                shown = s
                dirty = true
            }
            let size = terminal.size()
            if let current = onScreen, current.width != size.width || current.height != size.height {
                onScreen = nil
                dirty = true
            }
            guard dirty else { continue }
            let screen = render(shown, state: state, columns: columns, size: size)
            guard let ok = write(screen, over: onScreen, lastPlain: &lastPlain) else { continue }
            guard ok else {  // the terminal is gone: end the run
                context.quit()
                return
            }
            framesDrawn.add()
            onScreen = screen
            dirty = false
        }
    }

    /// The keys' actions: the view's own, or the run's (quit, a reset, pausing integration);
    /// a redraw forgets what is on the screen.
    private func apply(_ keys: [UInt8], to state: inout ViewState, shown: Snapshot?, onScreen: inout Screen?) {
        for action in KeyParser.actions(keys) {
            switch state.apply(action, shown: shown, channels: shown?.channels.count ?? context.channels) {
            case .none: break
            case .quit: context.quit()
            case .reset(let p): context.resetProgramme(p)
            case .integration(let p, let pause): context.setIntegration(p, pause)
            case .redraw: onScreen = nil
            }
        }
    }

    /// Writes `screen` over `onScreen`: the cells that changed, or on a dumb terminal the whole
    /// screen as plain lines, at most once a second. Nil: not drawn yet (a dumb terminal's
    /// second is not over); false: the terminal is gone.
    private func write(_ screen: Screen, over onScreen: Screen?, lastPlain: inout Int) -> Bool? {
        if terminal.addressable { return terminal.write(ScreenDiff.update(from: onScreen, to: screen, colors: capabilities.colors)) }
        let now = monotonicNanoseconds()
        guard now - lastPlain >= 1_000_000_000 else { return nil }
        lastPlain = now
        return terminal.write("\n" + screen.text + "\n")
    }

    /// The screen for `shown` as `state` asks: the loudness history or the spectrogram's
    /// columns when that view is on.
    private func render(_ shown: Snapshot?, state: ViewState, columns: SpectrogramColumns, size: (width: Int, height: Int)) -> Screen {
        var history: HistoryView?
        if state.view == .loudness, let h = context.history {
            let now = Double(monotonicNanoseconds()) / 1e9
            history = HistoryView(series: h.series(since: now - Double(state.historyMinutes * 60)), now: now)
        }
        var spectrogram: SpectrogramView?
        if state.view == .spectrogram {
            let width = max(1, size.width - 5)
            let group = max(1, Int((Double(state.spectrogramSeconds) * context.rate / Double(width)).rounded(.up)))
            spectrogram = columns.view(channel: state.selected, columns: width, group: group)
        }
        return Layout.render(
            shown, context: context, state: state, width: size.width, height: size.height, capabilities: capabilities,
            history: history, spectrogram: spectrogram)
    }

    /// The bar's own held maximum for meters whose `hold` is on another scale: kept
    /// `--hold` seconds, then it follows the bar.
    private func updateHeld(_ state: inout ViewState, _ since: inout [Int], _ s: Snapshot) {
        guard !context.meter.holdIsSamplePeak else { return }
        let n = s.channels.count
        if state.heldMeter.count != n {
            state.heldMeter = Array(repeating: 0, count: n)
            since = Array(repeating: 0, count: n)
        }
        let now = monotonicNanoseconds()
        for c in 0..<n {
            let v = s.channels[c].meter
            if v >= state.heldMeter[c] || Double(now - since[c]) / 1e9 > context.holdSeconds {
                state.heldMeter[c] = v
                since[c] = now
            }
        }
    }
}

/// Key presses, from the bytes a terminal sends.
/// What a key asks of jackvu beyond the display's own state (`ViewState.apply`).
enum KeyEffect: Equatable {
    case none, quit, redraw
    /// Reset a programme (nil: every one).
    case reset(Int?)
    /// Pause (true) or resume (false) a programme's integration (nil: every one).
    case integration(Int?, pause: Bool)
}

extension ViewState {
    /// Applies one key's `action` to what the display shows (`shown`: the update on screen,
    /// `channels` its inputs), and says what it asks of jackvu. Pure: the keys are tested
    /// without a terminal.
    mutating func apply(_ action: KeyAction, shown: Snapshot?, channels: Int) -> KeyEffect {
        switch action {
        case .quit: return .quit
        case .reset: return .reset(programme)
        case .integration:
            // Pause what runs, resume what is paused, as shown.
            let programmes = shown?.programmes ?? []
            if let p = programme { return .integration(p, pause: !(p < programmes.count && programmes[p].paused)) }
            return .integration(nil, pause: !(!programmes.isEmpty && programmes.allSatisfy(\.paused)))
        case .view: view = view == .loudness ? .meters : .loudness
        case .goniometer: view = view == .goniometer ? .meters : .goniometer
        case .spectrogram: view = view == .spectrogram ? .meters : .spectrogram
        case .programme(let p):
            let count = shown?.programmes.count ?? 1
            programme = p.flatMap { $0 < count && count > 1 ? $0 : nil }
        case .longer, .shorter:
            let step = action == .longer ? 1 : -1
            if view == .spectrogram {
                let spans = ViewState.spectrogramSpans
                let i = spans.firstIndex(of: spectrogramSeconds) ?? 2
                spectrogramSeconds = spans[max(0, min(spans.count - 1, i + step))]
            } else {
                let windows = ViewState.historyWindows
                let i = windows.firstIndex(of: historyMinutes) ?? 3
                historyMinutes = windows[max(0, min(windows.count - 1, i + step))]
            }
        case .scale: scale = scale == .plus9 ? .plus18 : .plus9
        case .pause: paused.toggle()
        case .help: help.toggle()
        case .next: selected = (selected + 1) % max(1, channels)
        case .previous: selected = (selected + max(1, channels) - 1) % max(1, channels)
        case .redraw: return .redraw
        case .escape: help = false
        }
        return .none
    }
}

enum KeyAction: Equatable {
    case quit, reset, pause, integration, help, next, previous, redraw, escape
    /// The meters or the loudness view (`l`), the goniometer (`g`), the spectrogram (`w`).
    case view, goniometer, spectrogram
    /// Choose programme N (0-based) for `r` and `i`; nil: all (`1` … `9`, `0`).
    case programme(Int?)
    /// A longer or shorter history span (`+`/`=`, `-`).
    case longer, shorter
    /// The other EBU scale (`s`).
    case scale
}

enum KeyParser {
    /// The actions in `bytes` (several keys may arrive at once; unknown ones are ignored).
    static func actions(_ bytes: [UInt8]) -> [KeyAction] {
        var out: [KeyAction] = []
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == 0x1B {
                // CSI or SS3: ESC [ X, ESC O X (arrows), ESC [ Z (Shift-Tab).
                if i + 2 < bytes.count && (bytes[i + 1] == UInt8(ascii: "[") || bytes[i + 1] == UInt8(ascii: "O")) {
                    // Skip parameters (digits and ';') to the final byte.
                    var j = i + 2
                    while j < bytes.count && (bytes[j] == UInt8(ascii: ";") || (bytes[j] >= 0x30 && bytes[j] <= 0x39)) { j += 1 }
                    if j < bytes.count {
                        switch bytes[j] {
                        case UInt8(ascii: "A"), UInt8(ascii: "D"), UInt8(ascii: "Z"): out.append(.previous)
                        case UInt8(ascii: "B"), UInt8(ascii: "C"): out.append(.next)
                        default: break
                        }
                    }
                    i = j + 1
                    continue
                }
                out.append(.escape)
                i += 1
                continue
            }
            switch b {
            case UInt8(ascii: "q"), UInt8(ascii: "Q"): out.append(.quit)
            case UInt8(ascii: "r"), UInt8(ascii: "R"): out.append(.reset)
            case UInt8(ascii: "i"), UInt8(ascii: "I"): out.append(.integration)
            case UInt8(ascii: "p"), UInt8(ascii: "P"), UInt8(ascii: " "): out.append(.pause)
            case UInt8(ascii: "?"), UInt8(ascii: "h"): out.append(.help)
            case UInt8(ascii: "l"), UInt8(ascii: "L"): out.append(.view)
            case UInt8(ascii: "g"), UInt8(ascii: "G"): out.append(.goniometer)
            case UInt8(ascii: "w"), UInt8(ascii: "W"): out.append(.spectrogram)
            case UInt8(ascii: "0"): out.append(.programme(nil))
            case UInt8(ascii: "1")...UInt8(ascii: "9"): out.append(.programme(Int(b - UInt8(ascii: "1"))))
            case UInt8(ascii: "+"), UInt8(ascii: "="): out.append(.longer)
            case UInt8(ascii: "-"), UInt8(ascii: "_"): out.append(.shorter)
            case UInt8(ascii: "s"), UInt8(ascii: "S"): out.append(.scale)
            case 0x09: out.append(.next)
            case 0x0C: out.append(.redraw)
            default: break
            }
            i += 1
        }
        return out
    }
}
