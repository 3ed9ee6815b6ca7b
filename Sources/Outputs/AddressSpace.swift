import DSP

/// jackvu's OSC address space: how a `Snapshot` becomes OSC messages, as `Readings.table`
/// describes them. The README lists it.
///
/// Per channel N (1-based), in this order (each message's kind, for `--send`, is the last part
/// of its address):
/// - `PREFIX/ch/N/peak f` — sample peak of the analysis block, dBFS
/// - `PREFIX/ch/N/rms f` — RMS of the analysis block, dBFS
/// - `PREFIX/ch/N/level f` — display level 0 ... 1 (RMS, instant rise, falls at `--fall`)
/// - `PREFIX/ch/N/hold f` — peak-hold display value 0 ... 1 (held `--hold` s, then falls)
/// - `PREFIX/ch/N/meter f` — the value on `meter_N` (per `--meter`), 0 … 1
/// - `PREFIX/ch/N/truepeak ff` — true peak since the last update and since start/reset, dBTP
/// - `PREFIX/ch/N/dpeak fi` — digital peak with hold and fall (dBFS), clips since start/reset
/// - `PREFIX/ch/N/vu f` — VU reading (IEC 60268-17), VU
/// - `PREFIX/ch/N/ppm f` — PPM reading on the `--ppm` type's scale
/// - `PREFIX/ch/N/k f` — K-System reading, dB on the K-`--k-scale` scale
/// - `PREFIX/ch/N/pitch fsff` — the note played (YIN): Hz, note, cents, confidence 0 … 1;
///   `0 "-" 0 CONFIDENCE` when no note is named (silence, noise, low confidence)
/// - `PREFIX/ch/N/peakfreq fsf` — FFT peak frequency (Hz), its note, cents; `0 "-" 0` for
///   silence, note `-` below 30 Hz
/// - `PREFIX/ch/N/bars f…` — the spectrum bars, 0 ... 1, low to high
/// - `PREFIX/ch/N/thirds f…` — 1/3-octave band levels 25 Hz … 20 kHz (below Nyquist), dBFS
///
/// Then for each channel pair P = (1, 2), (3, 4), …: `PREFIX/pair/P/correlation f`, −1 … +1
/// (without `--programme`).
/// Then per programme (EBU R 128), at `PREFIX/loudness` for the default programme and at
/// `PREFIX/programme/NAME` for each of `--programme`: `…/momentary f`, `…/shortterm f`,
/// `…/integrated f` (LUFS), `…/range f` (LU), `…/max_momentary f`, `…/max_shortterm f`,
/// `…/plr f` (LU), `…/max_truepeak f` (dBTP), `…/duration f` (s), `…/paused i`, and with a
/// target `…/relative fff` (LU) and `…/state ssfff`; then a named programme's loudspeaker
/// pairs, `PREFIX/programme/NAME/pair/L-R/correlation f`.
///
/// Then once: `PREFIX/status iiiiiiiiiiii` — sample rate (Hz), xruns, overruns (process cycles
/// whose audio was dropped because analysis fell behind), skipped updates (a slow output),
/// process cycles, OSC datagrams not sent, packets dropped on the `osc` port, control packets
/// ignored, server connected (1 or 0), reconnects, non-finite input samples, inputs connected
/// (and before it, while the server is stalled or gone, `PREFIX/server s`). Then `PREFIX/callback fff` — mean, 99th percentile (to a factor of two) and
/// maximum time spent in the process callback per cycle since the start, in µs.
public struct AddressSpace: Sendable {
    public let prefix: String
    /// The kinds of message to make (`--send`).
    public var kinds: MessageKinds
    /// Readings (by kind) of which only these fields are sent: a host that has only some of
    /// them (the LV2 plugin's `status`: no server, cycles or connections), as `JSONLines`.
    public var onlyFields: [MessageKind: Set<String>]

    public init(prefix: String, kinds: MessageKinds = .all, onlyFields: [MessageKind: Set<String>] = [:]) {
        self.prefix = prefix
        self.kinds = kinds
        self.onlyFields = onlyFields
    }

    /// The messages for one snapshot of the live client. Not real-time safe (allocates).
    public func messages(for snapshot: Snapshot) -> [OSCMessage] {
        var out = analysisMessages(for: snapshot)
        for reading in selected(.instance) {
            append(reading, subjects: 1, base: { _ in prefix }, snapshot, to: &out)
        }
        // Each alarm change since the last update: PREFIX/alarm sssfs — kind, subject,
        // "raised" or "cleared", the value (in the kind's unit), the time (ISO 8601, UTC).
        if kinds.contains(.alarms) {
            for e in snapshot.alarms.fresh {
                out.append(OSCMessage(prefix + "/alarm", [
                    .string(e.kind.rawValue), .string(e.subject), .string(e.state), .float(Float(e.value)),
                    .string(AlarmEvent.iso8601(e.unixTime)),
                ]))
            }
        }
        return out
    }

    /// The analysis messages of a snapshot (no status): per channel, pairs, loudness.
    public func analysisMessages(for snapshot: Snapshot) -> [OSCMessage] {
        var out: [OSCMessage] = []
        out.reserveCapacity(snapshot.channels.count * 14 + snapshot.correlations.count + 8)
        let perChannel = selected(.channel)
        for i in snapshot.channels.indices {
            let base = "\(prefix)/ch/\(i + 1)"
            for reading in perChannel { append(reading, subject: i, base: base, snapshot, to: &out) }
        }
        let pairReadings = selected(.pair)
        for p in snapshot.pairs.indices where snapshot.pairs[p].programme == nil {
            for reading in pairReadings { append(reading, subject: p, base: "\(prefix)/pair/\(snapshot.pairs[p].label)", snapshot, to: &out) }
        }
        let perProgramme = selected(.programme)
        for p in snapshot.programmes.indices {
            let base = programmeBase(snapshot.programmes[p].name)
            for reading in perProgramme { append(reading, subject: p, base: base, snapshot, to: &out) }
            // Its loudspeaker pairs: PREFIX/programme/NAME/pair/L-R/correlation.
            for q in snapshot.pairs.indices where snapshot.pairs[q].programme == p {
                for reading in pairReadings { append(reading, subject: q, base: "\(base)/pair/\(snapshot.pairs[q].label)", snapshot, to: &out) }
            }
        }
        return out
    }

    /// Where programme `name`'s messages go: `PREFIX/loudness` for the default programme
    /// (""), `PREFIX/programme/NAME` for one of `--programme`.
    public func programmeBase(_ name: String) -> String {
        name.isEmpty ? prefix + "/loudness" : "\(prefix)/programme/\(name)"
    }

    /// The selected readings of a scope, in the table's order.
    private func selected(_ scope: Reading.Scope) -> [Reading] {
        Readings.table.indices.compactMap { i in
            let r = Readings.table[i]
            return r.scope == scope && kinds.contains(MessageKind(index: i)) ? r : nil
        }
    }

    private func append(_ reading: Reading, subjects: Int, base: (Int) -> String, _ s: Snapshot, to out: inout [OSCMessage]) {
        for subject in 0..<subjects { append(reading, subject: subject, base: base(subject), s, to: &out) }
    }

    /// A reading's messages for one subject: a message whose arguments are all empty arrays
    /// (no 1/3-octave bands at this rate) or one of whose fields has no value yet is left out.
    private func append(_ reading: Reading, subject: Int, base: String, _ s: Snapshot, to out: inout [OSCMessage]) {
        let only = onlyFields.isEmpty ? nil : MessageKind(rawValue: reading.kind).flatMap { onlyFields[$0] }
        messages: for message in reading.messages {
            var arguments: [OSCArgument] = []
            for field in message.fields where field.wire != .jsonOnly && only.map({ $0.contains(field.key) }) ?? true {
                switch field.value(s, subject) {
                case .float(let x): arguments.append(.float(x))
                case .double(let x): arguments.append(.float(Float(x)))
                case .int(let n): arguments.append(.int(Int32(clamping: n)))
                case .wrappingInt(let n): arguments.append(.int(Int32(truncatingIfNeeded: n)))
                case .bool(let b): arguments.append(.int(b ? 1 : 0))
                case .note(let n): arguments.append(.string(n?.name ?? "-"))
                case .text(let s): arguments.append(.string(s))
                case .floats(let xs): arguments.append(contentsOf: xs.map { .float($0) })
                case .counters, .alarmEvents: break  // JSON only
                case .strings(let xs): arguments.append(contentsOf: xs.map { .string($0) })
                case .missing: continue messages
                }
            }
            if arguments.isEmpty { continue }
            out.append(OSCMessage(base + "/" + message.name, arguments))
        }
    }
}
