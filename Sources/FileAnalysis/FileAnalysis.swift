#if canImport(Glibc)
import Glibc
#endif
import Analysis
import Consumers
import Settings
import CMpg123
import CSndfile
import DSP
import LoudnessLog
import Outputs
import Version
import Realtime
import Synchronization

/// An audio file opened with libsndfile for reading as float frames — a plain WAV file's
/// samples read and converted in one pass (`PlainWave`), an MPEG audio stream (MP3, MP2)
/// decoded by libmpg123 directly (`MPEGStream`). Only regular files: a pipe or a device is
/// refused (opening a FIFO would wait for a writer). One thread at a time (the
/// `ChunkReader`'s once reading starts).
final class AudioFile: @unchecked Sendable {
    let path: String
    /// libsndfile's handle (nil for an MPEG stream).
    private let handle: OpaquePointer?
    let sampleRate: Int
    let channels: Int
    let frames: Int
    let formatName: String
    /// The samples of a plain WAV file, read by jackvu (nil: read through libsndfile).
    let plain: PlainWave?
    /// An MPEG audio stream, decoded by libmpg123 (nil: read through libsndfile).
    private let mpeg: MPEGStream?
    /// An audio chunk (WAV's, RF64's, Wave64's `data`, AIFF's `SSND`) whose length is not the
    /// audio there (`Chunks`): one that claims more bytes than the file holds (a file cut
    /// short, or one still being written) is read as far as it goes; one whose header was never
    /// finished, or a WAV or AIFF over 4 GiB (its length did not fit), to the end of the file;
    /// a WAV whose chunk after its audio claims more than the file holds, as if it ended with
    /// its audio (`view`). `analyze` says so. For a WAV on standard input, one that ended before
    /// its data chunk's length (known once it is read).
    var cutData: CutAudio? { headerCut ?? plain?.streamCut }
    private let headerCut: CutAudio?
    /// The file as libsndfile sees it, where that is not the whole file (`Chunks`' `afterAudio`):
    /// its descriptor and position, held as long as libsndfile's handle on it.
    private final class View {
        let state: UnsafeMutablePointer<jackvu_sf_view>

        init?(path: String, length: Int) {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            state = .allocate(capacity: 1)
            state.initialize(to: jackvu_sf_view(fd: fd, length: sf_count_t(length), position: 0))
        }

        deinit {
            close(state.pointee.fd)
            state.deallocate()
        }
    }
    private let view: View?

    /// The frames `read` has returned so far (for a plain WAV file, the next frame of the
    /// mapping), and whether it has reached the end.
    private var position = 0, ended = false

    /// What `analyze` takes for standard input.
    static let standardInput = "-"

    /// Opens `path` (`-`: standard input, a WAV); throws the one-line reason (libsndfile's) on
    /// failure. With `mapping` false, always reads through libsndfile.
    convenience init(path: String, mapping: Bool = true) throws(EngineError) {
        if path == AudioFile.standardInput {
            let wave = try AudioFile.standardInputWAV()
            self.init(path: path, cutData: nil, plain: wave, sampleRate: wave.sampleRate ?? 0, channels: wave.channels,
                      frames: wave.frames, format: Int32(wave.rf64 ? SF_FORMAT_RF64 : SF_FORMAT_WAV))
            return
        }
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw EngineError(.noInput, "cannot read '\(path)': \(String(cString: strerror(errno)))")
        }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw EngineError(.noInput, "cannot read '\(path)': it is a directory")
        case S_IFIFO, S_IFSOCK:
            throw EngineError(.noInput, "cannot read '\(path)': it is a pipe or socket; jackvu analyze reads files, and a WAV stream as standard input: jackvu analyze - < '\(path)'")
        default:
            throw EngineError(.noInput, "cannot read '\(path)': it is a device, not a file")
        }
        let cutData = try Chunks.check(path, size: Int(st.st_size))
        if MPEGStream.looksLikeMPEG(path) {
            let stream = try MPEGStream(path: path)  // one or two channels, a rate from 8 to 48 kHz
            self.init(path: path, cutData: cutData, mpeg: stream, sampleRate: stream.sampleRate,
                      channels: stream.channels, frames: stream.frames, format: Int32(SF_FORMAT_MPEG))
            return
        }
        var info = SF_INFO()
        // A WAV whose chunk after its audio claims more than the file holds: libsndfile sees
        // the file only up to the end of its audio (it parses such a LIST chunk for minutes);
        // one whose audio runs to the end of the file by its header and an ID3v1 tag ends it,
        // up to the tag.
        let view = cutData.flatMap { [.afterAudio, .tagAfterAudio].contains($0.kind) ? View(path: path, length: $0.audioEnd) : nil }
        guard let h = view.map({ jackvu_sf_open_view($0.state, &info) }) ?? sf_open(path, Int32(SFM_READ), &info) else {
            let message = String(cString: sf_strerror(nil))
            // A CAF file cut short: libsndfile calls it malformed. Where it is PCM or float,
            // jackvu reads it as far as it goes, as it does a WAV file so cut.
            if let cut = cutData, cut.kind == .cutShort, mapping, let wave = PlainWave(path: path, channels: nil, frames: nil, bits: nil, container: .caf),
               let rate = wave.sampleRate, wave.channels <= AudioFile.maxChannels
            {
                self.init(path: path, cutData: cut, plain: wave, sampleRate: rate, channels: wave.channels,
                          frames: wave.frames, format: Int32(SF_FORMAT_CAF))
                return
            }
            if let cut = cutData, cut.kind == .cutShort {
                throw EngineError(.noInput, "cannot read '\(path)': \(cut) (\(cut.why)); libsndfile refuses it (\(message.trimmingCharacters(in: [" ", "."]))), and jackvu reads such a file itself only as 16-, 24- or 32-bit PCM or 32-bit float")
            }
            throw EngineError(.noInput, "cannot read '\(path)': \(AudioFile.reason(message))")
        }
        if let why = AudioFile.outOfBounds(channels: Int(info.channels), sampleRate: Int(info.samplerate)) {
            sf_close(h)
            throw EngineError(.noInput, "cannot analyse '\(path)': \(why)")
        }
        let container: PlainWave.Container = switch Int(info.format) & SF_FORMAT_TYPEMASK {
        case SF_FORMAT_AIFF: .aiff
        case SF_FORMAT_CAF: .caf
        default: .wav
        }
        let bits = Int(container == .wav ? jackvu_sf_plain_wav_bits(info.format) : jackvu_sf_plain_aiff_caf_bits(info.format))
        let channels = Int(info.channels)
        var frames = Int(info.frames)
        var wave: PlainWave?
        if let cut = cutData, cut.toTheEnd, cut.over4GiB || frames == 0 {
            // A header never finished: libsndfile reads no frame; a WAV or AIFF over 4 GiB:
            // libsndfile reads the length given. The audio after it is read to the end of the
            // file where jackvu reads it itself.
            wave = mapping ? PlainWave(path: path, channels: channels, frames: nil, bits: bits, container: container) : nil
            guard let wave else {
                sf_close(h)
                let name = switch container { case .wav: "WAV"; case .aiff: "AIFF"; case .caf: "CAF" }
                throw EngineError(.noInput, "cannot read '\(path)': \(cut) (\(cut.why)), and jackvu reads such a file only as 16-, 24- or 32-bit PCM or 32-bit float \(name)")
            }
            frames = wave.frames
        } else if mapping && container == .wav {
            wave = PlainWave(path: path, channels: channels, frames: frames, bits: bits)
        }
        // (A tag after the audio is no damage: not said.)
        self.init(path: path, cutData: cutData?.kind == .tagAfterAudio ? nil : cutData, handle: h, view: view, plain: wave, sampleRate: Int(info.samplerate),
                  channels: channels, frames: frames, format: info.format)
    }

    /// The file as opened: libsndfile's handle (and the view it reads through), or a stream
    /// of its own (`plain` without a handle: a cut CAF; `mpeg`), with what the header says.
    private init(path: String, cutData: CutAudio?, handle: OpaquePointer? = nil, view: View? = nil, plain: PlainWave? = nil,
                 mpeg: MPEGStream? = nil, sampleRate: Int, channels: Int, frames: Int, format: Int32)
    {
        self.path = path
        headerCut = cutData
        self.handle = handle
        self.view = view
        self.plain = plain
        self.mpeg = mpeg
        self.sampleRate = sampleRate
        self.channels = channels
        self.frames = frames
        formatName = String(cString: jackvu_sf_format_name(format))
    }

    /// Standard input's WAV (read as it comes: a pipe, as `ffmpeg -i IN -f wav -` writes one),
    /// or the one-line reason it cannot be read.
    private static func standardInputWAV() throws(EngineError) -> PlainWave {
        var st = stat()
        guard fstat(STDIN_FILENO, &st) == 0 else {
            throw EngineError(.noInput, "cannot read '-' (standard input): \(String(cString: strerror(errno)))")
        }
        if st.st_mode & S_IFMT == S_IFCHR && isatty(STDIN_FILENO) != 0 {
            throw EngineError(.noInput, "cannot read '-': standard input is a terminal; send it a WAV (ffmpeg -i IN -f wav - | jackvu analyze -)")
        }
        guard let wave = PlainWave(stream: STDIN_FILENO) else {
            throw EngineError(.noInput, "cannot read '-': standard input holds no WAV jackvu reads from a stream (16-, 24- or 32-bit PCM or 32-bit float, as ffmpeg -f wav and sox -t wav write it); save other formats to a file and name it")
        }
        if let why = outOfBounds(channels: wave.channels, sampleRate: wave.sampleRate ?? 0) {
            throw EngineError(.noInput, "cannot analyse '-': \(why)")
        }
        return wave
    }

    /// Why a header's channels or sample rate cannot be analysed (none, more than
    /// `maxChannels`, 0 Hz), or nil.
    private static func outOfBounds(channels: Int, sampleRate: Int) -> String? {
        channels < 1 ? "its header gives \(channels) channels"
            : channels > maxChannels ? "it has \(channels) channels; jackvu analyses 1 to \(maxChannels)"
            : sampleRate > 0 ? nil : "its header gives a sample rate of \(sampleRate) Hz"
    }

    /// The most channels a file may have: `analyze`'s limit since it began, when live metering's
    /// was the same (live's is now `AnalysisSettings.maxChannels`, 1,024).
    static let maxChannels = 64

    /// libsndfile's reason for refusing a file, said as what is wrong with the file, with
    /// libsndfile's own words after it: its internal messages ("Internal error : SF_INFO
    /// struct incomplete") mean a header it could not make sense of; "malformed", "unknown
    /// error in flac decoder", "unimplemented format" and "unknown format" say the same in
    /// other words. System errors (permissions, …) are said as they are.
    static func reason(_ message: String) -> String {
        var reason = message.trimmingCharacters(in: [" ", "."])
        if reason.hasPrefix("System error : ") { return String(reason.dropFirst("System error : ".count)) }
        if reason.hasPrefix("Error : ") { reason = String(reason.dropFirst("Error : ".count)) }
        let lower = reason.lowercased()
        let plain: String
        if lower.contains("internal error") || lower.contains("malformed") {
            plain = "its header is damaged: the format is one jackvu reads, but the file does not follow it"
        } else if lower.contains("flac decoder") {
            plain = "its FLAC data is damaged: the decoder could not read it"
        } else if lower.contains("unimplemented format") {
            plain = "its audio is in an encoding libsndfile cannot decode, or its header is damaged"
        } else if lower.contains("unknown format") || lower.contains("not recognised") || lower.contains("not recognized") {
            plain = "it is not an audio file jackvu reads (WAV, RF64, W64, AIFF, CAF, FLAC, Ogg Vorbis or Opus, MP3, and the other formats of libsndfile; another that ffmpeg reads as a WAV on standard input: ffmpeg -i FILE -f wav - | jackvu analyze -)"
        } else {
            return reason
        }
        return "\(plain) (libsndfile: \(reason))"
    }

    /// `frames` in seconds, to the millisecond (as the one-line messages give them).
    func seconds(_ frames: Int) -> Double { (Double(frames) / Double(sampleRate) * 1000).rounded() / 1000 }

    /// Whether fewer frames could be read than the header promised (the file shrank while it
    /// was read).
    var shrank: Bool { plain?.shrank ?? false }

    /// Why reading stopped before the end of the audio, if it did: a plain WAV file that
    /// shrank while it was read; an MPEG stream that could not be decoded further, or that
    /// changed its format; a file libsndfile decoded fewer frames of than its header gives (a
    /// FLAC file damaged mid-stream: libsndfile's reader just ends there); standard input whose
    /// reading failed (an error, not its end). Set by `read`, on
    /// the reader's thread, before the chunk that ends the file is handed over.
    var unreadable: String? {
        if shrank { return "it shrank while it was read (\(position) of \(frames) frames there)" }
        if let error = plain?.streamError, error != 0 {
            return "reading it failed after \(position) frames (\(seconds(position)) s): \(String(cString: strerror(error)))"
        }
        if let fault = mpeg?.fault { return "\(fault) (after \(position) frames, \(seconds(position)) s)" }
        guard ended, handle != nil, frames > 0, frames < Int(Int64.max), position < frames else { return nil }
        // Every format libsndfile reads gives its exact length (checked on WAV, ADPCM, GSM,
        // AIFF, CAF, W64, FLAC, Vorbis, Opus): fewer frames at the end is audio lost.
        return "only \(position) of the \(frames) frames its header gives could be decoded (\(seconds(position)) of \(seconds(frames)) s): it is damaged or cut short"
    }

    deinit { if let handle { sf_close(handle) } }

    /// Reads up to `count` frames into `planar` (channel c at `c·stride`); returns the frames
    /// read (0 at the end, negative on an error). `scratch` holds `count` interleaved frames.
    func read(planar: UnsafeMutablePointer<Float>, stride: Int, count: Int, scratch: UnsafeMutablePointer<Float>) -> Int {
        if let plain {
            let n = plain.decode(from: position, count: min(count, frames - position), into: planar, stride: stride)
            position += n
            return n
        }
        let n = mpeg?.read(into: scratch, frames: count) ?? Int(sf_readf_float(handle, scratch, sf_count_t(count)))
        position += max(0, n)
        if n <= 0, count > 0 { ended = true }
        AudioFile.deinterleave(scratch, into: planar, frames: max(0, n), channels: channels, stride: stride)
        return n
    }

    /// `read`, then each channel sanitised as the live client sanitises its input
    /// (`Vector.sanitize`: NaN, ±∞ and samples beyond ±`Vector.sampleLimit` become 0).
    /// Returns the frames read (as `read`) and how many samples were replaced.
    func readSanitised(planar: UnsafeMutablePointer<Float>, stride: Int, count: Int,
                       scratch: UnsafeMutablePointer<Float>) -> (frames: Int, replaced: Int)
    {
        let n = read(planar: planar, stride: stride, count: count, scratch: scratch)
        guard n > 0 else { return (n, 0) }
        // Integer PCM read directly decodes to k / 2^(bits−1): finite, within ±1, never
        // subnormal (the smallest, 2^−31, is far above them): nothing to replace.
        if let plain, plain.bits > 0 { return (n, 0) }
        var replaced = 0
        for c in 0..<channels { replaced += Vector.sanitize(UnsafeMutableBufferPointer(start: planar + c * stride, count: n)) }
        return (n, replaced)
    }

    static func deinterleave(_ x: UnsafeMutablePointer<Float>, into planar: UnsafeMutablePointer<Float>,
                             frames n: Int, channels: Int, stride: Int)
    {
        if channels == 2 {
            let l = planar, r = planar + stride
            var i = 0
            while i + 8 <= n {
                let v = UnsafeRawPointer(x + 2 * i).loadUnaligned(as: SIMD16<Float>.self)
                UnsafeMutableRawPointer(l + i).storeBytes(of: v.evenHalf, as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(r + i).storeBytes(of: v.oddHalf, as: SIMD8<Float>.self)
                i += 8
            }
            while i < n {
                l[i] = x[2 * i]
                r[i] = x[2 * i + 1]
                i += 1
            }
            return
        }
        for ch in 0..<channels {
            let dst = planar + ch * stride
            for i in 0..<n { dst[i] = x[i * channels + ch] }
        }
    }
}

/// Reads a file on its own thread, up to three chunks ahead: while the analysis works on one
/// chunk (planar float channels), the reader fills the next (`AudioFile.read`: decoding and
/// de-interleaving). Four buffers passed round with two semaphores.
final class ChunkReader: @unchecked Sendable {
    /// The chunks in turn: the reader up to three ahead, so that a chunk slower on one side
    /// than the other does not stop both (with two, a stereo summary kept 1.5 of the two
    /// cores busy over its run, with four 1.7; eight, or chunks twice the size, were no
    /// faster: BENCHMARKS.md).
    static let buffers = 4
    // @unchecked Sendable: each buffer belongs either to the reader or to the consumer, as
    // handed over by `filled`/`free` (a semaphore post/wait orders the memory accesses).
    let chunk: Int
    private let channels: Int
    private let planar: [UnsafeMutablePointer<Float>]
    private let counts: UnsafeMutablePointer<Int>
    private let filled = WakeSignal()
    private let free = WakeSignal()
    private let stop = Atomic<Bool>(false)
    private var thread: PosixThread?
    private var current = 0
    /// Samples replaced as the live client replaces them (`Vector.sanitize`: not finite, or
    /// beyond ±`Vector.sampleLimit`), counted.
    let replacedSamples = Counter()

    /// `alongside`, if given, runs on the reader thread for every chunk after it is read (the
    /// summary puts the loudness meter there, so the two cores share the work).
    init(file: AudioFile, chunk: Int, alongside: (@Sendable (UnsafeMutablePointer<Float>, Int) -> Void)? = nil) {
        self.chunk = chunk
        channels = file.channels
        planar = (0..<ChunkReader.buffers).map { _ in .allocate(capacity: chunk * file.channels) }
        counts = .allocate(capacity: ChunkReader.buffers)
        counts.initialize(repeating: 0, count: ChunkReader.buffers)
        for _ in 0..<ChunkReader.buffers { free.signal() }
        thread = PosixThread(name: "jackvu-reader") { [self] in
            let interleaved = UnsafeMutablePointer<Float>.allocate(capacity: chunk * channels)
            defer { interleaved.deallocate() }
            var i = 0
            while true {
                while !free.wait(timeout: 1) {}
                if stop.load(ordering: .relaxed) { counts[i] = 0; filled.signal(); return }
                let (n, replaced) = file.readSanitised(planar: planar[i], stride: chunk, count: chunk, scratch: interleaved)
                if replaced > 0 { replacedSamples.add(replaced) }
                if n > 0 { alongside?(planar[i], n) }
                counts[i] = max(0, n)
                filled.signal()
                if n <= 0 { return }
                i = (i + 1) % ChunkReader.buffers
            }
        }
    }

    deinit {
        planar.forEach { $0.deallocate() }
        counts.deallocate()
    }

    /// The next chunk (planar channels `chunk` apart, and its frame count), or nil at the end.
    /// Call `release` when done with it.
    func next() -> (UnsafeMutablePointer<Float>, Int)? {
        while !filled.wait(timeout: 1) {}
        let n = counts[current]
        return n > 0 ? (planar[current], n) : nil
    }

    /// Hands the chunk from `next` back to the reader.
    func release() {
        free.signal()
        current = (current + 1) % ChunkReader.buffers
    }

    /// Stops the reader (at the end, or early) and waits for it.
    func finish() {
        stop.store(true, ordering: .relaxed)
        free.signal()
        thread?.join()
        thread = nil
    }

}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}

/// `jackvu analyze`: the live client's analysis run offline over audio files.
public struct FileAnalysis {
    public var configuration: Configuration
    public var format: OutputFormat
    /// Print the update stream (one per hop, with its audio time) instead of a summary.
    public var stream: Bool
    public var sink: FileDescriptorSink
    /// Show a progress bar on stderr (when it is a terminal and a file is long).
    public var progress: Bool
    /// Write a compliance report of the file here (`--report`: HTML, JSON or CSV by the
    /// extension).
    public var reportPath: String?
    /// Log the files' 100 ms blocks here (`--log`), as if the audio had started at
    /// `logStart` (Unix seconds).
    public var logPath: String?
    public var logStart: Double?
    /// The log, opened with the first file; the seconds of audio logged before the current file.
    private final class LogState {
        var writer: LogWriter?
        var file: LogFile?
        var offset = 0.0
        /// Where the first file's audio starts in the log: `--log-start`, else now, or right
        /// after the log's latest block when that is later (an earlier analysis stamped its
        /// audio from its own start on, into what is still the future).
        var origin: Double?
    }
    private let logState = LogState()

    public init(configuration: Configuration, format: OutputFormat, stream: Bool,
                sink: FileDescriptorSink = FileDescriptorSink(), progress: Bool = isatty(2) != 0)
    {
        self.configuration = configuration
        self.format = format
        self.stream = stream
        self.sink = sink
        self.progress = progress
    }

    /// Analyses every file in turn. A file that cannot be read gets one line on stderr and
    /// the others are still analysed; returns 0, or 66 if any file failed, or 74 if stdout
    /// closed.
    public func run(files: [String]) -> Int32 {
        // A reader that goes away is a failed write (EPIPE) handled below, not a signal.
        signal(SIGPIPE, SIG_IGN)
        // The same file reads the same, to the last digit, in every run.
        RealFFT.reproducible = true
        // The log's file first: a link, a device, another application's database or a log
        // another jackvu writes ends the run before any file is read (73, 75).
        if let logPath, logState.writer == nil {
            do { logState.file = try LogWriter.claim(logPath) } catch {
                printError(error.description)
                return (error.kind == .inUse ? ExitStatus.nameInUse : ExitStatus.cannotCreate).rawValue
            }
        }
        var failed = false
        var summaries: [String] = []
        for path in files {
            do {
                if let summary = try analyze(path) { summaries.append(summary) }
            } catch {
                // The reader of stdout went away (`jackvu analyze --stream … | head`): stop
                // quietly, like other Unix filters.
                if error.status == .success { return ExitStatus.success.rawValue }
                printError(error.message)
                if error.status == .ioError { return ExitStatus.ioError.rawValue }
                failed = true
            }
        }
        if let writer = logState.writer {
            writer.stop()
            if writer.rowsLost.count > 0 || writer.failures.count > 0 {
                printError("--log \(writer.path): \(writer.rowsLost.count) rows lost, \(writer.failures.count) failed writes")
                failed = true
            }
        }
        if !stream {
            let text = format == .json ? "[" + summaries.joined(separator: ",\n ") + "]\n" : summaries.joined()
            do { try sink.write(text) } catch {
                if case .closed = error { return ExitStatus.success.rawValue }
                printError("\(error.description): stopping")
                return ExitStatus.ioError.rawValue
            }
        }
        return failed ? ExitStatus.noInput.rawValue : ExitStatus.success.rawValue
    }

    /// The configuration for `file`: its channels, checked against the layout and the
    /// programmes asked for.
    private func configuration(for file: AudioFile, path: String) throws(EngineError) -> Configuration {
        var c = configuration
        c.channels = file.channels
        if let layout = c.layout, layout.channelCount != file.channels {
            throw EngineError(.noInput, "cannot analyse '\(path)' as \(layout.rawValue): it has \(file.channels) channels")
        }
        for programme in c.programmes {
            if let beyond = programme.channels.first(where: { $0 >= file.channels }) {
                throw EngineError(
                    .noInput, "cannot analyse '\(path)' with --programme \(programme.name): it has \(file.channels) channels, not \(beyond + 1)")
            }
        }
        do { try c.validate() } catch { throw EngineError(.usage, error.description) }
        return c
    }

    /// The analyzer of `file`, computing what a summary, a stream or the alarms need.
    private func makeAnalyzer(_ c: Configuration, file: AudioFile, path: String, watching: Bool) throws(EngineError) -> Analyzer {
        do {
            // Alarms (`--alarm`) judge every hop, as live: they need the live readings.
            // A stream prints every hop: its spectrum and pitch are computed at every hop too
            // (live, they are paced to what the outputs read).
            var features: Analyzer.Features = stream ? Analyzer.Features.needed(for: c).union(.everyHop) : .summary
            if watching { features.formUnion(Analyzer.Features.needed(for: c).union([.live, .loudness, .truePeak, .dpeak, .correlation])) }
            return try Analyzer(configuration: c, sampleRate: file.sampleRate, features: features)
        } catch {
            // A rate the meters cannot honour is the file's problem, not the command's.
            let status: ExitStatus = if case .unsupportedSampleRate = error { .noInput } else { .usage }
            throw EngineError(status, "cannot analyse '\(path)': \(error.description)")
        }
    }

    /// The log's writer (`--log`), started with the first file; and the wall time the
    /// current file's audio starts at in it.
    private func openLog(_ programmes: [Programme]) -> Double {
        if let logPath, logState.writer == nil {
            let writer = LogWriter(
                path: logPath, programmes: programmes.map { LoggedProgramme(name: $0.name, channels: $0.channels, target: $0.target) },
                file: logState.file)
            writer.waitsWhenFull = true
            writer.start()
            logState.writer = writer
        }
        if logState.origin == nil {
            let now = LogWriter.unixNow()
            logState.origin = logStart ?? logPath.flatMap { LogWriter.latestBlockTime(path: $0) }.map { max(now, $0 + 0.1) } ?? now
        }
        return (logState.origin ?? 0) + logState.offset
    }

    /// The progress bar on stderr (a terminal, a file longer than 30 s): drawn when the
    /// percentage changes, cleared at the end.
    private struct Progress {
        let shown: Bool, frames: Int, path: String
        var lastPercent = -1

        mutating func update(_ done: Int) {
            guard shown else { return }
            let percent = Int(Double(done) / Double(max(1, frames)) * 100)
            guard percent != lastPercent else { return }
            lastPercent = percent
            let bar = String(repeating: "#", count: percent / 4) + String(repeating: " ", count: 25 - percent / 4)
            let line = "\r[\(bar)] \(percent)% \(escapedForLine(path))"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }

        func clear() {
            if shown { _ = "\r\u{1B}[K".withCString { write(2, $0, strlen($0)) } }
        }
    }

    /// Feeds the file's chunks to the analysis — with a log in pieces of a block's step
    /// (`pieces` frames: a block's peaks go with the next block), else whole — and hands each
    /// hop to `hops` (`perHop`: a stream or alarms) and each piece to its observers (the log's blocks); the
    /// true peak of the reader's channels (`readerTruePeaks`) runs on its thread when nothing
    /// needs it per hop or per piece (`makeReader`), the other channels' here. Writes the
    /// stream as it grows; returns the frames read.
    private func feed(_ reader: ChunkReader, of file: AudioFile, to analyzer: Analyzer, hops: FileHops, stream: FileStreamOutput?, pieces step: Int?,
                      perHop: Bool, readerTruePeaks: Int, path: String) throws(EngineError) -> Int {
        // (Not for a stream of no given length: no share of it can be said.)
        var progress = Progress(shown: self.progress && file.frames > 30 * file.sampleRate && file.frames < Int.max, frames: file.frames, path: path)
        var done = 0
        var writeError: OutputError?
        while let (planar, n) = reader.next() {
            var at = 0
            while at < n {
                let piece = step.map { min(n - at, $0 - (done + at) % $0) } ?? n, start = at
                analyzer.append(frames: piece, from: { UnsafePointer(planar + $0 * reader.chunk + start) }, truePeak: perHop || step != nil) {
                    // As live: until the analysis block is full its levels would read low.
                    if perHop && analyzer.isBlockFull { hops.hop() }
                }
                hops.observers.analysed(analyzer, planar: UnsafePointer(planar + start), stride: reader.chunk, frames: piece)
                at += piece
            }
            if !(perHop || step != nil) && readerTruePeaks < file.channels {
                analyzer.appendTruePeak(frames: n, channels: readerTruePeaks..<file.channels, from: { UnsafePointer(planar + $0 * reader.chunk) })
            }
            reader.release()
            if let stream, stream.pendingBytes > 1 << 16 {
                do { try sink.write(stream.take()) } catch { writeError = error; break }
            }
            done += n
            progress.update(done)
        }
        reader.finish()
        progress.clear()
        if let writeError { throw EngineError.writing(writeError) }
        return done
    }

    /// The file's reader, in chunks of 2^18 samples (1 MB; 131072 stereo frames): each
    /// hand-over between the threads is a futex wake, tens of microseconds here, so fewer of
    /// them matter (a 10-minute stereo file: 880 hand-overs with 32768 frames, 220 now). When
    /// nothing needs the true peak per hop or per block (`truePeakAlongside`: a summary), the
    /// true-peak meter runs beside the rest, on the reader's thread after the decoding: with
    /// its quiet and loud blocks skipped, a channel's true peak costs less than its loudness,
    /// which stays with the analysis's thread. Mono and stereo: every channel's (a stereo file
    /// where the machine has AVX2: the reader 50–53 % of the samples, `perf record`; with the
    /// second channel's true peak on the analysis's thread, 38–44 %, and the run 10 % longer).
    /// More channels: a third of them (at least one; the others' on the analysis's thread,
    /// whose K-weighting of many channels is cheap — a 5.1 file with all six on the reader
    /// held 72 % of the samples there, and takes 0.367–0.421 s against 0.324–0.351 s with two:
    /// BENCHMARKS.md). Returns the reader and the count of channels whose true peak it runs.
    private func makeReader(_ file: AudioFile, analyzer: Analyzer, truePeakAlongside: Bool) -> (ChunkReader, Int) {
        // 2¹⁸ samples a chunk, or as many frames as the loudness needs to run its stretches
        // side by side (a 5.1 file's: 2.6 s; at 2¹⁸ samples it had 0.9 s and ran them one
        // after another) where 2²⁰ samples hold them.
        let channels = file.channels, least = max(4096, (1 << 18) / channels), split = analyzer.loudnessFramesToSplit
        let chunk = split > least && split <= max(least, (1 << 20) / channels) ? split : least
        let readerTruePeaks = channels <= 2 ? channels : max(1, channels / 3)
        let feedTruePeak: @Sendable (UnsafeMutablePointer<Float>, Int) -> Void = { planar, n in
            analyzer.appendTruePeak(frames: n, channels: 0..<readerTruePeaks, from: { UnsafePointer(planar + $0 * chunk) })
        }
        return (ChunkReader(file: file, chunk: chunk, alongside: truePeakAlongside ? feedTruePeak : nil), truePeakAlongside ? readerTruePeaks : channels)
    }

    /// The file's consumers, from the factories: its observers — the alarms (`rules`), on the
    /// audio's own time, their changes kept for the summary and the report; its 100 ms blocks
    /// for the log and the report, stamped as if the audio had started at `origin` — and its
    /// outputs (with `--stream`, the stream).
    private func consumers(_ c: Configuration, path: String, rules: [AlarmRule], programmes: [Programme], origin: Double)
        -> (ObserverList, [any SnapshotOutput], FileStreamOutput?)
    {
        var plan = ObserverPlan()
        if !rules.isEmpty {
            plan.alarms = AlarmEngine(rules: rules)
            plan.clock = .audio(origin: origin)
            plan.keepsChanges = true
        }
        plan.log = logState.writer
        plan.logTiming = .blocks(programmes: programmes, origin: origin, keep: reportPath != nil)
        let outputs = OutputFactory.file(stream: stream ? format : nil, path: path, settings: c.output)
        return (Observers.make(plan), outputs, outputs.lazy.compactMap { $0 as? FileStreamOutput }.first)
    }

    /// Analyses one file: streams its updates, or returns its summary (text or JSON).
    private func analyze(_ path: String) throws(EngineError) -> String? {
        let file = try AudioFile(path: path)
        let c = try configuration(for: file, path: path)
        // A file has no JACK chain: its alarms are the signal's.
        let rules = c.alarms.filter { $0.kind.scope != .instance }
        let watching = !rules.isEmpty
        let analyzer = try makeAnalyzer(c, file: file, path: path, watching: watching)
        // The log's blocks carry their peaks, as the live log's do: the true peak then runs
        // here, in pieces of a block's step (100 ms), whose peaks go with the next block.
        let logging = logState.writer != nil || logPath != nil
        let perHop = stream || watching
        let (reader, readerTruePeaks) = makeReader(file, analyzer: analyzer, truePeakAlongside: !(perHop || logging))
        let programmes = c.resolvedProgrammes
        let origin = openLog(programmes)
        let (observers, outputs, streamOutput) = consumers(c, path: path, rules: rules, programmes: programmes, origin: origin)
        let hops = FileHops(analyzer: analyzer, observers: observers, outputs: outputs, configuration: c)
        let done = try feed(reader, of: file, to: analyzer, hops: hops, stream: streamOutput, pieces: logging ? max(1, file.sampleRate / 10) : nil,
                            perHop: perHop, readerTruePeaks: readerTruePeaks, path: path)
        analyzer.finishAudio()
        observers.finish()
        let changes = observers.alarms?.changes ?? []
        if let why = file.unreadable {
            throw EngineError(.noInput, "cannot analyse '\(path)': \(why)")
        }
        if let cut = file.cutData {
            // Not refused: a recording still being written reads as far as it has gone. But a
            // file cut short (a download, a copy) is not summarised as if it were whole.
            let seconds = file.seconds(done)
            printError("'\(path)': \(cut): \(seconds) s analysed, \(cut.reach) (\(cut.why))")
            // The log says it too, at the file's start: its blocks are of the audio there.
            logState.writer?.event("data_length", t: origin, detail: "'\(path)': \(cut) (\(cut.why))", value: seconds)
        }
        logState.offset += Double(done) / Double(file.sampleRate)
        if let reportPath {
            try writeReport(reportPath, path: path, analyzer: analyzer, programmes: programmes, blocks: observers.blocks?.kept ?? [],
                            alarms: changes, seconds: Double(done) / Double(file.sampleRate), cut: file.cutData)
        }
        if stream {
            do { try sink.write(streamOutput?.take() ?? "") } catch { throw EngineError.writing(error) }
            return nil
        }
        return summary(analyzer, file: file, configuration: c, replaced: reader.replacedSamples.count, alarms: watching ? changes : nil)
    }

    /// The file's compliance report, as `jackvu report` makes one from a log: its times are
    /// the time into the file; each programme's true and sample peaks its channels' over the
    /// whole file.
    private func writeReport(_ out: String, path: String, analyzer: Analyzer, programmes: [Programme], blocks: [[LoggedBlock]],
                             alarms: [AlarmEvent], seconds: Double, cut: CutAudio?) throws(EngineError)
    {
        var list: [ReportProgramme] = []
        for (p, programme) in programmes.enumerated() {
            var r = ReportProgramme(name: programme.name, channels: programme.channels, target: programme.target, blocks: blocks[p])
            let totals = programme.channels.map { analyzer.totals(channel: $0) }
            r.truePeakOverride = totals.map(\.truePeakDBTP).max()
            r.samplePeakOverride = totals.map(\.samplePeakDBFS).max()
            list.append(r)
        }
        let incidents = alarms.map { e in
            LoggedIncident(t: e.audioTime, kind: e.kind.rawValue, subject: e.subject, state: e.state, value: e.value, detail: nil,
                           programme: e.programme.map { programmes[$0].name })
        }
        var report = Report(source: path, from: 0, to: seconds, programmes: list, incidents: incidents, gating: configuration.gating)
        report.relativeTimes = true
        report.sourceNote = cut?.reportNote
        let text = report.render(ReportFormat.forPath(out) ?? .html, generator: "jackvu analyze \(JackVUVersion.string)")
        let fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw EngineError(.ioError, "--report: cannot write '\(out)': \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        do { try FileDescriptorSink(descriptor: fd, name: out).write(text) } catch {
            throw EngineError(.ioError, "--report: cannot write '\(out)': \(error.description)")
        }
    }

    private func summary(_ a: Analyzer, file: AudioFile, configuration c: Configuration, replaced: Int, alarms: [AlarmEvent]?) -> String {
        let seconds = Double(a.framesSeen) / Double(file.sampleRate)
        let layout = (c.layout ?? ChannelLayout.forChannelCount(file.channels))?.rawValue ?? "\(file.channels) channels, weight 1"
        // The readings over the whole file: each channel's peaks and RMS, each programme's
        // final loudness; the summary's lines (`Readings.summaryLines`) read them.
        var whole = a.makeSnapshot()
        for i in 0..<file.channels {
            let t = a.totals(channel: i)
            whole.channels[i].maxTruePeakDBTP = Float(t.truePeakDBTP)
            whole.channels[i].truePeakDBTP = Float(t.truePeakDBTP)
            whole.channels[i].peakDBFS = Float(t.samplePeakDBFS)
            whole.channels[i].rmsDBFS = Float(t.rmsDBFS)
        }
        for p in whole.programmes.indices {
            whole.programmes[p].loudness = a.finalLoudness(programme: p)
            whole.programmes[p].measuredSeconds = a.measuredSeconds(programme: p)
        }
        let summary = FileSummary(whole, gating: c.gating, json: format == .json)
        let named = c.programmes.isEmpty ? [] : Array(whole.programmes.indices)
        if format == .json {
            let perChannel = (0..<file.channels).map { "{\"channel\": \($0 + 1), " + summary.channelJSON($0) + "}" }.joined(separator: ", ")
            return "{\"file\": \(jsonString(file.path)), \"format\": \(jsonString(file.formatName)), "
                + "\"sample_rate_hz\": \(file.sampleRate), \"channels\": \(file.channels), \"layout\": \(jsonString(layout)), "
                + "\"duration_s\": \(format3(seconds)), " + summary.fileJSON() + targetJSON(whole, 0)
                + (named.isEmpty ? "" : "\"programmes\": [" + named.map { programmeJSON(summary, $0, c.programmes[$0]) }.joined(separator: ", ") + "], ")
                + (alarms.map { "\"alarms\": [" + $0.map(\.json).joined(separator: ", ") + "], " } ?? "")
                + (file.cutData.map { cut in
                    cut.kind == .afterAudio
                        ? "\"after_audio\": {\"chunk\": \(jsonString(cut.chunk)), \"claimed_bytes\": \(cut.claimed), \"bytes_there\": \(cut.there)}, "
                        : "\"data_length\": {\"claimed_bytes\": \(cut.claimed), \"bytes_there\": \(cut.there)}, "
                } ?? "")
                + "\"replaced_samples\": \(replaced), \"per_channel\": [\(perChannel)]}"
        }
        var text = "\(escapedForLine(file.path))\n"
        text += "  format            \(file.formatName), \(file.sampleRate) Hz, \(file.channels) ch (\(named.isEmpty ? layout : "\(named.count) programmes")), \(fixed(seconds, 3)) s\n"
        text += summary.fileText(programmes: !named.isEmpty)
        if named.isEmpty { text += targetText(whole, 0) }
        for p in named { text += "  programme \(whole.programmes[p].name) (\(programmeDescription(c.programmes[p])))\n" + summary.programmeText(p) + targetText(whole, p, indent: "    ", width: 16) }
        if let alarms {
            let raised = alarms.filter(\.raised).count
            text += "  alarms            \(raised == 0 ? "none raised" : "\(raised) raised")\n"
            for e in alarms {
                text += "    \(fixed(e.audioTime, 1)) s  \(e.kind.rawValue) \(escapedForLine(e.subject)) \(e.state) (\(fixed(e.value, 1)) \(e.kind.unit))\n"
            }
        }
        if let cut = file.cutData {
            text += (cut.kind == .afterAudio ? "  after the audio   " : "  data length       ") + "\(cut) (\(cut.why))\n"
        }
        if replaced > 0 {
            text += "  replaced samples  \(replaced) (not finite, or beyond ±\(Int(Vector.sampleLimit)): set to 0, as live)\n"
        }
        for i in 0..<file.channels { text += "  ch \(i + 1)              " + summary.channelText(i) + "\n" }
        return text
    }
}

/// The summary's readings of a snapshot over the whole file, line by line as the table says
/// (`Readings.summaryLines`): the file's lines, each programme's block and each channel's line,
/// as text (`label value unit`) and as JSON members.
struct FileSummary {
    let snapshot: Snapshot
    let gating: Gating
    private let file: [Readings.SummaryEntry], programme: [Readings.SummaryEntry], channel: [Readings.SummaryEntry]

    init(_ snapshot: Snapshot, gating: Gating, json: Bool) {
        self.snapshot = snapshot
        self.gating = gating
        file = Readings.summaryLines([.file, .fileMaximum], json: json)
        programme = Readings.summaryLines([.programme], json: json)
        channel = Readings.summaryLines([.channel], json: json)
    }

    /// An entry's value: the subject's, or for the file's maxima the largest of the channels'.
    private func value(_ e: Readings.SummaryEntry, _ subject: Int) -> Double {
        guard e.line.place == .fileMaximum else { return e.field.value(snapshot, subject).number ?? .nan }
        return snapshot.channels.indices.map { e.field.value(snapshot, $0).number ?? -.infinity }.max() ?? .nan
    }

    private func line(_ e: Readings.SummaryEntry, _ subject: Int, indent: String, width: Int) -> String {
        indent + e.line.label + String(repeating: " ", count: max(1, width - e.line.label.count)) + e.line.text(value(e, subject), unit: e.unit) + "\n"
    }

    private func member(_ e: Readings.SummaryEntry, _ subject: Int) -> String { "\(jsonString(e.key)): \(e.line.json(value(e, subject)))" }

    /// The file's lines: the first programme's readings (when `programmes` of `--programme`
    /// have their own blocks, only the channels' maxima), the integrated loudness followed by
    /// its gating where it is not BS.1770-4's.
    func fileText(programmes: Bool) -> String {
        file.filter { !programmes || $0.line.place == .fileMaximum }.map { e in
            line(e, 0, indent: "  ", width: 18)
                + (e.key == "integrated_lufs" && gating != .bs1770_4 ? "  gating            \(gating)\(gating == .bs1770_1 ? " (ungated)" : " (not EBU R 128's)")\n" : "")
        }.joined()
    }

    /// The file's JSON members, each followed by ", "; the gating after the integrated loudness.
    func fileJSON() -> String {
        file.map { e in member(e, 0) + ", " + (e.key == "integrated_lufs" ? "\"gating\": \"\(gating)\", " : "") }.joined()
    }

    /// Programme `p`'s block of lines.
    func programmeText(_ p: Int) -> String { programme.map { line($0, p, indent: "    ", width: 16) }.joined() }

    /// Programme `p`'s JSON members before its target and after it, each pair joined by ", ".
    func programmeJSON(_ p: Int) -> (beforeTarget: String, afterTarget: String) {
        let before = programme.filter { $0.line.jsonOrder < SummaryLine.targetJSONOrder }, after = programme.filter { $0.line.jsonOrder >= SummaryLine.targetJSONOrder }
        return (before.map { member($0, p) }.joined(separator: ", "), after.map { member($0, p) }.joined(separator: ", "))
    }

    /// Channel `c`'s line: `RMS -16.0 dBFS, peak -10.5 dBFS, …`.
    func channelText(_ c: Int) -> String { channel.map { "\($0.line.label) \($0.line.text(value($0, c), unit: $0.unit))" }.joined(separator: ", ") }

    /// Channel `c`'s JSON members, joined by ", ".
    func channelJSON(_ c: Int) -> String { channel.map { member($0, c) }.joined(separator: ", ") }
}


/// The summary's lines about programme `index`'s target, if it has one: labels indented by
/// `indent` and padded to `width` (as the lines around them).
private func targetText(_ s: Snapshot, _ index: Int, indent: String = "  ", width: Int = 18) -> String {
    let p = s.programmes[index]
    guard let target = p.target, let state = s.state(programme: index) else { return "" }
    func label(_ l: String) -> String { indent + l + String(repeating: " ", count: max(1, width - l.count)) }
    let relative = p.loudness.integrated > -120 ? fixed(p.loudness.integrated - target.targetLUFS, 1) + " LU" : "-"
    return label("target") + "\(target.profile): \(fixed(target.targetLUFS, 1)) LUFS ± \(fixed(target.toleranceLU, 1)) LU, "
        + "true peak ≤ \(fixed(target.maxTruePeakDBTP, 1)) dBTP" + (target.maxShortTermLUFS.map { ", short-term ≤ \(fixed($0, 1)) LUFS" } ?? "") + "\n"
        + label("relative") + relative + "\n"
        + label("state") + state.rawValue + "\n"
}

/// The JSON members about programme `index`'s target (each followed by ", "), if it has one.
private func targetJSON(_ s: Snapshot, _ index: Int) -> String {
    let p = s.programmes[index]
    guard let target = p.target, let state = s.state(programme: index) else { return "" }
    let relative = p.loudness.integrated > -120 ? format3(p.loudness.integrated - target.targetLUFS) : "null"
    return "\"target\": {\"profile\": \(jsonString(target.profile)), \"target_lufs\": \(format3(target.targetLUFS)), "
        + "\"tolerance_lu\": \(format3(target.toleranceLU)), \"true_peak_limit_dbtp\": \(format3(target.maxTruePeakDBTP)), "
        + "\"max_short_term_lufs\": \(target.maxShortTermLUFS.map { format3($0) } ?? "null")}, "
        + "\"relative_integrated_lu\": \(relative), \"state\": \(jsonString(state.rawValue)), "
}

/// One programme of a JSON summary.
private func programmeJSON(_ summary: FileSummary, _ index: Int, _ programme: Programme) -> String {
    let members = summary.programmeJSON(index)
    return "{\"name\": \(jsonString(summary.snapshot.programmes[index].name)), \"channels\": [\(programme.channels.map { String($0 + 1) }.joined(separator: ", "))], "
        + "\"layout\": \(jsonString(programme.layout?.rawValue ?? "weights")), "
        + "\"weights\": [\(programme.weights.map { format3($0) }.joined(separator: ", "))], "
        + members.beforeTarget + ", " + targetJSON(summary.snapshot, index) + members.afterTarget + "}"
}

/// `5.1 on 1-6`, `weights 1,1 on 9,10`.
func programmeDescription(_ p: Programme) -> String {
    let layout = p.layout?.rawValue ?? "weights " + p.weights.map { fixed($0, 2) }.joined(separator: ",")
    return layout + " on " + p.channels.map { String($0 + 1) }.joined(separator: ",")
}

extension EngineError {
    /// A failed write to stdout: a closed reader is no error (status 0, nothing said); any
    /// other failure is 74.
    static func writing(_ error: OutputError) -> EngineError {
        if case .closed = error { return EngineError(.success, "") }
        return EngineError(.ioError, "\(error.description): stopping")
    }
}

/// One file's updates at each hop, for its observers (the alarms, `--alarm`: judged on the
/// audio's own time) and its outputs (`--stream`: its text or JSON lines).
private final class FileHops {
    let analyzer: Analyzer
    let observers: ObserverList
    let outputs: [any SnapshotOutput]
    let addressSpace: AddressSpace, json: JSONLines
    var snapshot: Snapshot

    init(analyzer: Analyzer, observers: ObserverList, outputs: [any SnapshotOutput], configuration c: Configuration) {
        self.analyzer = analyzer
        self.observers = observers
        self.outputs = outputs
        addressSpace = AddressSpace(prefix: c.prefix, kinds: c.send)
        json = JSONLines(kinds: c.send)
        snapshot = analyzer.makeSnapshot()
    }

    /// A hop whose analysis block is full: the update, to its observers, then its outputs.
    func hop() {
        analyzer.write(into: &snapshot)
        observers.observe(&snapshot, analyzer: analyzer)
        guard !outputs.isEmpty else { return }
        let update = OutputUpdate(snapshot: snapshot, addressSpace: addressSpace, json: json)
        for o in outputs { o.take(update) }
    }
}
