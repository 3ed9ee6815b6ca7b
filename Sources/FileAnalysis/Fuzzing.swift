#if canImport(Glibc)
import Glibc
#endif
import Analysis
import DSP

/// Entry points for the coverage-guided fuzzers (`Tools/jackvu-fuzz`, libFuzzer): each takes
/// untrusted bytes down a whole input path of jackvu and must come back, whatever they are —
/// no trap, no signal, no hang.
public enum Fuzzing {
    /// `bytes` as an audio file, as `jackvu analyze` takes one: written to `path` (a scratch
    /// file the caller owns), opened (libsndfile's header parse, then jackvu's own reader of
    /// plain WAV files), read to the end in chunks of 1024 frames and sanitised, and its sample
    /// rate checked against what the meters honour. Returns the frames read, or −1 when the
    /// file was refused (one clear reason, as the user would see it).
    public static func readAudioFile(_ bytes: UnsafeRawBufferPointer, path: String) -> Int {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return -1 }
        writeAll(fd, bytes)
        close(fd)
        let file: AudioFile
        do { file = try AudioFile(path: path) } catch { return -1 }
        do { try SampleRates.validate(file.sampleRate) } catch { return -1 }
        let chunk = 1024
        let planar = UnsafeMutablePointer<Float>.allocate(capacity: chunk * file.channels)
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: chunk * file.channels)
        defer {
            planar.deallocate()
            scratch.deallocate()
        }
        var total = 0
        while total < 1 << 22 {
            let n = file.readSanitised(planar: planar, stride: chunk, count: chunk, scratch: scratch).frames
            guard n > 0 else { break }
            total += n
        }
        return total
    }

    /// `bytes` as standard input's WAV (`jackvu analyze -`): sent down a pipe (its first 64 KiB,
    /// what a pipe holds unread), the header walked as it comes, the samples read to the end.
    /// Returns the frames read, or −1 when the stream was refused.
    public static func readAudioStream(_ bytes: UnsafeRawBufferPointer) -> Int {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return -1 }
        defer { close(ends[0]) }
        writeAll(ends[1], UnsafeRawBufferPointer(rebasing: bytes.prefix(1 << 16)))
        close(ends[1])
        guard let wave = PlainWave(stream: ends[0]), wave.channels <= AudioFile.maxChannels else { return -1 }
        let chunk = 1024
        let planar = UnsafeMutablePointer<Float>.allocate(capacity: chunk * wave.channels)
        defer { planar.deallocate() }
        var total = 0
        while true {
            let n = wave.decode(from: total, count: min(chunk, wave.frames - total), into: planar, stride: chunk)
            guard n > 0 else { break }
            total += n
        }
        _ = wave.streamCut
        return total
    }

    /// Writes `bytes` to `fd` (as much as it takes).
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        var written = 0
        while written < bytes.count {
            let n = write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n <= 0 { break }
            written += n
        }
    }
}
