import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A status `on_status` names `empty` on a page the page before promised once ended the
/// pull as complete: `load.delete_missing` deleted the rows of the pages it never read,
/// `replace` cut the table to the first page, and an incremental step moved its cursor past
/// them. Like a `204` there (docs/http.md, "A 204 on a later page"), it fails the step with
/// `bad_answer` and publishes nothing; on the first page, and on a page the pagination only
/// guessed, it keeps its meaning: an empty page. On both targets.
@Suite struct PromisedPageTests {
  let folder = TemporaryDirectory()

  func run(_ server: RestServer, _ target: TargetDatabase, paginate: String, load: String, extra: String = "") throws -> RunReport {
    try runJob(
      folder,
      """
      version: 1
      job: promised
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: items
          http:
            base_url: '${API}'
            path: items
            query: { per_page: 3 }
            paginate: \(paginate)
            on_status: { 404: empty }
            load: \(load)
      \(extra)
      """, environment: ["API": server.url]
    ).1
  }

  static let loads = [
    "{ table: items, records: /data, write: replace }",
    "{ table: items, records: /data, write: merge, primary_key: [id], delete_missing: true }",
  ]

  @Test(arguments: loads, TargetDatabase.Kind.allCases)
  func anEmptyStatusOnALinkedPageFailsAndKeepsTheTable(_ load: String, on kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--items", "9"])
    let target = try TargetDatabase(kind, folder: folder.path)
    let first = try run(server, target, paginate: "{ next: /links/next }", load: load)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT count(*) FROM items") == [["9"]])
    try server.setRules(#"[{"path": "/items", "query": {"page": "2"}, "status": 404, "body": "not found"}]"#)
    let cut = try run(server, target, paginate: "{ next: /links/next }", load: load)
    #expect(cut.exitCode == 1)
    #expect(cut.steps[0].errorCode == "bad_answer")
    #expect(
      cut.steps[0].errorMessage
        == "page 2 (\(server.url)items?page=2&per_page=3): HTTP 404, which on_status names empty, though page 1 linked to this page (paginate.next); an empty status cannot say whether more pages follow, so nothing was published and the next run asks for this page again"
    )
    #expect(try target.rows("SELECT count(*) FROM items") == [["9"]])
    #expect(cut.steps[0].rowsDeleted == nil || cut.steps[0].rowsDeleted == 0)
    // On the first page an empty status keeps its meaning: EmptyAnswerTests.
  }

  /// `page` pagination guesses that the next page exists: an empty status there is how such
  /// a list may end (a Django REST framework list answers 404 past its last page).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anEmptyStatusOnAGuessedPageEndsThePull(kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--items", "9"])
    let target = try TargetDatabase(kind, folder: folder.path)
    try server.setRules(#"[{"path": "/items", "query": {"page": "2"}, "status": 404, "body": "not found"}]"#)
    let report = try run(server, target, paginate: "{ page: { param: page } }", load: Self.loads[0])
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT count(*) FROM items") == [["3"]])
  }

  /// An incremental `append` whose second page answers an empty status publishes nothing and
  /// keeps its cursor: the next run fetches the records of that page and those after it.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anIncrementalPullCutByAnEmptyStatusKeepsItsCursor(kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--orders", "4"])
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = """
      version: 1
      job: promised
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: orders
          http:
            base_url: '${API}'
            path: orders
            query: { per_page: 2 }
            paginate: { next: /links/next }
            on_status: { 404: empty }
            load: { table: events, records: /data, write: append }
            incremental: { cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z' }
      """
    #expect(try runJob(folder, job, environment: ["API": server.url]).1.exitCode == 0)
    let kept = try target.rows("SELECT value FROM _dray_http_cursors WHERE step_id = 'orders'")
    try server.changeOrders(#"{"insert": 5}"#)
    try server.setRules(#"[{"path": "/orders", "query": {"page": "2"}, "status": 404, "body": "not found", "times": 1}]"#)
    let cut = try runJob(folder, job, environment: ["API": server.url]).1
    #expect(cut.steps[0].errorCode == "bad_answer", "\(cut.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT value FROM _dray_http_cursors WHERE step_id = 'orders'") == kept)
    #expect(try target.rows("SELECT count(*) FROM events") == [["4"]])
    let again = try runJob(folder, job, environment: ["API": server.url]).1
    #expect(again.exitCode == 0, "\(again.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM events") == [["9", "9"]])
  }
}
