import DrayManifest
import DrayModel
import DrayStore
import DrayTestSupport
import Foundation
import Testing

@testable import DrayEngine

/// The `http` step on the wire: gzip asked and decoded, a user's own Accept-Encoding sent
/// as written, and conditional requests (RFC 9110 §13) that leave an unchanged table alone.
@Suite struct HTTPConditionalTests {
  let folder = TemporaryDirectory()

  func run(_ http: String, server: RestServer, fresh: Bool = false, then more: String = "") throws -> RunReport {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: rest
      database: { path: data.sqlite }
      retry: { count: 2, interval: 10ms }
      steps:
        - id: items
          http: \(http)
      \(more)
      """)
    let manifest = try ManifestLoader(environment: ["API": server.url]).load(path: path)
    return Runner(manifest: manifest, options: RunFlags(fresh: fresh), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  func rows(_ sql: String) throws -> [[SQLValue]] {
    try Database(path: folder.path + "/data.sqlite").rows(sql).map { $0.map(\.1) }
  }

  static let items = "{ base_url: '${API}', path: items, query: { per_page: 100 }, load: { table: items, records: /data } }"

  @Test func aSecondRunAgainstAnUnchangedResourceTransfersNoBodyAndRewritesNoRow() throws {
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    let first = try run(Self.items, server: server)
    #expect(first.exitCode == 0, "\(first.steps.map { $0.errorMessage ?? "" })")
    #expect(try rows("SELECT count(*) FROM items") == [[.integer(25)]])
    // Any write to the table from now on leaves a mark; a replaced table loses the triggers.
    let database = try Database(path: folder.path + "/data.sqlite")
    for event in ["INSERT", "UPDATE", "DELETE"] {
      _ = try database.execute("CREATE TABLE IF NOT EXISTS audit(event TEXT)")
      _ = try database.execute("CREATE TRIGGER audit_\(event) AFTER \(event) ON items BEGIN INSERT INTO audit VALUES ('\(event)'); END")
    }

    let second = try run(Self.items, server: server)
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
    #expect(
      step.notes == [
        "unchanged: the server answered 304 Not Modified to If-None-Match: \(requests[1]["If-None-Match"] ?? ""), "
          + "If-Modified-Since: \(requests[1]["If-Modified-Since"] ?? ""); table items kept as it is"
      ])
    #expect(RunReport.stepJSON(step)["unchanged"] == .bool(true))
    #expect(try rows("SELECT count(*) FROM audit") == [[.integer(0)]])
    #expect(try rows("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'audit%'") == [[.integer(3)]])
    #expect(try rows("SELECT count(*) FROM items") == [[.integer(25)]])

    // A changed resource answers 200 and is loaded; --fresh sends no preconditions.
    try server.changeItems(count: 30)
    let third = try run(Self.items, server: server)
    #expect(third.exitCode == 0)
    #expect(!third.steps[0].unchanged)
    #expect(try rows("SELECT count(*) FROM items") == [[.integer(30)]])
    let fourth = try run(Self.items, server: server, fresh: true)
    #expect(fourth.exitCode == 0)
    // ... and keeps the validators of what it loaded, which the next run sends.
    let fifth = try run(Self.items, server: server)
    #expect(fifth.steps[0].unchanged)
    let all = try server.requests()
    #expect(all.map(\.status) == [200, 304, 200, 200, 304])
    #expect(all[3]["If-None-Match"] == nil && all[3]["If-Modified-Since"] == nil)
  }

  @Test func aTableTheJobsSQLChangesInPlaceIsLoadedAgainNotKeptBy304() throws {
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    let raise = "  - id: raise\n    sql: UPDATE items SET price = price * 2"
    var prices: [[[SQLValue]]] = []
    for _ in 1...3 {
      let report = try run(Self.items, server: server, then: raise)
      #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
      #expect(!report.steps[0].unchanged)
      prices.append(try rows("SELECT id, price FROM items ORDER BY id"))
    }
    #expect(prices[1] == prices[0] && prices[2] == prices[0])
    // The changed table is asked for without validators: one request a run, each a 200.
    let requests = try server.requests()
    #expect(requests.map(\.status) == [200, 200, 200])
    #expect(requests.allSatisfy { $0["If-None-Match"] == nil && $0["If-Modified-Since"] == nil })
  }

  @Test func aTableChangedOutsideDrayBetweenRunsIsLoadedAgain() throws {
    let server = try RestServer()
    try server.setRules(#"[{"path": "/items", "validators": true}]"#)
    let first = try run(Self.items, server: server)
    #expect(first.exitCode == 0)
    let loaded = try rows("SELECT * FROM items ORDER BY id")
    let changes = [
      "UPDATE items SET name = 'x' WHERE id = 3",
      "DELETE FROM items WHERE id = 4",
      "INSERT INTO items(id) VALUES (99)",
      "ALTER TABLE items ADD COLUMN added_later TEXT",
      "CREATE TABLE copy AS SELECT * FROM items; DROP TABLE items; ALTER TABLE copy RENAME TO items",
      "DROP TRIGGER \"\(TableGuard.trigger("update", of: "items"))\"",
    ]
    for change in changes {
      _ = try Database(path: folder.path + "/data.sqlite").execute(change)
      let report = try run(Self.items, server: server)
      #expect(report.exitCode == 0, "\(change): \(report.steps.map { $0.errorMessage ?? "" })")
      #expect(!report.steps[0].unchanged, "\(change)")
      #expect(try rows("SELECT * FROM items ORDER BY id") == loaded, "\(change)")
    }
    // Left alone, it is kept again: one small request, no row rewritten.
    let kept = try run(Self.items, server: server)
    #expect(kept.steps[0].unchanged)
    let statuses = try server.requests().map(\.status)
    #expect(statuses == [200] + changes.map { _ in 200 } + [304])
  }

  @Test func aStepAsksForGzipAndReportsBytesOnTheWireAndDecoded() throws {
    let server = try RestServer()
    let report = try run(Self.items, server: server)
    #expect(report.exitCode == 0)
    let request = try #require(try server.requests().first)
    #expect(request["Accept-Encoding"] == "gzip")
    #expect(request.contentEncoding == "gzip")
    let step = report.steps[0]
    #expect(step.wireBytes == request.responseBytes)
    #expect(step.wireBytes * 2 < step.bytes)
    #expect(try rows("SELECT count(*) FROM items") == [[.integer(25)]])
  }

  @Test func aStepsOwnAcceptEncodingIsSentAsWritten() throws {
    let server = try RestServer()
    let report = try run(
      "{ base_url: '${API}', path: items, headers: { Accept-Encoding: identity }, load: { table: items, records: /data } }", server: server)
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
