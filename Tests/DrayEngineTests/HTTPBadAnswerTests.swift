import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Answers from a server that once crashed the `http` step or failed it with a raw SQLite
/// error: each now fails with a message naming the page or answer, the record and the fix,
/// or loads as SQLite would see it; the loads on both targets (the records stage in SQLite
/// on either, docs/http.md "On PostgreSQL").
@Suite struct HTTPBadAnswerTests {
  let folder = TemporaryDirectory()

  func run(_ steps: String, server: RestServer, target: TargetDatabase) throws -> RunReport {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: rest
      \(target.manifestBlock)retry: { count: 0 }
      steps:
      \(steps)
      """)
    let manifest = try ManifestLoader(environment: ["API": server.url]).load(path: path)
    return Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  /// A rule of the REST server answering `body` with 200 at `path`.
  static func rule(_ path: String, _ body: String) throws -> String {
    String(decoding: try JSONSerialization.data(withJSONObject: ["path": path, "status": 200, "body": body]), as: UTF8.self)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func deeplyNestedAnswersAreRefusedNotAStackOverflow(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let deep = "[{\"a\": " + String(repeating: "[", count: 10000) + String(repeating: "]", count: 10000) + "}]"
    let server = try RestServer(["--rule", try Self.rule("/deep", deep)])
    // The 513th container opens at byte 7 + 510: two levels are `[{`, then 510 `[` before it.
    let message =
      "the answer of \(server.url)deep: record 1 is nested deeper than 512 levels at byte 517; dray reads at most 512 levels of arrays and objects"
    for load in [#"{ table: items, records: "" }"#, #"{ table: items, records: "", columns: { d: { type: TEXT, from: /d } } }"#] {
      let report = try run("  - id: deep\n    http: { base_url: '${API}', path: deep, load: \(load) }", server: server, target: target)
      #expect(report.exitCode == 1)
      #expect(report.steps[0].errorCode == "bad_answer")
      #expect(report.steps[0].errorMessage == message)
    }
    // 512 levels load, as the JSON text of the nested value.
    let fits = "[{\"a\": " + String(repeating: "[", count: 510) + String(repeating: "]", count: 510) + "}]"
    try server.setRules("[" + (try Self.rule("/fits", fits)) + "]")
    let report = try run(
      "  - id: fits\n    http: { base_url: '${API}', path: fits, load: { table: items } }", server: server, target: target)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT length(a) FROM items") == [["1020"]])
  }

  /// A run of a platform job whose sign-in the server answers with `token` (HTTP 200).
  func signIn(answeredWith token: String) throws -> RunReport {
    let server = try RestServer()
    try server.setRules("[" + (try Self.rule("/api/v1/auth/jwt/obtain/", token)) + "]")
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: token
      database: { path: data.sqlite }
      retry: { count: 0 }
      platform: { host: "\(server.url)", environment: E, project: P }
      auth: { username: u, password: p-secret-1 }
      steps:
        - request: { resource: FRUITS }
      """)
    let manifest = try ManifestLoader(environment: [:]).load(path: path)
    return Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  @Test func aDeeplyNestedTokenAnswerIsRefusedNotAStackOverflow() throws {
    let token = #"{"token":"abc","x":"# + String(repeating: "[", count: 20000) + String(repeating: "]", count: 20000) + "}"
    let report = try signIn(answeredWith: token)
    #expect(report.exitCode == 1)
    #expect(
      report.steps[0].errorMessage?.contains("the token answer is not valid JSON (nested deeper than 512 levels at byte 530)") == true)
  }

  /// An error answered with an HTML page (a proxy's or a load balancer's) is quoted as the
  /// page's text: its markup, styles and scripts would fill the message.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anHTMLErrorPageIsQuotedAsItsText(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let css = String(repeating: "body { font-family: sans-serif; margin: 0 auto; } ", count: 60)
    let page = """
      <!DOCTYPE html>
      <html><head><title>502 Bad Gateway</title><style>\(css)</style>
      <script>var tracking = "<b>not text</b>";</script></head>
      <body><!-- upstream: 10.0.0.7 --><h1>Bad   Gateway</h1>
      <p>The upstream server &amp; its proxy did not answer.</p></body></html>
      """
    let rule = String(
      decoding: try JSONSerialization.data(withJSONObject: ["path": "/down", "status": 502, "body": page]), as: UTF8.self)
    let server = try RestServer(["--rule", rule])
    let report = try run("  - id: down\n    http: { base_url: '${API}', path: down }", server: server, target: target)
    let message = report.steps[0].errorMessage ?? ""
    #expect(
      message.hasPrefix(
        "HTTP 502 Bad Gateway from \(server.url)down: (an HTML page) 502 Bad Gateway Bad Gateway The upstream server & its proxy did not answer."
      ), "\(message)")
    #expect(!message.contains("font-family") && !message.contains("tracking") && !message.contains("upstream: 10"), "\(message)")
  }

  /// A sign-in answered by something that is not the platform (a web page, another
  /// service) says what came and where to look, never quoting the body.
  @Test func aTokenAnswerThatIsNotJSONSaysWhatCame() throws {
    let token = "<html><body>Welcome token-like-text</body></html>"
    let report = try signIn(answeredWith: token)
    let message = report.steps[0].errorMessage ?? ""
    #expect(
      message.contains(
        "the token answer is not valid JSON (HTTP 200, Content-Type: text/plain); check platform.host: it must be the platform's address"),
      "\(message)")
    #expect(!message.contains("token-like-text"))
  }

  /// SQLite compares names byte by byte (ASCII case aside): `é` (U+00E9) and `e` + U+0301
  /// are two columns, within a record and across pages, though Swift calls them equal.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func namesEqualOnlyUnderUnicodeEquivalenceAreTwoColumns(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer([
      "--rule", try Self.rule("/one", "[{\"\u{e9}\": 1, \"e\u{301}\": 2}]"),
      "--rule", try Self.rule("/p1", "{\"data\": [{\"\u{e9}\": 1}], \"next\": \"/p2\"}"),
      "--rule", try Self.rule("/p2", "{\"data\": [{\"e\u{301}\": 2}], \"next\": null}"),
    ])
    let report = try run(
      """
        - id: one
          http: { base_url: '${API}', path: one, load: { table: one } }
        - id: pages
          http: { base_url: '${API}', path: p1, load: { table: pages, records: /data }, paginate: { next: /next } }
      """, server: server, target: target)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    let shape = HTTPStepTests.shape([("\u{e9}", "INTEGER"), ("e\u{301}", "INTEGER")], on: kind)
    let columns = try target.columnTypes("one")
    #expect(columns.map { $0.map { Array(($0 ?? "").utf8) } } == shape.map { $0.map { Array(($0 ?? "").utf8) } })
    #expect(try target.rows("SELECT * FROM one") == [["1", "2"]])
    #expect(try target.columnNames("pages").count == 2)
    #expect(try target.rows("SELECT * FROM pages") == [["1", nil], [nil, "2"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func recordsWithoutValuesSayToDeclareColumns(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer([
      "--rule", try Self.rule("/empty", "[{}]"),
      "--rule", try Self.rule("/empty.xml", "<r><i/></r>"),
      "--rule", try Self.rule("/later", "[{\"a\": 1}, {}]"),
    ])
    let rest =
      "the records have no values (such as {} or an empty element), so there is no column to load them into; declare 'columns' under 'load' to load such records as rows of NULLs"
    for (path, options) in [("empty", "load: { table: t }"), ("empty.xml", "format: xml, load: { table: t, records: /r/i }")] {
      let report = try run("  - id: e\n    http: { base_url: '${API}', path: \(path), \(options) }", server: server, target: target)
      #expect(report.steps[0].errorCode == "bad_answer")
      #expect(report.steps[0].errorMessage == "the answer of \(server.url)\(path): " + rest)
    }
    // A record without values after one with values is a row of NULLs; declared columns load it too.
    let report = try run(
      """
        - id: later
          http: { base_url: '${API}', path: later, load: { table: later } }
        - id: declared
          http: { base_url: '${API}', path: empty, load: { table: declared, columns: { a: INTEGER } } }
      """, server: server, target: target)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT a FROM later ORDER BY a NULLS LAST") == [["1"], [nil]])
    #expect(try target.rows("SELECT a FROM declared") == [[nil]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aNULInAKeyIsRefusedByRecordAndKey(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--rule", try Self.rule("/nul", #"[{"a": 1}, {"x\u0000y": 2}]"#)])
    let report = try run("  - id: nul\n    http: { base_url: '${API}', path: nul, load: { table: t } }", server: server, target: target)
    #expect(report.steps[0].errorCode == "bad_answer")
    #expect(
      report.steps[0].errorMessage
        == #"the answer of \#(server.url)nul: record 2 has the key 'x\0y', which holds a NUL character (U+0000, shown as \0); SQLite cannot hold it in a column name; declare 'columns' to load the record's other values"#
    )
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aNextLinkThatIsNotAStringFailsNamingThePage(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer([
      "--rule", try Self.rule("/number", #"{"data": [{"a": 1}], "next": 42}"#),
      "--rule", try Self.rule("/bool", #"{"data": [], "next": true}"#),
    ])
    for (path, found) in [("number", "a number (42)"), ("bool", "a boolean (true)")] {
      let report = try run(
        "  - id: p\n    http: { base_url: '${API}', path: \(path), load: { table: t, records: /data }, paginate: { next: /next } }",
        server: server, target: target)
      #expect(report.steps[0].errorCode == "bad_answer")
      #expect(
        report.steps[0].errorMessage
          == "page 1 (\(server.url)\(path)): paginate.next '/next' is \(found) in the answer; a next link must be a string holding a URL, or null or absent on the last page"
      )
    }
    #expect(try server.requests().map(\.path) == ["/number", "/bool"])
  }
}
