import DrayEngine
import DrayManifest
import DrayModel
import DrayPostgres
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// The `http` step against the REST test server (`Emulator/rest_server.py`) on loopback;
/// every case that writes to a target on both (one suite, two databases), but for the one
/// of a name only PostgreSQL shortens.
@Suite struct HTTPStepTests {
  let folder = TemporaryDirectory()

  /// Runs a job of `steps` (YAML list items) with `API` set to the server's address, and
  /// the variables `secrets` lists as secrets.
  func run(
    _ steps: String, server: RestServer, environment: [String: String] = [:], secrets: [String] = [], target: TargetDatabase? = nil
  ) throws -> RunReport {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: rest
      secrets: [\(secrets.joined(separator: ", "))]
      \(target?.manifestBlock ?? "database: { path: data.sqlite }\n")retry: { count: 2, interval: 10ms }
      steps:
      \(steps)
      """)
    var env = environment
    env["API"] = server.url
    let manifest = try ManifestLoader(environment: env).load(path: path)
    return Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  func paths(_ server: RestServer) throws -> [String] { try server.requests().map(\.path) }

  /// The columns inferred from the items, with the types dray declares for them on `kind`
  /// (SQLite's; PostgreSQL's by `PostgresTransaction.columnType`, docs/http.md "On
  /// PostgreSQL").
  static func shape(_ columns: [(String, String)], on kind: TargetDatabase.Kind) -> [[String?]] {
    let postgres = ["INTEGER": "bigint", "REAL": "double precision", "NUMERIC": "numeric", "TEXT": "text"]
    return columns.map { [$0.0, kind == .sqlite ? $0.1 : postgres[$0.1]] }
  }

  static let itemsShape = [
    ("id", "INTEGER"), ("name", "TEXT"), ("price", "REAL"), ("code", "TEXT"), ("active", "INTEGER"), ("note", "TEXT"), ("tags", "TEXT"),
  ]

  /// Where the step's pages are staged: the SQLite target itself, or the local file beside
  /// a PostgreSQL target (docs/http.md, "On PostgreSQL").
  func staging(_ target: TargetDatabase) throws -> Database {
    try Database(path: target.stagingPath(job: "rest"))
  }

  struct Pagination: Sendable, CustomStringConvertible {
    var name: String
    var http: String
    var requests: [String]
    var description: String { name }
  }

  static let paginations = [
    Pagination(
      name: "next link in the body",
      http:
        "{ base_url: '${API}', path: items, query: { per_page: 10 }, load: { table: items, records: /data }, paginate: { next: /links/next } }",
      requests: ["/items?per_page=10", "/items?page=2&per_page=10", "/items?page=3&per_page=10"]),
    Pagination(
      name: "Link header",
      http: "{ base_url: '${API}', path: link/items, query: { per_page: 10 }, load: { table: items }, paginate: { link_header: true } }",
      requests: ["/link/items?per_page=10", "/link/items?page=2&per_page=10", "/link/items?page=3&per_page=10"]),
    Pagination(
      name: "offset and limit",
      http: "{ base_url: '${API}', path: offset/items, load: { table: items, records: /items }, paginate: { offset: { limit: 10 } } }",
      requests: ["/offset/items?offset=0&limit=10", "/offset/items?offset=10&limit=10", "/offset/items?offset=20&limit=10"]),
    Pagination(
      name: "cursor",
      http:
        "{ base_url: '${API}', path: cursor/items, query: { limit: 10 }, load: { table: items, records: /results }, paginate: { cursor: { from: /meta/next_cursor } } }",
      requests: ["/cursor/items?limit=10", "/cursor/items?limit=10&cursor=YWZ0ZXI6MTA%3D", "/cursor/items?limit=10&cursor=YWZ0ZXI6MjA%3D"]),
  ]

  @Test(arguments: paginations, TargetDatabase.Kind.allCases)
  func eachPaginationKindLoadsEveryItemOnce(_ pagination: Pagination, on kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let report = try run("  - id: items\n    http: \(pagination.http)", server: server, target: target)
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try paths(server) == pagination.requests)
    #expect(try target.rows("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items") == [["25", "25", "1", "25"]])
    #expect(try target.columnTypes("items") == Self.shape(Self.itemsShape, on: kind))
    #expect(
      try target.rows("SELECT price, code, active, note, tags FROM items WHERE id = 15") == [["15.5", "15", "1", "note 15", #"["odd"]"#]])
    let step = report.steps[0]
    #expect(step.rows == ["items": 25])
    #expect(step.tables == ["items"])
    #expect(step.notes == ["3 pages"])
    #expect(step.attempts.map(\.outcome.code) == ["ok", "ok", "ok"])
    let staging = try staging(target)
    #expect(try staging.rows("SELECT count(*) FROM _dray_http_pages").map(\.values) == [[.integer(0)]])
    // The ledger only: the staged pages are gone.
    #expect(
      try staging.rows("SELECT name FROM sqlite_schema WHERE name LIKE '_dray_http__%'").map(\.values) == [
        [.text("_dray_http_pages")]
      ])

    // A second, fresh pull replaces the rows rather than adding to them.
    try server.reset()
    #expect(try run("  - id: items\n    http: \(pagination.http)", server: server, target: target).exitCode == 0)
    #expect(try paths(server) == pagination.requests)
    #expect(try target.rows("SELECT count(*) FROM items") == [["25"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func xmlAnswersWithTheNextLinkInTheBody(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let report = try run(
      """
        - id: catalog
          http:
            base_url: ${API}
            path: catalog.xml
            query: { per_page: 10 }
            format: xml
            load: { table: catalog, records: /catalog/item }
            paginate: { next: /catalog/next }
      """, server: server, target: target)
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try paths(server) == ["/catalog.xml?per_page=10", "/catalog.xml?page=2&per_page=10", "/catalog.xml?page=3&per_page=10"])
    #expect(try server.requests().allSatisfy { $0.headers["Accept"] == "application/xml, text/xml;q=0.9" })
    #expect(
      try target.columnTypes("catalog")
        == Self.shape(
          [
            ("id", "INTEGER"), ("active", "TEXT"), ("name", "TEXT"), ("price", "REAL"), ("code", "TEXT"), ("note", "TEXT"),
            ("tags", "TEXT"),
          ],
          on: kind))
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM catalog") == [["25", "25"]])
    #expect(
      try target.rows("SELECT id, active, name, price, code, note, tags FROM catalog WHERE id IN (4, 5) ORDER BY id") == [
        ["4", "false", "item-4 & co", "8.0", "C-4", nil, "even"],
        ["5", "true", "item-5 & co", "5.5", "C-5", "note 5", "odd"],
      ])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func a422ShowsTheServersBodyAndIsNotRetried(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let report = try run(
      """
        - id: add-image
          http:
            method: POST
            base_url: ${API}
            path: images
            body: { json: { url: "http://img/1.png" } }
            output: out/image.json
            on_status: { 422: fail }
      """, server: server, target: target)
    #expect(report.exitCode == 1)
    let step = report.steps[0]
    #expect(step.errorCode == "http_422")
    #expect(step.errorMessage == #"HTTP 422 Unprocessable Content from \#(server.url)images: {"errors": {"title": ["can't be blank"]}}"#)
    #expect(step.attempts.count == 1)
    #expect(try server.requests().map(\.body) == [#"{"url":"http://img/1.png"}"#])
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/out/image.json"))
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func theImageEndpointFromPostToDelete(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let report = try run(
      """
        - id: add
          http: { method: POST, base_url: "${API}", path: images, body: { form: { title: "A pear", width: 640 } }, output: out/added.json }
        - id: rename
          http: { method: PATCH, base_url: "${API}", path: images/1, body: { json: { title: "A fig" } }, output: out/patched.json }
        - id: list
          http: { base_url: "${API}", path: images, load: { table: images, records: /images } }
        - id: remove
          http: { method: DELETE, base_url: "${API}", path: images/1 }
        - id: gone
          http:
            base_url: ${API}
            path: images/1
            load: { table: image, columns: { id: INTEGER, title: TEXT } }
            on_status: { 404: empty }
        - id: read
          http: { base_url: "${API}", path: images/1, output: out/read.json }
      """, server: server, target: target)
    #expect(report.steps.map(\.status) == [.succeeded, .succeeded, .succeeded, .succeeded, .succeeded, .failed])
    #expect(try folder.read("out/added.json") == #"{"id": 1, "title": "A pear", "url": null, "width": 640}"#)
    #expect(try folder.read("out/patched.json") == #"{"id": 1, "title": "A fig", "url": null, "width": 640}"#)
    #expect(try target.rows("SELECT id, title, url, width FROM images") == [["1", "A fig", nil, "640"]])
    #expect(try target.rows("SELECT count(*) FROM image") == [["0"]])
    #expect(report.steps[4].rows == ["image": 0])
    #expect(report.steps[5].errorMessage == #"HTTP 404 Not Found from \#(server.url)images/1: {"error": "image 1 not found"}"#)
    let requests = try server.requests()
    #expect(
      requests.map { "\($0.method) \($0.path)" } == [
        "POST /images", "PATCH /images/1", "GET /images", "DELETE /images/1", "GET /images/1", "GET /images/1",
      ])
    #expect(requests[0].body == "title=A%20pear&width=640")
    #expect(requests[0].headers["Content-Type"] == "application/x-www-form-urlencoded")
    #expect(requests[1].headers["Content-Type"] == "application/json")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func statusRulesRetryFailOrWaitForRetryAfter(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer([
      "--rule", #"{"path": "/images", "status": 503, "times": 1, "headers": {"Retry-After": "0"}, "body": "busy"}"#,
      "--rule", #"{"path": "/images/1", "status": 409, "times": 1, "body": "locked"}"#,
      "--rule", #"{"path": "/images/2", "status": 503, "times": 5, "body": "down"}"#,
    ])
    let report = try run(
      """
        - id: busy-then-ok
          http: { base_url: "${API}", path: images, output: out/list.json }
        - id: conflict-retried
          http: { base_url: "${API}", path: images/1, on_status: { 409: retry, 404: empty } }
        - id: unavailable-fails
          http: { base_url: "${API}", path: images/2, on_status: { 5xx: fail } }
      """, server: server, target: target)
    #expect(report.steps.map(\.status) == [.succeeded, .succeeded, .failed])
    #expect(report.steps[0].attempts.map(\.outcome.code) == ["http_503", "ok"])
    #expect(report.steps[0].attempts[0].message == "HTTP 503 Service Unavailable from \(server.url)images: busy")
    #expect(report.steps[1].attempts.map(\.outcome.code) == ["http_409", "ok"])
    #expect(report.steps[2].attempts.map(\.outcome.code) == ["http_503"])
    #expect(report.steps[2].errorMessage == "HTTP 503 Service Unavailable from \(server.url)images/2: down")
  }

  /// libcurl refuses a response header over 100 KB (CURL_MAX_HTTP_HEADER): a bad answer
  /// from the server, said so and not retried, whatever the status.
  @Test(arguments: [200, 503])
  func aResponseHeaderOver100KBIsABadAnswerNotRetried(status: Int) throws {
    let server = try RestServer(["--rule", #"{"path": "/items", "status": \#(status), "big_header": 200000, "body": "x"}"#])
    let report = try run(
      """
        - id: huge
          http: { base_url: "${API}", path: items, output: out/items.json }
      """, server: server)
    #expect(report.exitCode == 1)
    let step = report.steps[0]
    #expect(step.status == .failed)
    #expect(step.errorCode == "bad_answer")
    #expect(step.attempts.map(\.outcome.code) == ["bad_answer"])
    #expect(
      step.errorMessage
        == "the answer from \(server.url)items is not one dray can read: a response header larger than libcurl's 100 KB limit (CURL_MAX_HTTP_HEADER); not retried, as the server would send the same again. Fix the server, or the proxy in between"
    )
    #expect(try server.requests().count == 1)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func bearerAndBasicCredentialsAreSentAndNeverShown(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let token = "tok-Sentinel-31337"
    let server = try RestServer(["--token", token, "--user", "ann:pw-Sentinel-2"])
    let report = try run(
      """
        - id: bearer
          http: { base_url: "${API}", path: images, auth: { bearer: "${TOKEN}" }, output: out/a.json }
        - id: basic
          http: { base_url: "${API}", path: images, auth: { basic: { username: ann, password: "${PW}" } }, output: out/b.json }
        - id: wrong
          http: { base_url: "${API}", path: images, auth: { bearer: "${TOKEN}x" } }
      """, server: server, environment: ["TOKEN": token, "PW": "pw-Sentinel-2"], target: target)
    #expect(report.steps.map(\.status) == [.succeeded, .succeeded, .failed])
    #expect(
      try server.requests().map { $0.headers["Authorization"] ?? "" } == [
        "Bearer \(token)", "Basic YW5uOnB3LVNlbnRpbmVsLTI=", "Bearer \(token)x",
      ])
    #expect(report.steps[2].errorMessage == #"HTTP 401 Unauthorized from \#(server.url)images: {"error": "unauthorized"}"#)
    let written = try folder.read(".dray/reports/rest-\(report.runID).json")
    #expect(!written.contains("Sentinel"))
    #expect(try target.storedBytes().range(of: Data("Sentinel".utf8)) == nil)
  }

  /// A rotated credential does not redo a finished step: the value of every header named in
  /// `HTTPHeader.secretNames`, of one holding a listed secret, and of every query parameter
  /// named in `QueryItem.secretNames` stays out of the step's fingerprint.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func rotatingACredentialHeaderDoesNotRedoAFinishedStep(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--rule", #"{"path": "/items", "query": {"page": "2"}, "status": 500, "times": 1, "body": "oops"}"#])
    let headers = HTTPHeader.secretNames.sorted().map { "\($0): \"v-${CRED}\"" }.joined(separator: ", ")
    let parameters = QueryItem.secretNames.sorted().map { "\($0): \"p-${CRED}\"" }.joined(separator: ", ")
    let steps = """
        - id: items
          http:
            base_url: "${API}"
            path: items
            query: { \(parameters) }
            headers: { \(headers), X-Signed: "v1=${SIG}" }
            load: { table: items, records: /data }
        - id: page-2
          retry: { count: 0 }
          http: { base_url: "${API}", path: items, query: { page: 2 }, headers: { X-Auth-Token: "${CRED}" }, output: out/page-2.json }
      """
    let first = try run(
      steps, server: server, environment: ["CRED": "credential-one-1", "SIG": "signature-one-1"], secrets: ["SIG"], target: target)
    #expect(first.steps.map(\.status) == [.succeeded, .failed])
    let second = try run(
      steps, server: server, environment: ["CRED": "credential-two-2", "SIG": "signature-two-2"], secrets: ["SIG"], target: target)
    #expect(second.resumes == first.runID)
    #expect(second.steps.map(\.status) == [.skipped, .succeeded])
    // `items` once, `page-2` in each run.
    #expect(try server.requests().map { $0.path.contains("page=2") } == [false, true, true])
    #expect(try server.requests().last?.headers["X-Auth-Token"] == "credential-two-2")
  }

  /// A JSON body's fields named as credentials are secrets, as a form's are: masked, and
  /// left out of the step's definition (and so of its fingerprint).
  @Test func credentialFieldsOfAJSONBodyAreSecretsAndLeftOutOfTheDefinition() throws {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: rest
      steps:
        - id: sign-up
          http:
            method: POST
            base_url: "http://127.0.0.1:9/"
            body: { json: { user: ann, password: "json-pw-Sentinel-1", keys: [{ token: "json-token-Sentinel-2" }], note: plain } }
      """)
    let manifest = try ManifestLoader(environment: [:]).load(path: path)
    #expect(manifest.redactor.redact("ann json-pw-Sentinel-1 json-token-Sentinel-2") == "ann *** ***")
    let definition = manifest.steps[0].definition.canonicalJSON
    #expect(!definition.contains("Sentinel"))
    #expect(definition.contains(#""note":"plain""#) && definition.contains(#""password":"***""#), "\(definition)")
  }

  @Test func aRedirectToAnotherOriginCarriesNoCredentialOfTheStep() throws {
    let server = try RestServer()
    let port = try #require(URLComponents(string: server.url)?.port)
    try server.setRules(
      #"[{"path": "/items", "status": 302, "headers": {"Location": "http://localhost:\#(port)/steal"}}, "#
        + #"{"path": "/steal", "status": 200, "body": "[]"}]"#)
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: rest
      secrets: [SIG]
      steps:
        - id: items
          http:
            base_url: "${API}"
            path: items
            headers: { X-Api-Key: key-Sentinel-1, X-Auth-Token: token-Sentinel-2, X-Signed: "v1=${SIG}", X-Trace: trace-1 }
            auth: { bearer: bearer-Sentinel-3 }
            output: out/items.json
      """)
    let manifest = try ManifestLoader(environment: ["API": server.url, "SIG": "sig-Sentinel-4"]).load(path: path)
    let report = Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    let requests = try server.requests()
    #expect(requests.map(\.path) == ["/items", "/steal"])
    #expect(requests[0].headers["X-Signed"] == "v1=sig-Sentinel-4")
    #expect(requests[1].headers["Host"] == "localhost:\(port)")
    #expect(requests[1].headers.filter { $0.value.contains("Sentinel") } == [:])
    #expect(requests[1].headers["X-Trace"] == "trace-1")
  }

  /// A run that fails at page 3 leaves two pages staged (in the SQLite target, or in the
  /// local file beside a PostgreSQL one) and no table readers could see half loaded; the
  /// next run resumes at page 3 and publishes every item once.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aFailedPageResumesInTheNextRunWithoutFetchingEarlierPages(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--rule", #"{"path": "/items", "query": {"page": "3"}, "status": 500, "times": 1, "body": "oops"}"#])
    let steps = """
        - id: items
          retry: { count: 0 }
          http: { base_url: "${API}", path: items, query: { per_page: 10 }, load: { table: items, records: /data }, paginate: { next: /links/next } }
      """
    let first = try run(steps, server: server, target: target)
    #expect(first.exitCode == 69)
    #expect(
      first.steps[0].errorMessage
        == "HTTP 500 Internal Server Error from \(server.url)items?page=3&per_page=10: oops; gave up after 1 attempt (retry.count: 0)")
    #expect(
      first.steps[0].attempts.map(\.message) == [
        nil, nil, "page 3: HTTP 500 Internal Server Error from \(server.url)items?page=3&per_page=10: oops",
      ])
    let staging = try staging(target)
    #expect(
      try staging.rows("SELECT pages, rows, next FROM _dray_http_pages").map(\.values) == [
        [.integer(2), .integer(20), .text(#"{"url":"\#(server.url)items?page=3&per_page=10"}"#)]
      ])
    #expect(try staging.rows("SELECT count(*) FROM _dray_http__rest__items").map(\.values) == [[.integer(20)]])
    #expect(try target.columnNames("items") == [])

    let second = try run(steps, server: server, target: target)
    #expect(second.exitCode == 0, "\(second.steps.map { $0.errorMessage ?? "" })")
    #expect(second.resumes == first.runID)
    #expect(second.steps[0].notes == ["resumed after page 2 (20 rows already in)", "3 pages"])
    #expect(
      try paths(server) == ["/items?per_page=10", "/items?page=2&per_page=10", "/items?page=3&per_page=10", "/items?page=3&per_page=10"])
    #expect(try target.rows("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items") == [["25", "25", "1", "25"]])
    #expect(try staging.rows("SELECT count(*) FROM _dray_http_pages").map(\.values) == [[.integer(0)]])
    #expect(try !staging.tableExists("_dray_http__rest__items"))
  }

  /// A table name longer than PostgreSQL keeps is fitted (`PostgresIdentifier.fitted`) the
  /// same way by every write and read of the step: a second run replaces the rows (it once
  /// added them again: the table was looked up by its unfitted name, not found, so not
  /// emptied), and `expect` finds the table's columns.
  @Test func aTableNameLongerThanPostgreSQLKeepsIsReplacedAndCheckedUnderItsFittedName() throws {
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let server = try RestServer()
    let table = "items_" + String(repeating: "long_", count: 14)
    let steps = """
        - id: items
          http:
            base_url: "${API}"
            path: items
            query: { per_page: 100 }
            load: { table: \(table), records: /data, expect: { rows: { min: 25 }, id: { min: 1 } } }
      """
    for run in 1...2 {
      let report = try self.run(steps, server: server, target: target)
      #expect(report.exitCode == 0, "run \(run): \(report.steps.map { $0.errorMessage ?? "" })")
      #expect(
        try target.rows("SELECT count(*), count(DISTINCT id) FROM \(PostgresIdentifier.quoted(PostgresIdentifier.fitted(table)))") == [
          ["25", "25"]
        ], "run \(run)")
    }
  }

  /// A server whose next-page link repeats the request's key: the ledger keeps the link
  /// with the key as `***`, no form of the key reaches the database (which holds the
  /// journal) or the staging file beside a PostgreSQL one, and the next run puts the key
  /// back from the manifest and resumes. A key under a name the step's `query` does not
  /// have cannot be put back: the link is kept masked and the step starts over.
  @Test(arguments: [("api_key", true), ("sig", false)], TargetDatabase.Kind.allCases)
  func aNextLinkHoldingTheKeyIsStoredMasked(_ key: (name: String, resumes: Bool), on kind: TargetDatabase.Kind) throws {
    let (name, resumes) = key
    let target = try TargetDatabase(kind, folder: folder.path)
    let secret = "Key Sentinel/9"
    func page(_ ids: [Int], next: String?) throws -> String {
      let body: [String: Any] = ["data": ids.map { ["id": $0] }, "next": next ?? NSNull()]
      return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }
    func rule(_ page: String?, status: Int, body: String, times: Int? = nil) throws -> [String: Any] {
      var rule: [String: Any] = ["path": "/keyed", "status": status, "body": body]
      if let page { rule["query"] = ["page": page] }
      if let times { rule["times"] = times }
      return rule
    }
    let server = try RestServer()
    let rules = [
      try rule("2", status: 500, body: "oops", times: 1), try rule("2", status: 200, body: try page([3], next: nil)),
      try rule(nil, status: 200, body: try page([1, 2], next: "/keyed?page=2&\(name)=Key+Sentinel%2F9")),
    ]
    try server.setRules(String(decoding: try JSONSerialization.data(withJSONObject: rules), as: UTF8.self))
    let steps = """
        - id: items
          retry: { count: 0 }
          http: { base_url: "${API}", path: keyed, query: { api_key: "${KEY}" }, load: { table: items, records: /data }, paginate: { next: /next } }
      """
    let first = try run(steps, server: server, environment: ["KEY": secret], secrets: ["KEY"], target: target)
    #expect(first.exitCode == 69)
    let stored = try #require(try staging(target).rows("SELECT next FROM _dray_http_pages").first?.values.first)
    #expect(
      stored
        == .text(
          resumes
            ? #"{"url":"\#(server.url)keyed?page=2&api_key=***","masked":["api_key"]}"#
            : #"{"url":"\#(server.url)keyed?page=2&sig=***","restart":true}"#))
    var scan = SecretScan()
    for form in SecretForms.every(secret) { scan.sentinels.append(("the key", form)) }
    scan.look(in: try target.storedBytes(), "the \(kind) database")
    let walker = FileManager.default.enumerator(atPath: folder.path)
    while let relative = walker?.nextObject() as? String {
      var isDirectory: ObjCBool = false
      let path = folder.path + "/" + relative
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
        relative.contains(".sqlite")
      else { continue }
      scan.look(in: try Data(contentsOf: URL(fileURLWithPath: path)), relative)
    }
    #expect(scan.hits == [])

    let second = try run(steps, server: server, environment: ["KEY": secret], secrets: ["KEY"], target: target)
    #expect(second.exitCode == 0, "\(second.steps[0].errorMessage ?? "")")
    #expect(second.steps[0].notes.contains("resumed after page 1 (2 rows already in)") == resumes)
    let sent = try paths(server).dropFirst(2)
    #expect(
      Array(sent)
        == (resumes
          ? ["/keyed?page=2&api_key=Key%20Sentinel%2F9"]
          : ["/keyed?api_key=Key%20Sentinel%2F9", "/keyed?page=2&sig=Key+Sentinel%2F9"]))
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM items") == [["3", "3"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func answersThatCannotBeFollowedFailWithTheirReason(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer([
      "--rule", #"{"path": "/away", "status": 200, "body": "{\"data\": [], \"next\": \"http://elsewhere.example/x\"}"}"#,
      "--rule", #"{"path": "/loop", "status": 200, "body": "{\"data\": [], \"next\": \"/loop\"}"}"#,
    ])
    let report = try run(
      """
        - id: xml-as-json
          http: { base_url: "${API}", path: catalog.xml, load: { table: c } }
        - id: away
          http: { base_url: "${API}", path: away, load: { table: a, records: /data }, paginate: { next: /next } }
        - id: loop
          http: { base_url: "${API}", path: loop, load: { table: l, records: /data }, paginate: { next: /next } }
      """, server: server, target: target)
    #expect(report.steps[0].errorCode == "bad_answer")
    #expect(
      report.steps[0].errorMessage
        == "the answer of \(server.url)catalog.xml: the answer is not valid JSON ('<?xml' is not a JSON value, at byte 0); the server says it is application/xml; charset=utf-8: set format: xml"
    )
    // Steps after a failure do not run; run the others alone.
    let away = try run(
      "  - id: away\n    http: { base_url: \"${API}\", path: away, load: { table: a, records: /data }, paginate: { next: /next } }",
      server: server, target: target)
    #expect(away.steps[0].errorCode == "bad_pagination")
    #expect(
      away.steps[0].errorMessage
        == "page 1 (\(server.url)away): the next page's link http://elsewhere.example/x leaves http://127.0.0.1:\(URL(string: server.url)!.port!); dray follows links on the base_url's origin only, so the step's credentials never go elsewhere"
    )
    let loop = try run(
      "  - id: loop\n    http: { base_url: \"${API}\", path: loop, load: { table: l, records: /data }, paginate: { next: /next } }",
      server: server, target: target)
    #expect(loop.steps[0].errorCode == "pagination_loop")
    #expect(
      loop.steps[0].errorMessage == "the next page's link is the page itself (\(server.url)loop); stopping so as not to fetch pages forever"
    )
  }

  /// SQLite sees `Name` and `name` as one column: a record holding both would lose a value,
  /// so it is refused by record and names; declared columns load both.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func namesOfOneRecordThatDifferOnlyInCaseAreRefused(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer([
      "--rule", #"{"path": "/case", "status": 200, "body": "[{\"id\": 1}, {\"Name\": 1, \"name\": 2}]"}"#,
      "--rule", #"{"path": "/twice", "status": 200, "body": "[{\"name\": 1, \"name\": 2}]"}"#,
      "--rule", #"{"path": "/elements", "status": 200, "body": "<r><item><a>1</a><A>2</A></item></r>"}"#,
      "--rule", #"{"path": "/attribute", "status": 200, "body": "<r><item a=\"1\"><a>2</a></item></r>"}"#,
    ])
    let cases = [
      ("case", "load: { table: t }", "record 2 has the keys 'Name' and 'name', which differ only in letter case"),
      ("twice", "load: { table: t }", "record 1 has the key 'name' twice; one of its values would be lost"),
      (
        "elements", "format: xml, load: { table: t, records: /r/item }",
        "record 1 has the child elements 'a' and 'A', which differ only in letter case"
      ),
      ("attribute", "format: xml, load: { table: t, records: /r/item }", "record 1 has the attribute 'a' and the child element 'a'"),
    ]
    let rest =
      ": SQLite column names ignore letter case, so they would be one column and a value would be lost; "
      + "declare 'columns' with 'from' to load each under its own name"
    for (path, options, message) in cases {
      let report = try run("  - id: load\n    http: { base_url: '${API}', path: \(path), \(options) }", server: server, target: target)
      #expect(report.steps[0].errorCode == "bad_answer")
      #expect(report.steps[0].errorMessage == "the answer of \(server.url)\(path): " + message + (path == "twice" ? "" : rest))
    }
    #expect(try target.columnNames("t") == [])
    // Declared columns pick each value by its exact name or selector.
    let declared = try run(
      """
        - id: json
          http: { base_url: "${API}", path: case, load: { table: j, columns: { upper: { type: INTEGER, from: /Name }, name: INTEGER } } }
        - id: xml
          http:
            base_url: "${API}"
            path: attribute
            format: xml
            load: { table: x, records: /r/item, columns: { a_attribute: { type: INTEGER, from: "@a" }, a: INTEGER } }
      """, server: server, target: target)
    #expect(declared.exitCode == 0, "\(declared.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT upper, name FROM j ORDER BY upper NULLS FIRST") == [[nil, nil], ["1", "2"]])
    #expect(try target.rows("SELECT a_attribute, a FROM x") == [["1", "2"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func pagesSavedAsFilesAndLoadsRunningInParallel(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    let report = try run(
      """
        - id: pages
          http: { base_url: "${API}", path: link/items, query: { per_page: 10 }, output: "out/page-{page}.json", paginate: { link_header: true } }
        - id: both
          parallel:
            steps:
              - id: json
                http: { base_url: "${API}", path: items, load: { table: items, records: /data }, paginate: { next: /links/next } }
              - id: xml
                http: { base_url: "${API}", path: catalog.xml, format: xml, load: { table: catalog, records: //item }, paginate: { next: /catalog/next } }
      """, server: server, target: target)
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(report.steps[0].outputs == (1...3).map { "out/page-\($0).json" })
    #expect(try folder.read("out/page-3.json").hasPrefix(#"[{"id": 21, "name": "item-21""#))
    #expect(report.steps[1].members.map(\.rows) == [["items": 25], ["catalog": 25]])
    #expect(try target.rows("SELECT (SELECT count(*) FROM items), (SELECT count(*) FROM catalog)") == [["25", "25"]])
  }

  /// Page numbers until an empty page, and `paginate.more`, against `/orders` (7 orders, 3
  /// a page).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func pageNumbersEndAtAnEmptyPageOrWhenMoreIsFalse(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "7"])
    let load = "load: { table: orders, records: /data }"
    let empty = try run(
      "  - { id: orders, http: { base_url: '${API}', path: orders, query: { per_page: 3 }, \(load), paginate: { page: {} } } }",
      server: server, target: target)
    #expect(empty.status == .succeeded, "\(empty.steps.first?.errorMessage ?? "")")
    #expect(
      try paths(server) == [
        "/orders?per_page=3&page=1", "/orders?per_page=3&page=2", "/orders?per_page=3&page=3", "/orders?per_page=3&page=4",
      ])
    #expect(try target.rows("SELECT count(DISTINCT id), count(*) FROM orders") == [["7", "7"]])
    try server.reset()
    let more = try run(
      "  - { id: orders, http: { base_url: '${API}', path: orders, query: { per_page: 3 }, \(load), "
        + "paginate: { page: { param: page, start: 1 }, more: /has_more } } }", server: server, target: target)
    #expect(more.status == .succeeded)
    #expect(try paths(server) == ["/orders?per_page=3&page=1", "/orders?per_page=3&page=2", "/orders?per_page=3&page=3"])
    #expect(try target.rows("SELECT count(DISTINCT id), count(*) FROM orders") == [["7", "7"]])
    try server.reset()
    // `more` with another kind: the next link is there, but has_more false ends the pull.
    try server.setRules(
      #"[{"path": "/orders", "status": 200, "body": "{\"data\": [{\"id\": 1}], \"has_more\": false, \"links\": {\"next\": \"/orders?page=2\"}}"}]"#
    )
    let stopped = try run(
      "  - { id: orders, http: { base_url: '${API}', path: orders, \(load), paginate: { next: /links/next, more: /has_more } } }",
      server: server, target: target)
    #expect(stopped.status == .succeeded)
    #expect(try paths(server) == ["/orders"])
    try server.setRules(#"[{"path": "/orders", "status": 200, "body": "{\"data\": [{\"id\": 1}], \"has_more\": 1}"}]"#)
    let bad = try run(
      "  - { id: orders, http: { base_url: '${API}', path: orders, \(load), paginate: { page: {}, more: /has_more } } }", server: server,
      target: target)
    #expect(bad.steps.first?.errorCode == "bad_pagination")
    #expect(
      bad.steps.first?.errorMessage
        == "page 1 (\(server.url)orders?page=1): paginate.more '/has_more' is 1 in the answer; it must be true or false")
  }

  /// A cursor from the page's last record (Stripe's `starting_after`), with `more`.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aCursorFromTheLastRecordPagesLikeStripe(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "7"])
    let report = try run(
      "  - { id: orders, http: { base_url: '${API}', path: stripe/orders, query: { limit: 3 }, load: { table: orders, records: /data }, "
        + "paginate: { cursor: { param: starting_after, from_last_record: /id }, more: /has_more } } }", server: server, target: target)
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    #expect(
      try paths(server) == [
        "/stripe/orders?limit=3", "/stripe/orders?limit=3&starting_after=3", "/stripe/orders?limit=3&starting_after=6",
      ])
    #expect(try target.rows("SELECT count(DISTINCT id), count(*) FROM orders") == [["7", "7"]])
    let missing = try run(
      "  - { id: orders, http: { base_url: '${API}', path: stripe/orders, query: { limit: 3 }, load: { table: orders, records: /data }, "
        + "paginate: { cursor: { param: starting_after, from_last_record: /key } } } }", server: server, target: target)
    #expect(missing.steps.first?.errorCode == "bad_pagination")
    #expect(
      missing.steps.first?.errorMessage
        == "page 1 (\(server.url)stripe/orders?limit=3): paginate.cursor.from_last_record '/key' is missing in record 3, the last of the page; it must be a string or a number"
    )
  }

  /// A cursor sent inside a JSON body, GraphQL-style: `pageInfo { hasNextPage endCursor }`
  /// into `variables.after`.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aCursorInTheJSONBodyPagesLikeGraphQL(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "7"])
    let report = try run(
      """
        - id: orders
          http:
            method: POST
            base_url: '${API}'
            path: graphql
            body: { json: { query: "{ orders(first: $first, after: $after) { nodes { id } } }", variables: { first: 3, after: null } } }
            load: { table: orders, records: /data/orders/nodes }
            paginate:
              cursor: { from: /data/orders/pageInfo/endCursor, body: /variables/after }
              more: /data/orders/pageInfo/hasNextPage
      """, server: server, target: target)
    #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
    let bodies = try server.requests().map { try JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any] }
    #expect(bodies.map { ($0?["variables"] as? [String: Any])?["after"] as? String } == [nil, "Mw==", "Ng=="])
    #expect(try target.rows("SELECT count(DISTINCT id), count(*) FROM orders") == [["7", "7"]])
  }

  /// A POST step whose body holds one of the job's secrets, answered with a 307 to another
  /// origin: the other origin receives nothing and the step fails naming base_url; the same
  /// body without a secret follows the redirect (valid input still works).
  @Test func aBodyWithASecretNeverFollowsARedirectToAnotherOrigin() throws {
    let server = try RestServer()
    let other = try RestServer()
    try server.setRules(#"[{"path": "/send", "status": 307, "headers": {"Location": "\#(other.url)steal"}}]"#)
    try other.setRules(#"[{"path": "/steal", "status": 200, "body": "{\"data\": []}"}]"#)
    func step(_ value: String) -> String {
      """
        - id: send
          http:
            method: POST
            base_url: "${API}"
            path: send
            body: { form: { pin: "\(value)" } }
            load: { table: sent, records: /data }
      """
    }
    let refused = try run(step("${PIN}"), server: server, environment: ["PIN": "Pin-Secret-5150"], secrets: ["\"${PIN}\""])
    #expect(refused.status == .failed)
    let stolen = try other.requests()
    #expect(stolen.isEmpty, "\(stolen)")
    let message = refused.steps.first?.errorMessage ?? ""
    #expect(message.contains("refused to follow the 307 redirect") && message.contains("point base_url at the final address"), "\(message)")
    let followed = try run(step("plain-value"), server: server)
    #expect(followed.status == .succeeded, "\(followed.steps.first?.errorMessage ?? "")")
    #expect(try other.requests().map(\.body) == ["pin=plain-value"])
  }

  /// D-secret-5: a body field named as a credential by the one rule (`CredentialName`:
  /// `passwd`, `passphrase`, `user_pass`, ...) is a secret as `password` is, though no
  /// variable is listed: a 307 to another origin sends it nothing.
  @Test(arguments: ["passwd", "passphrase", "user_pass", "api_token", "client_secret_v2"])
  func aBodyFieldNamedAsACredentialNeverFollowsARedirectToAnotherOrigin(name: String) throws {
    let server = try RestServer()
    let other = try RestServer()
    try server.setRules(#"[{"path": "/send", "status": 307, "headers": {"Location": "\#(other.url)steal"}}]"#)
    let steps = """
        - id: send
          http:
            method: POST
            base_url: "${API}"
            path: send
            body: { form: { user: bob, \(name): "${PW}", note: n } }
            load: { table: sent, records: /data }
      """
    let refused = try run(steps, server: server, environment: ["PW": "FormPassphrase9"])
    #expect(refused.status == .failed)
    #expect(try other.requests().isEmpty)
    let message = refused.steps.first?.errorMessage ?? ""
    #expect(message.contains("refused to follow the 307 redirect"), "\(message)")
    #expect(!message.contains("FormPassphrase9"))
  }
}
