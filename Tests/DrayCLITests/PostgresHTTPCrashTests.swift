import DrayTestSupport
import Foundation
import Glibc
import Testing

/// An incremental `http` load into PostgreSQL killed (SIGKILL) after its records committed
/// there and before its local staging file was cleared: the next run finds the step's
/// checkpoint and publishes nothing again, and a later run's stale staged pages are
/// dropped, so every record version is in the table exactly once.
@Suite struct PostgresHTTPCrashTests {
  @Test func aKillBetweenPublishingAndClearingTheStagingFileLoadsEveryVersionOnce() throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
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
    #expect(try run("resumed") == .exited(0))
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM order_versions") == [["10", "10"]])
    try server.changeOrders(#"{"insert": 2, "update": [3]}"#)
    #expect(try run("later") == .exited(0))
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM order_versions") == [["13", "12"]])
    #expect(try target.rows(#"SELECT value FROM _dray_http_cursors"#).count == 1)
  }
}
