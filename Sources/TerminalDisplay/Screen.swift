/// A colour of the terminal's basic palette (SGR 30–37), which every colour terminal has and
/// every theme keeps readable.
public enum TerminalColor: UInt8, Sendable {
    case red = 31, green = 32, yellow = 33, blue = 34, magenta = 35, cyan = 36, white = 37
}

/// How a cell is drawn.
public struct CellStyle: Equatable, Sendable {
    public var color: TerminalColor?
    public var bold = false
    public var dim = false
    public var reverse = false
    /// The cell's background (SGR 40–47), nil for the terminal's own.
    public var background: TerminalColor?

    public init(color: TerminalColor? = nil, bold: Bool = false, dim: Bool = false, reverse: Bool = false, background: TerminalColor? = nil) {
        self.color = color
        self.bold = bold
        self.dim = dim
        self.reverse = reverse
        self.background = background
    }

    public static let plain = CellStyle()

    /// The SGR sequence that sets this style from any other (it starts with a reset).
    func sgr(colors: Bool) -> String {
        var codes = ["0"]
        if bold { codes.append("1") }
        if dim { codes.append("2") }
        if reverse { codes.append("7") }
        if colors, let color { codes.append(String(color.rawValue)) }
        if colors, let background { codes.append(String(background.rawValue + 10)) }
        return "\u{1B}[" + codes.joined(separator: ";") + "m"
    }
}

/// One character cell: a single-width character and its style.
public struct Cell: Equatable, Sendable {
    public var character: Unicode.Scalar
    public var style: CellStyle

    public init(_ character: Unicode.Scalar = " ", _ style: CellStyle = .plain) {
        self.character = character
        self.style = style
    }
}

/// A grid of cells: what the terminal should show. Layout code writes into it; `ScreenDiff`
/// turns the difference between two screens into escape sequences.
public struct Screen: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: Cell(), count: self.width * self.height)
    }

    public subscript(x: Int, y: Int) -> Cell {
        get { cells[y * width + x] }
        set { cells[y * width + x] = newValue }
    }

    /// Writes `text` from column `x` of row `y`, clipped to the screen (and to `maxWidth`
    /// columns when given). Returns the column after the text.
    @discardableResult
    public mutating func put(_ text: String, x: Int, y: Int, style: CellStyle = .plain, maxWidth: Int? = nil) -> Int {
        guard y >= 0 && y < height else { return x }
        var column = x
        let limit = min(width, maxWidth.map { x + $0 } ?? width)
        for scalar in text.unicodeScalars {
            if column >= limit { break }
            if column >= 0 { self[column, y] = Cell(scalar, style) }
            column += 1
        }
        return column
    }

    /// Fills a rectangle with one cell.
    public mutating func fill(x: Int, y: Int, width w: Int, height h: Int, with cell: Cell = Cell()) {
        for row in max(0, y)..<min(height, y + h) {
            for column in max(0, x)..<max(max(0, x), min(width, x + w)) { self[column, row] = cell }
        }
    }

    /// The text of row `y` (trailing spaces removed), for tests and plain output.
    public func line(_ y: Int) -> String {
        var s = String.UnicodeScalarView()
        for x in 0..<width { s.append(self[x, y].character) }
        var text = String(s)
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }

    /// Every row's text, newline-separated.
    public var text: String { (0..<height).map(line).joined(separator: "\n") }
}

/// The escape sequences that change a terminal showing `old` into one showing `new`: only the
/// cells that differ are written (cursor moves, then the changed runs), inside a synchronized
/// update (DEC mode 2026, which terminals without it ignore) so that nothing flickers. With no
/// `old` (the first frame, or after a resize) the screen is cleared and drawn whole.
public enum ScreenDiff {
    public static func update(from old: Screen?, to new: Screen, colors: Bool) -> String {
        var out = "\u{1B}[?2026h"
        let whole = old == nil || old!.width != new.width || old!.height != new.height
        if whole { out += "\u{1B}[0m\u{1B}[H\u{1B}[2J" }
        // Every update ends with the style reset, so the terminal starts each one plain.
        var current = CellStyle.plain
        var cursor: (x: Int, y: Int)? = nil
        for y in 0..<new.height {
            var x = 0
            while x < new.width {
                // The bottom-right cell is never written: some terminals scroll when it is.
                if y == new.height - 1 && x == new.width - 1 { break }
                let cell = new[x, y]
                let changed = whole ? (cell != Cell()) : (cell != old![x, y])
                if !changed { x += 1; continue }
                if cursor == nil || cursor! != (x, y) { out += "\u{1B}[\(y + 1);\(x + 1)H" }
                if current != cell.style {
                    out += cell.style.sgr(colors: colors)
                    current = cell.style
                }
                out.unicodeScalars.append(cell.character)
                cursor = (x + 1, y)
                x += 1
            }
        }
        if current != .plain { out += "\u{1B}[0m" }
        return out + "\u{1B}[?2026l"
    }
}
