#if canImport(Glibc)
import Glibc
#endif
import CMpg123
import Settings

/// An MPEG audio stream (MP1, MP2, MP3) decoded by libmpg123 as libsndfile decodes it — the
/// same flags (float output, gapless, no resampling), so the same samples — but with
/// MPG123_QUIET: libsndfile's decoder lets libmpg123 write its own notes to stderr ("Note:
/// Illegal Audio-MPEG-Header …", "warning: Cannot read next header, a one-frame stream?"),
/// lines that are not jackvu's one line per failure. A stream that cannot be decoded to its
/// end, or that changes its sample rate or channels, is said (`fault`), not cut short in
/// silence as libsndfile's reader would. One thread at a time.
final class MPEGStream {
    private let path: String
    private let handle: OpaquePointer
    let sampleRate: Int
    let channels: Int
    /// The stream's length in frames as libsndfile gives it (its Xing/LAME header, else a
    /// scan of the whole stream); 0 when libmpg123 cannot tell.
    let frames: Int
    /// Why reading stopped before the stream's end (nil: it did not).
    private(set) var fault: String?

    /// Whether `path` holds an MPEG audio stream as libsndfile recognises one: after any
    /// ID3v2 tags, an MPEG audio frame header (11 sync bits, a valid version, layer, bit rate
    /// and sample rate). A tag followed by anything else (FLAC, say) is left to libsndfile.
    static func looksLikeMPEG(_ path: String, at start: Int = 0) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var offset = start
        var b = [UInt8](repeating: 0, count: 10)
        for _ in 0..<16 {
            guard pread(fd, &b, 10, off_t(offset)) >= 4 else { return false }
            if b[0] == 0x49, b[1] == 0x44, b[2] == 0x33 {  // "ID3": skip the tag
                guard b[6...9].allSatisfy({ $0 < 0x80 }) else { return false }
                let size = Int(b[6]) << 21 | Int(b[7]) << 14 | Int(b[8]) << 7 | Int(b[9])
                offset += 10 + size + (b[5] & 0x10 != 0 ? 10 : 0)
                continue
            }
            return isFrameHeader(b[0], b[1], b[2])
        }
        return false
    }

    /// An MPEG audio frame header's first three bytes: sync, version not reserved, layer
    /// I–III, bit rate not "bad", sample rate not reserved.
    static func isFrameHeader(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8) -> Bool {
        b0 == 0xFF && b1 & 0xE0 == 0xE0 && (b1 >> 3) & 3 != 1 && (b1 >> 1) & 3 != 0 && b2 >> 4 != 15 && (b2 >> 2) & 3 != 3
    }

    /// Opens the stream; throws the one-line reason (libmpg123's) on failure.
    init(path: String) throws(EngineError) {
        var rate = 0, channels: Int32 = 0, frames: Int64 = 0, error: Int32 = 0
        guard let h = jackvu_mpg123_open(path, &rate, &channels, &frames, &error) else {
            if error == Int32(MPG123_DONE.rawValue) {
                throw EngineError(.noInput, "cannot read '\(path)': it holds no MPEG audio frame that can be decoded")
            }
            throw EngineError(.noInput, "cannot read '\(path)': its MPEG audio cannot be decoded (libmpg123: \(MPEGStream.reason(error)))")
        }
        self.path = path
        handle = h
        sampleRate = rate
        self.channels = Int(channels)
        self.frames = max(0, Int(frames))
    }

    deinit { jackvu_mpg123_close(handle) }

    /// Reads up to `count` interleaved frames into `out`; returns the frames read, 0 at the end
    /// or after a fault (which `fault` then says; the frames decoded before it are returned
    /// first).
    func read(into out: UnsafeMutablePointer<Float>, frames count: Int) -> Int {
        guard fault == nil else { return 0 }
        var done = 0
        let r = jackvu_mpg123_read(handle, out, count * channels, &done)
        switch r {
        case Int32(MPG123_OK.rawValue):
            break
        case Int32(MPG123_DONE.rawValue):
            // libmpg123 (no "Frankenstein" streams, as libsndfile asks) ends where another
            // stream starts: two files joined end to end would be read half.
            let end = Int(jackvu_mpg123_stream_offset(handle))
            if end > 0, MPEGStream.looksLikeMPEG(path, at: end) {
                fault = "another MPEG stream starts at byte \(end) (files joined end to end?): jackvu analyses one stream a file"
            }
        case Int32(MPG123_NEW_FORMAT.rawValue):
            fault = "its MPEG stream changes its sample rate or channels part way: jackvu analyses one format a file"
        default:
            // Damage libmpg123 cannot step over (it looks 1024 bytes on for the next frame, as
            // libsndfile's reader, which then ended the file there without a word).
            fault = "its MPEG data is damaged near byte \(jackvu_mpg123_stream_offset(handle)) (libmpg123: \(MPEGStream.reason(r)))"
        }
        return done / channels
    }

    static func reason(_ code: Int32) -> String {
        guard let text = mpg123_plain_strerror(code) else { return "error \(code)" }
        // "Failed to find valid MPEG data within limit on resync. (code 28)": the words only.
        var reason = Substring(String(cString: text))
        if reason.hasSuffix(")"), let open = reason.lastIndex(of: "("), reason[open...].hasPrefix("(code ") {
            reason = reason[..<open]
        }
        while let last = reason.last, last == " " || last == "." || last == "\n" { reason = reason.dropLast() }
        return String(reason)
    }
}
