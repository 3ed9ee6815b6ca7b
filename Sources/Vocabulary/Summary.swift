import DSP

// How `jackvu analyze`'s summary shows the readings: each line is a reading field's
// (`ReadingField.summary`, or the display's label for a further reading, `ReadingDisplay.extra`),
// with its label, its JSON key, its decimals and where it goes — so a reading added to the table
// with a summary line (or as an extra) is in the summary, text and JSON, with no code of its own.

/// One line of the file summary: a reading field's value over the whole file.
public struct SummaryLine: Sendable {
    /// Where it goes.
    public enum Place: Sendable, Equatable {
        /// Each programme's block (text `programme NAME`; JSON `programmes`).
        case programme
        /// The file's own lines: the first programme's value (text: only when there is no
        /// programme of `--programme`, which have their blocks; JSON always).
        case file
        /// The file's own lines: the largest of the channels' values (true peak, sample peak).
        case fileMaximum
        /// Each channel's line (JSON `per_channel`).
        case channel
    }

    public let place: Place
    /// Its label in the text ("loudness range").
    public let label: String
    /// Its JSON key where it is not the field's (the summary's `loudness_range_lu`, older than
    /// the table's `range_lu`).
    public let key: String?
    /// Decimals in the text (JSON: three, as everywhere).
    public let decimals: Int
    /// A level: at or below the floor (−120) it reads `-inf` in the text and null in JSON. A
    /// range or a duration is a number at any value. (Any value not finite: `-`, null.)
    public let level: Bool
    /// Where it comes among its place's lines, in the text and in JSON (lower first).
    public let order: Int, jsonOrder: Int
    /// Where a programme's target (its profile, the integrated loudness relative to it and
    /// the state) comes among the programme's JSON members; the text has it last.
    public static let targetJSONOrder = 7

    public init(_ place: Place, _ label: String, key: String? = nil, decimals: Int = 1, level: Bool = true, order: Int, jsonOrder: Int? = nil) {
        self.place = place
        self.label = label
        self.key = key
        self.decimals = decimals
        self.level = level
        self.order = order
        self.jsonOrder = jsonOrder ?? order
    }

    /// A value as the text shows it, with its unit: `-13.3 LUFS`, `-inf dBTP`, `- LU`.
    public func text(_ value: Double, unit: ReadingUnit) -> String {
        let shown = !value.isFinite ? "-" : level && value <= Double(Decibels.floor) ? "-inf" : fixed(value, decimals)
        return shown + " " + unit.rawValue
    }

    /// A value as JSON: three decimals, null where the text says `-` or `-inf`.
    public func json(_ value: Double) -> String {
        !value.isFinite || (level && value <= Double(Decibels.floor)) ? "null" : format3(value)
    }
}

extension Readings {
    /// One summary line with its field and the field's value.
    public struct SummaryEntry: Sendable {
        public let line: SummaryLine
        public let reading: Reading
        public let field: ReadingField
        /// Its JSON key.
        public var key: String { line.key ?? field.key }
        public var unit: ReadingUnit { field.unit }
    }

    /// The summary's lines for `places`, in the text's order (`json`: in JSON's): the fields'
    /// own lines, and for a further reading (`ReadingDisplay.extra`) with none, a line by its
    /// display label after the others (a programme reading's in each programme's block and in
    /// the file's lines, a channel reading's on each channel's line).
    public static func summaryLines(_ places: [SummaryLine.Place], json: Bool = false) -> [SummaryEntry] {
        var entries: [SummaryEntry] = []
        for reading in table {
            for field in reading.fields where field.wire != .oscOnly {
                entries += field.summary.filter { places.contains($0.place) }.map { SummaryEntry(line: $0, reading: reading, field: field) }
                guard field.summary.isEmpty, case .extra(let label, let decimals)? = reading.display else { continue }
                let place: SummaryLine.Place? = switch reading.scope {
                case .channel: places.contains(.channel) ? .channel : nil
                case .programme: places.first { $0 == .programme || $0 == .file }
                default: nil
                }
                guard let place else { continue }
                entries.append(SummaryEntry(line: SummaryLine(place, label, decimals: decimals, level: false, order: 1_000 + entries.count),
                                            reading: reading, field: field))
            }
        }
        return entries.enumerated().sorted {
            let (a, b) = (json ? $0.element.line.jsonOrder : $0.element.line.order, json ? $1.element.line.jsonOrder : $1.element.line.order)
            return (a, $0.offset) < (b, $1.offset)
        }.map(\.element)
    }
}

/// A reading's column in a compliance report (`jackvu report`, `jackvu analyze --report`):
/// one figure per programme and segment, recomputed from the log's 100 ms blocks and their
/// peaks — so only a reading the log's blocks hold can have one (`Measure`). Its key (the CSV
/// header's and the JSON member's: a contract older than the table's keys), its name in the
/// notes on maxima a fault set, its heading in the HTML table (none: CSV and JSON only), and
/// its floor (at or below it: empty in CSV and HTML, null in JSON).
public struct ReportColumn: Sendable {
    /// What the report recomputes from the blocks for it.
    public enum Measure: Sendable, Equatable, CaseIterable {
        case integrated, range, maxMomentary, maxShortTerm, maxTruePeak, maxSamplePeak, plr
    }

    public let measure: Measure
    public let key: String
    public let name: String
    public let heading: String?
    public let floor: Double
    /// Where it comes among the columns (lower first).
    public let order: Int

    public init(_ measure: Measure, _ key: String, name: String, heading: String?, floor: Double = -120, order: Int) {
        self.measure = measure
        self.key = key
        self.name = name
        self.heading = heading
        self.floor = floor
        self.order = order
    }
}

extension Readings {
    /// A report's reading columns, in order, each with its unit.
    public static let reportColumns: [(column: ReportColumn, unit: ReadingUnit)] = table.flatMap { reading in
        reading.fields.compactMap { field in field.report.map { ($0, field.unit) } }
    }.sorted { $0.column.order < $1.column.order }

    /// The report column of `measure` (every measure has one).
    public static func reportColumn(_ measure: ReportColumn.Measure) -> (column: ReportColumn, unit: ReadingUnit) {
        guard let c = reportColumns.first(where: { $0.column.measure == measure }) else { preconditionFailure("no report column for \(measure)") }
        return c
    }
}
