internal import DrayJSON
internal import DrayModel

/// The job's recent runs: a chart of their durations, a chart of rows per table, and a list.
///
/// Runs are drawn oldest on the left, one bar each, coloured by status; a failed,
/// interrupted or abandoned run also gets a mark under its bar, so a slow drift or a table
/// that suddenly loads fewer rows stands out. Durations and rows come from each run's JSON
/// report; a run whose report is missing or unreadable keeps its place (its duration from
/// the journal's times when it has both) and is named in the list with the reason.
struct HistorySection {
  var job: String
  var runs: [ReportPage.Run]
  var problem: String?
  var current: String?

  static let chartWidth = 740.0
  static let chartHeight = 64.0
  /// The widest a run's bar gets, so that a short history does not fill the chart.
  static let widestBar = 16.0

  /// One run as the charts need it.
  private struct Point {
    var run: ReportPage.Run
    var duration: Double?
    var rows: [String: Int64]
    var unreadable: String?
  }

  func write(to page: inout HTMLWriter) {
    page.raw("<section class=\"history\">\n<h2>The last \(runs.count) run\(runs.count == 1 ? "" : "s")</h2>\n")
    if let problem { page.element("p", problem, class: "problem") }
    guard !runs.isEmpty else {
      page.raw("</section>\n")
      return
    }
    let points = runs.reversed().map(Self.point)
    writeChart(
      "duration", values: points.map(\.duration), runs: points.map(\.run), format: Figures.seconds, to: &page)
    let tables = Set(points.flatMap(\.rows.keys)).sorted()
    for table in tables {
      writeChart(
        "rows in \(table)", values: points.map { $0.rows[table].map(Double.init) }, runs: points.map(\.run),
        format: { Figures.count(Int64($0)) }, to: &page)
    }
    page.raw(
      "<table class=\"runs\"><thead><tr><th>run</th><th>status</th><th>started</th><th>duration</th><th>rows</th>"
        + "<th>notes</th></tr></thead><tbody>\n")
    for point in points.reversed() {
      page.raw(point.run.id == current ? "<tr class=\"current\">" : "<tr>")
      page.element("td", point.run.id)
      page.element("td", point.run.status, class: "status \(StatusClass.of(point.run.status))")
      page.element("td", point.run.startedAt)
      page.element("td", point.duration.map(Figures.seconds) ?? "–", class: "number")
      page.element("td", point.unreadable == nil ? Figures.count(point.rows.values.reduce(0, +)) : "–", class: "number")
      var notes: [String] = []
      if !point.run.options.isEmpty { notes.append(point.run.options) }
      if let unreadable = point.unreadable { notes.append(unreadable) }
      page.element("td", notes.joined(separator: "; "), class: point.unreadable == nil ? nil : "problem")
      page.raw("</tr>\n")
    }
    page.raw("</tbody></table>\n</section>\n")
  }

  private static func point(_ run: ReportPage.Run) -> Point {
    var journalDuration: Double? {
      guard let ended = run.endedAt, let end = Timestamp.seconds(ended), let start = Timestamp.seconds(run.startedAt) else {
        return nil
      }
      return end - start
    }
    switch run.report {
    case .report(let json):
      guard json["format_version"]?.intValue == 1 else {
        return Point(run: run, duration: journalDuration, rows: [:], unreadable: "the report is not of format version 1")
      }
      return Point(run: run, duration: json["duration_seconds"]?.doubleValue ?? journalDuration, rows: RunView.rowsPerTable(json))
    case .unreadable(let path, let reason):
      return Point(run: run, duration: journalDuration, rows: [:], unreadable: "report \(path): \(reason)")
    }
  }

  /// A bar chart of `values` (nil: no bar), one bar per run, with the largest value named.
  private func writeChart(
    _ name: String, values: [Double?], runs: [ReportPage.Run], format: (Double) -> String, to page: inout HTMLWriter
  ) {
    let top = max(values.compactMap { $0 }.max() ?? 0, 0)
    let slot = min(Self.chartWidth / Double(max(values.count, 1)), Self.widestBar)
    let gap = slot > 4 ? 1.0 : 0
    let height = Self.chartHeight
    page.raw("<figure class=\"chart\"><figcaption>")
    page.text(name)
    page.raw(" <span class=\"muted\">(largest ")
    page.text(format(top))
    page.raw(")</span></figcaption>\n")
    page.raw(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 \(Figures.coordinate(Self.chartWidth)) "
        + "\(Figures.coordinate(height + 8))\" width=\"\(Figures.coordinate(Self.chartWidth))\" aria-label=\"")
    page.text(name)
    page.raw(
      "\">\n<line class=\"axis\" x1=\"0\" y1=\"\(Figures.coordinate(height))\" x2=\"\(Figures.coordinate(Self.chartWidth))\" y2=\"\(Figures.coordinate(height))\"/>\n"
    )
    for (index, (value, run)) in zip(values, runs).enumerated() {
      let x = Double(index) * slot
      let statusClass = StatusClass.of(run.status)
      if let value {
        let barHeight = top > 0 ? max(value / top * (height - 2), 1) : 1
        page.raw(
          "<rect class=\"bar \(statusClass)\" x=\"\(Figures.coordinate(x))\" y=\"\(Figures.coordinate(height - barHeight))\" "
            + "width=\"\(Figures.coordinate(max(slot - gap, 0.3)))\" height=\"\(Figures.coordinate(barHeight))\"><title>")
        page.text("\(run.id) \(run.status): \(format(value))")
        page.raw("</title></rect>")
      }
      if statusClass != "ok" {
        page.raw(
          "<rect class=\"mark \(statusClass)\" x=\"\(Figures.coordinate(x))\" y=\"\(Figures.coordinate(height + 2))\" "
            + "width=\"\(Figures.coordinate(max(slot - gap, 0.3)))\" height=\"5\"><title>")
        page.text("\(run.id): \(run.status)" + (value == nil ? ", no figure" : ""))
        page.raw("</title></rect>")
      }
    }
    page.raw("\n</svg></figure>\n")
  }
}
