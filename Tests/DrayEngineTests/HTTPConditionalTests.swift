import DrayManifest
import DrayModel
import DrayPostgres
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Synchronization
import Testing

@testable import DrayEngine

/// The `http` step on the wire: gzip asked and decoded, a user's own Accept-Encoding sent
/// as written, and conditional requests (RFC 9110 §13) that leave an unchanged table alone,
/// on both targets (one suite, two databases).
@Suite struct HTTPConditionalTests {
  let folder = TemporaryDirectory()

  func manifest(_ http: String, server: RestServer, target: TargetDatabase, then more: String = "") throws -> Manifest {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: rest
      \(target.manifestBlock)retry: { count: 2, interval: 10ms }
      steps:
        - id: items
          http: \(http)
      \(more)
      """)
    return try ManifestLoader(environment: ["API": server.url]).load(path: path)
  }

  func run(_ http: String, server: RestServer, target: TargetDatabase, fresh: Bool = false, then more: String = "") throws -> RunReport {
    let manifest = try manifest(http, server: server, target: target, then: more)
    return Runner(manifest: manifest, options: RunFlags(fresh: fresh), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  static let items = "{ base_url: '${API}', path: items, query: { per_page: 100 }, load: { table: items, records: /data } }"
  /// The columns the items' records give the table, in order (a PostgreSQL `replace` keeps
  /// a column added since, holding NULL; docs/http.md).
  static let itemColumns = "SELECT id, name, price, code, active, note, tags FROM items ORDER BY id"

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aSecondRunAgainstAnUnchangedResourceTransfersNoBodyAndRewritesNoRow(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    let first = try run(Self.items, server: server, target: target)
    #expect(first.exitCode == 0, "\(first.steps.map { $0.errorMessage ?? "" })")
    #expect(try target.rows("SELECT count(*) FROM items") == [["25"]])
    // Any write to the table from now on leaves a mark; a replaced table loses the triggers.
    try target.auditWrites(on: "items")
    // PostgreSQL: the transaction that wrote each row version.
    let versions = kind == .postgres ? try target.rows("SELECT xmin::text FROM items ORDER BY id") : []

    let second = try run(Self.items, server: server, target: target)
    #expect(second.exitCode == 0, "\(second.steps.map { $0.errorMessage ?? "" })")
    let requests = try server.requests()
    #expect(requests.map(\.status) == [200, 304])
    #expect(requests.first?["If-None-Match"] == nil)
    #expect(requests[1]["If-None-Match"]?.hasPrefix("\"") == true)
    #expect(requests[1]["If-Modified-Since"]?.hasSuffix(" GMT") == true)
    #expect(requests[1].responseBytes == 0)
    let step = second.steps[0]
    #expect(step.unchanged)
    #expect((step.bytes, step.wireBytes) == (0, 0))
    // The kept table's rows, as a load reports them (the run's summary shows them).
    #expect(step.rows == ["items": 25])
    #expect(
      step.notes == [
        "unchanged: the server answered 304 Not Modified to If-None-Match: \(requests[1]["If-None-Match"] ?? ""), "
          + "If-Modified-Since: \(requests[1]["If-Modified-Since"] ?? ""); table items kept as it is"
      ])
    #expect(RunReport.stepJSON(step)["unchanged"] == .bool(true))
    let audited = try target.auditedWrites(on: "items")
    #expect(audited.events == [] && audited.watching)
    if kind == .postgres { #expect(try target.rows("SELECT xmin::text FROM items ORDER BY id") == versions) }
    #expect(try target.rows("SELECT count(*) FROM items") == [["25"]])

    // A changed resource answers 200 and is loaded; --fresh sends no preconditions.
    try server.changeItems(count: 30)
    let third = try run(Self.items, server: server, target: target)
    #expect(third.exitCode == 0)
    #expect(!third.steps[0].unchanged)
    #expect(try target.rows("SELECT count(*) FROM items") == [["30"]])
    let fourth = try run(Self.items, server: server, target: target, fresh: true)
    #expect(fourth.exitCode == 0)
    // ... and keeps the validators of what it loaded, which the next run sends.
    let fifth = try run(Self.items, server: server, target: target)
    #expect(fifth.steps[0].unchanged)
    let all = try server.requests()
    #expect(all.map(\.status) == [200, 304, 200, 200, 304])
    #expect(all[3]["If-None-Match"] == nil && all[3]["If-Modified-Since"] == nil)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableTheJobsSQLChangesInPlaceIsLoadedAgainNotKeptBy304(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    let raise = "  - id: raise\n    sql: UPDATE items SET price = price * 2"
    var prices: [[[String?]]] = []
    for _ in 1...3 {
      let report = try run(Self.items, server: server, target: target, then: raise)
      #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
      #expect(!report.steps[0].unchanged)
      prices.append(try target.rows("SELECT id, price FROM items ORDER BY id"))
    }
    #expect(prices[0].count == 25)
    #expect(prices[1] == prices[0] && prices[2] == prices[0])
    // The changed table is asked for without validators: one request a run, each a 200.
    let requests = try server.requests()
    #expect(requests.map(\.status) == [200, 200, 200])
    #expect(requests.allSatisfy { $0["If-None-Match"] == nil && $0["If-Modified-Since"] == nil })
  }

  /// Changes another program makes between runs, each with the statements that make it.
  static func changes(_ kind: TargetDatabase.Kind) -> [[String]] {
    let common = [
      ["UPDATE items SET name = 'x' WHERE id = 3"],
      ["DELETE FROM items WHERE id = 4"],
      ["INSERT INTO items(id) VALUES (99)"],
      ["ALTER TABLE items ADD COLUMN added_later TEXT"],
      ["CREATE TABLE copy AS SELECT * FROM items", "DROP TABLE items", "ALTER TABLE copy RENAME TO items"],
    ]
    switch kind {
    case .sqlite: return common + [["DROP TRIGGER \"\(TableGuard.trigger("update", of: "items"))\""]]
    case .postgres:
      return common + [
        ["TRUNCATE items"], ["DROP TRIGGER _dray_guard ON items"], ["ALTER TABLE items DISABLE TRIGGER _dray_guard"],
      ]
    }
  }

  /// A table changed before the run starts is asked for without validators, and loaded.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableChangedOutsideDrayBetweenRunsIsLoadedAgain(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    let first = try run(Self.items, server: server, target: target)
    #expect(first.exitCode == 0)
    let loaded = try target.rows(Self.itemColumns)
    #expect(loaded.count == 25)
    let changes = Self.changes(kind)
    for change in changes {
      for statement in change { try target.execute(statement) }
      let report = try run(Self.items, server: server, target: target)
      #expect(report.exitCode == 0, "\(change): \(report.steps.map { $0.errorMessage ?? "" })")
      #expect(!report.steps[0].unchanged, "\(change)")
      #expect(try target.rows(Self.itemColumns) == loaded, "\(change)")
    }
    // Left alone, it is kept again: one small request, no row rewritten.
    let kept = try run(Self.items, server: server, target: target)
    #expect(kept.steps[0].unchanged)
    let requests = try server.requests()
    #expect(requests.map(\.status) == [200] + changes.map { _ in 200 } + [304])
    #expect(requests.dropFirst().dropLast().allSatisfy { $0["If-None-Match"] == nil })
  }

  /// The table guard's second look: a table changed while the conditional request is out
  /// (the server holds it until the change is committed) gets a 304 to validators that no
  /// longer describe it, so the step asks again without them and loads the server's rows.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableChangedWhileTheConditionalRequestIsOutIsAskedForAgainAndLoaded(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    #expect(try run(Self.items, server: server, target: target).exitCode == 0)
    let loaded = try target.rows(Self.itemColumns)
    #expect(loaded.count == 25)

    try server.setRules(#"[{"path": "/items", "validators": true, "hold": true, "times": 1}, {"path": "/items", "validators": true}]"#)
    let manifest = try manifest(Self.items, server: server, target: target)
    let finished = DispatchSemaphore(value: 0)
    let second = Mutex<RunReport?>(nil)
    Thread.detachNewThread {
      let report = Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
      second.withLock { $0 = report }
      finished.signal()
    }
    #expect(try server.waitForHeld() == 1)
    try target.execute("UPDATE items SET name = 'edited', price = 0 WHERE id IN (3, 7)")
    try server.release()
    finished.wait()
    let report = try #require(second.withLock { $0 })
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    let step = report.steps[0]
    #expect(!step.unchanged)
    #expect(step.notes.contains("table items changed during the conditional request; asked again without validators"))
    #expect(step.rows == ["items": 25])
    let requests = try server.requests()
    #expect(requests.map(\.status) == [200, 304, 200])
    #expect(requests[1]["If-None-Match"] != nil)
    #expect(requests[2]["If-None-Match"] == nil && requests[2]["If-Modified-Since"] == nil)
    // The table equals the server's answer, not the edited one.
    #expect(try target.rows(Self.itemColumns) == loaded)

    // What it loaded is kept again: the next run's request gets a 304.
    let third = try run(Self.items, server: server, target: target)
    #expect(third.steps[0].unchanged)
    #expect(try server.requests().map(\.status) == [200, 304, 200, 304])
  }

  /// A table name longer than PostgreSQL keeps (63 bytes, fitted by `PostgresIdentifier`)
  /// is guarded under the name PostgreSQL gives it: kept by a 304, and loaded again once
  /// changed.
  @Test func aTableNamePostgreSQLCutsIsGuardedUnderItsFittedName() throws {
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    let table = "items_" + String(repeating: "long_", count: 14)
    let fitted = PostgresIdentifier.fitted(table)
    #expect(fitted != table)
    let http = Self.items.replacing("table: items", with: "table: \(table)")
    #expect(try run(http, server: server, target: target).exitCode == 0)
    let kept = try run(http, server: server, target: target)
    #expect(kept.steps[0].unchanged, "\(kept.steps[0].notes)")
    try target.execute("DELETE FROM \(PostgresIdentifier.quoted(fitted)) WHERE id = 1")
    let loaded = try run(http, server: server, target: target)
    #expect(!loaded.steps[0].unchanged)
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM \(PostgresIdentifier.quoted(fitted))") == [["25", "25"]])
    #expect(try server.requests().map(\.status) == [200, 304, 200])
  }

  @Test func aStepAsksForGzipAndReportsBytesOnTheWireAndDecoded() throws {
    let server = try RestServer()
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let report = try run(Self.items, server: server, target: target)
    #expect(report.exitCode == 0)
    let request = try #require(try server.requests().first)
    #expect(request["Accept-Encoding"] == "gzip")
    #expect(request.contentEncoding == "gzip")
    let step = report.steps[0]
    #expect(step.wireBytes == request.responseBytes)
    #expect(step.wireBytes * 2 < step.bytes)
    #expect(try target.rows("SELECT count(*) FROM items") == [["25"]])
  }

  @Test func aStepsOwnAcceptEncodingIsSentAsWritten() throws {
    let server = try RestServer()
    let report = try run(
      "{ base_url: '${API}', path: items, headers: { Accept-Encoding: identity }, load: { table: items, records: /data } }", server: server,
      target: TargetDatabase(.sqlite, folder: folder.path))
    #expect(report.exitCode == 0)
    let request = try #require(try server.requests().first)
    #expect(request["Accept-Encoding"] == "identity")
    #expect(request.contentEncoding == nil)
    #expect(report.steps[0].wireBytes == report.steps[0].bytes)
  }

  @Test func anAcceptEncodingDrayCannotDecodeIsRefusedAtValidation() {
    let found = ManifestText.errors(
      """
      version: 1
      job: j
      platform:
        host: http://h/
        environment: e
        project: p
        headers: { Accept-Encoding: gzip }
      steps:
        - http: { base_url: http://h/, headers: { Accept-Encoding: "gzip, compress;q=0.5" } }
      """)
    #expect(
      found == [
        "job.yaml:7:14: error: 'platform.headers.Accept-Encoding' cannot be set: dray asks the platform for gzip on table data and files "
          + "(their X-Range offsets count uncompressed bytes) and for identity on the rest; remove it, and set platform.compression: false "
          + "to ask for identity everywhere",
        "job.yaml:9:62: error: 'steps.http-1.http.headers.Accept-Encoding' names 'compress', which dray cannot decode; use gzip, x-gzip, "
          + "deflate, br, zstd, identity (with ;q= weights if you like)",
      ])
  }
}
