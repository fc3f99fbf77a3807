import DrayTestSupport
import Foundation
import Testing

/// Bad input from the manifest and from the server, run through the built binary: every
/// case ends with a message naming what and where, exit code 1 or 2, and never a crash.
@Suite struct BadInputTests {
  /// The lines of `stderr` that are diagnostics of `file` (without the quoted source lines).
  func diagnostics(_ result: Command.Result, _ file: String) -> [String] {
    result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix(file + ":") }
  }

  @Test func aNULCannotCutAManifestValueShort() throws {
    let folder = TemporaryDirectory()
    let setup = try folder.write(
      "setup.yaml",
      """
      version: 1
      job: setup
      database: { path: data.sqlite }
      steps:
        - sql: CREATE TABLE u(x); INSERT INTO u VALUES (1), (2)
      """)
    #expect(try Command.dray(["run", setup]).status == 0)
    // Cut at the NUL, the SQL would delete every row of u, and the path would open data.sqlite.
    let job = try folder.write(
      "job.yaml",
      #"""
      version: 1
      job: nul
      database: { path: "data.sqlite\0.other" }
      steps:
        - id: clean
          sql: "DELETE FROM u\0 WHERE x = 2"
      """#)
    let result = try Command.dray(["run", job])
    #expect(result.status == 2)
    #expect(result.stdout == "")
    #expect(
      diagnostics(result, job) == [
        #"\#(job):3:19: error: 'database.path' holds a NUL character (U+0000, written \0), which would cut the value short; remove it"#,
        #"\#(job):6:10: error: 'steps.clean.sql' holds a NUL character (U+0000, written \0), which would cut the value short; remove it"#,
        "\(job): 2 errors; nothing was run",
      ])
    #expect(try Command.dray(["query", folder.path + "/data.sqlite", "SELECT count(*) AS n FROM u"]).stdout.contains(#"[{"n":2}]"#))
  }

  @Test func aSecretFileHoldingANULIsRefusedWithoutQuotingIt() throws {
    let folder = TemporaryDirectory()
    try Data("TopSecretValue\0tail\n".utf8).write(to: URL(fileURLWithPath: folder.path + "/secret.txt"))
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: nul-secret
      database: { path: data.sqlite }
      steps:
        - id: peek
          sql: "SELECT '${file:secret.txt}' FROM nowhere"
      """)
    let result = try Command.dray(["run", job])
    #expect(result.status == 2)
    #expect(
      diagnostics(result, job) == [
        "\(job):6:10: error: 'steps.peek.sql': file 'secret.txt' named by ${file:secret.txt} holds a NUL character (U+0000), which would cut the value short; remove it from the file",
        "\(job): 1 error; nothing was run",
      ])
    #expect(!result.output.contains("TopSecret"))
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/data.sqlite"))
  }

  @Test func durationsBeyondThirtyDaysAreRefusedNotACrash() throws {
    let folder = TemporaryDirectory()
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: long
      database: { path: data.sqlite }
      retry: { interval: 99999999999999h, max_interval: 1000000000000000000000ms }
      steps:
        - sql: SELECT 1
          timeouts: { idle: 99999999999999999999s }
      """)
    let result = try Command.dray(["validate", job])
    #expect(result.status == 2)
    #expect(
      diagnostics(result, job) == [
        "\(job):4:20: error: 'retry.interval' is too long: 99999999999999h; a duration is at most 30 days (30d, 720h)",
        "\(job):4:51: error: 'retry.max_interval' is too long: 1000000000000000000000ms; a duration is at most 30 days (30d, 720h)",
        "\(job):7:23: error: 'steps.sql-1.timeouts.idle' is too long: 99999999999999999999s; a duration is at most 30 days (30d, 720h)",
        "\(job): 3 errors; nothing was run",
      ])
  }

  @Test func platformHeadersCannotInjectAField() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = try folder.write(
      "job.yaml",
      #"""
      version: 1
      job: inject
      platform:
        host: \#(emulator.url)
        environment: DocumentationExampleEnv
        project: DocumentationExampleProj
        headers: { X-A: "a\r\nX-Injected: yes" }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      steps:
        - request: { resource: FRUITS }
      """#)
    let result = try Command.dray(["run", job], environment: DemoUser.environment)
    #expect(result.status == 2)
    #expect(
      diagnostics(result, job) == [
        "\(job):7:19: error: 'platform.headers.X-A' must be one line; a header value cannot hold a line break",
        "\(job): 1 error; nothing was run",
      ])
    #expect(try emulator.requests().isEmpty)
  }

  /// Schemes SQLite cannot hold: refused by name before anything is created, exit 1.
  @Test func schemesSQLiteCannotHoldFailTheStepClearly() throws {
    let folder = TemporaryDirectory()
    let resources = try folder.write(
      "resources.json",
      #"""
      {"environment": "DocumentationExampleEnv", "project": "DocumentationExampleProj", "resources": {
        "DUP": {"outputs": {}, "scheme_output": [
          {"name": "output_table", "columns": [{"name": "a", "type": "TEXT"}]},
          {"name": "output_table", "columns": [{"name": "b", "type": "TEXT"}]}]},
        "EMPTY": {"outputs": {"output_table": {"columns": [], "rows": []}}},
        "NULCOL": {"outputs": {"output_table": {"columns": [["nam\u0000e", "TEXT", "text"]], "rows": []}}}}}
      """#)
    let emulator = try Emulator(["--resources", resources])
    let cases = [
      (
        "schemes: { resources: [DUP] }",
        "resource 'DUP': the scheme lists two output tables named 'output_table'; each output table needs its own name; nothing was created"
      ),
      (
        "table_stream: { resource: DUP }",
        "resource 'DUP': the scheme lists two output tables named 'output_table'; each output table needs its own name; nothing was created"
      ),
      (
        "schemes: { resources: [EMPTY] }",
        "resource 'EMPTY': output table 'output_table' has no columns; SQLite cannot create a table without columns; nothing was created"
      ),
      (
        "table_stream: { resource: NULCOL }",
        #"resource 'NULCOL': output table 'output_table' has a column named 'nam\0e', which holds a NUL character (U+0000); nothing was created"#
      ),
    ]
    for (step, message) in cases {
      let job = try folder.write(
        "job.yaml",
        """
        version: 1
        job: schemes
        platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
        auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
        database: { path: data.sqlite }
        retry: { count: 0 }
        steps:
          - id: s
            \(step)
        """)
      let result = try Command.dray(["run", job], environment: DemoUser.environment)
      #expect(result.status == 1, "\(step): \(result.output)")
      #expect(result.output.contains(message), "\(result.output)")
      #expect(!result.output.contains("Fatal error"))
    }
    let tables = try Command.dray([
      "query", folder.path + "/data.sqlite", "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_dray%' ESCAPE '\\'",
    ])
    #expect(tables.stdout == #"{"status":"ok","result":{"database":{"records":[]}}}"# + "\n")
  }
}

/// JSON nested deeper than 512 levels, typed by the user: refused by name, never a crash.
@Suite struct DeepJSONInputTests {
  @Test func deepTemplateParametersAndDeepParamsAreRefused() throws {
    let folder = TemporaryDirectory()
    let deep = #"{"a":"# + String(repeating: "[", count: 50000) + String(repeating: "]", count: 50000) + "}"
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: deep
      database: { path: data.sqlite }
      steps:
        - id: s
          sql: |
            SELECT * FROM {{ table "X" "t" '\(deep)' }}
      """)
    let validate = try Command.dray(["validate", job])
    #expect(validate.status == 2)
    #expect(
      validate.stderr.contains(
        #"error: step 's': the parameters of {{ table "X" "t" }} are not valid JSON (nested deeper than 512 levels at byte 516); write them as a JSON object in single quotes"#
      ), "\(validate.stderr.prefix(2000))")

    let setup = try folder.write("setup.yaml", "version: 1\njob: setup\ndatabase: { path: data.sqlite }\nsteps:\n  - sql: SELECT 1\n")
    #expect(try Command.dray(["run", setup]).status == 0)
    let params = #"{"a":"# + String(repeating: "[", count: 20000) + String(repeating: "]", count: 20000) + "}"
    let tables = try Command.dray(["tables", folder.path + "/data.sqlite", "--resource", "X", "--params", params])
    #expect(tables.status == 2)
    #expect(
      tables.stderr.contains(#"--params must be a JSON object, such as '{"region":"EU"}': nested deeper than 512 levels at byte 516"#),
      "\(tables.stderr)")
  }
}
