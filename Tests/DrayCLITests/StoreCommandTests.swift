import DrayTestSupport
import Foundation
import Testing

/// `dray tables` and `dray query`, run as the built binary on a database a real run filled.
@Suite struct StoreCommandTests {
  /// One database for the suite: FRUITS loaded for the default parameters and for region EU.
  /// The commands only read it.
  static let shared: Result<(TemporaryDirectory, String), any Error> = Result {
    let folder = TemporaryDirectory()
    return (folder, try loadDatabase(folder))
  }

  func loadedDatabase() throws -> String {
    try StoreCommandTests.shared.get().1
  }

  static func loadDatabase(_ folder: TemporaryDirectory) throws -> String {
    let emulator = try Emulator()
    let job = try folder.write(
      "job.yaml",
      """
      version: 1
      job: store-commands
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: demo, password: demo-password }
      database: { path: fruits.sqlite }
      steps:
        - id: all
          table_stream: { resource: FRUITS }
        - id: eu
          table_stream: { resource: FRUITS, params: { region: EU } }
      """)
    let run = try Command.dray(["run", job, "--quiet"])
    #expect(run.status == 0, "\(run.output)")
    return folder.path + "/fruits.sqlite"
  }

  @Test func tablesPrintsThePhysicalNamesTheSDKWouldGive() throws {
    let db = try loadedDatabase()
    // {"region":"EU"} hashes to 8 hex digits of its SHA-256 (platform-api.md §7).
    let eu = "FRUITS__output_table__b655ebc6"

    let all = try Command.dray(["tables", db])
    #expect(all.status == 0)
    #expect(all.stdout == "FRUITS__output_table\n\(eu)\n")

    #expect(try Command.dray(["tables", db, "--resource", "FRUITS"]).stdout == "FRUITS__output_table\n")
    // An empty string is {}, as the SDK's getTablesName takes it.
    for empty in ["", " "] {
      #expect(try Command.dray(["tables", db, "--resource", "FRUITS", "--params", empty]).stdout == "FRUITS__output_table\n")
    }
    #expect(try Command.dray(["tables", db, "--resource", "FRUITS", "--params", #"{"region": "EU"}"#]).stdout == "\(eu)\n")
    let one = try Command.dray(["tables", db, "--resource", "FRUITS", "--params", #"{"region":"EU"}"#, "--table", "output_table"])
    #expect(one.stdout == "\(eu)\n")

    let json = try Command.dray(["tables", db, "--resource", "FRUITS", "--json"])
    #expect(
      json.stdout.hasPrefix(
        #"[{"name":"FRUITS__output_table","resource":"FRUITS","table":"output_table","params":{},"rows":5,"content_version":"v1","etag":""#)
    )
    #expect(json.stdout.contains(#""cache_hash":""#))

    let missing = try Command.dray(["tables", db, "--resource", "FRUITS", "--params", #"{"region":"JP"}"#])
    #expect(missing.status == 1)
    #expect(missing.stdout == "")
    #expect(
      missing.stderr
        == "dray: \(db) holds no table of resource 'FRUITS' for params {\"region\":\"JP\"}; a schemes or table_stream step would create \"FRUITS__output_table__08982081\"\n"
    )
    let noSuchTable = try Command.dray(["tables", db, "--resource", "FRUITS", "--table", "nope"])
    #expect(noSuchTable.status == 1)
    #expect(noSuchTable.stderr == "dray: resource 'FRUITS' has no output table 'nope' in \(db); its tables: output_table\n")
  }

  @Test func tablesRefusesAWrongCommandLineAndNeverWritesTheDatabase() throws {
    let folder = TemporaryDirectory()
    let plain = folder.path + "/plain.sqlite"
    _ = try Command.run("/usr/bin/sqlite3", [plain, "CREATE TABLE mine(a)"])
    let before = try Data(contentsOf: URL(fileURLWithPath: plain))
    let listed = try Command.dray(["tables", plain])
    #expect(listed.status == 0)
    #expect(listed.stdout == "")
    #expect(try Data(contentsOf: URL(fileURLWithPath: plain)) == before)

    let badParams = try Command.dray(["tables", plain, "--resource", "R", "--params", "[1]"])
    #expect(badParams.status == 2)
    #expect(badParams.stderr.hasPrefix(#"dray: --params must be a JSON object, such as '{"region":"EU"}'"#))
    // Text that is not JSON: one line naming what is wrong and the byte it is at.
    let notJSON = try Command.dray(["tables", plain, "--resource", "R", "--params", "{region: EU}"])
    #expect(notJSON.status == 2)
    #expect(
      notJSON.stderr
        == "dray: --params must be a JSON object, such as '{\"region\":\"EU\"}': expected a key (a string) in an object, found 'region', at byte 1\nRun 'dray help' for usage.\n"
    )
    // JSON has no comments: one is refused, saying so, where it starts and what to do.
    for (params, at, opening) in [(#"{"region": "EU" /* Europe */}"#, 16, "/*"), ("// Europe\n{\"region\": \"EU\"}", 0, "//")] {
      let commented = try Command.dray(["tables", plain, "--resource", "R", "--params", params])
      #expect(commented.status == 2)
      #expect(
        commented.stderr
          == "dray: --params must be a JSON object, such as '{\"region\":\"EU\"}': '\(opening)' starts a comment, and JSON has no comments: remove it, at byte \(at)\nRun 'dray help' for usage.\n"
      )
    }
    let noResource = try Command.dray(["tables", plain, "--table", "t"])
    #expect(noResource.status == 2)
    #expect(noResource.stderr.hasPrefix("dray: --params and --table choose among the tables of one resource; add --resource NAME"))
    let noFile = try Command.dray(["tables", folder.path + "/none.sqlite"])
    #expect(noFile.status == 1)
    #expect(noFile.stderr == "dray: no database at \(folder.path)/none.sqlite; check the path (a run of the job creates it)\n")
  }

  @Test func queryAnswersInTheSDKShape() throws {
    let db = try loadedDatabase()
    let rows = try Command.dray(["query", db, "SELECT hhive_id, name, price FROM FRUITS__output_table WHERE hhive_id <= 2 ORDER BY 1"])
    #expect(rows.status == 0)
    #expect(
      rows.stdout
        == #"{"status":"ok","result":{"database":{"records":[{"hhive_id":1,"name":"apple","price":0.52},{"hhive_id":2,"name":"pear","price":null}]}}}"#
        + "\n")

    let values = try Command.dray([
      "query", db, #"SELECT 9223372036854775807 AS big, 0.1 + 0.2 AS sum, 'é"\' AS text, x'00ff' AS blob, 1e999 AS inf"#,
    ])
    #expect(
      values.stdout
        == #"{"status":"ok","result":{"database":{"records":[{"big":9223372036854775807,"sum":0.30000000000000004,"text":"é\"\\","blob":"AP8=","inf":null}]}}}"#
        + "\n")

    let none = try Command.dray(["query", db, "SELECT * FROM FRUITS__output_table WHERE 0"])
    #expect(none.stdout == #"{"status":"ok","result":{"database":{"records":[]}}}"# + "\n")
  }

  @Test func queryErrorsUseTheErrorShapeAndExitOne() throws {
    let db = try loadedDatabase()
    let cases = [
      ("SELECT * FROM nope", "no such table: nope"),
      ("SELECT 1; SELECT 2", "one statement at a time; found another after the first: SELECT 2"),
      // The second statement is never prepared: its missing table is not the problem.
      ("SELECT 1; DROP TABLE x", "one statement at a time; found another after the first: DROP TABLE x"),
      ("SELECT 1; ;\n  DELETE FROM x;", "one statement at a time; found another after the first: DELETE FROM x"),
      ("DELETE FROM FRUITS__output_table", StoreCommandTests.notReadOnly),
      ("/* nothing */", "no SQL statement to run"),
    ]
    for (sql, message) in cases {
      let result = try Command.dray(["query", db, sql])
      #expect(result.status == 1, "\(sql)")
      #expect(result.stdout == #"{"status":"error","error":"\#(message)"}"# + "\n")
    }
    #expect(try Command.dray(["query", db, "SELECT count(*) AS n FROM FRUITS__output_table"]).stdout.contains(#"[{"n":5}]"#))
    #expect(try Command.dray(["query", db, "SELECT 1 AS n; -- a comment\n;"]).stdout.contains(#"[{"n":1}]"#))
    let missing = try Command.dray(["query", db + ".missing", "SELECT 1"])
    #expect(missing.status == 1)
    #expect(missing.stdout == #"{"status":"error","error":"no database at \#(db).missing"}"# + "\n")
  }

  static let notReadOnly =
    "dray query only reads, and this statement would change a database or write a file (SQLite's sqlite3_stmt_readonly); use SELECT, WITH or a read-only PRAGMA, and change data with an sql step in a job"

  /// A read-only connection still lets `VACUUM INTO` write a new file and `PRAGMA
  /// journal_mode` try to change the database: both are refused before they run.
  @Test func queryRefusesStatementsThatAreNotReadOnly() throws {
    let db = try loadedDatabase()
    let folder = TemporaryDirectory()
    let before = try Data(contentsOf: URL(fileURLWithPath: db))
    for sql in [
      "VACUUM INTO '\(folder.path)/vac.db'", "PRAGMA journal_mode=delete", "PRAGMA user_version = 7", "VACUUM",
      "CREATE TEMP TABLE t(a)", "INSERT INTO FRUITS__output_table DEFAULT VALUES", "DROP TABLE _dray_runs",
    ] {
      let result = try Command.dray(["query", db, sql])
      #expect(result.status == 1, "\(sql)")
      #expect(result.stdout == #"{"status":"error","error":"\#(StoreCommandTests.notReadOnly)"}"# + "\n", "\(sql)")
    }
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/vac.db"))
    // ATTACH is read-only as SQLite defines it; on the read-only connection it cannot create
    // a file, nor open one for writing through a URI.
    let attach = try Command.dray(["query", db, "ATTACH '\(folder.path)/new.db' AS n"])
    #expect(attach.status == 1)
    #expect(attach.stdout == #"{"status":"error","error":"unable to open database: \#(folder.path)/new.db"}"# + "\n")
    let uri = try Command.dray(["query", db, "ATTACH 'file:\(folder.path)/uri.db?mode=rwc' AS n"])
    #expect(uri.status == 1)
    #expect(uri.stdout == #"{"status":"error","error":"access mode not allowed: rwc"}"# + "\n")
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    // Reading stays allowed, PRAGMAs that only read included. `PRAGMA journal_mode` is not
    // read-only even without a value (SQLite may change the mode); its table form is.
    #expect(try Command.dray(["query", db, "PRAGMA journal_mode"]).status == 1)
    #expect(try Command.dray(["query", db, "SELECT * FROM pragma_journal_mode"]).stdout.contains(#""journal_mode":"wal""#))
    #expect(try Command.dray(["query", db, "PRAGMA user_version"]).stdout.contains(#""user_version":0"#))
    #expect(try Command.dray(["query", db, "SELECT count(*) AS n FROM _dray_runs"]).status == 0)
    #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
  }

  @Test func queryStreamsManyRecords() throws {
    let folder = TemporaryDirectory()
    let db = folder.path + "/empty.sqlite"
    _ = try Command.run("/usr/bin/sqlite3", [db, "CREATE TABLE t(a)"])
    let result = try Command.dray([
      "query", db, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) SELECT i FROM n",
    ])
    #expect(result.status == 0)
    let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    let records = ((object?["result"] as? [String: Any])?["database"] as? [String: Any])?["records"] as? [[String: Int]]
    #expect(records?.count == 200_000)
    #expect(records?.last?["i"] == 200_000)
  }
}
