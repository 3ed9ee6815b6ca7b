import DSP

/// The JSON form of an update: one object per line, the same schema for the live client
/// (`jackvu --format json`) and `jackvu analyze --stream --format json`. Keys carry their
/// units (`_dbfs`, `_hz`, `_lufs`, …); a reading that does not exist is `null`; keys of
/// message kinds not selected (`--send`) are left out. The README documents the schema.
public struct JSONLines: Sendable {
    /// The kinds of reading to include.
    public var kinds: MessageKinds

    public init(kinds: MessageKinds = .all) {
        self.kinds = kinds
    }

    /// One update as a JSON object and a newline; `file` leads it when given (analyze).
    /// Not real-time safe (allocates).
    public func line(for s: Snapshot, file: String? = nil) -> String {
        let k = kinds
        func f(_ x: Float) -> String { x.isFinite ? format3(Double(x)) : "null" }
        func d(_ x: Double) -> String { x.isFinite ? format3(x) : "null" }
        func note(_ n: Note?) -> String { n.map { jsonString($0.name) } ?? "null" }
        var out = "{"
        if let file { out += "\"file\": \(jsonString(file)), " }
        out += "\"time_s\": \(d(s.audioTime)), \"sample_rate_hz\": \(s.sampleRate), \"channels\": ["
        for (i, c) in s.channels.enumerated() {
            var fields = ["\"ch\": \(i + 1)"]
            if k.contains(.peak) { fields.append("\"peak_dbfs\": \(f(c.peakDBFS))") }
            if k.contains(.rms) { fields.append("\"rms_dbfs\": \(f(c.rmsDBFS))") }
            if k.contains(.level) { fields.append("\"level\": \(f(c.level))") }
            if k.contains(.hold) { fields.append("\"hold\": \(f(c.hold))") }
            if k.contains(.meter) { fields.append("\"meter\": \(f(c.meter))") }
            if k.contains(.truepeak) {
                fields.append("\"true_peak_dbtp\": \(f(c.truePeakDBTP)), \"max_true_peak_dbtp\": \(f(c.maxTruePeakDBTP))")
            }
            if k.contains(.dpeak) { fields.append("\"dpeak_dbfs\": \(f(c.heldPeakDBFS)), \"clips\": \(c.clips)") }
            if k.contains(.vu) { fields.append("\"vu\": \(f(c.vu))") }
            if k.contains(.ppm) { fields.append("\"ppm\": \(f(c.ppm))") }
            if k.contains(.k) { fields.append("\"k_db\": \(f(c.k))") }
            if k.contains(.pitch) {
                fields.append(
                    "\"pitch_hz\": \(d(c.pitchHz)), \"note\": \(note(c.pitchNote)), "
                        + "\"cents\": \(d(c.pitchNote?.cents ?? 0)), \"pitch_confidence\": \(d(c.pitchConfidence))")
            }
            if k.contains(.peakfreq) {
                fields.append(
                    "\"peakfreq_hz\": \(d(c.peakFrequencyHz)), \"peakfreq_note\": \(note(c.peakNote)), "
                        + "\"peakfreq_cents\": \(d(c.peakNote?.cents ?? 0))")
            }
            if k.contains(.bars) { fields.append("\"bars\": [\(c.bars.map(f).joined(separator: ", "))]") }
            if k.contains(.thirds) { fields.append("\"thirds_dbfs\": [\(c.thirds.map(f).joined(separator: ", "))]") }
            out += (i > 0 ? ", " : "") + "{" + fields.joined(separator: ", ") + "}"
        }
        out += "]"
        if k.contains(.correlation) { out += ", \"correlation\": [\(s.correlations.map(f).joined(separator: ", "))]" }
        if k.contains(.loudness) {
            let l = s.loudness
            out += ", \"loudness\": {\"momentary_lufs\": \(d(l.momentary)), \"short_term_lufs\": \(d(l.shortTerm)), "
                + "\"integrated_lufs\": \(d(l.integrated)), \"range_lu\": \(d(l.range)), "
                + "\"max_momentary_lufs\": \(d(l.maxMomentary)), \"max_short_term_lufs\": \(d(l.maxShortTerm))}"
        }
        if file == nil && k.contains(.status) {
            let t = s.status
            out += ", \"status\": {\"xruns\": \(t.xruns), \"overruns\": \(t.overruns), "
                + "\"skipped_updates\": \(t.outputSkipped), \"cycles\": \(t.cycles), \"buffer_frames\": \(t.bufferFrames), "
                + "\"osc_send_failures\": \(t.oscSendFailures), \"osc_port_dropped\": \(t.oscPortDropped), "
                + "\"control_rejected\": \(t.controlRejected), \"server_connected\": \(t.serverConnected), "
                + "\"reconnects\": \(t.reconnects), \"nonfinite_samples\": \(t.nonFiniteSamples), "
                + "\"inputs_connected\": \(t.inputsConnected)}"
        }
        if file == nil && k.contains(.callback) {
            let t = s.status
            out += ", \"callback_us\": {\"mean\": \(f(t.callbackMeanMicroseconds)), "
                + "\"p99\": \(f(t.callbackP99Microseconds)), \"max\": \(f(t.callbackMaxMicroseconds))}"
        }
        return out + "}\n"
    }
}

/// `x` with three decimals, as JSON and text print it.
public func format3(_ x: Double) -> String { fixed(x, 3) }

/// `x` rounded to `decimals` places, without exponent notation. A value that is not finite
/// prints as `nan`, `inf` or `-inf`, and one too large for exact digits (|x| ≥ 10^15) in
/// Swift's shortest form: no value traps.
public func fixed(_ x: Double, _ decimals: Int) -> String {
    guard x.isFinite else { return x.isNaN ? "nan" : x < 0 ? "-inf" : "inf" }
    guard abs(x) < 1e15 else { return String(x) }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let r = (x * scale).rounded() / scale
    let negative = r < 0
    let whole = Int(abs(r))
    var frac = Int(((abs(r) - Double(whole)) * scale).rounded())
    var w = whole
    if Double(frac) >= scale { w += 1; frac = 0 }
    let fracText = String(frac)
    let padded = String(repeating: "0", count: max(0, decimals - fracText.count)) + fracText
    return (negative && (w != 0 || frac != 0) ? "-" : "") + String(w) + (decimals > 0 ? "." + padded : "")
}

/// `s` safe on one line of a terminal or a log: control characters (a newline that would
/// forge a line, an escape sequence that would drive the terminal) become C-style escapes
/// (`\n`, `\t`, `\r`, `\e`, `\xHH`), and so do the backslash and, with `quote`, the double
/// quote. Names from outside (file names, port patterns, client names) pass through this
/// on their way into any text jackvu prints.
public func escapedForLine(_ s: String, quote: Bool = false) -> String {
    escaped(s, quote: quote) { u in
        switch u {
        case "\r": return "\\r"
        case "\u{1B}": return "\\e"
        default:
            guard u.value < 0x20 || (0x7F...0x9F).contains(u.value) else { return nil }
            let hex = String(u.value, radix: 16)
            return "\\x" + (hex.count < 2 ? "0" : "") + hex
        }
    }
}

/// A JSON string literal.
public func jsonString(_ s: String) -> String {
    "\"" + escaped(s, quote: true) { u in
        guard u.value < 0x20 else { return nil }
        let hex = String(u.value, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    } + "\""
}

/// `s` with the backslash, newline and tab escaped (and the double quote, with `quote`), and
/// every other scalar as `other` says (nil: as it is).
private func escaped(_ s: String, quote: Bool, _ other: (Unicode.Scalar) -> String?) -> String {
    var out = ""
    for u in s.unicodeScalars {
        switch u {
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\"" where quote: out += "\\\""
        default:
            if let replacement = other(u) { out += replacement } else { out.unicodeScalars.append(u) }
        }
    }
    return out
}
