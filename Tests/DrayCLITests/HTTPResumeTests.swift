import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A paginated `http` load killed with SIGKILL between pages, then run again, on both
/// targets (the pages stage in the SQLite target, or in the local file beside a PostgreSQL
/// one).
@Suite struct HTTPResumeTests {
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKillBetweenPagesResumesWithoutFetchingAnyCommittedPageAgain(kind: TargetDatabase.Kind) throws {
    // 50 items, 10 a page: 5 pages. The server holds its answer to page 3 for 30 s, once.
    let server = try RestServer(["--items", "50", "--rule", #"{"path": "/items", "query": {"page": "3"}, "delay": 30, "times": 1}"#])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try folder.write(
      "rest.yaml",
      """
      version: 1
      job: rest-resume
      \(target.manifestBlock)steps:
        - id: items
          http:
            base_url: ${API}
            path: items
            query: { per_page: 10 }
            load: { table: items, records: /data }
            paginate: { next: /links/next }
      """)
    let first = try ChildProcess.dray(["run", job], environment: ["API": server.url], logPrefix: folder.path + "/first")
    let asked = first.waitUntil(timeout: 30) { (try? server.requests().contains { $0.path.contains("page=3") }) ?? false }
    #expect(asked, "dray never asked for page 3: \(first.errors)")
    // dray asks for page 3 only after page 2's rows and ledger entry are committed.
    first.send(SIGKILL)
    #expect(first.wait() == .signaled(SIGKILL))

    let staging = try Database(path: target.stagingPath(job: "rest-resume"))
    #expect(
      try staging.rows("SELECT pages, rows FROM _dray_http_pages WHERE job = 'rest-resume' AND step_id = 'items'").map(\.values)
        == [[.integer(2), .integer(20)]])
    #expect(try staging.rows("SELECT count(*) FROM \"_dray_http__rest-resume__items\"").first?.values.first == .integer(20))
    #expect(try target.columnNames("items") == [], "readers never see a half-loaded table")

    let second = try Command.dray(["run", job], environment: ["API": server.url])
    #expect(second.status == 0, "\(second.output)")
    #expect(second.stdout.contains("  items  http  succeeded  50 rows"))
    #expect(second.stderr.contains("step items: resuming after page 2"))

    let pages = try server.requests().map(\.path)
    #expect(
      pages == [
        "/items?per_page=10", "/items?page=2&per_page=10", "/items?page=3&per_page=10",  // the killed run
        "/items?page=3&per_page=10", "/items?page=4&per_page=10", "/items?page=5&per_page=10",  // the resumed run
      ])
    #expect(try target.rows("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items") == [["50", "50", "1", "50"]])
    #expect(try staging.rows("SELECT count(*) FROM _dray_http_pages").first?.values.first == .integer(0))
  }
}
