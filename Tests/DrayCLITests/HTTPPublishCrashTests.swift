import DrayTestSupport
import Foundation
import Glibc
import Testing

/// An incremental `http` load killed (SIGKILL) right after the transaction that published
/// its records committed. On SQLite the records stage in the job's database, and that
/// transaction also dropped the staged pages: nothing staged is left for a reader to see.
/// On PostgreSQL they stage in a local file, cleared after the commit: the next run finds
/// the step's checkpoint and publishes nothing again, and a later run drops the stale staged
/// pages. Either way every record version is in the table exactly once.
@Suite struct HTTPPublishCrashTests {
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKillRightAfterPublishingLoadsEveryVersionOnce(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "10"])
    try """
    version: 1
    job: orders
    \(target.manifestBlock)steps:
      - id: orders
        http:
          base_url: "\(server.url)"
          path: orders
          query: { per_page: 4 }
          load: { table: order_versions, records: /data, write: append }
          paginate: { next: /links/next }
          incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z" }
      - id: after
        sql: CREATE TABLE IF NOT EXISTS done (n integer)

    """.write(toFile: folder.path + "/job.yaml", atomically: true, encoding: .utf8)
    func run(_ name: String, crashAt point: String? = nil) throws -> ChildProcess.Termination {
      try ChildProcess.dray(
        ["run", folder.path + "/job.yaml"], environment: point.map { ["DRAY_TEST_CRASH_AT": $0] } ?? [:],
        logPrefix: folder.path + "/" + name
      ).wait()
    }
    #expect(try run("killed", crashAt: "published:orders") == .signaled(SIGKILL))
    #expect(try target.rows("SELECT count(*) FROM order_versions") == [["10"]])
    if kind == .sqlite {
      // The staged pages went with the publishing transaction (the incremental crash test
      // found them left behind by a kill here, beside a finished job).
      #expect(try target.rows("SELECT name FROM sqlite_master WHERE name LIKE '_dray_http\\_\\_%' ESCAPE '\\'") == [])
      #expect(try target.rows("SELECT count(*) FROM _dray_http_pages") == [["0"]])
    }
    #expect(try run("resumed") == .exited(0))
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM order_versions") == [["10", "10"]])
    try server.changeOrders(#"{"insert": 2, "update": [3]}"#)
    #expect(try run("later") == .exited(0))
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM order_versions") == [["13", "12"]])
    #expect(try target.rows(#"SELECT value FROM _dray_http_cursors"#).count == 1)
  }
}
