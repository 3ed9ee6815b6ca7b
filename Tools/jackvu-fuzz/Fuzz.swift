// jackvu-fuzz: the coverage-guided fuzzers of jackvu's untrusted inputs (libFuzzer).
//
// Built with `-sanitize=fuzzer,address -DFUZZING` (Tools/test.sh: .build-fuzz), libFuzzer
// supplies `main` and calls `LLVMFuzzerTestOneInput` with each input; JACKVU_FUZZ_TARGET
// chooses the input path:
//   wav      an audio file for `jackvu analyze` (libsndfile's parse, jackvu's WAV reader), and
//            the same bytes as standard input's WAV (`jackvu analyze -`, down a pipe)
//   control  a UDP packet for the OSC control input (`--listen`): liblo's decoding, then
//            jackvu's command parsing
//   options  a command line (arguments separated by NUL bytes): argument-parser's parse of
//            jackvu, `jackvu analyze` or `jackvu report`, then the configuration each makes of
//            it (every option's value: alarms, programmes, targets, gating, addresses,
//            limits), or the one-line message a user would see
// Built normally (no FUZZING), it replays files given as arguments through the same entry:
// `jackvu-fuzz FILE...` (with JACKVU_FUZZ_TARGET set), for reproducing a crash.
#if canImport(Glibc)
import Glibc
#endif
import FileAnalysis
import JackVUOptions
import LoudnessLog
import Outputs

private enum Target: String { case wav, control, options }

/// JACKVU_FUZZ_TARGET (default wav); another name ends the fuzzer at once (status 64), rather
/// than fuzzing a path nobody asked for.
private let target: Target = {
    let name = getenv("JACKVU_FUZZ_TARGET").map { String(cString: $0) } ?? "wav"
    guard let target = Target(rawValue: name) else {
        fail("JACKVU_FUZZ_TARGET '\(name)' is not wav, control or options", status: 64)
    }
    return target
}()

/// A scratch file for the wav target, in a directory of this process's own (removed at exit).
private let scratch: String = {
    var template = Array(((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/jackvu-fuzz-XXXXXX").utf8CString)
    let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
    scratchDirectory = dir
    atexit {
        if let dir = scratchDirectory {
            unlink(dir + "/input")
            rmdir(dir)
        }
    }
    return dir + "/input"
}()
nonisolated(unsafe) private var scratchDirectory: String?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    switch target {
    case .wav:
        _ = Fuzzing.readAudioFile(bytes, path: scratch)
        _ = Fuzzing.readAudioStream(bytes)
    case .control:
        guard size <= ControlCommand.maxPacketSize, let messages = try? OSCDecoder.messages(in: bytes) else { return 0 }
        for m in messages { _ = ControlCommand.parse(m, prefix: "/jackvu", sender: (host: "127.0.0.1", port: 9000)) }
    case .options:
        // (A command line is at most a few KiB; each argument as the shell hands it over.)
        guard size <= 4096 else { return 0 }
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).prefix(64).map { String(decoding: $0, as: UTF8.self) }
        parseCommandLine(arguments)
    }
    return 0
}

/// What `jackvu`'s main does with its arguments before it starts anything: the parse, then
/// the configuration of the command chosen, or the message of the error.
private func parseCommandLine(_ arguments: [String]) {
    do {
        switch try JackVUCommand.parseAsRoot(arguments) {
        case let live as JackVUCommand:
            _ = try live.makeConfiguration()
        case let analyze as AnalyzeCommand:
            _ = try analyze.makeConfiguration()
            if let start = analyze.logStart { _ = Report.parseTime(start) }
        case let report as ReportCommand:
            _ = try report.targetConfiguration()
            for time in [report.from, report.to].compactMap({ $0 }) { _ = Report.parseTime(time) }
        default:
            break
        }
    } catch {
        _ = JackVUCommand.message(for: error)
        _ = JackVUCommand.exitCode(for: error)
    }
}

#if FUZZING
// SwiftPM links an executable's entry point as `<module>_main` (and `main` to it), so the
// fuzzer's `main` is this: libFuzzer's driver, with the entry above.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

@_cdecl("jackvu_fuzz_main")
public func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments, fuzzOne)
}
#else
@main
struct Replay {
    static func main() {
        for path in CommandLine.arguments.dropFirst() {
            guard let f = fopen(path, "rb") else {
                fail("cannot read \(path)", status: 66)
            }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while case let n = fread(&buffer, 1, buffer.count, f), n > 0 { bytes += buffer[0..<n] }
            fclose(f)
            _ = bytes.withUnsafeBufferPointer { fuzzOne($0.baseAddress, $0.count) }
            print("\(path): ok")
        }
    }
}
#endif

/// Writes "jackvu-fuzz: `message`" as one line to stderr and exits with `status`.
private func fail(_ message: String, status: Int32) -> Never {
    let line = "jackvu-fuzz: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(status)
}
