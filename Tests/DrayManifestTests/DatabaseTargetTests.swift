import DrayManifest
import DrayModel
import Testing

/// `database:` takes an SQLite `path` or a PostgreSQL `url` (with `password`, `schema` and
/// `timeouts`); the URL is checked at validation with its position, and its password is a
/// secret.
@Suite struct DatabaseTargetTests {
  func load(_ database: String) throws(ManifestError) -> Manifest {
    try ManifestLoader(environment: ["PGPW": "from-env-pw"]).load(
      text: "version: 1\njob: j\ndatabase:\n\(database)\nsteps: [{sql: SELECT 1}]\n", path: "job.yaml", directory: "/jobs")
  }

  func errors(_ database: String) -> [String] {
    do {
      _ = try load(database)
      return []
    } catch {
      return error.diagnostics.map(\.message)
    }
  }

  @Test func aURLIsAPostgresTargetWithTheDefaultSchema() throws {
    let m = try load("  url: postgresql://loader@db.internal:5432/warehouse?sslmode=verify-full")
    let target = try #require(m.database?.postgres)
    #expect(target.url.host == "db.internal")
    #expect(target.url.parameters == [.init(name: "sslmode", value: "verify-full")])
    #expect(target.schema == "public")
    #expect(target.password == nil)
    #expect(m.database?.path == nil)
  }

  @Test func passwordAndSchemaAreRead() throws {
    let m = try load("  url: postgresql://loader@db/warehouse\n  password: ${PGPW}\n  schema: staging")
    #expect(
      m.database?.postgres
        == PostgresTarget(url: try PostgresURL("postgresql://loader@db/warehouse"), password: "from-env-pw", schema: "staging"))
  }

  /// `database.timeouts` (docs/postgres.md, "Time limits"): each key read, the others at
  /// their documented defaults.
  @Test func timeoutsAreReadAndDefaultToTheDocumentedLimits() throws {
    let defaults = try #require(try load("  url: postgresql://db/w").database?.postgres)
    #expect(defaults.timeouts == DatabaseTimeouts(connect: .seconds(10), idle: .seconds(60), statement: .seconds(3600)))
    let set = try #require(try load("  url: postgresql://db/w\n  timeouts: { idle: 1500ms, statement: 4h }").database?.postgres)
    #expect(set.timeouts == DatabaseTimeouts(connect: .seconds(10), idle: .milliseconds(1500), statement: .seconds(4 * 3600)))
    let connect = try #require(try load("  url: postgresql://db/w\n  timeouts: { connect: 2.5s }").database?.postgres)
    #expect(connect.timeouts.connect == .milliseconds(2500))
  }

  @Test func bothPasswordsAreSecrets() throws {
    let m = try load("  url: postgresql://loader:in-url-pw@db/warehouse")
    #expect(m.redactor.redact("x in-url-pw y") == "x *** y")
    let n = try load("  url: postgresql://loader@db/warehouse\n  password: literal-pw")
    #expect(n.redactor.redact("literal-pw") == "***")
  }

  @Test func aMalformedURLIsPositionedAndItsPasswordMasked() {
    do {
      _ = try load("  url: postgresql://loader:hunter22@db:54x/warehouse")
      Issue.record("loaded")
    } catch {
      #expect(error.diagnostics.map(\.message) == ["'database.url': the port '54x' is not a number from 1 to 65535"])
      #expect(error.diagnostics.first?.location.line == 4)
      #expect(error.diagnostics.first?.location.column == 8)
      #expect(!"\(error)".contains("hunter22"))
    }
  }

  @Test(arguments: [
    ("  path: x.sqlite\n  url: postgresql://db/w", "'database' takes 'path' (an SQLite file) or 'url' (PostgreSQL), not both"),
    ("  schema: staging", "missing required key 'path' (an SQLite file) or 'url' (PostgreSQL) in database"),
    ("  path: x.sqlite\n  password: pw1", "'database.password' goes with 'url' (PostgreSQL); an SQLite database (database.path) has none"),
    (
      "  url: postgresql://u:in-url-password@db/w\n  password: other-password",
      "'database.password' and a password in 'database.url' both given; give it once, in database.password"
    ),
    (
      "  url: mysql://db/w",
      "'database.url': 'mysql://' is not a PostgreSQL URL; write postgresql://user@host:port/database, such as postgresql://loader@db.example.com:5432/warehouse"
    ),
    (
      "  url: postgresql://db/w\n  schema: \(String(repeating: "s", count: 64))",
      "'database.schema' has 64 bytes; PostgreSQL names have at most 63"
    ),
    (
      "  path: x.sqlite\n  timeouts: { idle: 5s }",
      "'database.timeouts' goes with 'url' (PostgreSQL); an SQLite database (database.path) has none"
    ),
    (
      "  url: postgresql://db/w\n  timeouts: { idle: 500ms }",
      "'database.timeouts.idle' is too short: 500ms; it must be between 1s and 30d"
    ),
    (
      "  url: postgresql://db/w\n  timeouts: { connect: 1s }",
      "'database.timeouts.connect' is too short: 1s; it must be between 2s and 30d"
    ),
    ("  url: postgresql://db/w\n  timeouts: { idel: 5s }", "unknown key 'idel' in database.timeouts; did you mean 'idle'?"),
  ])
  func badDatabaseBlocksAreRefused(block: String, message: String) {
    #expect(errors(block) == [message])
  }

  /// PostgreSQL's own schemas are no place for a job's tables (issue 25); the schema is
  /// quoted, so a name in other letter case is a user's.
  @Test func aSystemSchemaIsRefused() throws {
    for schema in ["pg_catalog", "information_schema", "pg_toast", "pg_temp", "pg_temp_3", "pg_anything"] {
      #expect(
        errors("  url: postgresql://db/w\n  schema: \(schema)") == [
          "'database.schema': \(schema) is a PostgreSQL system schema (information_schema, and every name starting with pg_); give the job's tables a schema of their own, such as public or staging"
        ])
    }
    for schema in ["PG_CATALOG", "Information_Schema", "staging", "pgx"] {
      #expect(try load("  url: postgresql://db/w\n  schema: \(schema)").database?.postgres?.schema == schema)
    }
  }
}
