#if canImport(Glibc)
import Glibc
#endif
import CSndfile
import Foundation
import Outputs
import TestSupport
import XCTest

/// `jackvu analyze` on real audio files written to disk: the EBU Tech 3341 and 3342 cases as
/// 32-bit float WAV files, read back through libsndfile, plus FLAC, OGG and other rates.
final class AnalyzeTests: XCTestCase {
    typealias S = EBUSignals.Segment
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryFolder("analyze")
    }

    override func tearDownWithError() throws {
        removeTemporaryFolder(directory)
    }

    private func file(_ name: String, _ signal: [[Float]], sampleRate: Int = 48000) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try writeWAV(path, signal, sampleRate: sampleRate)
        return path
    }

    /// Runs `jackvu analyze --format json` and returns one dictionary per file.
    private func summaries(_ paths: [String], _ extra: [String] = []) throws -> [[String: Any]] {
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--format", "json"] + extra + paths, timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
        return try XCTUnwrap(json as? [[String: Any]], r.stdout)
    }

    /// Runs `jackvu analyze --stream --format json` and returns one dictionary per update.
    private func stream(_ path: String, _ extra: [String] = []) throws -> [[String: Any]] {
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--stream", "--format", "json"] + extra + [path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        return try r.stdout.split(separator: "\n").map {
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    private func loudness(_ update: [String: Any], _ key: String) -> Double {
        ((update["loudness"] as? [String: Any])?[key] as? Double) ?? .nan
    }

    /// `analyze --stream` prints every hop, and every hop's spectrum and pitch are its own
    /// (live, they are computed only as often as the outputs read them): a tone whose
    /// frequency steps up every hop reads a new peak frequency and pitch on every line.
    func testAStreamComputesTheSpectrumAndPitchAtEveryHop() throws {
        var phase = 0.0
        let steps = (0..<(48 * 1024)).map { i -> Float in
            phase += 2 * Double.pi * (300 + 15 * Double(i / 1024)) / 48000
            return Float(0.5 * sin(phase))
        }
        let updates = try stream(try file("steps.wav", [steps]), ["--send", "peakfreq,pitch"])
        XCTAssertGreaterThan(updates.count, 30)
        func reading(_ u: [String: Any], _ key: String) -> Double { ((u["channels"] as? [[String: Any]])?.first?[key] as? Double) ?? .nan }
        for (a, b) in zip(updates, updates.dropFirst()) {
            XCTAssertNotEqual(reading(a, "peakfreq_hz"), reading(b, "peakfreq_hz"), "at \(b["time_s"] ?? "?") s")
            XCTAssertNotEqual(reading(a, "pitch_hz"), reading(b, "pitch_hz"), "at \(b["time_s"] ?? "?") s")
        }
    }

    /// The scale and analysis options end to end, on a 1 kHz sine at −18 dBFS (with noise
    /// 26 dB below it, so that YIN's confidence is under 1): each reading moves as the option
    /// and the standard say. `--layout` must match the file (5.1 leaves the LFE out).
    func testScaleAndAnalysisOptionsEndToEnd() throws {
        var seed: UInt64 = 41
        print("testScaleAndAnalysisOptionsEndToEnd: noise seed \(seed)")
        let tone = (0..<72000).map { i -> Float in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            let noise = Double(Int64(bitPattern: seed) >> 11) / Double(1 << 52) * 0.0063
            return Float(0.125893 * sin(2 * Double.pi * 1000 * Double(i) / 48000) + noise)
        }
        let path = try file("sine-18.wav", [tone, tone])
        func last(_ options: [String]) throws -> [String: Any] {
            let updates = try stream(path, ["--send", "ppm,k,bars,pitch"] + options)
            return try XCTUnwrap((updates.last?["channels"] as? [[String: Any]])?.first)
        }
        func number(_ o: [String: Any], _ key: String) -> Double { o[key] as? Double ?? .nan }
        // (Within 0.25: the noise's peaks move the quasi-peak meters by about 0.1 dB.)
        // PPM (IEC 60268-10 scales, alignment −18 dBFS): EBU TEST 0, BBC mark 4, DIN −9, Nordic 0;
        // an alignment 6 dB higher reads 6 dB lower.
        XCTAssertEqual(number(try last([]), "ppm"), 0, accuracy: 0.25, "EBU")
        XCTAssertEqual(number(try last(["--ppm", "bbc"]), "ppm"), 4, accuracy: 0.25, "BBC")
        XCTAssertEqual(number(try last(["--ppm", "din"]), "ppm"), -9, accuracy: 0.25, "DIN")
        XCTAssertEqual(number(try last(["--ppm", "nordic"]), "ppm"), 0, accuracy: 0.25, "Nordic")
        XCTAssertEqual(number(try last(["--ppm-alignment", "-12"]), "ppm"), -6, accuracy: 0.25, "alignment −12 dBFS")
        // K-System: 0 on the K-N scale is −N dBFS (sine-referenced RMS).
        XCTAssertEqual(number(try last([]), "k_db"), 2, accuracy: 0.25, "K-20")
        XCTAssertEqual(number(try last(["--k-scale", "14"]), "k_db"), -4, accuracy: 0.25, "K-14")
        XCTAssertEqual(number(try last(["--k-scale", "12"]), "k_db"), -6, accuracy: 0.25, "K-12")
        // Bars: 4 log-spaced bars; 60 Hz–18 kHz puts 1 kHz in the second (250–1039 Hz),
        // 400–1600 Hz in the third (800–1131 Hz).
        func loudest(_ o: [String: Any]) -> Int? {
            let bars = o["bars"] as? [Double] ?? []
            return bars.indices.max { bars[$0] < bars[$1] }
        }
        XCTAssertEqual(loudest(try last(["--bars", "4"])), 1)
        XCTAssertEqual(loudest(try last(["--bars", "4", "--bars-from", "400", "--bars-to", "1600"])), 2)
        // Pitch: named at the default confidence threshold, not above the tone's confidence.
        let named = try last([])
        let confidence = number(named, "pitch_confidence")
        XCTAssertEqual(named["note"] as? String, "B5")
        XCTAssertLessThan(confidence, 0.999, "the noise lowers the confidence")
        XCTAssertGreaterThan(confidence, 0.8)
        let strict = try last(["--pitch-confidence", String(format: "%.4f", min(1, confidence + 0.0005))])
        XCTAssertTrue(strict["note"] is NSNull, "no note below --pitch-confidence: \(strict)")
        // --layout: checked against the file; 5.1 leaves a loud LFE out of the loudness.
        let bad = try Executables.run(try Executables.product("jackvu"), ["analyze", "--layout", "mono", path])
        XCTAssertEqual(bad.status, 66, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("cannot analyse") && bad.stderr.contains("as mono: it has 2 channels"), bad.stderr)
        let silent = [Float](repeating: 0, count: tone.count)
        let lfe = tone.map { $0 * 4 }
        let quiet = try file("six-quiet.wav", [tone, tone, silent, silent, silent, silent])
        let loud = try file("six-loud-lfe.wav", [tone, tone, silent, lfe, silent, silent])
        let r = try summaries([quiet, loud], ["--layout", "5.1"])
        XCTAssertEqual(r.count, 2)
        XCTAssertEqual(r[0]["integrated_lufs"] as? Double ?? 0, r[1]["integrated_lufs"] as? Double ?? 1, accuracy: 0.01, "the LFE is not weighted")
        XCTAssertEqual(r[1]["layout"] as? String, "5.1")
    }

    func testTech3341Cases1To6AndTruePeakCasesThroughFiles() throws {
        let stereo: [(String, [S], Double)] = [
            ("case1.wav", [S(seconds: 20, dBFS: -23)], -23),
            ("case2.wav", [S(seconds: 20, dBFS: -33)], -33),
            ("case3.wav", [S(seconds: 10, dBFS: -36), S(seconds: 60, dBFS: -23), S(seconds: 10, dBFS: -36)], -23),
            ("case4.wav", [S(seconds: 10, dBFS: -72), S(seconds: 10, dBFS: -36), S(seconds: 60, dBFS: -23),
                           S(seconds: 10, dBFS: -36), S(seconds: 10, dBFS: -72)], -23),
            ("case5.wav", [S(seconds: 20, dBFS: -26), S(seconds: 20.1, dBFS: -20), S(seconds: 20, dBFS: -26)], -23),
        ]
        var paths = try stereo.map { try file($0.0, EBUSignals.tones($0.1)) }
        paths.append(try file("case6.wav", EBUSignals.tones([S(seconds: 20, dBFS: 0)], channelGains: [-28, -28, -24, -30, -30])))
        let expected = stereo.map(\.2) + [-23]
        let results = try summaries(paths)
        XCTAssertEqual(results.count, 6)
        for (i, r) in results.enumerated() {
            XCTAssertEqual(r["integrated_lufs"] as? Double ?? 0, expected[i], accuracy: 0.1, "case \(i + 1)")
        }
        XCTAssertEqual(results[5]["layout"] as? String, "5.0")
        // Each channel's true peak, whichever thread measured it (the reader a third of a
        // 5.0 file's channels, the analysis's thread the rest): the 1 kHz tone's level there.
        let perChannel = (results[5]["per_channel"] as? [[String: Any]] ?? []).map { $0["true_peak_dbtp"] as? Double ?? 0 }
        XCTAssertEqual(perChannel.count, 5)
        for (i, level) in [-28.0, -28, -24, -30, -30].enumerated() where i < perChannel.count {
            XCTAssertEqual(perChannel[i], level, accuracy: 0.05, "case 6, channel \(i + 1)'s true peak")
        }
        XCTAssertEqual(results[0]["max_momentary_lufs"] as? Double ?? 0, -23, accuracy: 0.1)
        XCTAssertEqual(results[0]["max_short_term_lufs"] as? Double ?? 0, -23, accuracy: 0.1)
        // The same summaries to the last digit with the baseline's DSP (a stereo file's
        // K-weighting as one stretch of time, not two side by side in AVX2's lanes; case 6's
        // five channels and a mono case 5 not four).
        paths.append(try file("case5-mono.wav", EBUSignals.tones(stereo[4].1, channelGains: [0])))
        let jackvu = try Executables.product("jackvu"), arguments = ["analyze", "--format", "json"] + paths
        let fast = try Executables.run(jackvu, arguments, timeout: 120)
        let baseline = try Executables.run(jackvu, arguments, environment: ["JACKVU_BASELINE_DSP": "1"], timeout: 120)
        XCTAssertEqual(fast.status, 0, fast.stderr)
        XCTAssertEqual(fast.stdout, baseline.stdout)

        // True peak, cases 15–23.
        let fs = 48000.0
        var tp: [(String, [[Float]], Double)] = [
            ("case15.wav", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 0), -6),
            ("case16.wav", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 0.5, phaseDegrees: 45), -6),
            ("case17.wav", EBUSignals.taperedSine(frequency: fs / 6, amplitude: 0.5, phaseDegrees: 60), -6),
            ("case18.wav", EBUSignals.taperedSine(frequency: fs / 8, amplitude: 0.5, phaseDegrees: 67.5), -6),
            ("case19.wav", EBUSignals.taperedSine(frequency: fs / 4, amplitude: 1.41, phaseDegrees: 45), 3),
        ]
        for offset in 0..<4 { tp.append(("case\(20 + offset).wav", EBUSignals.interSamplePeak(offset: offset), 0)) }
        // A file whose last sample is its loudest (0.9, −0.92 dBFS, after a −20 dBFS sine): the
        // true-peak filter holds the last 12 samples back until the samples after them, which a
        // file's end gives as silence (it read −20.7 dBTP, below the sample peak, as ffmpeg's
        // ebur128 still does).
        let endsLoud = (0..<47999).map { Float(0.1 * sin(2 * Double.pi * 997 * Double($0) / fs)) } + [0.9]
        tp.append(("ends-at-its-peak.wav", [endsLoud, endsLoud], -0.92))
        let tpResults = try summaries(try tp.map { try file($0.0, $0.1) })
        for (i, r) in tpResults.enumerated() {
            let value = r["true_peak_dbtp"] as? Double ?? -99
            XCTAssertLessThanOrEqual(value, tp[i].2 + 0.2, tp[i].0)
            XCTAssertGreaterThanOrEqual(value, tp[i].2 - 0.4, tp[i].0)
        }

        // PLR = max true peak − integrated loudness, on every case that has both; the −23 LUFS
        // tone of case 1 peaks at −23 dBTP: PLR 0 LU.
        var plrs = 0
        for r in results + tpResults {
            guard let peak = r["true_peak_dbtp"] as? Double, let integrated = r["integrated_lufs"] as? Double else {
                XCTAssertTrue(r["plr_lu"] is NSNull, "PLR without both: \(r)")
                continue
            }
            XCTAssertEqual(try XCTUnwrap(r["plr_lu"] as? Double, "\(r)"), peak - integrated, accuracy: 0.05, "\(r["file"] ?? "")")
            plrs += 1
        }
        XCTAssertGreaterThanOrEqual(plrs, 12, "cases with a PLR")
        XCTAssertEqual(results[0]["plr_lu"] as? Double ?? 99, 0, accuracy: 0.15, "case 1")
    }

    /// PLR in `analyze --stream`'s text and JSON (`--send plr` alone and beside the loudness and
    /// true peak) and in the text summary, on a −23 LUFS tone with a 0.5 s burst 12 dB louder:
    /// true peak −11 dBTP, integrated loudness the mean power of the two (every block is above
    /// the gates), −21.66 LUFS, so PLR 10.66 LU.
    func testPeakToLoudnessRatioInEveryForm() throws {
        let path = try file("plr.wav", EBUSignals.tones([S(seconds: 10, dBFS: -23), S(seconds: 0.5, dBFS: -11), S(seconds: 10, dBFS: -23)]))
        let jackvu = try Executables.product("jackvu")
        // JSON: the last update's PLR against its own true peaks and integrated loudness.
        let last = try XCTUnwrap(try stream(path, ["--send", "plr,truepeak,loudness"]).last)
        let peaks = try XCTUnwrap(last["channels"] as? [[String: Any]]).compactMap { $0["max_true_peak_dbtp"] as? Double }
        let plr = loudness(last, "plr_lu")
        XCTAssertEqual(plr, (peaks.max() ?? 0) - loudness(last, "integrated_lufs"), accuracy: 0.05)
        XCTAssertEqual(peaks.max() ?? 0, -11, accuracy: 0.1)
        let integrated = 10 * log10((20 * pow(10, -2.3) + 0.5 * pow(10, -1.1)) / 20.5)
        XCTAssertEqual(plr, -11 - integrated, accuracy: 0.2)
        // Alone, it is the only reading.
        let alone = try XCTUnwrap(try stream(path, ["--send", "plr"]).last)
        XCTAssertEqual(Set((alone["loudness"] as? [String: Any])?.keys.map { $0 } ?? []), ["plr_lu"])
        XCTAssertEqual(loudness(alone, "plr_lu"), plr, accuracy: 0.001)
        // Text: the same value as an OSC message.
        let text = try Executables.run(jackvu, ["analyze", "--stream", "--send", "plr", path], timeout: 120)
        XCTAssertEqual(text.status, 0, text.stderr)
        let lines = text.stdout.split(separator: "\n").filter { $0.hasPrefix("/jackvu/loudness/") }
        XCTAssertTrue(lines.allSatisfy { $0.hasPrefix("/jackvu/loudness/plr f ") }, "\(lines.prefix(3))")
        XCTAssertEqual(Double(lines.last?.split(separator: " ").last ?? "") ?? 0, plr, accuracy: 0.001)
        // The summary, text and JSON.
        let summary = try Executables.run(jackvu, ["analyze", path], timeout: 120)
        XCTAssertTrue(summary.stdout.contains("  PLR               \(fixed(plr, 1)) LU\n"), summary.stdout)
        let json = try XCTUnwrap(try summaries([path]).first)
        XCTAssertEqual(try XCTUnwrap(json["plr_lu"] as? Double),
                       try XCTUnwrap(json["true_peak_dbtp"] as? Double) - (try XCTUnwrap(json["integrated_lufs"] as? Double)), accuracy: 0.05)
    }

    func testTech3341Cases10And13ThroughTwentyFilesEach() throws {
        var case10: [String] = [], case13: [String] = []
        for i in 0..<20 {
            case10.append(try file("case10-\(i).wav", EBUSignals.tones([S(seconds: Double(i) * 0.15, dBFS: nil), S(seconds: 3, dBFS: -23), S(seconds: 1, dBFS: nil)])))
            case13.append(try file("case13-\(i).wav", EBUSignals.tones([S(seconds: Double(i) * 0.02, dBFS: nil), S(seconds: 0.4, dBFS: -23), S(seconds: 1, dBFS: nil)])))
        }
        for (i, r) in try summaries(case10).enumerated() {
            XCTAssertEqual(r["max_short_term_lufs"] as? Double ?? 0, -23, accuracy: 0.1, "case 10, file \(i)")
        }
        for (i, r) in try summaries(case13).enumerated() {
            XCTAssertEqual(r["max_momentary_lufs"] as? Double ?? 0, -23, accuracy: 0.1, "case 13, file \(i)")
        }
    }

    func testTech3341Cases9And12ThroughTheStream() throws {
        let case9 = try stream(try file("case9.wav", EBUSignals.tones(Array(repeating: [S(seconds: 1.34, dBFS: -20), S(seconds: 1.66, dBFS: -30)], count: 5).flatMap { $0 })))
        let late9 = case9.filter { ($0["time_s"] as? Double ?? 0) >= 3 }
        XCTAssertGreaterThan(late9.count, 500)
        for u in late9 { XCTAssertEqual(loudness(u, "short_term_lufs"), -23, accuracy: 0.1, "S at \(u["time_s"] ?? "?") s") }
        let case12 = try stream(try file("case12.wav", EBUSignals.tones(Array(repeating: [S(seconds: 0.18, dBFS: -20), S(seconds: 0.22, dBFS: -30)], count: 25).flatMap { $0 })))
        let late12 = case12.filter { ($0["time_s"] as? Double ?? 0) >= 1 }
        XCTAssertGreaterThan(late12.count, 400)
        for u in late12 { XCTAssertEqual(loudness(u, "momentary_lufs"), -23, accuracy: 0.1, "M at \(u["time_s"] ?? "?") s") }
    }

    func testTech3341Cases11And14ThroughTheStream() throws {
        let case11 = EBUSignals.successiveTones(delay: 0.15, tone: 3)
        let case14 = EBUSignals.successiveTones(delay: 0.02, tone: 0.4)
        for (live, key) in [(case11, "max_short_term_lufs"), (case14, "max_momentary_lufs")] {
            let (signal, period) = live
            let updates = try stream(try file("live-\(key).wav", EBUSignals.tones(signal)))
            for i in 0..<20 {
                // The last update of segment i (its tone is over; the next has not begun).
                let end = Double(i + 1) * period
                let last = try XCTUnwrap(updates.last { ($0["time_s"] as? Double ?? 0) <= end })
                XCTAssertEqual(loudness(last, key), -38 + Double(i), accuracy: 0.1, "\(key), segment \(i)")
            }
        }
    }

    func testTech3342Cases1To4ThroughFiles() throws {
        let cases: [([Double], Double)] = [([-20, -30], 10), ([-20, -15], 5), ([-40, -20], 20), ([-50, -35, -20, -35, -50], 15)]
        let paths = try cases.enumerated().map { i, c in try file("lra\(i + 1).wav", EBUSignals.tones(c.0.map { S(seconds: 20, dBFS: $0) })) }
        for (i, r) in try summaries(paths).enumerated() {
            XCTAssertEqual(r["loudness_range_lu"] as? Double ?? 0, cases[i].1, accuracy: 0.1, "Tech 3342 case \(i + 1)")
        }
    }

    /// FLAC, OGG and a 44.1 kHz file read through libsndfile agree with the WAV; a missing
    /// file gets one line on stderr, the others are still analysed, and the exit code is 66.
    func testOtherFormatsRatesAndBadFiles() throws {
        let wav = try file("tone.wav", EBUSignals.tones([S(seconds: 10, dBFS: -20)]))
        let wav44 = try file("tone44.wav", EBUSignals.tones([S(seconds: 10, dBFS: -20)], sampleRate: 44100), sampleRate: 44100)
        let flac = directory.appendingPathComponent("tone.flac").path
        let ogg = directory.appendingPathComponent("tone.ogg").path
        XCTAssertEqual(try Executables.run("sox", [wav, "-b", "24", flac]).status, 0)
        XCTAssertEqual(try Executables.run("sox", [wav, ogg]).status, 0)
        let results = try summaries([wav, wav44, flac, ogg])
        XCTAssertEqual(results.count, 4)
        for r in results {
            XCTAssertEqual(r["integrated_lufs"] as? Double ?? 0, -20, accuracy: 0.1, "\(r["file"] ?? "")")
        }
        XCTAssertEqual(results[1]["sample_rate_hz"] as? Int, 44100)
        XCTAssertEqual((results[2]["format"] as? String)?.contains("FLAC"), true)

        let missing = directory.appendingPathComponent("missing.wav").path
        let garbage = directory.appendingPathComponent("garbage.wav").path
        try Data("not audio".utf8).write(to: URL(fileURLWithPath: garbage))
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", missing, wav, garbage])
        XCTAssertEqual(r.status, 66)
        let errors = r.stderr.split(separator: "\n")
        XCTAssertEqual(errors.count, 2, r.stderr)
        XCTAssertTrue(errors[0].hasPrefix("jackvu: cannot read '\(missing)'"), r.stderr)
        XCTAssertTrue(errors[1].hasPrefix("jackvu: cannot read '\(garbage)'"), r.stderr)
        XCTAssertTrue(r.stdout.contains("integrated        -20.0 LUFS"), r.stdout)
    }

    /// MP3 is decoded by libmpg123 directly, not through libsndfile, whose decoder lets
    /// libmpg123 write its notes to stderr. The samples are libsndfile's: the summary equals,
    /// to the last digit, that of a float WAV of what libsndfile decodes from the same MP3 (a
    /// real encoder's, lame's, with its gapless header); an ID3v2 tag in front changes nothing;
    /// a stream with bytes overwritten mid-file (libmpg123 resyncs; libsndfile's decoder
    /// printed three "Note: …" lines) is analysed with nothing on stderr. A file with no
    /// decodable frame, and two streams joined end to end (libmpg123 reads the first only,
    /// as libsndfile did, silently), are one line each and exit 66.
    func testMP3sDecodeAsLibsndfileDecodesThemAndQuietly() throws {
        let d = directory.path
        let n = 3 * 48000
        let source = "\(d)/source.wav"
        let sox = try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", source, "synth", "3", "sine", "997", "sine", "440", "vol", "0.1"])
        XCTAssertEqual(sox.status, 0, sox.stderr)
        let mp3 = "\(d)/t.mp3"
        let lame = try Executables.run("lame", ["--quiet", "-b", "320", "-m", "s", source, mp3])
        XCTAssertEqual(lame.status, 0, lame.stderr)
        // libsndfile's decoding of it, as a float WAV.
        var info = SF_INFO()
        let h = try XCTUnwrap(sf_open(mp3, Int32(SFM_READ), &info), String(cString: sf_strerror(nil)))
        var interleaved = [Float](repeating: 0, count: (n + 48000) * 2)
        let frames = Int(sf_readf_float(h, &interleaved, sf_count_t(n + 48000)))
        sf_close(h)
        XCTAssertEqual(info.format & 0x0FFF0000, 0x230000, "libsndfile reads it as MPEG")
        XCTAssertEqual(frames, n, "lame's gapless header gives the source's length")
        let reference = try file("libsndfile.wav", [0, 1].map { c in (0..<frames).map { interleaved[2 * $0 + c] } })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: mp3))
        let frame = Data("TIT2".utf8) + Data([0, 0, 0, 8, 0, 0, 0]) + Data("A title".utf8)
        try (Data("ID3".utf8) + Data([3, 0, 0, 0, 0, 0, UInt8(frame.count)]) + frame + bytes).write(to: URL(fileURLWithPath: "\(d)/tagged.mp3"))
        let jackvu = try Executables.product("jackvu")
        let r = try Executables.run(jackvu, ["analyze", "--format", "json", mp3, reference, "\(d)/tagged.mp3", source])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr, "")
        let results = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stdout)
        XCTAssertEqual(results.count, 4)
        func figures(_ r: [String: Any]) -> NSDictionary { NSDictionary(dictionary: r.filter { $0.key != "file" && $0.key != "format" }) }
        XCTAssertEqual(results[0]["format"] as? String, "MPEG-1/2 Audio")
        XCTAssertEqual(figures(results[0]), figures(results[1]), "jackvu's decoding and libsndfile's")
        XCTAssertEqual(figures(results[0]), figures(results[2]), "an ID3v2 tag in front")
        // And the level is the source's (lame at 320 kb/s, left and right coded apart: within 0.01 LU).
        XCTAssertEqual(results[0]["integrated_lufs"] as? Double ?? 0, results[3]["integrated_lufs"] as? Double ?? 1, accuracy: 0.05, "\(results[0])")

        // Damage from a frame header on: 400 bytes, which libmpg123 steps over; 4000, which it
        // does not (it looks 1024 bytes on), where libsndfile's reader ended without a word.
        let header = try XCTUnwrap((bytes.count / 2..<bytes.count).first { bytes[$0] == 0xFF && bytes[$0 + 1] & 0xE0 == 0xE0 })
        var broken = bytes
        bytes.replaceSubrange(header..<header + 400, with: [UInt8](repeating: 0x55, count: 400))
        try bytes.write(to: URL(fileURLWithPath: "\(d)/damaged.mp3"))
        broken.replaceSubrange(header..<header + 4000, with: [UInt8](repeating: 0x55, count: 4000))
        try broken.write(to: URL(fileURLWithPath: "\(d)/broken.mp3"))
        let damaged = try Executables.run(jackvu, ["analyze", "\(d)/damaged.mp3"])
        XCTAssertEqual(damaged.status, 0, damaged.stderr)
        XCTAssertEqual(damaged.stderr, "", "libmpg123's notes stay out of stderr")
        XCTAssertTrue(damaged.stdout.contains("MPEG-1/2 Audio, 48000 Hz, 2 ch"), damaged.stdout)

        // One frame header and nothing decodable; the MP3 twice, end to end.
        try (Data([0xFF, 0xFB, 0x90, 0x64]) + Data(count: 413)).write(to: URL(fileURLWithPath: "\(d)/one.mp3"))
        let original = try Data(contentsOf: URL(fileURLWithPath: mp3))
        try (original + original).write(to: URL(fileURLWithPath: "\(d)/joined.mp3"))
        let bad = try Executables.run(jackvu, ["analyze", "\(d)/one.mp3", "\(d)/joined.mp3", "\(d)/broken.mp3"])
        XCTAssertEqual(bad.status, 66, bad.stderr)
        let lines = bad.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, bad.stderr)
        XCTAssertEqual(lines.first, "jackvu: cannot read '\(d)/one.mp3': it holds no MPEG audio frame that can be decoded")
        XCTAssertEqual(lines.dropFirst().first,
            "jackvu: cannot analyse '\(d)/joined.mp3': another MPEG stream starts at byte \(original.count) (files joined end to end?): jackvu analyses one stream a file (after \(n) frames, 3.0 s)")
        XCTAssertTrue(lines.last?.hasPrefix("jackvu: cannot analyse '\(d)/broken.mp3': its MPEG data is damaged near byte ") == true, bad.stderr)
        XCTAssertTrue(lines.last?.contains("(libmpg123: ") == true, bad.stderr)
    }

    /// A file libsndfile decodes fewer frames of than its header gives — FLAC with bytes
    /// overwritten mid-stream, FLAC cut short — is one line and exit 66, not a summary of the
    /// part before the damage (libsndfile's reader just ends there, with no error).
    func testAFileDecodedShortOfItsHeaderIsOneLine() throws {
        let d = directory.path
        let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "\(d)/t.flac", "synth", "4", "sine", "997", "vol", "0.1"])
        XCTAssertEqual(made.status, 0, made.stderr)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: "\(d)/t.flac"))
        try Data(bytes.prefix(bytes.count * 3 / 5)).write(to: URL(fileURLWithPath: "\(d)/cut.flac"))
        bytes.replaceSubrange(bytes.count / 2..<bytes.count / 2 + 3000, with: [UInt8](repeating: 0x55, count: 3000))
        try bytes.write(to: URL(fileURLWithPath: "\(d)/damaged.flac"))
        let expected = ["\(d)/damaged.flac", "\(d)/cut.flac"]
        let jackvu = try Executables.product("jackvu")
        let whole = try Executables.run(jackvu, ["analyze", "\(d)/t.flac"])
        XCTAssertEqual(whole.status, 0, whole.stderr)
        XCTAssertEqual(whole.stderr, "")
        let r = try Executables.run(jackvu, ["analyze"] + expected)
        XCTAssertEqual(r.status, 66, r.stderr)
        XCTAssertEqual(r.stdout, "", "no summary of part of a file")
        let lines = r.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, expected.count, r.stderr)
        for (line, path) in zip(lines, expected) {
            XCTAssertTrue(line.hasPrefix("jackvu: cannot analyse '\(path)': only "), "\(line)")
            XCTAssertTrue(line.contains(" of the 192000 frames its header gives could be decoded ("), "\(line)")
            XCTAssertTrue(line.hasSuffix(" of 4.0 s): it is damaged or cut short"), "\(line)")
        }
    }

    /// A file whose audio chunk claims more than the file holds (cut short, or still being
    /// written) is analysed as far as it goes, exit 0, with one line saying so and its summary
    /// too: WAV through jackvu's own reader (16-bit) and libsndfile's (u-law), RF64 (its length
    /// in `ds64`), Wave64 and AIFF (`SSND`), and a Wave64 chunk claiming 2⁶³ − 1 bytes. A WAV
    /// written to a pipe, whose header gives a placeholder length (sox's 0x7FFFF000), gets no
    /// line, nor does one whose data are all there but the pad byte after their odd length.
    /// The compliance report (`--report`) says so in HTML and JSON. A header never finished
    /// (data length 0, the audio after it, as libsndfile leaves it until the file is closed) is
    /// read to the end of the file, the same as the finished file, with one line; in u-law,
    /// which jackvu does not read itself, it is refused in one line.
    func testAFileCutShortOrUnfinishedIsAnalysedAsFarAsItGoesWithOneLine() throws {
        let d = directory.path
        func sox(_ file: String, _ options: [String], _ seconds: String = "4") throws {
            let made = try Executables.run("sox", ["-n", "-r", "48000"] + options + ["\(d)/\(file)", "synth", seconds, "sine", "997", "vol", "0.1"])
            XCTAssertEqual(made.status, 0, made.stderr)
        }
        func bytes(_ file: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: "\(d)/\(file)")) }
        func le(_ v: Int, _ n: Int) -> Data { Data((0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) }) }
        try sox("pcm.wav", ["-c", "2", "-b", "16"])
        try sox("ulaw.wav", ["-c", "2", "-e", "u-law"])
        try sox("w.aiff", ["-c", "2", "-b", "16"])
        try sox("w.w64", ["-c", "2", "-b", "16"])
        // RF64 (EBU Tech 3306) from the 16-bit WAV: its sizes in ds64, 0xFFFFFFFF in the headers.
        let wav = try bytes("pcm.wav")
        let fmt = try XCTUnwrap(wav.range(of: Data("fmt ".utf8))).lowerBound
        let samples = wav.suffix(from: try XCTUnwrap(wav.range(of: Data("data".utf8))).lowerBound + 8)
        var rf64 = Data("RF64".utf8) + le(0xFFFF_FFFF, 4) + Data("WAVEds64".utf8) + le(28, 4)
        let formatChunk = wav[fmt..<(fmt + 8 + Int(wav[fmt + 4]))]
        rf64 += le(0, 8) + le(samples.count, 8) + le(samples.count / 4, 8) + le(0, 4) + formatChunk + Data("data".utf8) + le(0xFFFF_FFFF, 4)
        rf64 += samples
        rf64.replaceSubrange(20..<28, with: le(rf64.count - 8, 8))
        try rf64.write(to: URL(fileURLWithPath: "\(d)/w.rf64"))
        // Each cut 1.5 s into its audio: (file, its audio chunk's id, the chunk's header bytes,
        // bytes before the samples in the chunk (SSND's offset and block size), bytes a frame).
        let cuts: [(String, Data, Int, Int, Int)] = [
            ("pcm.wav", Data("data".utf8), 8, 0, 4), ("ulaw.wav", Data("data".utf8), 8, 0, 2), ("w.rf64", Data("data".utf8), 8, 0, 4),
            ("w.w64", Data("data".utf8) + Data([0xF3, 0xAC, 0xD3, 0x11, 0x8C, 0xD1, 0x00, 0xC0, 0x4F, 0x8E, 0xDB, 0x8A]), 24, 0, 4),
            ("w.aiff", Data("SSND".utf8), 8, 8, 4),
        ]
        var expected: [String] = [], claims: [[Int]] = [], files: [String] = []
        for (file, id, header, before, frame) in cuts {
            let whole = try bytes(file)
            let body = try XCTUnwrap(whole.range(of: id), file).lowerBound + header
            let there = before + 48000 * frame * 3 / 2, claimed = before + 48000 * frame * 4
            try Data(whole.prefix(body + there)).write(to: URL(fileURLWithPath: "\(d)/cut-\(file)"))
            files.append("\(d)/cut-\(file)")
            expected.append("jackvu: '\(d)/cut-\(file)': its \(String(decoding: id.prefix(4), as: UTF8.self)) chunk claims \(claimed) bytes, the file holds \(there): 1.5 s analysed, as far as it goes (the file is cut short, or still being written)")
            claims.append([claimed, there])
        }
        let piped = try Executables.run("/bin/sh", ["-c", "sox -n -r 48000 -c 2 -b 16 -t wav - synth 1 sine 997 > '\(d)/piped.wav'"])
        XCTAssertEqual(piped.status, 0, piped.stderr)
        try sox("odd.wav", ["-c", "1", "-b", "24"], "48001s")
        let odd = try bytes("odd.wav")
        XCTAssertEqual(odd.count % 2, 0, "sox pads the odd data chunk")
        try Data(odd.dropLast()).write(to: URL(fileURLWithPath: "\(d)/odd.wav"))
        // A Wave64 data chunk claiming 2⁶³ − 1 bytes is said as it is (the check overflowed on
        // it once: lengths are compared, never added to).
        var w64 = try bytes("cut-w.w64")
        let sizeAt = try XCTUnwrap(w64.range(of: cuts[3].1)).upperBound
        w64.replaceSubrange(sizeAt..<(sizeAt + 8), with: le(Int.max, 8))
        try w64.write(to: URL(fileURLWithPath: "\(d)/huge.w64"))
        files.append("\(d)/huge.w64")
        expected.append("jackvu: '\(d)/huge.w64': its data chunk claims \(Int.max - 24) bytes, the file holds \(claims[3][1]): 1.5 s analysed, as far as it goes (the file is cut short, or still being written)")
        claims.append([Int.max - 24, claims[3][1]])
        // A header never finished, as libsndfile leaves one until the file is closed (a
        // recording going on, or one whose recorder died): data length 0, the audio after it.
        // Read to the end of the file: the same summary as the finished file's. An empty data
        // chunk followed by a chunk (LIST) is just empty.
        var unfinished = try bytes("pcm.wav")
        let dataAt = try XCTUnwrap(unfinished.range(of: Data("data".utf8))).upperBound
        unfinished.replaceSubrange(dataAt..<(dataAt + 4), with: le(0, 4))
        try unfinished.write(to: URL(fileURLWithPath: "\(d)/unfinished.wav"))
        files.append("\(d)/unfinished.wav")
        expected.append("jackvu: '\(d)/unfinished.wav': its data chunk gives 0 bytes, and 768000 follow it: 4.0 s analysed, to the end of the file (its header was never finished: still being written, or its recorder stopped)")
        claims.append([0, 768000])
        // RF64 so left: its ds64 sizes 0 (libsndfile writes 0 data bytes and 0 frames there).
        var unfinished64 = try bytes("w.rf64")
        unfinished64.replaceSubrange(28..<44, with: le(0, 16))
        try unfinished64.write(to: URL(fileURLWithPath: "\(d)/unfinished.rf64"))
        files.append("\(d)/unfinished.rf64")
        expected.append("jackvu: '\(d)/unfinished.rf64': its data chunk gives 0 bytes, and 768000 follow it: 4.0 s analysed, to the end of the file (its header was never finished: still being written, or its recorder stopped)")
        claims.append([0, 768000])
        var empty = Data(unfinished.prefix(dataAt + 4)) + Data("LIST".utf8) + le(4, 4) + Data("INFO".utf8)
        empty.replaceSubrange(4..<8, with: le(empty.count - 8, 4))
        try empty.write(to: URL(fileURLWithPath: "\(d)/empty.wav"))
        let whole = ["\(d)/w.rf64", "\(d)/piped.wav", "\(d)/odd.wav", "\(d)/pcm.wav", "\(d)/empty.wav"]
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--format", "json"] + files + whole)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").map(String.init), expected)
        let summaries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stdout)
        XCTAssertEqual(summaries.compactMap { $0["duration_s"] as? Double }, [Double](repeating: 1.5, count: files.count - 2) + [4, 4, 4, 1, 1, 4, 0], r.stdout)
        XCTAssertEqual(summaries.compactMap { $0["format"] as? String }[2], "RF64 (RIFF 64)")
        let cut = summaries.map { ($0["data_length"] as? [String: Int]).map { [$0["claimed_bytes"], $0["bytes_there"]] } }
        XCTAssertEqual(cut, claims.map { $0.map(Optional.some) } + [nil, nil, nil, nil, nil], "the JSON summary says so too")
        func readings(_ s: [String: Any]) -> NSDictionary { NSDictionary(dictionary: s.filter { !["file", "data_length"].contains($0.key) }) }
        XCTAssertEqual(readings(summaries[files.count - 2]), readings(summaries[files.count + 3]), "the unfinished WAV reads as the finished one")
        XCTAssertEqual(readings(summaries[files.count - 1]), readings(summaries[files.count]), "the unfinished RF64 reads as the finished one")
        // u-law so left: libsndfile reads no frame of it, and jackvu reads only PCM and float itself.
        var ulaw = try bytes("ulaw.wav")
        let ulawData = try XCTUnwrap(ulaw.range(of: Data("data".utf8))).upperBound
        ulaw.replaceSubrange(ulawData..<(ulawData + 4), with: le(0, 4))
        try ulaw.write(to: URL(fileURLWithPath: "\(d)/ulaw-unfinished.wav"))
        let refused = try Executables.run(try Executables.product("jackvu"), ["analyze", "\(d)/ulaw-unfinished.wav"])
        XCTAssertEqual(refused.status, 66, refused.stderr)
        XCTAssertEqual(refused.stderr, "jackvu: cannot read '\(d)/ulaw-unfinished.wav': its data chunk gives 0 bytes, and 384000 follow it (its header was never finished: still being written, or its recorder stopped), and jackvu reads such a file only as 16-, 24- or 32-bit PCM or 32-bit float WAV\n")
        let text = try Executables.run(try Executables.product("jackvu"), ["analyze", "--report", "\(d)/r.html", "--log", "\(d)/cut.db", files[0]])
        XCTAssertTrue(text.stdout.contains("\n  data length       its data chunk claims 768000 bytes, the file holds 288000 (the file is cut short, or still being written)\n"), text.stdout)
        // The log too: an event at the file's start (its blocks are of the audio there).
        let logged = try Executables.run("sqlite3", ["\(d)/cut.db", "SELECT e.kind, e.detail, e.value, abs(e.t - (min(b.t) - 0.1)) < 0.001 FROM events e, blocks b WHERE e.kind = 'data_length'"])
        XCTAssertEqual(logged.stdout, "data_length|'\(files[0])': its data chunk claims 768000 bytes, the file holds 288000 (the file is cut short, or still being written)|1.5|1\n", logged.stderr)
        // The compliance report says so too.
        let note = "The file is cut short, or was still being written: its data chunk claims 768000 bytes, the file holds 288000; this report covers the audio there."
        XCTAssertTrue(try String(contentsOfFile: "\(d)/r.html", encoding: .utf8).contains("<p class=\"fail\">\(note)</p>"))
        XCTAssertEqual(try Executables.run(try Executables.product("jackvu"), ["analyze", "--report", "\(d)/r.json", files[0]]).status, 0)
        let report = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: "\(d)/r.json"))) as? [String: Any]
        XCTAssertEqual(report?["source_note"] as? String, note)
    }

    /// A WAV whose audio is whole and whose chunk after it claims more than the file holds — cut
    /// short after its audio, or the fuzzer's LIST chunk that libsndfile parses for minutes —
    /// is analysed as if it ended with its audio (libsndfile sees it only so far), with one
    /// line: PCM (jackvu's reader) and u-law (libsndfile's) read as the files without the
    /// chunk. It was refused as damaged.
    func testAChunkAfterTheAudioClaimingMoreThanTheFileHoldsLeavesTheAudioWhole() throws {
        let d = directory.path
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let fuzzed = try Data(contentsOf: root.appendingPathComponent("Fuzz/corpus/wav/list-claims-4gb.wav"))
        var files: [String] = [], expected: [String] = []
        for (name, options) in [("pcm.wav", ["-b", "16"]), ("ulaw.wav", ["-e", "u-law"])] {
            let made = try Executables.run("sox", ["-n", "-r", "48000", "-c", "2"] + options + ["\(d)/\(name)", "synth", "2", "sine", "997", "vol", "0.1"])
            XCTAssertEqual(made.status, 0, made.stderr)
            var whole = try Data(contentsOf: URL(fileURLWithPath: "\(d)/\(name)"))
            let audio = whole.count
            whole += fuzzed[12...]  // the LIST chunk claiming 4 GB, and what followed it
            whole.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(whole.count - 8).littleEndian) { Data($0) })
            try whole.write(to: URL(fileURLWithPath: "\(d)/list-\(name)"))
            files += ["\(d)/\(name)", "\(d)/list-\(name)"]
            expected.append("jackvu: '\(d)/list-\(name)': its 'LIST' chunk after the audio claims 4278190085 bytes, the file holds \(fuzzed.count - 20): 2.0 s analysed, all of its audio (the file is cut short after its audio, or damaged there; its audio is whole)")
            XCTAssertEqual(audio % 2, 0)
        }
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--format", "json"] + files, timeout: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stderr.split(separator: "\n").map(String.init), expected)
        let summaries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stdout)
        func readings(_ s: [String: Any]) -> NSDictionary { NSDictionary(dictionary: s.filter { !["file", "after_audio"].contains($0.key) }) }
        XCTAssertEqual(summaries.count, 4)
        for i in [0, 2] where summaries.count == 4 {
            XCTAssertEqual(readings(summaries[i]), readings(summaries[i + 1]), files[i + 1])
            XCTAssertEqual(summaries[i]["duration_s"] as? Double, 2)
            XCTAssertEqual(summaries[i + 1]["after_audio"] as? NSDictionary, ["chunk": "LIST", "claimed_bytes": 4278190085, "bytes_there": fuzzed.count - 20])
        }
    }

    /// What libsndfile refuses, said in plain words with libsndfile's own after them, and a
    /// limit named where a limit is the reason: FLAC whose frames are overwritten, a cut AIFF,
    /// a cut Ogg Vorbis, a WAV header with 0 Hz, one with 65 channels, text.
    func testLibsndfileRefusalsInPlainWords() throws {
        let d = directory.path
        func sox(_ name: String) throws {
            XCTAssertEqual(try Executables.run("sox", ["-n", "-r", "48000", "-c", "2", "\(d)/\(name)", "synth", "2", "sine", "440"]).status, 0)
        }
        try sox("t.flac")
        var flac = try Data(contentsOf: URL(fileURLWithPath: "\(d)/t.flac"))
        flac.replaceSubrange(42..<60, with: [UInt8](repeating: 0xFF, count: 18))
        try flac.write(to: URL(fileURLWithPath: "\(d)/bad.flac"))
        try sox("t.aiff")
        try Data(try Data(contentsOf: URL(fileURLWithPath: "\(d)/t.aiff")).prefix(60)).write(to: URL(fileURLWithPath: "\(d)/cut.aiff"))
        try sox("t.ogg")
        try Data(try Data(contentsOf: URL(fileURLWithPath: "\(d)/t.ogg")).prefix(3000)).write(to: URL(fileURLWithPath: "\(d)/cut.ogg"))
        func wav(_ name: String, channels: UInt8, rate: [UInt8]) throws {
            let header: [UInt8] = Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WAVEfmt ".utf8) + [0x10, 0, 0, 0, 1, 0, channels, 0]
                + rate + [0, 0, 0, 0, 4, 0, 16, 0] + Array("data".utf8) + [0, 0, 0, 0]
            try Data(header).write(to: URL(fileURLWithPath: "\(d)/\(name)"))
        }
        try wav("0hz.wav", channels: 2, rate: [0, 0, 0, 0])
        try wav("65ch.wav", channels: 65, rate: [0x80, 0xBB, 0, 0])
        try Data("not audio at all\n".utf8).write(to: URL(fileURLWithPath: "\(d)/text.wav"))
        let expected: [(String, String)] = [
            ("bad.flac", "cannot read '\(d)/bad.flac': its FLAC data is damaged: the decoder could not read it (libsndfile: "),
            ("cut.aiff", "cannot read '\(d)/cut.aiff': its audio is in an encoding libsndfile cannot decode, or its header is damaged (libsndfile: "),
            ("cut.ogg", "cannot read '\(d)/cut.ogg': its header is damaged: the format is one jackvu reads, but the file does not follow it (libsndfile: "),
            ("0hz.wav", "cannot read '\(d)/0hz.wav': its header is damaged"),
            ("65ch.wav", "cannot analyse '\(d)/65ch.wav': it has 65 channels; jackvu analyses 1 to 64"),
            ("text.wav", "cannot read '\(d)/text.wav': it is not an audio file jackvu reads (WAV, "),
        ]
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze"] + expected.map { "\(d)/\($0.0)" })
        XCTAssertEqual(r.status, 66, r.stderr)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, expected.count, r.stderr)
        for (line, (name, start)) in zip(lines, expected) {
            XCTAssertTrue(line.hasPrefix("jackvu: " + start), "\(name): \(line)")
        }
    }

    /// `jackvu analyze -` reads a WAV from standard input as it comes down a pipe (what `ffmpeg
    /// -i IN -f wav -` sends): the file's own summary, every field, whether the stream gives its
    /// length, pauses in its header, or gives a pipe's 0xFFFFFFFF (read to its end); one that
    /// ends before its length is read as far as it goes, with one line; what is not a WAV, and
    /// a terminal, get one line and 66; `-` twice, 64.
    func testAWAVOnStandardInput() throws {
        let path = try file("tone.wav", EBUSignals.tones([S(seconds: 2, dBFS: -20), S(seconds: 2, dBFS: -30)], channelGains: [0, -3]))
        var piped = try Data(contentsOf: URL(fileURLWithPath: path))
        let data = try XCTUnwrap(piped.range(of: Data("data".utf8))).lowerBound
        for at in [4, data + 4] { piped.replaceSubrange(at..<(at + 4), with: Data([0xFF, 0xFF, 0xFF, 0xFF])) }
        let pipedPath = directory.appendingPathComponent("piped.wav").path
        try piped.write(to: URL(fileURLWithPath: pipedPath))
        let jackvu = try Executables.product("jackvu")
        func shell(_ command: String) throws -> CommandResult { try Executables.run("/bin/sh", ["-c", command], timeout: 60) }
        var expected = try XCTUnwrap(summaries([path]).first)
        expected["file"] = "-"
        for source in ["cat '\(path)'", "(head -c 30 '\(path)'; sleep 0.3; tail -c +31 '\(path)')", "cat '\(pipedPath)'"] {
            let r = try shell("\(source) | '\(jackvu)' --format json analyze -")
            XCTAssertEqual(r.status, 0, "\(source): \(r.stderr)")
            XCTAssertEqual(r.stderr, "", source)
            let got = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stdout)
            XCTAssertEqual(got.first.map { NSDictionary(dictionary: $0) }, NSDictionary(dictionary: expected), source)
        }
        // RF64 (its length in ds64, 0xFFFFFFFF in its data chunk), named as RF64.
        let seed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/wav/rf64.wav").path
        let rf64 = try shell("cat '\(seed)' | '\(jackvu)' --format json analyze -")
        let rf64Summary = (try JSONSerialization.jsonObject(with: Data(rf64.stdout.utf8)) as? [[String: Any]])?.first
        XCTAssertEqual(rf64Summary?["format"] as? String, "RF64 (RIFF 64)", rf64.stderr)
        XCTAssertEqual(rf64Summary?["duration_s"] as? Double, 0.05, rf64.stderr)
        let cut = try shell("head -c 200044 '\(path)' | '\(jackvu)' --format json analyze -")
        XCTAssertEqual(cut.status, 0, cut.stderr)
        XCTAssertEqual(cut.stderr, "jackvu: '-': its data chunk claims \(4 * 48000 * 2 * 4) bytes, the file holds 200000: 0.521 s analysed, as far as it goes (the file is cut short, or still being written)\n")
        let seconds = (try JSONSerialization.jsonObject(with: Data(cut.stdout.utf8)) as? [[String: Any]])?.first?["duration_s"] as? Double
        XCTAssertEqual(seconds ?? 0, 25000.0 / 48000, accuracy: 0.0005)
        let text = try shell("printf 'RIFF\\377\\377\\377\\377WAVEfmt ' | '\(jackvu)' analyze -")
        XCTAssertEqual(text.status, 66)
        XCTAssertTrue(text.stderr.hasPrefix("jackvu: cannot read '-': standard input holds no WAV jackvu reads from a stream"), text.stderr)
        XCTAssertEqual(text.stderr.split(separator: "\n").count, 1, text.stderr)
        let twice = try shell("'\(jackvu)' analyze - - < '\(path)'")
        XCTAssertEqual(twice.status, 64, twice.stderr)
        XCTAssertTrue(twice.stderr.contains("'-' (standard input) can be read once"), twice.stderr)
        // A terminal (script(1)'s pseudo-terminal): refused at once, not waited on.
        let terminal = try shell("script -qec \"'\(jackvu)' analyze -\" /dev/null < /dev/null")
        XCTAssertEqual(terminal.status, 66, terminal.stdout)
        XCTAssertTrue(terminal.stdout.contains("jackvu: cannot read '-': standard input is a terminal"), terminal.stdout)
    }

    /// The damaged-file catalogue, as one batch with the bad files in the middle: samples of
    /// +Inf, NaN and 10^20 are replaced by silence and counted (the loudness is the clean
    /// tone's), a 2 kHz file, a header claiming 100 MHz and a FIFO each get one line at once;
    /// the good files keep their summaries and the status says some failed.
    func testDamagedFilesOneByOne() throws {
        let tone = EBUSignals.tones([S(seconds: 10, dBFS: -20)])
        func spoiled(_ name: String, _ value: Float) throws -> String {
            var x = tone
            x[0][240_000] = value
            return try file(name, x)
        }
        let inf = try spoiled("inf.wav", .infinity), nan = try spoiled("nan.wav", .nan), huge = try spoiled("huge.wav", 1e20)
        let low = try file("2k.wav", [[Float](repeating: 0.1, count: 4000)], sampleRate: 2000)
        let fast = try file("100M.wav", [[Float](repeating: 0.1, count: 4000)], sampleRate: 100_000_000)
        let fifo = directory.appendingPathComponent("fifo.wav").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        // 139 bytes whose LIST chunk claims 4 GB (the fuzzer's find): libsndfile parsed it for
        // minutes; jackvu refuses it at once.
        let claim = directory.appendingPathComponent("claim.wav").path
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        try FileManager.default.copyItem(atPath: root.appendingPathComponent("Fuzz/corpus/wav/list-claims-4gb.wav").path, toPath: claim)
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--format", "json", inf, low, fifo, nan, claim, fast, huge], timeout: 60)
        XCTAssertEqual(r.status, 66, r.stderr)
        let errors = r.stderr.split(separator: "\n")
        XCTAssertEqual(errors.count, 4, r.stderr)
        if errors.count == 4 {
            XCTAssertTrue(errors[0].hasPrefix("jackvu: cannot analyse '\(low)': sample rate 2000 Hz is not supported"), r.stderr)
            XCTAssertTrue(errors[1].hasPrefix("jackvu: cannot read '\(fifo)': it is a pipe"), r.stderr)
            XCTAssertEqual(errors[2], "jackvu: cannot read '\(claim)': its header is damaged: its 'LIST' chunk at byte 12 claims 4278190085 bytes, the file has 119 after it")
            XCTAssertTrue(errors[3].hasPrefix("jackvu: cannot analyse '\(fast)': sample rate 100000000 Hz is not supported"), r.stderr)
        }
        let results = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]], r.stdout)
        XCTAssertEqual(results.map { $0["file"] as? String }, [inf, nan, huge])
        for summary in results {
            XCTAssertEqual(summary["replaced_samples"] as? Int, 1, "\(summary)")
            XCTAssertEqual(summary["integrated_lufs"] as? Double ?? 0, -20, accuracy: 0.1, "\(summary)")
            XCTAssertEqual(summary["sample_peak_dbfs"] as? Double ?? 0, -20, accuracy: 0.01, "\(summary)")
        }
        // The text summary says so too; a clean file says nothing of it.
        let text = try Executables.run(try Executables.product("jackvu"), ["analyze", nan], timeout: 60)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("replaced samples  1 (not finite"), text.stdout)
    }

    /// A file name with a newline and a terminal escape cannot forge a line or drive the
    /// terminal: it is escaped in the summary, the stream and the error line.
    func testNamesFromOutsideAreEscaped() throws {
        let path = try file("a\nb\u{1B}[31m\"c.wav", EBUSignals.tones([S(seconds: 1, dBFS: -20)]))
        let escaped = path.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\u{1B}", with: "\\e")
        let summary = try Executables.run(try Executables.product("jackvu"), ["analyze", path], timeout: 60)
        XCTAssertEqual(summary.status, 0, summary.stderr)
        XCTAssertEqual(summary.stdout.split(separator: "\n").first.map(String.init), escaped)
        XCTAssertFalse(summary.stdout.contains("\u{1B}"))
        let stream = try Executables.run(try Executables.product("jackvu"), ["analyze", "--stream", path], timeout: 60)
        XCTAssertEqual(stream.status, 0, stream.stderr)
        XCTAssertEqual(stream.stdout.split(separator: "\n").first.map(String.init),
                       "/jackvu/file s \"\(escaped.replacingOccurrences(of: "\"", with: "\\\""))\"")
        let missing = try Executables.run(try Executables.product("jackvu"), ["analyze", path + "\nmissing"], timeout: 60)
        XCTAssertEqual(missing.status, 66)
        XCTAssertEqual(missing.stderr.split(separator: "\n").count, 1, missing.stderr)
        XCTAssertFalse(missing.stderr.contains("\u{1B}"))
    }

    /// The lowest supported rate works: a −20 dBFS 1 kHz sine at 8 kHz reads as at 48 kHz
    /// (within the bilinear K-weighting's warping at 1 kHz of an 8 kHz design).
    func testLowestSupportedRate() throws {
        let at8k = try file("8k.wav", EBUSignals.tones([S(seconds: 5, dBFS: -20)], sampleRate: 8000), sampleRate: 8000)
        let summary = try XCTUnwrap(try summaries([at8k]).first)
        XCTAssertEqual(summary["integrated_lufs"] as? Double ?? 0, -20, accuracy: 0.3, "\(summary)")
        XCTAssertEqual(summary["replaced_samples"] as? Int, 0)
    }

    /// The text stream is the live client's address space, led by the audio time.
    func testTextStreamAndProgressBar() throws {
        let path = try file("long.wav", EBUSignals.tones([S(seconds: 31, dBFS: -18)]))
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--stream", path], timeout: 120)
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n")
        XCTAssertEqual(lines.first, "/jackvu/file s \"\(path)\"")
        // As live, the first update comes once the 4096-sample block is full (the fourth
        // hop of 1024), and its RMS is already the steady −18 − 3.01 dBFS.
        XCTAssertTrue(lines[1].hasPrefix("/jackvu/time f 0.085333"), String(lines[1]))
        let firstRMS = lines.first { $0.hasPrefix("/jackvu/ch/1/rms f ") }.flatMap { Double($0.split(separator: " ")[2]) }
        XCTAssertEqual(firstRMS ?? 0, -21.0103, accuracy: 0.05)
        let hops = lines.filter { $0.hasPrefix("/jackvu/time f") }.count
        XCTAssertEqual(hops, 31 * 48000 / 1024 - 3)
        let integrated = lines.last { $0.hasPrefix("/jackvu/loudness/integrated f ") }.flatMap { Double($0.split(separator: " ")[2]) }
        XCTAssertEqual(integrated ?? 0, -18, accuracy: 0.1, "a −18 dBFS stereo 1 kHz sine reads −18 LUFS")
        XCTAssertEqual(r.stderr, "", "no progress bar when stderr is not a terminal")

        // Its reader goes away (`| head -n 1`): jackvu stops quietly, status 0, like other
        // filters (the stream is far larger than a pipe holds).
        let head = try Executables.run(
            "bash", ["-c", "set -o pipefail; \"$0\" analyze --stream \"$1\" | head -n 1 > /dev/null", try Executables.product("jackvu"), path],
            timeout: 120)
        XCTAssertEqual(head.status, 0, head.stderr)
        XCTAssertEqual(head.stderr, "", "nothing said when the reader went away")

        // With stderr on a terminal (script(1) gives it one), a progress bar shows.
        let tty = try Executables.run("script", ["-qec", "\(try Executables.product("jackvu")) analyze \(path) >/dev/null", "/dev/null"], timeout: 120)
        XCTAssertEqual(tty.status, 0, tty.stdout)
        XCTAssertTrue(tty.stdout.contains("100% \(path)"), tty.stdout)
    }
}

extension AnalyzeTests {
    /// `--gating` through `analyze` (its summary and its stream) and the report of its log:
    /// a 1 kHz sine, 10 s at −20 dBFS and 10 s at −40 dBFS, reads −23.07 LUFS gated (BS.1770-4:
    /// the quiet half below the gate; `GatingTests` has the arithmetic), −26.0 ungated
    /// (BS.1770-1) and about the same with a −25 LU relative gate (every block passes it); a
    /// bad gate is one line, exit 64.
    func testGatingOptionsInAnalyzeItsStreamAndTheReport() throws {
        let fs = 48000
        let x = (0..<(20 * fs)).map { i in Float((i < 10 * fs ? 0.1 : 0.01) * sin(2 * Double.pi * 1000 * Double(i) / Double(fs))) }
        let path = try file("two-levels.wav", [x])
        func integrated(_ extra: [String]) throws -> Double { try XCTUnwrap(try summaries([path], extra).first?["integrated_lufs"] as? Double) }
        let gated = try integrated([]), ungated = try integrated(["--gating", "bs1770-1"]), relative = try integrated(["--gating", "relative:-25"])
        print("gating: bs1770-4 \(gated), bs1770-1 \(ungated), relative:-25 \(relative) LUFS")
        XCTAssertEqual(gated, -23.07, accuracy: 0.02)
        XCTAssertEqual(ungated, -3.01 + 10 * log10((0.01 + 0.0001) / 2), accuracy: 0.02)
        XCTAssertEqual(relative, ungated, accuracy: 0.05, "every block passes a −25 LU gate here: the mean of all")
        XCTAssertGreaterThan(gated - relative, 2)
        XCTAssertEqual(try summaries([path], ["--gating", "bs1770-1"]).first?["gating"] as? String, "bs1770-1")
        // (The stream's gated readings are recomputed once per second of audio: its last one
        // is up to a second before the end.)
        XCTAssertEqual(loudness(try XCTUnwrap(try stream(path, ["--gating", "bs1770-1", "--send", "loudness"]).last), "integrated_lufs"), ungated, accuracy: 0.3,
                       "the stream's outputs follow the gating")
        let text = try Executables.run(try Executables.product("jackvu"), ["analyze", "--gating", "bs1770-1", path])
        XCTAssertTrue(text.stdout.contains("gating            bs1770-1 (ungated)"), text.stdout)

        // The log's blocks recomputed with each gating.
        let log = directory.appendingPathComponent("gating.db").path
        XCTAssertEqual(try Executables.run(try Executables.product("jackvu"), ["analyze", "--log", log, path], timeout: 60).status, 0)
        func reported(_ extra: [String]) throws -> (Double, String?) {
            let r = try Executables.run(try Executables.product("jackvu"), ["report", log, "--type", "json"] + extra, timeout: 60)
            XCTAssertEqual(r.status, 0, r.stderr)
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
            return (try XCTUnwrap((json["results"] as? [[String: Any]])?.first?["integrated_lufs"] as? Double), json["gating"] as? String)
        }
        let (reportGated, g4) = try reported([]), (reportUngated, g1) = try reported(["--gating", "bs1770-1"])
        XCTAssertEqual(reportGated, gated, accuracy: 0.02)
        XCTAssertEqual(reportUngated, ungated, accuracy: 0.02)
        XCTAssertEqual([g4, g1], ["bs1770-4", "bs1770-1"])

        let bad = try Executables.run(try Executables.product("jackvu"), ["analyze", "--gating", "relative:5", path])
        XCTAssertEqual(bad.status, 64)
        XCTAssertEqual(bad.stderr.split(separator: "\n").count, 1, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("--gating"), bad.stderr)
    }

    /// `analyze --log` writes the blocks the live log writes, peaks included: each 100 ms
    /// block carries the largest true and sample peak of its stretch (read back with sqlite3),
    /// so `jackvu report` of the log has its max true peak: a −20 dBFS 1 kHz sine with one
    /// sample at 0.5 (−6.02 dBFS) at 1.55 s — that block alone reads it; and the last block
    /// takes the peaks after it.
    func testTheLogsBlocksCarryTheirPeaks() throws {
        let fs = 48000
        var samples = (0..<(3 * fs)).map { i in Float(0.1 * sin(2 * Double.pi * 1000 * Double(i) / Double(fs))) }
        samples[fs * 155 / 100] = 0.5
        let path = try file("peaks.wav", [samples])
        let log = directory.appendingPathComponent("peaks.db").path
        let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--log", log, path], timeout: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        let rows = try Executables.run("sqlite3", [log, "SELECT idx, true_peak_dbtp, sample_peak_dbfs FROM blocks ORDER BY idx"]).stdout
            .split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map { Double($0) } }
        XCTAssertEqual(rows.count, 30)
        XCTAssertTrue(rows.allSatisfy { $0.count == 3 && $0[1] != nil && $0[2] != nil }, "every block has its peaks: \(rows)")
        let loud = rows.filter { ($0[2] ?? -200) > -19 }
        XCTAssertEqual(loud.map { $0[0] }, [16], "the block of 1.5–1.6 s alone: \(rows)")
        XCTAssertEqual(loud.first?[2] ?? 0, -6.02, accuracy: 0.01)
        XCTAssertGreaterThanOrEqual(loud.first?[1] ?? -200, -6.03)
        for row in rows where row[0] != 16 {
            XCTAssertEqual(row[2] ?? 0, -20, accuracy: 0.01)
            XCTAssertEqual(row[1] ?? 0, -20, accuracy: 0.01)
        }
        let report = try Executables.run(try Executables.product("jackvu"), ["report", log, "--type", "json"], timeout: 60)
        let result = try XCTUnwrap(((try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])?["results"] as? [[String: Any]])?.first)
        XCTAssertEqual(result["max_truepeak_dbtp"] as? Double ?? -200, loud.first?[1] ?? 0, accuracy: 0.01, "\(result)")

        // The audio after the last block (the last 50 ms of a 2.05 s file, its last sample
        // 0.9) and the true peak of its last samples (`Analyzer.finishAudio`) go with the last
        // block: the report of the log reads the file's peaks as `analyze` does (it read the
        // sine's −20 without them).
        let ending = (0..<(2 * fs + fs / 20 - 1)).map { i in Float(0.1 * sin(2 * Double.pi * 1000 * Double(i) / Double(fs))) } + [0.9]
        let endPath = try file("ends-loud.wav", [ending])
        let endLog = directory.appendingPathComponent("ends-loud.db").path
        let summary = try summaries([endPath], ["--log", endLog]).first
        let last = try Executables.run("sqlite3", [endLog, "SELECT true_peak_dbtp, sample_peak_dbfs FROM blocks ORDER BY idx DESC LIMIT 1"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").compactMap { Double($0) }
        XCTAssertEqual(last.count, 2, "the last block's peaks")
        XCTAssertEqual(last.last ?? -200, -0.92, accuracy: 0.01, "the last block's sample peak")
        XCTAssertEqual(last.first ?? -200, summary?["true_peak_dbtp"] as? Double ?? 0, accuracy: 0.01, "the last block's true peak")
        let endReport = try Executables.run(try Executables.product("jackvu"), ["report", endLog, "--type", "json"], timeout: 60)
        let endResult = try XCTUnwrap(((try JSONSerialization.jsonObject(with: Data(endReport.stdout.utf8)) as? [String: Any])?["results"] as? [[String: Any]])?.first)
        XCTAssertEqual(endResult["max_truepeak_dbtp"] as? Double ?? -200, summary?["true_peak_dbtp"] as? Double ?? 0, accuracy: 0.01, "\(endResult)")
        XCTAssertEqual(endResult["max_sample_peak_dbfs"] as? Double ?? -200, -0.92, accuracy: 0.01, "\(endResult)")
    }

    /// Two analyses into one log follow each other: the second file's blocks come after the
    /// first's (which an analysis stamps from its start on, into the future), with no "clock
    /// stepped back" and no blocks 1 ms apart (read back with sqlite3).
    func testTwoAnalysesIntoOneLogFollowEachOther() throws {
        let fs = 48000
        let path = try file("three-seconds.wav", [(0..<(3 * fs)).map { i in Float(0.1 * sin(2 * Double.pi * 1000 * Double(i) / Double(fs))) }])
        let log = directory.appendingPathComponent("twice.db").path
        for _ in 0..<2 {
            let r = try Executables.run(try Executables.product("jackvu"), ["analyze", "--log", log, path], timeout: 60)
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(r.stderr, "", "nothing said")
        }
        let rows = try Executables.run("sqlite3", [log, "SELECT idx, t FROM blocks ORDER BY t"]).stdout.split(separator: "\n")
            .map { $0.split(separator: "|").compactMap { Double($0) } }
        XCTAssertEqual(rows.count, 2 * 30, "two files of 30 blocks")
        let restarts = zip(rows, rows.dropFirst()).filter { $0.1[0] < $0.0[0] }.count
        XCTAssertEqual(restarts, 1, "the second file's blocks after the first's: \(rows.map { Int($0[0]) })")
        let gaps = zip(rows, rows.dropFirst()).map { $0.1[1] - $0.0[1] }
        XCTAssertGreaterThan(gaps.min() ?? 0, 0.05, "no blocks 1 ms apart: \(gaps)")
    }
}

extension AnalyzeTests {
    /// The bit meter and the pair levels through `analyze --stream` on real files: a stereo
    /// 1 kHz sine (left at half full scale, right at a quarter) as 32-bit float, and converted
    /// by sox (no dither) to 24 and 16 bits: the word depth each file has, the balance +6.02 dB,
    /// mid (L+R)/2 at −11.53 dBFS and side (L−R)/2 at −21.07 dBFS.
    func testBitsAndStereoReadingsOnRealFiles() throws {
        let n = 96000
        let left = (0..<n).map { i in Float(0.5 * sin(2 * Double.pi * 1000 * Double(i) / 48000)) }
        let float = try file("float.wav", [left, left.map { $0 / 2 }])
        var depths: [String: Int] = [:]
        for (name, bits) in [("float", 0), ("w24", 24), ("w16", 16)] {
            let path: String
            if bits == 0 {
                path = float
            } else {
                path = directory.appendingPathComponent("\(name).wav").path
                XCTAssertEqual(try Executables.run("sox", [float, "-D", "-b", String(bits), "-e", "signed-integer", path]).status, 0)
            }
            let last = try XCTUnwrap(try stream(path, ["--send", "bits,stereo"]).last)
            let ch = try XCTUnwrap((last["channels"] as? [[String: Any]])?.first, "\(last)")
            depths[name] = ch["bit_depth"] as? Int
            XCTAssertEqual(ch["quantised_bits"] as? Int, bits, name)
            XCTAssertEqual(ch["headroom_bits"] as? Int, 0, "\(name): the left leg reaches half full scale")
            XCTAssertLessThan(try XCTUnwrap(ch["dc_dbfs"] as? Double), -70, "\(name): no DC offset")
            XCTAssertEqual(try XCTUnwrap((last["balance_db"] as? [Double])?.first), 20 * log10(2.0), accuracy: 0.05, name)
            XCTAssertEqual(try XCTUnwrap((last["mid_dbfs"] as? [Double])?.first), 20 * log10(0.375 / 2.0.squareRoot()), accuracy: 0.05, name)
            XCTAssertEqual(try XCTUnwrap((last["side_dbfs"] as? [Double])?.first), 20 * log10(0.125 / 2.0.squareRoot()), accuracy: 0.05, name)
        }
        // The float file's samples are a float's 24 significant bits each, the smallest (near a
        // zero crossing, 0.065) reaching 2^-27: 27 bits, beyond what 24-bit words have.
        XCTAssertEqual(depths, ["float": 27, "w24": 24, "w16": 16])

        // A DC offset of 1 % of full scale under the tone reads −40 dBFS.
        let long = (0..<(4 * n)).map { i in left[i % n] }
        let offset = try file("dc.wav", [long.map { $0 * 0.9 + 0.01 }, long])
        let ch = try XCTUnwrap((try stream(offset, ["--send", "bits"]).last?["channels"] as? [[String: Any]])?.first)
        XCTAssertEqual(try XCTUnwrap(ch["dc_dbfs"] as? Double), -40, accuracy: 0.3)
    }
}
