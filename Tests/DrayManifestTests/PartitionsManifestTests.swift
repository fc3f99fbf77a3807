import DrayModel
import DrayTestSupport
import Foundation
import Testing

@testable import DrayManifest

/// `partitions:` of `http` and `table_stream` steps, and the placeholders they fill
/// (docs/partitions.md).
@Suite struct PartitionsManifestTests {
  static let head = "version: 1\njob: j\ndatabase: { path: db.sqlite }\nsteps:\n"

  func load(_ steps: String, head: String = Self.head) throws(ManifestError) -> Manifest {
    try ManifestText.load(head + steps, environment: ["API_TOKEN": "tok-Sentinel-4711"])
  }

  func errors(_ steps: String, head: String = Self.head) -> [String] {
    ManifestText.errors(head + steps, environment: ["API_TOKEN": "tok-Sentinel-4711"])
  }

  @Test func aListFillsPathQueryHeadersBodyAndOutput() throws {
    let manifest = try load(
      """
        - id: issues
          partitions:
            list: [{ owner: apple, repo: swift }, { owner: "a b", repo: "x/y" }]
            concurrency: 4
            lease: 2m
          http:
            method: POST
            base_url: https://api.example.com
            path: /repos/{owner}/{repo}/issues
            query: { q: "repo:{repo}", literal: "{{x}}", api_key: "{not-a-placeholder" }
            headers: { X-Owner: "{owner}", Authorization: "Bearer ${API_TOKEN}" }
            body: { json: { filter: { owner: "{owner}" }, tags: ["{repo}", 3] } }
            output: out/{owner}-{repo}-{page}.json
            paginate: { page: {} }
            load: { table: issues, records: /items }
      """)
    let step = manifest.steps[0]
    let partitions = try #require(step.partitions)
    #expect(partitions.concurrency == 4)
    #expect(partitions.lease == .seconds(120))
    #expect(partitions.location.line == 6)
    guard case .list(let list) = partitions.source else {
      Issue.record("not a list: \(partitions.source)")
      return
    }
    #expect(list.map(\.label) == ["owner=apple, repo=swift", "owner=a b, repo=x/y"])
    let http = try #require(step.kind.http)
    let second = try http.filled(with: list[1])
    #expect(second.path == "/repos/a%20b/x%2Fy/issues")
    #expect(second.query.first { $0.name == "q" }?.value == "repo:x/y")
    #expect(second.query.first { $0.name == "literal" }?.value == "{x}")
    // A credential is sent as written, braces and all.
    #expect(second.query.first { $0.name == "api_key" }?.value == "{not-a-placeholder")
    #expect(second.headers.first { $0.name == "X-Owner" }?.value == "a b")
    #expect(
      second.body == .json(.object([("filter", .object([("owner", .string("a b"))])), ("tags", .array([.string("x/y"), .integer(3)]))])))
    #expect(second.output == "out/a b-x%2Fy-{page}.json")
  }

  /// D-nfc: values, mapping keys and listed names are compared byte for byte, as dray sends
  /// them: `é` (U+00E9) and `e` + U+0301 are two partitions (two URLs), two query
  /// parameters, two resources; the same bytes twice are still refused.
  @Test func valuesKeysAndNamesAreComparedByBytesNotByCanonicalEquivalence() throws {
    let manifest = try load(
      """
        - id: accents
          partitions: { list: [{ v: "\\u00e9" }, { v: "e\\u0301" }] }
          http:
            base_url: https://api.example.com
            path: /words/{v}
            query: { "\\u00e9": "1", "e\\u0301": "2" }
      """)
    guard case .list(let list) = manifest.steps[0].partitions?.source else {
      Issue.record("no list")
      return
    }
    #expect(list.map { Array($0["v"]?.unicodeScalars.map(\.value) ?? []) } == [[0xE9], [0x65, 0x301]])
    guard case .http(let http) = manifest.steps[0].kind else {
      Issue.record("not http")
      return
    }
    #expect(http.query.map { Array($0.name.utf8) } == [[0xC3, 0xA9], [0x65, 0xCC, 0x81]])
    for (yaml, expected) in [
      (#"partitions: { list: [{ v: "\u00e9" }, { v: "é" }] }"#, "gives the same values as 'steps.twice.partitions.list[0]' (v=é)"),
      (#"query: { "\u00e9": "1", "é": "2" }"#, "duplicate key 'é'"),
      (#"query: { "e\u0301": "1", "e\u0301": "2" }"#, "duplicate key 'e\u{301}'"),
    ] {
      let errors = errors(
        """
          - id: twice
            \(yaml.hasPrefix("partitions") ? yaml : "partitions: { list: [{ v: a }] }")
            http: { base_url: https://api.example.com, path: '/w/{v}'\(yaml.hasPrefix("query") ? ", " + yaml : "") }
        """)
      #expect(errors.contains { $0.contains(expected) }, "\(yaml): \(errors)")
    }
    let two = errors("  - id: s\n    schemes: { resources: [\"CAF\\u00c9\", \"CAFE\\u0301\"] }\n", head: ManifestText.platformJob + "\n")
    #expect(!two.contains { $0.contains("twice") }, "\(two)")
    let twice = errors("  - id: s\n    schemes: { resources: [\"CAF\\u00c9\", \"CAFÉ\"] }\n", head: ManifestText.platformJob + "\n")
    #expect(twice.contains { $0.contains("names 'CAFÉ' twice") }, "\(twice)")
  }

  @Test func aTableStreamTakesPlaceholdersInItsParams() throws {
    let manifest = try load(
      """
        - id: sales
          partitions: { window: { start: 2024-01-01, end: 2024-04-01, every: 1mo } }
          table_stream:
            resource: SALES
            params: { from: "{window_start}", to: "{window_end}", regions: ["all"], n: 5 }
      """, head: ManifestText.platformJob + "\n")
    let step = manifest.steps[0]
    let partitions = try #require(step.partitions)
    #expect(partitions.concurrency == 1)
    #expect(partitions.lease == .seconds(30))
    let known = try #require(partitions.knownPartitions)
    #expect(known.count == 3)
    let table = try #require(step.kind.tableStream)
    #expect(
      try table.filled(with: known[1]).params
        == .object([
          ("from", .string("2024-02-01")), ("to", .string("2024-03-01")), ("regions", .array([.string("all")])), ("n", .integer(5)),
        ]))
  }

  @Test func rowsKeepTheirQueryAndTakeAnyNamedPlaceholder() throws {
    let manifest = try load(
      """
        - id: repos
          http: { base_url: "https://api.example.com", path: /repos, load: { table: repos } }
        - id: issues
          partitions: { rows: "SELECT name AS repo FROM repos", concurrency: 8 }
          http:
            base_url: https://api.example.com
            path: /repos/{repo}/issues
      """)
    let partitions = try #require(manifest.steps[1].partitions)
    #expect(partitions.source == .rows("SELECT name AS repo FROM repos"))
    #expect(partitions.knownPartitions == nil)
    #expect(partitions.concurrency == 8)
  }

  @Test func durationsTakeDaysAndWeeksEverywhere() throws {
    let manifest = try load(
      """
        - id: a
          retry: { max_interval: 1d, max_elapsed: 2w }
          partitions: { list: [{ r: eu }], lease: 1d }
          http: { base_url: "https://api.example.com", path: "/{r}" }
      """)
    #expect(manifest.steps[0].retry.maxInterval == .seconds(86400))
    #expect(manifest.steps[0].retry.maxElapsed == .seconds(14 * 86400))
    #expect(manifest.steps[0].partitions?.lease == .seconds(86400))
    #expect(
      errors(
        """
          - id: a
            retry: { max_interval: 5w }
            sql: SELECT 1
        """) == ["job.yaml:6:28: error: 'steps.a.retry.max_interval' is too long: 5w; a duration is at most 30 days (30d, 720h)"])
  }

  @Test func stepsThatCannotBePartitionedSaySoWhereTheKeyIs() {
    #expect(
      errors(
        """
          - id: q
            partitions: { list: [{ r: eu }] }
            sql: SELECT 1
          - id: g
            parallel:
              steps:
                - id: inner
                  partitions: { list: [{ r: eu }] }
                  http: { base_url: "https://api.example.com", path: "/{r}" }
        """) == [
          "job.yaml:6:5: error: step 'q' is a sql step, which cannot have 'partitions': only table_stream and http steps run over partitions; remove 'partitions'",
          "job.yaml:12:11: error: step 'inner' is a member of the parallel group 'g', which cannot have 'partitions': a partitioned step runs its partitions side by side itself (partitions.concurrency); move it out of the group",
        ])
  }

  @Test func aPartitionsBlockHasExactlyOneSource() {
    #expect(
      errors(
        """
          - id: a
            partitions: { list: [{ r: eu }], rows: SELECT 1 AS r, concurrency: 65 }
            http: { base_url: "https://api.example.com", path: "/{r}" }
          - id: b
            partitions: { concurrency: 2 }
            http: { base_url: "https://api.example.com", path: "/{r}" }
        """) == [
          "job.yaml:6:38: error: 'steps.a.partitions' takes exactly one source of list, rows, window; this one has list and rows",
          "job.yaml:6:72: error: 'steps.a.partitions.concurrency' must be between 1 and 64, found 65",
          "job.yaml:9:17: error: 'steps.b.partitions' needs one of: list, rows, window",
        ])
  }

  @Test func placeholdersAndValuesMustMeet() {
    #expect(
      errors(
        """
          - id: a
            partitions: { list: [{ region: eu, day: mon }, { region: us, day: tue }] }
            http:
              base_url: https://api.example.com
              path: /sales/{regoin}
              query: { x: "{region" }
          - id: b
            partitions: { window: { start: 2024-01-01, end: 2024-02-01, every: 1w } }
            http:
              base_url: https://api.example.com
              query: { from: "{window_begin}" }
          - id: c
            partitions: { rows: SELECT 1 AS n }
            http: { base_url: "https://api.example.com", path: /all }
          - id: d
            partitions: { list: [{ region: eu }, { other: x }] }
            http: { base_url: "https://api.example.com", path: "/{region}/{other}" }
        """) == [
          // {regoin} is region misspelt: one error says so, not a second that region is unused.
          "job.yaml:6:40: error: 'steps.a.partitions.list' gives 'day', which no placeholder uses: write {day} in the step's path, query, headers, body or output, or remove it",
          "job.yaml:9:13: error: 'steps.a.http.path': placeholder {regoin} is no value of the partitions, which give {region}, {day} ({{ and }} write literal braces); did you mean {region}?",
          "job.yaml:10:19: error: 'steps.a.http.query.x': a '{' that begins no placeholder: write {name} (letters, digits, _) or '{{' for a literal brace (at byte 0 of the value)",
          "job.yaml:12:27: error: 'steps.b.partitions.window' cuts windows that no placeholder uses: write {window_start} and {window_end} in the step's path, query, headers, body or output",
          "job.yaml:15:22: error: 'steps.b.http.query.from': placeholder {window_begin} is no value of the partitions, which give {window_start}, {window_end} ({{ and }} write literal braces)",
          "job.yaml:17:25: error: 'steps.c.partitions.rows' gives each row's columns as placeholders, but the step uses none: write {COLUMN} in the step's path, query, headers, body or output",
          "job.yaml:21:56: error: 'steps.d.http.path': placeholder {region} has no value in partition 2 of 'steps.d.partitions.list' (other=x); give region in every partition",
          "job.yaml:21:56: error: 'steps.d.http.path': placeholder {other} has no value in partition 1 of 'steps.d.partitions.list' (region=eu); give other in every partition",
        ])
  }

  /// D-mask-1: a placeholder written in a credential (a secret query parameter, a secret
  /// header, a secret body field, `auth`) is refused where it is written: it would be sent
  /// as the text `{region}`. The messages keep dray's words: the placeholder, masked before
  /// as the credential's value, reads as written.
  @Test func aPlaceholderInACredentialIsRefusedWhereItIsWritten() {
    let found = errors(
      """
        - id: a
          partitions:
            list: [{region: eu}, {region: us}]
          http:
            base_url: "http://h/"
            path: "echo/{region}"
            query: { token: "{region}", page: "{region}" }
            headers: { Cookie: "sid={region}" }
            body: { json: { user: "u-{region}", password: "pw-{region}-${API_TOKEN}" } }
            auth: { bearer: "{region}" }
            load: { table: t, records: /data }
        - id: w
          partitions:
            window: { start: 2024-01-01, end: 2024-01-03, every: 1d }
          http:
            base_url: "http://h/"
            query: { api_key: "{window_start}", to: "{window_end}" }
            load: { table: w, records: /data }
      """)
    let advice = "a credential is sent as written and takes no placeholder"
    #expect(
      found.contains {
        $0.hasPrefix("job.yaml:11:23: error: 'steps.a.http.query.token': \(advice); {region} would be sent as the text {region}")
      },
      "\(found)")
    #expect(found.contains { $0.contains("'steps.a.http.headers.Cookie': \(advice)") }, "\(found)")
    #expect(found.contains { $0.contains("'steps.a.http.body.json.password': \(advice)") }, "\(found)")
    #expect(found.contains { $0.contains("'steps.a.http.auth.bearer': \(advice)") }, "\(found)")
    #expect(found.contains { $0.contains("'steps.w.http.query.api_key': \(advice); {window_start} would be sent") }, "\(found)")
    // Neither the placeholders nor their names are masked, and no value is printed.
    #expect(!found.joined().contains("***") && !found.joined().contains("Sentinel"), "\(found)")
  }

  /// A placeholder's braces that come from a variable (a password holding `{x}`) are the
  /// credential's own text: no refusal, sent as it is.
  @Test func bracesInACredentialsVariableAreNoPlaceholder() throws {
    let manifest = try ManifestText.load(
      Self.head
        + """
          - id: a
            partitions:
              list: [{region: eu}]
            http:
              base_url: "http://h/"
              path: "echo/{region}"
              query: { token: "${PW}" }
              load: { table: t, records: /data }
        """, environment: ["PW": "p{region}w-Sentinel"])
    #expect(manifest.steps[0].kind.http?.query == [QueryItem("token", "p{region}w-Sentinel")])
    #expect(manifest.redactor.redact("sent p{region}w-Sentinel to echo/{region}") == "sent *** to echo/{region}")
  }

  @Test func partitionedOutputsNameOneFileEach() {
    #expect(
      errors(
        """
          - id: a
            partitions: { list: [{ region: eu }, { region: us }] }
            http: { base_url: "https://api.example.com", path: "/{region}", output: out/a.json }
          - id: b
            partitions: { list: [{ region: eu, kind: x }, { region: eu, kind: y }] }
            http: { base_url: "https://api.example.com", path: "/{region}/{kind}", output: "out/{region}.json" }
          - id: c
            partitions: { list: [{ region: eu }] }
            http: { base_url: "https://{region}.example.com", path: "/{region}" }
          - id: e
            partitions: { list: [{ region: eu }] }
            http: { base_url: "https://api.example.com", path: "/{region}", load: { table: "sales_{region}" } }
          - id: d
            partitions: { list: [{ page: a }, { page: b }] }
            http: { base_url: "https://api.example.com", path: "/{page}", output: "out/{page}.json", paginate: { next: /next } }
        """) == [
          "job.yaml:7:77: error: 'steps.a.http.output' must hold a placeholder of the partitions besides {page}, such as out/a-{region}.json: otherwise every partition writes the same file",
          "job.yaml:10:84: error: 'steps.b.http.output' names one file, 'out/eu.json', for partitions 1 and 2 of 'steps.b.partitions.list': add a placeholder that tells them apart",
          "job.yaml:13:23: error: 'steps.c.http.base_url' is sent as written: placeholders such as {region} are filled in path, query, headers, body and output; move {region} to path",
          "job.yaml:16:84: error: 'steps.e.http.load.table' is the one table every partition loads into, named as written: placeholders such as {region} are not filled there; name the table without it",
          "job.yaml:18:28: error: 'steps.d.partitions.list' gives 'page', which 'steps.d.http.output' uses for the page number; give the value another name",
        ])
  }

  @Test func listsAndWindowsThatCannotBeRead() {
    #expect(
      errors(
        """
          - id: a
            partitions: { list: [] }
            http: { base_url: "https://api.example.com" }
          - id: b
            partitions: { list: [{ 1x: a }, { r: { n: 1 } }, {}, { r: eu }, { r: eu }] }
            http: { base_url: "https://api.example.com", path: "/{r}" }
          - id: c
            partitions: { window: { start: 2024-01-01, end: 2024-01-03, every: 1y } }
            http: { base_url: "https://api.example.com", path: "/{window_start}" }
          - id: d
            partitions: { window: { start: 2024-01-01, end: 2024-01-03, every: 0d } }
            http: { base_url: "https://api.example.com", path: "/{window_start}" }
          - id: e
            partitions: { window: { start: 2024-01-01, end: 2024-01-03, every: 1mo } }
            http: { base_url: "https://api.example.com", path: "/{window_start}" }
          - id: f
            partitions: { window: { start: 2024-01-03, end: 2024-01-01T00:00:00Z, every: 1d } }
            http: { base_url: "https://api.example.com", path: "/{window_start}" }
        """) == [
          "job.yaml:6:25: error: 'steps.a.partitions.list' is empty; list the partitions, such as [{region: eu}, {region: us}], or remove 'partitions'",
          "job.yaml:9:28: error: 'steps.b.partitions.list[0]': '1x' cannot name a placeholder; a name is a letter or '_', then letters, digits or '_'",
          "job.yaml:9:42: error: 'steps.b.partitions.list[1].r' must be a value, found a mapping",
          "job.yaml:9:54: error: 'steps.b.partitions.list[2]' must be a mapping of placeholder names to values, such as {region: eu}, found an empty mapping",
          "job.yaml:9:69: error: 'steps.b.partitions.list[4]' gives the same values as 'steps.b.partitions.list[3]' (r=eu); each partition is run once: remove one",
          "job.yaml:12:72: error: 'steps.c.partitions.window.every' is not a window length: '1y'; write a whole number and d (days), w (weeks) or mo (calendar months), such as 7d, 2w or 1mo",
          "job.yaml:15:72: error: 'steps.d.partitions.window': 'every' is zero, which cuts no window; give a length such as 1d, 7d, 2w or 1mo",
          "job.yaml:18:72: error: 'steps.e.partitions.window': 'every' (1mo) is longer than the range from 2024-01-01 to 2024-01-03; shorten it, or move 'end' to 2024-02-01 or later",
          "job.yaml:21:53: error: 'steps.f.partitions.window': 'end' is an RFC 3339 instant and 'start' a date; give both as dates (2024-01-01) or both as instants (2024-01-01T00:00:00Z)",
        ])
  }

  @Test func templatesNameThePartitionsOfATableStream() {
    let steps = """
        - id: sales
          partitions: { list: [{ region: EU }, { region: US }] }
          table_stream: { resource: SALES, params: { region: "{region}" } }
        - id: by-row
          partitions: { rows: SELECT code FROM countries }
          table_stream: { resource: FRUITS, params: { country: "{code}" } }
        - sql: |
            SELECT * FROM {{ table "SALES" "T" '{"region":"EU"}' }}, {{ table "SALES" "T" '{"region":"XX"}' }},
              {{ table "FRUITS" "T" '{"country":"any"}' }}
      """
    #expect(
      errors(steps, head: ManifestText.platformJob + "\n") == [
        #"job.yaml:14:64: error: step 'sql-3': {{ table "SALES" "T" '{"region":"XX"}' }} names parameters {"region":"XX"} that no table_stream step of SALES loads (loaded: {"region":"EU"}, {"region":"US"})"#
      ])
  }

  @Test func rowsQueriesAreCheckedLikeOtherSQL() {
    #expect(
      errors(
        """
          - id: a
            partitions: { rows: 'SELECT id FROM {{ table "NOPE" "T" }}' }
            http: { base_url: "https://api.example.com", path: "/{id}" }
        """
      ).first?.contains("step 'a': {{ table \"NOPE\" \"T\" }} names a resource that no table_stream step loads") == true)
  }
}

extension PartitionsManifestTests {
  @Test func theKitchenSinkManifestPartitionsByEverySource() throws {
    let folder = Repository.root + "/Tests/DrayManifestTests/Fixtures/valid"
    let manifest = try ManifestLoader(environment: ["FMP_USER": "reader", "API_TOKEN": "tok-everything-9"]).load(
      path: folder + "/everything.yaml")
    let partitioned = manifest.steps.filter { $0.partitions != nil }
    #expect(partitioned.map(\.id) == ["regions", "repo-issues", "weekly"])
    #expect(partitioned.map { $0.partitions?.source.kind } == [.list, .rows, .window])
    #expect(partitioned.map { $0.partitions?.concurrency } == [2, 4, 1])
    #expect(partitioned.map { $0.partitions?.lease } == [.seconds(60), .seconds(30), .seconds(120)])
    #expect(partitioned.map { $0.partitions?.knownPartitions?.count } == [2, nil, 5])
  }
}

extension PartitionsManifestTests {
  func schemaProblems(_ steps: String) throws -> [String] {
    let root = try #require(try YAMLParser(file: "t.yaml").parse("version: 1\njob: j\nsteps:\n" + steps))
    return JSONSchemaChecker(root: ManifestSchema.jsonSchema).problems(JSONValue(yaml: root))
  }

  @Test func theJSONSchemaTakesPartitionsWhereTheValidatorDoes() throws {
    let fine = """
        - partitions: { list: [{ r: eu }], concurrency: 4, lease: 1d }
          http: { base_url: "https://h", path: "/{r}" }
        - partitions: { window: { start: 2024-01-01, end: 2024-02-01, every: 2w } }
          table_stream: { resource: R, params: { from: "{window_start}" } }
        - partitions: { rows: SELECT 1 AS n, lease: "${LEASE}" }
          http: { base_url: "https://h", path: "/{n}" }
      """
    #expect(try schemaProblems(fine) == [])
    let refused: [(String, String)] = [
      ("  - { partitions: { list: [{ r: eu }] }, sql: SELECT 1 }\n", "$.steps[0]: matches none of anyOf"),
      (
        "  - parallel: { steps: [{ partitions: { list: [{ r: eu }] }, http: { base_url: \"https://h\" } }] }\n",
        "$.steps[0].parallel.steps[0]: unexpected key partitions"
      ),
      ("  - { partitions: { list: [], rows: x }, http: { base_url: \"https://h\" } }\n", "$.steps[0].partitions: matches 2 of oneOf"),
      (
        "  - { partitions: { window: { start: a, end: b, every: 1y } }, http: { base_url: \"https://h\" } }\n",
        "$.steps[0].partitions.window.every"
      ),
      ("  - { partitions: { list: [], concurrency: 65 }, http: { base_url: \"https://h\" } }\n", "$.steps[0].partitions.concurrency"),
    ]
    for (steps, problem) in refused {
      let problems = try schemaProblems(steps)
      #expect(problems.contains { $0.hasPrefix(problem) }, "\(steps): \(problems)")
    }
  }
}
