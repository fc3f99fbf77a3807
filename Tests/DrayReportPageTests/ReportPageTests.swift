import DrayJSON
import DrayModel
import DrayReportPage
import DrayTestSupport
import Foundation
import Testing

/// The page as a pure function of a decoded report and a list of runs: hostile text, a group,
/// retries and a resumed download, reports that cannot be read, and the history's marks.
@Suite struct ReportPageTests {
  static func fixture(_ name: String) throws -> JSONValue {
    try JSONValue(parsing: try String(contentsOfFile: Repository.root + "/Tests/DrayReportPageTests/Fixtures/\(name)", encoding: .utf8))
  }

  /// `html` written to a file and checked by `scripts/check-report.py` (well-formed, nothing
  /// from elsewhere); the problems, empty when none.
  static func problems(_ html: String) throws -> String {
    let folder = TemporaryDirectory("dray-page")
    return try ReportCheck.problems([try folder.write("page.html", html)])
  }

  static func run(_ id: String, _ status: String, report: ReportPage.Document) -> ReportPage.Run {
    ReportPage.Run(
      id: id, status: status, startedAt: "2026-11-30T12:00:00.000Z", endedAt: "2026-11-30T12:00:02.500Z", report: report)
  }

  @Test func textFromReportsIsEscapedAndControlCharactersAreWrittenOut() throws {
    let report = try Self.fixture("hostile-report.json")
    let html = ReportPage(job: "odd<job>&", run: .report(report), history: [Self.run("r1", "failed", report: .report(report))]).html()
    #expect(try Self.problems(html) == "")
    #expect(!html.contains("<script"))
    #expect(html.contains("&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;script&gt;alert(1)&lt;/script&gt;\\u{1B}[2J"))
    #expect(html.contains(#"<th scope="row">fetch\u{202E}&lt;b&gt;&quot;q&quot;&amp;amp;&#39;</th>"#))
    #expect(html.contains("<title>dray: odd&lt;job&gt;&amp; run 20261130T120311.201Z-78795a</title>"))
    #expect(html.contains("T&lt;1&gt;&amp;&quot;x&quot;: 1,249"))
    #expect(html.contains("no such table: &lt;nowhere&gt;\nat line 1\\u{2066}"))
    #expect(html.contains("<dt>manifest</dt><dd>jobs/o&#39;dd.yaml</dd>"))
    // No bidi formatting character and no C0 control but newlines reaches the page.
    #expect(!html.unicodeScalars.contains { [0x202E, 0x2066, 0x1B].contains($0.value) })
  }

  @Test func everyStepMemberAttemptWaitAndResumeIsDrawn() throws {
    let html = ReportPage(job: "odd", run: .report(try Self.fixture("hostile-report.json")), history: []).html()
    for id in ["group", "m1", "m2", "after"] { #expect(html.contains(#"<th scope="row">\#(id)</th>"#), "\(id)") }
    #expect(html.contains(">↳ m1<title>") && html.contains(">↳ m2<title>"))
    #expect(html.contains(">not_run: an earlier step failed</text>"))
    #expect(html.contains("<title>waited 1.000 s before attempt 2 (the server&#39;s Retry-After)</title>"))
    #expect(html.contains(": resumed from byte 2,000</title>"))
    #expect(html.contains("<dt>resumes</dt><dd>20261130T115502.193Z-0c1d2e</dd>"))
    #expect(html.contains("200: 1, 206: 1, 503: 1"))
    #expect(html.contains(#"<span class="label">SQL (12 changed)</span> DELETE FROM t WHERE a &lt; 3 AND b = &#39;x&#39;;"#))
    #expect(html.contains(#"<td class="number">1.000 s (Retry-After)</td>"#))
    // The scale: 3 s over 740 px; the step starts 0.1 s in, its schema fetch takes 0.2 s, so
    // its own call's first attempt starts at 0.3 s: x = 220 + 0.3 × 740 / 3 = 294.
    #expect(html.contains(#"<rect class="attempt failed" x="294" y="#))
  }

  @Test func bytesOnTheWireAreShownUnderTheBytesOnlyWhenTheyDiffer() throws {
    func step(_ id: String, _ pairs: [(key: String, value: JSONValue)]) -> JSONValue {
      .object([("id", .string(id)), ("kind", .string("http")), ("status", .string("succeeded"))] + pairs)
    }
    let report = JSONValue.object([
      ("format_version", .integer(1)), ("job", .string("j")), ("run_id", .string("r1")), ("status", .string("succeeded")),
      (
        "steps",
        .array([
          step("gzip", [("bytes", .integer(24_604_549)), ("wire_bytes", .integer(2_513_524))]),
          step("plain", [("bytes", .integer(1000)), ("wire_bytes", .integer(1000))]),
          step("older", [("bytes", .integer(7))]),
        ])
      ),
    ])
    let html = ReportPage(job: "j", run: .report(report), history: []).html()
    #expect(try Self.problems(html) == "")
    #expect(html.contains(#"<td class="number">24,604,549<br/>2,513,524 on the wire</td>"#))
    #expect(html.contains(#"<td class="number">1,000</td>"#))
    #expect(html.contains(#"<td class="number">7</td>"#))
    #expect(html.components(separatedBy: "on the wire").count == 2)
  }

  /// Physical table names (in the tables and the rows columns) wrap after each `__`, never
  /// letter by letter: a `<wbr/>` there, and the column keeps its longest part whole
  /// (`overflow-wrap: break-word`, not `anywhere`).
  @Test func tableNamesWrapWhereTheirPartsMeet() throws {
    let report = JSONValue.object([
      ("format_version", .integer(1)), ("job", .string("j")), ("run_id", .string("r1")), ("status", .string("succeeded")),
      (
        "steps",
        .array([
          .object([
            ("id", .string("load")), ("kind", .string("table_stream")), ("status", .string("succeeded")),
            ("tables", .array([.string("FRUITS__output_table__b655ebc6"), .string("A<B__x")])),
            ("rows", .object([("FRUITS__output_table__b655ebc6", .integer(1249))])),
          ])
        ])
      ),
    ])
    let html = ReportPage(job: "j", run: .report(report), history: []).html()
    #expect(try Self.problems(html) == "")
    #expect(html.contains(#"<td class="tables">FRUITS__<wbr/>output_table__<wbr/>b655ebc6, A&lt;B__<wbr/>x</td>"#))
    #expect(html.contains(#"<td class="number rows">FRUITS__<wbr/>output_table__<wbr/>b655ebc6: 1,249</td>"#))
    #expect(html.contains("td.tables, td.rows { overflow-wrap: break-word; white-space: normal; }"))
  }

  @Test func aReportThatCannotBeReadIsNamedNotFatal() throws {
    let unreadable = ReportPage(
      job: "j", run: .unreadable(path: "/r/j-1.json", reason: "no such file"),
      history: [Self.run("1", "abandoned", report: .unreadable(path: "/r/j-1.json", reason: "no such file"))]
    ).html()
    #expect(try Self.problems(unreadable) == "")
    #expect(unreadable.contains(#"<p class="problem">The report /r/j-1.json could not be read: no such file</p>"#))
    #expect(unreadable.contains(#"<td class="problem">report /r/j-1.json: no such file</td>"#))
    // The journal's times give the duration of a run whose report is gone.
    #expect(unreadable.contains(#"<td class="number">2.500 s</td>"#))

    let foreign = ReportPage(job: "j", run: .report(.object([("format_version", .integer(2))])), history: []).html()
    #expect(foreign.contains("The run&#39;s report is not a dray report of format version 1."))
    let none = ReportPage(job: "j", run: nil, history: [], historyProblem: "No runs yet: there is no run journal at /x.").html()
    #expect(try Self.problems(none) == "")
    #expect(none.contains("<h1>job j: no run yet</h1>"))
    #expect(none.contains(#"<p class="problem">No runs yet: there is no run journal at /x.</p>"#))
  }

  @Test func theHistoryMarksEveryRunThatDidNotSucceed() throws {
    let report = try Self.fixture("hostile-report.json")
    let statuses = ["succeeded", "failed", "interrupted", "abandoned", "succeeded", "running"]
    let runs = statuses.enumerated().map { Self.run("r\($0)", $1, report: .report(report)) }
    let html = ReportPage(job: "j", run: .report(report), history: runs).html()
    #expect(try Self.problems(html) == "")
    #expect(html.contains("<h2>The last 6 runs</h2>"))
    // Two charts (duration, the one table); four runs marked in each.
    #expect(html.components(separatedBy: "<figure class=\"chart\">").count - 1 == 2)
    #expect(html.components(separatedBy: "class=\"mark ").count - 1 == 8)
    #expect(html.components(separatedBy: "class=\"mark failed\"").count - 1 == 2)
    #expect(html.contains("<title>r2 interrupted: 3.000 s</title>"))
  }
}
