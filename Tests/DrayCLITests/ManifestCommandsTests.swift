import DrayTestSupport
import Foundation
import Testing

/// `dray validate`, `dray plan` and `dray schema`, run as the built binary.
@Suite struct ManifestCommandsTests {
  /// The job's secrets, and its user name (no secret: the plan shows it).
  static let secrets = ["FMP_USER": "plan-user", "FMP_PASSWORD": "Sentinel-Pw-5521", "API_TOKEN": "Sentinel-Token-7730"]

  static let planJob = """
    version: 1
    job: plan-test
    description: Fruits for the plan tests.
    platform:
      host: http://127.0.0.1:9
      environment: Env
      project: Proj
      headers: { Authorization: "Bearer ${API_TOKEN}", X-Trace: on }
    auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
    database: { path: data/db.sqlite }
    retry: { count: 2, interval: 500ms }
    steps:
      - id: fruits
        table_stream: { resource: FRUITS, params: { region: EU } }
        timeouts: { idle: 5s }
      - id: clean
        sql: DELETE FROM {{ table "FRUITS" "output_table" '{"region":"EU"}' }} WHERE price IS NULL
    """

  /// A job without the platform whose second step fails, to leave an unfinished run.
  static let failingJob = """
    version: 1
    job: resume-test
    database: { path: data/db.sqlite }
    steps:
      - id: create
        sql: CREATE TABLE IF NOT EXISTS t(a)
      - id: broken
        sql: SELECT * FROM no_such_table
      - id: after
        sql: SELECT 1
    """

  /// A warning (here `load.extra`, the old spelling) is one line on standard error, with
  /// where it is written; the manifest stays valid.
  @Test func validatePrintsAWarningAndExitsZero() throws {
    let folder = TemporaryDirectory()
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: warned
      database: { path: data/db.sqlite }
      steps:
        - http: { base_url: http://h/, load: { table: t, columns: { id: INTEGER }, extra: refuse } }
      """)
    let result = try Command.dray(["validate", job])
    #expect(result.status == 0)
    #expect(result.stdout == "\(job): ok (job warned, 1 step)\n")
    #expect(
      result.stderr
        == "\(job):5:85: warning: 'steps.http-1.http.load.extra' is deprecated: write 'steps.http-1.http.load.contract: { new_columns: freeze }' "
        + "for extra: refuse, and nothing for extra: ignore (the default with columns)\n")
  }

  @Test func validateChecksEveryFileAndExitsTwoWhenAnyIsInvalid() throws {
    let folder = TemporaryDirectory()
    let good = try folder.write("good.yaml", Self.failingJob)
    let bad = try folder.write("bad.yaml", "version: 1\njob: bad\nsteps:\n  - tabel_stream: { resource: A }\n")
    let result = try Command.dray(["validate", good, bad], environment: Self.secrets)
    #expect(result.status == 2)
    #expect(result.stdout == "\(good): ok (job resume-test, 3 steps)\n")
    #expect(
      result.stderr == """
        \(bad):4:5: error: unknown key 'tabel_stream' in step 1; did you mean 'table_stream'?
          - tabel_stream: { resource: A }
            ^
        \(bad): 1 error; nothing was run

        """)
    let missing = try Command.dray(["validate", folder.path + "/nowhere.yaml", folder.path])
    #expect(missing.status == 2)
    #expect(
      missing.stderr == """
        \(folder.path)/nowhere.yaml:1:1: error: cannot open manifest: no such file
        \(folder.path)/nowhere.yaml: 1 error; nothing was run
        \(folder.path):1:1: error: cannot open manifest: it is a folder; name the manifest file
        \(folder.path): 1 error; nothing was run

        """)
    let both = try Command.dray(["validate", good, good])
    #expect(both.status == 0)
    let one = try folder.write("one.yaml", "version: 1\njob: one\nsteps:\n  - sql: SELECT 1\ndatabase: { path: db.sqlite }\n")
    #expect(try Command.dray(["validate", one]).stdout == "\(one): ok (job one, 1 step)\n")
    #expect(try Command.dray(["validate"]).status == 2)
  }

  /// The waits `dray plan` lists stop where the run's `wait_budget` would end the call.
  @Test(arguments: [
    ("interval: 1s, jitter: false, wait_budget: 5s", "(waits 1s, 2s; the 3rd wait (4s) would pass wait_budget 5s and end the call)"),
    ("interval: 1s, jitter: false, wait_budget: 1h", "(waits 1s, 2s, 4s, 8s, 16s)"),
    (
      "interval: 1s, jitter: true, wait_budget: 5s",
      "(waits up to 1s, 2s, 4s, 8s, 16s; fewer retries if the waits add up to more than wait_budget 5s)"
    ),
    ("interval: 10s, jitter: false, wait_budget: 5s", "(no retry; the 1st wait (10s) would pass wait_budget 5s and end the call)"),
  ])
  func planShowsWhereTheWaitBudgetEndsTheRetries(retry: String, waits: String) throws {
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: budget
      platform: { host: "http://127.0.0.1:9/", environment: Env, project: Proj }
      auth: { username: demo, password: demo-password }
      database: { path: db.sqlite }
      retry: { count: 5, backoff: exponential, \(retry) }
      steps:
        - table_stream: { resource: FRUITS }

      """)
    let result = try Command.dray(["plan", path])
    #expect(result.status == 0, "\(result.output)")
    let line = try #require(result.stdout.split(separator: "\n").first { $0.contains(" retry ") })
    #expect(line.hasSuffix(waits), "\(line)")
  }

  @Test func planShowsTheResolvedJobWithSecretsMasked() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write("job.yaml", Self.planJob)
    let result = try Command.dray(["plan", path], environment: Self.secrets)
    #expect(result.status == 0, "\(result.output)")
    let dir = folder.path
    #expect(
      result.stdout == """
        job plan-test: Fruits for the plan tests.
          manifest   \(path) (version 1)
          platform   http://127.0.0.1:9/api/v1/ (environment Env, project Proj, device dray-cli)
          tls        verify certificates
          headers    Authorization: ***, X-Trace: on
          auth       user plan-user, password ***
          database   \(dir)/data/db.sqlite (the folder \(dir)/data does not exist: a run creates it)
          downloads  \(dir)/.dray/downloads, resumed when broken
          journal    \(dir)/data/db.sqlite
          report     \(dir)/.dray/reports/plan-test-{run_id}.json (json)
          resume     no unfinished run to continue; a run starts afresh

        steps: 2

          1. fruits (table_stream): run
             resource     FRUITS
             params       {"region":"EU"}
             delta        false
             transaction  true
             tables       FRUITS__output_table__b655ebc6
             retry        count 2, interval 500ms, backoff exponential, max_interval 30s, jitter true, max_retry_after 15m, wait_budget 30m (waits up to 500ms, 1s)
             timeouts     connect 10s, request 1h, idle 5s

          2. clean (sql): run
             sql     DELETE FROM FRUITS__output_table__b655ebc6 WHERE price IS NULL
             tables  FRUITS__output_table__b655ebc6
             retry   none (no network calls)

        """)
    for secret in Self.secrets.filter({ $0.key != "FMP_USER" }).values { #expect(!result.output.contains(secret)) }
    // A plan touches nothing: no database, no state folder.
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["job.yaml"])
  }

  /// D-secret-5: one rule for credential names (`CredentialName`) in an `http` step's
  /// query and body as in a login's body: every value below is masked in `plan` and
  /// `plan --json`, though none comes from a listed secret; data names are shown.
  @Test func planMasksEveryValueNamedAsACredential() throws {
    let folder = TemporaryDirectory()
    let names = [
      "access_key", "api_token", "X-Amz-Signature", "pwd", "auth_token", "private_token", "passwd", "client_secret_v2", "pageToken",
    ]
    let query = names.enumerated().map { "\($1): Query-Value-\($0)" }.joined(separator: ", ")
    let body = ["passwd", "passphrase", "user_pass", "api_token"].enumerated().map { "\($1): Body-Value-\($0)" }
      .joined(separator: ", ")
    let job = """
      version: 1
      job: names
      database: { path: data/db.sqlite }
      steps:
        - id: a
          http:
            method: POST
            base_url: "http://127.0.0.1:9/"
            query: { \(query), sort_key: created_at, passenger_count: 3 }
            body: { form: { user: bob, \(body), note: n } }
            load: { table: t, records: /data }
      """
    let path = try folder.write("job.yaml", job)
    for arguments in [["plan", path], ["plan", "--json", path]] {
      let result = try Command.dray(arguments)
      #expect(result.status == 0, "\(result.output)")
      #expect(!result.output.contains("-Value-"), "\(result.output)")
      for shown in ["bob", "created_at", "passenger_count", "note"] { #expect(result.output.contains(shown), "\(result.output)") }
    }
  }

  @Test func planPrintsNoLineForAnHTTPStepsOptionLeftEmpty() throws {
    let folder = TemporaryDirectory()
    func plan(_ extra: String) throws -> String {
      let job = """
        version: 1
        job: empty-options
        database: { path: data/db.sqlite }
        steps:
          - id: a
            http:
              base_url: "http://127.0.0.1:9/"
              path: items
        \(extra)
              load: { table: t, records: /data }
        """
      let result = try Command.dray(["plan", try folder.write("job.yaml", job)])
      #expect(result.status == 0, "\(result.output)")
      return result.stdout
    }
    let bare = try plan("")
    #expect(bare.contains("  1. a (http): run\n"), "\(bare)")
    #expect(!bare.contains("headers"), "\(bare)")
    #expect(!bare.contains("on_status"), "\(bare)")
    let given = try plan("      headers: { X-Trace: \"on\" }")
    #expect(given.contains("X-Trace"), "\(given)")
  }

  @Test func planAndStatusNeedNoSecretButRunDoes() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write("job.yaml", Self.planJob)
    let plan = try Command.dray(["plan", path], environment: ["FMP_USER": "plan-user"])
    #expect(plan.status == 0, "\(plan.output)")
    #expect(plan.stdout.contains("  auth       user plan-user, password ***\n"))
    #expect(plan.stdout.contains("  headers    Authorization: ***, X-Trace: on\n"))
    #expect(
      plan.stderr == """
        note: 'platform.headers.Authorization' is not set here (its variable or file is missing); dray run will need it
        note: 'auth.password' is not set here (its variable or file is missing); dray run will need it

        """)
    let status = try Command.dray(["status", path], environment: [:])
    #expect(status.status == 0, "\(status.output)")
    #expect(status.stdout.hasPrefix("job plan-test: no runs yet"))
    // A variable that is not a credential is still required, and run requires them all.
    let run = try Command.dray(["run", path], environment: ["FMP_USER": "plan-user"])
    #expect(run.status == 2)
    #expect(run.stderr.contains("error: 'auth.password': environment variable FMP_PASSWORD is not set"))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["job.yaml"])
  }

  @Test func planJSONHoldsTheSameFacts() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write("job.yaml", Self.planJob)
    let result = try Command.dray(["plan", "--json", path], environment: Self.secrets)
    #expect(result.status == 0, "\(result.output)")
    for secret in Self.secrets.filter({ $0.key != "FMP_USER" }).values { #expect(!result.output.contains(secret)) }
    let plan = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    #expect(plan["job"] as? String == "plan-test")
    #expect((plan["auth"] as? [String: String]) == ["username": "plan-user", "password": "***"])
    let steps = try #require(plan["steps"] as? [[String: Any]])
    #expect(steps.map { $0["id"] as? String } == ["fruits", "clean"])
    #expect(steps[0]["action"] as? String == "run")
    #expect(steps[0]["tables"] as? [String] == ["FRUITS__output_table__b655ebc6"])
    let retry = try #require(steps[0]["retry"] as? [String: Any])
    #expect(retry["count"] as? Int == 2)
    #expect(retry["interval"] as? String == "500ms")
    #expect((steps[0]["timeouts"] as? [String: Any])?["idle"] as? String == "5s")
    #expect((steps[1]["options"] as? [String: Any])?["sql"] as? String == "DELETE FROM FRUITS__output_table__b655ebc6 WHERE price IS NULL")
    #expect(steps[1]["retry"] == nil)
  }

  @Test func planShowsWhichStepsAResumeWouldSkip() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write("job.yaml", Self.failingJob)
    let run = try Command.dray(["run", path])
    #expect(run.status == 1, "\(run.output)")
    // "job resume-test: failed in 0.08s (run 20261130T122859Z-fc1ddc)"
    let firstLine = try #require(run.stdout.split(separator: "\n").first)
    let runID = try #require(firstLine.split(separator: "(run ").last?.dropLast().description)

    let plan = try Command.dray(["plan", path])
    #expect(plan.status == 0, "\(plan.output)")
    #expect(plan.stdout.contains("  resume     continues run \(runID) (failed, started "))
    #expect(plan.stdout.contains("steps: 3; a run now skips 1 and runs 2\n"))
    #expect(plan.stdout.contains("  1. create (sql): skip, finished in run \(runID), unchanged\n"))
    #expect(plan.stdout.contains("  2. broken (sql): run, did not finish in run \(runID) (failed)\n"))
    #expect(plan.stdout.contains("  3. after (sql): run\n"))
    // A finished step whose definition changed runs again, and the plan says why.
    try folder.write("job.yaml", Self.failingJob.replacing("CREATE TABLE IF NOT EXISTS t(a)", with: "CREATE TABLE IF NOT EXISTS t(a, b)"))
    let changed = try Command.dray(["plan", path])
    #expect(changed.stdout.contains("  1. create (sql): run, its definition changed since run \(runID)\n"), "\(changed.stdout)")
    #expect(changed.stdout.contains("  2. broken (sql): run\n"))
    try folder.write("job.yaml", Self.failingJob)

    let fresh = try Command.dray(["plan", "--fresh", path])
    #expect(fresh.stdout.contains("  1. create (sql): run\n"))
    #expect(fresh.stdout.contains("  resume     no unfinished run to continue; a run starts afresh\n"))
    let only = try Command.dray(["plan", "--only", "after", path])
    #expect(only.stdout.contains("  1. create (sql): skip, not selected by --only after\n"))
    let unknown = try Command.dray(["plan", "--from", "nowhere", path])
    #expect(unknown.status == 2)
    #expect(unknown.stderr.hasPrefix("dray: --from nowhere: no such step; steps: create, broken, after"))
    let typo = try Command.dray(["plan", "--only", "aftre", path])
    #expect(typo.stderr.hasPrefix("dray: --only aftre: no such step; did you mean 'after'? Steps: create, broken, after"))
  }

  @Test func planShowsEachMemberOfAResumedGroup() throws {
    func job(_ f: String) -> String {
      """
      version: 1
      job: group-plan
      database: { path: data/db.sqlite }
      steps:
        - id: pre
          sql: CREATE TABLE IF NOT EXISTS log(x TEXT)
        - id: loads
          parallel:
            steps:
              - id: s
                sql: INSERT INTO log(x) VALUES ('s')
              - id: f
                sql: \(f)
      """
    }
    let folder = TemporaryDirectory()
    let path = try folder.write("job.yaml", job("SELECT * FROM nowhere"))
    #expect(try Command.dray(["run", path]).status == 1)
    try folder.write("job.yaml", job("SELECT 1"))
    let plan = try Command.dray(["plan", path])
    #expect(plan.stdout.contains("  1. pre (sql): skip, finished in run "), "\(plan.stdout)")
    #expect(plan.stdout.contains("  2.1. s (sql): skip, finished in run "))
    #expect(plan.stdout.contains("  2.2. f (sql): run, did not finish in run "))
    let run = try Command.dray(["run", path])
    #expect(run.status == 0)
    #expect(run.stdout.contains("skipped"))
  }

  @Test func afterARunThePlanNamesEveryTableFromTheRecordedSchemes() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: tables-test
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      database: { path: data/db.sqlite }
      steps:
        - id: schemes
          schemes: { resources: [FRUITS, CURRENCIES] }
        - id: currencies
          table_stream: { resource: CURRENCIES }
      """)
    let before = try Command.dray(["plan", path], environment: DemoUser.environment)
    #expect(before.stdout.contains("     tables     FRUITS__<table>, CURRENCIES__<table>\n"))
    #expect(before.stdout.hasSuffix("<table> stands for each output table of a resource whose scheme has not been fetched yet.\n"))
    let run = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(run.status == 0, "\(run.output)")
    let after = try Command.dray(["plan", path], environment: DemoUser.environment)
    #expect(after.stdout.contains("     tables     FRUITS__output_table, CURRENCIES__output_table\n"))
    #expect(after.stdout.contains("     tables       CURRENCIES__output_table\n"))
    #expect(!after.stdout.contains("<table>"))
    // The last run succeeded: nothing to continue, every step runs again.
    #expect(after.stdout.contains("steps: 2\n"))
  }

  @Test func planOfAnInvalidManifestExitsTwo() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write("job.yaml", "version: 1\njob: j\n")
    let result = try Command.dray(["plan", path])
    #expect(result.status == 2)
    #expect(result.stderr.hasPrefix("\(path):1:1: error: missing required key 'steps' at the top level"))
  }

  @Test func schemaPrintsTheCommittedJSONSchema() throws {
    let result = try Command.dray(["schema"])
    #expect(result.status == 0)
    #expect(result.stdout == (try String(contentsOfFile: Repository.root + "/docs/manifest.schema.json", encoding: .utf8)))
    let schema = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    #expect(schema["$schema"] as? String == "http://json-schema.org/draft-07/schema#")
    #expect(try Command.dray(["schema", "extra"]).status == 2)
  }
}
