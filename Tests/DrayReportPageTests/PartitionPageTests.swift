import DrayJSON
import DrayModel
import DrayReportPage
import DrayTestSupport
import Foundation
import Testing

/// The page of a run with a partitioned step: the report lists its partitions under
/// `partitions` (docs/report.md), and each one is drawn as a group's member is.
@Suite struct PartitionPageTests {
  @Test func eachPartitionIsDrawnUnderItsStep() throws {
    func partition(_ repo: String, _ status: String) -> JSONValue {
      .object([
        ("id", .string("issues[repo=\(repo)]")), ("partition", .object([("repo", .string(repo))])), ("kind", .string("http")),
        ("status", .string(status)), ("rows", .object([("issues", .integer(250))])),
      ])
    }
    let report = JSONValue.object([
      ("format_version", .integer(1)), ("job", .string("j")), ("run_id", .string("r1")), ("status", .string("failed")),
      (
        "steps",
        .array([
          .object([
            ("id", .string("issues")), ("kind", .string("http")), ("status", .string("failed")),
            ("partitions", .array([partition("1", "succeeded"), partition("5", "failed"), partition("6", "not_run")])),
          ])
        ])
      ),
    ])
    let html = ReportPage(job: "j", run: .report(report), history: []).html()
    #expect(try ReportPageTests.problems(html) == "")
    for id in ["issues[repo=1]", "issues[repo=5]", "issues[repo=6]"] {
      #expect(html.contains(#"<th scope="row">\#(id)</th>"#), "\(id)")
      #expect(html.contains(">↳ \(id)<title>"), "\(id)")
    }
  }
}
