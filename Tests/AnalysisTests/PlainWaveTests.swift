#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import FileAnalysis
import Settings
import TestSupport
import XCTest

/// Plain WAV files read by jackvu give exactly libsndfile's samples: 16-, 24- and
/// 32-bit integers and 32-bit floats, WAVE_FORMAT_PCM/IEEE_FLOAT and _EXTENSIBLE headers,
/// other chunks (odd-sized, padded) before the data, 1, 2, 3 and 6 channels, chunk boundaries
/// anywhere; and what the parser does not take goes to libsndfile.
final class PlainWaveTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryFolder("plain")
    }

    override func tearDownWithError() throws {
        removeTemporaryFolder(directory)
    }

    /// Frames with the extremes of every format, silence, and noise.
    private func signal(channels: Int, frames: Int) -> [[Float]] {
        var seed: UInt64 = 7
        return (0..<channels).map { ch in
            (0..<frames).map { i in
                if i < 6 { return [1, -1, 0, 0.99999, -0.99999, Float.ulpOfOne][i] * (ch % 2 == 0 ? 1 : -1) }
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                return Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52) * 0.9
            }
        }
    }

    /// A WAV file of `bits` (negative: float) written here, extensible or not, with an
    /// odd-sized LIST chunk before the data when `extra`.
    private func write(_ name: String, _ x: [[Float]], bits: Int, extensible: Bool, extra: Bool) throws -> String {
        let c = x.count, frames = x[0].count, bytes = abs(bits) / 8
        var d = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { d.append(contentsOf: $0) } }
        var body = Data()
        for i in 0..<frames {
            for ch in 0..<c {
                let v = Double(x[ch][i])
                switch bits {
                case -32: withUnsafeBytes(of: Float(v).bitPattern.littleEndian) { body.append(contentsOf: $0) }
                default:
                    let full = Double(1 << (bits - 1))
                    let q = Int64(max(-full, min(full - 1, (v * full).rounded())))
                    for b in 0..<bytes { body.append(UInt8(truncatingIfNeeded: q >> (8 * b))) }
                }
            }
        }
        let code = bits < 0 ? 3 : 1
        d.append(contentsOf: Array("RIFF".utf8)); u32(0)
        d.append(contentsOf: Array("WAVE".utf8))
        if extra { d.append(contentsOf: Array("LIST".utf8)); u32(5); d.append(contentsOf: Array("INFOx\0".utf8)) }
        d.append(contentsOf: Array("fmt ".utf8)); u32(extensible ? 40 : 16); u16(extensible ? 0xFFFE : code); u16(c)
        u32(48000); u32(48000 * c * bytes); u16(c * bytes); u16(abs(bits))
        if extensible {
            u16(22); u16(abs(bits)); u32(0)
            u16(code); d.append(contentsOf: [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71])
        }
        if bits < 0 && !extensible { d.append(contentsOf: Array("fact".utf8)); u32(4); u32(frames) }
        d.append(contentsOf: Array("data".utf8)); u32(body.count)
        d.append(body)
        d.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(d.count - 8).littleEndian) { Data($0) })
        let path = directory.appendingPathComponent(name).path
        try d.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The WAV file at `path` as RF64 (EBU Tech 3306): "RF64", a ds64 chunk with the sizes, and
    /// 0xFFFFFFFF in the RIFF and data headers.
    private func rf64(_ path: String) throws -> String {
        let wav = try Data(contentsOf: URL(fileURLWithPath: path))
        func le(_ v: Int, _ n: Int) -> Data { Data((0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }) }
        let data = try XCTUnwrap(wav.range(of: Data("data".utf8))).lowerBound
        let samples = wav.count - data - 8
        var out = Data("RF64".utf8) + le(0xFFFF_FFFF, 4) + Data("WAVEds64".utf8) + le(28, 4)
            + le(wav.count + 36 - 8, 8) + le(samples, 8) + le(0, 8) + le(0, 4)
        out += wav[12..<data] + Data("data".utf8) + le(0xFFFF_FFFF, 4) + wav[(data + 8)...]
        let out64 = path.replacingOccurrences(of: ".wav", with: ".rf64")
        try out.write(to: URL(fileURLWithPath: out64))
        return out64
    }

    /// All of a file's samples, read in pieces of `chunk` frames.
    private func read(_ file: AudioFile, chunk: Int) -> [[Float]] {
        let planar = UnsafeMutablePointer<Float>.allocate(capacity: chunk * file.channels)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: chunk * file.channels)
        defer { planar.deallocate(); scratch.deallocate() }
        var out = [[Float]](repeating: [], count: file.channels)
        while true {
            let n = file.read(planar: planar, stride: chunk, count: chunk, scratch: scratch)
            guard n > 0 else { break }
            for c in 0..<file.channels { out[c] += UnsafeBufferPointer(start: planar + c * chunk, count: n) }
        }
        return out
    }

    func testMappedSamplesAreLibsndfilesExactly() throws {
        var files: [String] = []
        for bits in [16, 24, 32, -32] {
            for channels in [1, 2, 3, 6] {
                for (extensible, extra) in [(false, false), (true, true), (false, true)] {
                    files.append(try write("\(bits)-\(channels)-\(extensible)-\(extra).wav", signal(channels: channels, frames: 1001 + channels),
                                           bits: bits, extensible: extensible, extra: extra))
                }
            }
        }
        // RF64 (the same samples under EBU Tech 3306's header), each format once.
        for bits in [16, 24, 32, -32] {
            files.append(try rf64(try write("\(bits)-rf64.wav", signal(channels: 2, frames: 1003), bits: bits, extensible: bits == 24, extra: false)))
        }
        // And files from a real writer: sox's 24-bit (WAVE_FORMAT_EXTENSIBLE) and 16-bit.
        for (bits, name) in [("24", "sox24.wav"), ("16", "sox16.wav")] {
            let path = directory.appendingPathComponent(name).path
            let r = try Executables.run("sox", ["-n", "-r", "44100", "-c", "2", "-b", bits, path, "synth", "0.5", "pinknoise", "vol", "0.9"])
            XCTAssertEqual(r.status, 0, r.stderr)
            files.append(path)
        }
        for path in files {
            let mapped = try AudioFile(path: path), libsndfile = try AudioFile(path: path, mapping: false)
            XCTAssertNotNil(mapped.plain, "\(path) is read by jackvu")
            XCTAssertNil(libsndfile.plain)
            let reference = read(libsndfile, chunk: 4096)
            XCTAssertEqual(reference[0].count, libsndfile.frames)
            for chunk in [4096, 100, 1] where chunk > 1 || mapped.frames < 2000 {
                let samples = read(try AudioFile(path: path), chunk: chunk)
                XCTAssertEqual(samples.map { $0.map(\.bitPattern) }, reference.map { $0.map(\.bitPattern) }, "\(path), pieces of \(chunk)")
            }
        }
    }

    /// Files the parser does not take are read through libsndfile, as before.
    func testOtherFilesGoThroughLibsndfile() throws {
        let flac = directory.appendingPathComponent("tone.flac").path, u8 = directory.appendingPathComponent("u8.wav").path
        XCTAssertEqual(try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", flac, "synth", "0.2", "sine", "440"]).status, 0)
        XCTAssertEqual(try Executables.run("sox", ["-n", "-r", "48000", "-c", "1", "-b", "8", u8, "synth", "0.2", "sine", "440"]).status, 0)
        for path in [flac, u8] {
            let file = try AudioFile(path: path)
            XCTAssertNil(file.plain, path)
            let samples = read(file, chunk: 512)
            XCTAssertEqual(samples[0].count, file.frames)
            XCTAssertGreaterThan(samples[0].map(abs).max() ?? 0, 0.5, path)
        }
    }

    /// A second `data` chunk (libsndfile decides what such a file holds) is left to
    /// libsndfile, so both readers agree.
    func testTwoDataChunksGoThroughLibsndfile() throws {
        let path = try write("two.wav", signal(channels: 2, frames: 500), bits: 16, extensible: false, extra: false)
        var d = try Data(contentsOf: URL(fileURLWithPath: path))
        d.append(contentsOf: Array("data".utf8))
        d.append(contentsOf: [8, 0, 0, 0, 0xFF, 0x7F, 0xFF, 0x7F, 0x00, 0x80, 0x00, 0x80])
        d.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(d.count - 8).littleEndian) { Data($0) })
        try d.write(to: URL(fileURLWithPath: path))
        // Debian's libsndfile refuses this one ("Internal error : SF_INFO struct incomplete"),
        // which reaches the user as what is wrong with the file; were it to read it, jackvu
        // must read the same samples.
        do {
            let file = try AudioFile(path: path)
            XCTAssertNil(file.plain)
            XCTAssertEqual(read(file, chunk: 64).map { $0.map(\.bitPattern) },
                           read(try AudioFile(path: path, mapping: false), chunk: 64).map { $0.map(\.bitPattern) })
        } catch {
            XCTAssertTrue(error.message.hasPrefix("cannot read '\(path)': its header is damaged"), error.message)
        }
    }

    /// A WAV or AIFF over 4 GiB, its lengths modulo 2³² (ffmpeg's AIFF) or 0xFFFFFFFF
    /// (ffmpeg's WAV): libsndfile reads the wrapped length (a 6 h file as 10 s); jackvu reads
    /// to the end of the file, and says why (`Chunks`). Each file is sparse: 4 GiB of silence
    /// between two copies of the signal, the second at the file's end.
    func testAWAVOrAIFFOver4GiBIsReadToItsEnd() throws {
        let x = signal(channels: 2, frames: 1000)
        let wav = try write("big.wav", x, bits: 16, extensible: false, extra: false)
        let aiff = directory.appendingPathComponent("big.aiff").path
        XCTAssertEqual(try Executables.run("sox", [wav, "-t", "aiff", aiff]).status, 0)
        let planar = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 1000)
        defer { planar.deallocate() }
        func poke(_ path: String, _ at: Int, _ value: UInt32) {
            let fd = open(path, O_WRONLY)
            XCTAssertEqual(withUnsafeBytes(of: value) { pwrite(fd, $0.baseAddress, 4, off_t(at)) }, 4)
            close(fd)
        }
        for (path, id, skip, why) in [(wav, "data", 0, "a WAV over 4 GiB: its data length"), (aiff, "SSND", 8, "an AIFF over 4 GiB: its SSND length")] {
            let original = read(try AudioFile(path: path), chunk: 1000)
            let small = try Data(contentsOf: URL(fileURLWithPath: path))
            let body = try XCTUnwrap(small.range(of: Data(id.utf8))).upperBound + 4
            let audio = small.count - body - skip, size = small.count + (1 << 32)
            XCTAssertEqual(original.map(\.count), [1000, 1000])
            // The header's lengths are unchanged: they grew by exactly 2³². (AIFF's frame
            // count grows by 2³⁰.)
            if id == "SSND" {
                let comm = try XCTUnwrap(small.range(of: Data("COMM".utf8))).upperBound + 4 + 2
                poke(path, comm, UInt32(1000 + (1 << 30)).bigEndian)
            }
            XCTAssertEqual(truncate(path, off_t(size)), 0)
            let fd = open(path, O_WRONLY)
            XCTAssertEqual(small.suffix(audio).withUnsafeBytes { pwrite(fd, $0.baseAddress, audio, off_t(size - audio)) }, audio)
            close(fd)
            let cut = try XCTUnwrap(try Chunks.check(path, size: size))
            XCTAssertEqual(cut, CutAudio(chunk: id, claimed: audio + skip, there: audio + skip + (1 << 32), kind: .over4GiB))
            XCTAssertEqual("\(cut) (\(cut.why))", "its \(id) chunk gives \(audio + skip) bytes, and \(audio + skip + (1 << 32)) follow it (\(why) does not fit 32 bits; programs that trust it read only the first part)")
            XCTAssertFalse(cut.unfinished)
            let file = try AudioFile(path: path)
            XCTAssertEqual(file.frames, (audio + (1 << 32)) / 4, path)
            let plain = try XCTUnwrap(file.plain)
            XCTAssertEqual(plain.decode(from: file.frames - 1000, count: 1000, into: planar, stride: 1000), 1000)
            XCTAssertEqual((0..<2).map { Array(UnsafeBufferPointer(start: planar + $0 * 1000, count: 1000)) }, original, "\(path): the last frames, 4 GiB on")
        }
        // ffmpeg's WAV: both lengths 0xFFFFFFFF ("Filesize … invalid for wav, output file will
        // be broken"); refused as damaged before (the walk went on into the audio 4 GiB on).
        let frames = try AudioFile(path: wav).frames
        for at in [4, 40] { poke(wav, at, UInt32.max) }
        XCTAssertEqual(try Chunks.check(wav, size: 4000 + 44 + (1 << 32)), CutAudio(chunk: "data", claimed: 0xFFFF_FFFF, there: 4000 + (1 << 32), kind: .over4GiB))
        XCTAssertEqual(try AudioFile(path: wav).frames, frames)
    }

    /// An AIFF whose header was never finished, as libsndfile leaves one until it closes it
    /// (FORM 0xFFFFFFF8, COMM 0 frames, SSND only its 8 bytes of offset and block size; checked
    /// with a program that wrote 1 s and aborted): libsndfile reads 0 frames; jackvu all of them.
    func testAnUnfinishedAIFFIsReadToItsEnd() throws {
        let path = directory.appendingPathComponent("u.aiff").path
        XCTAssertEqual(try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "24", path, "synth", "0.5", "sine", "997", "vol", "0.5"]).status, 0)
        let whole = read(try AudioFile(path: path), chunk: 4096)
        var d = try Data(contentsOf: URL(fileURLWithPath: path))
        func be(_ v: UInt32) -> Data { withUnsafeBytes(of: v.bigEndian) { Data($0) } }
        let comm = try XCTUnwrap(d.range(of: Data("COMM".utf8))).upperBound + 4, ssnd = try XCTUnwrap(d.range(of: Data("SSND".utf8))).upperBound
        d.replaceSubrange(4..<8, with: be(0xFFFF_FFF8))
        d.replaceSubrange((comm + 2)..<(comm + 6), with: be(0))
        d.replaceSubrange(ssnd..<(ssnd + 4), with: be(8))
        try d.write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try AudioFile(path: path, mapping: false), "libsndfile alone reads no frame of it")
        let cut = try XCTUnwrap(try Chunks.check(path, size: d.count))
        XCTAssertEqual(cut, CutAudio(chunk: "SSND", claimed: 8, there: 8 + 24000 * 6, kind: .unfinished))
        let file = try AudioFile(path: path)
        XCTAssertEqual(read(file, chunk: 4096).map { $0.map(\.bitPattern) }, whole.map { $0.map(\.bitPattern) })
        XCTAssertEqual(whole[0].count, 24000)
    }

    /// CAF files (`lpcm`: big-endian 16- and 24-bit, little-endian 24-bit, float) whose header
    /// was never finished — libsndfile's until it closes the file: `data` only its 4-byte edit
    /// count (read as 0 s) — or that are cut short (libsndfile refuses them as malformed) are
    /// read by jackvu to the end of the file: the same samples as libsndfile's of the whole
    /// file, bit for bit.
    func testACAFUnfinishedOrCutShortIsReadAsFarAsItGoes() throws {
        let d = directory.path
        var files: [(String, Int)] = []
        for (name, options, bytes) in [("s16.caf", ["-b", "16"], 2), ("s24.caf", ["-b", "24"], 3), ("f.caf", ["-e", "floating-point", "-b", "32"], 4)] {
            let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "2"] + options + ["\(d)/\(name)", "synth", "0.25", "sine", "440", "vol", "0.9"])
            XCTAssertEqual(made.status, 0, made.stderr)
            files.append(("\(d)/\(name)", bytes))
        }
        // Little-endian 24-bit (desc's flags bit 2), by hand: each sample's bytes reversed.
        var le = try Data(contentsOf: URL(fileURLWithPath: files[1].0))
        let leDesc = try XCTUnwrap(le.range(of: Data("desc".utf8))).upperBound + 8
        le[leDesc + 15] = 2
        let leData = try XCTUnwrap(le.range(of: Data("data".utf8))).upperBound + 12
        for i in stride(from: leData, to: le.count - 2, by: 3) { le.swapAt(i, i + 2) }
        try le.write(to: URL(fileURLWithPath: "\(d)/le24.caf"))
        files.append(("\(d)/le24.caf", 3))
        for (path, bytes) in files {
            let whole = read(try AudioFile(path: path), chunk: 4096).map { $0.map(\.bitPattern) }
            XCTAssertEqual(whole[0].count, 12000, path)
            let original = try Data(contentsOf: URL(fileURLWithPath: path))
            let size = try XCTUnwrap(original.range(of: Data("data".utf8))).upperBound
            // Unfinished: the data chunk's size only its edit count's 4 bytes.
            var unfinished = original
            unfinished.replaceSubrange(size..<(size + 8), with: Data([0, 0, 0, 0, 0, 0, 0, 4]))
            try unfinished.write(to: URL(fileURLWithPath: path + ".u.caf"))
            XCTAssertEqual(try Chunks.check(path + ".u.caf", size: unfinished.count),
                           CutAudio(chunk: "data", claimed: 4, there: 4 + 12000 * 2 * bytes, kind: .unfinished))
            XCTAssertEqual(read(try AudioFile(path: path + ".u.caf"), chunk: 4096).map { $0.map(\.bitPattern) }, whole, path + ": unfinished")
            // Cut 5000 frames and a part of one into its audio.
            try Data(original.prefix(size + 12 + 5000 * 2 * bytes + 1)).write(to: URL(fileURLWithPath: path + ".cut.caf"))
            XCTAssertThrowsError(try AudioFile(path: path + ".cut.caf", mapping: false), "libsndfile refuses it")
            let cut = try AudioFile(path: path + ".cut.caf")
            XCTAssertEqual(cut.cutData, CutAudio(chunk: "data", claimed: 4 + 12000 * 2 * bytes, there: 4 + 5000 * 2 * bytes + 1))
            XCTAssertEqual([String(cut.sampleRate), String(cut.channels), cut.formatName], ["48000", "2", "CAF (Apple Core Audio File)"])
            XCTAssertEqual(read(cut, chunk: 4096).map { $0.map(\.bitPattern) }, whole.map { Array($0.prefix(5000)) }, path + ": cut")
        }
        // 8-bit, which jackvu does not read itself: cut short, refused in one line that says so.
        let s8 = "\(d)/s8.caf"
        XCTAssertEqual(try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "8", s8, "synth", "0.25", "sine", "440"]).status, 0)
        let original = try Data(contentsOf: URL(fileURLWithPath: s8))
        let data = try XCTUnwrap(original.range(of: Data("data".utf8))).upperBound + 12
        try Data(original.prefix(data + 1000)).write(to: URL(fileURLWithPath: s8))
        do {
            _ = try AudioFile(path: s8)
            XCTFail("a cut 8-bit CAF read")
        } catch {
            XCTAssertEqual(error.message, "cannot read '\(s8)': its data chunk claims 24004 bytes, the file holds 1004 (the file is cut short, or still being written); libsndfile refuses it (Supported file format but file is malformed), and jackvu reads such a file itself only as 16-, 24- or 32-bit PCM or 32-bit float")
        }
    }

    /// AIFF and AIFC files — big-endian 16-, 24-, 32-bit integers and floats, little-endian
    /// `sowt` — read by jackvu (only where libsndfile cannot read them to their end): the
    /// same samples as libsndfile's, bit for bit. A whole AIFF stays libsndfile's.
    func testAIFFSamplesAreLibsndfilesExactly() throws {
        let d = directory.path
        var files: [(String, Int)] = []
        for (name, options, bits) in [("a16.aiff", ["-b", "16"], 16), ("a24.aiff", ["-b", "24"], 24), ("a32.aiff", ["-b", "32"], 32),
                                      ("f.aifc", ["-e", "floating-point", "-b", "32"], -32), ("a16.aifc", ["-b", "16"], 16)]
        {
            let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "3"] + options + ["\(d)/\(name)", "synth", "0.1", "sine", "440", "vol", "0.9"])
            XCTAssertEqual(made.status, 0, made.stderr)
            files.append(("\(d)/\(name)", bits))
        }
        // AIFC `sowt`: a16.aifc's samples byte-swapped, its compression type so named.
        var sowt = try Data(contentsOf: URL(fileURLWithPath: "\(d)/a16.aifc"))
        let comm = try XCTUnwrap(sowt.range(of: Data("COMM".utf8))).upperBound + 4
        sowt.replaceSubrange((comm + 18)..<(comm + 22), with: Data("sowt".utf8))
        let ssnd = try XCTUnwrap(sowt.range(of: Data("SSND".utf8))).upperBound + 12
        for i in stride(from: ssnd, to: sowt.count - 1, by: 2) { sowt.swapAt(i, i + 1) }
        try sowt.write(to: URL(fileURLWithPath: "\(d)/sowt.aifc"))
        files.append(("\(d)/sowt.aifc", 16))
        for (path, bits) in files {
            let libsndfile = try AudioFile(path: path, mapping: false)
            XCTAssertNil(try AudioFile(path: path).plain, "\(path): a whole AIFF is libsndfile's")
            let plain = try XCTUnwrap(PlainWave(path: path, channels: 3, frames: nil, bits: bits, container: .aiff), path)
            XCTAssertEqual(plain.frames, libsndfile.frames)
            let planar = UnsafeMutablePointer<Float>.allocate(capacity: 3 * plain.frames)
            defer { planar.deallocate() }
            XCTAssertEqual(plain.decode(from: 0, count: plain.frames, into: planar, stride: plain.frames), plain.frames)
            let mine = (0..<3).map { UnsafeBufferPointer(start: planar + $0 * plain.frames, count: plain.frames).map(\.bitPattern) }
            let theirs = read(libsndfile, chunk: 333).map { $0.map(\.bitPattern) }
            XCTAssertEqual(mine, theirs, path)
            XCTAssertGreaterThan(theirs[0].filter { $0 != 0 }.count, 4000, path)
        }
    }

    /// An ID3v1 tag appended to a WAV file after its RIFF form ("TAG" and 125 bytes, as some
    /// taggers append to any file) is not one of its chunks: the file reads as without it (it
    /// was refused as damaged: "its 'TAGS' chunk … claims 543518063 bytes"). Within the form's
    /// size, it is a chunk after the audio claiming more than the file holds: the file is read
    /// as if it ended with its audio, and says so.
    func testAnID3v1TagAfterTheRIFFFormIsNotAChunk() throws {
        let x = signal(channels: 2, frames: 1000)
        let path = try write("tagged.wav", x, bits: 16, extensible: false, extra: true)
        let untagged = read(try AudioFile(path: path), chunk: 256)
        var d = try Data(contentsOf: URL(fileURLWithPath: path))
        let form = d.count
        d += Data("TAG".utf8) + Data("Some Title".utf8) + Data(count: 20) + Data("Artist".utf8) + Data(count: 24) + Data(count: 64) + Data([12])
        XCTAssertEqual(d.count, form + 128)
        try d.write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(read(try AudioFile(path: path), chunk: 256), untagged)
        XCTAssertNil(try Chunks.check(path, size: d.count))
        d.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(d.count - 8).littleEndian) { Data($0) })
        try d.write(to: URL(fileURLWithPath: path))
        let within = try AudioFile(path: path)
        XCTAssertEqual(within.cutData, CutAudio(chunk: "TAGS", claimed: 543518063, there: 120, kind: .afterAudio, audioEnd: form))
        XCTAssertEqual(read(within, chunk: 256), untagged)
    }

    /// An ID3v1 tag after a WAV written to a pipe (ffmpeg's: 0xFFFFFFFF as the RIFF and data
    /// lengths) is not audio: libsndfile (and sox, ffmpeg) read its 128 bytes as 32 frames of
    /// 16-bit stereo ("TA" a sample of 0.51: a −6 dBFS sine's peak read −5.8). Read as without
    /// it, and nothing said (`cutData` nil: no damage); with RIFF's length alone a pipe's and the
    /// data chunk's exact, the walk ends at the tag (it was "cut short after its audio").
    func testAnID3v1TagAfterAPipedWAVIsNotAudio() throws {
        let path = try write("piped.wav", signal(channels: 2, frames: 1000), bits: 16, extensible: false, extra: false)
        let untagged = read(try AudioFile(path: path), chunk: 256)
        let tag = Data("TAG".utf8) + Data("A Title".utf8) + Data(count: 118)
        var d = try Data(contentsOf: URL(fileURLWithPath: path))
        let data = try XCTUnwrap(d.range(of: Data("data".utf8))).lowerBound
        d.replaceSubrange(4..<8, with: Data([0xFF, 0xFF, 0xFF, 0xFF]))
        for (dataLength, kind) in [(Data([0xFF, 0xFF, 0xFF, 0xFF]), CutAudio.Kind?.some(.tagAfterAudio)), (d[(data + 4)..<(data + 8)], nil)] {
            d.replaceSubrange((data + 4)..<(data + 8), with: dataLength)
            try (d + tag).write(to: URL(fileURLWithPath: path))
            XCTAssertEqual(try Chunks.check(path, size: d.count + 128)?.kind, kind)
            let file = try AudioFile(path: path)
            XCTAssertNil(file.cutData)
            XCTAssertEqual(file.frames, 1000)
            XCTAssertEqual(read(file, chunk: 256), untagged)
            // Without the tag, a pipe's data length reads to the end of the file as before.
            try d.write(to: URL(fileURLWithPath: path))
            XCTAssertNil(try Chunks.check(path, size: d.count))
            XCTAssertEqual(read(try AudioFile(path: path), chunk: 256), untagged)
        }
    }

    /// An RF64 file whose ds64 table length (260) is not its table: libsndfile 1.2 skips that
    /// many bytes, into the audio, where a LIST chunk claims 4 GB, and parsed it for more than
    /// five minutes (the fuzzer's find, in its seed corpus). Refused at once, where libsndfile's
    /// walk finds the chunk; the seed it grew from (table length 0) is read.
    func testAnRF64WhoseTableLengthLeadsIntoItsAudioIsRefused() throws {
        let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let d = try Data(contentsOf: seeds.appendingPathComponent("Fuzz/corpus/wav/rf64-table-length.wav"))
        let path = directory.appendingPathComponent("table.wav").path
        try d.write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try AudioFile(path: path)) { error in
            XCTAssertEqual((error as? EngineError)?.message,
                           "cannot read '\(path)': its header is damaged: its 'LIST' chunk at byte 308 claims 4278190085 bytes, the file has 620 after it")
        }
        // The seed it grew from: table length 0, read.
        let file = try AudioFile(path: seeds.appendingPathComponent("Fuzz/corpus/wav/rf64.wav").path)
        XCTAssertEqual([file.channels, file.sampleRate, file.frames], [1, 8000, 400])
    }

    /// A chunk of odd length whose writer left out the pad byte after it: the next chunk is
    /// found where it is (a LIST chunk after 24-bit mono data of odd length was refused as
    /// damaged: "its 'IST?' chunk … claims 1224736768 bytes"; sox and libsndfile read it).
    func testAnOddChunkWithoutItsPadByteIsNoDamage() throws {
        let path = try write("odd.wav", signal(channels: 1, frames: 1001), bits: 24, extensible: false, extra: false)
        let whole = read(try AudioFile(path: path), chunk: 256)
        let list = Data("LIST".utf8) + Data([26, 0, 0, 0]) + Data("INFOISFT".utf8) + Data([14, 0, 0, 0]) + Data("Lavf58.76.100\0".utf8)
        var d = try Data(contentsOf: URL(fileURLWithPath: path)) + list
        d.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(d.count - 8).littleEndian) { Data($0) })
        XCTAssertEqual(d.count % 2, 1, "no pad byte after the 3003 bytes of data")
        try d.write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(read(try AudioFile(path: path), chunk: 256), whole)
        XCTAssertNil(try Chunks.check(path, size: d.count))
    }

    /// The walk over a WAV's chunks takes at most 4096 of them: audio (here silence) after a
    /// data chunk shorter than it reads as chunks of 0 bytes, 8 bytes a step, and a 4 GiB file
    /// of them took minutes.
    func testTheChunkWalkEndsAfter4096Chunks() throws {
        let header = try Data(contentsOf: URL(fileURLWithPath: try write("h.wav", signal(channels: 1, frames: 2), bits: 16, extensible: false, extra: false)))
        var reads = 0
        let found = PlainWave.dataChunk(length: 1 << 30) { at, count in
            reads += 1
            return (0..<count).map { at + $0 < header.count ? header[at + $0] : 0 }
        }
        XCTAssertNil(found, "beyond 4096 chunks: libsndfile's call")
        XCTAssertLessThanOrEqual(reads, 4100)
        XCTAssertNotNil(PlainWave.dataChunk(length: header.count) { at, count in Array(header[at..<min(header.count, at + count)]) })
    }

    /// A file truncated while it is read: the read comes back short and says so (a memory
    /// map would have raised SIGBUS here).
    func testAFileThatShrinksWhileReadIsNoSignal() throws {
        let path = try write("shrinks.wav", signal(channels: 2, frames: 48000), bits: 24, extensible: false, extra: false)
        let file = try AudioFile(path: path)
        XCTAssertNotNil(file.plain)
        let planar = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 4096)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 4096)
        defer { planar.deallocate(); scratch.deallocate() }
        XCTAssertEqual(file.read(planar: planar, stride: 4096, count: 4096, scratch: scratch), 4096)
        XCTAssertFalse(file.shrank)
        XCTAssertEqual(truncate(path, 44 + 6 * 5000 + 2), 0)  // 5000 whole frames and a partial one
        var total = 4096
        while case let n = file.read(planar: planar, stride: 4096, count: 4096, scratch: scratch), n > 0 { total += n }
        XCTAssertEqual(total, 5000)
        XCTAssertTrue(file.shrank)
    }
}
