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

  static let platformPoints = ["downloaded:items", "before-commit:items", "committed:items"]

  /// A `table_stream` load whose drifted scheme quarantines rows (docs/steps.md, "Scheme
  /// drift"), killed before its transaction, inside it after the quarantine was written,
  /// and right after it committed: after the next run the table and the quarantine hold
  /// exactly what a run without a kill leaves, each quarantined row once.
  @Test(arguments: TargetDatabase.Kind.allCases, platformPoints)
  func aKillDuringAPlatformLoadThatQuarantinesLeavesTableAndQuarantineExact(kind: TargetDatabase.Kind, point: String) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let emulator = try Emulator()
    try
      (JobText.header(job: "drift", emulator: emulator) + target.manifestBlock + """
        steps:
          - id: items
            table_stream:
              resource: test_resource
              load: { contract: { new_columns: discard_row, types: discard_value } }

        """).write(toFile: folder.path + "/job.yaml", atomically: true, encoding: .utf8)
    func run(_ name: String, crashAt point: String? = nil) throws -> ChildProcess.Termination {
      try ChildProcess.dray(
        ["run", folder.path + "/job.yaml"], environment: point.map { ["DRAY_TEST_CRASH_AT": $0] } ?? [:],
        logPrefix: folder.path + "/" + name
      ).wait()
    }
    #expect(try run("first") == .exited(0))
    // Row 2 gains a value in a new column (set aside); row 3's id no longer fits BIGINT (trimmed).
    try emulator.admin(
      "POST", "schemes/test_resource",
      json:
        #"{"columns": [["id", "DOUBLE", "numeric"], ["value", "TEXT", "text"], ["priority", "DOUBLE", "numeric"]], "rows": [[1, "one", null], [2, "two", 2.5], [3.5, "three", null]]}"#
    )
    #expect(try run("killed", crashAt: point) == .signaled(SIGKILL))
    #expect(try run("resumed") == .exited(0))
    let table = "test_resource__output_table"
    let quarantine = "test_resource__output_table_rejected"
    #expect(try target.rows("SELECT id, value FROM \(table) ORDER BY value") == [["1", "one"], [nil, "three"]])
    #expect(try target.columnNames(table) == ["id", "value"])
    #expect(
      try target.rows("SELECT kind, action, reason FROM \(quarantine) ORDER BY kind") == [
        ["new_column", "set_aside", "table 'output_table': new column 'priority' (DOUBLE)"],
        ["type", "trimmed", "table 'output_table': 'id': 3.5 is real, the column is BIGINT"],
      ])
    #expect(try target.rows("SELECT count(DISTINCT run_id) FROM \(quarantine)") == [["1"]])
    // A later run notes the rows again, once, with its own run id.
    #expect(try run("later") == .exited(0))
    #expect(
      try target.rows("SELECT kind, count(*) FROM \(quarantine) GROUP BY kind ORDER BY kind") == [["new_column", "2"], ["type", "2"]])
  }
}
