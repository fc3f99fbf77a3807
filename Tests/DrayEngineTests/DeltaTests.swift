import DrayEngine
import DrayJSON
import DrayManifest
import DrayModel
import DrayStore
import DrayTestSupport
import Foundation
import Testing

/// `table_stream` with `delta: true` against the emulator's versioned FRUITS: after every
/// refresh the local table equals the server's latest version.
@Suite struct DeltaTests {
  func job(_ folder: TemporaryDirectory, _ emulator: Emulator, resource: String = "FRUITS") throws -> Manifest {
    let path = try folder.write(
      "delta.yaml",
      """
      version: 1
      job: delta
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: demo, password: demo-password }
      database: { path: data.sqlite }
      retry: { count: 1, interval: 100ms }
      steps:
        - id: schemes
          schemes: {}
        - id: load
          table_stream: { resource: \(resource), delta: true }
      """)
    return try ManifestLoader(environment: [:]).load(path: path)
  }

  /// Runs the job and returns the load step's report.
  func refresh(_ job: Manifest) throws -> StepReport {
    let report = Runner(manifest: job, console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    return try #require(report.steps.last)
  }

  /// The server's latest rows of a resource's output_table, row id first.
  func serverRows(_ emulator: Emulator, _ resource: String = "FRUITS") throws -> (version: String, rows: [[SQLValue]]) {
    let answer = try JSONValue(parsing: Array(emulator.admin("GET", "versions/\(resource)")))
    let rows = answer["tables"]?["output_table"]?.arrayValue ?? []
    let values = rows.map { row in
      (row.arrayValue ?? []).map { value -> SQLValue in
        switch value {
        case .integer(let i): .integer(i)
        case .number(let n): .real(Double(n)!)
        case .string(let s): .text(s)
        default: .null
        }
      }
    }
    return ("v\(answer["version"]?.intValue ?? -1)", values)
  }

  func localRows(_ folder: TemporaryDirectory) throws -> [[SQLValue]] {
    let store = try Store(path: folder.path + "/data.sqlite")
    return try store.database.rows("SELECT * FROM FRUITS__output_table ORDER BY hhive_id").map { $0.map(\.1) }
  }

  func localVersion(_ folder: TemporaryDirectory) throws -> String? {
    try Store(path: folder.path + "/data.sqlite").contentVersion(of: "FRUITS__output_table")
  }

  /// The cache hash recorded for FRUITS, and the one the emulator gives the server's latest
  /// rows (the first 16 hex digits of SHA-256 of their canonical JSON).
  func cacheHashes(_ folder: TemporaryDirectory, _ emulator: Emulator) throws -> (local: String?, server: String) {
    let store = try Store(path: folder.path + "/data.sqlite")
    let local = try store.records(resource: "FRUITS").first?.cacheHash
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

  @Test func theLocalTableEqualsTheServersLatestVersionAfterEachRefresh() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = try job(folder, emulator)

    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == [nil])
    #expect(try localRows(folder) == serverRows(emulator).rows)
    #expect(try localVersion(folder) == "v1")

    // v2: an update (pear's price), a delete and an insert.
    try change(emulator, #"{"update": [[2, 2, "pear", 0.61, 1]], "delete": [3], "insert": [[6, "kiwi", 0.9, 1]]}"#)
    let second = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v1-last"])
    #expect(second.notes.contains("delta v1→v2: 2 rows inserted, 2 deleted"))
    #expect(try localRows(folder) == serverRows(emulator).rows)
    #expect(try localVersion(folder) == "v2")
    let hashes = try cacheHashes(folder, emulator)
    #expect(hashes.local == hashes.server)

    // v3 and v4 between two refreshes: one delta covers both.
    try change(emulator, #"{"insert": [[7, "fig", 3.5, 0], [8, "lime", 0.3, 1]], "delete": [1]}"#)
    try change(emulator, #"{"update": [[6, 6, "kiwi", 0.95, 0]], "delete": [4]}"#)
    let third = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v2-last"])
    #expect(third.notes.contains("delta v2→v4: 3 rows inserted, 3 deleted"))
    #expect(try localRows(folder) == serverRows(emulator).rows)

    // v5, with each table object's keys in another order (name last).
    try emulator.admin("POST", "deltas", json: #"{"key_order": ["insert_rows", "delete_ids", "name"]}"#)
    try change(emulator, #"{"update": [[7, 7, "fig", null, 0]], "insert": [[9, "date", 7.25, 1]]}"#)
    _ = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v4-last"])
    let server = try serverRows(emulator)
    #expect(server.version == "v5")
    #expect(try localRows(folder) == server.rows)
    #expect(try localVersion(folder) == "v5")

    // Nothing changed: an empty delta keeps the table as it is.
    let idle = try refresh(job)
    #expect(idle.notes.contains("delta v5→v5: 0 rows inserted, 0 deleted"))
    #expect(try localRows(folder) == server.rows)
  }

  @Test func aServerThatAnswersFullDataInsteadOfADeltaIsHandled() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = try job(folder, emulator)
    _ = try refresh(job)
    try change(emulator, #"{"delete": [1, 2], "insert": [[6, "kiwi", 0.9, 1]]}"#)
    try emulator.admin("POST", "deltas", json: #"{"enabled": false}"#)
    _ = try? deltaHeaders(emulator)
    let report = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v1-last"])
    #expect(report.notes.contains("asked for a delta from v1; the server sent full data"))
    #expect(try localRows(folder) == serverRows(emulator).rows)
    #expect(try localVersion(folder) == "v2")
  }

  @Test func aDeltaTheServerRefusesFallsBackToFullData() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = try job(folder, emulator)
    _ = try refresh(job)
    // The database claims a version the server never had (say, it came from another server).
    let store = try Store(path: folder.path + "/data.sqlite")
    try store.database.execute("UPDATE _dray_tables SET content_version = 'v9'")
    _ = try? deltaHeaders(emulator)
    let report = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v9-last", nil])
    #expect(
      report.notes.first?.hasPrefix("the server refused a delta from v9 (HTTP 400 Bad Request") == true, "\(report.notes)")
    #expect(try localRows(folder) == serverRows(emulator).rows)
    #expect(try localVersion(folder) == "v1")
  }

  /// A delta must start at the version asked for and must not run backwards; otherwise it
  /// is dropped and full data fetched, so the table never holds rows under a wrong version.
  @Test func aDeltaFromAnotherBaseOrRunningBackwardsIsNotApplied() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = try job(folder, emulator)
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
    #expect(try localRows(folder) == serverRows(emulator).rows)
    #expect(try localVersion(folder) == "v2")

    // The version held is v2 now; a delta "from v2 to v1" would set it back.
    try change(emulator, #"{"delete": [2]}"#)
    try emulator.admin("POST", "deltas", json: #"{"wrong_range": "v2-v1"}"#)
    let backwards = try refresh(job)
    #expect(try deltaHeaders(emulator) == ["v2-last", nil])
    #expect(
      backwards.notes.first
        == #"asked for a delta from v2; the server sent a delta that runs backwards (Content-Version: "delta v2-v1"); asked for full data instead"#
    )
    #expect(try localRows(folder) == serverRows(emulator).rows)
    #expect(try localVersion(folder) == "v3")
  }

  @Test func aDeltaSentToARequestForFullDataFailsTheStep() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    try emulator.admin("POST", "deltas", json: #"{"delta_for_full": "v1-last"}"#)
    let report = Runner(manifest: try job(folder, emulator), console: Console(level: .quiet), cancellation: Cancellation()).run()
    #expect(report.exitCode == 1)
    let load = try #require(report.steps.last)
    #expect(load.errorCode == "bad_answer")
    #expect(
      load.errorMessage
        == #"unexpected answer from \#(emulator.url)api/v1/rpc/FRUITS/: asked for full data, the server sent a delta (Content-Version: "delta v1-v1"); a delta cannot apply to tables of unknown version, so nothing was loaded"#
    )
    #expect(try localRows(folder) == [])
    #expect(try localVersion(folder) == nil)
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
      try store.database.rows("SELECT typeof(n), n, typeof(price), price FROM ODD__output_table ORDER BY hhive_id").map { $0.map(\.1) } == [
        [.text("integer"), .integer(1), .text("real"), .real(0.5)],
        [.text("text"), .text("two"), .text("text"), .text("123456789012345678901234567890")],
        [.text("text"), .text("9223372036854775808"), .text("real"), .real(2)],
      ])
  }
}
