import DSP
import Outputs

/// The LV2 plugin's forms and ports, derived from the reading table (`Readings.table`): each
/// control output is one field of one reading, for one subject (a channel, a pair, the
/// programme), its unit and range from the field's unit. The plugin (`JackVULV2`) reads its
/// values through the same fields; the Turtle (`manifest.ttl`, `jackvu.ttl`) is written from
/// this description by `jackvu-lv2-ttl`, never by hand.
public enum LV2Description {
    /// The plugin's URIs share this prefix; `#mono`, `#stereo`, `#5.1` name the forms.
    public static let uriBase = "urn:jackvu:lv2"

    /// A form of the plugin: its channels and their loudness weighting.
    public struct Form: Sendable, Equatable {
        public let name: String
        public let channels: Int
        public let layout: ChannelLayout
        public var uri: String { LV2Description.uriBase + ":" + name }
        /// Loudspeaker names for port names (`M`, `L`, `R`, `C`, `LFE`, `Ls`, …: BS.2051's).
        public var speakers: [String] { layout.loudspeakers.map(\.label) }
    }

    public static let forms = [
        Form(name: "mono", channels: 1, layout: .mono),
        Form(name: "stereo", channels: 2, layout: .stereo),
        Form(name: "5.1", channels: 6, layout: .surround51),
        Form(name: "7.1.4", channels: 12, layout: .surround714),
    ]

    /// The readings a plugin form outputs, by JSON key (their fields in `Readings.table`), in
    /// port order: per channel, per pair, per programme.
    public static let channelKeys = ["peak_dbfs", "rms_dbfs", "true_peak_dbtp", "max_true_peak_dbtp", "dpeak_dbfs", "vu", "ppm", "k_db"]
    public static let pairKeys = ["correlation"]
    public static let programmeKeys = [
        "momentary_lufs", "short_term_lufs", "integrated_lufs", "range_lu", "max_momentary_lufs", "max_short_term_lufs", "plr_lu",
        "max_true_peak_dbtp", "duration_s", "paused", "relative_integrated_lu", "relative_short_term_lu", "state",
    ]

    /// The `target` control's choices: 0 none, then the profiles (`LoudnessTarget.profiles`).
    public static let targetChoices = ["none"] + LoudnessTarget.profiles.map(\.profile)
    /// The `state` output's values: −1 without a target, then each state's place.
    public static let states = LoudnessTarget.State.allCases.map(\.rawValue)

    /// What a port is.
    public enum Kind: Sendable, Equatable {
        case audioIn(channel: Int)
        case audioOut(channel: Int)
        /// A reading's field for a subject (a channel, a pair or the programme: 0).
        case reading(key: String, subject: Int)
        /// A trigger: the measurements start again (as SIGHUP).
        case reset
        /// Set by the host (`lv2:designation lv2:freeWheeling`) while it runs the plugin
        /// faster than real time (an export, an offline render): `run()` then waits for the
        /// analysis to make room rather than leave audio unmeasured.
        case freeWheeling
        /// A toggle: the loudness integration pauses while it is on.
        case pause
        /// The target profile (`targetChoices`' index) and a tolerance that replaces the
        /// profile's (0: the profile's own), LU.
        case target, tolerance
        /// A target loudness of one's own, LUFS (as `--target -16`: tolerance 1 LU, maximum
        /// true peak −1 dBTP, unless the controls say otherwise), in place of the profile; 0:
        /// the profile's.
        case targetLUFS
        /// The largest true peak permitted, dBTP (as `--max-true-peak`), in place of the
        /// target's; above 0 (its default, +1): the target's own.
        case maxTruePeak
        /// The host's transport (`time:Position` events, an atom sequence) and whether the
        /// loudness integration follows it (a toggle: while the transport stands, it pauses).
        case transport, followTransport
        /// The UDP port on this machine (127.0.0.1) the readings go to as OSC bundles, ten a
        /// second (0: none). A number, so that every host can set it, PipeWire's filter-chain
        /// configuration included.
        case oscPort
        /// An output: 1 while an alarm of this kind is raised (on any channel, pair or the
        /// programme), with `--alarm KIND`'s defaults; 0 otherwise.
        case alarm(AlarmKind)
        /// An output: how many alarms are raised.
        case alarmsActive
    }

    /// The alarms a plugin raises (jackvu's own, with their defaults): those of the audio;
    /// the JACK server's, xruns, overruns and connections are the JACK client's. Pairs' only
    /// where the form has pairs.
    public static func alarmKinds(_ form: Form) -> [AlarmKind] {
        AlarmKind.allCases.filter { $0.scope != .instance && ($0.scope != .pair || !form.layout.pairs.isEmpty) }
    }

    /// The JSON lines file: an `lv2:Parameter` (`atom:Path`) a host sets with `patch:Set` on
    /// the control port and saves with its session (LV2 state).
    public static let jsonParameter = "urn:jackvu:lv2#json"
    /// The loudness log (`--log`'s SQLite file), a parameter as the JSON lines file is.
    public static let logParameter = "urn:jackvu:lv2#log"
    /// OSC destinations anywhere (`--osc`'s URLs, `osc.udp://HOST:PORT`, separated by spaces
    /// or commas): an `atom:String` parameter, set and saved as the paths are; for hosts that
    /// show parameters. `osc_port`, a number every host can set, sends to this machine.
    public static let oscParameter = "urn:jackvu:lv2#osc"

    /// What the plugin computes: levels, true peak, the ballistic meters, correlation,
    /// loudness; no spectrum, pitch or 1/3 octaves (no port shows them).
    public static let features: AnalysisFeatures = [.live, .loudness, .truePeak, .vu, .ppm, .k, .dpeak, .correlation]

    /// The readings the `osc_port` output and the JSON lines file send (`--send`'s names, as
    /// a `--send` selection names them: the table declares each): what the plugin computes,
    /// but the display's own values and the fault labels, which no host of a plugin sets.
    public static let oscKinds = ["peak", "rms", "truepeak", "dpeak", "vu", "ppm", "k", "correlation", "loudness", "plr", "programme", "target", "alarms"]
    /// The status counters the plugin's JSON lines carry (the ones a plugin has: the audio its
    /// analysis fell behind on, the input samples replaced, the OSC datagrams refused).
    public static let statusFields: Set<String> = ["overruns", "nonfinite_samples", "osc_send_failures"]
    /// OSC bundles a second on `osc_port`.
    public static let oscRate = 10

    public struct Port: Sendable, Equatable {
        public let index: Int
        public let symbol: String
        public let name: String
        public let kind: Kind
        public let unit: ReadingUnit?
        public let minimum: Double, maximum: Double, defaultValue: Double
    }

    /// The reading field with JSON key `key` (nil: none; the description's tests check each).
    public static func field(_ key: String, scope: Reading.Scope) -> (Reading, ReadingField)? {
        for reading in Readings.table where reading.scope == scope {
            if let field = reading.fields.first(where: { $0.key == key }) { return (reading, field) }
        }
        return nil
    }

    /// A range that shows a unit's readings (hints for hosts' displays).
    static func range(_ unit: ReadingUnit, key: String) -> (Double, Double) {
        switch unit {
        case .dBFS, .dBTP: return (-120, 6)
        case .LUFS: return (-120, 6)
        case .LU: return key == "range_lu" ? (0, 60) : (-60, 60)
        case .VU: return (-60, 6)
        case .dB: return (-60, 20)
        case .ppmScale: return (-60, 20)
        case .correlation: return (-1, 1)
        case .seconds: return (0, 1e9)
        default: return (0, 1)
        }
    }

    /// A form's ports, in index order: audio in and out, the controls, the readings.
    public static func ports(_ form: Form) -> [Port] {
        var ports: [Port] = []
        func add(_ symbol: String, _ name: String, _ kind: Kind, unit: ReadingUnit? = nil, min: Double = 0, max: Double = 1, def: Double = 0) {
            ports.append(Port(index: ports.count, symbol: symbol, name: name, kind: kind, unit: unit, minimum: min, maximum: max, defaultValue: def))
        }
        let speakers = form.speakers
        for c in 0..<form.channels { add("in_\(c + 1)", "In \(speakers[c])", .audioIn(channel: c)) }
        for c in 0..<form.channels { add("out_\(c + 1)", "Out \(speakers[c])", .audioOut(channel: c)) }
        add("reset", "Reset measurements", .reset)
        add("pause", "Pause integration", .pause)
        add("target", "Loudness target", .target, max: Double(targetChoices.count - 1), def: 1)
        add("tolerance", "Target tolerance (0: the profile's)", .tolerance, unit: .LU, max: 10, def: 0)
        add("target_lufs", "Target loudness (0: the profile's)", .targetLUFS, unit: .LUFS, min: -60, max: 0, def: 0)
        add("max_true_peak", "Maximum true peak (+1: the target's)", .maxTruePeak, unit: .dBTP, min: -20, max: 1, def: 1)
        add("transport", "Transport", .transport)
        add("follow_transport", "Integrate only while the transport rolls", .followTransport)
        add("free_wheeling", "Free-wheeling (set by the host offline)", .freeWheeling)
        add("osc_port", "OSC readings to UDP port on 127.0.0.1 (0: off)", .oscPort, max: 65535, def: 0)
        for key in channelKeys {
            guard let (reading, field) = field(key, scope: .channel) else { continue }
            let (lo, hi) = range(field.unit, key: key)
            for c in 0..<form.channels {
                add("\(key)_\(c + 1)", "\(label(key, reading)) \(speakers[c])", .reading(key: key, subject: c), unit: field.unit, min: lo, max: hi, def: lo)
            }
        }
        let pairs = pairNames(form)
        for key in pairKeys {
            guard let (reading, field) = field(key, scope: .pair) else { continue }
            let (lo, hi) = range(field.unit, key: key)
            for (p, pair) in pairs.enumerated() {
                add("\(key)_\(p + 1)", "\(label(key, reading)) \(pair)", .reading(key: key, subject: p), unit: field.unit, min: lo, max: hi, def: 0)
            }
        }
        for key in programmeKeys {
            guard let (reading, field) = field(key, scope: .programme) else { continue }
            let (lo, hi) = key == "state" ? (-1.0, Double(states.count - 1)) : range(field.unit, key: key)
            add(key, label(key, reading), .reading(key: key, subject: 0), unit: field.unit, min: lo, max: hi, def: key == "state" ? -1 : lo)
        }
        let alarms = alarmKinds(form)
        for kind in alarms { add("alarm_\(kind.rawValue)", "Alarm: \(kind.rawValue)", .alarm(kind)) }
        add("alarms_active", "Alarms raised", .alarmsActive, max: Double(alarms.count * max(form.channels, 1)))
        return ports
    }

    /// A form's correlation pairs: its layout's left/right loudspeaker pairs (L-R, Ls-Rs, …;
    /// the plugin meters its channels as one programme of that layout).
    public static func pairNames(_ form: Form) -> [String] {
        let s = form.speakers
        return form.layout.pairs.map { "\(s[$0.left])-\(s[$0.right])" }
    }

    /// A port's name from its reading: the field's words ("max true peak"), its unit apart.
    static func label(_ key: String, _ reading: Reading) -> String {
        let known = [
            "peak_dbfs": "Sample peak", "rms_dbfs": "RMS", "true_peak_dbtp": "True peak", "max_true_peak_dbtp": "Max true peak",
            "dpeak_dbfs": "Digital peak", "vu": "VU", "ppm": "PPM", "k_db": "K meter", "correlation": "Correlation",
            "momentary_lufs": "Momentary loudness", "short_term_lufs": "Short-term loudness", "integrated_lufs": "Integrated loudness",
            "range_lu": "Loudness range", "max_momentary_lufs": "Max momentary loudness", "max_short_term_lufs": "Max short-term loudness",
            "plr_lu": "Peak-to-loudness ratio", "relative_integrated_lu": "Integrated loudness against the target",
            "relative_short_term_lu": "Short-term loudness against the target", "state": "Target state",
            "duration_s": "Integrated duration", "paused": "Integration paused",
        ]
        return known[key] ?? reading.summary
    }

    // MARK: Turtle

    /// `manifest.ttl`: every form, its binary and its description's file.
    public static func manifest(binary: String) -> String {
        var out = "@prefix lv2: <http://lv2plug.in/ns/lv2core#> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\n"
        for form in forms {
            out += "<\(form.uri)>\n    a lv2:Plugin, lv2:AnalyserPlugin ;\n    lv2:binary <\(binary)> ;\n    rdfs:seeAlso <jackvu.ttl> .\n\n"
        }
        return out
    }

    /// `jackvu.ttl`: each form's name, ports and their properties.
    public static func description() -> String {
        var out = """
            @prefix atom: <http://lv2plug.in/ns/ext/atom#> .
            @prefix doap: <http://usefulinc.com/ns/doap#> .
            @prefix time: <http://lv2plug.in/ns/ext/time#> .
            @prefix urid: <http://lv2plug.in/ns/ext/urid#> .
            @prefix lv2: <http://lv2plug.in/ns/lv2core#> .
            @prefix pprops: <http://lv2plug.in/ns/ext/port-props#> .
            @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
            @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
            @prefix units: <http://lv2plug.in/ns/extensions/units#> .
            @prefix foaf: <http://xmlns.com/foaf/0.1/> .
            @prefix patch: <http://lv2plug.in/ns/ext/patch#> .
            @prefix state: <http://lv2plug.in/ns/ext/state#> .

            <\(jsonParameter)>
                a lv2:Parameter ;
                rdfs:label "JSON lines file" ;
                rdfs:comment "A JSON line of the readings (as jackvu --format json, the osc_port selection) appended to this file once a second" ;
                rdfs:range atom:Path .

            <\(logParameter)>
                a lv2:Parameter ;
                rdfs:label "Loudness log" ;
                rdfs:comment "The loudness log (jackvu --log): an SQLite file of the programme's 100 ms blocks with their peaks, and events, which jackvu report turns into compliance reports" ;
                rdfs:range atom:Path .

            <\(oscParameter)>
                a lv2:Parameter ;
                rdfs:label "OSC destinations" ;
                rdfs:comment "Where OSC bundles of the readings go, \(oscRate) a second (as osc_port's): jackvu --osc URLs, osc.udp://HOST:PORT, separated by spaces or commas" ;
                rdfs:range atom:String .


            """
        for form in forms {
            out += "<\(form.uri)>\n    a lv2:Plugin, lv2:AnalyserPlugin, doap:Project ;\n"
            out += "    doap:name \"jackvu (\(form.name))\" ;\n"
            out += "    doap:license <https://opensource.org/licenses/MIT> ;\n"
            out += "    doap:maintainer [ foaf:name \"jackvu\" ] ;\n"
            out += "    lv2:optionalFeature lv2:hardRTCapable, urid:map, state:mapPath, state:freePath ;\n"
            out += "    lv2:extensionData state:interface ;\n"
            out += "    patch:writable <\(jsonParameter)>, <\(logParameter)>, <\(oscParameter)> ;\n"
            out += "    rdfs:comment \"jackvu's meters: levels, true peak, VU, PPM, K, correlation and EBU R 128 loudness, computed on a thread of its own; the audio passes unchanged.\" ;\n"
            let ports = ports(form)
            out += "    lv2:port " + ports.map { turtle($0) }.joined(separator: " , ") + " .\n\n"
        }
        return out
    }

    static func turtle(_ p: Port) -> String {
        var lines: [String] = []
        switch p.kind {
        case .audioIn: lines.append("a lv2:AudioPort, lv2:InputPort")
        case .audioOut: lines.append("a lv2:AudioPort, lv2:OutputPort")
        case .reset:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:portProperty lv2:toggled, pprops:trigger")
        case .pause:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:portProperty lv2:toggled")
        case .target:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:portProperty lv2:integer, lv2:enumeration")
            lines.append("lv2:scalePoint " + targetChoices.enumerated().map { "[ rdfs:label \"\($0.element)\" ; rdf:value \($0.offset) ]" }.joined(separator: ", "))
        case .tolerance:
            lines.append("a lv2:ControlPort, lv2:InputPort")
        case .targetLUFS:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:scalePoint [ rdfs:label \"the profile's\" ; rdf:value 0.0 ], [ rdfs:label \"EBU R 128\" ; rdf:value -23.0 ], [ rdfs:label \"streaming\" ; rdf:value -14.0 ]")
        case .maxTruePeak:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:scalePoint [ rdfs:label \"the target's\" ; rdf:value 1.0 ]")
        case .oscPort:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:portProperty lv2:integer")
            lines.append("rdfs:comment \"OSC bundles of the readings (jackvu's --send \(oscKinds.joined(separator: ",")), /jackvu/...), \(oscRate) a second, to this UDP port on 127.0.0.1; 0: none\"")
        case .transport:
            lines.append("a atom:AtomPort, lv2:InputPort")
            lines.append("atom:bufferType atom:Sequence")
            lines.append("atom:supports time:Position, patch:Message")
            lines.append("lv2:designation lv2:control")
            lines.append("lv2:portProperty lv2:connectionOptional")
        case .followTransport:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:portProperty lv2:toggled")
        case .freeWheeling:
            lines.append("a lv2:ControlPort, lv2:InputPort")
            lines.append("lv2:designation lv2:freeWheeling")
            lines.append("lv2:portProperty lv2:toggled, pprops:notOnGUI")
        case .alarm(let kind):
            lines.append("a lv2:ControlPort, lv2:OutputPort")
            lines.append("lv2:portProperty lv2:toggled")
            lines.append("rdfs:comment \"1 while jackvu's \(kind.rawValue) alarm is raised (its --alarm defaults: \(kind.levelMeaning))\"")
        case .alarmsActive:
            lines.append("a lv2:ControlPort, lv2:OutputPort")
            lines.append("lv2:portProperty lv2:integer")
        case .reading(let key, _) where key == "paused":
            lines.append("a lv2:ControlPort, lv2:OutputPort")
            lines.append("lv2:portProperty lv2:toggled")
        case .reading(let key, _) where key == "state":
            lines.append("a lv2:ControlPort, lv2:OutputPort")
            lines.append("lv2:portProperty lv2:integer, lv2:enumeration")
            lines.append("lv2:scalePoint " + (["none"] + states).enumerated().map { "[ rdfs:label \"\($0.element)\" ; rdf:value \($0.offset - 1) ]" }.joined(separator: ", "))
        case .reading:
            lines.append("a lv2:ControlPort, lv2:OutputPort")
        }
        lines.append("lv2:index \(p.index)")
        lines.append("lv2:symbol \"\(p.symbol)\"")
        lines.append("lv2:name \"\(p.name)\"")
        switch p.kind {
        case .audioIn, .audioOut, .transport: break
        default:
            lines.append("lv2:default \(number(p.defaultValue))")
            lines.append("lv2:minimum \(number(p.minimum))")
            lines.append("lv2:maximum \(number(p.maximum))")
        }
        if let unit = p.unit, let u = unitTurtle(unit) { lines.append("units:unit \(u)") }
        return "[\n        " + lines.joined(separator: " ;\n        ") + "\n    ]"
    }

    static func number(_ x: Double) -> String { x == x.rounded() ? "\(Int(x)).0" : "\(x)" }

    /// LV2's own units where it has one (dB, Hz), else a unit of the reading's own symbol.
    static func unitTurtle(_ unit: ReadingUnit) -> String? {
        switch unit {
        case .dB: return "units:db"
        case .Hz: return "units:hz"
        case .seconds: return "units:s"
        case .dBFS, .dBTP, .LUFS, .LU, .VU, .ppmScale:
            return "[ a units:Unit ; rdfs:label \"\(unit.rawValue)\" ; units:symbol \"\(unit.rawValue)\" ; units:render \"%.1f \(unit.rawValue)\" ]"
        default: return nil
        }
    }
}
