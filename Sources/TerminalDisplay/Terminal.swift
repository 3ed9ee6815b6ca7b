#if canImport(Glibc)
import Glibc
#endif
import Realtime

/// The controlling terminal, taken over for the display: raw keys (no echo, no line editing;
/// Ctrl-C still sends SIGINT), the alternate screen, a hidden cursor. `restore()` gives it
/// back exactly as it was (the saved termios settings, the main screen, the cursor), and runs
/// also from a fatal signal (SIGSEGV, SIGABRT, …) through a handler that uses only
/// async-signal-safe calls.
final class Terminal: @unchecked Sendable {
    // @unchecked Sendable: the descriptors are fixed; `restored` is only touched by the
    // display thread and `restore()`, which the engine calls after that thread has ended.
    /// Where the screen is written (stdout when it is a terminal, else /dev/tty).
    let output: Int32
    /// Where keys are read (stdin when it is a terminal, else /dev/tty; -1: no keys).
    let input: Int32
    private var saved = termios()
    private var hasSaved = false
    private var restored = false
    private var opened: [Int32] = []
    /// Whether the alternate screen and cursor addressing are used (not on a dumb terminal).
    let addressable: Bool

    enum OpenError: Error { case noTerminal }

    init(addressable: Bool) throws(OpenError) {
        self.addressable = addressable
        var out: Int32 = 1
        if isatty(1) == 0 {
            out = open("/dev/tty", O_WRONLY | O_CLOEXEC | O_NOCTTY)
            guard out >= 0 else { throw .noTerminal }
            opened.append(out)
        }
        output = out
        var inp: Int32 = 0
        if isatty(0) == 0 {
            inp = open("/dev/tty", O_RDONLY | O_CLOEXEC | O_NOCTTY)
            if inp >= 0 { opened.append(inp) }
        }
        input = inp
        if input >= 0 && tcgetattr(input, &saved) == 0 {
            hasSaved = true
            var raw = saved
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO | IEXTEN)
            raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 0
                cc[Int(VTIME)] = 0
            }
            tcsetattr(input, TCSANOW, &raw)
        }
        if addressable { write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J") }
        Terminal.installCrashRestore(self)
    }

    /// Gives the terminal back. Idempotent.
    func restore() {
        guard !restored else { return }
        restored = true
        Terminal.clearCrashRestore()
        if addressable { write("\u{1B}[0m\u{1B}[?2026l\u{1B}[?25h\u{1B}[?1049l") }
        if hasSaved { tcsetattr(input, TCSANOW, &saved) }
        for fd in opened { close(fd) }
        opened = []
    }

    /// Rows and columns (80×24 when the terminal does not say).
    func size() -> (width: Int, height: Int) {
        var ws = winsize()
        if ioctl(output, UInt(TIOCGWINSZ), &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0 {
            return (Int(ws.ws_col), Int(ws.ws_row))
        }
        return (80, 24)
    }

    /// Writes all of `text`; false when the terminal is gone (EIO, EPIPE, …).
    @discardableResult
    func write(_ text: String) -> Bool {
        var copy = text
        return copy.withUTF8 { utf8 -> Bool in
            guard var p = utf8.baseAddress else { return true }
            var left = utf8.count
            while left > 0 {
                let n = Glibc.write(output, p, left)
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN {
                        var fds = pollfd(fd: output, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&fds, 1, 100)
                        continue
                    }
                    return false
                }
                p += n
                left -= n
            }
            return true
        }
    }

    /// Waits up to `milliseconds` for keys and returns the bytes read (empty: none).
    func readKeys(waiting milliseconds: Int32) -> [UInt8] {
        guard input >= 0 else {
            if milliseconds > 0 { usleep(UInt32(milliseconds) * 1000) }
            return []
        }
        var fds = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
        guard poll(&fds, 1, milliseconds) > 0 else { return [] }
        if fds.revents & Int16(POLLIN) == 0 {
            // Hung up or an error: no more keys; keep the pace without spinning.
            if milliseconds > 0 { usleep(UInt32(milliseconds) * 1000) }
            return []
        }
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(input, &buffer, buffer.count)
        return n > 0 ? Array(buffer[0..<n]) : []
    }

    // MARK: Restoring from a fatal signal

    /// What the crash handler writes and restores, prepared in advance (the handler may not
    /// allocate).
    nonisolated(unsafe) private static var crashTerminal: (output: Int32, input: Int32, saved: termios, hasSaved: Bool, addressable: Bool)?
    private static let crashSequence: StaticString = "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l"

    private static func installCrashRestore(_ t: Terminal) {
        crashTerminal = (t.output, t.input, t.saved, t.hasSaved, t.addressable)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            Terminal.putBackAfterCrash()
            // SA_RESETHAND put the default action back: die of the same signal.
            raise(signal)
        }
        // And before an abrupt end (a JACK server that stopped answering the main thread).
        AbruptExit.restore = { Terminal.putBackAfterCrash() }
        action.sa_flags = Int32(truncatingIfNeeded: SA_RESETHAND)
        sigemptyset(&action.sa_mask)
        for s in [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE] { sigaction(s, &action, nil) }
    }

    /// The terminal as it was, from a crash handler or an abrupt end (no allocation).
    private static func putBackAfterCrash() {
        guard let t = Terminal.crashTerminal else { return }
        if t.addressable {
            _ = Glibc.write(t.output, Terminal.crashSequence.utf8Start, Terminal.crashSequence.utf8CodeUnitCount)
        }
        if t.hasSaved {
            var saved = t.saved
            tcsetattr(t.input, TCSANOW, &saved)
        }
    }

    private static func clearCrashRestore() {
        AbruptExit.restore = nil
        crashTerminal = nil
        for s in [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE] { signal(s, SIG_DFL) }
    }
}

/// What the environment says the terminal can do: no colours with `NO_COLOR` (any value, as
/// no-color.org asks) or `TERM=dumb`/unset; Unicode block characters in a UTF-8 locale.
public func terminalCapabilities(environment: [String: String]) -> (TerminalCapabilities, addressable: Bool) {
    let term = environment["TERM"] ?? ""
    let dumb = term.isEmpty || term == "dumb"
    let noColor = !(environment["NO_COLOR"] ?? "").isEmpty
    let locale = environment["LC_ALL"].flatMap { $0.isEmpty ? nil : $0 }
        ?? environment["LC_CTYPE"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["LANG"] ?? ""
    let utf8 = locale.uppercased().contains("UTF-8") || locale.uppercased().contains("UTF8")
    return (TerminalCapabilities(colors: !dumb && !noColor, unicode: utf8 && !dumb), !dumb)
}
