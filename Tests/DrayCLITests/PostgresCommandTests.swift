import DrayModel
import DrayPostgres
import DrayTestSupport
import Foundation
import Testing

/// The commands that read a job's database or journal (`dray tables`, `query`, `status`,
/// `plan`, `report`) on PostgreSQL, and one-line errors for bad PostgreSQL targets, run as
/// the built binary against the real server of `PostgresServer.shared()`.
@Suite struct PostgresCommandTests {
  /// A job folder whose manifest names a fresh database by URL without a password; the
  /// password is in `pw.txt`, read with `${file:...}`.
  struct Job {
    let folder = TemporaryDirectory()
    let database: String
    let url: String
    let manifest: String

    init(steps: String, emulator: Emulator? = nil, url: String? = nil, schema: String? = nil, password: String? = nil) throws {
      let server = try PostgresServer.shared()
      database = try server.createDatabase("cli")
      let fresh = try server.url(database: database, withPassword: false).redacted
      self.url = url ?? fresh
      try folder.write("pw.txt", password ?? PostgresServer.password)
      let platform = emulator.map {
        """
        platform: { host: "\($0.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
        auth: { username: demo, password: demo-password }

        """
      }
      manifest = try folder.write(
        "job.yaml",
        """
        version: 1
        job: pg-cli
        \(platform ?? "")database:
          url: "\(self.url)"
          password: ${file:pw.txt}
        \(schema.map { "  schema: \($0)\n" } ?? "")retry: { count: 0 }
        steps:
        \(steps)
        """)
    }
  }

  /// Every form of the test role's password, to be found nowhere.
  func scan(_ results: [(String, Command.Result)], also secrets: [String] = []) -> [String] {
    var scan = SecretScan()
    for value in [PostgresServer.password] + secrets {
      for form in SecretForms.every(value) { scan.sentinels.append((value, form)) }
    }
    for (name, result) in results {
      scan.look(in: Data(result.stdout.utf8), "the standard output of \(name)")
      scan.look(in: Data(result.stderr.utf8), "the standard error of \(name)")
    }
    return scan.hits
  }

  /// `dray status` of a run recorded as `running`: while its runner lives, the session that
  /// holds the job's run lock; once that session is gone (the runner killed), that the next
  /// run marks it abandoned, as SQLite's status says of a process that is gone.
  @Test func statusSaysWhetherARunningRunsRunnerStillHoldsTheLock() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "hang": true}"#])
    let job = try Job(steps: "  - id: fruits\n    table_stream: { resource: FRUITS }\n", emulator: emulator)
    let runner = try BackgroundDray(["run", job.manifest], logPrefix: job.folder.path + "/runner")
    try runner.wait(for: "the call the server holds") {
      ((try? emulator.requests()) ?? []).contains { ($0["path"] as? String)?.hasPrefix("/api/v1/rpc/FRUITS/") == true }
    }
    let live = try Command.dray(["status", job.manifest])
    #expect(live.status == 0, "\(live.output)")
    let line = try #require(live.stdout.split(separator: "\n").first { $0.contains(" running ") }, "\(live.stdout)")
    #expect(line.contains("; process \(runner.process.processIdentifier); its runner's session: server process "), "\(line)")
    let digits = try #require(line.split(separator: "server process ").last).prefix { $0.isNumber }
    let backend = try #require(Int32(digits))

    runner.send(SIGKILL)
    _ = try runner.finish()
    // The killed runner's session may outlive it until the server notices: end it now, and
    // wait until it is gone (it may be gone already).
    try? PostgresServer.shared().terminate(backend: backend, waitingSeconds: 20)
    let gone = try Command.dray(["status", job.manifest])
    #expect(
      gone.stdout.contains(
        "; process \(runner.process.processIdentifier); no session holds the job's run lock, so its runner is gone; the next run marks it abandoned"
      ), "\(gone.stdout)")
  }

  @Test func tablesQueryStatusPlanAndReportReadAPostgreSQLJob() throws {
    let emulator = try Emulator()
    let job = try Job(steps: "  - id: fruits\n    table_stream: { resource: FRUITS }", emulator: emulator)
    let run = try Command.dray(["run", job.manifest, "--quiet"])
    #expect(run.status == 0, "\(run.output)")
    let password = ["PGPASSWORD": PostgresServer.password]
    var results: [(String, Command.Result)] = [("run", run)]

    let tables = try Command.dray(["tables", job.url], environment: password)
    #expect(tables.status == 0, "\(tables.output)")
    #expect(tables.stdout == "FRUITS__output_table\n")
    let json = try Command.dray(["tables", job.url, "--resource", "FRUITS", "--json"], environment: password)
    #expect(json.stdout.hasPrefix(#"[{"name":"FRUITS__output_table","resource":"FRUITS","table":"output_table","params":{},"rows":5,"#))
    let missing = try Command.dray(["tables", job.url, "--resource", "PLUMS"], environment: password)
    #expect(missing.status == 1)
    #expect(
      missing.stderr
        == "dray: schema public of \(job.url) holds no table of resource 'PLUMS' for params {}; a schemes or table_stream step would create \"PLUMS__output_table\"\n"
    )
    // ~/.pgpass works as for dray run (libpq reads it; it must not be readable by others).
    let home = TemporaryDirectory()
    let port = try PostgresServer.shared().port
    let pgpass = try home.write(".pgpass", "127.0.0.1:\(port):\(job.database):\(PostgresServer.user):\(PostgresServer.password)\n")
    #expect(chmod(pgpass, 0o600) == 0)
    let viaFile = try Command.dray(["tables", job.url], environment: ["HOME": home.path, "PGPASSWORD": ""])
    #expect(viaFile.stdout == "FRUITS__output_table\n", "\(viaFile.output)")

    let count = try Command.dray(
      ["query", job.url, #"SELECT count(*) AS n, bool_and(id > 0) AS ok FROM "FRUITS__output_table""#], environment: password)
    #expect(count.status == 0, "\(count.output)")
    #expect(count.stdout == #"{"status":"ok","result":{"database":{"records":[{"n":5,"ok":1}]}}}"# + "\n")
    let write = try Command.dray(["query", job.url, #"DELETE FROM "FRUITS__output_table""#], environment: password)
    #expect(write.status == 1)
    #expect(
      write.stdout.contains(#"{"status":"error","error":"dray query only reads; change data with an sql step in a job (PostgreSQL at "#))
    let again = try Command.dray(["query", job.url, #"SELECT count(*) AS n FROM "FRUITS__output_table""#], environment: password)
    #expect(again.stdout == #"{"status":"ok","result":{"database":{"records":[{"n":5}]}}}"# + "\n")

    let status = try Command.dray(["status", job.manifest])
    #expect(status.status == 0, "\(status.output)")
    let lines = status.stdout.split(separator: "\n").map(String.init)
    #expect(lines.first == "job pg-cli: 1 recent run (journal \(job.url))")
    #expect(lines.contains { $0.hasPrefix("  fruits: succeeded in run ") && $0.contains(", 5 rows, ") })

    let plan = try Command.dray(["plan", job.manifest])
    #expect(plan.status == 0, "\(plan.output)")
    #expect(plan.stdout.contains("  journal    schema public of \(job.url)\n"), "\(plan.stdout)")
    #expect(plan.stdout.contains("  1. fruits (table_stream): run"), "\(plan.stdout)")

    let report = try Command.dray(["report", job.manifest, "-o", job.folder.path + "/page.html"])
    #expect(report.status == 0, "\(report.output)")
    let page = try job.folder.read("page.html")
    let runID = try #require(lines.dropFirst().first?.split(separator: " ").first.map(String.init))
    #expect(page.contains(runID))
    #expect(!page.contains("could not be read"))
    results += [
      ("tables", tables), ("tables with ~/.pgpass", viaFile), ("query", count), ("status", status), ("plan", plan), ("report", report),
    ]
    #expect(scan(results) == [])
  }

  /// Reading commands create nothing: on a database no run has used, `tables` lists nothing,
  /// `status` says there are no runs yet, and no table or schema of dray's appears.
  @Test func readingANewDatabaseCreatesNothing() throws {
    let job = try Job(steps: "  - id: one\n    sql: SELECT 1")
    let password = ["PGPASSWORD": PostgresServer.password]
    let tables = try Command.dray(["tables", job.url], environment: password)
    #expect(tables.status == 0 && tables.stdout == "", "\(tables.output)")
    let status = try Command.dray(["status", job.manifest])
    #expect(status.stdout == "job pg-cli: no runs yet (no journal in schema public of \(job.url))\n", "\(status.output)")
    #expect(try Command.dray(["plan", job.manifest]).status == 0)
    let noSchema = try Command.dray(["tables", job.url, "--schema", "staging"], environment: password)
    #expect(noSchema.status == 1)
    #expect(
      noSchema.stderr
        == "dray: PostgreSQL at \(job.url) has no schema staging; name the job's schema with --schema (database.schema in its manifest)\n")
    let admin = try PostgresServer.shared().admin(database: job.database)
    #expect(try admin.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").rows == [[.integer(0)]])
  }

  /// Bad PostgreSQL targets: each is one line naming the URL with its password masked and
  /// what to do, with their exit codes (`dray run` 1, or 69 for a server it cannot reach;
  /// `dray tables` 1, a malformed URL on the command line 2); nothing is created and no
  /// password is printed in any form.
  @Test func badPostgreSQLTargetsGiveOneLineErrors() throws {
    let server = try PostgresServer.shared()
    let port = try PostgresServer.freePort()
    let wrong = "wrong-password-7"
    let locked = try server.createDatabase("locked")
    try server.admin(database: locked).execute("CREATE SCHEMA locked")  // owned by postgres; dray has no privilege
    let base = "postgresql://\(PostgresServer.user)@127.0.0.1"
    struct Case {
      var name: String
      var url: String
      var schema: String?
      var password: String?
      var message: String
      /// `dray run`'s exit: 69 where the server cannot be reached (unavailable), else 1.
      var exit: Int32 = 1
    }
    let cases = [
      Case(
        name: "a wrong password", url: "\(base):\(server.port)/\(locked)", password: wrong,
        message:
          "PostgreSQL at \(base):\(server.port)/\(locked) refused the password for user \"dray\": check database.password (or PGPASSWORD, PGPASSFILE, ~/.pgpass)"
      ),
      Case(
        name: "a missing database", url: "\(base):\(server.port)/no_such_db",
        message:
          "PostgreSQL at \(base):\(server.port)/no_such_db: database \"no_such_db\" does not exist; create it (createdb) or name an existing database in database.url"
      ),
      Case(
        name: "no permission on the schema", url: "\(base):\(server.port)/\(locked)", schema: "locked",
        message:
          "PostgreSQL at \(base):\(server.port)/\(locked): permission denied for schema locked; grant the role the privilege (for a schema: GRANT USAGE, CREATE ON SCHEMA ... TO ...) or choose another database.schema"
      ),
      Case(
        name: "a missing schema", url: "\(base):\(server.port)/\(locked)", schema: "no_such_schema",
        message:
          "PostgreSQL at \(base):\(server.port)/\(locked): schema \"no_such_schema\" does not exist; create the schema (CREATE SCHEMA ... AUTHORIZATION the role) or choose another database.schema"
      ),
      Case(
        name: "TLS required by a server without it", url: "\(base):\(server.port)/\(locked)?sslmode=require",
        message:
          "cannot connect securely to PostgreSQL at \(base):\(server.port)/\(locked)?sslmode=require: "
      ),
      Case(
        name: "a refused port", url: "\(base):\(port)/db",
        message: "cannot reach PostgreSQL at \(base):\(port)/db: ", exit: 69
      ),
      Case(
        name: "a non-routable host", url: "postgresql://dray@10.255.255.1:5432/db?connect_timeout=2",
        message: "cannot reach PostgreSQL at postgresql://dray@10.255.255.1:5432/db?connect_timeout=2: ", exit: 69
      ),
    ]
    var results: [(String, Command.Result)] = []
    for c in cases {
      let job = try Job(steps: "  - id: one\n    sql: CREATE TABLE made (a text)", url: c.url, schema: c.schema, password: c.password)
      let run = try Command.dray(["run", job.manifest])
      #expect(run.status == c.exit, "\(c.name): \(run.output)")
      let errors = run.stderr.split(separator: "\n").filter { $0.contains(" error: ") }
      #expect(errors.count == 1, "\(c.name): \(run.stderr)")
      #expect(errors.first?.contains(c.message) == true, "\(c.name): \(run.stderr)")
      // The reading commands, where they read: the same line, exit 1. (With no privilege on
      // the schema there is nothing to read, and they say so: no tables, no runs yet.)
      let environment = ["PGPASSWORD": c.password ?? PostgresServer.password]
      let tables = try Command.dray(["tables", c.url], environment: environment)
      let status = try Command.dray(["status", job.manifest])
      let query = try Command.dray(["query", c.url, "SELECT 1"], environment: environment)
      if c.schema == nil {
        for (name, result) in [("tables", tables), ("status", status)] {
          #expect(result.status == 1, "\(c.name): \(name): \(result.output)")
          #expect(result.stderr.hasPrefix("dray: " + c.message), "\(c.name): \(name): \(result.stderr)")
          #expect(result.stderr.split(separator: "\n").count == 1, "\(c.name): \(name): \(result.stderr)")
        }
        #expect(query.status == 1, "\(c.name): \(query.output)")
        let answer = try JSONSerialization.jsonObject(with: Data(query.stdout.utf8)) as? [String: String]
        #expect(answer?["status"] == "error" && answer?["error"]?.hasPrefix(c.message) == true, "\(c.name): \(query.stdout)")
      }
      results += [("\(c.name): run", run), ("\(c.name): tables", tables), ("\(c.name): status", status), ("\(c.name): query", query)]
    }
    // Nothing half-created where the server was reached.
    let admin = try server.admin(database: locked)
    #expect(try admin.execute("SELECT count(*) FROM pg_tables WHERE schemaname IN ('public', 'locked')").rows == [[.integer(0)]])

    let malformed = try Command.dray(["tables", "postgresql://dray:\(wrong)@127.0.0.1:54x/db"])
    #expect(malformed.status == 2)
    #expect(
      malformed.stderr.hasPrefix(
        "dray: the database URL postgresql://dray:***@127.0.0.1:54x/db is malformed: the port '54x' is not a number from 1 to 65535\n"))
    results.append(("a malformed URL", malformed))
    #expect(scan(results, also: [wrong]) == [])
  }
}
