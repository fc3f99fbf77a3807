import DrayEngine
import DrayJSON
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// `table_stream` with `delta: true` against the emulator's versioned FRUITS, on both
/// targets (one suite, two databases): after every refresh the local table equals the
/// server's latest version.
@Suite struct DeltaTests {
  func job(_ folder: TemporaryDirectory, _ emulator: Emulator, _ target: TargetDatabase? = nil, resource: String = "FRUITS") throws
    -> Manifest
  {
    let path = try folder.write(
      "delta.yaml",
      """
      version: 1
      job: delta
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: demo, password: demo-password }
      \(target?.manifestBlock ?? "database: { path: data.sqlite }\n")retry: { count: 1, interval: 100ms }
      steps:
        - id: schemes
          schemes: {}
        - id: load
          table_stream: { resource: \(resource), delta: true }
      """)
    return try ManifestLoader(environment: [:]).load(path: path)
  }

  /// `job`, with an `sql` step `sql` after the load (written as a single-quoted YAML scalar).
  func job(_ folder: TemporaryDirectory, _ emulator: Emulator, _ target: TargetDatabase, then sql: String) throws -> Manifest {
    _ = try job(folder, emulator, target)
    let path = try folder.write(
      "then.yaml",
      try folder.read("delta.yaml").replacing("job: delta", with: "job: then")
        + "\n  - id: then\n    sql: '\(sql.replacing("'", with: "''"))'\n")
    return try ManifestLoader(environment: [:]).load(path: path)
  }

  /// Runs the job and returns the load step's report.
  func refresh(_ job: Manifest) throws -> StepReport {
    let report = Runner(manifest: job, console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    return try #require(report.steps.last)
  }

  /// The server's latest rows of a resource's output_table, row id first, each value as
  /// `TargetDatabase.rows` gives it.
  func serverRows(_ emulator: Emulator, _ resource: String = "FRUITS") throws -> (version: String, rows: [[String?]]) {
    let answer = try JSONValue(parsing: Array(emulator.admin("GET", "versions/\(resource)")))
    let rows = answer["tables"]?["output_table"]?.arrayValue ?? []
    let values = try rows.map { row in
      try (row.arrayValue ?? []).map { value -> String? in
        switch value {
        case .integer(let i): String(i)
        case .number(let n): String(try #require(Double(n)))
        case .string(let s): s
        default: nil
        }
      }
    }
    return ("v\(answer["version"]?.intValue ?? -1)", values)
  }

  func localRows(_ target: TargetDatabase) throws -> [[String?]] {
    try target.rows(#"SELECT * FROM "FRUITS__output_table" ORDER BY hhive_id"#)
  }

  func localVersion(_ target: TargetDatabase) throws -> String? {
    try target.rows("SELECT content_version FROM _dray_tables WHERE name = 'FRUITS__output_table'").first?.first ?? nil
  }

  /// The cache hash recorded for FRUITS, and the one the emulator gives the server's latest
  /// rows (the first 16 hex digits of SHA-256 of their canonical JSON).
  func cacheHashes(_ target: TargetDatabase, _ emulator: Emulator) throws -> (local: String?, server: String) {
    let local = try target.rows("SELECT cache_hash FROM _dray_tables WHERE resource = 'FRUITS'").first?.first ?? nil
    let answer = try JSONValue(parsing: Array(emulator.admin("GET", "versions/FRUITS")))
    let rows = answer["tables"]?["output_table"] ?? .array([])
    return (local, String(SHA256.hex(rows.canonicalJSON).prefix(16)))
  }

  /// The X-Delta header of each rpc call since the last reset, nil for none.
  func deltaHeaders(_ emulator: Emulator) throws -> [String?] {
    defer { _ = try? emulator.admin("POST", "reset") }
    return try emulator.requests().filter { ($0["path"] as? String)?.contains("/rpc/") == true }.map {
      ($0["headers"] as? [String: String])?.first { $0.key.lowercased() == "x-delta" }?.value
    }
  }

  func change(_ emulator: Emulator, _ json: String) throws {
    try emulator.admin("POST", "versions/FRUITS", json: json)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func theLocalTableEqualsTheServersLatestVersionAfterEachRefresh(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try job(folder, emulator, target)

    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == [nil])
    #expect(try localRows(target) == serverRows(emulator).rows)
    #expect(try localVersion(target) == "v1")

    // v2: an update (pear's price), a delete and an insert.
    try change(emulator, #"{"update": [[2, 2, "pear", 0.61, 1]], "delete": [3], "insert": [[6, "kiwi", 0.9, 1]]}"#)
    let second = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v1-last"])
    #expect(second.notes.contains("delta v1→v2: 2 rows inserted, 2 deleted"), "\(second.notes)")
    #expect(try localRows(target) == serverRows(emulator).rows)
    #expect(try localVersion(target) == "v2")
    let hashes = try cacheHashes(target, emulator)
    #expect(hashes.local == hashes.server)

    // v3 and v4 between two refreshes: one delta covers both.
    try change(emulator, #"{"insert": [[7, "fig", 3.5, 0], [8, "lime", 0.3, 1]], "delete": [1]}"#)
    try change(emulator, #"{"update": [[6, 6, "kiwi", 0.95, 0]], "delete": [4]}"#)
    let third = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v2-last"])
    #expect(third.notes.contains("delta v2→v4: 3 rows inserted, 3 deleted"), "\(third.notes)")
    #expect(try localRows(target) == serverRows(emulator).rows)

    // v5, with each table object's keys in another order (name last).
    try emulator.admin("POST", "deltas", json: #"{"key_order": ["insert_rows", "delete_ids", "name"]}"#)
    try change(emulator, #"{"update": [[7, 7, "fig", null, 0]], "insert": [[9, "date", 7.25, 1]]}"#)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v4-last"])
    let server = try serverRows(emulator)
    #expect(server.version == "v5")
    #expect(try localRows(target) == server.rows)
    #expect(try localVersion(target) == "v5")

    // Nothing changed: an empty delta keeps the table as it is.
    let idle = try refresh(job)
    #expect(idle.notes.contains("delta v5→v5: 0 rows inserted, 0 deleted"), "\(idle.notes)")
    #expect(try localRows(target) == server.rows)
  }

  /// A delta applies only the server's changes, so it would keep an edit made to the table
  /// since dray loaded it: such a table asks for full data (`TableGuard`,
  /// `PostgresTableGuard`).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableChangedSinceItsLoadAsksForFullDataNotADelta(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try job(folder, emulator, target)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == [nil])
    try target.execute(#"UPDATE "FRUITS__output_table" SET price = price * 2"#)
    try change(emulator, #"{"insert": [[6, "kiwi", 0.9, 1]]}"#)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == [nil])
    #expect(try localRows(target) == serverRows(emulator).rows)
    // Untouched since, the table takes the next delta.
    try change(emulator, #"{"delete": [6]}"#)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v2-last"])
    #expect(try localRows(target) == serverRows(emulator).rows)
  }

  /// On PostgreSQL, a change to the table's definition or to its guard counts too: a column
  /// type altered, the guard's trigger dropped or disabled, or the table emptied.
  @Test(arguments: [
    #"ALTER TABLE "FRUITS__output_table" ALTER COLUMN name TYPE varchar(40)"#,
    #"DROP TRIGGER _dray_guard ON "FRUITS__output_table""#,
    #"ALTER TABLE "FRUITS__output_table" DISABLE TRIGGER _dray_guard"#,
    #"TRUNCATE "FRUITS__output_table""#,
    #"DELETE FROM "FRUITS__output_table" WHERE hhive_id = 1"#,
  ])
  func aPostgreSQLTableChangedFromOutsideAsksForFullData(change sql: String) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let job = try job(folder, emulator, target)
    _ = try refresh(job)
    try change(emulator, #"{"insert": [[6, "kiwi", 0.9, 1]]}"#)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == [nil, "v1-last"])
    try target.execute(sql)
    try change(emulator, #"{"delete": [6]}"#)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == [nil])
    #expect(try localRows(target) == serverRows(emulator).rows)
    try change(emulator, #"{"insert": [[7, "fig", 3.5, 0]]}"#)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v3-last"])
    #expect(try localRows(target) == serverRows(emulator).rows)
  }

  /// A job whose `sql` step edits the loaded table in place gets the same rows every run:
  /// the edited table asks for full data, so the edit never applies to last run's result.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aSQLStepEditingTheLoadedTableGivesTheSameRowsEveryRun(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try job(folder, emulator, target, then: #"UPDATE "FRUITS__output_table" SET price = price * 2"#)
    var runs: [[[String?]]] = []
    for _ in 1...3 {
      _ = try refresh(job)
      runs.append(try localRows(target))
    }
    #expect(try deltaHeaders(emulator) == [nil, nil, nil])
    #expect(runs[1] == runs[0])
    #expect(runs[2] == runs[0])
    #expect(try runs[0] != serverRows(emulator).rows)
  }

  /// On PostgreSQL a `sql` step cannot clear the guard's mark, nor turn its trigger off or
  /// change it: each statement is refused before any runs, and the edit made with it rolls
  /// back, so the table still takes a delta.
  @Test(arguments: [
    "UPDATE _dray_table_guard SET changed = false",
    "WITH cleared AS (UPDATE _dray_table_guard SET changed = false RETURNING 1) SELECT count(*) FROM cleared",
    "CREATE OR REPLACE FUNCTION _dray_guard_mark() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NULL; END $f$",
    #"DROP TRIGGER _dray_guard ON "FRUITS__output_table""#,
    #"ALTER TABLE "FRUITS__output_table" DISABLE TRIGGER ALL"#,
    #"ALTER TABLE "FRUITS__output_table" ENABLE REPLICA TRIGGER _dray_guard"#,
    "SET session_replication_role = replica",
  ])
  func anSQLStepCannotTurnOffThePostgreSQLTableGuard(sql: String) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    _ = try refresh(try job(folder, emulator, target))
    let harm = try job(folder, emulator, target, then: #"UPDATE "FRUITS__output_table" SET price = 0; "# + sql)
    let report = Runner(manifest: harm, console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 1)
    let step = try #require(report.steps.last)
    #expect(step.errorCode == "dray_table", "\(step.errorMessage ?? "")")
    #expect(step.errorMessage?.hasPrefix("'\(sql)' would ") == true, "\(step.errorMessage ?? "")")
    #expect(try localRows(target) == serverRows(emulator).rows)
    try change(emulator, #"{"insert": [[6, "kiwi", 0.9, 1]]}"#)
    _ = try deltaHeaders(emulator)
    _ = try refresh(try job(folder, emulator, target))
    #expect(try deltaHeaders(emulator) == ["v1-last"])
    #expect(try localRows(target) == serverRows(emulator).rows)
  }

  /// The same deltas give the same table, digest for digest, on SQLite and on PostgreSQL.
  @Test func theSameDeltasGiveTheSameTableOnBothDatabases() throws {
    var digests: [TargetDatabase.Kind: [[String?]]] = [:]
    for kind in TargetDatabase.Kind.allCases {
      let emulator = try Emulator()
      let folder = TemporaryDirectory()
      let target = try TargetDatabase(kind, folder: folder.path)
      let job = try job(folder, emulator, target)
      _ = try refresh(job)
      try change(emulator, #"{"update": [[2, 2, "pear", 0.61, 1]], "delete": [3, 5], "insert": [[6, "kiwi", 0.9, 1]]}"#)
      try emulator.admin("POST", "deltas", json: #"{"key_order": ["delete_ids", "insert_rows", "name"]}"#)
      try change(emulator, #"{"update": [[6, 6, "kiwi", null, 0]], "insert": [[7, "fig", 3.5, 0]], "delete": [1]}"#)
      _ = try refresh(job)
      #expect(try localVersion(target) == "v3", "\(kind)")
      digests[kind] = try target.rows(
        #"""
        SELECT hhive_id, id, name, price, in_season, (SELECT content_version FROM _dray_tables WHERE name = 'FRUITS__output_table')
        FROM "FRUITS__output_table" ORDER BY hhive_id
        """#)
    }
    #expect(digests[.sqlite]?.count == 4)
    #expect(digests[.sqlite] == digests[.postgres])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aServerThatAnswersFullDataInsteadOfADeltaIsHandled(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try job(folder, emulator, target)
    _ = try refresh(job)
    try change(emulator, #"{"delete": [1, 2], "insert": [[6, "kiwi", 0.9, 1]]}"#)
    try emulator.admin("POST", "deltas", json: #"{"enabled": false}"#)
    _ = try? deltaHeaders(emulator)
    let report = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v1-last"])
    #expect(report.notes.contains("asked for a delta from v1; the server sent full data"))
    #expect(try localRows(target) == serverRows(emulator).rows)
    #expect(try localVersion(target) == "v2")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDeltaTheServerRefusesFallsBackToFullData(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try job(folder, emulator, target)
    _ = try refresh(job)
    // The database claims a version the server never had (say, it came from another server).
    try target.execute("UPDATE _dray_tables SET content_version = 'v9'")
    _ = try? deltaHeaders(emulator)
    let report = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v9-last", nil])
    #expect(
      report.notes.first?.hasPrefix("the server refused a delta from v9 (HTTP 400 Bad Request") == true, "\(report.notes)")
    #expect(try localRows(target) == serverRows(emulator).rows)
    #expect(try localVersion(target) == "v1")
  }

  /// A delta must start at the version asked for and must not run backwards; otherwise it
  /// is dropped and full data fetched, so the table never holds rows under a wrong version.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDeltaFromAnotherBaseOrRunningBackwardsIsNotApplied(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try job(folder, emulator, target)
    _ = try refresh(job)
    try change(emulator, #"{"delete": [1], "insert": [[6, "kiwi", 0.9, 1]]}"#)
    try emulator.admin("POST", "deltas", json: #"{"wrong_range": "v9-v12"}"#)
    _ = try? deltaHeaders(emulator)
    let report = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v1-last", nil])
    #expect(
      report.notes.first
        == #"asked for a delta from v1; the server sent a delta from v9 (Content-Version: "delta v9-v12"), not from v1; asked for full data instead"#
    )
    #expect(try localRows(target) == serverRows(emulator).rows)
    #expect(try localVersion(target) == "v2")

    // The version held is v2 now; a delta "from v2 to v1" would set it back.
    try change(emulator, #"{"delete": [2]}"#)
    try emulator.admin("POST", "deltas", json: #"{"wrong_range": "v2-v1"}"#)
    let backwards = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v2-last", nil])
    #expect(
      backwards.notes.first
        == #"asked for a delta from v2; the server sent a delta that runs backwards (Content-Version: "delta v2-v1"); asked for full data instead"#
    )
    #expect(try localRows(target) == serverRows(emulator).rows)
    #expect(try localVersion(target) == "v3")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDeltaSentToARequestForFullDataFailsTheStep(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    try emulator.admin("POST", "deltas", json: #"{"delta_for_full": "v1-last"}"#)
    let report = Runner(manifest: try job(folder, emulator, target), console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 1)
    let load = try #require(report.steps.last)
    #expect(load.errorCode == "bad_answer")
    #expect(
      load.errorMessage
        == #"unexpected answer from \#(emulator.url)api/v1/rpc/FRUITS/: asked for full data, the server sent a delta (Content-Version: "delta v1-v1"); a delta cannot apply to tables of unknown version, so nothing was loaded"#
    )
    #expect(try localRows(target) == [])
    #expect(try localVersion(target) == nil)
  }

  /// On PostgreSQL a delta's value that does not fit its column is refused, by resource,
  /// table, row and column, and nothing of the delta is kept.
  @Test func aDeltaValueThatDoesNotFitIsRefusedOnPostgreSQL() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let job = try job(folder, emulator, target)
    _ = try refresh(job)
    let before = try localRows(target)
    try change(emulator, #"{"delete": [1], "insert": [[6, "kiwi", "cheap", 1]]}"#)
    let report = Runner(manifest: job, console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 1)
    let load = try #require(report.steps.last)
    #expect(
      load.errorMessage?.contains(
        #"resource FRUITS, table output_table, row 1, column 4: 'price' (DOUBLE, a double precision column): "cheap" is a string"#)
        == true, "\(load.errorMessage ?? "")")
    #expect(try localRows(target) == before)
    #expect(try localVersion(target) == "v1")
  }

  @Test func valuesThatDoNotFitTheirColumnReachTheStepReport() throws {
    let folder = TemporaryDirectory()
    let resources = try folder.write(
      "resources.json",
      """
      {"environment": "DocumentationExampleEnv", "project": "DocumentationExampleProj", "resources": {
        "ODD": {"lifetime": 60, "outputs": {"output_table": {
          "columns": [["n", "BIGINT", "int8"], ["price", "DOUBLE", "numeric"]],
          "rows": [[1, 0.5], ["two", 123456789012345678901234567890], [9223372036854775808, 2]]}}}}}
      """)
    let emulator = try Emulator(["--resources", resources])
    let report = try refresh(job(folder, emulator, resource: "ODD"))
    #expect(
      report.notes == [
        """
        3 values did not fit the column's declared type; each was stored exactly as the answer gave it (docs/store.md):
          table output_table, row 2, column 2 'n' (BIGINT): "two" is a string; stored as text
          table output_table, row 2, column 3 'price' (DOUBLE): 123456789012345678901234567890 is an integer beyond 64 bits; stored as text
          table output_table, row 3, column 2 'n' (BIGINT): 9223372036854775808 is an integer beyond 64 bits; stored as text
        """
      ])
    let store = try Store(path: folder.path + "/data.sqlite")
    #expect(
      try store.database.rows("SELECT typeof(n), n, typeof(price), price FROM ODD__output_table ORDER BY hhive_id").map(\.values) == [
        [.text("integer"), .integer(1), .text("real"), .real(0.5)],
        [.text("text"), .text("two"), .text("text"), .text("123456789012345678901234567890")],
        [.text("text"), .text("9223372036854775808"), .text("real"), .real(2)],
      ])
  }
}
