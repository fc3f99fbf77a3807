import DrayEngine
import DrayModel
import DrayStore
import DrayTestSupport
import Foundation
import Testing

/// A platform answer the tables already hold is not loaded again (`Store.holdsAnswer`), and
/// an answer that is not what was expected names what it is.
@Suite struct UnchangedAnswerTests {
  static let steps = """
    steps:
      - id: fruits
        table_stream: { resource: FRUITS }
    """

  func rows(_ folder: TemporaryDirectory, _ sql: String) throws -> [[SQLValue]] {
    try Database(path: folder.path + "/data.sqlite").rows(sql).map { $0.map(\.1) }
  }

  @Test func theSameAnswerAgainRewritesNoRowAndATableChangedSinceIsLoadedAgain() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = JobText.header(job: "same", emulator: emulator, database: "data.sqlite") + Self.steps
    let (_, first) = try runJob(folder, job)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(!first.steps[0].unchanged)
    let table = "FRUITS__output_table"
    let database = try Database(path: folder.path + "/data.sqlite")
    _ = try database.execute("CREATE TABLE audit(event TEXT)")
    for event in ["INSERT", "UPDATE", "DELETE"] {
      _ = try database.execute("CREATE TRIGGER audit_\(event) AFTER \(event) ON \(table) BEGIN INSERT INTO audit VALUES ('\(event)'); END")
    }

    let (_, second) = try runJob(folder, job)
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    let step = second.steps[0]
    #expect(step.unchanged)
    #expect(step.rows == [table: 5])
    let requests = try emulator.requests().filter { ($0["path"] as? String) == "/api/v1/rpc/FRUITS/" }
    let headers = try #require(requests.last?["headers"] as? [String: String])
    #expect(headers["Accept-Encoding"] == "gzip")
    #expect(
      step.notes.contains {
        $0.hasPrefix("unchanged: every table already holds this answer (ETag \"") && $0.hasSuffix("; no row rewritten")
      })
    #expect(try rows(folder, "SELECT count(*) FROM audit") == [[.integer(0)]])
    #expect(try rows(folder, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == [[.integer(3)]])

    // A row deleted behind dray's back: the recorded row count no longer matches, so the
    // same answer is loaded again and the table is whole.
    _ = try database.execute("DROP TRIGGER audit_DELETE")
    _ = try database.execute("DELETE FROM \(table) WHERE id = 2")
    let (_, third) = try runJob(folder, job)
    #expect(third.exitCode == 0)
    #expect(!third.steps[0].unchanged)
    #expect(try rows(folder, "SELECT count(*) FROM \(table)") == [[.integer(5)]])
  }

  @Test func anHTMLPageInPlaceOfTheDataNamesItsTypeAndEncoding() throws {
    let emulator = try Emulator([
      "--fault", #"{"path": "/api/v1/rpc/FRUITS/", "content_type": "text/html", "body": "<html><body>502 Bad Gateway</body></html>"}"#,
    ])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(folder, JobText.header(job: "html", emulator: emulator, database: "data.sqlite") + Self.steps)
    #expect(report.exitCode == 1)
    let message = try #require(report.steps[0].errorMessage)
    #expect(
      message.hasSuffix(
        " (the server sent it as Content-Type: text/html, Content-Encoding: gzip); the answer was discarded, so the next run downloads it again"
      ),
      "\(message)")
  }
}
