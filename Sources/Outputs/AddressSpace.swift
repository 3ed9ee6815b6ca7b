import DSP

/// jackvu's OSC address space: how a `Snapshot` becomes OSC messages. The README lists it.
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
/// Then for each channel pair P = (1, 2), (3, 4), …: `PREFIX/pair/P/correlation f`, −1 … +1.
/// Then the programme loudness (EBU R 128): `PREFIX/loudness/momentary f`, `…/shortterm f`,
/// `…/integrated f` (LUFS), `…/range f` (LU), `…/max_momentary f`, `…/max_shortterm f`.
///
/// Then once: `PREFIX/status iiiiiiiiiiii` — sample rate (Hz), xruns, overruns (process cycles
/// whose audio was dropped because analysis fell behind), skipped updates (a slow output),
/// process cycles, OSC datagrams not sent, packets dropped on the `osc` port, control packets
/// ignored, server connected (1 or 0), reconnects, non-finite input samples, inputs connected. Then `PREFIX/callback fff` — mean, 99th percentile (to a factor of two) and
/// maximum time spent in the process callback per cycle since the start, in µs.
public struct AddressSpace: Sendable {
    public let prefix: String
    /// The kinds of message to make (`--send`).
    public var kinds: MessageKinds

    public init(prefix: String, kinds: MessageKinds = .all) {
        self.prefix = prefix
        self.kinds = kinds
    }

    /// The messages for one snapshot of the live client. Not real-time safe (allocates).
    public func messages(for snapshot: Snapshot) -> [OSCMessage] {
        var out = analysisMessages(for: snapshot)
        let s = snapshot.status
        if kinds.contains(.status) {
            out.append(OSCMessage(prefix + "/status", [
                .int(Int32(clamping: snapshot.sampleRate)), .int(Int32(clamping: s.xruns)),
                .int(Int32(clamping: s.overruns)), .int(Int32(clamping: s.outputSkipped)),
                .int(Int32(truncatingIfNeeded: s.cycles)), .int(Int32(clamping: s.oscSendFailures)),
                .int(Int32(clamping: s.oscPortDropped)), .int(Int32(clamping: s.controlRejected)),
                .int(s.serverConnected ? 1 : 0), .int(Int32(clamping: s.reconnects)),
                .int(Int32(clamping: s.nonFiniteSamples)), .int(Int32(clamping: s.inputsConnected)),
            ]))
        }
        if kinds.contains(.callback) {
            out.append(OSCMessage(prefix + "/callback", [
                .float(s.callbackMeanMicroseconds), .float(s.callbackP99Microseconds),
                .float(s.callbackMaxMicroseconds),
            ]))
        }
        return out
    }

    /// The analysis messages of a snapshot (no status): per channel, pairs, loudness.
    public func analysisMessages(for snapshot: Snapshot) -> [OSCMessage] {
        var out: [OSCMessage] = []
        out.reserveCapacity(snapshot.channels.count * 14 + snapshot.correlations.count + 8)
        let k = kinds
        for (i, ch) in snapshot.channels.enumerated() {
            let base = "\(prefix)/ch/\(i + 1)"
            if k.contains(.peak) { out.append(OSCMessage(base + "/peak", [.float(ch.peakDBFS)])) }
            if k.contains(.rms) { out.append(OSCMessage(base + "/rms", [.float(ch.rmsDBFS)])) }
            if k.contains(.level) { out.append(OSCMessage(base + "/level", [.float(ch.level)])) }
            if k.contains(.hold) { out.append(OSCMessage(base + "/hold", [.float(ch.hold)])) }
            if k.contains(.meter) { out.append(OSCMessage(base + "/meter", [.float(ch.meter)])) }
            if k.contains(.truepeak) {
                out.append(OSCMessage(base + "/truepeak", [.float(ch.truePeakDBTP), .float(ch.maxTruePeakDBTP)]))
            }
            if k.contains(.dpeak) {
                out.append(OSCMessage(base + "/dpeak", [.float(ch.heldPeakDBFS), .int(Int32(clamping: ch.clips))]))
            }
            if k.contains(.vu) { out.append(OSCMessage(base + "/vu", [.float(ch.vu)])) }
            if k.contains(.ppm) { out.append(OSCMessage(base + "/ppm", [.float(ch.ppm)])) }
            if k.contains(.k) { out.append(OSCMessage(base + "/k", [.float(ch.k)])) }
            if k.contains(.pitch) {
                out.append(OSCMessage(base + "/pitch", [
                    .float(Float(ch.pitchHz)), .string(ch.pitchNote?.name ?? "-"),
                    .float(Float(ch.pitchNote?.cents ?? 0)), .float(Float(ch.pitchConfidence)),
                ]))
            }
            if k.contains(.peakfreq) {
                out.append(OSCMessage(base + "/peakfreq", [
                    .float(Float(ch.peakFrequencyHz)), .string(ch.peakNote?.name ?? "-"),
                    .float(Float(ch.peakNote?.cents ?? 0)),
                ]))
            }
            if k.contains(.bars) { out.append(OSCMessage(base + "/bars", ch.bars.map { .float($0) })) }
            if k.contains(.thirds) && !ch.thirds.isEmpty {
                out.append(OSCMessage(base + "/thirds", ch.thirds.map { .float($0) }))
            }
        }
        if k.contains(.correlation) {
            for (p, r) in snapshot.correlations.enumerated() {
                out.append(OSCMessage("\(prefix)/pair/\(p + 1)/correlation", [.float(r)]))
            }
        }
        if k.contains(.loudness) {
            let l = snapshot.loudness
            out.append(OSCMessage(prefix + "/loudness/momentary", [.float(Float(l.momentary))]))
            out.append(OSCMessage(prefix + "/loudness/shortterm", [.float(Float(l.shortTerm))]))
            out.append(OSCMessage(prefix + "/loudness/integrated", [.float(Float(l.integrated))]))
            out.append(OSCMessage(prefix + "/loudness/range", [.float(Float(l.range))]))
            out.append(OSCMessage(prefix + "/loudness/max_momentary", [.float(Float(l.maxMomentary))]))
            out.append(OSCMessage(prefix + "/loudness/max_shortterm", [.float(Float(l.maxShortTerm))]))
        }
        return out
    }
}
