import DrayEngine
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// Each cause of a step failure reports its own `error.code` (docs/report.md, "Error codes").
@Suite struct StepErrorCodeTests {
  @Test func aGroupWhoseMemberFailedReportsGroupFailed() throws {
    let (_, report) = try runJob(
      TemporaryDirectory(),
      """
      version: 1
      job: codes
      database: { path: data/db.sqlite }
      steps:
        - id: group
          parallel:
            steps:
              - id: fine
                sql: SELECT 1
              - id: broken
                sql: SELECT * FROM nowhere
      """)
    #expect(report.exitCode == 1)
    #expect(report.steps[0].errorCode == "group_failed")
    #expect(report.steps[0].errorMessage == "steps failed in the group: broken")
    #expect(report.steps[0].members.map(\.errorCode) == [nil, "sqlite_error"])
  }

  @Test func aQueryOfTwoStatementsReportsNotOneStatement() throws {
    let (_, report) = try runJob(
      TemporaryDirectory(),
      """
      version: 1
      job: codes
      database: { path: data/db.sqlite }
      steps:
        - id: check
          query: { sql: "SELECT 1; SELECT 2" }
      """)
    #expect(report.steps[0].errorCode == "not_one_statement")
    #expect(report.steps[0].errorMessage == "a query runs one statement; found another after the first: SELECT 2; use a sql step for it")
  }

  @Test func anAnswerThatIsNotATableAnswerReportsAnswerUnreadable() throws {
    let emulator = try Emulator()
    try emulator.admin("POST", "faults", json: #"[{"path": "/api/v1/rpc/FRUITS/", "times": 1, "garble": true}]"#)
    let (_, report) = try runJob(
      TemporaryDirectory(),
      JobText.header(job: "codes", emulator: emulator) + """
        steps:
          - id: fruits
            table: { resource: FRUITS, output: out/fruits.json }
        """)
    #expect(report.steps[0].errorCode == "answer_unreadable")
    #expect(report.steps[0].errorMessage?.hasPrefix("the answer of FRUITS is not a table answer: ") == true)
  }

  @Test func aResourceOfTwoTablesWrittenAsCSVReportsNotOneTable() throws {
    let folder = TemporaryDirectory()
    let resources = try folder.write(
      "resources.json",
      #"""
      {"environment": "DocumentationExampleEnv", "project": "DocumentationExampleProj", "resources": {
        "TWO": {"outputs": {
          "first": {"columns": [["a", "TEXT", "text"]], "rows": [["x"]]},
          "second": {"columns": [["b", "TEXT", "text"]], "rows": [["y"]]}}}}}
      """#)
    let emulator = try Emulator(["--resources", resources])
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "codes", emulator: emulator) + """
        steps:
          - id: two
            table: { resource: TWO, output: out/two.csv, format: csv }
        """)
    #expect(report.steps[0].errorCode == "not_one_table")
    #expect(
      report.steps[0].errorMessage
        == "resource 'TWO' has 2 output tables (first, second); a csv file holds one table: use format: json")
  }
}
