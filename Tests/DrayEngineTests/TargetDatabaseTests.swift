import DrayEngine
import DrayModel
import DrayPostgres
import DrayPostgresStore
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Database-touching steps on both targets, SQLite and PostgreSQL (one suite, two
/// databases; the PostgreSQL server is `PostgresServer.shared()`, a fresh database per test).
@Suite struct TargetDatabaseTests {
  let emulator: Emulator

  init() throws { emulator = try Emulator() }

  func header(_ job: String, _ target: TargetDatabase) -> String {
    JobText.header(job: job, emulator: emulator) + target.manifestBlock
  }

  /// schemes, a full `table_stream` load, an `sql` step with `{{ table }}` and a `query`
  /// step: the rows land exactly, typed values included, and a second run reloads the same
  /// rows (a full answer replaces the table's rows, it never adds to them).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func schemesLoadsSQLAndQueryStepsLandTheRows(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let manifest =
      header("fruits", target) + """
        steps:
          - id: schemes
            schemes: { resources: [FRUITS] }
          - id: fruits
            table_stream: { resource: FRUITS }
          - id: cheap
            sql: |
              CREATE TABLE IF NOT EXISTS cheap (name TEXT);
              DELETE FROM cheap;
              INSERT INTO cheap SELECT name FROM {{ table "FRUITS" "output_table" }} WHERE price < 1.5;
          - id: count
            query:
              sql: SELECT count(*) AS n FROM {{ table "FRUITS" "output_table" }}
              output: out/count.json
        """
    for _ in 1...2 {
      let report = try runJob(folder, manifest).1
      #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
      #expect(
        try target.rows(#"SELECT id, name, price, in_season FROM "FRUITS__output_table" ORDER BY id"#) == [
          ["1", "apple", "0.52", "1"], ["2", "pear", nil, "0"], ["3", "plum", "1.25", "1"], ["4", "quince", "2.1", "0"],
          ["5", "cherry", "4.75", "1"],
        ])
      #expect(try target.rows("SELECT name FROM cheap ORDER BY name") == [["apple"], ["plum"]])
      #expect(try text(folder.path + "/out/count.json").contains(#""n":5"#))
    }
  }

  /// Each statement of an `sql` step reports the rows it inserted, updated or deleted, and
  /// nothing else: a SELECT, a CREATE TABLE ... AS or a DROP after a write reports 0, not
  /// the write's count again (SQLite's `sqlite3_changes` keeps the last write's) nor the rows
  /// it returned (PostgreSQL's command tag `SELECT 3`).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func eachStatementReportsTheRowsItChanged(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let report = try runJob(
      folder,
      header("changes", target) + """
        steps:
          - id: writes
            sql: |
              CREATE TABLE t (a INTEGER);
              INSERT INTO t VALUES (1), (2), (3);
              SELECT a FROM t;
              CREATE TABLE u AS SELECT a FROM t;
              UPDATE t SET a = a + 1 WHERE a > 1;
              DROP TABLE u;
              DELETE FROM t WHERE a = 1;
              INSERT INTO t SELECT a FROM t WHERE a > 100;
        """
    ).1
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    let writes = try #require(report.steps.first { $0.id == "writes" })
    #expect(writes.statements.map(\.changes) == [0, 3, 0, 0, 2, 0, 1, 0], "\(writes.statements)")
  }

  /// A `{{ table }}` naming a table its resource's scheme does not list is a misspelt name
  /// and says so with the tables there are (not "run the step that loads FRUITS first").
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableReferenceNamesWhatIsWrongWithIt(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    func failure(_ sql: String) throws -> String? {
      let report = try runJob(
        folder,
        header("names", target) + """
          steps:
            - id: fruits
              table_stream: { resource: FRUITS }
            - id: use
              sql: '\(sql)'
          """
      ).1
      return report.steps.first { $0.id == "use" }?.errorMessage
    }
    #expect(
      try failure(#"SELECT count(*) FROM {{ table "FRUITS" "output" }}"#)
        == #"{{ table "FRUITS" "output" }}: FRUITS's scheme has no table 'output'; its tables: output_table"#)
    #expect(
      try failure(#"SELECT count(*) FROM {{ table "FRUITS" "output_tabel" }}"#)
        == #"{{ table "FRUITS" "output_tabel" }}: FRUITS's scheme has no table 'output_tabel'; did you mean 'output_table'? Its tables: output_table"#
    )
  }

  /// An `sql` step may not end the transaction its checkpoint commits in: the statement is
  /// refused before any of the step's statements ran.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anSQLStepMayNotCommit(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let report = try runJob(
      folder,
      header("commit", target) + """
        steps:
          - id: harm
            sql: "CREATE TABLE kept (a TEXT); COMMIT;"
        """
    ).1
    #expect(report.exitCode == 1)
    let harm = try #require(report.steps.first { $0.id == "harm" })
    #expect(harm.status == .failed)
    #expect(try target.rows("SELECT count(*) FROM _dray_checkpoints WHERE status = 'succeeded'") == [["0"]])
  }

  /// The store seam's writes into existing tables (`http` loads) do the same on both
  /// databases: records staged elsewhere are copied in, appended in staging order, and
  /// merged by key (the last staged version wins; a deleted mark deletes); a table holding
  /// a key twice is refused.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func stagedRecordsAreAppendedAndMergedAlike(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let store: any TargetStore
    if let url = target.url {
      store = try PostgresStore(target: PostgresTarget(url: PostgresURL(url)))
    } else {
      try FileManager.default.createDirectory(atPath: folder.path + "/data", withIntermediateDirectories: true)
      store = try Store(path: folder.path + "/" + TargetDatabase.sqlitePath)
    }
    let columns: [(name: String, type: ColumnType?)] = [("id", .integer), ("name", .text), ("_dray_deleted", .integer)]
    func row(_ id: Int64, _ name: String, deleted: Bool = false) -> [SQLValue] {
      [.integer(id), .text(name), deleted ? .integer(1) : .null]
    }
    func stage(_ rows: [[SQLValue]], in transaction: any StoreTransaction) throws {
      try transaction.stage("s", columns: columns, for: "t") { add in for row in rows { try add(row) } }
    }
    try store.write { transaction in
      try stage([row(1, "a"), row(2, "b"), row(1, "a2")], in: transaction)
      #expect(try transaction.addMissingColumns([("id", .integer), ("name", .text)], toTable: "t") == [])
      #expect(try transaction.append(from: "s", into: "t", columns: ["id", "name"]) == 3)
    }
    #expect(try target.rows("SELECT id, name FROM t ORDER BY id, name") == [["1", "a"], ["1", "a2"], ["2", "b"]])
    #expect(throws: MergeError.self) {
      try store.write { transaction in
        try stage([row(3, "c")], in: transaction)
        _ = try transaction.merge(from: "s", into: "t", columns: ["id", "name"], key: ["id"], deletedColumn: "_dray_deleted")
      }
    }
    try store.write { transaction in
      #expect(try transaction.deleteRows(ofTable: "t") == 3)
      try stage([row(1, "a"), row(2, "b"), row(1, "a2"), row(3, "c", deleted: true)], in: transaction)
      let merged = try transaction.merge(from: "s", into: "t", columns: ["id", "name"], key: ["id"], deletedColumn: "_dray_deleted")
      #expect(merged.written == 2 && merged.deleted == 0)
    }
    try store.write { transaction in
      try stage([row(2, "gone", deleted: true), row(4, "d")], in: transaction)
      #expect(try transaction.addMissingColumns([("id", .integer), ("note", .text)], toTable: "t") == ["note"])
      let merged = try transaction.merge(from: "s", into: "t", columns: ["id", "name"], key: ["id"], deletedColumn: "_dray_deleted")
      #expect(merged.written == 1 && merged.deleted == 1)
    }
    #expect(try target.rows("SELECT id, name, note FROM t ORDER BY id") == [["1", "a2", nil], ["4", "d", nil]])
  }

  /// `jobs/iso-reference.yaml` against the emulator gives the same rows on SQLite and on
  /// PostgreSQL, table by table.
  @Test func theISOReferenceJobGivesTheSameRowsOnBothDatabases() throws {
    let job = try String(contentsOfFile: Repository.root + "/jobs/iso-reference.yaml", encoding: .utf8)
    var environment = DemoUser.environment
    environment["FMP_HOST"] = emulator.url
    var rows: [TargetDatabase.Kind: [String: [[String?]]]] = [:]
    for kind in TargetDatabase.Kind.allCases {
      let folder = TemporaryDirectory()
      let target = try TargetDatabase(kind, folder: folder.path)
      let text = job.replacingOccurrences(of: "database:\n  path: data/iso.sqlite\n", with: target.manifestBlock)
      #expect(text != job)
      let report = try runJob(folder, text, file: "iso-reference.yaml", environment: environment).1
      #expect(report.exitCode == 0, "\(kind): \(report.steps.compactMap(\.errorMessage))")
      for resource in ["COUNTRIES", "CURRENCIES", "LANGUAGES", "SUBDIVISIONS"] {
        // Sorted here: the two databases may collate text differently.
        rows[kind, default: [:]][resource] = try target.rows(#"SELECT * FROM "\#(resource)__output_table""#).sorted {
          $0.map { $0 ?? "" }.lexicographicallyPrecedes($1.map { $0 ?? "" })
        }
      }
    }
    for resource in ["COUNTRIES", "CURRENCIES", "LANGUAGES", "SUBDIVISIONS"] {
      #expect(rows[.sqlite]?[resource]?.isEmpty == false, "\(resource)")
      #expect(rows[.sqlite]?[resource] == rows[.postgres]?[resource], "\(resource)")
    }
  }

  /// On PostgreSQL the run lock is the job's session advisory lock: while another session
  /// holds it, a run exits 75 and records nothing; once it is released, the job runs.
  @Test func aRunExits75WhileAnotherSessionHoldsTheJobsLock() throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let holder = try PostgresConnection(url: PostgresURL(try #require(target.url)))
    let lock = try #require(try PostgresRunLock.acquire(job: "fruits", schema: "public", on: holder))
    let manifest =
      header("fruits", target) + """
        steps:
          - id: schemes
            schemes: { resources: [FRUITS] }
        """
    let refused = try runJob(folder, manifest).1
    #expect(refused.exitCode == ExitCode.locked)
    #expect(try target.rows("SELECT count(*) FROM _dray_runs") == [["0"]])
    // The holder recorded no run: the message says what the server knows of it, and makes
    // up no run details ("run unknown, process 0").
    let message = try #require(refused.errorMessage)
    let redacted = try PostgresURL(try #require(target.url)).redacted
    let known =
      "job 'fruits' is already running on the run journal \(redacted) (another session holds its run lock and has recorded no run yet: server process \(holder.backendPID), client 127.0.0.1, connected "
    #expect(message.hasPrefix(known), "\(message)")
    #expect(message.hasSuffix("Z); this run changed nothing. Wait for it to finish, or stop it first."), "\(message)")
    try lock.release(on: holder)
    let report = try runJob(folder, manifest).1
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT status FROM _dray_runs") == [["succeeded"]])
  }

  /// The same job's lock held in another database of the same server is another job's:
  /// the run goes on, and no message names that session as this job's holder.
  @Test func theSameJobsLockInAnotherDatabaseIsNotThisJobs() throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let other = try TargetDatabase(.postgres, folder: folder.path)
    let elsewhere = try PostgresConnection(url: PostgresURL(try #require(other.url)))
    let lock = try #require(try PostgresRunLock.acquire(job: "fruits", schema: "public", on: elsewhere))
    let here = try PostgresConnection(url: PostgresURL(try #require(target.url)))
    #expect(try PostgresRunLock.holder(job: "fruits", schema: "public", on: here) == nil)
    let mine = try #require(try PostgresRunLock.acquire(job: "fruits", schema: "public", on: here))
    #expect(
      try PostgresRunLock.holder(job: "fruits", schema: "public", on: elsewhere)?.hasPrefix("server process \(elsewhere.backendPID),")
        == true)
    try mine.release(on: here)
    try lock.release(on: elsewhere)
  }

  /// A store whose run lock was taken over (its session ended, another runner took the lock)
  /// commits nothing: the fencing generation is checked inside the commit transaction.
  @Test func aStoreWhoseLockWasTakenOverCommitsNothing() throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let url = try PostgresURL(try #require(target.url))
    let first = try PostgresConnection(url: url)
    let stale = try #require(try PostgresRunLock.acquire(job: "fruits", schema: "public", on: first))
    try PostgresServer.shared().terminate(backend: first.backendPID)
    let second = try PostgresConnection(url: url)
    let current = try #require(try PostgresRunLock.acquire(job: "fruits", schema: "public", on: second))
    #expect(current.generation == stale.generation + 1)

    let scheme = ResourceScheme(name: "FRUITS", outputs: [.init(name: "output_table", columns: [.init(name: "id", type: "BIGINT")])])
    let store = try PostgresStore(target: PostgresTarget(url: url), fence: stale)
    #expect(throws: PostgresRunLockError.fenced(job: "fruits", generation: stale.generation, current: current.generation)) {
      try store.write { try $0.createTables(for: scheme, params: .object([])) }
    }
    #expect(try target.rows(#"SELECT count(*) FROM pg_tables WHERE tablename = 'FRUITS__output_table'"#) == [["0"]])
    #expect(try target.rows("SELECT count(*) FROM _dray_resources") == [["0"]])

    let fenced = try PostgresStore(target: PostgresTarget(url: url), fence: current)
    try fenced.write { _ = try $0.createTables(for: scheme, params: .object([])) }
    #expect(try target.rows(#"SELECT count(*) FROM pg_tables WHERE tablename = 'FRUITS__output_table'"#) == [["1"]])
  }

  /// The scheme check on PostgreSQL names PostgreSQL and its limits, never SQLite's: 1600
  /// columns, no `sqlite_` reservation, and letter-case twins refused for a reason that holds
  /// there. Nothing is created for a refused scheme.
  @Test func schemeRefusalsOnPostgreSQLNamePostgreSQL() throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let store = try PostgresStore(target: PostgresTarget(url: PostgresURL(try #require(target.url))))
    func table(_ columns: [String], resource: String = "R", cached: Bool = false) -> ResourceScheme {
      ResourceScheme(
        name: resource, lifetime: cached ? 60 : nil, outputs: [.init(name: "t", columns: columns.map { .init(name: $0, type: "TEXT") })])
    }
    let cases: [(ResourceScheme, String)] = [
      (
        table((1...1601).map { "c\($0)" }),
        "resource 'R': output table 't' has 1601 columns; PostgreSQL allows at most 1600; nothing was created"
      ),
      (
        table((1...1600).map { "c\($0)" }, cached: true),
        "resource 'R': output table 't' has 1600 columns; PostgreSQL allows at most 1599; nothing was created"
      ),
      (
        table(["ID", "id"]),
        "resource 'R': output table 't' has columns 'ID' and 'id', which differ only in letter case; dray refuses such names on every database, so that a job loads the same tables wherever it runs; nothing was created"
      ),
      (
        table([]),
        "resource 'R': output table 't' has no columns; dray creates no table without columns, on any database; nothing was created"
      ),
    ]
    for (scheme, message) in cases {
      let error = #expect(throws: StoreError.self) { try store.write { _ = try $0.createTables(for: scheme, params: .object([])) } }
      #expect(error.map { "\($0)" } == message)
      #expect(!"\(error.map { "\($0)" } ?? "")".contains("SQLite"))
    }
    #expect(try target.rows("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 't'") == [["0"]])
    // SQLite's reservation is SQLite's: on PostgreSQL a resource may be named so.
    try store.write { _ = try $0.createTables(for: table(["a"], resource: "sqlite_R"), params: .object([])) }
    #expect(try target.rows("SELECT count(*) FROM pg_tables WHERE tablename = 'sqlite_R__t'") == [["1"]])
  }

  /// A step's fingerprint names its database: for `database.url`, the URL without its
  /// password and the schema. Two databases (or schemas) differ; the same database reached
  /// with the password in the URL or in `database.password` is the same.
  @Test func aStepsFingerprintNamesThePostgreSQLDatabaseWithoutItsPassword() throws {
    func fingerprint(_ database: String) throws -> String {
      let manifest = try ManifestText.load(
        """
        version: 1
        job: j
        database: \(database)
        steps:
          - id: s
            sql: SELECT 1
        """)
      return try #require(manifest.steps.first).fingerprint(in: manifest)
    }
    let warehouse = try fingerprint("{ url: \"postgresql://loader:pass-word-1@db/warehouse\" }")
    #expect(try fingerprint("{ url: \"postgresql://loader@db/warehouse\", password: pass-word-2 }") == warehouse)
    #expect(try fingerprint("{ url: \"postgresql://loader@db/staging\" }") != warehouse)
    #expect(try fingerprint("{ url: \"postgresql://loader@db:5433/warehouse\" }") != warehouse)
    #expect(try fingerprint("{ url: \"postgresql://loader@db/warehouse\", schema: other }") != warehouse)
    #expect(try fingerprint("{ path: data/db.sqlite }") != warehouse)
  }
}
