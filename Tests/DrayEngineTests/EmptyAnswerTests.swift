import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A server that answers `200` with an empty body (or only whitespace) once made an `http`
/// load "succeed with 0 rows" and replace a table holding last night's rows. An empty body
/// is not a JSON (or XML) document: every reader refuses it, names the URL, status and
/// Content-Type, and keeps what the last good run left, on both targets (one suite, two
/// databases).
@Suite struct EmptyAnswerTests {
  static let bodies = ["", " \n\t "]

  static func described(_ body: String) -> String {
    body.isEmpty ? "the answer is empty" : "the answer holds only whitespace (\(body.utf8.count) bytes)"
  }

  // MARK: Platform calls

  /// Every platform call whose answer dray reads, with the emulator path it calls.
  static let platformSteps: [(path: String, step: String)] = [
    ("api/v1/schema/", "schemes: {}"),
    ("api/v1/rpc/FRUITS/", "table_stream: { resource: FRUITS }"),
    ("api/v1/rpc/FRUITS/", "table: { resource: FRUITS, output: out/fruits.json }"),
    ("api/v1/rpc/FRUITS/", "request: { resource: FRUITS, output: out/answer.json }"),
    ("api/v1/directory/local_storage/", "files: { connection: local_storage, action: list, path: ., local: out/list.json }"),
    ("api/v1/file/local_storage/meta/", "files: { connection: local_storage, action: meta, path: welcome.txt, local: out/meta.json }"),
  ]

  @Test(arguments: platformSteps, TargetDatabase.Kind.allCases)
  func aBlankPlatformAnswerFailsTheStepAndKeepsTablesAndFiles(_ call: (path: String, step: String), on kind: TargetDatabase.Kind) throws {
    let (path, step) = call
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job =
      // The body as it is: a close-delimited gzip stream that decodes to nothing cannot be
      // told from a cut one (libcurl does not report a stream cut before its end), so it is
      // retried as cut (docs/network.md, "Compression").
      JobText.header(job: "blank", emulator: emulator, compression: false) + target.manifestBlock + "steps:\n  - id: good\n    " + step
      + "\n  - id: fruits\n    table_stream: { resource: FRUITS }\n"
    let (manifest, first) = try runJob(folder, job)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    let outputs = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path + "/out")) ?? []).sorted()
    let before = try outputs.map { try bytes(folder.path + "/out/" + $0) }
    let database = try target.digest()

    // Framed by Content-Length, or ended only by the connection's close: blank either way,
    // never taken for an answer cut short.
    for body in Self.bodies {
      for closeDelimited in [false, true] {
        let fault = try JSONSerialization.data(withJSONObject: [["path": "/" + path, "body": body, "close_delimited": closeDelimited]])
        try emulator.admin("POST", "faults", json: String(decoding: fault, as: UTF8.self))
        let report = Runner(
          manifest: manifest, options: RunFlags(fresh: true), console: Console(level: .quiet), cancellation: Cancellation()
        ).run()
        #expect(report.exitCode == 1)
        #expect(report.steps[0].errorCode == "bad_answer")
        let url =
          emulator.url + path + (path.hasSuffix("meta/") ? "?file=welcome.txt" : path.hasPrefix("api/v1/directory") ? "?directory=." : "")
        #expect(
          report.steps[0].errorMessage
            == "unexpected answer from \(url): \(Self.described(body)) (HTTP 200, Content-Type: application/json); an empty body is not a JSON document, so it was refused and nothing was changed"
        )
        #expect(try target.digest() == database)
        #expect(try outputs.map { try bytes(folder.path + "/out/" + $0) } == before)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: folder.path + "/out")) ?? []).sorted() == outputs)
      }
    }
  }

  // MARK: http step

  @Test(arguments: [AnswerFormat.json, .xml], TargetDatabase.Kind.allCases)
  func aBlankHTTPAnswerFailsTheLoadAndKeepsYesterdaysTable(format: AnswerFormat, on kind: TargetDatabase.Kind) throws {
    let document =
      format == .json
      ? #"[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]"# : #"<list><item id="1" name="a"/><item id="2" name="b"/></list>"#
    let records = format == .json ? "\"\"" : "//item"
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", document)])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = """
      version: 1
      job: blank
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: things
          http: { base_url: '${API}', path: things, format: \(format.rawValue), load: { table: things, records: \(records) } }
      """
    let (manifest, first) = try runJob(folder, job, environment: ["API": server.url])
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    for body in Self.bodies {
      try server.setRules("[" + (try HTTPBadAnswerTests.rule("/things", body)) + "]")
      let report = Runner(
        manifest: manifest, options: RunFlags(fresh: true), console: Console(level: .quiet), cancellation: Cancellation()
      ).run()
      #expect(report.exitCode == 1)
      #expect(report.steps[0].errorCode == "bad_answer")
      #expect(
        report.steps[0].errorMessage
          == "the answer of \(server.url)things: \(Self.described(body)) (HTTP 200, Content-Type: \(body.isEmpty ? "none" : "text/plain")); an empty body is not \(format == .json ? "a JSON" : "an XML") document, so it was refused and nothing was loaded or saved; a server with no records answers with a document (such as [] or {\"data\": []}), 204 No Content, or a status that on_status names empty"
      )
      #expect(try target.rows("SELECT count(*) FROM things") == [["2"]])
    }
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aBlankSecondPageFailsTheStepAndKeepsTheTable(kind: TargetDatabase.Kind) throws {
    let server = try RestServer()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = """
      version: 1
      job: pages
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: items
          http:
            base_url: '${API}'
            path: items
            query: { per_page: 10 }
            # The body as it is: a close-delimited gzip stream that decodes to nothing is
            # retried as cut (docs/network.md, "Compression").
            headers: { Accept-Encoding: identity }
            paginate: { next: /links/next }
            load: { table: items, records: /data }
      """
    let (manifest, first) = try runJob(folder, job, environment: ["API": server.url])
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    let rows = try target.rows("SELECT count(*) FROM items")
    #expect(rows == [["25"]])
    // Framed by Content-Length, or ended only by the connection's close: blank either way.
    for (body, closeDelimited) in [("  ", false), ("  ", true), ("", true)] {
      let rule = String(
        decoding: try JSONSerialization.data(withJSONObject: [
          "path": "/items", "query": ["page": "2"], "status": 200, "body": body, "close_delimited": closeDelimited,
        ]),
        as: UTF8.self)
      try server.setRules("[\(rule)]")
      let report = Runner(
        manifest: manifest, options: RunFlags(fresh: true), console: Console(level: .quiet), cancellation: Cancellation()
      ).run()
      #expect(report.exitCode == 1)
      #expect(report.steps[0].errorCode == "bad_answer")
      #expect(
        report.steps[0].errorMessage?.hasPrefix(
          "page 2 (\(server.url)items?page=2&per_page=10): \(Self.described(body)) (HTTP 200") == true,
        "\(report.steps[0].errorMessage ?? "")")
      #expect(try target.rows("SELECT count(*) FROM items") == rows)
    }
  }

  /// An answer with no records, as a server says it has none (`204 No Content`, `[]`,
  /// `{"data": []}` under a records pointer, an XML list without items, a status
  /// `on_status` names empty), once let a `replace` load empty a table holding last
  /// night's rows, exit 0. It fails the step (`empty_answer`) and keeps the table, unless
  /// `load.allow_empty: true` says that no records is a valid answer; on both targets.
  @Test(arguments: Self.emptyAnswers, TargetDatabase.Kind.allCases)
  func anEmptyAnswerDoesNotEmptyYesterdaysTable(_ answer: EmptyAnswer, on kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", answer.full)])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    func run(_ allowEmpty: String = "") throws -> RunReport {
      try runJob(
        folder,
        """
        version: 1
        job: nothing
        \(target.manifestBlock)retry: { count: 0 }
        steps:
          - id: things
            http: { base_url: '${API}', path: things, format: \(answer.format), on_status: { 404: empty }, load: { table: things, records: \(answer.records)\(allowEmpty) } }
        """, environment: ["API": server.url]
      ).1
    }
    let first = try run()
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT count(*) FROM things") == [["2"]])
    try server.setRules("[\(answer.rule)]")
    let refused = try run()
    #expect(refused.exitCode == 1)
    #expect(refused.steps[0].errorCode == "empty_answer")
    #expect(
      refused.steps[0].errorMessage
        == "table things holds 2 rows, and the answer of \(server.url)things held no records\(answer.why.map { " (\($0))" } ?? ""): a replace load would leave the table empty, so nothing was loaded and the table keeps its rows; if no records is a valid answer of this API, set load.allow_empty: true"
    )
    #expect(try target.rows("SELECT count(*) FROM things") == [["2"]])
    let allowed = try run(", allow_empty: true")
    #expect(allowed.exitCode == 0, "\(allowed.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT count(*) FROM things") == [["0"]])
    // An empty table stays empty without a word: nothing is lost.
    #expect(try run().exitCode == 0)
  }

  /// An answer without records, and what it once held.
  struct EmptyAnswer: Sendable, CustomStringConvertible {
    var format = "json"
    var records = "/data"
    var full = #"{"data": [{"id": 1}, {"id": 2}]}"#
    /// The server's rule that answers with no records.
    var rule: String
    /// How the error message says it, when it is a status.
    var why: String?
    var description: String { rule }
  }

  static let emptyAnswers: [EmptyAnswer] = [
    EmptyAnswer(rule: #"{"path": "/things", "status": 204, "body": ""}"#, why: "HTTP 204 No Content"),
    EmptyAnswer(rule: #"{"path": "/things", "status": 404, "body": "gone"}"#, why: "HTTP 404, which on_status names empty"),
    EmptyAnswer(rule: #"{"path": "/things", "status": 200, "body": "{\"data\": []}"}"#, why: nil),
    EmptyAnswer(
      records: #""""#, full: #"[{"id": 1}, {"id": 2}]"#, rule: #"{"path": "/things", "status": 200, "body": "[]"}"#, why: nil),
    EmptyAnswer(
      format: "xml", records: "//item", full: #"<list><item id="1"/><item id="2"/></list>"#,
      rule: #"{"path": "/things", "status": 200, "body": "<list/>"}"#, why: nil),
  ]

  /// A `204 No Content` on a later page once ended a 9-record pull after page 1, exit 0.
  /// Where the page before promised it (a next link, a cursor, `more: true`), a 204 cannot
  /// say whether pages follow it: the step fails and keeps the table. Where the pagination
  /// guessed the page (`page`, `offset`), a 204 is the empty page that ends the pull.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func a204OnAPromisedPageFailsAndOnAGuessedPageEndsThePull(kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--items", "9"])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    func run(_ paginate: String) throws -> RunReport {
      try runJob(
        folder,
        """
        version: 1
        job: pages
        \(target.manifestBlock)retry: { count: 0 }
        steps:
          - id: items
            http: { base_url: '${API}', path: items, query: { per_page: 3 }, paginate: \(paginate), load: { table: items, records: /data } }
        """, environment: ["API": server.url]
      ).1
    }
    #expect(try run("{ next: /links/next }").exitCode == 0)
    #expect(try target.rows("SELECT count(*) FROM items") == [["9"]])
    try server.setRules(#"[{"path": "/items", "query": {"page": "2"}, "status": 204, "body": ""}]"#)
    let cut = try run("{ next: /links/next }")
    #expect(cut.exitCode == 1)
    #expect(cut.steps[0].errorCode == "bad_answer")
    #expect(
      cut.steps[0].errorMessage
        == "page 2 (\(server.url)items?page=2&per_page=3): HTTP 204 No Content, though page 1 linked to this page (paginate.next); a 204 cannot say whether more pages follow, so nothing was published and the next run asks for this page again"
    )
    #expect(try target.rows("SELECT count(*) FROM items") == [["9"]])
    let guessed = try run("{ page: { param: page } }")
    #expect(guessed.exitCode == 0, "\(guessed.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT count(*) FROM items") == [["3"]])
    #expect(guessed.steps[0].notes.contains("2 pages"))
  }

  /// `append` and `merge` add no row for an answer without records and delete none: the
  /// table keeps its rows, and the step succeeds.
  @Test(arguments: ["write: append", "write: merge, primary_key: [id]"], TargetDatabase.Kind.allCases)
  func appendAndMergeKeepTheTableForAnEmptyAnswer(_ write: String, on kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", #"[{"id": 1}, {"id": 2}]"#)])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = """
      version: 1
      job: nothing
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: things
          http: { base_url: '${API}', path: things, load: { table: things, \(write) } }
      """
    #expect(try runJob(folder, job, environment: ["API": server.url]).1.exitCode == 0)
    try server.setRules(#"[{"path": "/things", "status": 204, "body": ""}]"#)
    let report = try runJob(folder, job, environment: ["API": server.url]).1
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT id FROM things ORDER BY id") == [["1"], ["2"]])
  }

  // MARK: A list of no tables

  /// A platform answer `[]` is a document, but it lacks the output table the scheme
  /// declares: the load fails naming resource and table, instead of reporting yesterday's
  /// rows as a fresh load and checking `expect` against them; the table and its
  /// bookkeeping (`loaded_at`) stay as they were.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anAnswerWithoutTheDeclaredTableFailsTheLoadAndKeepsTheTable(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job =
      JobText.header(job: "no-tables", emulator: emulator) + target.manifestBlock
      + "steps:\n  - id: schemes\n    schemes: {}\n  - id: fruits\n    table_stream: { resource: FRUITS, expect: { rows: { min: 1 } } }\n"
    let (manifest, first) = try runJob(folder, job)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    // `loaded_at` included: a load that changed nothing must not look fresh (the schemes
    // step runs again, so `fetched_at` moves).
    let ignored = ["_dray_resources": Set(["fetched_at"])]
    let database = try target.digest(ignoringColumns: ignored)
    let fault = try JSONSerialization.data(withJSONObject: [["path": "/api/v1/rpc/FRUITS/", "body": "[]"]])
    try emulator.admin("POST", "faults", json: String(decoding: fault, as: UTF8.self))
    let report = Runner(
      manifest: manifest, options: RunFlags(fresh: true), console: Console(level: .quiet), cancellation: Cancellation()
    ).run()
    #expect(report.exitCode == 1)
    let fruits = try #require(report.steps.first { $0.id == "fruits" })
    #expect(fruits.status == .failed)
    #expect(
      fruits.errorMessage?.hasPrefix(
        "resource FRUITS, table output_table: the answer holds no table 'output_table', which the scheme declares (it holds no table of the scheme); nothing was loaded"
      ) == true, "\(fruits.errorMessage ?? "")")
    #expect(try target.digest(ignoringColumns: ignored) == database)
  }
}
