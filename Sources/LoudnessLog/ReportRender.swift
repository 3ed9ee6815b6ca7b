import DSP
import Outputs

/// A report's forms: a self-contained HTML page (inline SVG, no script, prints to PDF), JSON
/// and CSV. README "Reports" documents the fields.
public enum ReportFormat: String, Sendable, CaseIterable {
    case html, json, csv

    /// The format a file name's extension asks for (nil: none of them).
    public static func forPath(_ path: String) -> ReportFormat? {
        guard let dot = path.lastIndex(of: ".") else { return nil }
        switch path[path.index(after: dot)...].lowercased() {
        case "html", "htm": return .html
        case "json": return .json
        case "csv": return .csv
        default: return nil
        }
    }
}

extension Report {
    /// A time as the report shows it: ISO 8601 UTC, or for a file the time into it (H:MM:SS.s).
    func stamp(_ t: Double) -> String {
        guard relativeTimes else { return Report.time(t) }
        let s = max(0, t - from)
        let whole = Int(s)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(whole / 3600):\(two(whole / 60 % 60)):\(two(whole % 60)).\(Int((s - Double(whole)) * 10))"
    }

    public func render(_ format: ReportFormat, generator: String) -> String {
        switch format {
        case .html: return html(generator: generator)
        case .json: return json(generator: generator)
        case .csv: return csv()
        }
    }

    private static func optional(_ x: Double?, _ decimals: Int = 1, floor: Double = -120) -> String {
        guard let x, x.isFinite, x > floor else { return "" }
        return Report.fixed(x, decimals)
    }

    // MARK: CSV

    /// The CSV's header: the segment and programme, the reading table's report columns
    /// (`Readings.reportColumns`), then the target's judgement.
    public static let csvHeader = (["segment", "segment_start", "segment_end", "programme", "logged_s"] + Readings.reportColumns.map(\.column.key)
        + ["outside_tolerance_s", "alarms_raised", "profile", "target_lufs", "tolerance_lu", "result", "failures", "faulted_maxima"])
        .joined(separator: ",")

    /// A report column's figure as CSV and HTML show it: one decimal, empty at or below its floor.
    private static func cell(_ r: ReportRow, _ column: ReportColumn) -> String { optional(r.value(column.measure), 1, floor: column.floor) }

    public func csv() -> String {
        func field(_ raw: String) -> String {
            // Control characters (from a name in the log) show as '?': a CSV on a terminal
            // cannot drive it.
            let s = String(raw.map { c in c.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } ? "?" : c })
            return s.contains(where: { $0 == "," || $0 == "\"" }) ? "\"" + s.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\"" : s
        }
        var out = Report.csvHeader + "\n"
        for r in rows {
            let fields = [field(r.segment), stamp(r.from), stamp(r.to), field(r.programme), Report.fixed(r.loggedSeconds, 1)]
                + Readings.reportColumns.map { Report.cell(r, $0.column) } + [
                Report.optional(r.secondsOutside, 1, floor: -.infinity), String(r.alarmsRaised),
                r.target?.profile ?? "", Report.optional(r.target?.targetLUFS), Report.optional(r.target?.toleranceLU, 1, floor: -.infinity),
                r.pass.map { $0 ? "pass" : "fail" } ?? "", field(r.failures.joined(separator: "; ")),
                field(r.faultedMaxima.map(\.text).joined(separator: "; ")),
            ]
            out += fields.joined(separator: ",") + "\n"
        }
        return out
    }

    // MARK: JSON

    public func json(generator: String) -> String {
        func n(_ x: Double?, floor: Double = -120) -> String {
            guard let x, x.isFinite, x > floor else { return "null" }
            return Report.fixed(x, 2)
        }
        var out = "{\"generator\": \(jsonString(generator)), \"source\": \(jsonString(source)), "
            + (sourceNote.map { "\"source_note\": \(jsonString($0)), " } ?? "")
        out += "\"from\": \"\(stamp(from))\", \"to\": \"\(stamp(to))\", \"gating\": \"\(gating)\", \"results\": ["
        out += rows.map { r in
            var f = ["\"segment\": \(jsonString(r.segment))", "\"segment_start\": \"\(stamp(r.from))\"",
                     "\"segment_end\": \"\(stamp(r.to))\"", "\"programme\": \(jsonString(r.programme))",
                     "\"logged_s\": \(n(r.loggedSeconds))"]
            f += Readings.reportColumns.map { "\(jsonString($0.column.key)): \(n(r.value($0.column.measure), floor: $0.column.floor))" }
            f += ["\"outside_tolerance_s\": \(n(r.secondsOutside, floor: -.infinity))", "\"alarms_raised\": \(r.alarmsRaised)"]
            if let t = r.target {
                f.append("\"target\": {\"profile\": \(jsonString(t.profile)), \"target_lufs\": \(n(t.targetLUFS)), \"tolerance_lu\": \(n(t.toleranceLU, floor: -1)), \"max_truepeak_dbtp\": \(n(t.maxTruePeakDBTP))}")
                f.append("\"result\": \"\(r.pass == true ? "pass" : "fail")\"")
                f.append("\"failures\": [" + r.failures.map(jsonString).joined(separator: ", ") + "]")
            } else {
                f.append("\"target\": null, \"result\": null, \"failures\": []")
            }
            // The maxima a fault on the bus set, each with the clean blocks' maximum.
            f.append("\"faulted_maxima\": [" + r.faultedMaxima.map {
                "{\"reading\": \"\($0.reading)\", \"cause\": \"\($0.cause.rawValue)\", \"clean\": \(n($0.clean))}"
            }.joined(separator: ", ") + "]")
            return "{" + f.joined(separator: ", ") + "}"
        }.joined(separator: ",\n  ")
        out += "],\n \"incidents\": ["
        out += incidents.map { i in
            "{\"time\": \"\(stamp(i.t))\", \"kind\": \(jsonString(i.kind)), \"subject\": \(jsonString(i.subject)), "
                + "\"state\": \(i.state.map(jsonString) ?? "null"), \"value\": \(n(i.value, floor: -.infinity)), "
                + "\"detail\": \(i.detail.map(jsonString) ?? "null"), \"programme\": \(i.programme.map { jsonString(ProgrammeSnapshot.shownName($0)) } ?? "null")}"
        }.joined(separator: ",\n  ")
        // Beyond the first LogReader.incidentLimit, incidents are counted, not listed.
        return out + "],\n \"incidents_omitted\": \(incidentsOmitted)}\n"
    }

    // MARK: HTML

    private static func escaped(_ s: String) -> String {
        var out = ""
        for c in s {
            if c.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                out += "?"  // a control character (from a name in the log) shows as '?'
                continue
            }
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    public func html(generator: String) -> String {
        let e = Report.escaped
        var out = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Loudness report: \(e(source))</title>
            <style>
            body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 64em; padding: 0 1em; color: #111; }
            h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.5em; }
            table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
            th, td { border-bottom: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
            th:first-child, td:first-child, td.l, th.l { text-align: left; }
            td { white-space: nowrap; } tr.why td { white-space: normal; color: #b00; border-top: none; padding-top: 0; } tr.fault td { color: #a60; }
            tr:has(+ tr.why) td { border-bottom: none; }
            .pass { color: #060; font-weight: bold; } .fail { color: #b00; font-weight: bold; }
            .meta { color: #555; }
            svg { width: 100%; height: auto; border: 1px solid #ccc; background: #fff; }
            section { break-inside: avoid; page-break-inside: avoid; }
            @media print { body { margin: 0; max-width: none; font-size: 11px; } a { color: inherit; } }
            </style></head><body>
            <h1>Loudness report</h1>
            <p class="meta">\(e(source)) · \(stamp(from)) to \(stamp(to))\(relativeTimes ? "" : " (UTC)") · \(e(generator))</p>

            """
        if let sourceNote { out += "<p class=\"fail\">\(e(sourceNote))</p>\n" }
        // The reading table's report columns with a heading (`Readings.reportColumns`).
        let shown = Readings.reportColumns.filter { $0.column.heading != nil }
        out += "<h2>Results</h2>\n<table><thead><tr><th>Segment</th><th class=\"l\">Programme</th><th>Logged</th>"
            + shown.map { "<th>\($0.column.heading ?? "")<br>\($0.unit.rawValue)</th>" }.joined() + "<th>Outside<br>tolerance</th>"
            + "<th>Alarms</th><th class=\"l\">Target</th><th class=\"l\">Result</th></tr></thead><tbody>\n"
        for r in rows {
            let result = r.pass.map { $0 ? "<span class=\"pass\">PASS</span>" : "<span class=\"fail\">FAIL</span>" } ?? "–"
            let target = r.target.map { "\(e($0.profile))<br>\(Report.fixed($0.targetLUFS, 1)) ± \(Report.fixed($0.toleranceLU, 1))" } ?? "–"
            out += "<tr><td>\(e(r.segment))</td><td class=\"l\">\(e(r.programme))</td><td>\(Report.duration(r.loggedSeconds))</td>"
                + shown.map { "<td>\(Report.cell(r, $0.column))</td>" }.joined()
                + "<td>\(r.secondsOutside.map(Report.duration) ?? "–")</td>"
                + "<td>\(r.alarmsRaised)</td><td class=\"l\">\(target)</td><td class=\"l\">\(result)</td></tr>\n"
            if !r.failures.isEmpty {
                out += "<tr class=\"why\"><td></td><td class=\"l\" colspan=\"\(shown.count + 6)\">\(e(r.failures.joined(separator: "; ")))</td></tr>\n"
            }
            if !r.faultedMaxima.isEmpty {
                out += "<tr class=\"why fault\"><td></td><td class=\"l\" colspan=\"\(shown.count + 6)\">\(e(r.faultedMaxima.map(\.text).joined(separator: "; ")))</td></tr>\n"
            }
        }
        out += "</tbody></table>\n"
        for (p, columns) in zip(programmes, graphs) {
            out += "<section><h2>\(e(p.displayName)): short-term loudness</h2>\n" + graph(p, columns) + "</section>\n"
        }
        out += "<section><h2>Alarms and events</h2>\n"
        if incidents.isEmpty {
            out += "<p>None.</p>\n"
        } else {
            out += "<table><thead><tr><th class=\"l\">\(relativeTimes ? "Time" : "Time (UTC)")</th><th class=\"l\">What</th><th class=\"l\">Subject</th><th class=\"l\">State</th><th>Value</th></tr></thead><tbody>\n"
            let shown = incidents.prefix(2000)
            for i in shown {
                let value = i.value.map { Report.fixed($0, 1) } ?? ""
                out += "<tr><td class=\"l\">\(stamp(i.t))</td><td class=\"l\">\(e(i.kind))</td>"
                    + "<td class=\"l\">\(e(i.subject.isEmpty ? (i.detail ?? "") : i.subject + (i.detail.map { " (\($0))" } ?? "")))</td><td class=\"l\">\(e(i.state ?? ""))</td><td>\(value)</td></tr>\n"
            }
            out += "</tbody></table>\n"
            if incidents.count > shown.count || incidentsOmitted > 0 {
                out += "<p>… and \(incidents.count - shown.count + incidentsOmitted) more (the JSON form lists the first "
                    + "\(incidents.count); the log holds every one).</p>\n"
            }
        }
        let gated = switch gating {
        case .bs1770_4: "Loudness per ITU-R BS.1770-4 and EBU R 128"
        case .bs1770_1: "Integrated loudness ungated, per ITU-R BS.1770-1 (other figures per BS.1770-4)"
        case .relative(let lu): "Loudness per ITU-R BS.1770-4 with a relative gate of \(Report.fixed(lu, 1)) LU (not EBU R 128's −10 LU)"
        }
        out += "</section>\n<p class=\"meta\">\(gated), recomputed from the logged 100 ms blocks; "
            + "loudness range per EBU Tech 3342; true peak per BS.1770-4 Annex 2, to the analysis hop.</p>\n</body></html>\n"
        return out
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 3600 ? "\(s / 3600) h \(String(format: 0, Double(s % 3600 / 60))) min" : s >= 60 ? "\(s / 60) min \(s % 60) s" : "\(s) s"
    }

    /// The programme's short-term loudness over the report's range as inline SVG: against its
    /// target on EBU Tech 3341's +9 scale (−18 … +9 LU), else −41 … −14 LUFS; the tolerance
    /// band, alarms shaded, marks and segment boundaries as lines.
    private func graph(_ p: ReportProgramme, _ columns: GraphColumns) -> String {
        let width = 1000.0, height = 260.0, left = 48.0, right = 8.0, top = 8.0, bottom = 24.0
        let plotW = width - left - right, plotH = height - top - bottom
        let centre = p.target?.targetLUFS ?? -23
        let low = centre - 18, high = centre + 9
        let span = max(1, to - from)
        func x(_ t: Double) -> Double { left + (t - from) / span * plotW }
        func y(_ l: Double) -> Double { top + (1 - (min(high, max(low, l)) - low) / (high - low)) * plotH }
        func f(_ v: Double) -> String { Report.fixed(v, 1) }
        var svg = "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"short-term loudness of \(Report.escaped(p.displayName))\">\n"
        // Grid: every 3 LU.
        var l = low
        while l <= high + 1e-9 {
            svg += "<line x1=\"\(f(left))\" x2=\"\(f(width - right))\" y1=\"\(f(y(l)))\" y2=\"\(f(y(l)))\" stroke=\"#eee\"/>"
            let label = p.target != nil ? (l - centre > 0 ? "+" : "") + Report.fixed(l - centre, 0) : Report.fixed(l, 0)
            svg += "<text x=\"\(f(left - 4))\" y=\"\(f(y(l) + 4))\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">\(label)</text>\n"
            l += 3
        }
        svg += "<text x=\"4\" y=\"\(f(height - 6))\" font-size=\"11\" fill=\"#555\">\(p.target != nil ? "LU" : "LUFS")</text>\n"
        if let t = p.target {
            svg += "<rect x=\"\(f(left))\" width=\"\(f(plotW))\" y=\"\(f(y(t.targetLUFS + t.toleranceLU)))\" height=\"\(f(max(1, y(t.targetLUFS - t.toleranceLU) - y(t.targetLUFS + t.toleranceLU))))\" fill=\"#cfc\" opacity=\"0.6\"/>"
            svg += "<line x1=\"\(f(left))\" x2=\"\(f(width - right))\" y1=\"\(f(y(t.targetLUFS)))\" y2=\"\(f(y(t.targetLUFS)))\" stroke=\"#080\"/>\n"
        }
        // Alarms of this programme: shaded from raise to clear.
        var open: [String: Double] = [:]
        var spans: [(Double, Double)] = []
        for i in incidents where i.isAlarm && (i.programme == p.name || (p.name.isEmpty && i.programme == "")) {
            let key = i.kind + " " + i.subject
            if i.state == "raised" { open[key] = open[key] ?? i.t } else if let s = open.removeValue(forKey: key) { spans.append((s, i.t)) }
        }
        for s in open.values { spans.append((s, to)) }
        for (a, b) in spans {
            svg += "<rect x=\"\(f(x(max(from, a))))\" width=\"\(f(max(1.5, x(min(to, b)) - x(max(from, a)))))\" y=\"\(f(top))\" height=\"\(f(plotH))\" fill=\"#f66\" opacity=\"0.3\"/>"
        }
        // Segment boundaries and marks.
        for s in segments.dropFirst() {
            svg += "<line x1=\"\(f(x(s.from)))\" x2=\"\(f(x(s.from)))\" y1=\"\(f(top))\" y2=\"\(f(top + plotH))\" stroke=\"#339\" stroke-dasharray=\"4 3\"/>"
            svg += "<text x=\"\(f(x(s.from) + 3))\" y=\"\(f(top + 12))\" font-size=\"11\" fill=\"#339\">\(Report.escaped(s.name))</text>\n"
        }
        // The short-term loudness, the largest value in each of 1000 columns; a gap of more
        // than a second in the log, or a reset, breaks the line.
        var path = ""
        for c in columns.values.keys.sorted() {
            let px = left + Double(c) / Double(GraphColumns.count) * plotW, py = y(columns.values[c]!)
            path += (path.isEmpty || columns.breaks.contains(c) ? "M" : "L") + "\(f(px)),\(f(py)) "
        }
        if !path.isEmpty { svg += "<path d=\"\(path)\" fill=\"none\" stroke=\"#036\" stroke-width=\"1.5\"/>\n" }
        // Time axis: start, middle, end.
        for (t, anchor) in [(from, "start"), (from + span / 2, "middle"), (to, "end")] {
            svg += "<text x=\"\(f(x(t)))\" y=\"\(f(height - 6))\" font-size=\"11\" text-anchor=\"\(anchor)\" fill=\"#555\">\(stamp(t).replacingOccurrences(of: "T", with: " "))</text>"
        }
        return svg + "\n</svg>\n"
    }
}
