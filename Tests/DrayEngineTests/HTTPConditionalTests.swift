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

  func run(_ http: String, server: RestServer, fresh: Bool = false) throws -> RunReport {
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
    #expect(try rows("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") == [[.integer(3)]])
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
