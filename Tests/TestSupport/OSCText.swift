/// Reads jackvu's OSC-style text output back: one message per line, an update ends with its
/// `…/callback` message (after `…/status`).
public struct OSCTextUpdate: Sendable {
    /// Arguments by address, as printed (strings keep their quotes stripped).
    public var messages: [String: [String]] = [:]

    public func float(_ address: String, _ index: Int = 0) -> Double? {
        messages[address].flatMap { index < $0.count ? Double($0[index]) : nil }
    }

    public func string(_ address: String, _ index: Int) -> String? {
        messages[address].flatMap { index < $0.count ? $0[index] : nil }
    }
}

public enum OSCText {
    /// Complete updates in `text` (a trailing, unfinished one is left out).
    public static func updates(_ text: String, prefix: String = "/jackvu") -> [OSCTextUpdate] {
        var result: [OSCTextUpdate] = []
        var current = OSCTextUpdate()
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let parts = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard parts.count >= 2 else { continue }
            let address = parts[0]
            let args = parts.dropFirst(2).map { $0.hasPrefix("\"") && $0.hasSuffix("\"") && $0.count >= 2 ? String($0.dropFirst().dropLast()) : $0 }
            current.messages[address] = Array(args)
            if address == prefix + "/callback" {
                result.append(current)
                current = OSCTextUpdate()
            }
        }
        return result
    }
}
