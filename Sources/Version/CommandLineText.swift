/// argument-parser's message for a command line it refused, as one line: it puts a choice
/// list ("  - rms") and hints on lines of their own, and jackvu's and jacktone's errors are
/// one line each (`jackvu: …`, `jacktone: …`; jackd's log for the in-process form).
public func oneLineMessage(_ message: String) -> String {
    let lines = message.split(separator: "\n").map { line in
        let text = line.drop { $0 == " " }
        return String(text.hasPrefix("- ") ? text.dropFirst(2) : text)
    }.filter { !$0.isEmpty }
    guard let first = lines.first else { return "bad arguments" }
    let rest = lines.dropFirst().joined(separator: ", ")
    return rest.isEmpty ? first : first + " " + rest
}
