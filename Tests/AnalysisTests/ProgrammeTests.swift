import DSP
import Foundation
import Analysis
import Settings
import Outputs
import XCTest

/// Loudness programmes (`--programme`), their layouts' weights and pairs, targets, pause and
/// the transport gate, without JACK: the analysis fed directly.
final class ProgrammeTests: XCTestCase {
    private func sine(_ f: Double, dBFS: Double, seconds: Double, rate: Int = 48000) -> [Float] {
        let a = pow(10, dBFS / 20)
        return (0..<Int(seconds * Double(rate))).map { Float(a * sin(2 * Double.pi * f * Double($0) / Double(rate))) }
    }

    /// Feeds every channel (4096-frame chunks) and returns the analyzer.
    @discardableResult
    private func feed(_ analyzer: Analyzer, _ channels: [[Float]], chunk: Int = 4096) -> Analyzer {
        let total = channels[0].count
        let buffers = channels.map { c in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: total)
            p.initialize(from: c, count: total)
            return p
        }
        defer { for b in buffers { b.deallocate() } }
        var offset = 0
        while offset < total {
            let n = min(chunk, total - offset), at = offset
            analyzer.append(frames: n, from: { UnsafePointer(buffers[$0] + at) }) {}
            offset += n
        }
        return analyzer
    }

    private func configuration(channels: Int, _ programmes: [String], targets: [String] = []) throws -> Configuration {
        var c = Configuration()
        c.channels = channels
        c.programmes = try programmes.map { try Programme.parse($0) }
        c.targets = try targets.map { try TargetChoice.parse($0) }
        try c.validate()
        return c
    }

    func testProgrammesParseAsWrittenAndRefuseWhatCannotBeMeant() throws {
        let main = try Programme.parse("main=1-6:5.1")
        XCTAssertEqual(main.channels, [0, 1, 2, 3, 4, 5])
        XCTAssertEqual(main.weights, [1, 1, 1, 0, 1.41, 1.41])
        XCTAssertEqual(main.pairs.map(\.label), ["L-R", "Ls-Rs"])
        let stereo = try Programme.parse("stereo=7,8")
        XCTAssertEqual(stereo.channels, [6, 7])
        XCTAssertEqual(stereo.layout, .stereo, "two channels without a layout: stereo")
        XCTAssertEqual(try Programme.parse("ad=9:dual-mono").weights, [2], "dual mono: +3.01 dB")
        let mix = try Programme.parse("mix=1-2,5:weights=1,1,0.5")
        XCTAssertEqual(mix.channels, [0, 1, 4])
        XCTAssertEqual(mix.weights, [1, 1, 0.5])
        XCTAssertEqual(mix.pairs.map(\.label), ["1-2"])
        for bad in ["main", "=1-2", "a b=1-2", "main=0-2", "main=3-1", "main=1-2,2", "main=1-3:5.1", "main=1-2:7.2",
                    "main=1-2:weights=1", "main=1-2:weights=0,0", "main=1-2:weights=1,x", "main=1-1100", "programme=1-2"] {
            XCTAssertThrowsError(try Programme.parse(bad), bad) { error in
                let text = (error as? ConfigurationError)?.description ?? ""
                XCTAssertTrue(text.hasPrefix("--programme '\(bad)': "), text)
                XCTAssertFalse(text.contains("\n"), text)
            }
        }
        // Against the inputs and each other.
        XCTAssertThrowsError(try configuration(channels: 8, ["main=1-6:5.1", "main=7-8"]))
        XCTAssertThrowsError(try configuration(channels: 6, ["main=1-6:5.1", "stereo=7-8"])) { error in
            XCTAssertEqual((error as? ConfigurationError)?.description, "--programme 'stereo': channel 7 does not exist (there are 6)")
        }
        XCTAssertThrowsError(try configuration(channels: 2, ["a=1-2"], targets: ["b=ebu-r128"]))
        XCTAssertThrowsError(try TargetChoice.parse("ebu-r129")) { error in
            XCTAssertTrue((error as? ConfigurationError)?.description.contains("ebu-r128, ebu-r128-s1, atsc-a85") ?? false)
        }
        XCTAssertThrowsError(try TargetChoice.parse("+5"))
        var c = try configuration(channels: 2, [])
        c.toleranceLU = 1
        XCTAssertThrowsError(try c.validate(), "--tolerance without a --target")
    }

    /// ITU-R BS.1770-4's weights by position: 1.41 from 60° to 120° azimuth below 30°
    /// elevation, LFE 0, 1.0 otherwise. Checked through the meter: a 1 kHz sine at −23 dBFS on
    /// one channel alone reads −26.01 LUFS (−23 − 3.01) plus 10·log10(G).
    func testEachLoudspeakerOf714ReadsTheLevelItsPositionGives() throws {
        let layout = ChannelLayout.surround714
        XCTAssertEqual(layout.loudspeakers.map(\.label), ["L", "R", "C", "LFE", "Lss", "Rss", "Lrs", "Rrs", "Ltf", "Rtf", "Ltb", "Rtb"])
        XCTAssertEqual(layout.weights, [1, 1, 1, 0, 1.41, 1.41, 1, 1, 1, 1, 1, 1], "rear surrounds (±135°) and heights 1.0")
        XCTAssertEqual(layout.pairs.map { "\($0.left)-\($0.right)" }, ["0-1", "4-5", "6-7", "8-9", "10-11"])
        XCTAssertEqual(ChannelLayout.surround71.weights, [1, 1, 1, 0, 1.41, 1.41, 1, 1])
        let c = try configuration(channels: 12, ["room=1-12:7.1.4"])
        let tone = sine(1000, dBFS: -23, seconds: 4)
        let silence = [Float](repeating: 0, count: tone.count)
        for k in 0..<12 {
            let analyzer = try Analyzer(configuration: c, sampleRate: 48000, features: .summary)
            feed(analyzer, (0..<12).map { $0 == k ? tone : silence })
            let integrated = analyzer.finalLoudness(programme: 0).integrated
            let weight = layout.weights[k]
            if weight == 0 {
                XCTAssertEqual(integrated, LoudnessMeter.floor, "LFE is left out")
            } else {
                XCTAssertEqual(integrated, -23 - 3.0103 + 10 * log10(weight), accuracy: 0.05, "\(layout.loudspeakers[k].label)")
            }
        }
    }

    /// EBU Tech 3341 case 6 (5.0: L, R −28 dBFS, C −24, Ls, Rs −30; 1 kHz) as a 5.1 programme
    /// with a loud 50 Hz tone on LFE, beside a stereo programme at −23 LUFS: both read −23.0
    /// ± 0.1 LUFS, and silencing the stereo one changes nothing of the 5.1 one.
    func testA51ProgrammeAndAStereoOneOnOneBusReadApart() throws {
        let c = try configuration(channels: 8, ["main=1-6:5.1", "stereo=7-8"], targets: ["ebu-r128"])
        let seconds = 12.0
        let lr = sine(1000, dBFS: -28, seconds: seconds), centre = sine(1000, dBFS: -24, seconds: seconds)
        let lfe = sine(50, dBFS: -6, seconds: seconds), surround = sine(1000, dBFS: -30, seconds: seconds)
        let stereo = sine(1000, dBFS: -23, seconds: seconds), silence = [Float](repeating: 0, count: lr.count)
        let both = try Analyzer(configuration: c, sampleRate: 48000, features: .summary)
        feed(both, [lr, lr, centre, lfe, surround, surround, stereo, stereo])
        XCTAssertEqual(both.programmeNames, ["main", "stereo"])
        XCTAssertEqual(both.finalLoudness(programme: 0).integrated, -23, accuracy: 0.1, "5.1, Tech 3341 case 6")
        XCTAssertEqual(both.finalLoudness(programme: 1).integrated, -23, accuracy: 0.1, "stereo")
        let alone = try Analyzer(configuration: c, sampleRate: 48000, features: .summary)
        feed(alone, [lr, lr, centre, lfe, surround, surround, silence, silence])
        XCTAssertEqual(alone.finalLoudness(programme: 0).integrated, both.finalLoudness(programme: 0).integrated, accuracy: 1e-9)
        XCTAssertEqual(alone.finalLoudness(programme: 1).integrated, LoudnessMeter.floor)

        // Live, through the outputs: each programme at its own address and JSON key, with its
        // pairs, target and state.
        let live = try Analyzer(configuration: c, sampleRate: 48000)
        feed(live, [lr, lr, centre, lfe, surround, surround, stereo, stereo].map { Array($0.prefix(48000 * 5)) })
        var s = live.makeSnapshot()
        live.write(into: &s)
        let messages = AddressSpace(prefix: "/jackvu").analysisMessages(for: s)
        func value(_ address: String, _ i: Int = 0) -> OSCArgument? {
            messages.first { $0.address == address }.flatMap { i < $0.arguments.count ? $0.arguments[i] : nil }
        }
        guard case .float(let shortTerm)? = value("/jackvu/programme/stereo/shortterm") else { return XCTFail("\(messages.map(\.address))") }
        XCTAssertEqual(Double(shortTerm), -23, accuracy: 0.1)
        XCTAssertEqual(value("/jackvu/programme/main/state"), .string("within"))
        XCTAssertEqual(value("/jackvu/programme/main/state", 1), .string("ebu-r128"))
        guard case .float(let relative)? = value("/jackvu/programme/main/relative", 1) else { return XCTFail("relative") }
        XCTAssertEqual(Double(relative), 0, accuracy: 0.1, "short-term relative to −23 LUFS")
        guard case .float(let correlation)? = value("/jackvu/programme/main/pair/Ls-Rs/correlation") else { return XCTFail("pairs") }
        XCTAssertEqual(Double(correlation), 1, accuracy: 0.01)
        XCTAssertNil(value("/jackvu/loudness/momentary"), "no default programme beside named ones")
        XCTAssertNil(value("/jackvu/pair/1/correlation"), "programmes decide the pairs")
        let json = JSONLines().line(for: s)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let programmes = try XCTUnwrap(object["programmes"] as? [String: [String: Any]])
        XCTAssertEqual(programmes["main"]?["state"] as? String, "within")
        XCTAssertEqual((programmes["main"]?["correlation"] as? [String: Double])?.keys.sorted(), ["L-R", "Ls-Rs"])
        XCTAssertEqual(programmes["stereo"]?["short_term_lufs"] as? Double ?? 0, -23, accuracy: 0.1)
    }

    /// Each profile's state on tones at known levels, the custom target, and the readings
    /// relative to the target.
    func testTargetsGiveStatesAsThePublishedFiguresSay() throws {
        func state(_ profile: String, integrated: Double, maxShortTerm: Double = -30, truePeak: Double = -10) -> String {
            LoudnessTarget.profile(profile)!.state(integratedLUFS: integrated, maxShortTermLUFS: maxShortTerm, maxTruePeakDBTP: truePeak).rawValue
        }
        XCTAssertEqual(state("ebu-r128", integrated: -23.4), "within")
        XCTAssertEqual(state("ebu-r128", integrated: -22.3), "above")
        XCTAssertEqual(state("ebu-r128", integrated: -23.7), "below")
        XCTAssertEqual(state("ebu-r128", integrated: -23, truePeak: -0.9), "true-peak-over")
        XCTAssertEqual(state("ebu-r128", integrated: LoudnessMeter.floor), "pending")
        XCTAssertEqual(state("ebu-r128-s1", integrated: -23, maxShortTerm: -17.5), "short-term-over")
        XCTAssertEqual(state("ebu-r128", integrated: -23, maxShortTerm: -17.5), "within", "R 128 itself sets no short-term limit")
        XCTAssertEqual(state("atsc-a85", integrated: -22.2), "within")
        XCTAssertEqual(state("atsc-a85", integrated: -24, truePeak: -1.5), "true-peak-over", "A/85: −2 dBTP")
        XCTAssertEqual(state("aes-streaming", integrated: -16.2), "within")
        XCTAssertEqual(state("aes-streaming", integrated: -20.4), "below")
        XCTAssertEqual(state("spotify", integrated: -14.5), "within")
        XCTAssertEqual(state("youtube", integrated: -12.5), "above")
        XCTAssertEqual(state("apple-music", integrated: -16), "within")

        // Through the analysis and the configuration: a −20 LUFS tone (stereo, −20 dBFS each).
        let tone = sine(1000, dBFS: -20, seconds: 6)
        for (targets, tolerance, expected, relative) in [
            (["ebu-r128"], nil, "above", 3.0), (["atsc-a85"], nil, "above", 4.0), (["aes-streaming"], nil, "within", -2.0),
            (["-16"], nil, "below", -4.0), (["-19"], 1.5, "within", -1.0), (["spotify", "-20"], nil, "within", 0.0),
        ] as [([String], Double?, String, Double)] {
            var c = try configuration(channels: 2, [], targets: targets)
            c.toleranceLU = tolerance
            try c.validate()
            let a = try Analyzer(configuration: c, sampleRate: 48000)
            feed(a, [tone, tone])
            var s = a.makeSnapshot()
            a.write(into: &s)
            XCTAssertEqual(s.state(programme: 0)?.rawValue, expected, "\(targets)")
            let messages = AddressSpace(prefix: "/jackvu").analysisMessages(for: s)
            let rel = messages.first { $0.address == "/jackvu/loudness/relative" }
            guard case .float(let i)? = rel?.arguments.last else { return XCTFail("no relative in \(messages.map(\.address))") }
            XCTAssertEqual(Double(i), relative, accuracy: 0.1, "\(targets): integrated relative to the target")
        }
        // Without a target, no relative reading or state: the messages are left out.
        let plain = try Analyzer(configuration: try configuration(channels: 2, []), sampleRate: 48000)
        feed(plain, [tone, tone])
        var s = plain.makeSnapshot()
        plain.write(into: &s)
        let addresses = AddressSpace(prefix: "/jackvu").analysisMessages(for: s).map(\.address)
        XCTAssertFalse(addresses.contains("/jackvu/loudness/state"))
        XCTAssertTrue(addresses.contains("/jackvu/loudness/duration"))
    }

    /// A paused programme leaves its audio out (its readings hold, its duration stops), and
    /// `--follow-transport` leaves out exactly the frames in which the transport stood: a loud
    /// stretch while stopped changes nothing; `--reset-at-zero` restarts at a roll from 0.
    func testPauseAndTheTransportGateLeaveOutExactlyTheirFrames() throws {
        let rate = 48000
        var c = try configuration(channels: 2, ["a=1", "b=2"])
        let quiet = sine(1000, dBFS: -30, seconds: 3), loud = sine(1000, dBFS: -6, seconds: 2)
        let a = try Analyzer(configuration: c, sampleRate: rate)
        feed(a, [quiet, quiet])
        a.setPaused(true, programme: 0)
        feed(a, [loud, loud])
        a.setPaused(false, programme: 0)
        feed(a, [quiet, quiet])
        XCTAssertEqual(a.measuredSeconds(programme: 0), 6, accuracy: 0.011, "paused: 2 s left out")
        XCTAssertEqual(a.measuredSeconds(programme: 1), 8, accuracy: 0.011)
        XCTAssertEqual(a.finalLoudness(programme: 0).integrated, -30 - 3.01, accuracy: 0.05)
        XCTAssertGreaterThan(a.finalLoudness(programme: 1).integrated, -20)

        // The transport as the ring's extra channel: 1.5 s rolling, 1 s stopped (loud), 1.5 s
        // rolling; chunks of 256 frames (JACK periods) cut across nothing but whole periods.
        c.followTransport = true
        let g = try Analyzer(configuration: c, sampleRate: rate)
        var gate: [Float] = [], signal: [Float] = []
        for (k, (frames, value)) in [(72000, Float(1)), (48000, Float(0)), (72000, Float(1))].enumerated() {
            gate += [Float](repeating: value, count: frames)
            signal += sine(1000, dBFS: k == 1 ? -6 : -30, seconds: Double(frames) / Double(rate))
        }
        feed(g, [signal, signal, gate], chunk: 256)
        XCTAssertEqual(g.measuredSeconds(programme: 0), 3, accuracy: 0.011, "only the rolling frames")
        XCTAssertEqual(g.finalLoudness(programme: 0).integrated, -30 - 3.01, accuracy: 0.05, "the loud stop left out")
        var s = g.makeSnapshot()
        g.write(into: &s)
        XCTAssertFalse(s.programmes[0].paused, "rolling at the end")

        c.resetAtZero = true
        let r = try Analyzer(configuration: c, sampleRate: rate)
        var restart = [Float](repeating: 1, count: 96000)
        for i in 48000..<(48000 + 256) { restart[i] = 2 }  // the first period of a roll from 0
        let tone = sine(1000, dBFS: -30, seconds: 2)
        feed(r, [tone, tone, restart], chunk: 256)
        XCTAssertEqual(r.measuredSeconds(programme: 0), 1, accuracy: 0.011, "reset where the roll from 0 began")
    }
}
