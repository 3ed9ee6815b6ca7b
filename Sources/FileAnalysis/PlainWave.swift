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
/// Not a memory map: a file that shrinks while it is read (another program truncating or
/// rewriting it) would raise SIGBUS on a mapped page past its new end. A read just comes
/// back short, and `shrank` says so. One thread at a time.
final class PlainWave {
    let channels: Int
    let frames: Int
    /// Bits per sample (16, 24, 32) of integers; -32 for floats.
    let bits: Int
    /// Whether a read came back short of the frames the header promised.
    private(set) var shrank = false
    private let fd: Int32
    /// The first frame's offset in the file.
    private let data: Int
    private let blockAlign: Int
    /// The bytes of the frames being converted (and 4 more: a 24-bit sample is loaded as 4 bytes).
    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0

    /// Opens `path` if its header describes `channels` channels of `bits` (as libsndfile
    /// reported them) with at least `frames` frames of data; nil otherwise.
    init?(path: String, channels: Int, frames: Int, bits: Int) {
        guard bits != 0, frames > 0 else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > 44,
              let (offset, format) = PlainWave.dataChunk(length: Int(st.st_size), read: { at, count in PlainWave.bytes(fd, at, count) }),
              format.channels == channels, format.bits == bits,
              offset + frames * format.blockAlign <= Int(st.st_size), format.blockAlign == channels * abs(bits) / 8
        else {
            close(fd)
            return nil
        }
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL)
        self.fd = fd
        data = offset
        blockAlign = format.blockAlign
        self.channels = channels
        self.frames = frames
        self.bits = bits
    }

    deinit {
        close(fd)
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
    static func dataChunk(length: Int, read: (Int, Int) -> [UInt8]?) -> (Int, (channels: Int, bits: Int, blockAlign: Int))? {
        func u32(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 | Int(b[at + 2]) << 16 | Int(b[at + 3]) << 24 }
        func u16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }
        func tag(_ b: [UInt8], _ at: Int) -> String { String(decoding: b[at..<(at + 4)], as: UTF8.self) }
        guard length >= 12, let riff = read(0, 12), riff.count == 12, ["RIFF", "RF64"].contains(tag(riff, 0)), tag(riff, 8) == "WAVE"
        else { return nil }
        var at = 12
        var format: (channels: Int, bits: Int, blockAlign: Int)?
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
                case (1, 16), (1, 24), (1, 32): format = (u16(f, 2), bits, u16(f, 12))
                case (3, 32): format = (u16(f, 2), -32, u16(f, 12))
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
        var got = 0
        while got < wanted {
            let n = pread(fd, first + got, wanted - got, off_t(data + start * blockAlign + got))
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            got += n
        }
        let whole = got / blockAlign
        if whole < count { shrank = true }
        guard whole > 0 else { return 0 }
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
