#if canImport(Glibc)
import Glibc
#endif

/// The samples of a plain WAV file (little-endian 16-, 24- or 32-bit integers, or 32-bit
/// floats; WAVE_FORMAT_PCM, _IEEE_FLOAT or _EXTENSIBLE) read straight from a memory map:
/// no copy from the page cache into a read buffer, and the conversion to floats fused with
/// the de-interleaving. The values are exactly libsndfile's (`sf_readf_float`: integers
/// scaled by 1/2^(bits−1), floats as they are; tested). Anything else — other formats,
/// 8-bit, a header this parser does not follow — is read through libsndfile.
/// One thread at a time.
final class MappedWave {
    let channels: Int
    let frames: Int
    /// Bits per sample (16, 24, 32) of integers; -32 for floats.
    let bits: Int
    private let mapping: UnsafeMutableRawPointer
    private let length: Int
    /// The first frame.
    private let data: UnsafeRawPointer
    private let blockAlign: Int

    /// Maps `path` if its header describes `channels` channels of `bits` (as libsndfile
    /// reported them) with at least `frames` frames of data; nil otherwise.
    init?(path: String, channels: Int, frames: Int, bits: Int) {
        guard bits != 0, frames > 0 else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_size > 44 else { return nil }
        let length = Int(st.st_size)
        guard let m = mmap(nil, length, PROT_READ, MAP_PRIVATE, fd, 0), m != MAP_FAILED else { return nil }
        guard let (offset, format) = MappedWave.dataChunk(UnsafeRawPointer(m), length: length),
              format.channels == channels, format.bits == bits,
              offset + frames * format.blockAlign <= length, format.blockAlign == channels * abs(bits) / 8
        else {
            munmap(m, length)
            return nil
        }
        madvise(m, length, MADV_SEQUENTIAL)
        mapping = m
        self.length = length
        data = UnsafeRawPointer(m) + offset
        blockAlign = format.blockAlign
        self.channels = channels
        self.frames = frames
        self.bits = bits
    }

    deinit { munmap(mapping, length) }

    /// The data chunk's offset and the format chunk's channels, bits (negative for floats)
    /// and block size, or nil when the header is not plain PCM or float.
    static func dataChunk(_ p: UnsafeRawPointer, length: Int) -> (Int, (channels: Int, bits: Int, blockAlign: Int))? {
        func u32(_ at: Int) -> Int { Int(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: at, as: UInt32.self))) }
        func u16(_ at: Int) -> Int { Int(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: at, as: UInt16.self))) }
        func tag(_ at: Int) -> String { String(decoding: UnsafeRawBufferPointer(start: p + at, count: 4), as: UTF8.self) }
        guard length >= 12, tag(0) == "RIFF", tag(8) == "WAVE" else { return nil }
        var at = 12
        var format: (channels: Int, bits: Int, blockAlign: Int)?
        while at + 8 <= length {
            let id = tag(at), size = u32(at + 4), body = at + 8
            if id == "fmt " {
                guard size >= 16, body + size <= length else { return nil }
                var code = u16(body)
                let bits = u16(body + 14)
                if code == 0xFFFE {  // WAVE_FORMAT_EXTENSIBLE: the sub-format's code, and all bits valid
                    guard size >= 40, u16(body + 18) == bits else { return nil }
                    code = u16(body + 24)
                }
                switch (code, bits) {
                case (1, 16), (1, 24), (1, 32): format = (u16(body + 2), bits, u16(body + 12))
                case (3, 32): format = (u16(body + 2), -32, u16(body + 12))
                default: return nil
                }
            } else if id == "data" {
                guard let format else { return nil }
                return (body, format)
            }
            at = body + size + (size & 1)
        }
        return nil
    }

    /// Converts `count` frames from frame `start` on into `planar` (channel c at `c·stride`),
    /// in one pass over the mapped frames.
    func decode(from start: Int, count: Int, into planar: UnsafeMutablePointer<Float>, stride: Int) {
        guard count > 0 else { return }
        let first = data + start * blockAlign
        switch bits {
        case 16:
            convert(first, count, planar, stride, bytes: 2) { p in Float(Int16(littleEndian: p.loadUnaligned(as: Int16.self))) * (1 / 32768) }
        case 24:
            // Four bytes loaded, the lowest three kept at the top of an Int32; the file's last
            // frame is read byte by byte (a fourth byte could lie past the mapping).
            let whole = start + count == frames ? count - 1 : count
            convert(first, whole, planar, stride, bytes: 3) { p in
                Float(Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) << 8)) * (1 / 2_147_483_648)
            }
            if whole < count {
                convert(first + whole * blockAlign, 1, planar + whole, stride, bytes: 3) { p in
                    let v = UInt32(p.load(as: UInt8.self)) << 8 | UInt32(p.load(fromByteOffset: 1, as: UInt8.self)) << 16
                        | UInt32(p.load(fromByteOffset: 2, as: UInt8.self)) << 24
                    return Float(Int32(bitPattern: v)) * (1 / 2_147_483_648)
                }
            }
        case 32:
            convert(first, count, planar, stride, bytes: 4) { p in Float(Int32(littleEndian: p.loadUnaligned(as: Int32.self))) * (1 / 2_147_483_648) }
        default:  // 32-bit float
            convert(first, count, planar, stride, bytes: 4) { p in Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))) }
        }
    }

    /// `count` frames from `frames`, each channel's sample (`bytes` long) through `sample`.
    @inline(__always)
    private func convert(_ frames: UnsafeRawPointer, _ count: Int, _ planar: UnsafeMutablePointer<Float>, _ stride: Int,
                         bytes: Int, _ sample: (UnsafeRawPointer) -> Float)
    {
        if channels == 2 {
            let l = planar, r = planar + stride
            for i in 0..<count {
                let p = frames + i * blockAlign
                l[i] = sample(p)
                r[i] = sample(p + bytes)
            }
            return
        }
        for i in 0..<count {
            let p = frames + i * blockAlign
            for c in 0..<channels { planar[c * stride + i] = sample(p + c * bytes) }
        }
    }
}
