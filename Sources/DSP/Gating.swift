/// How integrated loudness is gated (`--gating`).
///
/// - `bs1770-4` (the default): ITU-R BS.1770-4 §2.3 (and -2, -3; EBU R 128): 400 ms blocks
///   with 75 % overlap, an absolute gate at −70 LUFS, then a relative gate 10 LU below the
///   loudness of the blocks above it.
/// - `bs1770-1`: ITU-R BS.1770-1 (2006), ungated: the mean weighted power over the whole
///   measurement, silence included (`L_K = −0.691 + 10·log10 Σ G_i·z_i`, z_i the channel's
///   mean square over the interval). Delivery specifications that predate gating, and some
///   that ask for it beside the gated figure, name it.
/// - `relative:LU`: BS.1770-4's blocks and absolute gate with another relative gate (−40 … 0
///   LU, e.g. `relative:-20` as in EBU Tech 3342's loudness-range gate).
///
/// The loudness range (EBU Tech 3342) keeps its own gates whatever this says.
public enum Gating: Sendable, Equatable, CustomStringConvertible {
    case bs1770_4
    case bs1770_1
    case relative(Double)

    /// The relative gate, LU (nil: ungated).
    public var relativeLU: Double? {
        switch self {
        case .bs1770_4: return -10
        case .bs1770_1: return nil
        case .relative(let lu): return lu
        }
    }

    /// As the option writes it: `bs1770-4`, `bs1770-1`, `relative:-8`.
    public var description: String {
        switch self {
        case .bs1770_4: return "bs1770-4"
        case .bs1770_1: return "bs1770-1"
        case .relative(let lu): return "relative:\(lu == lu.rounded() ? String(Int(lu)) : String(lu))"
        }
    }

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// `bs1770-4`, `bs1770-1` (or `ungated`), `relative:LU` with LU from −40 to 0.
    public static func parse(_ text: String) throws(ParseError) -> Gating {
        switch text.lowercased() {
        case "bs1770-4", "bs.1770-4", "r128", "ebu-r128": return .bs1770_4
        case "bs1770-1", "bs.1770-1", "ungated": return .bs1770_1
        default:
            let parts = text.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "relative" {
                guard let lu = Double(parts[1]), lu.isFinite, (-40...0).contains(lu) else {
                    throw ParseError(description: "the relative gate must be from -40 to 0 LU (relative:-10 is BS.1770-4's), not '\(parts[1])'")
                }
                return lu == -10 ? .bs1770_4 : .relative(lu)
            }
            throw ParseError(description: "must be bs1770-4 (the default), bs1770-1 (ungated) or relative:LU, not '\(text)'")
        }
    }
}
