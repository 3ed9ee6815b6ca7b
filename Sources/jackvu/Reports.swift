#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Settings
import JackVUOptions
import LoudnessLog
import Outputs
import Version

/// `jackvu report LOG`: reads the log, judges each programme over each segment, writes the
/// report. Returns the exit status.
func runReport(_ command: ReportCommand) -> Int32 {
    let targets: Configuration
    do { targets = try command.targetConfiguration() } catch {
        printError(error.description)
        return ExitStatus.usage.rawValue
    }
    func time(_ text: String?, _ option: String) throws(EngineError) -> Double? {
        guard let text else { return nil }
        guard let t = Report.parseTime(text), t <= LogReader.latestTime else {
            throw EngineError(.usage, "\(option) '\(text)': expected a time like 2026-11-25T06:00:00Z, 2026-11-25 or Unix seconds (1970 to 2286)")
        }
        return t
    }
    do throws(EngineError) {
        let reader: LogReader
        do { reader = try LogReader(path: command.log) } catch { throw EngineError(.noInput, error.description) }
        let span: (Double, Double)?
        do { span = try reader.timeSpan() } catch { throw EngineError(.noInput, error.description) }
        let from = try time(command.from, "--from") ?? (span.map { $0.0 - 0.1 } ?? 0)
        let to = try time(command.to, "--to") ?? (span?.1 ?? from)
        guard to > from else {
            if command.to == nil && span == nil {
                throw EngineError(.noInput, "'\(command.log)' has no loudness blocks (none with a time from 1970 to 2286) to take the range from: name it with --from and --to")
            }
            throw EngineError(.usage, command.to == nil ? "--from is after the log's last block" : "--to must be after --from")
        }
        let read: LogReader.Read
        do {
            read = try reader.read(from: from, to: to, programmes: command.programme.isEmpty ? nil : command.programme) { name in
                targets.targets.isEmpty ? nil : targets.target(for: name)
            }
        } catch { throw EngineError(.noInput, error.description) }
        var segments: [ReportSegment]?
        if let how = command.segments, how == "marks" || segmentCount(how, from: from, to: to) ?? 0 <= Report.segmentLimit {
            segments = how == "marks"
                ? ReportSegment.between(marks: read.marks, from: from, to: to)
                : ReportSegment.every(minutes: Double(how.dropFirst(6)) ?? 60, from: from, to: to)
        }
        if let path = command.schedule {
            guard let text = readText(path) else { throw EngineError(.noInput, "--schedule: cannot read '\(path)'") }
            do { segments = try ReportSegment.schedule(csv: text) } catch {
                throw EngineError(.noInput, "--schedule '\(path)': \(error.description)")
            }
        }
        if let n = segments?.count ?? segmentCount(command.segments, from: from, to: to), n > Report.segmentLimit {
            throw EngineError(
                .usage, "the report would have \(n) segments (at most \(Report.segmentLimit)): "
                    + "choose a shorter range (--from, --to) or longer segments")
        }
        var report: Report
        do {
            report = try Report(source: command.log, from: from, to: to, programmes: read.programmes, incidents: read.incidents,
                                segments: segments, gating: targets.gating, alarmsRaised: { segment, programme in
                try reader.alarmsRaised(from: segment.from, to: segment.to, programme: programme)
            }) { p, add in
                try reader.forEachBlock(read.programmes[p], from: from, to: to, add)
            }
            report.incidentsOmitted = read.incidentsOmitted
        } catch let error as LogReader.Failure {
            throw EngineError(.noInput, error.description)
        } catch {
            throw EngineError(.noInput, "\(error)")
        }
        let format = command.output.flatMap(ReportFormat.forPath) ?? command.type.flatMap(ReportFormat.init(rawValue:)) ?? .html
        try write(report.render(format, generator: "jackvu \(JackVUVersion.string)"), to: command.output)
        return ExitStatus.success.rawValue
    } catch {
        printError(error.message)
        return error.status.rawValue
    }
}

/// How many segments `--segments every:M` makes over [from, to] (nil: another kind).
private func segmentCount(_ how: String?, from: Double, to: Double) -> Int? {
    guard let how, how.hasPrefix("every:"), let minutes = Double(how.dropFirst(6)), minutes >= 1 else { return nil }
    let n = ((to - from) / (minutes * 60)).rounded(.up) + 1
    return n.isFinite && n < 1e15 ? Int(n) : Int.max
}

/// Writes `text` to `path` (replacing it), or to stdout.
func write(_ text: String, to path: String?) throws(EngineError) {
    let sink: FileDescriptorSink
    var fd: Int32 = -1
    if let path {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw EngineError(.ioError, "cannot write '\(path)': \(String(cString: strerror(errno)))") }
        sink = FileDescriptorSink(descriptor: fd, name: path)
    } else {
        sink = FileDescriptorSink()
    }
    defer { if fd >= 0 { close(fd) } }
    do { try sink.write(text) } catch {
        if case .closed = error, path == nil { return }
        throw EngineError(.ioError, "cannot write \(path.map { "'\($0)'" } ?? "the report"): \(error.description)")
    }
}

/// A small text file's contents (nil: cannot be read).
func readText(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n < 0 { return nil }
        if n == 0 { break }
        bytes += buffer[0..<n]
        if bytes.count > 16 << 20 { return nil }
    }
    return String(decoding: bytes, as: UTF8.self)
}
