import ArgumentParser
import JackVU

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
    let message = JackVUCommand.message(for: error).split(separator: "\n").first.map(String.init) ?? "bad arguments"
    printError("\(message) (see jackvu --help)")
    exit(ExitStatus.usage.rawValue)
}

do {
    switch command {
    case let analyze as AnalyzeCommand:
        let analysis = FileAnalysis(
            configuration: try analyze.makeConfiguration(), format: analyze.format, stream: analyze.stream)
        exit(analysis.run(files: analyze.files))
    case let live as JackVUCommand:
        let engine = try Engine(configuration: try live.makeConfiguration())
        try engine.run()
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
