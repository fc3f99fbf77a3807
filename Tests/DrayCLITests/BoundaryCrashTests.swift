import DrayTestSupport
import Foundation
import Glibc
import Testing

/// An incremental `append` whose next step edits the rows it appended, killed (SIGKILL)
/// while the kept cursor and the digests of the records at it are staged, published, or
/// followed by the editing step: after the reruns every record version is in the table
/// exactly once, and runs over an unchanged API append nothing (docs/http.md, "Cursor
/// boundaries").
@Suite struct BoundaryCrashTests {
  @Test(arguments: TargetDatabase.Kind.allCases, ["page-committed:e:2", "published:e", "before-commit:tidy", "committed:e"])
  func aKillAroundThePublishKeepsTheBoundaryRecordsExact(kind: TargetDatabase.Kind, point: String) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "5"])
    try server.setOrdersMode(#"{"boundary": "inclusive"}"#)
    try """
    version: 1
    job: shop
    \(target.manifestBlock)steps:
      - id: e
        http:
          base_url: "\(server.url)"
          path: orders
          query: { per_page: 2 }
          load: { table: ev, records: /data, write: append }
          paginate: { next: /links/next }
          incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z" }
      - id: tidy
        sql: UPDATE ev SET total = round(total)

    """.write(toFile: folder.path + "/job.yaml", atomically: true, encoding: .utf8)
    var runs = 0
    func run(crashAt point: String? = nil) throws -> ChildProcess.Termination {
      runs += 1
      return try ChildProcess.dray(
        ["run", folder.path + "/job.yaml"], environment: point.map { ["DRAY_TEST_CRASH_AT": $0] } ?? [:],
        logPrefix: folder.path + "/run-\(runs)"
      ).wait()
    }
    #expect(try run() == .exited(0))
    // Order 1 changed, then three records sharing the newest value: the second run's pages
    // are [5, 1], [6, 7], [8], so the burst's records at the cursor it keeps span two pages
    // (a kill after page 2 leaves half of their digests staged).
    try server.changeOrders(#"{"update": [1], "set": {"status": "paid"}}"#)
    try server.changeOrders(#"{"insert": 3, "burst": true}"#)
    #expect(try run(crashAt: point) == .signaled(SIGKILL))
    for _ in 1...3 { #expect(try run() == .exited(0)) }
    // 5 first versions, 3 new records, and order 1's second version: each once.
    #expect(try target.rows("SELECT count(*) FROM ev") == [["9"]])
    #expect(try target.rows("SELECT count(*) FROM (SELECT DISTINCT id, updated_at FROM ev) AS v") == [["9"]])
    #expect(try target.rows("SELECT count(*) FROM ev WHERE total <> round(total)") == [["0"]])
  }
}
