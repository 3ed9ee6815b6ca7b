import Foundation
import Outputs
import XCTest

/// Names from outside on their way into text and JSON: one line, no terminal control, and
/// JSON that a parser reads back as the same string.
final class EscapingTests: XCTestCase {
    private let nasty = "a\"b\\c\nd\te\r\u{1B}[31mf\u{01}\u{7F}\u{9B}g é ♪"

    func testEscapedForLine() {
        XCTAssertEqual(escapedForLine(nasty), "a\"b\\\\c\\nd\\te\\r\\e[31mf\\x01\\x7f\\x9bg é ♪")
        XCTAssertEqual(escapedForLine(nasty, quote: true), "a\\\"b\\\\c\\nd\\te\\r\\e[31mf\\x01\\x7f\\x9bg é ♪")
        XCTAssertEqual(escapedForLine("plain/path.wav"), "plain/path.wav")
    }

    func testJSONStringsParseBack() throws {
        let literal = jsonString(nasty)
        XCTAssertFalse(literal.contains("\n"))
        let parsed = try JSONSerialization.jsonObject(with: Data("[\(literal)]".utf8)) as? [String]
        XCTAssertEqual(parsed, [nasty])
    }
}
