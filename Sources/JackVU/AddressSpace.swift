import Outputs

/// jackvu's OSC address space: how a `Snapshot` becomes OSC messages. The README lists it.
///
/// Per channel N (1-based), in this order:
/// - `PREFIX/ch/N/peak f` — sample peak of the analysis block, dBFS
/// - `PREFIX/ch/N/rms f` — RMS of the analysis block, dBFS
/// - `PREFIX/ch/N/level f` — display level 0 ... 1 (RMS, instant rise, falls at `--fall`);
///   the value on `meter_N`
/// - `PREFIX/ch/N/hold f` — peak-hold display value 0 ... 1 (held `--hold` s, then falls)
/// - `PREFIX/ch/N/pitch fsf` — peak frequency (Hz), note name, deviation (cents);
///   `0 "-" 0` for silence, and note `-` below 30 Hz
/// - `PREFIX/ch/N/bars f…` — the spectrum bars, 0 ... 1, low to high
///
/// Then once: `PREFIX/status iiiii` — sample rate (Hz), xruns, overruns (process cycles whose
/// audio was dropped because analysis fell behind), skipped text updates (slow stdout),
/// process cycles. Then `PREFIX/callback fff` — mean, 99th percentile (to a factor of two)
/// and maximum time spent in the process callback per cycle since the start, in µs.
public struct AddressSpace: Sendable {
    public let prefix: String

    public init(prefix: String) {
        self.prefix = prefix
    }

    /// The messages for one snapshot. Not real-time safe (allocates).
    public func messages(for snapshot: Snapshot) -> [OSCMessage] {
        var out: [OSCMessage] = []
        out.reserveCapacity(snapshot.channels.count * 6 + 2)
        for (i, ch) in snapshot.channels.enumerated() {
            let base = "\(prefix)/ch/\(i + 1)"
            out.append(OSCMessage(base + "/peak", [.float(ch.peakDBFS)]))
            out.append(OSCMessage(base + "/rms", [.float(ch.rmsDBFS)]))
            out.append(OSCMessage(base + "/level", [.float(ch.level)]))
            out.append(OSCMessage(base + "/hold", [.float(ch.hold)]))
            let cents = ch.note.map { Float($0.cents) } ?? 0
            out.append(OSCMessage(base + "/pitch", [
                .float(Float(ch.pitchHz)), .string(ch.note?.name ?? "-"), .float(cents),
            ]))
            out.append(OSCMessage(base + "/bars", ch.bars.map { .float($0) }))
        }
        let s = snapshot.status
        out.append(OSCMessage(prefix + "/status", [
            .int(Int32(clamping: snapshot.sampleRate)), .int(Int32(clamping: s.xruns)),
            .int(Int32(clamping: s.overruns)), .int(Int32(clamping: s.outputSkipped)),
            .int(Int32(truncatingIfNeeded: s.cycles)),
        ]))
        out.append(OSCMessage(prefix + "/callback", [
            .float(s.callbackMeanMicroseconds), .float(s.callbackP99Microseconds),
            .float(s.callbackMaxMicroseconds),
        ]))
        return out
    }
}
