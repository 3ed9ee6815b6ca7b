import ArgumentParser
import JackVU

#if canImport(Glibc)
import Glibc
#endif

// Parse. Errors are one line on stderr and exit 64; --help and --version print to stdout.
let command: JackVUCommand
do {
    command = try JackVUCommand.parse()
} catch {
    let code = JackVUCommand.exitCode(for: error)
    if code == .success {
        print(JackVUCommand.fullMessage(for: error))
        exit(0)
    }
    let message = JackVUCommand.message(for: error).split(separator: "\n").first.map(String.init) ?? "bad arguments"
    printError("\(message) (see jackvu --help)")
    exit(ExitStatus.usage.rawValue)
}

do {
    let engine = try Engine(configuration: try command.makeConfiguration())
    try engine.run()
    exit(ExitStatus.success.rawValue)
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
