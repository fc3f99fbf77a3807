import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// `load.delete_missing` (docs/http.md, "Deleting what the API no longer lists"): a full
/// `merge` pull of the REST test server's live orders (`/stripe/orders`, 3 a page) deletes
/// the rows whose key it did not see, and only a complete pull does; on both targets.
@Suite struct DeleteMissingTests {
  let folder = TemporaryDirectory()

  func run(_ server: RestServer, _ target: TargetDatabase, maxPages: Int? = nil, contract: String? = nil) throws -> RunReport {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 1, interval: 10ms }
      steps:
        - id: orders
          http:
            base_url: '\(server.url)'
            path: stripe/orders
            query: { limit: 3 }
            load: { table: orders, records: /data, write: merge, primary_key: [id], delete_missing: true\(contract.map { ", contract: \($0)" } ?? "") }
            paginate: { cursor: { param: starting_after, from_last_record: /id }, more: /has_more\(maxPages.map { ", max_pages: \($0)" } ?? "") }
      """)
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  func ids(_ target: TargetDatabase) throws -> [String?] {
    try target.rows("SELECT id FROM orders ORDER BY id").map { $0[0] }
  }

  /// Twelve orders on the server (four pages), loaded once: nothing to delete yet.
  func loaded(_ target: TargetDatabase) throws -> RestServer {
    let server = try RestServer(["--orders", "12"])
    let first = try run(server, target)
    try #require(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
    #expect(first.steps.first?.rowsDeleted == 0)
    #expect(try ids(target).count == 12)
    return server
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aRecordTheAPINoLongerListsIsDeletedByAFullPull(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"delete": [2, 7]}"#)
    try server.changeOrders(#"{"update": [5], "set": {"status": "paid"}}"#)
    let report = try run(server, target)
    let step = try #require(report.steps.first)
    #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
    #expect(try ids(target) == ["1", "3", "4", "5", "6", "8", "9", "10", "11", "12"])
    #expect(try target.rows("SELECT status FROM orders WHERE id = 5") == [["paid"]])
    #expect(step.rowsDeleted == 2)
    #expect(step.notes.contains("deleted 2 rows whose key the pull did not see (load.delete_missing)"), "\(step.notes)")
    let json = try folder.write("report.json", report.json())
    #expect(try ReportCheck.problems([json]) == "")
    let written = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
    let steps = try #require(written["steps"] as? [[String: Any]])
    #expect(steps.first?["rows_deleted"] as? Int == 2)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPullThatFailsOnPage3DeletesNothing(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    let before = try target.rows("SELECT * FROM orders ORDER BY id")
    try server.changeOrders(#"{"delete": [2, 7]}"#)
    // The live orders page as [1, 3, 4], [5, 6, 8], [9, 10, 11], [12]: page 3 fails for good.
    try server.setRules(#"[{"path": "/stripe/orders", "query": {"starting_after": "8"}, "status": 500, "times": 100}]"#)
    let failed = try run(server, target)
    #expect(failed.status == .failed)
    #expect(failed.steps.first?.rowsDeleted == nil)
    #expect(try target.rows("SELECT * FROM orders ORDER BY id") == before)
    // The next run resumes from page 3 and, the pull complete, deletes what it did not see.
    try server.setRules("[]")
    let resumed = try run(server, target)
    #expect(resumed.status == .succeeded, "\(resumed.steps.first?.errorMessage ?? "")")
    #expect(try ids(target) == ["1", "3", "4", "5", "6", "8", "9", "10", "11", "12"])
    #expect(resumed.steps.first?.rowsDeleted == 2)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPullMaxPagesStoppedDeletesNothing(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"delete": [2, 11]}"#)
    let report = try run(server, target, maxPages: 2)
    let step = try #require(report.steps.first)
    #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
    #expect(try ids(target).count == 12)
    #expect(step.rowsDeleted == 0)
    #expect(
      step.notes.contains(
        "load.delete_missing deleted nothing: paginate.max_pages stopped the pull before its last page, so it did not see every record"),
      "\(step.notes)")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPullWhoseContractSetRecordsAsideDeletesNothing(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"delete": [2]}"#)
    try server.changeOrders(#"{"update": [4], "set": {"priority": "high"}}"#)
    let report = try run(server, target, contract: "{ new_columns: discard_row }")
    let step = try #require(report.steps.first)
    #expect(report.status == .succeeded, "\(step.errorMessage ?? "")")
    // Order 4 went to the quarantine, so the pull cannot tell 2 from 4: neither is deleted.
    #expect(try ids(target).count == 12)
    #expect(step.rowsDeleted == 0)
    #expect(step.contract?.setAside == 1)
    #expect(
      step.notes.contains("load.delete_missing deleted nothing: the contract set 1 record aside, whose keys the table did not get"),
      "\(step.notes)")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPullWithoutRecordsDoesNotEmptyTheTableUnasked(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try loaded(target)
    try server.changeOrders(#"{"delete": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}"#)
    let report = try run(server, target)
    #expect(report.status == .failed)
    #expect(report.steps.first?.errorMessage?.contains("a merge with load.delete_missing would leave the table empty") == true)
    #expect(try ids(target).count == 12)
  }
}
