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
        var written = 0
        while written < bytes.count {
            let n = write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n <= 0 { break }
            written += n
        }
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
}
