import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

@Suite struct HTTPStepManifestTests {
  /// A job with a database, whose steps follow.
  static let head = "version: 1\njob: j\ndatabase: { path: db.sqlite }\nsteps:\n"
  static let environment = ["API_TOKEN": "tok-Sentinel-4711"]

  func load(_ steps: String, environment: [String: String] = Self.environment, directory: String = "/jobs") throws(ManifestError)
    -> Manifest
  {
    try ManifestText.load(Self.head + steps, environment: environment, directory: directory)
  }

  func errors(_ steps: String) -> [String] {
    ManifestText.errors(Self.head + steps, environment: Self.environment)
  }

  func http(_ manifest: Manifest, _ index: Int = 0) -> HTTPStep? {
    manifest.steps[index].kind.http
  }

  @Test func readsEveryPartOfARequest() throws {
    let manifest = try load(
      """
        - id: items
          http:
            method: POST
            base_url: https://api.example.com/v2/
            path: /items/search
            query: { status: active, ids: [1, 2], api_key: k-Sentinel-0815 }
            headers: { X-Trace: "on" }
            body: { json: { q: pears, limit: 10 } }
            auth: { bearer: "${API_TOKEN}" }
            tls: { verify: false }
            load:
              table: items
              records: /data/items
              columns: { id: INTEGER, owner: { type: TEXT, from: /owner/name } }
            paginate: { cursor: { param: after, from: /meta/next }, max_pages: 50 }
            on_status: { 404: empty, 422: fail, 5xx: retry }
      """)
    let step = try #require(http(manifest))
    #expect(step.method == .post)
    #expect(step.url == "https://api.example.com/v2/items/search?status=active&ids=1&ids=2&api_key=k-Sentinel-0815")
    #expect(step.headers == [HTTPHeader("X-Trace", "on")])
    #expect(step.body == .json(.object([("q", .string("pears")), ("limit", .integer(10))])))
    #expect(step.auth == .bearer(token: "tok-Sentinel-4711"))
    #expect(step.tls == TLSSettings(verify: false))
    #expect(step.load?.table == "items")
    #expect(step.load?.records == .json(try JSONPointer(parsing: "/data/items")))
    #expect(
      step.load?.columns == [
        HTTPStep.Column(name: "id", type: .integer),
        HTTPStep.Column(name: "owner", type: .text, from: .json(try JSONPointer(parsing: "/owner/name"))),
      ])
    #expect(step.paginate == .cursor(param: "after", from: .json(try JSONPointer(parsing: "/meta/next"))))
    #expect(step.maxPages == 50)
    #expect(step.outcome(for: 404) == .empty)
    #expect(step.outcome(for: 422) == .fail)
    #expect(step.outcome(for: 501) == .retry)
    #expect(step.outcome(for: 429) == .retry)
    #expect(step.outcome(for: 409) == .fail)
    #expect(manifest.redactor.redact("tok-Sentinel-4711 k-Sentinel-0815") == "*** ***")
  }

  @Test func anExactStatusRuleWinsOverItsClassWhateverTheOrder() throws {
    let manifest = try load(
      """
        - http: { base_url: "http://h/", on_status: { 4xx: empty, 404: retry, 5xx: fail, 503: empty } }
      """)
    let step = try #require(http(manifest))
    #expect(step.onStatus.map(\.key) == ["4xx", "404", "5xx", "503"])
    #expect(step.onStatus.map(\.match) == [.statusClass(4), .status(404), .statusClass(5), .status(503)])
    #expect(step.outcome(for: 404) == .retry)
    #expect(step.outcome(for: 403) == .empty)
    #expect(step.outcome(for: 503) == .empty)
    #expect(step.outcome(for: 500) == .fail)
    #expect(step.declaresRetry(404))
    #expect(!step.declaresRetry(405))
    #expect(!step.declaresRetry(503))
  }

  @Test func everyPaginationKindIsDeclaredAndReadFromItsKey() throws {
    #expect(
      ManifestSchema.httpPaginate.names.filter { !["max_pages", "more"].contains($0) }
        == HTTPStep.Pagination.Kind.allCases.map(\.rawValue))
    let manifest = try load(
      """
        - http: { base_url: "http://h/", output: "out/a-{page}.json", paginate: { next: /next } }
        - http: { base_url: "http://h/", output: "out/b-{page}.json", paginate: { link_header: true } }
        - http: { base_url: "http://h/", load: { table: t, records: /items }, paginate: { offset: } }
        - http: { base_url: "http://h/", output: "out/c-{page}.json", paginate: { cursor: { from: /c } } }
        - http: { base_url: "http://h/", load: { table: t }, paginate: { page: , more: /has_more } }
      """)
    #expect(try #require(http(manifest, 0)).paginate == .next(.json(try JSONPointer(parsing: "/next"))))
    #expect(try #require(http(manifest, 1)).paginate == .linkHeader)
    #expect(try #require(http(manifest, 2)).paginate == .offset(param: "offset", limitParam: "limit", limit: 100, start: 0))
    #expect(try #require(http(manifest, 3)).paginate == .cursor(param: "cursor", from: .json(try JSONPointer(parsing: "/c"))))
    #expect(try #require(http(manifest, 4)).paginate == .page(param: "page", start: 1))
    #expect(try #require(http(manifest, 4)).more == .json(try JSONPointer(parsing: "/has_more")))
  }

  @Test func defaultsAndOtherPaginationKinds() throws {
    let manifest = try load(
      """
        - http: { base_url: "http://127.0.0.1:9/", load: { table: a }, paginate: { link_header: true } }
        - http: { base_url: "http://127.0.0.1:9/", load: { table: b, records: /items }, paginate: { offset: { limit: 50 } } }
        - http: { base_url: "http://127.0.0.1:9/", format: xml, load: { table: c, records: //item }, paginate: { next: /catalog/next } }
        - http: { base_url: "http://127.0.0.1:9/", output: "out/p-{page}.json", paginate: { next: /links/next } }
        - http: { base_url: "http://127.0.0.1:9/x/", path: "/a b/ü?v=1", query: { z: "1 2" }, auth: { basic: { username: u, password: pw-Sentinel } } }
      """)
    #expect(manifest.steps.map(\.id) == ["http-1", "http-2", "http-3", "http-4", "http-5"])
    let a = try #require(http(manifest, 0))
    #expect(a.method == .get)
    #expect(a.format == .json)
    #expect(a.load?.records == .json(try JSONPointer(parsing: "")))
    #expect(a.paginate == .linkHeader)
    #expect(try #require(http(manifest, 1)).paginate == .offset(param: "offset", limitParam: "limit", limit: 50, start: 0))
    let c = try #require(http(manifest, 2))
    #expect(c.load?.records == .xml(try XMLPath(parsing: "//item")))
    #expect(c.paginate == .next(.xml(try XMLPath(parsing: "/catalog/next"))))
    #expect(try #require(http(manifest, 3)).output == "out/p-{page}.json")
    let e = try #require(http(manifest, 4))
    #expect(e.url == "http://127.0.0.1:9/x/a%20b/%C3%BC?v=1&z=1%202")
    #expect(e.auth?.authorization == "Basic dTpwdy1TZW50aW5lbA==")
    #expect(manifest.redactor.redact("Authorization: Basic dTpwdy1TZW50aW5lbA==") == "Authorization: Basic ***")
  }

  @Test func bearerAndBasicPasswordsComeFromFiles() throws {
    let folder = TemporaryDirectory()
    try folder.write("token", "file-token-Sentinel\n")
    try folder.write("pw", "file-pw-Sentinel\n")
    let manifest = try load(
      """
        - http: { base_url: "http://h/", auth: { bearer_file: token } }
        - http: { base_url: "http://h/", auth: { basic: { username: u, password_file: pw } } }
      """, directory: folder.path)
    #expect(http(manifest, 0)?.auth == .bearer(token: "file-token-Sentinel"))
    #expect(http(manifest, 1)?.auth == .basic(username: "u", password: "file-pw-Sentinel"))
    #expect(manifest.redactor.redact("file-token-Sentinel file-pw-Sentinel") == "*** ***")
  }

  /// D-inject-1: a bearer token goes into the `Authorization` header as it is, so one that
  /// holds a line break (from a variable, `${file:...}` or `bearer_file`) would add header
  /// fields of its own: refused where it is written, like a `headers` value, without the
  /// value. A file's one trailing line ending (LF or CR LF) is no part of the token.
  @Test func aBearerTokenHoldingALineBreakIsRefused() throws {
    let folder = TemporaryDirectory()
    try folder.write("two.txt", "tok1\r\nX-From-File: injected\n")
    try folder.write("crlf.txt", "tok-Crlf-Sentinel\r\n")
    try folder.write("ctl.txt", "tok\u{1}x")
    let steps = """
        - http: { base_url: "http://h/", auth: { bearer: "${TOK}" } }
        - http: { base_url: "http://h/", auth: { bearer: "${file:two.txt}" } }
        - http: { base_url: "http://h/", auth: { bearer_file: two.txt } }
        - http: { base_url: "http://h/", auth: { bearer_file: ctl.txt } }
      """
    let found = ManifestText.errors(Self.head + steps, environment: ["TOK": "abc\r\nX-Evil: 1"], directory: folder.path)
    #expect(
      found == [
        "job.yaml:5:52: error: 'steps.http-1.http.auth.bearer' must be one line; a header value cannot hold a line break",
        "job.yaml:6:52: error: 'steps.http-2.http.auth.bearer' must be one line; a header value cannot hold a line break",
        "job.yaml:7:57: error: 'steps.http-3.http.auth.bearer_file' must be one line; a header value cannot hold a line break",
        "job.yaml:8:57: error: 'steps.http-4.http.auth.bearer_file' holds a control character (U+0001), which a header value cannot carry (RFC 9110 §5.5); remove it",
      ])
    #expect(!found.joined().contains("Evil") && !found.joined().contains("injected"))
    let manifest = try load(
      """
        - http: { base_url: "http://h/", auth: { bearer_file: crlf.txt } }
        - http: { base_url: "http://h/", auth: { bearer: "${file:crlf.txt}" } }
      """, directory: folder.path)
    #expect(http(manifest, 0)?.auth == .bearer(token: "tok-Crlf-Sentinel"))
    #expect(http(manifest, 1)?.auth == .bearer(token: "tok-Crlf-Sentinel"))
  }

  @Test func everyMistakeIsReportedWhereItIsWritten() {
    let found = errors(
      """
        - http:
            method: FETCH
            base_url: ftp://example.com/
            path: https://other.example.com/x
            query: { a: { b: c } }
            body: { json: {}, form: {} }
            auth: { bearer: x-token-1, basic: { username: u, password: p-secret-1 } }
            format: yaml
            load: { table: _dray_mine, records: data, columns: { id: INTEGR, ID: TEXT } }
            paginate: { next: /a, cursor: { from: /b } }
            on_status: { 200: empty, 4x: retry, 404: ignore }
        - http:
            base_url: http://h/
            headers: { Authorization: "Bearer x" }
            auth: { bearer: y-token-1 }
            output: out/all.json
            format: xml
            load: { table: t, records: item }
            paginate: { next: "catalog/next" }
        - http: { base_url: http://h/, output: out/p.json, paginate: { link_header: false } }
        - http: { base_url: http://h/, paginate: { offset: {} } }
        - http: { base_url: http://h/, tabel: x }
        - http: { base_url: http://h/, output: out/all.json, paginate: { link_header: true } }
        - http: { base_url: "http://h/?a=1" }
        - http: { base_url: "https://me:pw@h/" }
        - http: { base_url: http://h/, format: xml, load: { table: t } }
        - http: { base_url: http://h/, output: ../elsewhere.json }
      """)
    #expect(
      found == [
        "job.yaml:6:15: error: 'steps.http-1.http.method' must be one of GET, POST, PUT, PATCH, DELETE, found 'FETCH'",
        "job.yaml:7:17: error: 'steps.http-1.http.base_url' must be an http:// or https:// address such as https://api.example.com/v1/, found 'ftp://example.com/'",
        "job.yaml:8:13: error: 'steps.http-1.http.path' is appended to base_url; put the address in base_url and the rest in path",
        "job.yaml:9:19: error: 'steps.http-1.http.query.a' must be a value or a list of values, found a mapping",
        "job.yaml:10:31: error: 'steps.http-1.http.body' takes 'json' or 'form', not both",
        "job.yaml:11:34: error: 'steps.http-1.http.auth' takes one of bearer, bearer_file, basic, oauth2, api_key, login; this one has bearer and basic",
        "job.yaml:12:15: error: 'steps.http-1.http.format' must be one of json, xml, found 'yaml'",
        "job.yaml:13:22: error: 'steps.http-1.http.load.table': names starting with _dray or sqlite_ are reserved; choose another",
        "job.yaml:13:43: error: 'steps.http-1.http.load.records': a JSON Pointer starts with '/' (RFC 6901), such as /data/items; found 'data'",
        "job.yaml:13:64: error: 'steps.http-1.http.load.columns.id' must be one of TEXT, INTEGER, REAL, NUMERIC, found 'INTEGR'; did you mean 'INTEGER'?",
        "job.yaml:13:72: error: columns 'id' and 'ID' differ only in letter case; SQLite cannot tell them apart",
        "job.yaml:14:29: error: 'steps.http-1.http.paginate' takes one way to find the next page; this one has next and cursor",
        "job.yaml:15:20: error: '200' in steps.http-1.http.on_status is not a status from 400 to 599, nor 4xx or 5xx",
        "job.yaml:15:32: error: '4x' in steps.http-1.http.on_status is not a status from 400 to 599, nor 4xx or 5xx",
        "job.yaml:15:48: error: 'steps.http-1.http.on_status.404' must be one of fail, empty, retry, found 'ignore'",
        "job.yaml:18:18: error: 'steps.http-2.http.headers.Authorization' and 'steps.http-2.http.auth' both set the Authorization header; keep one",
        "job.yaml:22:34: error: 'steps.http-2.http.load.records' must start with '/' or '//', such as /catalog/item or //item; found 'item'",
        "job.yaml:23:25: error: 'steps.http-2.http.paginate.next' must start with '/' or '//', such as /catalog/item or //item; found 'catalog/next'",
        "job.yaml:24:79: error: 'steps.http-3.http.paginate.link_header' can only be true; remove 'paginate' for a single request",
        "job.yaml:25:44: error: offset pagination counts the records of each page; add 'load' with 'records' to 'steps.http-4.http'",
        "job.yaml:26:34: error: unknown key 'tabel' in steps.http-5.http; valid keys: method, base_url, path, query, headers, body, auth, tls, format, output, load, paginate, on_status, incremental, rate_limit",
        "job.yaml:27:42: error: 'steps.http-6.http.output' must hold {page} when the step paginates, such as out/items-{page}.json: each page is saved to its own file",
        "job.yaml:28:23: error: 'steps.http-7.http.base_url' must not hold a query ('?...'); give query parameters in 'query'",
        "job.yaml:29:23: error: 'steps.http-8.http.base_url' must not hold credentials (user@host); give them in 'auth'",
        "job.yaml:30:53: error: missing required key 'records' in steps.http-9.http.load: the path of the record elements, such as /catalog/item or //item",
        "job.yaml:31:42: error: 'steps.http-10.http.output': '../elsewhere.json' leads outside the job folder (through '..'); a step reads and writes files only inside the job folder",
      ])
  }

  @Test func writeModesAndTheCursorAreRead() throws {
    let manifest = try load(
      """
        - http:
            base_url: http://h/
            load: { table: t, write: merge, primary_key: [id, region], deleted: /meta/deleted }
            incremental: { cursor: /updated_at, param: since, initial: "2024-01-01T00:00:00Z", lag: 5m }
        - http: { base_url: http://h/, load: { table: t, write: append }, incremental: { cursor: /seq, param: after, initial: 0 } }
      """)
    let merge = try #require(http(manifest, 0))
    #expect(merge.load?.write == .merge)
    #expect(merge.load?.primaryKey == ["id", "region"])
    #expect(merge.load?.deleted?.tokens == ["meta", "deleted"])
    #expect(merge.incremental?.cursor.tokens == ["updated_at"])
    #expect(merge.incremental?.initial.json == .string("2024-01-01T00:00:00Z"))
    #expect(merge.incremental?.lag == .seconds(300))
    #expect(http(manifest, 1)?.load?.write == .append)
    #expect(http(manifest, 1)?.incremental?.initial.json == .integer(0))
    #expect(try #require(http(try load("  - http: { base_url: http://h/, load: { table: t } }"))).load?.write == .replace)
  }

  @Test func contractAndQuarantineAreReadWithTheirDefaultsAndTheOldSpelling() throws {
    let manifest = try load(
      """
        - http:
            base_url: http://h/
            load: { table: t, contract: { new_columns: discard_row, types: evolve }, quarantine: { max_rows: 5, max_share: 0.01 } }
        - http: { base_url: http://h/, load: { table: t, quarantine: bad } }
        - http: { base_url: http://h/, load: { table: t, columns: { id: INTEGER }, extra: refuse } }
        - http: { base_url: http://h/, load: { table: t, columns: { id: INTEGER }, extra: ignore } }
      """)
    let first = try #require(http(manifest)?.load)
    #expect(first.contract == HTTPStep.Contract(newColumns: .discardRow, types: .evolve))
    #expect(first.quarantine == HTTPStep.Quarantine(table: nil, maxRows: 5, maxShare: 0.01))
    #expect(http(manifest, 1)?.load?.contract == HTTPStep.Contract())
    #expect(http(manifest, 1)?.load?.contract.newColumnsRule(declaredColumns: false) == .evolve)
    #expect(http(manifest, 1)?.load?.quarantine.table == "bad")
    #expect(http(manifest, 2)?.load?.contract == HTTPStep.Contract(newColumns: .freeze))
    #expect(http(manifest, 3)?.load?.contract == HTTPStep.Contract())
    #expect(http(manifest, 3)?.load?.contract.newColumnsRule(declaredColumns: true) == nil)
  }

  @Test func contractMistakesAreReportedWhereTheyAreWritten() {
    let found = errors(
      """
        - http: { base_url: http://h/, load: { table: t, columns: { id: INTEGER }, extra: refuse, contract: { types: freeze } } }
        - http: { base_url: http://h/, load: { table: t, columns: { id: INTEGER }, contract: { new_columns: evolve } } }
        - http: { base_url: http://h/, load: { table: t, contract: { types: widen } } }
        - http: { base_url: http://h/, load: { table: t, quarantine: { max_share: 2 } } }
        - http: { base_url: http://h/, load: { table: t, quarantine: _dray_x } }
        - http: { base_url: http://h/, load: { table: t, quarantine: T } }
      """)
    #expect(
      found == [
        "job.yaml:5:85: error: 'steps.http-1.http.load.extra' is the old spelling of 'steps.http-1.http.load.contract.new_columns'; give only contract (extra: refuse is new_columns: freeze; extra: ignore is the default with columns)",
        "job.yaml:6:103: error: 'steps.http-2.http.load.contract.new_columns': evolve adds a column for each new field, but 'columns' fix the table's columns; declare a column for the field, or remove 'columns' to load every field",
        "job.yaml:7:71: error: 'steps.http-3.http.load.contract.types' must be one of as_given, evolve, freeze, discard_row, discard_value, found 'widen'",
        "job.yaml:8:77: error: 'steps.http-4.http.load.quarantine.max_share' is a share of the records: a number from 0 to 1, such as 0.01",
        "job.yaml:9:64: error: 'steps.http-5.http.load.quarantine': names starting with _dray or sqlite_ are reserved; choose another",
        "job.yaml:10:64: error: 'steps.http-6.http.load.quarantine' names the loaded table itself ('t'); choose another table for the quarantine",
      ])
  }

  /// A quarantine must be a table of its own: not a table another step loads, nor another
  /// step's quarantine (case-insensitively), where it is written.
  @Test func aQuarantineMayNotNameAnotherStepsTable() {
    let found = errors(
      """
        - { id: a, http: { base_url: http://h/, load: { table: other } } }
        - { id: recs, http: { base_url: http://h/, load: { table: recs, quarantine: OTHER } } }
        - { id: b, http: { base_url: http://h/, load: { table: b, quarantine: { table: Other_Rejected } } } }
        - { id: c, http: { base_url: http://h/, load: { table: c, quarantine: c_q } } }
        - { id: d, http: { base_url: http://h/, load: { table: c, quarantine: c_q } } }
      """)
    #expect(
      found == [
        "job.yaml:6:79: error: the quarantine of 'steps.recs.http.load' is table 'OTHER', which 'steps.a.http.load' loads; name another table with steps.recs.http.load.quarantine",
        "job.yaml:7:73: error: the quarantine of 'steps.b.http.load' is table 'Other_Rejected', the quarantine of 'steps.a.http.load' too; name another table with steps.b.http.load.quarantine",
      ])
  }

  /// `load.extra` is deprecated, and a quarantine no rule can fill is unused: both are
  /// warnings, with where they are written, and the manifest stays valid.
  @Test func theOldSpellingAndAnUnusedQuarantineAreWarnedAbout() throws {
    let manifest = try load(
      """
        - http: { base_url: http://h/, load: { table: t, columns: { id: INTEGER }, extra: refuse } }
        - http: { base_url: http://h/, load: { table: u, quarantine: u_bad } }
        - http: { base_url: http://h/, load: { table: v, contract: { types: freeze }, quarantine: { max_rows: 3 } } }
        - http: { base_url: http://h/, load: { table: w, contract: { types: discard_value }, quarantine: w_bad } }
      """)
    #expect(
      manifest.warnings == [
        "job.yaml:5:85: warning: 'steps.http-1.http.load.extra' is deprecated: write 'steps.http-1.http.load.contract: { new_columns: freeze }' for extra: refuse, and nothing for extra: ignore (the default with columns)",
        "job.yaml:6:64: warning: 'steps.http-2.http.load.quarantine' is unused: no rule of 'steps.http-2.http.load.contract' sets records aside or trims them (discard_row or discard_value in new_columns or types)",
        "job.yaml:7:93: warning: 'steps.http-3.http.load.quarantine' is unused: no rule of 'steps.http-3.http.load.contract' sets records aside or trims them (discard_row or discard_value in new_columns or types)",
      ])
  }

  @Test func writeModeAndCursorMistakesAreReportedWhereTheyAreWritten() {
    let found = errors(
      """
        - http: { base_url: http://h/, load: { table: t, write: merge } }
        - http: { base_url: http://h/, load: { table: t, write: append, primary_key: [id], deleted: /gone } }
        - http: { base_url: http://h/, load: { table: t, write: upsert } }
        - http: { base_url: http://h/, incremental: { cursor: /u, param: since, initial: x } }
        - http: { base_url: http://h/, load: { table: t }, incremental: { cursor: u, param: since, initial: [1], lag: 5m } }
        - http: { base_url: http://h/, load: { table: t }, incremental: { cursor: /n, param: since, initial: 0, lag: 5m } }
        - http: { base_url: http://h/, load: { table: t, columns: { id: INTEGER }, write: merge, primary_key: [key] } }
        - http: { base_url: http://h/, load: { table: t, extra: refuse } }
      """)
    #expect(
      found == [
        "job.yaml:5:59: error: 'steps.http-1.http.load.write': merge needs 'primary_key', the record fields that identify a row, such as primary_key: [id]",
        "job.yaml:6:80: error: 'steps.http-2.http.load.primary_key' is for write: merge; this load writes with append",
        "job.yaml:6:95: error: 'steps.http-2.http.load.deleted' deletes merged rows; it needs write: merge",
        "job.yaml:7:59: error: 'steps.http-3.http.load.write' must be one of replace, append, merge, found 'upsert'",
        "job.yaml:8:47: error: 'steps.http-4.http.incremental' takes its cursor from the records; add 'load' to 'steps.http-4.http'",
        "job.yaml:9:77: error: 'steps.http-5.http.incremental.cursor': a JSON Pointer starts with '/' (RFC 6901), such as /data/items; found 'u'",
        "job.yaml:9:103: error: 'steps.http-5.http.incremental.initial' must be a string or a number, such as \"2024-01-01T00:00:00Z\" or 0, found [1]",
        "job.yaml:10:112: error: 'steps.http-6.http.incremental.lag' moves back an RFC 3339 instant; 'initial' is not one, such as 2024-01-01T00:00:00Z",
        "job.yaml:11:105: error: 'steps.http-7.http.load.primary_key' names 'key', which is not in 'steps.http-7.http.load.columns'",
        "job.yaml:12:59: error: 'steps.http-8.http.load.extra' says what fields that 'columns' do not name do; without 'columns' every field is loaded",
      ])
  }

  /// `load.delete_missing` needs a full `merge` pull by `primary_key`: another write mode,
  /// `incremental` and `partitions` are refused where `delete_missing` is written.
  @Test func deleteMissingIsRefusedWithoutAFullMerge() throws {
    let found = errors(
      """
        - http: { base_url: http://h/, load: { table: t, write: append, delete_missing: true } }
        - http: { base_url: http://h/, load: { table: t, delete_missing: true } }
        - http: { base_url: http://h/, load: { table: t, write: merge, delete_missing: true } }
        - http:
            base_url: http://h/
            load: { table: t, write: merge, primary_key: [id], delete_missing: true }
            incremental: { cursor: /u, param: since, initial: '2024-01-01T00:00:00Z' }
        - id: parts
          partitions: { list: [{ r: eu }] }
          http: { base_url: 'http://h/{r}', load: { table: t, write: merge, primary_key: [id], delete_missing: true } }
      """)
    #expect(
      found == [
        "job.yaml:5:83: error: 'steps.http-1.http.load.delete_missing' deletes the rows a full merge pull did not see; it needs write: merge with primary_key (this load writes with append); set write: merge and primary_key, or remove delete_missing",
        "job.yaml:6:68: error: 'steps.http-2.http.load.delete_missing' deletes the rows a full merge pull did not see; it needs write: merge with primary_key (this load writes with replace); set write: merge and primary_key, or remove delete_missing",
        "job.yaml:7:59: error: 'steps.http-3.http.load.write': merge needs 'primary_key', the record fields that identify a row, such as primary_key: [id]",
        "job.yaml:10:74: error: 'steps.http-4.http.load.delete_missing' needs a full pull, and 'steps.http-4.http.incremental' fetches only the changed records, so every row would look missing; remove delete_missing, or incremental",
        "job.yaml:14:106: error: 'steps.parts.http.load.delete_missing' cannot run over partitions: each partition publishes its own pages, so no single publish sees the whole pull; remove delete_missing, or partitions",
      ], "\(found)")
    let manifest = try load(
      "  - http: { base_url: http://h/, load: { table: t, write: merge, primary_key: [id], delete_missing: true } }\n")
    #expect(http(manifest)?.load?.deleteMissing == true)
    #expect(http(try load("  - http: { base_url: http://h/, load: { table: t } }\n"))?.load?.deleteMissing == false)
  }

  /// A pagination parameter set on every page, the first included, and named like
  /// `incremental.param` would never send the cursor; `cursor.param` sets it from the second
  /// page on, in the cursor's place (Stripe's `starting_after`), and is valid.
  @Test func aPaginationParameterOnEveryPageMayNotBeTheIncrementalOne() throws {
    let cursor = "incremental: { cursor: /id, param: after, initial: 0 }"
    let found = errors(
      """
        - http: { base_url: http://h/, load: { table: t }, paginate: { page: { param: after } }, \(cursor) }
        - http: { base_url: http://h/, load: { table: t }, paginate: { offset: { limit_param: after } }, \(cursor) }
      """)
    #expect(
      found == [
        "job.yaml:5:81: error: 'steps.http-1.http.paginate.page.param' is 'after', the parameter 'steps.http-1.http.incremental.param' sends; each request would carry it twice: give each its own parameter",
        "job.yaml:6:89: error: 'steps.http-2.http.paginate.offset.limit_param' is 'after', the parameter 'steps.http-2.http.incremental.param' sends; each request would carry it twice: give each its own parameter",
      ])
    let stripe = try load(
      "  - http: { base_url: http://h/, load: { table: t }, paginate: { cursor: { param: after, from_last_record: /id } }, \(cursor) }\n")
    #expect(http(stripe)?.incremental?.param == "after")
  }

  @Test func loadingNeedsADatabase() {
    let text = """
      version: 1
      job: j
      steps:
        - http: { base_url: "http://h/", load: { table: t } }
      """
    #expect(throws: ManifestError.self) { try ManifestLoader(environment: [:]).load(text: text, path: "job.yaml", directory: "/jobs") }
    do {
      _ = try ManifestLoader(environment: [:]).load(text: text, path: "job.yaml", directory: "/jobs")
    } catch {
      #expect(
        error.diagnostics.map(\.description) == [
          "job.yaml:4:42: error: 'steps.http-1.http.load' fills a table; add a 'database' block with a 'path' (SQLite) or a 'url' (PostgreSQL)"
        ])
    }
  }

  @Test func selectorsFollowTheirRFCs() throws {
    #expect(try JSONPointer(parsing: "/a~1b/~0c/0").tokens == ["a/b", "~c", "0"])
    #expect(try JSONPointer(parsing: "").tokens == [])
    #expect(throws: SelectorError("'/a~2' holds a '~' not followed by 0 or 1; write ~0 for '~' and ~1 for '/' (RFC 6901)")) {
      try JSONPointer(parsing: "/a~2")
    }
    let doc = JSONValue.object([("a/b", .array([.integer(7), .integer(8)]))])
    #expect(try JSONPointer(parsing: "/a~1b/1").resolve(in: doc) == .integer(8))
    #expect(try JSONPointer(parsing: "/a~1b/01").resolve(in: doc) == nil)
    #expect(try JSONPointer(parsing: "/a~1b/-").resolve(in: doc) == nil)
    let path = try XMLPath(parsing: "//feed/atom:entry/@href")
    #expect(path.anchor == .anywhere)
    #expect(path.steps == ["feed", "atom:entry"])
    #expect(path.attribute == "href")
    #expect(throws: SelectorError("'/a/@b/c': an attribute step (@name) may only come last")) { try XMLPath(parsing: "/a/@b/c") }
    #expect(throws: SelectorError("'/a//b' has an empty step; '//' may only start a path")) { try XMLPath(parsing: "/a//b") }
  }
}

extension HTTPStepManifestTests {
  @Test func readsARequestBudget() throws {
    let manifest = try load(
      """
        - http: { base_url: https://api.example.com/, rate_limit: { requests: 10, per: 1s } }
        - http: { base_url: https://api.example.com/, rate_limit: { requests: 1, per: 1.5m } }
        - http: { base_url: https://api.example.com/ }
      """)
    #expect(http(manifest, 0)?.rateLimit == HTTPStep.RateLimit(requests: 10, per: .seconds(1)))
    #expect(http(manifest, 1)?.rateLimit == HTTPStep.RateLimit(requests: 1, per: .seconds(90)))
    #expect(http(manifest, 2)?.rateLimit == nil)
    #expect(
      errors("  - http: { base_url: https://api.example.com/, rate_limit: { requests: 10 } }\n") == [
        "job.yaml:5:61: error: missing required key 'per' in steps.http-1.http.rate_limit"
      ])
  }
}

extension HTTPStepManifestTests {
  @Test func boundaryIsInclusiveByDefaultAndExclusiveNeedsACursorWithAPredecessor() throws {
    let manifest = try load(
      """
        - id: a
          http:
            base_url: http://h/
            load: { table: a }
            incremental: { cursor: /updated_at, param: since, initial: "2024-01-01T00:00:00Z" }
        - id: b
          http:
            base_url: http://h/
            load: { table: b }
            incremental: { cursor: /id, param: since, initial: 0, boundary: exclusive }
      """)
    #expect(http(manifest, 0)?.incremental?.boundary == .inclusive)
    #expect(http(manifest, 1)?.incremental?.boundary == .exclusive)
    let found = errors(
      """
        - http: { base_url: http://h/, load: { table: t }, incremental: { cursor: /n, param: since, initial: abc, boundary: exclusive } }
        - http: { base_url: http://h/, load: { table: u }, incremental: { cursor: /n, param: since, initial: 1e-400, boundary: exclusive } }
        - http: { base_url: http://h/, load: { table: v }, incremental: { cursor: /n, param: since, initial: 1, boundary: open } }
        - http: { base_url: http://h/, load: { table: w }, incremental: { cursor: /n, param: since, initial: 1.5, boundary: exclusive } }
        - http: { base_url: http://h/, load: { table: x }, incremental: { cursor: /n, param: since, initial: 1e3, boundary: exclusive } }
      """)
    #expect(found.count == 3, "\(found)")
    #expect(found.last?.contains("'steps.http-3.http.incremental.boundary'") == true, "\(found)")
    // Numbers with a fraction or an exponent have a value below them; `initial` is kept as written.
    let numbers = try load(
      """
        - http: { base_url: http://h/, load: { table: w }, incremental: { cursor: /n, param: since, initial: 1.5, boundary: exclusive } }
        - http: { base_url: http://h/, load: { table: x }, incremental: { cursor: /n, param: since, initial: 1e3, boundary: exclusive } }
      """)
    #expect(http(numbers, 0)?.incremental?.initial.text == "1.5")
    #expect(http(numbers, 1)?.incremental?.initial.text == "1e3")
    #expect(
      Array(found.prefix(2)) == [
        "job.yaml:5:119: error: 'steps.http-1.http.incremental.boundary' exclusive asks from just below the kept value, and 'initial' (abc) is text, which has no value just below it; use boundary: inclusive if the API answers the records at the value sent (>=), or a cursor that is a number or an RFC 3339 instant",
        "job.yaml:6:122: error: 'steps.http-2.http.incremental.boundary' exclusive asks from just below the kept value, and 'initial' (1e-400) is a number a double cannot hold (beyond about 1.8e308, or below about 4.9e-324), so dray computes no value just below it; use boundary: inclusive if the API answers the records at the value sent (>=), or a cursor that is a number or an RFC 3339 instant",
      ])
  }
}
