public import DrayModel
internal import Foundation

/// One self-contained HTML page of a run and its job's history: `dray report` and
/// `report.formats: [html]` (docs/report.md, "The HTML page").
///
/// A pure function of plain values: the run's JSON report as decoded (`JSONValue`, report
/// format version 1) and the job's recent runs as the journal lists them, each with its JSON
/// report. It reads no file and knows no clock. The page holds everything it shows: inline
/// CSS (a dark theme through `prefers-color-scheme`, a print style), inline SVG charts, no
/// script, font, image or link to anything else, so opening it makes no network request.
/// Every text from a report is escaped (`HTMLText`). Secrets are masked before the page
/// sees them: the JSON reports it draws were written from a copy of the run's report whose
/// free text the run's redactor masked (`RunReport.redacted(by:)`, docs/report.md
/// "Secrets"), and the journal holds none.
///
/// ```swift
/// let page = ReportPage(job: "nightly", run: .report(json), history: runs).html()
/// ```
public struct ReportPage: Sendable {
  /// A JSON report as the page gets it.
  public enum Document: Sendable {
    /// The decoded report.
    case report(JSONValue)
    /// A report that could not be read: its path, and why (missing, not JSON, not a report).
    case unreadable(path: String, reason: String)
  }

  /// A run as the journal records it, with its JSON report.
  public struct Run: Sendable {
    public var id: String
    /// `running`, `succeeded`, `failed`, `interrupted` or `abandoned`.
    public var status: String
    /// RFC 3339.
    public var startedAt: String
    /// RFC 3339; nil while running or when the run was abandoned.
    public var endedAt: String?
    /// The operator's flags (`--fresh`, `--only STEP`); empty for a plain run.
    public var options: String
    public var report: Document

    public init(id: String, status: String, startedAt: String, endedAt: String?, options: String = "", report: Document) {
      self.id = id
      self.status = status
      self.startedAt = startedAt
      self.endedAt = endedAt
      self.options = options
      self.report = report
    }
  }

  public var job: String
  /// The run drawn in full; nil when the job has no run yet.
  public var run: Document?
  /// The job's recent runs, newest first, as `Journal.runs(job:limit:)` lists them.
  public var history: [Run]
  /// Why the history is missing or incomplete (an unreadable journal), shown on the page.
  public var historyProblem: String?

  public init(job: String, run: Document?, history: [Run], historyProblem: String? = nil) {
    self.job = job
    self.run = run
    self.history = history
    self.historyProblem = historyProblem
  }

  /// How every page starts, up to its title's text: how `dray report -o` knows a page dray
  /// wrote, the only file it replaces (docs/report.md, "The HTML page").
  public static let opening =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
    + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
    + "<meta name=\"color-scheme\" content=\"light dark\"/>\n<title>dray: "

  /// The run drawn in full: nil without a run, or when its report is not one dray can read.
  private var runView: RunView? {
    run.flatMap { document -> RunView? in
      if case .report(let json) = document { return RunView(json) }
      return nil
    }
  }

  /// The id of the run the page shows; nil for the job's history alone.
  public var runID: String? { runView?.runID }

  /// What the page dray wrote whose text starts with `head` shows, when a page of `job`'s
  /// run `run` (nil: the job's history alone) may not replace it: `the page of run R of job
  /// J`; nil when it may. A page is replaced only by a page of the same job and run, or is
  /// the history page of the same job; its `dray-job` and `dray-run` meta tags (after the
  /// title) say what it shows. A page without them (written before dray wrote them) may be
  /// replaced (docs/report.md, "The HTML page").
  /// - Parameter head: the page's text up to `</head>` at least.
  public static func otherRun(inPage head: String, job: String, run: String?) -> String? {
    func meta(_ name: String) -> String? {
      let start = "<meta name=\"\(name)\" content=\""
      guard let open = head.range(of: start), let close = head[open.upperBound...].firstIndex(of: "\"") else { return nil }
      return String(head[open.upperBound..<close])
    }
    guard let shownJob = meta("dray-job") else { return nil }
    let shownRun = meta("dray-run")
    if shownJob == HTMLText.escape(job), shownRun == nil || shownRun == run.map({ HTMLText.escape($0) }) { return nil }
    return "the page of " + (shownRun.map { "run \($0) of " } ?? "") + "job \(shownJob)"
  }

  /// The page: an HTML document that is also well-formed XML (every element closed, every
  /// attribute quoted), UTF-8.
  public func html() -> String {
    var page = HTMLWriter()
    let title = job + (runView.map { " run \($0.runID)" } ?? "")
    page.raw(ReportPage.opening)
    page.text(title)
    page.raw("</title>")
    page.raw("\n<meta name=\"dray-job\" content=\"\(HTMLText.escape(job))\"/>")
    if let runView { page.raw("\n<meta name=\"dray-run\" content=\"\(HTMLText.escape(runView.runID))\"/>") }
    page.raw("\n<style>\n\(PageStyle.css)</style>\n</head>\n<body>\n")
    switch run {
    case nil:
      page.element("h1", "job \(job): no run yet")
    case .unreadable(let path, let reason):
      page.element("h1", "job \(job)")
      page.element("p", "The report \(path) could not be read: \(reason)", class: "problem")
    case .report:
      if let runView {
        RunSection(run: runView).write(to: &page)
      } else {
        page.element("h1", "job \(job)")
        page.element("p", "The run's report is not a dray report of format version 1.", class: "problem")
      }
    }
    HistorySection(job: job, runs: history, problem: historyProblem, current: runView?.runID).write(to: &page)
    page.raw("</body>\n</html>\n")
    return page.text
  }
}

/// Builds the page's text; every text passes through `HTMLText.escape`.
struct HTMLWriter {
  private(set) var text = ""

  init() { text.reserveCapacity(64 * 1024) }

  /// Markup written as is: only literals of the renderer, never data.
  mutating func raw(_ markup: String) { text += markup }

  /// A physical table name, escaped, with a line break allowed after each `__` (`<wbr/>`),
  /// where `TableNaming` joins its parts (`FRUITS__output_table__b655ebc6`): a narrow
  /// column wraps it there, never letter by letter.
  mutating func tableName(_ name: String) {
    text += name.components(separatedBy: "__").map { HTMLText.escape($0) }.joined(separator: "__<wbr/>")
  }

  /// Escaped text.
  mutating func text(_ value: String, keepingNewlines: Bool = false) {
    text += HTMLText.escape(value, keepingNewlines: keepingNewlines)
  }

  /// `<name class="...">text</name>`.
  mutating func element(_ name: String, _ value: String, class className: String? = nil) {
    text += "<\(name)"
    if let className { text += " class=\"\(HTMLText.escape(className))\"" }
    text += ">" + HTMLText.escape(value) + "</\(name)>"
  }
}

/// Figures as the page shows them.
enum Figures {
  /// `1,234,567`.
  static func count(_ n: Int64) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (index, digit) in digits.enumerated() {
      if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
      out.append(digit)
    }
    return (n < 0 ? "-" : "") + out
  }

  /// Seconds with millisecond precision, as the JSON report gives them: `1.155 s`.
  static func seconds(_ value: Double) -> String {
    String(format: "%.3f s", value)
  }

  /// A number for an SVG attribute: at most two decimals.
  static func coordinate(_ value: Double) -> String {
    guard value.isFinite else { return "0" }
    let rounded = (value * 100).rounded() / 100
    return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
  }
}
