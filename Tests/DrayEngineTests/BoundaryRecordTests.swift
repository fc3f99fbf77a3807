import DrayManifest
import DrayModel
import DrayRecords
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

@testable import DrayEngine

/// The records at the kept cursor, which both boundaries ask for again (docs/http.md,
/// "Cursor boundaries"): dray remembers the digests of those a run handled, with the kept
/// cursor, so that the next run neither appends nor quarantines them again, whatever later
/// steps did to the table. Against the REST test server's `/orders` in its inclusive and
/// exclusive modes, on both targets.
@Suite struct BoundaryRecordTests {
  let folder = TemporaryDirectory()

  /// Runs job `shop`: one incremental step `e` over `/orders` with `load`, and `after`'s
  /// steps after it (each a YAML list item).
  func run(
    _ server: RestServer, _ target: TargetDatabase, load: String, boundary: String, perPage: Int = 3, after: String = ""
  ) throws -> RunReport {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 1, interval: 10ms }
      steps:
        - id: e
          http:
            base_url: '\(server.url)'
            path: orders
            query: { per_page: \(perPage) }
            load: \(load)
            paginate: { next: /links/next }
            incremental: { cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z', boundary: \(boundary) }
      \(after)
      """)
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  static let tidy = """
      - id: tidy
        sql: UPDATE ev SET total = round(total)

    """

  /// A server whose `updated_since` is `boundary` (`>=` for inclusive, `>` for exclusive).
  func server(_ boundary: String, orders: Int) throws -> RestServer {
    let server = try RestServer(["--orders", "\(orders)"])
    try server.setOrdersMode(#"{"boundary": "\#(boundary)"}"#)
    return server
  }

  func errors(_ report: RunReport) -> String { report.steps.compactMap(\.errorMessage).joined(separator: "; ") }

  /// D4: a later `sql` step that edits the appended rows (here it rounds `total`) no longer
  /// makes the records at the kept cursor look new: three runs over an unchanged API append
  /// each record once. A record that arrives later at the kept value, and one changed there
  /// (a new version at the same value), are appended.
  @Test(arguments: TargetDatabase.Kind.allCases, ["inclusive", "exclusive"])
  func anSQLStepEditingAppendedRowsDoesNotMakeThemAppendAgain(kind: TargetDatabase.Kind, boundary: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try server(boundary, orders: 3)
    let load = "{ table: ev, records: /data, write: append }"
    for round in 1...3 {
      let report = try run(server, target, load: load, boundary: boundary, after: Self.tidy)
      #expect(report.status == .succeeded, "\(errors(report))")
      #expect(
        try target.rows("SELECT id, count(*) FROM ev GROUP BY id ORDER BY id") == [["1", "1"], ["2", "1"], ["3", "1"]], "run \(round)")
      if round > 1 {
        let notes = report.steps.first?.notes ?? []
        #expect(
          notes.contains("1 record at the kept cursor 2024-01-01T00:00:03Z already appended by an earlier run was not appended again"),
          "\(notes)")
      }
    }
    #expect(try target.rows("SELECT count(*) FROM ev WHERE total <> round(total)") == [["0"]])
    // A record arriving later at the kept value: new, appended once.
    try server.changeOrders(#"{"insert": [{"customer": "late", "updated_at": "2024-01-01T00:00:03Z"}]}"#)
    let fourth = try run(server, target, load: load, boundary: boundary, after: Self.tidy)
    #expect(fourth.status == .succeeded, "\(errors(fourth))")
    #expect(
      try target.rows("SELECT id, customer FROM ev ORDER BY id") == [
        ["1", "customer-1"], ["2", "customer-2"], ["3", "customer-3"], ["4", "late"],
      ])
    let fifth = try run(server, target, load: load, boundary: boundary, after: Self.tidy)
    #expect(fifth.status == .succeeded, "\(errors(fifth))")
    #expect(try target.rows("SELECT count(*) FROM ev") == [["4"]])
    #expect(fifth.steps.first?.notes.contains { $0.hasPrefix("2 records at the kept cursor") } == true, "\(fifth.steps.first?.notes ?? [])")
  }

  /// A `DELETE` step that filters out appended rows does not bring them back either: the
  /// record at the kept cursor is recognised, not appended and deleted again.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDeleteStepDoesNotBringTheBoundaryRecordsBack(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try server("inclusive", orders: 4)
    let prune = "  - id: prune\n    sql: DELETE FROM ev WHERE id > 2\n"
    for round in 1...3 {
      let report = try run(server, target, load: "{ table: ev, records: /data, write: append }", boundary: "inclusive", after: prune)
      #expect(report.status == .succeeded, "\(errors(report))")
      #expect(try target.rows("SELECT id FROM ev ORDER BY id") == [["1"], ["2"]])
      let notes = report.steps.first?.notes ?? []
      #expect(
        notes.contains { $0.hasPrefix("1 record at the kept cursor 2024-01-01T00:00:04Z already appended") } == (round > 1), "\(notes)")
      #expect(notes.contains(round == 1 ? "appended 4 rows" : "appended 0 rows"), "\(notes)")
    }
  }

  /// Issue 1.0: a record the contract sets aside at the kept cursor comes back on every run
  /// (inclusive: the kept value is sent; exclusive: its predecessor), and is quarantined
  /// once: the runs after report 0 set aside, and `max_share` does not fail them. A record
  /// trimmed (`discard_value`) there is noted once too.
  @Test(arguments: TargetDatabase.Kind.allCases, ["merge", "append"])
  func aRecordSetAsideAtTheKeptCursorIsQuarantinedOnce(kind: TargetDatabase.Kind, write: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try server("inclusive", orders: 3)
    let key = write == "merge" ? ", primary_key: [id]" : ""
    let first = try run(server, target, load: "{ table: orders, records: /data, write: \(write)\(key) }", boundary: "inclusive")
    #expect(first.status == .succeeded, "\(errors(first))")
    // A record whose total is text (set aside), then one with a new field (trimmed), both newer.
    try server.changeOrders(#"{"insert": [{"total": "n/a"}]}"#)
    let setAside =
      "{ table: orders, records: /data, write: \(write)\(key), contract: { types: discard_row }, quarantine: { table: q, max_rows: 5, max_share: 0.6 } }"
    for round in 1...3 {
      let report = try run(server, target, load: setAside, boundary: "inclusive")
      #expect(report.status == .succeeded, "run \(round): \(errors(report))")
      #expect(try target.rows("SELECT count(*) FROM q") == [["1"]], "run \(round)")
      let contract = try #require(report.steps.first?.contract)
      #expect(contract.setAside == (round == 1 ? 1 : 0), "run \(round)")
      #expect(contract.loaded == (round == 1 && write == "merge" ? 1 : 0), "run \(round): \(contract)")
      if round > 1 {
        #expect(
          report.steps.first?.notes.contains(
            "1 record at the kept cursor 2024-01-01T00:00:04Z already set aside or trimmed by an earlier run was not quarantined again")
            == true, "\(report.steps.first?.notes ?? [])")
      }
    }
    try server.changeOrders(#"{"insert": [{"coupon": "SPRING"}]}"#)
    let trimmed =
      "{ table: orders, records: /data, write: \(write)\(key), contract: { new_columns: discard_value, types: discard_row }, quarantine: q }"
    for round in 1...3 {
      let report = try run(server, target, load: trimmed, boundary: "inclusive")
      #expect(report.status == .succeeded, "run \(round): \(errors(report))")
      #expect(
        try target.rows("SELECT action, count(*) FROM q GROUP BY action ORDER BY action") == [["set_aside", "1"], ["trimmed", "1"]])
      #expect(report.steps.first?.contract?.trimmed == (round == 1 ? 1 : 0), "run \(round)")
      #expect(try target.rows("SELECT count(*) FROM orders WHERE id = 5") == [["1"]])
    }
    // Changed on the server at the same value: a new version, set aside again.
    try server.changeOrders(#"{"insert": [{"total": "late", "updated_at": "2024-01-01T00:00:05Z"}]}"#)
    let changed = try run(server, target, load: trimmed, boundary: "inclusive")
    #expect(changed.status == .succeeded, "\(errors(changed))")
    #expect(changed.steps.first?.contract?.setAside == 1)
    #expect(try target.rows("SELECT action, count(*) FROM q GROUP BY action ORDER BY action") == [["set_aside", "2"], ["trimmed", "1"]])
  }

  /// A burst of records sharing one cursor value across many pages: the next run gets them
  /// all again and appends none of them, and the kept cursor remembers each.
  /// Environment: `DRAY_BOUNDARY_BURST` (default 2,000 records) to measure a larger one.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aBurstSharingTheKeptValueAcrossPagesIsAppendedOnce(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try server("inclusive", orders: 2)
    let burst = Int(ProcessInfo.processInfo.environment["DRAY_BOUNDARY_BURST"] ?? "") ?? 2_000
    try server.changeOrders(#"{"insert": \#(burst), "burst": true}"#)
    let load = "{ table: ev, records: /data, write: append }"
    var seconds: [Double] = []
    for _ in 1...2 {
      let start = Date()
      let report = try run(server, target, load: load, boundary: "inclusive", perPage: 100, after: Self.tidy)
      seconds.append(Date().timeIntervalSince(start))
      #expect(report.status == .succeeded, "\(errors(report))")
      #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM ev") == [["\(burst + 2)", "\(burst + 2)"]])
    }
    let stored = try #require(try target.rows("SELECT boundary FROM _dray_http_cursors").first?.first ?? nil)
    #expect(stored.split(separator: " ").count == burst)
    print("burst of \(burst) records at one value, 100 a page (\(kind)): runs took \(seconds.map { String(format: "%.2f s", $0) })")
  }

  /// A kept cursor from a dray that kept no digests (the columns missing, as an older dray
  /// made the table) behaves as before once (the table's rows recognise the repeat), then
  /// gets the digests.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKeptCursorWithoutDigestsGetsThemOnTheNextRun(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try server("inclusive", orders: 3)
    let load = "{ table: ev, records: /data, write: append }"
    #expect(try run(server, target, load: load, boundary: "inclusive").status == .succeeded)
    try target.execute("ALTER TABLE _dray_http_cursors DROP COLUMN boundary")
    try target.execute("ALTER TABLE _dray_http_cursors DROP COLUMN staged_boundary")
    let second = try run(server, target, load: load, boundary: "inclusive")
    #expect(second.status == .succeeded, "\(errors(second))")
    #expect(try target.rows("SELECT count(*) FROM ev") == [["3"]])
    #expect(
      try target.rows("SELECT boundary IS NOT NULL FROM _dray_http_cursors").first?.first.map { ["1", "t", "true"].contains($0) } == true)
    let third = try run(server, target, load: load, boundary: "inclusive", after: Self.tidy)
    #expect(third.status == .succeeded, "\(errors(third))")
    let fourth = try run(server, target, load: load, boundary: "inclusive", after: Self.tidy)
    #expect(fourth.status == .succeeded, "\(errors(fourth))")
    #expect(try target.rows("SELECT count(*) FROM ev") == [["3"]])
  }

  /// The digest: the same record in any member order has the same one; any value changed
  /// gives another.
  @Test func aRecordsDigestIgnoresMemberOrderAndSeesEveryValue() {
    let record: [(name: String, value: RecordValue)] = [("id", .integer(1)), ("t", .text("a")), ("x", .real(1.5))]
    let digest = IncrementalRun.digest(of: record)
    #expect(digest.count == 64)
    #expect(IncrementalRun.digest(of: record.reversed()) == digest)
    #expect(IncrementalRun.digest(of: [("id", .integer(1)), ("t", .text("a")), ("x", .real(1.25))]) != digest)
    #expect(IncrementalRun.digest(of: [("id", .integer(1)), ("t", .text("a"))]) != digest)
    #expect(CursorEntry.digests(CursorEntry.storedDigests(["b", "a"])) == ["a", "b"])
    #expect(CursorEntry.digests(CursorEntry.storedDigests([])) == [])
    #expect(CursorEntry.digests(nil) == nil)
  }
}
