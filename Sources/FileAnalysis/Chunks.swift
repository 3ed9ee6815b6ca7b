#if canImport(Glibc)
import Glibc
#endif
import Settings

/// An audio chunk whose length is not the audio there: its name, the bytes its header claims
/// and those after its header. Either the file is cut short (it claims more), or its header
/// was never finished (it claims 0, and the audio follows: what libsndfile writes until the
/// file is closed, so a recording still going, or one whose recorder died), or it is a WAV or
/// AIFF over 4 GiB, whose length 32 bits cannot hold (`over4GiB`: it claims 0xFFFFFFFF, what
/// ffmpeg writes in a WAV unless told `-rf64 auto`, or the audio's length less a multiple of
/// 2³², ffmpeg's AIFF). Or a WAV's audio is whole, and a chunk after it claims more than
/// the file holds (`afterAudio`: cut short after its audio, or damaged there): the file is
/// read as if it ended with its audio (`audioEnd`). Or an ID3v1 tag ends a WAV whose audio
/// runs to the end of the file by its header (a length a writer to a pipe leaves: `tagAfterAudio`):
/// the file is read as if it ended before the tag — no damage, and not said.
struct CutAudio: Equatable, CustomStringConvertible {
    enum Kind { case cutShort, unfinished, over4GiB, afterAudio, tagAfterAudio }
    var chunk: String
    var claimed: Int
    var there: Int
    var kind = Kind.cutShort
    /// Where the audio chunk ends (`afterAudio`), or the tag starts (`tagAfterAudio`).
    var audioEnd = 0

    /// Whether the audio is read to the end of the file (the length in the header is not its length).
    var toTheEnd: Bool { kind == .unfinished || kind == .over4GiB }
    var unfinished: Bool { kind == .unfinished }
    var over4GiB: Bool { kind == .over4GiB }

    /// As `analyze` says it: "its data chunk claims 2880000 bytes, the file holds 1499920", or
    /// "its data chunk gives 0 bytes, and 288000 follow it".
    var description: String {
        switch kind {
        case .cutShort: "its \(chunk) chunk claims \(claimed) bytes, the file holds \(there)"
        case .afterAudio: "its '\(chunk)' chunk after the audio claims \(claimed) bytes, the file holds \(there)"
        case .tagAfterAudio: "an ID3v1 tag ends the file, after its \(chunk) chunk (which gives \(claimed) bytes: no length)"
        case .unfinished, .over4GiB: "its \(chunk) chunk gives \(claimed) bytes, and \(there) follow it"
        }
    }

    /// How much of the audio `analyze` reads.
    var reach: String {
        switch kind {
        case .cutShort: "as far as it goes"
        case .afterAudio: "all of its audio"
        case .tagAfterAudio: "all of its audio, not the tag"
        case .unfinished, .over4GiB: "to the end of the file"
        }
    }

    /// "a WAV" or "an AIFF", by the audio chunk's name.
    var container: String { chunk == "SSND" ? "an AIFF" : "a WAV" }

    /// As a compliance report says it, under its heading.
    var reportNote: String {
        let what = switch kind {
        case .over4GiB: "The file is \(container) over 4 GiB, whose \(chunk) length does not fit 32 bits (programs that trust it read only the first part)"
        case .unfinished: "The file's header was never finished (still being written, or its recorder stopped)"
        case .cutShort: "The file is cut short, or was still being written"
        case .afterAudio: "The file is cut short after its audio, or damaged there (its audio is whole)"
        case .tagAfterAudio: "The file ends with an ID3v1 tag (not audio)"
        }
        return "\(what): \(self); this report covers the audio there."
    }

    /// Why, as the reader should take it.
    var why: String {
        switch kind {
        case .over4GiB: "\(container) over 4 GiB: its \(chunk) length does not fit 32 bits; programs that trust it read only the first part"
        case .unfinished: "its header was never finished: still being written, or its recorder stopped"
        case .cutShort: "the file is cut short, or still being written"
        case .afterAudio: "the file is cut short after its audio, or damaged there; its audio is whole"
        case .tagAfterAudio: "a tag some taggers append to any file"
        }
    }
}

/// A walk over a file's chunk headers before libsndfile opens it, for the containers whose
/// audio is one chunk: RIFF/WAVE, RF64 (EBU Tech 3306: the sizes past 4 GB in a `ds64`
/// chunk), Sony's Wave64 (GUIDs and 64-bit sizes), AIFF/AIFC (big-endian, the audio in
/// `SSND`) and Apple's CAF (big-endian 64-bit sizes).
///
/// - A file whose audio chunk claims more bytes than the file holds (cut short, or still
///   being written) is read as far as it goes: libsndfile reads such a file to its end without
///   a word, so the walk returns what the chunk claims and what is there, for `analyze` to say
///   (unless the length is one a writer leaves in a header it cannot go back to: `placeholders`).
/// - A file whose audio chunk gives 0 bytes (AIFF's SSND 8: its offset and block size; CAF's
///   `data` 4: its edit count) and is followed by what is not a chunk (audio) has a header
///   never finished: libsndfile writes that until it closes the file. The walk returns that
///   too (`unfinished`): `AudioFile` reads the audio to the end of the file where it is plain
///   PCM or float, and refuses it in one line otherwise (libsndfile reads no frame of it).
/// - A RIFF/WAVE or AIFF file with more than 4 GiB after its audio chunk's header, whose
///   length is 0xFFFFFFFF (ffmpeg's WAV over 4 GiB) or what is there less a multiple of 2³²
///   (wrapped: ffmpeg's AIFF), is returned too (`over4GiB`): its audio runs to the end of the
///   file, and `AudioFile` reads it there as it reads an unfinished one. (ffmpeg's WAV was
///   refused as damaged: the walk went on into the audio 4 GiB on; sox reads its first 4 GiB;
///   libsndfile reads a wrapped length: a 6 h file as 10 s, ffmpeg's 6 h AIFF as 30 s.)
/// - A RIFF/WAVE file whose chunk after its audio (within the RIFF form's size) claims more
///   bytes than it holds is returned (`afterAudio`), for `AudioFile` to open as if it ended
///   with its audio: libsndfile would parse such a chunk for minutes (below), and the audio is
///   whole (a download cut short in the metadata after it).
/// - A RIFF/WAVE file whose lengths are those a writer to a pipe leaves (`placeholders`) and
///   which ends with an ID3v1 tag ("TAG" and 125 bytes): where the data chunk's length is one,
///   libsndfile, sox and ffmpeg read the tag as 32 frames or so of audio (a 16-bit stereo
///   sine's −6.0 dBFS peak read −5.8), so the walk returns it (`tagAfterAudio`) for `AudioFile`
///   to open the file as if it ended before the tag; where only RIFF's is, the walk ends at the
///   tag (libsndfile reads the data chunk's length).
/// - A RIFF/WAVE file whose chunk before its audio claims more bytes than it holds is refused: libsndfile
///   1.2 spends minutes parsing such a chunk (a 139-byte file whose LIST chunk claims 4 GB kept
///   `jackvu analyze` busy for 60 s and more; found by FuzzTests). So is an RF64 file whose
///   chunk before its audio, where libsndfile's walk finds it, has a printable name and claims
///   more than the file holds: libsndfile starts after ds64's table length taken as bytes.
///
/// Else nil: the walk ends at the end of the file, at a chunk it cannot read, or after 4096
/// chunks; other formats are libsndfile's to check.
enum Chunks {
    /// How a container lays out its chunks.
    private struct Layout {
        /// The first chunk's offset.
        var start: Int
        /// A chunk's id (4 bytes, or a 16-byte GUID whose first 4 bytes name it) and size bytes.
        var idBytes = 4, sizeBytes = 4
        var bigEndian = false
        /// Wave64's sizes count the chunk's own header.
        var sizeCountsHeader = false
        /// Chunks start on multiples of this (RIFF and AIFF pad odd lengths; Wave64 aligns to 8).
        var align = 2
        /// The audio chunk, and its length when it holds no sample (SSND's offset and block size).
        var audio = "data", emptyAudio = 0
        /// Whether the chunks after the audio are looked at, and an oversized chunk other than
        /// the audio refused (before it) or said (after it) (RIFF/WAVE).
        var riff = false
        /// Whether a chunk before the audio with a name of printable characters that claims more
        /// than the file holds is refused (RF64: libsndfile parses such a LIST chunk for minutes).
        var rf64 = false

        var headerBytes: Int { idBytes + sizeBytes }
    }

    /// Lengths that say "unknown", not a length: what writers put in a header they cannot go
    /// back to (a file written to a pipe). WAV: sox's 0x7FFFF000, 0x7FFFFFFF and 0xFFFFFFFF
    /// (ffmpeg's and others'); AIFF: sox's 0x7F000008 (0x7F000000 and the SSND chunk's 8 bytes
    /// of offset and block size).
    static let placeholders: Set<Int> = [0x7FFF_F000, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x7F00_0008]

    /// Wave64's GUID for the file ("riff" and the rest of its GUID).
    private static let wave64: [UInt8] = [0x72, 0x69, 0x66, 0x66, 0x2E, 0x91, 0xCF, 0x11, 0xA5, 0xD6, 0x28, 0xDB, 0x04, 0xC1, 0x00, 0x00]

    static func check(_ path: String, size: Int) throws(EngineError) -> CutAudio? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }  // sf_open says why
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 48)
        let got = pread(fd, &head, 48, 0)
        guard got >= 12 else { return nil }
        let form = (name(head[0..<4]), name(head[8..<12]))
        var layout: Layout
        /// RF64's 64-bit length of the `data` chunk, from `ds64`.
        var dataSize64: Int?
        switch form {
        case ("RIFF", "WAVE"):
            layout = Layout(start: 12, riff: true)
        case ("RF64", "WAVE"):
            // ds64 first: RIFF size, data size, sample count (64-bit each), then its table's
            // length, which libsndfile 1.2 skips as bytes from there, whatever the chunk's size
            // says: the walk starts where libsndfile's next chunk is (a 936-byte file whose
            // table length, 260, took libsndfile into the audio, to a LIST chunk claiming 4 GB,
            // kept `jackvu analyze` at it for more than five minutes; found by the fuzzer).
            guard got >= 48, name(head[12..<16]) == "ds64" else { return nil }
            dataSize64 = Int(exactly: integer(head[28..<36], bigEndian: false))
            layout = Layout(start: 48 + Int(integer(head[44..<48], bigEndian: false)), rf64: true)
        case ("FORM", "AIFF"), ("FORM", "AIFC"):
            layout = Layout(start: 12, bigEndian: true, audio: "SSND", emptyAudio: 8)
        case ("caff", _):
            // Apple's CAF: 64-bit sizes, no padding, `data` first its 4-byte edit count (a
            // size of -1, "to the end of the file", ends the walk: libsndfile reads that).
            layout = Layout(start: 8, sizeBytes: 8, bigEndian: true, align: 1, emptyAudio: 4)
        default:
            guard got >= 40, Array(head[0..<16]) == wave64 else { return nil }
            layout = Layout(start: 40, idBytes: 16, sizeBytes: 8, sizeCountsHeader: true, align: 8)
        }
        let headerBytes = layout.headerBytes
        // Where RIFF's form ends, by its size (where that is within the file): what follows it
        // is not its chunks — an ID3v1 tag some taggers append to any file ("TAG" and 125
        // bytes, which read as a chunk claiming half a gigabyte: refused as damaged once).
        let riffSize = Int(integer(head[4..<8], bigEndian: false)), formEnd = layout.riff && riffSize <= size - 8 ? 8 + riffSize : size
        // An ID3v1 tag ending a RIFF/WAVE file whose header does not bound it (looked for only
        // where a length is a placeholder).
        let tagAt = size - 128
        func tagged() -> Bool { layout.riff && tagAt >= layout.start && id3v1(fd, at: tagAt) }
        var offset = layout.start, afterAudio = false, audioEnd = 0
        for _ in 0..<4096 {
            if afterAudio && (offset >= formEnd || (offset == tagAt && placeholders.contains(riffSize) && tagged())) { return nil }
            guard let (idBytes, given) = header(fd, at: offset, layout) else { return nil }
            let id = name(idBytes)
            var length = layout.sizeCountsHeader ? given - headerBytes : given
            guard length >= 0 else { return nil }
            if id == layout.audio, length == 0xFFFF_FFFF, let dataSize64 { length = dataSize64 }
            // The bytes after the header (the header was read, so none are missing before
            // them). Lengths are compared with this, never added to (64-bit sizes would overflow).
            let there = size - offset - headerBytes
            // (A pad byte after odd audio may be missing from the end of the file.)
            if id == layout.audio && length > there {
                guard placeholders.contains(length) else { return CutAudio(chunk: id, claimed: length, there: there) }
                return tagAt > offset + headerBytes && tagged() ? CutAudio(chunk: id, claimed: length, there: there, kind: .tagAfterAudio, audioEnd: tagAt) : nil
            }
            // A WAV or AIFF over 4 GiB: its length 0xFFFFFFFF (ffmpeg's WAV: "Filesize …
            // invalid for wav, output file will be broken"), or taken modulo 2³² (ffmpeg's
            // AIFF; the chance that a shorter audio chunk followed by 4 GiB of other chunks
            // matches that: 1 in 2³²). Not RF64's: ds64 holds its length.
            if id == layout.audio && layout.sizeBytes == 4 && dataSize64 == nil && there > 0xFFFF_FFFF
                && (length == 0xFFFF_FFFF || (there - length) & 0xFFFF_FFFF == 0)
            {
                return CutAudio(chunk: id, claimed: length, there: there, kind: .over4GiB)
            }
            // An empty audio chunk with audio after it, not chunks: a header never finished.
            // (libsndfile's AIFF so left: SSND's 8 bytes of offset and block size, and 0 frames
            // in COMM.)
            if id == layout.audio && length == layout.emptyAudio && there > length
                && !plausible(fd, at: offset + headerBytes + length, layout, size: size)
            {
                return CutAudio(chunk: id, claimed: length, there: there, kind: .unfinished)
            }
            // Only RIFF's chunks after the audio are looked at (for their claims), up to the
            // form's end.
            if id == layout.audio && !layout.riff { return nil }
            if id == layout.audio { afterAudio = true }
            if length > there {
                // Before the audio, refused: RIFF's any chunk, RF64's one whose name libsndfile
                // takes for a chunk's (printable characters: it follows such a one, and others
                // end its walk).
                let refused = layout.riff || (layout.rf64 && idBytes.allSatisfy { (0x20...0x7E).contains($0) })
                guard refused else { return nil }
                if afterAudio { return CutAudio(chunk: id, claimed: length, there: there, kind: .afterAudio, audioEnd: audioEnd) }
                throw EngineError(
                    .noInput,
                    "cannot read '\(path)': its header is damaged: its '\(id)' chunk at byte \(offset) claims \(length) bytes, the file has \(there) after it")
            }
            // The next chunk: after the pad byte an odd length takes, unless the writer left it
            // out (a name of letters right after the chunk, none after the pad: a WAV whose
            // 24-bit mono data had an odd length and a LIST chunk after it was refused as
            // damaged, "its 'IST?' chunk … claims 1224736768 bytes"; sox and libsndfile read it).
            let end = offset + headerBytes + length
            offset = (end + layout.align - 1) / layout.align * layout.align
            if offset > end && !named(fd, at: offset) && named(fd, at: end) { offset = end }
            if id == layout.audio { audioEnd = min(offset, size) }
        }
        return nil
    }

    /// Whether a chunk header at `offset` looks like one: a name of letters, digits and spaces
    /// (as every chunk's), a length the file holds. (Audio passes for one rarely: random bytes
    /// about once in 270 names, then only with a length under what is left.)
    private static func plausible(_ fd: Int32, at offset: Int, _ layout: Layout, size: Int) -> Bool {
        guard let (id, length) = header(fd, at: offset, layout), id.allSatisfy(letter) else { return false }
        return length <= size - offset - (layout.sizeCountsHeader ? 0 : layout.headerBytes)
    }

    /// Whether an ID3v1 tag starts at `offset` ("TAG").
    private static func id3v1(_ fd: Int32, at offset: Int) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 3)
        return pread(fd, &bytes, 3, off_t(offset)) == 3 && bytes == Array("TAG".utf8)
    }

    /// Whether a byte may be in a chunk's name: a letter, a digit or a space.
    private static func letter(_ b: UInt8) -> Bool { b == 0x20 || (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }

    /// Whether the 4 bytes at `offset` could name a chunk (letters, digits, spaces).
    private static func named(_ fd: Int32, at offset: Int) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 4)
        return pread(fd, &bytes, 4, off_t(offset)) == 4 && bytes.allSatisfy(letter)
    }

    /// The chunk header at `offset`: its name's 4 bytes and the length it gives (as it is:
    /// Wave64's counts the header); nil where the file ends first, or a length beyond `Int`.
    private static func header(_ fd: Int32, at offset: Int, _ layout: Layout) -> (id: ArraySlice<UInt8>, length: Int)? {
        var bytes = [UInt8](repeating: 0, count: layout.headerBytes)
        guard pread(fd, &bytes, layout.headerBytes, off_t(offset)) == layout.headerBytes,
            let length = Int(exactly: integer(bytes[layout.idBytes...], bigEndian: layout.bigEndian))
        else { return nil }
        return (bytes[0..<4], length)
    }

    /// Four bytes as a chunk name (bytes outside printable ASCII as '?').
    private static func name(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.prefix(4).map { (0x20...0x7E).contains($0) ? $0 : 0x3F }, as: UTF8.self)
    }

    /// An unsigned integer of the slice's bytes (4 or 8).
    private static func integer(_ bytes: ArraySlice<UInt8>, bigEndian: Bool) -> UInt64 {
        let ordered = bigEndian ? Array(bytes) : bytes.reversed()
        return ordered.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
