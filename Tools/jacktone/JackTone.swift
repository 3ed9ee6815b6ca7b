#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Jack
import Realtime
import SessionManagement
import Synchronization
import ToneSynth
import Version

/// `jacktone`: a JACK test-tone generator.
@main
struct JackTone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jacktone",
        abstract: "Play sine tones and chords into JACK, with click-free ramps.",
        discussion: """
            jacktone registers one output port, NAME:out, and plays the sum of sines at every \
            --freq, each at --level dBFS peak (so one sine's RMS is level - 3.01 dB). It runs \
            until SIGINT or SIGTERM (or --duration), then fades out and closes. With \
            --inverted it also registers NAME:out_inverted, the same signal with its polarity \
            inverted (for testing phase correlation and phase alarms). With --noise it also \
            registers NAME:noise_1 and NAME:noise_2, two independent white noises (uniform, \
            peak --level dBFS, RMS 4.77 dB below; uncorrelated: a goniometer's round cloud). \
            For testing bit meters, --dc adds a constant (DC offset) to NAME:out, and --bits \
            rounds NAME:out to words of that many bits (16: what a 16-bit file holds); \
            --level -200 --dc DBFS plays a constant.

            While it runs, each line on stdin changes the tones, with ramps: a list of \
            frequencies in Hz ("440 554.37 659.26"), "level DBFS" (-200 to 0), "off" (silence) \
            or "quit"; a line it cannot use is ignored, with one line on stderr. For testing \
            meters, "inject nan|inf|-inf|denormal SECONDS" replaces the output with that value \
            for SECONDS (up to 3600).

            Exit codes: 0 done; 64 bad option or value; 66 a --connect pattern matches no port; \
            69 no JACK server, or it shut down (or no session manager answers at NSM_URL); 70 \
            internal failure; 74 the session's options cannot be written; 75 the client name is \
            taken.

            Under a session manager (NSM_URL set: New Session Manager, RaySession, Agordejo) \
            the client ID is the JACK client name, and the tones, level, ramp and --connect \
            are saved in the session and restored when it opens.
            """,
        version: JackVUVersion.string)

    @Option(name: .long, help: ArgumentHelp("JACK client name; the port is NAME:out.", valueName: "name"))
    var name = "jacktone"

    @Option(name: .long, help: ArgumentHelp("JACK server to use (default: $JACK_DEFAULT_SERVER, else the default server).", valueName: "name"))
    var server: String?

    @Option(name: .long, parsing: .unconditionalSingleValue, help: ArgumentHelp("Frequency of a sine, in Hz; repeat for a chord (up to 16).", valueName: "Hz"))
    var freq: [Double] = [440]

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Peak level of each sine, in dBFS.", valueName: "dBFS"))
    var level = -18.0

    @Option(name: .long, help: ArgumentHelp("Connect the output to the input ports matching this regex; repeatable.", valueName: "port-or-regex"))
    var connect: [String] = []

    @Option(name: .long, help: ArgumentHelp("Length of the fade in, fade out and of every change, in milliseconds.", valueName: "ms"))
    var ramp = 20.0

    @Option(name: .long, help: ArgumentHelp("Stop after this many seconds (default: run until a signal).", valueName: "s"))
    var duration: Double?

    @Flag(name: .long, help: "Also register NAME:out_inverted, the same signal with its polarity inverted.")
    var inverted = false

    @Flag(name: .long, help: "Also register NAME:noise_1 and NAME:noise_2, two independent white noises peaking at --level dBFS.")
    var noise = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Add a constant of this level to NAME:out (a DC offset), in dBFS.", valueName: "dBFS"))
    var dc: Double?

    @Option(name: .long, help: ArgumentHelp("Round NAME:out to words of this many bits, 8 to 24 (16: as a 16-bit file).", valueName: "bits"))
    var bits: Int?

    /// Parses the command line and runs. A bad option or value is one line on stderr and 64,
    /// as jackvu's (argument-parser's own message spans lines: the error, the usage, a hint);
    /// --help and --version print to stdout.
    static func main() {
        var command: JackTone
        do {
            command = try parse(nil)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            fail("\(oneLineMessage(message(for: error))) (see jacktone --help)", 64)
        }
        do { try command.run() } catch { exit(withError: error) }
    }

    func validate() throws {
        guard !name.isEmpty, name.utf8.count <= 63, !name.contains(":") else {
            throw ValidationError("--name must be 1 to 63 bytes without ':' (a JACK client name)")
        }
        guard (1...ToneRequest.capacity).contains(freq.count) else {
            throw ValidationError("--freq: give 1 to \(ToneRequest.capacity) frequencies")
        }
        for f in freq where !(f > 0 && f < 1_000_000) {
            throw ValidationError("--freq \(f) is not a frequency above 0 Hz and below 1 MHz (and the server's Nyquist frequency)")
        }
        guard level <= 0, level >= -200 else { throw ValidationError("--level must be from -200 to 0 dBFS") }
        guard ramp >= 1, ramp <= 10_000 else { throw ValidationError("--ramp must be from 1 to 10000 ms") }
        if let d = duration, !(d > 0) { throw ValidationError("--duration must be above 0 s") }
        if let dc, !(dc <= 0 && dc >= -200) { throw ValidationError("--dc must be from -200 to 0 dBFS") }
        if let bits, !(8...24).contains(bits) { throw ValidationError("--bits must be from 8 to 24") }
    }

    mutating func run() throws {
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGINT, SIGTERM, SIGUSR1, SIGALRM] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        // Under a session manager: its client ID is the name, the tones are the session's.
        let session = joinSession()
        // The requests after the open bounded as the open is (`RequestWatch`): a server that
        // stops answering ends jacktone after 10 s with one line and 69.
        let watch = RequestWatch.endingTheProcess(server: server, status: 69, say: complain)
        defer { watch.stop() }

        let client: Client
        do {
            client = try Client(name: name, server: server)
        } catch {
            fail(error.description, error == .nameInUse(name) ? 75 : 69)
        }
        if client.name != name {
            complain("the client name '\(name)' is taken; this client is '\(client.name)': its port is \(client.name):out")
        }
        let port: AudioOutPort
        do { port = try client.registerAudioOutput(name: "out") } catch { fail(error.description, 70) }
        try? client.setProperty(port, key: MetadataKey.signalType, value: "AUDIO")
        try? client.setProperty(port, key: MetadataKey.prettyName, value: "Tone")
        var invertedPort: AudioOutPort?
        if inverted {
            do { invertedPort = try client.registerAudioOutput(name: "out_inverted") } catch { fail(error.description, 70) }
            if let invertedPort {
                try? client.setProperty(invertedPort, key: MetadataKey.signalType, value: "AUDIO")
                try? client.setProperty(invertedPort, key: MetadataKey.prettyName, value: "Tone, inverted")
            }
        }

        var noisePorts: [AudioOutPort] = []
        if noise {
            for k in 1...2 {
                do { noisePorts.append(try client.registerAudioOutput(name: "noise_\(k)")) } catch { fail(error.description, 70) }
                try? client.setProperty(noisePorts[k - 1], key: MetadataKey.signalType, value: "AUDIO")
                try? client.setProperty(noisePorts[k - 1], key: MetadataKey.prettyName, value: "White noise \(k)")
            }
        }

        let rate = client.sampleRate
        for f in freq where f >= Double(rate) / 2 {
            client.close()
            fail("--freq \(f) Hz is not below the Nyquist frequency (\(rate / 2) Hz at \(rate) Hz)", 64)
        }
        let sampleRate = Counter()
        sampleRate.store(rate)
        let requests = TripleBuffer { ToneRequest() }
        let writer = Mutex(0)  // serialises the two writers (stdin thread, main thread)
        @Sendable func send(_ frequencies: [Double], _ amplitude: Double) {
            writer.withLock { generation in
                generation += 1
                requests.withBack { r in
                    r.count = min(frequencies.count, ToneRequest.capacity)
                    for k in 0..<r.count { r.frequencies[k] = frequencies[k] }
                    r.amplitude = amplitude
                    r.generation = generation
                }
                requests.publish()
            }
        }
        let amplitude = Mutex(pow(10, level / 20))
        let renderer = ToneRenderer(
            port: port, requests: requests, sampleRate: sampleRate, rampSeconds: ramp / 1000, inverted: invertedPort,
            noise: noisePorts, noisePeak: Float(pow(10, level / 20)),
            offset: dc.map { Float(pow(10, $0 / 20)) } ?? 0, wordBits: bits ?? 0)
        let shutdown = Atomic<Bool>(false)
        let notifications = ToneNotifications(sampleRate: sampleRate) { _ in
            shutdown.store(true, ordering: .relaxed)
            kill(getpid(), SIGUSR1)
        }
        client.setHandlers(notifications: notifications) { [renderer] scope in renderer.process(scope) }
        client.warmUp()
        send(freq, amplitude.withLock { $0 })
        do { try client.activate() } catch { client.close(); fail(error.description, 70) }

        for pattern in connect {
            let targets = (try? client.portNames(matching: pattern, direction: .input)) ?? []
            guard !targets.isEmpty else {
                client.close()
                fail("--connect '\(pattern)' matches no input port (see jack_lsp)", 66)
            }
            for target in targets {
                // A client that has just registered its ports may not be active yet, and JACK
                // refuses connections to inactive clients: retry for up to two seconds.
                var attempt = 0
                while true {
                    do {
                        try client.connect(port.name, to: target)
                        break
                    } catch {
                        attempt += 1
                        if attempt >= 40 { client.close(); fail(error.description, 70) }
                        usleep(50_000)
                    }
                }
            }
        }

        // Commands on stdin, on their own thread (it may block on read forever; it is not joined).
        let current = Mutex(freq)
        let lastTones = Mutex(freq)  // what "off" silenced, saved in a session
        let levelDBFS = Mutex(level)
        if let session {
            let (ramp, connect) = (ramp, connect)
            session.client.onSave {
                let saved = JackTone.arguments(
                    freq: lastTones.withLock { $0 }, level: levelDBFS.withLock { $0 },
                    ramp: ramp, connect: connect)
                do throws(SessionError) {
                    try SessionOptions.save(saved, program: "jacktone", to: session.open.path)
                    session.client.markClean()
                    return .success("saved")
                } catch {
                    complain(error.message)
                    return .failure(error)
                }
            }
            session.client.opened("playing \(freq.map { "\($0)" }.joined(separator: " ")) Hz as \(client.name)")
        }
        _ = PosixThread(name: "jacktone-stdin") {
            while let line = readLine() {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
                guard let first = words.first else { continue }
                switch first {
                case "quit", "exit":
                    kill(getpid(), SIGTERM)
                    return
                case "off", "silence":
                    current.withLock { $0 = [] }
                    send([], amplitude.withLock { $0 })
                    session?.client.markDirty()
                case "inject":
                    // Test aid: `inject nan|inf|-inf|denormal SECONDS` replaces the output.
                    let kinds = ["nan": 1, "inf": 2, "-inf": 3, "denormal": 4]
                    guard words.count == 3, let kind = kinds[String(words[1])], let seconds = Double(words[2]), seconds > 0, seconds <= 3600 else {
                        complain("ignored '\(line)': expected 'inject nan|inf|-inf|denormal SECONDS' (up to 3600)")
                        continue
                    }
                    renderer.injectKind.store(kind)
                    renderer.injectFrames.store(Int(seconds * Double(max(1, sampleRate.count))))
                case "level":
                    guard words.count == 2, let db = Double(words[1]), db <= 0, db >= -200 else {
                        complain("ignored '\(line)': expected 'level DBFS' (-200 to 0, as --level)")
                        continue
                    }
                    amplitude.withLock { $0 = pow(10, db / 20) }
                    levelDBFS.withLock { $0 = db }
                    send(current.withLock { $0 }, amplitude.withLock { $0 })
                    session?.client.markDirty()
                default:
                    let values = words.compactMap { Double($0) }
                    guard values.count == words.count, values.count <= ToneRequest.capacity,
                        values.allSatisfy({ $0 > 0 && $0 < Double(rate) / 2 })
                    else {
                        complain("ignored '\(line)': expected up to 16 frequencies in Hz, 'level DBFS', 'off' or 'quit'")
                        continue
                    }
                    current.withLock { $0 = values }
                    lastTones.withLock { $0 = values }
                    send(values, amplitude.withLock { $0 })
                    session?.client.markDirty()
                }
            }
        }

        if let duration { alarmAfter(seconds: duration) }
        var received: Int32 = 0
        sigwait(&signals, &received)
        if shutdown.load(ordering: .relaxed) {
            client.close()
            fail("the JACK server shut down", 69)
        }
        // Fade out, wait for silence (at most the ramp plus a little), then close.
        send([], 0)
        let deadline = monotonicNanoseconds() + Int((ramp / 1000 + 0.5) * 1e9)
        while renderer.sounding.count > 0 && monotonicNanoseconds() < deadline { usleep(2_000) }
        client.close()
    }
}

/// jacktone in a session manager's session.
struct ToneSession {
    let client: NSMClient
    let open: NSMClient.Open
}

/// The session, once joined: a failure is reported to it too.
nonisolated(unsafe) var failureSession: NSMClient?

extension JackTone {
    /// The options as arguments, as a session saves them.
    var arguments: [String] { JackTone.arguments(freq: freq, level: level, ramp: ramp, connect: connect) }

    static func arguments(freq: [Double], level: Double, ramp: Double, connect: [String]) -> [String] {
        var out: [String] = []
        for f in freq { out += ["--freq", "\(f)"] }
        out += ["--level", "\(level)", "--ramp", "\(ramp)"]
        for c in connect { out += ["--connect", c] }
        return out
    }

    /// With `NSM_URL` set: announces, waits for the open, takes the client ID as the name and
    /// the saved options (or saves the given ones). Exits on failure (69, 64, 74).
    mutating func joinSession() -> ToneSession? {
        guard let url = getenv("NSM_URL").map({ String(cString: $0) }), !url.isEmpty else { return nil }
        let client: NSMClient
        let open: NSMClient.Open
        do {
            client = try NSMClient(url: url)
            _ = try client.announce(
                application: "jacktone", capabilities: ":dirty:",
                executable: CommandLine.arguments.first.map { $0.split(separator: "/").last.map(String.init) ?? $0 } ?? "jacktone")
            open = try client.waitForOpen()
        } catch {
            fail(error.message, 69)
        }
        failureSession = client
        do {
            if let restored = try SessionOptions.load(from: open.path) {
                do { self = try JackTone.parse(restored) } catch {
                    fail("the options saved in \(SessionOptions.file(in: open.path)) are not valid: \(JackTone.message(for: error))", 64)
                }
            } else {
                try SessionOptions.save(arguments, program: "jacktone", to: open.path)
            }
        } catch {
            fail(error.message, 74)
        }
        name = open.clientID
        return ToneSession(client: client, open: open)
    }
}

/// Prints `jacktone: MESSAGE` on stderr.
func complain(_ message: String) {
    let line = "jacktone: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

/// Prints one line on stderr and exits with `code`.
func fail(_ message: String, _ code: Int32) -> Never {
    complain(message)
    failureSession?.openFailed(.launchFailed, message)
    exit(code)
}

/// Delivers SIGALRM after `seconds` (which the main thread's sigwait receives).
func alarmAfter(seconds: Double) {
    var timer = itimerval()
    timer.it_value.tv_sec = Int(seconds)
    timer.it_value.tv_usec = Int((seconds - Double(Int(seconds))) * 1e6)
    setitimer(__itimer_which_t(ITIMER_REAL.rawValue), &timer, nil)
}
