import ArgumentParser
import JackVU

/// The `jackvu` command line.
struct JackVUCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jackvu",
        abstract: "Meter and analyse JACK audio in real time: levels, spectrum and pitch as OSC-style text and CV meter ports.",
        discussion: """
            jackvu registers audio inputs in_1 … in_N and CV outputs meter_1 … meter_N, analyses \
            every input (sample peak and RMS in dBFS, an FFT spectrum as log-spaced bars, the peak \
            frequency with its note name) and prints the results to stdout as OSC-style text, one \
            message per line, exactly as oscdump prints them:
              /jackvu/ch/1/rms f -21.030151
              /jackvu/ch/1/pitch fsf 440.000000 "A4" 0.012345
            meter_N carries channel N's display level: 0..1 linear over --meter-floor..0 dBFS of \
            RMS. It runs until SIGINT or SIGTERM. The sample rate is always the JACK server's.

            Exit codes: 0 stopped by a signal; 64 bad option or value; 66 a --connect pattern \
            matches no port; 69 no JACK server, or it shut down; 70 internal failure; 74 stdout \
            closed; 75 the client name is taken.
            """,
        version: "0.1.0")

    @Option(name: .long, help: ArgumentHelp("JACK client name; ports are NAME:in_N and NAME:meter_N.", valueName: "name"))
    var name = "jackvu"

    @Option(name: .long, help: ArgumentHelp("JACK server to use (default: $JACK_DEFAULT_SERVER, else the default server).", valueName: "name"))
    var server: String?

    @Option(name: .long, help: ArgumentHelp("Number of inputs and meter ports (1-64).", valueName: "n"))
    var channels = 2

    @Option(name: .long, help: ArgumentHelp(
        "Connect output ports matching this regex (as jack_lsp lists them) to the inputs, in order. Repeat for further inputs; a regex matching several ports fills successive inputs.",
        valueName: "port-or-regex"))
    var connect: [String] = []

    @Option(name: .customLong("fft-size"), help: ArgumentHelp("FFT size in samples: a power of two from 256 to 65536.", valueName: "n"))
    var fftSize = 4096

    @Option(name: .long, help: ArgumentHelp("Overlap of successive FFT frames, as a fraction or a percentage (0-0.95, e.g. 0.75 or 75%). A new analysis comes every fft-size × (1 − overlap) samples.", valueName: "fraction"))
    var overlap = "75%"

    @Option(name: .long, help: ArgumentHelp("Number of log-spaced spectrum bars.", valueName: "n"))
    var bars = 48

    @Option(name: .customLong("bars-from"), help: ArgumentHelp("Lower edge of the first bar, in Hz.", valueName: "Hz"))
    var barsFrom = 60.0

    @Option(name: .customLong("bars-to"), help: ArgumentHelp("Upper edge of the last bar, in Hz (at most the Nyquist frequency).", valueName: "Hz"))
    var barsTo = 18000.0

    @Option(name: .long, help: ArgumentHelp("Text updates per second, at most.", valueName: "Hz"))
    var rate = 20.0

    @Option(name: .long, help: ArgumentHelp("OSC address prefix of every message.", valueName: "path"))
    var prefix = "/jackvu"

    @Option(name: .customLong("meter-floor"), parsing: .unconditional, help: ArgumentHelp(
        "Level shown as 0 on the meter ports and in level/hold, in dBFS (0 dBFS shows as 1).", valueName: "dBFS"))
    var meterFloor = -60.0

    @Option(name: .long, help: ArgumentHelp("Fall rate of the display values (level, hold), in dB per second.", valueName: "dB/s"))
    var fall = 20.0

    @Option(name: .long, help: ArgumentHelp("How long the peak hold keeps a new peak before falling, in seconds.", valueName: "s"))
    var hold = 1.5

    @Flag(name: .customLong("rt-canary"), help: .private)
    var realtimeCanary = false

    /// The validated configuration.
    func makeConfiguration() throws(ConfigurationError) -> Configuration {
        var c = Configuration()
        c.clientName = name
        c.serverName = server
        c.channels = channels
        c.connect = connect
        c.fftSize = fftSize
        c.overlap = try Self.parseFraction(overlap)
        c.bars = bars
        c.barsFromHz = barsFrom
        c.barsToHz = barsTo
        c.rate = rate
        c.prefix = prefix
        c.meterFloorDBFS = meterFloor
        c.fallDBPerSecond = fall
        c.holdSeconds = hold
        c.realtimeCanary = realtimeCanary
        try c.validate()
        return c
    }

    /// `0.75` or `75%` → 0.75.
    static func parseFraction(_ text: String) throws(ConfigurationError) -> Double {
        let trimmed = text.trimmingSuffix("%")
        guard let value = Double(trimmed.text), value.isFinite else {
            throw ConfigurationError(option: "--overlap", message: "'\(text)' is not a number (e.g. 0.75 or 75%)")
        }
        if trimmed.hadSuffix { return value / 100 }
        guard value < 1 else {
            throw ConfigurationError(
                option: "--overlap", message: "\(text) is not a fraction below 1 (for a percentage write \(text)%)")
        }
        return value
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> (text: String, hadSuffix: Bool) {
        hasSuffix(suffix) ? (String(dropLast(suffix.count)), true) : (self, false)
    }
}
