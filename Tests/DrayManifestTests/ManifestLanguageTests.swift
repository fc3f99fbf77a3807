import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// What the language accepts, and how it reads it.
@Suite struct ManifestLanguageTests {
  static let validFolder = Repository.root + "/Tests/DrayManifestTests/Fixtures/valid"

  func load(_ text: String, environment: [String: String] = [:]) throws(ManifestError) -> Manifest {
    try ManifestText.load(text, environment: environment)
  }

  func errors(_ text: String, environment: [String: String] = [:]) -> [String] {
    ManifestText.errors(text, environment: environment)
  }

  @Test func everyKeyIsReadIntoTheModel() throws {
    let environment = ["FMP_USER": "reader", "API_TOKEN": "tok-everything-9"]
    let m = try ManifestLoader(environment: environment).load(path: Self.validFolder + "/everything.yaml")
    #expect(m.version == 1)
    #expect(m.job == "everything.v1")
    #expect(m.description == "Every key of the manifest language, each set away from its default.")
    let p = try #require(m.platform)
    #expect(p.host == "https://fmp.example.com/")
    #expect(p.apiVersion == "v2")
    #expect(p.environment == "Prod")
    #expect(p.project == "Reference")
    #expect(p.application == "ios-app")
    #expect(p.device == "nightly-runner")
    #expect(p.tls == TLSSettings(verify: false, caFile: "certs/ca.pem"))
    #expect(p.timeouts == Timeouts(connect: .seconds(3), request: .seconds(300), idle: .seconds(45)))
    #expect(
      p.headers == [
        HTTPHeader("X-Trace", "on"), HTTPHeader("Authorization", "Bearer tok-everything-9"),
        HTTPHeader("X-Client-Key", "tok-from-file-4711"),
      ])
    // A secret by its name (a `key` after `client`, `CredentialName`), as by its value.
    #expect(p.headers.map(\.isSecret) == [false, true, true])
    #expect(!p.compression)
    #expect(m.auth == Credentials(username: "reader", password: "fmp-password-from-file"))
    #expect(m.database == DatabaseSettings(path: "data/everything.sqlite"))
    #expect(m.download == DownloadSettings(path: "cache/downloads", resume: false))
    #expect(
      m.retry
        == RetryPolicy(
          count: 7, interval: .seconds(2), backoff: .fixed, maxInterval: .seconds(60), jitter: true, maxElapsed: .seconds(600),
          maxRetryAfter: .seconds(1200), waitBudget: .seconds(7200)))
    #expect(m.state == StateSettings(path: "state"))
    #expect(
      m.report
        == ReportSettings(
          path: "out/{job}-{run_id}.json", formats: [.json, .junit, .prometheus],
          openLineage: LineageSettings(destination: .url("http://marquez:5000/api/v1/lineage"), namespace: "etl"),
          otlp: OTLPSettings(endpoint: "http://collector:4318", headers: [HTTPHeader("X-Tenant", "acme", secret: true)])))
    // Every report.otlp header value is a secret.
    #expect(m.redactor.redact("tenant acme") == "tenant ***")
    #expect(
      m.steps.map(\.id) == [
        "schemes", "fruits", "export", "ping", "upload", "all-sales", "clean", "check", "orders", "catalog", "partners", "ledger",
        "pages", "charges", "graph", "crm", "tickets", "weather", "crm-deals", "crm-notes", "regions", "repo-issues", "weekly",
      ])
    #expect(m.allSteps.map(\.id).contains("sales-us"))
    #expect(m.steps[0].description == "Fetch the schemes of the two resources.")

    // Step-level overrides: keys given replace the job's, the others are kept; the merge key
    // brings count and interval from the anchor.
    let fruits = m.steps[1]
    #expect(
      fruits.retry
        == RetryPolicy(
          count: 2, interval: .milliseconds(250), backoff: .exponential, maxInterval: .seconds(5), jitter: false, maxElapsed: .seconds(60),
          maxRetryAfter: .seconds(120), waitBudget: .seconds(7200)))
    #expect(fruits.timeouts == Timeouts(connect: .seconds(1), request: .seconds(60), idle: .seconds(10)))
    #expect(m.steps[2].retry == m.retry)
    #expect(m.steps[2].timeouts == p.timeouts)
    let t = try #require(fruits.kind.tableStream)
    let table = try #require(m.steps[2].kind.table)
    let r = try #require(m.steps[3].kind.request)
    let f = try #require(m.steps[4].kind.files)
    let group = try #require(m.steps[5].kind.parallel)
    let q = try #require(m.steps[7].kind.query)
    #expect(
      t
        == TableStreamStep(
          resource: "FRUITS", delta: true, transaction: false, writes: false,
          expect: [
            Expectation(column: "rows", min: .integer(1), max: .integer(100000)), Expectation(column: "price", min: .integer(0)),
            Expectation(column: "in_season", equals: .integer(1)),
          ]))
    #expect(
      table
        == TableStep(
          resource: "FRUITS", params: .object([("season", .string("summer"))]), output: "out/fruits.ndjson", format: .ndjson,
          transaction: false, writes: false))
    #expect(
      r
        == RequestStep(
          resource: "STATUS", params: .object([("verbose", .bool(true))]), output: "out/status.json", transaction: false, writes: true))
    #expect(f == FilesStep(connection: "local_storage", action: .put, path: "reports/fruits.csv", local: "out/fruits.csv", missingOK: true))
    #expect(group.max == 2)
    #expect(group.steps.map(\.id) == ["sales-eu", "sales-us"])
    #expect(q.output == "out/check.csv")
    #expect(q.format == .csv)
    #expect(
      q.expect == [Expectation(column: "n", min: 1, max: 1000), Expectation(column: "state", equals: .string("ok"))])

    // Secrets: auth, ${file:...}, variables listed in `secrets`, credential headers; a user
    // name is none.
    let masked = m.redactor.redact("reader fmp-password-from-file tok-everything-9 tok-from-file-4711")
    #expect(masked == "reader *** *** ***")
  }

  @Test func theProductBriefsDraftManifestValidates() throws {
    let m = try ManifestLoader(environment: ["FMP_USER": "demo", "FMP_PASSWORD": "pw-secret-1"]).load(
      path: Self.validFolder + "/product-brief.yaml")
    #expect(m.steps.map(\.id) == ["schemes-1", "countries", "fix-up", "check"])
    #expect(m.report.path == "reports/{job}-{run_id}.json")
    #expect(m.retry == RetryPolicy(count: 10, interval: .seconds(1), backoff: .exponential, maxInterval: .seconds(30)))
  }

  @Test func yamlCoreSchemaKeepsTextWhereAStringIsExpectedAndQuotedScalarsAreStrings() throws {
    let m = try load(
      """
      version: 1
      job: j
      description: yes
      platform: { host: "http://h/", environment: off, project: 012, device: 1e3, application: 12:30 }
      auth: { username: "on", password: 07550755 }
      database: { path: ~/x }
      steps:
        - table_stream: { resource: R, params: { a: no, b: "1", c: 0x1F, d: 1.50, e: null, f: 99999999999999999999 } }
      """)
    #expect(m.description == "yes")
    #expect(m.platform?.environment == "off")
    #expect(m.platform?.project == "012")
    #expect(m.platform?.device == "1e3")
    #expect(m.platform?.application == "12:30")
    #expect(m.auth == Credentials(username: "on", password: "07550755"))
    let t = try #require(m.steps[0].kind.tableStream)
    #expect(t.params.json == #"{"a":"no","b":"1","c":31,"d":1.50,"e":null,"f":99999999999999999999}"#)
  }

  @Test func quotedOrTaggedNumbersAreNotIntegers() {
    let found = errors(
      """
      version: 1
      job: j
      retry: { count: '3', max_interval: !!str 30 }
      steps:
        - sql: SELECT 1
      database: { path: x.sqlite }
      """)
    #expect(
      found == [
        "job.yaml:3:17: error: 'retry.count' must be an integer, found a string ('3')",
        "job.yaml:3:36: error: 'retry.max_interval' needs a unit: write '30s' for 30 seconds (units: ms, s, m, h, d, w)",
      ])
  }

  @Test func aByteOrderMarkAndALeadingDocumentMarkerAreFine() throws {
    let m = try load("\u{FEFF}---\nversion: 1\njob: j\ndatabase: { path: x }\nsteps:\n  - sql: SELECT 1\n...\n")
    #expect(m.job == "j")
  }

  @Test func crlfLineEndsAreNormalisedInsideBlockScalars() throws {
    let text =
      "version: 1\r\njob: j\r\ndatabase: { path: x }\r\nsteps:\r\n  - sql: |\r\n      DELETE FROM a;\r\n      DELETE FROM b;\r\n  - sql: >\r\n      SELECT\r\n      1\r\n"
    let m = try load(text)
    let first = try #require(m.steps[0].kind.sql)
    let second = try #require(m.steps[1].kind.sql)
    #expect(first.sql == "DELETE FROM a;\nDELETE FROM b;\n")
    #expect(second.sql == "SELECT 1\n")
  }

  @Test func anchorsAliasesAndMergeKeysAreSupportedFully() throws {
    let m = try load(
      """
      version: 1
      job: j
      x-base: &base { count: 1, interval: 2s, backoff: fixed }
      x-slow: &slow { interval: 10s, max_interval: 1m }
      database: { path: x }
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: u, password: pw1-secret }
      retry:
        <<: [*base, *slow]
        count: 9
      steps:
        - id: a
          table_stream: { resource: R, params: &params { region: EU, year: 2024 } }
        - id: b
          table_stream: { resource: S, params: *params }
          retry: *base
      """)
    // Keys written in the mapping win, then the earlier merged mapping.
    #expect(m.retry == RetryPolicy(count: 9, interval: .seconds(2), backoff: .fixed, maxInterval: .seconds(60)))
    // A step's retry overrides the keys it gives; max_interval stays the job's.
    #expect(m.steps[1].retry == RetryPolicy(count: 1, interval: .seconds(2), backoff: .fixed, maxInterval: .seconds(60)))
    let a = try #require(m.steps[0].kind.tableStream)
    let b = try #require(m.steps[1].kind.tableStream)
    #expect(a.params == b.params)
    #expect(b.params.json == #"{"region":"EU","year":2024}"#)
  }

  @Test func interpolationHappensAfterParsingSoAnyPasswordSurvivesExactly() throws {
    let passwords = ["p#ss: $x 'q\" w", "a # not a comment", "$HOME ${NOT_EXPANDED}", "--- \n| > & * ! % @ `", "  spaced  "]
    for password in passwords {
      let m = try load(
        """
        version: 1
        job: j
        platform: { host: "http://h/", environment: e, project: p }
        auth: { username: u, password: "${FMP_PASSWORD}" }
        steps:
          - request: { resource: R }
        """, environment: ["FMP_PASSWORD": password])
      #expect(m.auth?.password == password)
    }
  }

  @Test func defaultsNestAndDollarDollarIsALiteralDollar() throws {
    let m = try load(
      """
      version: 1
      job: j
      description: "${A:-${B:-fallback}} costs $$5, not ${C:-}"
      database: { path: "${DATA:-data}/x.sqlite" }
      steps:
        - sql: SELECT '$$1', 'a$b'
      """, environment: ["B": "from-b", "C": "set"])
    #expect(m.description == "from-b costs $5, not set")
    #expect(m.database?.path == "data/x.sqlite")
    let s = try #require(m.steps[0].kind.sql)
    #expect(s.sql == "SELECT '$1', 'a$b'")
  }

  @Test func anEmptyVariableTakesTheDefaultButIsAValueWithoutOne() throws {
    let m = try load(
      "version: 1\njob: j\ndescription: \"[${EMPTY}] [${EMPTY:-d}]\"\ndatabase: { path: x }\nsteps: [{sql: SELECT 1}]\n",
      environment: ["EMPTY": ""])
    #expect(m.description == "[] [d]")
  }

  @Test func valuesOfListedSecretsAndFilesAreMasked() throws {
    let folder = TemporaryDirectory()
    try folder.write("token.txt", "file-secret-77\n")
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: j
      secrets: [API_TOKEN]
      platform:
        host: "http://h/"
        environment: e
        project: p
        headers: { X-Token: "${API_TOKEN}", X-Other: "${file:token.txt}", Cookie: "session=c00kie-value" }
      auth: { username: u1, password: pw-secret-1 }
      steps:
        - request: { resource: R }
      """)
    let m = try ManifestLoader(environment: ["API_TOKEN": "env-secret-42"]).load(path: path)
    #expect(m.platform?.headers.map(\.value) == ["env-secret-42", "file-secret-77", "session=c00kie-value"])
    #expect(m.redactor.redact("env-secret-42 file-secret-77 session=c00kie-value") == "*** *** ***")
  }

  @Test func aManifestWithAFiveMegabyteSQLBlockLoads() throws {
    var sql = ""
    let line = "INSERT INTO t(a, b) VALUES (1, 'a value long enough to fill a line of SQL text');\n"
    while sql.utf8.count < 5 * 1024 * 1024 { sql += line }
    let indented = sql.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n")
    let text = "version: 1\njob: big\ndatabase: { path: x }\nsteps:\n  - sql: |\n" + indented + "\n"
    let m = try load(text)
    let s = try #require(m.steps[0].kind.sql)
    #expect(s.sql == sql)
  }

  @Test func aMappingKeyOverTheImplicitLimitLoadsWhenWrittenAsAnExplicitKey() throws {
    let key = String(repeating: "k", count: 1500)
    let m = try load(
      """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: u, password: pw-secret-1 }
      database: { path: x }
      steps:
        - table_stream:
            resource: R
            params:
              ? \(key)
              : value
      """)
    let t = try #require(m.steps[0].kind.tableStream)
    #expect(t.params.json == "{\"\(key)\":\"value\"}")
    // Written as an implicit key it is refused, saying why.
    let found = errors("version: 1\njob: j\nsteps:\n  - sql: x\nreport:\n  \(key): 1\n")
    #expect(
      found == [
        "job.yaml:6:3: error: a mapping key is longer than 1024 characters, the most YAML allows for an implicit key; "
          + "shorten it, or write it as an explicit key (`? key` on its own line, then `: value`)"
      ])
  }

  @Test func aBillionLaughsDocumentFailsFast() {
    var text = "version: 1\njob: j\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    for i in 1...12 { text += "a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 10).joined(separator: ", ") + "]\n" }
    // 10^13 nodes: the refusal comes before any expansion, or the test would never end.
    let found = errors(text)
    #expect(found.count == 1)
    #expect(found.first?.hasSuffix("error: the document expands to more than 1000000 nodes through aliases; refusing to expand it") == true)
  }

  @Test func templatesInsideAParallelGroupAndWithParametersResolve() throws {
    let manifest = try load(
      """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: u, password: pw-secret-1 }
      database: { path: x }
      steps:
        - parallel:
            steps:
              - table_stream: { resource: SALES, params: { year: 2024, region: EU } }
        - sql: |
            SELECT * FROM {{ table "SALES" "output_table" '{"region": "EU", "year": 2024}' }}
      """)
    #expect(manifest.allSteps.map(\.id) == ["parallel-1", "parallel-1.table_stream-1", "sql-2"])
    let group = try #require(manifest.steps.first?.kind.parallel)
    let stream = try #require(group.steps.first?.kind.tableStream)
    #expect(stream.resource == "SALES")
    #expect(stream.params.canonicalJSON == #"{"region":"EU","year":2024}"#)
    // The template names the same parameters in another order: the load it reads is that one.
    let sql = try #require(manifest.steps.last?.kind.sql?.sql)
    let reference = try #require(SQLTemplate(parsing: sql).references.first)
    #expect(reference.resource == "SALES")
    #expect(reference.table == "output_table")
    #expect(reference.paramsJSON == #"{"region": "EU", "year": 2024}"#)
  }
}
