import DrayManifest
import DrayModel
import DrayTestSupport
import Testing

@Suite struct ManifestLoaderTests {
  let environment = ["FMP_USER": "demo", "FMP_PASSWORD": "p#ss: $x 'q\" w"]

  func load(_ text: String, environment: [String: String]? = nil) throws(ManifestError) -> Manifest {
    try ManifestText.load(text, environment: environment ?? self.environment)
  }

  func errors(_ text: String, environment: [String: String]? = nil) -> [String] {
    ManifestText.errors(text, environment: environment ?? self.environment)
  }

  @Test func loadsTheISOReferenceJob() throws {
    let manifest = try ManifestLoader(environment: environment).load(path: Repository.root + "/jobs/iso-reference.yaml")
    #expect(manifest.job == "iso-reference")
    #expect(manifest.platform?.host == "http://127.0.0.1:8765/")
    #expect(manifest.platform?.environment == "DocumentationExampleEnv")
    #expect(manifest.auth == Credentials(username: "demo", password: "p#ss: $x 'q\" w"))
    #expect(manifest.steps.map(\.id) == ["schemes", "countries", "currencies", "languages", "subdivisions", "drop-unnamed"])
    #expect(manifest.directory == Repository.root + "/jobs")
    #expect(manifest.resolve(manifest.database!.path!) == Repository.root + "/jobs/data/iso.sqlite")
    let step = try #require(manifest.steps[1].kind.tableStream)
    #expect(step.resource == "COUNTRIES")
    #expect(manifest.steps[1].retry == RetryPolicy(count: 5, interval: .seconds(1), backoff: .exponential, maxInterval: .seconds(30)))
  }

  @Test func secretsFromAuthAreRegisteredForMasking() throws {
    let manifest = try load(
      """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      steps:
        - request: { resource: R }
      """)
    // A user name is no secret unless `secrets` lists it.
    #expect(manifest.redactor.redact("user demo pw p#ss: $x 'q\" w") == "user demo pw ***")
  }

  @Test func secretsListsNamesAndValuesAndAUserNameIsMaskedOnlyWhenListed() throws {
    let text = """
      version: 1
      job: contest
      secrets: [API_KEY, "${FMP_USER}", "k-${SIGNING}", "${file:keys/missing.txt}"]
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      steps:
        - id: latest-keys
          request: { resource: R }
      """
    let environment = ["FMP_USER": "operator-7", "FMP_PASSWORD": "Sentinel-Pw-1", "API_KEY": "api-key-12", "SIGNING": "sig-value"]
    // Where credentials may be missing (`dray plan`), a listed file that cannot be read is too.
    var loader = ManifestLoader(environment: environment)
    loader.secretsMayBeMissing = true
    let manifest = try loader.load(text: text, path: "job.yaml", directory: "/jobs")
    #expect(manifest.unresolvedSecrets == ["secrets"])
    #expect(
      manifest.redactor.redact("operator-7 api-key-12 k-sig-value Sentinel-Pw-1 job contest step latest-keys")
        == "*** *** *** *** job contest step latest-keys")
    // Without the list, the user name is shown as it is.
    let plain = try load(
      text.replacing(#"secrets: [API_KEY, "${FMP_USER}", "k-${SIGNING}", "${file:keys/missing.txt}"]"#, with: ""), environment: environment)
    #expect(plain.redactor.redact("user operator-7") == "user operator-7")
    // `dray run` needs every listed value.
    #expect(
      errors(text, environment: environment) == [
        "job.yaml:3:51: error: 'secrets': cannot read file 'keys/missing.txt' named by ${file:keys/missing.txt}; check that it exists and is readable"
      ])
  }

  /// A short value listed under `secrets:` (the example apps' user `test`) and a short
  /// password are accepted, and masked where they stand as whole words: the job and step
  /// names holding the user name stay whole.
  @Test func aShortListedValueIsAcceptedAndMaskedAsAWholeWord() throws {
    let text = """
      version: 1
      job: contest
      secrets: [FMP_USER]
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      steps:
        - id: latest-fruits
          request: { resource: R }
      """
    let manifest = try load(text, environment: ["FMP_USER": "test", "FMP_PASSWORD": "test123"])
    #expect(
      manifest.redactor.redact("job contest step latest-fruits: user test; username=test&password=test123; attest test1234")
        == "job contest step latest-fruits: user ***; username=***&password=***; attest test1234")
  }

  @Test func yamlCoreSchemaKeepsTextWhereAStringIsExpected() throws {
    let manifest = try load(
      """
      version: 1
      job: j
      description: no
      platform: { host: "http://h/", environment: on, project: 0755, device: 12:30 }
      auth: { username: yes, password: 12345e10 }
      steps:
        - request: { resource: R }
      """)
    #expect(manifest.description == "no")
    #expect(manifest.platform?.environment == "on")
    #expect(manifest.platform?.project == "0755")
    #expect(manifest.platform?.device == "12:30")
    #expect(manifest.auth == Credentials(username: "yes", password: "12345e10"))
  }

  @Test func interpolationDefaultsAndLiteralDollar() throws {
    let manifest = try load(
      """
      version: 1
      job: j
      database: { path: "${DATA_DIR:-data}/x.sqlite" }
      retry: { count: "${RETRIES:-7}" }
      steps:
        - sql: "SELECT '$$5', 'a$b'"
      """, environment: [:])
    #expect(manifest.database?.path == "data/x.sqlite")
    let sql = try #require(manifest.steps[0].kind.sql)
    #expect(sql.sql == "SELECT '$5', 'a$b'")
    // A value from ${...} resolves by its text, quoted or not.
    #expect(manifest.retry.count == 7)
  }

  @Test func reportsEveryProblemWithItsPosition() {
    let found = errors(
      """
      version: 1
      job: j
      platfrom: {}
      steps:
        - tabel_stream: { resource: A }
        - sql: "SELECT 1"
          retry: { count: ten, interval: 5 }
      """)
    #expect(
      found == [
        "job.yaml:3:1: error: unknown key 'platfrom' at the top level; did you mean 'platform'?",
        "job.yaml:5:5: error: unknown key 'tabel_stream' in step 1; did you mean 'table_stream'?",
        "job.yaml:6:5: error: step 'sql-2' (sql) uses the database; add a 'database' block with a 'path' (SQLite) or a 'url' (PostgreSQL)",
        "job.yaml:7:21: error: 'steps.sql-2.retry.count' must be an integer, found a string ('ten')",
        "job.yaml:7:36: error: 'steps.sql-2.retry.interval' needs a unit: write '5s' for 5 seconds (units: ms, s, m, h, d, w)",
      ])
  }

  @Test func missingVariableIsNamedWithoutAValue() {
    let found = errors(
      """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: "${NOBODY_SET_THIS}", password: x-secret-1 }
      steps:
        - request: { resource: R }
      """, environment: [:])
    #expect(
      found == [
        "job.yaml:4:19: error: 'auth.username': environment variable NOBODY_SET_THIS is not set; set it, or give a default with ${NOBODY_SET_THIS:-default}"
      ])
  }

  @Test func syntaxErrorIsPositioned() {
    let found = errors("version: 1\njob: j\nsteps:\n  - sql: [1\n")
    #expect(
      found == [
        "job.yaml:5:1: error: expected ',' or ']' in the [ ] list opened at line 4, column 10; "
          + "inside { } and [ ], quote a value that holds '{', '}', '[', ']' or ','"
      ])
  }

  @Test func renderedErrorQuotesTheLineWithACaret() {
    do {
      _ = try load("version: 1\njob: j\nstepz: []\n")
      Issue.record("expected an error")
    } catch {
      #expect(
        error.description == """
          job.yaml:1:1: error: missing required key 'steps' at the top level
          version: 1
          ^
          job.yaml:3:1: error: unknown key 'stepz' at the top level; did you mean 'steps'?
          stepz: []
          ^
          """)
    }
  }
}
