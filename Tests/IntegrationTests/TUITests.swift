#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// The terminal display in a real terminal emulator: tmux (on a private socket, killed at the
/// end), with a real JACK server and jacktone playing A4 into jackvu.
final class TUITests: XCTestCase {
    private var session: TmuxSession!

    override func tearDown() {
        session?.close()
    }

    private var folder: String { session.folder }
    private func tmux(_ arguments: [String]) throws { try session.tmux(arguments) }
    private func capture(escapes: Bool = false) -> String { session.capture(escapes: escapes) }
    private func waitForPane(timeout: Double = 15, _ predicate: (String) -> Bool) -> String? {
        session.waitForPane(timeout: timeout, predicate)
    }
    private func waitForFile(_ path: String, timeout: Double = 10) -> String? {
        session.waitForFile(URL(fileURLWithPath: path).lastPathComponent, timeout: timeout)
    }

    /// Starts jackvu in a tmux pane of `width`×`height`, between two `stty -g` snapshots of
    /// the pane's terminal; its exit status goes to `exit`.
    private func startJackVU(server: JackServer, environment: String, arguments: String, width: Int = 100, height: Int = 30) throws {
        let jackvu = try Executables.product("jackvu")
        session = try TmuxSession(width: width, height: height) { f in
            """
            stty -g > \(f)/before; \
            env JACK_DEFAULT_SERVER=\(server.name) \(environment) \(jackvu) \(arguments) 2> \(f)/stderr; \
            echo $? > \(f)/exit; stty -g > \(f)/after; sleep 120
            """
        }
    }

    /// A4 into jackvu: the note, a meter bar per channel and the spectrum show; a resize redraws
    /// at the new size; `q` ends jackvu (status 0) and the terminal settings are as before.
    func testNoteMetersSpectrumResizeAndQuit() throws {
        let server = try JackServer(label: "tui")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        try startJackVU(server: server, environment: "TERM=xterm-256color LANG=C.UTF-8 LC_ALL= NO_COLOR=", arguments: "--connect jacktone:out")

        let screen = waitForPane { $0.contains("440.0 Hz  A4") && $0.contains("Correlation") }
        XCTAssertNotNil(screen, "the note did not show: \(capture())")
        let lines = (screen ?? "").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let meter1 = lines.first { $0.hasPrefix(" 1 ") } ?? ""
        let meter2 = lines.first { $0.hasPrefix(" 2 ") } ?? ""
        XCTAssertTrue(meter1.contains("███") && meter1.hasSuffix("A4"), "channel 1's bar: \(meter1)")
        XCTAssertTrue(meter2.contains("-inf"), "channel 2 is silent: \(meter2)")
        XCTAssertTrue(lines.contains { $0.hasSuffix("RMS dBFS") && $0.contains("-60") }, "the meter scale")
        XCTAssertTrue(lines.contains { $0.hasPrefix("Hz") && $0.contains("1k") && $0.contains("16k") }, "the spectrum's labels")
        let spectrumRows = lines.filter { $0.contains("█") && !$0.hasPrefix(" 1 ") && !$0.contains("Hz") }
        XCTAssertGreaterThanOrEqual(spectrumRows.count, 3, "spectrum bars (and the big note)")
        XCTAssertTrue(lines[0].contains("48000 Hz") && lines[0].contains("256 frames") && lines[0].hasSuffix("? help"), lines[0])
        XCTAssertEqual(lines[0].count, 99, "the title spans the 100-column pane (last column left blank)")
        XCTAssertTrue(capture(escapes: true).contains("\u{1B}[32m"), "green meter cells")

        // Tab selects input 2.
        try tmux(["send-keys", "-t", "jv", "Tab"])
        XCTAssertNotNil(waitForPane(timeout: 20) { $0.contains("Input 2  pitch") && $0.contains("ch 2/2") }, capture())

        // Resize to 80×24: redrawn at the new width (the title's right end moves to column 80).
        try tmux(["resize-window", "-t", "jv", "-x", "80", "-y", "24"])
        let small = waitForPane(timeout: 20) { text in
            let first = text.split(separator: "\n").first.map(String.init) ?? ""
            return first.count == 79 && first.hasSuffix("? help")
        }
        XCTAssertNotNil(small, "not redrawn at 80x24: \(capture())")
        let smallLines = (small ?? "").split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertTrue(smallLines.contains { $0.hasPrefix(" 1 ") } && smallLines.contains { $0.hasPrefix(" 2 ") })
        XCTAssertTrue(smallLines.contains { $0.hasPrefix("Hz") && $0.contains("1k") })

        // i pauses the loudness integration (the worker's state, shown back by the snapshot),
        // i again resumes it.
        try tmux(["send-keys", "-t", "jv", "i"])
        XCTAssertNotNil(waitForPane(timeout: 20) { $0.contains("Loudness  PAUSED") }, capture())
        try tmux(["send-keys", "-t", "jv", "i"])
        XCTAssertNotNil(waitForPane(timeout: 20) { $0.contains("Loudness (EBU R 128)") }, capture())

        try tmux(["send-keys", "-t", "jv", "q"])
        let status = waitForFile("\(folder)/exit")
        XCTAssertEqual(status?.trimmingCharacters(in: .whitespacesAndNewlines), "0", "exit status after q")
        XCTAssertNotNil(waitForFile("\(folder)/after"))
        XCTAssertEqual(try String(contentsOfFile: "\(folder)/before", encoding: .utf8),
                       try String(contentsOfFile: "\(folder)/after", encoding: .utf8), "stty -g before and after")
        XCTAssertEqual((try? String(contentsOfFile: "\(folder)/stderr", encoding: .utf8)) ?? "", "", "nothing on stderr")
        // Back on the main screen: the alternate screen's content is gone.
        XCTAssertFalse(capture().contains("RMS dBFS"), capture())
    }

    /// SIGTERM restores the terminal too; with NO_COLOR and a C locale the screen has no
    /// colours and only ASCII, and still shows the note and meters.
    func testSigtermRestoresTheTerminalAndNoColor() throws {
        let server = try JackServer(label: "tui")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        try startJackVU(
            server: server, environment: "TERM=xterm NO_COLOR=1 LANG=C LC_ALL=",
            arguments: "--name jvterm --connect jacktone:out --channels 1", width: 80, height: 24)
        let screen = waitForPane { $0.contains("440.0 Hz  A4") && $0.contains("###") }
        XCTAssertNotNil(screen, capture())
        XCTAssertFalse((screen ?? "").unicodeScalars.contains { $0.value > 127 }, "ASCII only")
        let escapes = capture(escapes: true)
        XCTAssertNil(escapes.range(of: "\u{1B}\\[[0-9;]*3[1-7]m", options: .regularExpression), "no colours with NO_COLOR")

        _ = try Executables.run("pkill", ["-TERM", "-f", "^\(try Executables.product("jackvu")) --name jvterm"])
        XCTAssertEqual(waitForFile("\(folder)/exit")?.trimmingCharacters(in: .whitespacesAndNewlines), "0")
        XCTAssertNotNil(waitForFile("\(folder)/after"))
        XCTAssertEqual(try String(contentsOfFile: "\(folder)/before", encoding: .utf8),
                       try String(contentsOfFile: "\(folder)/after", encoding: .utf8), "stty -g before and after")
        XCTAssertFalse(capture().contains("RMS dBFS"))
    }

    /// Ctrl-C (SIGINT from the terminal: jackvu keeps ISIG on) ends jackvu with status 0; a
    /// server that dies shows as "NO JACK SERVER" until it is back; with --no-reconnect a
    /// server that shuts down ends jackvu with 69 and one line on stderr. Every way out leaves
    /// the terminal as it was.
    func testCtrlCAndServerShutdownRestoreTheTerminal() throws {
        let server = try JackServer(label: "tui")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "440"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        try startJackVU(server: server, environment: "TERM=xterm-256color", arguments: "--connect jacktone:out --channels 1")
        XCTAssertNotNil(waitForPane { $0.contains("440.0 Hz  A4") }, capture())
        try tmux(["send-keys", "-t", "jv", "C-c"])
        XCTAssertEqual(waitForFile("\(folder)/exit")?.trimmingCharacters(in: .whitespacesAndNewlines), "0", "exit status after Ctrl-C")
        XCTAssertNotNil(waitForFile("\(folder)/after"))
        XCTAssertEqual(try String(contentsOfFile: "\(folder)/before", encoding: .utf8),
                       try String(contentsOfFile: "\(folder)/after", encoding: .utf8), "stty -g before and after Ctrl-C")
        XCTAssertFalse(capture().contains("RMS dBFS"), capture())
        session.close()

        // By default jackvu waits for the server to come back, and says so in the title bar.
        try startJackVU(server: server, environment: "TERM=xterm-256color", arguments: "--connect jacktone:out --channels 1")
        XCTAssertNotNil(waitForPane { $0.contains("440.0 Hz  A4") }, capture())
        tone.stop()
        server.kill()
        XCTAssertNotNil(waitForPane(timeout: 20) { $0.contains("NO JACK SERVER: waiting for it") }, capture())
        let again = try JackServer(label: "tui")
        XCTAssertNotNil(waitForPane(timeout: 20) { $0.contains("48000 Hz  256 frames") }, capture())
        session.close()

        // With --no-reconnect it ends (69), and the terminal is restored.
        try startJackVU(server: again, environment: "TERM=xterm-256color", arguments: "--name jvexit --no-reconnect --channels 1")
        XCTAssertNotNil(waitForPane { $0.contains("48000 Hz  256 frames") }, capture())
        again.stop()
        XCTAssertEqual(waitForFile("\(folder)/exit")?.trimmingCharacters(in: .whitespacesAndNewlines), "69", "exit status after the server went away")
        XCTAssertNotNil(waitForFile("\(folder)/after"))
        XCTAssertEqual(try String(contentsOfFile: "\(folder)/before", encoding: .utf8),
                       try String(contentsOfFile: "\(folder)/after", encoding: .utf8), "stty -g before and after the shutdown")
        let stderr = try String(contentsOfFile: "\(folder)/stderr", encoding: .utf8)
        XCTAssertEqual(stderr.split(separator: "\n").count, 1, stderr)
        XCTAssertTrue(stderr.hasPrefix("jackvu: "), stderr)
        XCTAssertFalse(capture().contains("RMS dBFS"), capture())
    }

    /// A server that stops answering while the display runs — jackd stopped at jackvu's first
    /// port registration (jackvu under gdb): after the request's 10 s jackvu ends with 69 and
    /// one line, the alternate screen left first (else the line would be drawn into it and
    /// go with it, and the shell would come back on the display's screen).
    func testAServerThatStopsAnsweringGivesTheTerminalBack() throws {
        let server = try JackServer(label: "tui")
        defer { server.stop() }
        let jackvu = try Executables.product("jackvu")
        session = try TmuxSession(width: 100, height: 30) { f in
            """
            env JACK_DEFAULT_SERVER=\(server.name) TERM=xterm-256color gdb -q -batch --readnever -ex 'set breakpoint pending on' \
            -ex 'handle SIGTERM SIGINT SIGUSR1 nostop noprint pass' -ex 'break jack_port_register' -ex run \
            -ex 'shell kill -STOP \(server.pid)' -ex delete -ex continue -ex 'quit $_exitcode' \
            --args \(jackvu) --name jvhung --channels 1 --tui 2> \(f)/stderr; echo $? > \(f)/exit; sleep 120
            """
        }
        XCTAssertEqual(waitForFile("\(folder)/exit", timeout: 40)?.trimmingCharacters(in: .whitespacesAndNewlines), "69", capture())
        server.resume()
        XCTAssertEqual(try session.tmux(["display-message", "-p", "-t", "jv", "#{alternate_on}"]).trimmingCharacters(in: .whitespacesAndNewlines), "0",
                       "the alternate screen left: \(capture())")
        let lines = try String(contentsOfFile: "\(folder)/stderr", encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("jackvu:") }
        XCTAssertEqual(lines.count, 1, "\(lines)")
        XCTAssertTrue(lines.first?.contains("does not answer: registering the port jvhung:in_1") ?? false, "\(lines)")
    }

    /// The loudness view (`l`) at 80×24 with two and then eight programmes, each a mono
    /// programme of the same tone with the R 128 target: every programme's line and its
    /// history graph; with the span at 1 min (`-` three times) the graph grows by about a
    /// column a second; `2` then `i` pauses programme 2 alone (the worker's state shown back),
    /// `i` again resumes it; `q` ends jackvu with 0.
    func testLoudnessViewWithTwoAndEightProgrammesAndProgrammeKeys() throws {
        let server = try JackServer(label: "tui")
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "997", "--level", "-20"], environment: server.environment)
        defer { tone.stop() }
        try waitForPortsListed(server, ["jacktone:out"])
        for count in [2, 8] {
            let programmes = (1...count).map { "--programme p\($0)=\($0)" }.joined(separator: " ")
            let connects = Array(repeating: "--connect jacktone:out", count: count).joined(separator: " ")
            try startJackVU(
                server: server, environment: "TERM=xterm-256color LANG=C.UTF-8 LC_ALL= NO_COLOR=",
                arguments: "--channels \(count) \(connects) \(programmes) --target ebu-r128", width: 80, height: 24)
            XCTAssertNotNil(waitForPane { $0.contains("Programme") }, "\(count) programmes: \(capture())")
            try tmux(["send-keys", "-t", "jv", "l", "-", "-", "-"])
            func lines(_ text: String) -> [String] { text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
            // Every programme's line, with a short-term reading, and the graphs drawn.
            let blocks: (String) -> Int = { text in
                lines(text).dropFirst(2).joined().unicodeScalars.filter { "▁▂▃▄▅▆▇█".unicodeScalars.contains($0) }.count
            }
            let shown = waitForPane(timeout: 20) { text in
                text.contains("Last 1 min, EBU +9 scale") && (1...count).allSatisfy { p in
                    lines(text).contains { $0.hasPrefix(" \(p) p\(p) ") && $0.contains(" S -") }
                } && blocks(text) >= 2
            }
            XCTAssertNotNil(shown, "\(count) programmes in the loudness view: \(capture())")
            print("\(count) programmes at 80x24, loudness view:\n\(shown ?? capture())")
            XCTAssertFalse((shown ?? "").contains("more programmes"), "all \(count) fit")
            let before = blocks(shown ?? "")
            XCTAssertNotNil(waitForPane(timeout: 20) { blocks($0) >= before + 2 }, "the graph moves: \(before) columns, then \(capture())")

            try tmux(["send-keys", "-t", "jv", "2", "i"])
            let paused = waitForPane(timeout: 20) { text in
                lines(text).contains { $0.hasPrefix(">2 p2") && $0.hasSuffix("PAUSED") } && lines(text).contains { $0.hasPrefix(" 1 p1") && !$0.contains("PAUSED") }
            }
            XCTAssertNotNil(paused, "programme 2 alone paused: \(capture())")
            XCTAssertTrue(lines(capture())[0].contains("keys: p2"), capture())
            try tmux(["send-keys", "-t", "jv", "i"])
            XCTAssertNotNil(waitForPane(timeout: 20) { !$0.contains("PAUSED") }, "resumed: \(capture())")
            try tmux(["send-keys", "-t", "jv", "q"])
            XCTAssertEqual(waitForFile("\(folder)/exit")?.trimmingCharacters(in: .whitespacesAndNewlines), "0")
            XCTAssertEqual((try? String(contentsOfFile: "\(folder)/stderr", encoding: .utf8)) ?? "", "", "nothing on stderr")
            session.close()
        }
    }
}
