/// A 4×5 block font for the note name (letters A–G, sharp, minus, digits): big enough to read
/// from across a room in an ordinary terminal.
enum BigFont {
    static let height = 5
    static let width = 4

    /// Rows of a glyph: `X` is a lit cell.
    static func rows(_ c: Character) -> [String]? { glyphs[c] }

    private static let glyphs: [Character: [String]] = [
        "A": [" XX ", "X  X", "XXXX", "X  X", "X  X"],
        "B": ["XXX ", "X  X", "XXX ", "X  X", "XXX "],
        "C": [" XXX", "X   ", "X   ", "X   ", " XXX"],
        "D": ["XXX ", "X  X", "X  X", "X  X", "XXX "],
        "E": ["XXXX", "X   ", "XXX ", "X   ", "XXXX"],
        "F": ["XXXX", "X   ", "XXX ", "X   ", "X   "],
        "G": [" XXX", "X   ", "X XX", "X  X", " XXX"],
        "#": [" X X", "XXXX", " X X", "XXXX", " X X"],
        "-": ["    ", "    ", "XXXX", "    ", "    "],
        "0": [" XX ", "X  X", "X  X", "X  X", " XX "],
        "1": ["  X ", " XX ", "  X ", "  X ", " XXX"],
        "2": ["XXX ", "   X", " XX ", "X   ", "XXXX"],
        "3": ["XXX ", "   X", " XX ", "   X", "XXX "],
        "4": ["X  X", "X  X", "XXXX", "   X", "   X"],
        "5": ["XXXX", "X   ", "XXX ", "   X", "XXX "],
        "6": [" XX ", "X   ", "XXX ", "X  X", " XX "],
        "7": ["XXXX", "   X", "  X ", " X  ", " X  "],
        "8": [" XX ", "X  X", " XX ", "X  X", " XX "],
        "9": [" XX ", "X  X", " XXX", "   X", " XX "],
    ]

    /// Columns `text` takes (glyphs one column apart).
    static func columns(_ text: String) -> Int { text.isEmpty ? 0 : text.count * (width + 1) - 1 }

    /// Draws `text` with its top-left corner at (x, y).
    static func draw(_ text: String, into screen: inout Screen, x: Int, y: Int, pixel: Unicode.Scalar, style: CellStyle) {
        var left = x
        for c in text {
            if let rows = rows(c) {
                for (r, row) in rows.enumerated() {
                    for (i, p) in row.enumerated() where p == "X" {
                        let column = left + i
                        if column >= 0 && column < screen.width && y + r >= 0 && y + r < screen.height {
                            screen[column, y + r] = Cell(pixel, style)
                        }
                    }
                }
            }
            left += width + 1
        }
    }
}
