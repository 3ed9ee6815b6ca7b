import ArgumentParser
import Analysis
import Settings
import FileAnalysis
import JackVU
import JackVUOptions
import LoudnessLog
import MetricsExport
import Outputs
import Realtime
import TerminalDisplay
import WebDisplay
import Version

#if canImport(Glibc)
import Glibc
#endif

// Parse. Errors are one line on stderr and exit 64; --help and --version print to stdout.
let command: ParsableCommand
do {
    command = try JackVUCommand.parseAsRoot()
} catch {
    let code = JackVUCommand.exitCode(for: error)
    if code == .success {  // --help, --version
        JackVUCommand.exit(withError: error)
    }
    printError("\(oneLineMessage(JackVUCommand.message(for: error))) (see jackvu --help)")
    exit(ExitStatus.usage.rawValue)
}

do throws(any Error) {
    switch command {
    case let report as ReportCommand:
        exit(runReport(report))
    case let analyze as AnalyzeCommand:
        var analysis = FileAnalysis(
            configuration: try analyze.makeConfiguration(), format: analyze.format, stream: analyze.stream)
        analysis.reportPath = analyze.report
        analysis.logPath = analyze.log
        if let start = analyze.logStart {
            guard let t = Report.parseTime(start) else {
                throw EngineError(.usage, "--log-start '\(start)': expected a time like 2026-11-25T06:00:00Z or Unix seconds")
            }
            analysis.logStart = t
        }
        exit(analysis.run(files: analyze.files))
    case var live as JackVUCommand:
        // Under a session manager (NSM): its client ID is the name, its options the session's.
        var session: LiveSession?
        if let url = getenv("NSM_URL").map({ String(cString: $0) }), !url.isEmpty {
            let joined = try LiveSession.join(url: url, given: live, arguments: Array(CommandLine.arguments.dropFirst()))
            session = joined.0
            live = joined.1
        }
        do throws(any Error) {
            let configuration = try live.makeConfiguration()
            var plugged: [Engine.OutputMaker] = []
            // The Prometheus metrics: recorded once per update, served by --metrics and --http.
            let metrics = MetricsHandOff()
            if configuration.metrics != nil || configuration.http != nil {
                plugged.append { context in
                    let output = try makeMetrics(
                        context, configuration.metrics, limits: configuration.httpLimits,
                        bits: configuration.send.contains(.bits), stereo: configuration.send.contains(.stereo))
                    metrics.output = output
                    return output
                }
            }
            if let http = configuration.http {
                plugged.append { context in
                    try makeWebDisplay(context, http, limits: configuration.httpLimits, origins: configuration.httpOrigins, metrics: metrics.output?.exporter)
                }
            }
            if live.usesTerminal {
                plugged.append(makeTerminalDisplay)
            }
            let engine = try Engine(configuration: configuration, outputs: plugged)
            engine.onStarted = { name in session?.started(as: name) }
            try engine.run()
        } catch {
            if let session {
                let failure = error as? EngineError ?? EngineError(.usage, "\(error)")
                session.failed(failure)
            }
            throw error
        }
        exit(ExitStatus.success.rawValue)
    default:  // the parser's own commands, e.g. `jackvu help analyze`
        var builtIn = command
        do { try builtIn.run() } catch { JackVUCommand.exit(withError: error) }
        exit(0)
    }
} catch let error as ConfigurationError {
    printError(error.description)
    exit(ExitStatus.usage.rawValue)
} catch let error as EngineError {
    printError(error.message)
    exit(error.status.rawValue)
} catch {
    printError("\(error)")
    exit(ExitStatus.software.rawValue)
}


/// The terminal display (`--tui`, or stdout is a terminal).
func makeTerminalDisplay(_ context: DisplayContext) throws -> any Display {
    do { return try TerminalDisplay(context: context, environment: ChildProcess.environment) } catch {
        throw EngineError(.usage, error.description)
    }
}

/// The metrics output made for a run, for the browser display made after it.
final class MetricsHandOff: @unchecked Sendable {
    // @unchecked Sendable: set once by the engine's thread before the next factory reads it.
    var output: MetricsOutput?
}

/// The Prometheus metrics (always with `--http`; `--metrics` adds a listener of its own, said
/// on stderr).
func makeMetrics(_ context: DisplayContext, _ listen: HTTPListenAddress?, limits: HTTPLimits, bits: Bool, stereo: Bool) throws -> MetricsOutput {
    do {
        let output = try MetricsOutput(context: context, listen: listen, limits: limits, bits: bits, stereo: stereo)
        if let address = output.address { printError("Prometheus metrics at http://\(address)/metrics") }
        return output
    } catch {
        let status: ExitStatus = if case .unresolvable = error { .noHost } else { .osError }
        throw EngineError(status, error.description.replacingOccurrences(of: "--http", with: "--metrics"))
    }
}

/// The browser display (`--http`); says where it listens on stderr.
func makeWebDisplay(_ context: DisplayContext, _ parsed: HTTPListenAddress, limits: HTTPLimits, origins: [String], metrics: MetricsExporter? = nil) throws -> any Display {
    do {
        var limits = limits
        limits.origins = origins
        let display = try WebDisplay(context: context, address: parsed, limits: limits, metrics: metrics)
        printError("browser display at http://\(display.address)/")
        return display
    } catch {
        switch error {
        case .cannotBind: throw EngineError(.osError, error.description)
        case .unresolvable: throw EngineError(.noHost, error.description)
        }
    }
}
