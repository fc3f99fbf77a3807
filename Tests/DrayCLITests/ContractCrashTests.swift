import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A load whose contract quarantines records, killed (SIGKILL) after a page that staged a
/// quarantined record committed, and right after the load published (docs/http.md,
/// "Contract"): after the next run the table and the quarantine hold exactly what a run
/// without a kill leaves, each quarantined record once. On both targets.
@Suite struct ContractCrashTests {
  static let points = ["page-committed:orders:3", "page-committed:orders:4", "published:orders"]

  @Test(arguments: TargetDatabase.Kind.allCases, points)
  func aKillDuringALoadThatQuarantinesLeavesTableAndQuarantineExact(kind: TargetDatabase.Kind, point: String) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "0"])
    try server.changeOrders(#"{"insert": [{"qty": 1}, {"qty": 2}, {"qty": 3}, {"qty": 4}]}"#)
    try """
    version: 1
    job: orders
    \(target.manifestBlock)steps:
      - id: orders
        http:
          base_url: "\(server.url)"
          path: orders
          query: { per_page: 2 }
          load:
            table: orders
            records: /data
            write: merge
            primary_key: [id]
            contract: { new_columns: discard_row, types: discard_value }
          paginate: { next: /links/next }

    """.write(toFile: folder.path + "/job.yaml", atomically: true, encoding: .utf8)
    func run(_ name: String, crashAt point: String? = nil) throws -> ChildProcess.Termination {
      try ChildProcess.dray(
        ["run", folder.path + "/job.yaml"], environment: point.map { ["DRAY_TEST_CRASH_AT": $0] } ?? [:],
        logPrefix: folder.path + "/" + name
      ).wait()
    }
    #expect(try run("first") == .exited(0))
    // Page 3 holds orders 5 (trimmed) and 6, page 4 order 7 (set aside).
    try server.changeOrders(#"{"insert": [{"qty": "x"}, {"qty": 6}, {"qty": 7, "priority": "high"}]}"#)
    #expect(try run("killed", crashAt: point) == .signaled(SIGKILL))
    #expect(try run("resumed") == .exited(0))
    #expect(
      try target.rows("SELECT id, qty FROM orders ORDER BY id") == [
        ["1", "1"], ["2", "2"], ["3", "3"], ["4", "4"], ["5", nil], ["6", "6"],
      ])
    #expect(try !target.columnNames("orders").contains("priority"))
    let quarantined = try target.rows("SELECT reason, action, page_url FROM orders_rejected ORDER BY action")
    #expect(
      quarantined.map { Array($0.prefix(2)) } == [
        ["new column 'priority'", "set_aside"], [#"'qty': "x" is text, the column is INTEGER"#, "trimmed"],
      ])
    #expect(quarantined.map { $0[2]?.hasSuffix("page=4&per_page=2") ?? false } == [true, false])
    if kind == .sqlite {
      // The staged quarantine went with the publishing transaction.
      #expect(try target.rows("SELECT name FROM sqlite_master WHERE name LIKE '_dray_http_rejected%'") == [])
    }
    // A later run notes the records again, once, with its own run id.
    #expect(try run("later") == .exited(0))
    #expect(
      try target.rows("SELECT reason, count(*) FROM orders_rejected GROUP BY reason ORDER BY reason") == [
        [#"'qty': "x" is text, the column is INTEGER"#, "2"], ["new column 'priority'", "2"],
      ])
  }
}
