#if canImport(Glibc)
import Glibc
#endif
import Analysis
import DSP

/// The samples of a plain WAV file (little-endian 16-, 24- or 32-bit integers, or 32-bit
/// floats; WAVE_FORMAT_PCM, _IEEE_FLOAT or _EXTENSIBLE; RIFF or RF64, whose `data` chunk
/// gives 0xFFFFFFFF and its length in ds64) read with `pread` into one buffer
/// and converted to floats in the same pass as the de-interleaving. The values are exactly
/// libsndfile's (`sf_readf_float`: integers scaled by 1/2^(bits−1), floats as they are;
/// tested). Anything else — other formats, 8-bit, a header this parser does not follow, a
/// second `data` chunk (libsndfile decides what such a file holds) — is read through
/// libsndfile.
///
/// AIFF and AIFC files (big-endian integers or floats; AIFC's `sowt` little-endian integers)
/// and CAF files (`lpcm`, either byte order) are read here only where libsndfile cannot read
/// them to their end: an AIFF over 4 GiB, whose 32-bit lengths wrapped (ffmpeg's), one whose
/// header was never finished, a CAF cut short (libsndfile refuses it) (`Chunks`).
///
/// Not a memory map: a file that shrinks while it is read (another program truncating or
/// rewriting it) would raise SIGBUS on a mapped page past its new end. A read just comes
/// back short, and `shrank` says so. One thread at a time.
final class PlainWave {
    let channels: Int
    let frames: Int
    /// Bits per sample (16, 24, 32) of integers; -32 for floats.
    let bits: Int
    /// Whether the samples are big-endian (AIFF's).
    let bigEndian: Bool
    /// Whether a read came back short of the frames the header promised.
    private(set) var shrank = false
    private let fd: Int32
    /// The first frame's offset in the file.
    private let data: Int
    private let blockAlign: Int
    /// The bytes of the frames being converted (and 4 more: a 24-bit sample is loaded as 4 bytes).
    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0

    /// How a file's samples are laid out: channels, bits per sample (negative for floats),
    /// bytes a frame, and their byte order; the sample rate where it is an integer (WAV's, CAF's).
    struct Format: Equatable {
        var channels: Int, bits: Int, blockAlign: Int
        var bigEndian = false
        var sampleRate: Int?
    }

    /// The containers read here.
    enum Container { case wav, aiff, caf }

    /// The sample rate in the header, where the container's parser takes it (WAV's, CAF's).
    let sampleRate: Int?

    /// Whether the samples come from a stream (`init(stream:)`): read in turn, to its end or
    /// to the end of the data chunk's length where it gives one (`lengthGiven`).
    private let streamed: Bool
    /// A stream's data chunk's length, bytes, where its header gives one (not one of the
    /// lengths a writer to a pipe leaves: `Chunks.placeholders`, 0); and the bytes of audio
    /// read from it so far.
    let lengthGiven: Int?
    /// Whether a stream is RF64 (its form "RF64", not "RIFF").
    let rf64: Bool
    private(set) var bytesRead = 0
    /// The error that ended a stream's reading (errno), if one did: not its end.
    private(set) var streamError: Int32 = 0

    /// Opens `path` if its header (the container's) describes `channels` channels of `bits`
    /// (as libsndfile reported them; nil: as the header says) with at least `frames` frames of
    /// data, or with `frames` nil as many as there are to the end of the file (at least one);
    /// nil otherwise.
    init?(path: String, channels: Int?, frames: Int?, bits: Int?, container: Container = .wav) {
        guard bits != 0, frames ?? 1 > 0 else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        let read: (Int, Int) -> [UInt8]? = { at, count in PlainWave.bytes(fd, at, count) }
        let parse = switch container {
        case .wav: PlainWave.dataChunk
        case .aiff: PlainWave.soundChunk
        case .caf: PlainWave.cafData
        }
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 44,
              let (offset, format) = parse(Int(st.st_size), read),
              format.channels == channels ?? format.channels, format.bits == bits ?? format.bits, format.bits != 0, format.channels > 0,
              format.blockAlign == format.channels * abs(format.bits) / 8,
              case let frames = frames ?? (Int(st.st_size) - offset) / format.blockAlign, frames > 0,
              offset + frames * format.blockAlign <= Int(st.st_size)
        else {
            close(fd)
            return nil
        }
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        self.fd = fd
        data = offset
        blockAlign = format.blockAlign
        bigEndian = format.bigEndian
        sampleRate = format.sampleRate
        self.channels = format.channels
        self.frames = frames
        self.bits = format.bits
        streamed = false
        lengthGiven = nil
        rf64 = false
    }

    /// A WAV file arriving on `fd` (standard input: a pipe, as `ffmpeg -f wav -` and `sox -t
    /// wav -` write one), read in turn — its header here, its samples by `decode` — to the
    /// end of the data chunk's length, or where that is one a writer to a pipe leaves
    /// (0xFFFFFFFF, 0x7FFFF000, 0x7FFFFFFF, 0; RF64's, whose length is in ds64), to the end
    /// of the stream (libsndfile would stop a pipe's WAV after 4 GiB, at 0xFFFFFFFF bytes: 83
    /// minutes of 24-bit 5.1). Nil for what is not a RIFF/RF64 WAV of 16-, 24- or 32-bit PCM
    /// or 32-bit float. `fd` is the caller's, and stays open.
    init?(stream fd: Int32) {
        // The header, read forward only: the walk asks for its bytes in order, skipping the
        // chunks it passes over (read and dropped); the last bytes it asked for are the data
        // chunk's header, after which the samples start.
        var consumed = 0
        var last: [UInt8] = [], form: [UInt8] = []
        let read: (Int, Int) -> [UInt8]? = { at, count in
            guard at >= consumed, count <= 1 << 16 else { return nil }
            var out = [UInt8](repeating: 0, count: max(count, 1 << 12))
            var error: Int32 = 0
            while consumed < at {
                let n = out.withUnsafeMutableBytes { PlainWave.fill(fd, $0.baseAddress!, min(at - consumed, $0.count), error: &error) }
                guard n > 0 else { return nil }
                consumed += n
            }
            let got = out.withUnsafeMutableBytes { PlainWave.fill(fd, $0.baseAddress!, count, error: &error) }
            consumed += got
            last = Array(out[0..<got])
            if at == 0 { form = last }
            return last
        }
        guard let (offset, format) = PlainWave.dataChunk(length: Int.max, read: read), offset == consumed,
              last.count == 8, last.starts(with: Array("data".utf8)), format.channels > 0,
              format.blockAlign == format.channels * abs(format.bits) / 8
        else { return nil }
        let length = last[4..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
        lengthGiven = length == 0 || Chunks.placeholders.contains(length) ? nil : length
        self.fd = fd
        data = offset
        blockAlign = format.blockAlign
        bigEndian = false
        sampleRate = format.sampleRate
        channels = format.channels
        frames = lengthGiven.map { $0 / format.blockAlign } ?? Int.max
        bits = format.bits
        streamed = true
        rf64 = form.starts(with: Array("RF64".utf8))
    }

    /// A stream that ended before the length its data chunk gives (a writer that stopped, or
    /// a file cut short sent down the pipe): said as a file cut short is. Once it is read.
    var streamCut: CutAudio? {
        guard let lengthGiven, bytesRead < lengthGiven - lengthGiven % blockAlign else { return nil }
        return CutAudio(chunk: "data", claimed: lengthGiven, there: bytesRead)
    }

    /// Reads up to `count` bytes of `fd` into `bytes`, from `offset` (`pread`) or, nil, in turn
    /// (a stream); returns how many: fewer only at the end of the file or stream, or on an error
    /// (`error`, errno; else left as it was).
    private static func fill(_ fd: Int32, _ bytes: UnsafeMutableRawPointer, _ count: Int, at offset: Int? = nil, error: inout Int32) -> Int {
        var got = 0
        while got < count {
            let n = offset.map { pread(fd, bytes + got, count - got, off_t($0 + got)) } ?? Glibc.read(fd, bytes + got, count - got)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { error = errno }
            if n <= 0 { break }
            got += n
        }
        return got
    }

    deinit {
        if !streamed { close(fd) }
        buffer?.deallocate()
    }

    /// `count` bytes at `offset` of `fd` (fewer at the end of the file; nil on an error).
    private static func bytes(_ fd: Int32, _ offset: Int, _ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
        guard n >= 0 else { return nil }
        out.removeLast(count - n)
        return out
    }

    /// The data chunk's offset and the format chunk's channels, bits (negative for floats)
    /// and block size, or nil when the header is not plain PCM or float, or when a second
    /// `data` chunk follows the first. `read(offset, count)` gives the file's bytes.
    static func dataChunk(length: Int, read: (Int, Int) -> [UInt8]?) -> (Int, Format)? {
        func u32(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 | Int(b[at + 2]) << 16 | Int(b[at + 3]) << 24 }
        func u16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }
        func tag(_ b: [UInt8], _ at: Int) -> String { String(decoding: b[at..<(at + 4)], as: UTF8.self) }
        guard length >= 12, let riff = read(0, 12), riff.count == 12, ["RIFF", "RF64"].contains(tag(riff, 0)), tag(riff, 8) == "WAVE"
        else { return nil }
        var at = 12
        var format: Format?
        var found: Int?
        // At most 4096 chunks, as `Chunks` walks: audio taken for chunks (zeros: 8 bytes a
        // step) must not keep the walk going through the file (a 4 GiB WAV whose data
        // chunk's length had wrapped kept `analyze` at it for four minutes: half a billion
        // preads of 8 bytes). Beyond them, libsndfile's call.
        var chunks = 0
        while at + 8 <= length {
            chunks += 1
            guard chunks <= 4096, let header = read(at, 8), header.count == 8 else { return nil }
            let id = tag(header, 0), size = u32(header, 4), body = at + 8
            if id == "fmt " && found == nil {
                guard size >= 16, size <= 1024, body + size <= length, let f = read(body, size), f.count == size else { return nil }
                var code = u16(f, 0)
                let bits = u16(f, 14)
                if code == 0xFFFE {  // WAVE_FORMAT_EXTENSIBLE: the sub-format's code, and all bits valid
                    guard size >= 40, u16(f, 18) == bits else { return nil }
                    code = u16(f, 24)
                }
                switch (code, bits) {
                case (1, 16), (1, 24), (1, 32): format = Format(channels: u16(f, 2), bits: bits, blockAlign: u16(f, 12), sampleRate: u32(f, 4))
                case (3, 32): format = Format(channels: u16(f, 2), bits: -32, blockAlign: u16(f, 12), sampleRate: u32(f, 4))
                default: return nil
                }
            } else if id == "data" {
                guard found == nil else { return nil }  // a second data chunk: libsndfile's call
                guard format != nil else { return nil }
                found = body
                // A data chunk claiming more than the file holds (a header written before
                // the recording ended) is the last chunk: nothing after it to look at; so is
                // one claiming nothing, which `AudioFile` reads only when audio follows it (a
                // header never finished: `Chunks`), and RF64's 0xFFFFFFFF (its length is in
                // ds64; in a file over 4 GB the walk would go on into the audio), and one with
                // more than 4 GiB after it (a WAV over 4 GiB, whose length did not fit 32
                // bits: `Chunks`).
                if body + size > length || size == 0 || size == 0xFFFF_FFFF || length - body > 0xFFFF_FFFF { break }
            }
            at = body + size + (size & 1)
        }
        guard let found, let format else { return nil }
        return (found, format)
    }

    /// An AIFF or AIFC file's first sample's offset (in `SSND`, after its offset field) and
    /// its `COMM` chunk's format: 16-, 24- or 32-bit integers, big-endian (AIFF; AIFC `NONE`,
    /// `twos`, `in24`, `in32`) or little-endian (AIFC `sowt`), or big-endian 32-bit floats
    /// (AIFC `fl32`); nil for anything else, or where `COMM` does not come before `SSND`. The
    /// walk stops at `SSND`: its length is what it cannot trust.
    static func soundChunk(length: Int, read: (Int, Int) -> [UInt8]?) -> (Int, Format)? {
        func u32(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]) }
        func u16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) << 8 | Int(b[at + 1]) }
        func tag(_ b: [UInt8], _ at: Int) -> String { String(decoding: b[at..<(at + 4)], as: UTF8.self) }
        guard length >= 12, let form = read(0, 12), form.count == 12, tag(form, 0) == "FORM", ["AIFF", "AIFC"].contains(tag(form, 8))
        else { return nil }
        let aifc = tag(form, 8) == "AIFC"
        var at = 12
        var format: Format?
        for _ in 0..<4096 {
            guard at + 8 <= length, let header = read(at, 8), header.count == 8 else { return nil }
            let id = tag(header, 0), size = u32(header, 4), body = at + 8
            if id == "COMM" {
                guard size >= (aifc ? 22 : 18), size <= 1024, body + size <= length, let c = read(body, size), c.count == size else { return nil }
                let channels = u16(c, 0), bits = u16(c, 6)
                let kind = aifc ? tag(c, 18) : "NONE"
                switch (kind, bits) {
                case ("NONE", 16), ("NONE", 24), ("NONE", 32), ("twos", 16), ("in24", 24), ("in32", 32):
                    format = Format(channels: channels, bits: bits, blockAlign: channels * bits / 8, bigEndian: true)
                case ("sowt", 16), ("sowt", 24), ("sowt", 32):
                    format = Format(channels: channels, bits: bits, blockAlign: channels * bits / 8)
                case ("fl32", 32), ("FL32", 32):
                    format = Format(channels: channels, bits: -32, blockAlign: channels * 4, bigEndian: true)
                default: return nil
                }
            } else if id == "SSND" {
                // Its offset field: bytes to skip before the first sample (0 in practice).
                guard let format, body + 8 <= length, let fields = read(body, 8), fields.count == 8, case let first = body + 8 + u32(fields, 0),
                      first <= length
                else { return nil }
                return (first, format)
            }
            at = body + size + (size & 1)
        }
        return nil
    }

    /// A CAF file's first sample's offset (in `data`, after its edit count) and its `desc`
    /// chunk's format: `lpcm`, one frame a packet, 16-, 24- or 32-bit integers or 32-bit
    /// floats, big- or little-endian (its flags); nil for anything else, or where `desc` does
    /// not come before `data`. The walk stops at `data`: its length is what it cannot trust.
    static func cafData(length: Int, read: (Int, Int) -> [UInt8]?) -> (Int, Format)? {
        func u64(_ b: [UInt8], _ at: Int) -> UInt64 { b[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        func u32(_ b: [UInt8], _ at: Int) -> Int { b[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        func tag(_ b: [UInt8], _ at: Int) -> String { String(decoding: b[at..<(at + 4)], as: UTF8.self) }
        guard length >= 8, let head = read(0, 8), head.count == 8, tag(head, 0) == "caff" else { return nil }
        var at = 8
        var format: Format?
        for _ in 0..<4096 {
            guard at + 12 <= length, let header = read(at, 12), header.count == 12 else { return nil }
            let id = tag(header, 0), body = at + 12
            if id == "desc" {
                guard let d = read(body, 32), d.count == 32, tag(d, 8) == "lpcm", u32(d, 20) == 1 else { return nil }
                let rate = Double(bitPattern: u64(d, 0)), flags = u32(d, 12), channels = u32(d, 24)
                let bits = u32(d, 28), float = flags & 1 != 0
                guard [16, 24, 32].contains(bits), !float || bits == 32, u32(d, 16) == channels * bits / 8 else { return nil }
                format = Format(channels: channels, bits: float ? -32 : bits, blockAlign: channels * bits / 8, bigEndian: flags & 2 == 0,
                                sampleRate: rate.isFinite && rate >= 1 && rate < 1e9 ? Int(exactly: rate) : nil)
            } else if id == "data" {
                guard let format, body + 4 <= length else { return nil }
                return (body + 4, format)
            }
            // A size beyond the file (or -1: "to the end", which only `data` may give) ends the walk.
            guard let size = Int(exactly: u64(header, 4)), size <= length - body else { return nil }
            at = body + size
        }
        return nil
    }

    /// Reads and converts `count` frames from frame `start` on into `planar` (channel c at
    /// `c·stride`); returns the frames converted: fewer than `count` only when the file
    /// shrank (or a read failed), which also sets `shrank`.
    func decode(from start: Int, count: Int, into planar: UnsafeMutablePointer<Float>, stride: Int) -> Int {
        guard count > 0 else { return 0 }
        let wanted = count * blockAlign
        if capacity < wanted + 8 {
            buffer?.deallocate()
            capacity = wanted + 8
            buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        }
        let first = buffer!
        // A stream in turn, from where the previous call ended (`start` is that frame): its end
        // is its end, not a file that shrank (a part frame there is dropped); a file at the frame.
        var error: Int32 = 0
        let got = PlainWave.fill(fd, first, wanted, at: streamed ? nil : data + start * blockAlign, error: &error)
        if streamed {
            bytesRead += got
            if error != 0 { streamError = error }
        }
        let whole = got / blockAlign
        if whole < count && !streamed { shrank = true }
        guard whole > 0 else { return 0 }
        if bigEndian {
            convertBigEndian(first, whole, planar, stride)
            return whole
        }
        switch bits {
        case 16:
            convert(first, whole, planar, stride, bytes: 2) { p in Float(Int16(littleEndian: p.loadUnaligned(as: Int16.self))) * (1 / 32768) }
        case 24:
            // Four bytes loaded, the lowest three kept at the top of an Int32 (the buffer has
            // bytes to spare past the last frame).
            convert(first, whole, planar, stride, bytes: 3) { p in
                Float(Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) << 8)) * (1 / 2_147_483_648)
            }
        case 32:
            convert(first, whole, planar, stride, bytes: 4) { p in Float(Int32(littleEndian: p.loadUnaligned(as: Int32.self))) * (1 / 2_147_483_648) }
        default:  // 32-bit float
            convert(first, whole, planar, stride, bytes: 4) { p in Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))) }
        }
        return whole
    }

    /// `count` big-endian frames (AIFF's), converted as `decode` converts little-endian ones:
    /// the same values, one sample at a time (a rare file: one AIFF cannot read to its end).
    private func convertBigEndian(_ frames: UnsafeRawPointer, _ count: Int, _ planar: UnsafeMutablePointer<Float>, _ stride: Int) {
        switch bits {
        case 16:
            deinterleave(frames, count, planar, stride, channels: channels, bytes: 2) { p in Float(Int16(bigEndian: p.loadUnaligned(as: Int16.self))) * (1 / 32768) }
        case 24:
            // Three bytes at the top of an Int32 (the buffer has bytes to spare past the last frame).
            deinterleave(frames, count, planar, stride, channels: channels, bytes: 3) { p in
                Float(Int32(bitPattern: UInt32(bigEndian: p.loadUnaligned(as: UInt32.self)) & 0xFFFF_FF00)) * (1 / 2_147_483_648)
            }
        case 32:
            deinterleave(frames, count, planar, stride, channels: channels, bytes: 4) { p in Float(Int32(bigEndian: p.loadUnaligned(as: Int32.self))) * (1 / 2_147_483_648) }
        default:  // 32-bit float
            deinterleave(frames, count, planar, stride, channels: channels, bytes: 4) { p in Float(bitPattern: UInt32(bigEndian: p.loadUnaligned(as: UInt32.self))) }
        }
    }

    /// `count` frames from `frames`, each channel's sample (`bytes` long) through `sample`.
    @inline(__always)
    private func convert(_ frames: UnsafeRawPointer, _ count: Int, _ planar: UnsafeMutablePointer<Float>, _ stride: Int,
                         bytes: Int, _ sample: (UnsafeRawPointer) -> Float)
    {
        if channels == 2 {
            let l = planar, r = planar + stride
            let done = PlainWave.convertStereo(frames, count, l, r, bits: bits)
            for i in done..<count {
                let p = frames + i * blockAlign
                l[i] = sample(p)
                r[i] = sample(p + bytes)
            }
            return
        }
        if channels == 1 {
            let done = bits == 24 ? Vector.monoInt24ToFloat(frames, count: count, into: planar) : 0
            for i in done..<count { planar[i] = sample(frames + i * bytes) }
            return
        }
        // 5.1 with its channel count a constant, so the inner loop unrolls.
        switch channels {
        case 6: deinterleave(frames, count, planar, stride, channels: 6, bytes: bytes, sample)
        default: deinterleave(frames, count, planar, stride, channels: channels, bytes: bytes, sample)
        }
    }

    @inline(__always)
    private func deinterleave(_ frames: UnsafeRawPointer, _ count: Int, _ planar: UnsafeMutablePointer<Float>, _ stride: Int,
                              channels: Int, bytes: Int, _ sample: (UnsafeRawPointer) -> Float)
    {
        let frameBytes = channels * bytes
        for i in 0..<count {
            let p = frames + i * frameBytes
            for c in 0..<channels { planar[c * stride + i] = sample(p + c * bytes) }
        }
    }

    /// The whole groups of four stereo frames of 16- or 24-bit integers converted four
    /// samples a vector (the conversion and the scaling in SIMD lanes, a channel's four
    /// samples loaded straight into its lanes, so nothing is shuffled); returns the frames
    /// done, a multiple of four (the caller converts the rest). The same values as `convert`'s
    /// scalar loop: an integer's conversion to a float and a scaling by a power of two are
    /// exact, lane by lane as one by one. 0 for other formats (and on a big-endian machine).
    @inline(__always)
    private static func convertStereo(_ frames: UnsafeRawPointer, _ count: Int, _ l: UnsafeMutablePointer<Float>,
                                      _ r: UnsafeMutablePointer<Float>, bits: Int) -> Int
    {
        #if _endian(big)
        return 0
        #else
        let whole = count & ~3
        switch bits {
        case 24:
            // With AVX2, a byte shuffle (the buffer has eight bytes to spare past the last frame).
            let wide = Vector.stereoInt24ToFloat(frames, count: whole, left: l, right: r)
            if wide == whole { return whole }
            // Four bytes loaded per sample (the buffer has bytes to spare past the last frame),
            // its three at the top of an Int32.
            let scale = SIMD4<Float>(repeating: 1 / 2_147_483_648)
            @inline(__always) func lanes(_ p: UnsafeRawPointer) -> SIMD4<Float> {
                func at(_ o: Int) -> UInt32 { UInt32(littleEndian: p.loadUnaligned(fromByteOffset: o, as: UInt32.self)) }
                let u = SIMD4<UInt32>(at(0), at(6), at(12), at(18)) &<< 8
                return SIMD4<Float>(SIMD4<Int32>(truncatingIfNeeded: u)) * scale
            }
            var i = 0
            while i < whole {
                let p = frames + 6 * i
                UnsafeMutableRawPointer(l + i).storeBytes(of: lanes(p), as: SIMD4<Float>.self)
                UnsafeMutableRawPointer(r + i).storeBytes(of: lanes(p + 3), as: SIMD4<Float>.self)
                i += 4
            }
        case 16:
            let scale = SIMD4<Float>(repeating: 1 / 32768)
            var i = 0
            while i < whole {
                let v = (frames + 4 * i).loadUnaligned(as: SIMD8<Int16>.self)
                UnsafeMutableRawPointer(l + i).storeBytes(of: SIMD4<Float>(v.evenHalf) * scale, as: SIMD4<Float>.self)
                UnsafeMutableRawPointer(r + i).storeBytes(of: SIMD4<Float>(v.oddHalf) * scale, as: SIMD4<Float>.self)
                i += 4
            }
        default:
            return 0
        }
        return whole
        #endif
    }
}
