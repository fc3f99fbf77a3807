import DrayEngine
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// `query` and `sql` steps; those that any database runs alike run on both targets (one
/// suite, two databases).
@Suite struct QueryStepTests {
  /// The job's first lines on `target` (SQLite's `data/db.sqlite` when nil), with a `setup`
  /// step filling the table `fruit`.
  func header(_ target: TargetDatabase? = nil) -> String {
    """
    version: 1
    job: query
    \(target?.manifestBlock ?? "database: { path: data/db.sqlite }\n")steps:
      - id: setup
        sql: |
          CREATE TABLE fruit (id INTEGER, name TEXT, price DOUBLE PRECISION, note TEXT);
          INSERT INTO fruit VALUES (1, 'apple', 0.52, 'crisp, red'), (2, 'pear', NULL, ''), (3, 'say "plum"', 1.25, NULL);

    """
  }

  var header: String { header() }

  func run(_ steps: String, on kind: TargetDatabase.Kind = .sqlite) throws -> (TemporaryDirectory, RunReport) {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let (_, report) = try runJob(folder, header(target) + steps)
    return (folder, report)
  }

  /// Statements that would change dray's own tables, and the table each names.
  static let ownTableWrites: [(sql: String, table: String)] = [
    ("DROP TABLE _dray_runs", "_dray_runs"),
    ("DELETE FROM _dray_checkpoints", "_dray_checkpoints"),
    ("UPDATE _DRAY_RUNS SET status = 'x'", "_dray_runs"),
    ("INSERT INTO main._dray_runs(run_id) VALUES ('x')", "_dray_runs"),
    ("ALTER TABLE _dray_runs ADD COLUMN x", "_dray_runs"),
    ("ALTER TABLE _dray_checkpoints RENAME TO mine", "_dray_checkpoints"),
    ("CREATE TABLE _dray_tables(name TEXT)", "_dray_tables"),
    ("CREATE TEMP TABLE _dray_mine(a)", "_dray_mine"),
    ("CREATE INDEX mine ON _dray_runs(job)", "_dray_runs"),
    ("CREATE TRIGGER mine AFTER INSERT ON _dray_checkpoints BEGIN SELECT 1; END", "_dray_checkpoints"),
    ("CREATE VIEW _dray_view AS SELECT 1", "_dray_view"),
    // Only dray makes the table guard's triggers, which a statement may fire and drop.
    ("CREATE TRIGGER _dray_guard_update_x AFTER UPDATE ON kept BEGIN SELECT 1; END", "_dray_guard_update_x"),
  ]

  /// An sql step may read dray's own tables (`_dray_...`) but not change them: the
  /// statement is refused, naming the table, the step's earlier statements roll back and
  /// the journal still works for the next run.
  @Test(arguments: QueryStepTests.ownTableWrites.map(\.sql))
  func anSQLStepMayNotChangeDraysOwnTables(sql: String) throws {
    let table = try #require(QueryStepTests.ownTableWrites.first { $0.sql == sql }?.table)
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder, header + "  - id: harm\n    sql: \"CREATE TABLE kept(a); \(sql);\"\n")
    #expect(report.exitCode == 1)
    let harm = try #require(report.steps.first { $0.id == "harm" })
    #expect(harm.status == .failed)
    #expect(harm.errorCode == "dray_table")
    #expect(
      harm.errorMessage
        == "'\(sql)' would change dray's own table \(table); tables named _dray_... hold the run journal, checkpoints and bookkeeping, which dray alone writes. Reading them is fine; create and write only tables of your own, named without that prefix"
    )
    let database = try Database(path: folder.path + "/data/db.sqlite")
    #expect(try !database.tableExists("kept"))
    #expect(try database.rows("SELECT count(*) FROM _dray_runs")[0].values[0] == .integer(1))
    // The journal is whole: the next run records its end and fails the same way.
    let (_, again) = try runJob(folder, header + "  - id: harm\n    sql: \"CREATE TABLE kept(a); \(sql);\"\n")
    #expect(again.errorMessage == nil)
    #expect(again.steps.first { $0.id == "harm" }?.errorCode == "dray_table")
    #expect(try database.rows("SELECT status FROM _dray_runs").map { try $0["status"] } == [.text("failed"), .text("failed")])
  }

  @Test func writableSchemaIsRefusedInAnSQLStep() throws {
    let folder = TemporaryDirectory()
    let sql = "PRAGMA writable_schema = ON"
    let (_, report) = try runJob(folder, header + "  - id: harm\n    sql: \"CREATE TABLE kept(a); \(sql);\"\n")
    let harm = try #require(report.steps.first { $0.id == "harm" })
    #expect(harm.errorCode == "dray_table")
    #expect(
      harm.errorMessage
        == "'\(sql)' would let the schema table be edited directly, dray's own tables' definitions included; PRAGMA writable_schema is refused in sql and query steps"
    )
    let database = try Database(path: folder.path + "/data/db.sqlite")
    #expect(try !database.tableExists("kept"))
    // Reading the setting stays allowed.
    let (_, read) = try runJob(folder, header + "  - id: look\n    sql: PRAGMA writable_schema\n")
    #expect(read.steps.first { $0.id == "look" }?.status == .succeeded)
  }

  /// SQLite compiles a trigger's body only into a statement that fires it: a trigger on a
  /// table of the user's whose body changes dray's tables would run unchecked when a load
  /// writes that table. The step that creates it fails, naming the trigger.
  @Test(arguments: ["", "TEMP "])
  func aTriggerThatWouldChangeDraysTablesIsRefused(temp: String) throws {
    let folder = TemporaryDirectory()
    let trigger = "CREATE \(temp)TRIGGER sneaky AFTER UPDATE OF name ON fruit BEGIN DELETE FROM _dray_checkpoints; END"
    let (_, report) = try runJob(folder, header + "  - id: harm\n    sql: \"CREATE TABLE kept(a); \(trigger);\"\n")
    let harm = try #require(report.steps.first { $0.id == "harm" })
    #expect(harm.status == .failed)
    #expect(harm.errorCode == "dray_table")
    #expect(
      harm.errorMessage
        == "trigger sneaky, fired by any write to its table (dray's loads included), would change dray's own table _dray_checkpoints; tables named _dray_... hold the run journal, checkpoints and bookkeeping, which dray alone writes. Reading them is fine; create and write only tables of your own, named without that prefix"
    )
    let database = try Database(path: folder.path + "/data/db.sqlite")
    #expect(try database.rows("SELECT name FROM sqlite_schema WHERE type = 'trigger' OR name = 'kept'").isEmpty)
  }

  @Test func aTriggerThatOnlyReadsDraysTablesIsFine() throws {
    let (folder, report) = try run(
      """
        - id: triggers
          sql: |
            CREATE TABLE tally(n INTEGER);
            CREATE TRIGGER counted AFTER INSERT ON fruit BEGIN INSERT INTO tally SELECT count(*) FROM _dray_runs; END;
            CREATE VIEW fruity AS SELECT * FROM fruit;
            CREATE TRIGGER through INSTEAD OF INSERT ON fruity BEGIN INSERT INTO fruit(id) VALUES (NEW.id); END;
            INSERT INTO fruity(id) VALUES (4);
      """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try Database(path: folder.path + "/data/db.sqlite").rows("SELECT n FROM tally")[0]["n"] == .integer(1))
  }

  @Test func aQueryStepMayReadDraysOwnTablesButNotChangeThem() throws {
    let (_, report) = try run(
      """
        - id: read
          query: { sql: "SELECT count(*) AS n FROM _dray_runs JOIN _dray_checkpoints USING (run_id)", expect: { n: { min: 1 } } }
        - id: reads-in-sql
          sql: CREATE TABLE runs AS SELECT * FROM _dray_runs;
        - id: write
          query: { sql: "DELETE FROM _dray_checkpoints RETURNING step_id" }
      """)
    #expect(report.steps.map(\.status) == [.succeeded, .succeeded, .succeeded, .failed])
    #expect(report.steps[3].errorCode == "dray_table")
    #expect(
      report.steps[3].errorMessage?.hasPrefix(
        "'DELETE FROM _dray_checkpoints RETURNING step_id' would change dray's own table _dray_checkpoints;") == true)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func rowsGoToTheFileInEachFormat(kind: TargetDatabase.Kind) throws {
    let (folder, report) = try run(
      """
        - id: json
          query: { sql: SELECT * FROM fruit ORDER BY id, output: out/rows.json }
        - id: ndjson
          query: { sql: SELECT * FROM fruit ORDER BY id, output: out/rows.ndjson, format: ndjson }
        - id: csv
          query: { sql: SELECT * FROM fruit ORDER BY id, output: out/rows.csv, format: csv }
      """, on: kind)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(
      try text(folder.path + "/out/rows.json")
        == #"{"status":"ok","result":{"database":{"records":[{"id":1,"name":"apple","price":0.52,"note":"crisp, red"},{"id":2,"name":"pear","price":null,"note":""},{"id":3,"name":"say \"plum\"","price":1.25,"note":null}]}}}"#
        + "\n")
    #expect(
      try text(folder.path + "/out/rows.ndjson") == """
        {"id":1,"name":"apple","price":0.52,"note":"crisp, red"}
        {"id":2,"name":"pear","price":null,"note":""}
        {"id":3,"name":"say \\"plum\\"","price":1.25,"note":null}

        """)
    #expect(
      try text(folder.path + "/out/rows.csv")
        == "id,name,price,note\r\n1,apple,0.52,\"crisp, red\"\r\n2,pear,,\"\"\r\n3,\"say \"\"plum\"\"\",1.25,\r\n")
    #expect(report.steps[3].rows == ["out/rows.csv": 3])
    #expect(report.steps[3].outputs == ["out/rows.csv"])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aQueryWithoutAFileWritesNoRowsAndSaysWhatItReturned(kind: TargetDatabase.Kind) throws {
    let (_, report) = try run(
      """
        - id: check
          query: { sql: SELECT * FROM fruit, expect: { id: { min: 1 } } }
      """, on: kind)
    #expect(report.steps[1].status == .succeeded)
    #expect(report.steps[1].rows.isEmpty)
    #expect(report.steps[1].notes == ["the query returned 3 rows"])
    #expect(report.totals.rows == 0)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aFailedExpectationNamesTheColumnTheConditionAndTheValue(kind: TargetDatabase.Kind) throws {
    let (folder, report) = try run(
      """
        - id: check
          query:
            sql: SELECT count(*) AS n FROM fruit
            output: out/count.json
            expect: { n: { min: 200 } }
      """, on: kind)
    #expect(report.exitCode == 1)
    #expect(report.steps[1].errorCode == "expectation_failed")
    #expect(report.steps[1].errorMessage == "expectation failed: n = 3, expected at least 200")
    #expect(try text(folder.path + "/out/count.json") == #"{"status":"ok","result":{"database":{"records":[{"n":3}]}}}"# + "\n")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func everyFailedExpectationIsListed(kind: TargetDatabase.Kind) throws {
    let (_, report) = try run(
      """
        - id: check
          query:
            sql: SELECT count(*) AS n, min(name) AS first, max(price) AS top FROM fruit
            expect:
              n: { min: 1, max: 2 }
              first: { equals: pear }
              top: { equals: 1.25 }
              missing: { min: 0 }
      """, on: kind)
    #expect(
      report.steps[1].errorMessage
        == #"3 expectations failed: n = 3, expected at most 2; first = "apple", expected "pear"; the query has no column 'missing' (its columns: n, first, top)"#
    )
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func noRowsAndNonNumbersAreSaidPlainly(kind: TargetDatabase.Kind) throws {
    let (_, empty) = try run(
      """
        - id: check
          query: { sql: SELECT id FROM fruit WHERE id > 100, expect: { id: { min: 1, max: 9 } } }
      """, on: kind)
    #expect(empty.steps[1].errorMessage == "expectation failed: the query returned no rows, expected id at least 1 and at most 9")
    let (_, text) = try run(
      """
        - id: check
          query: { sql: SELECT name FROM fruit ORDER BY id, expect: { name: { min: 1 } } }
      """, on: kind)
    #expect(text.steps[1].errorMessage == #"expectation failed: name = "apple" is not a number, expected at least 1"#)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aQueryRunsOneStatement(kind: TargetDatabase.Kind) throws {
    let (_, report) = try run(
      """
        - id: check
          query: { sql: "SELECT 1; DELETE FROM fruit" }
      """, on: kind)
    #expect(
      report.steps[1].errorMessage == "a query runs one statement; found another after the first: DELETE FROM fruit; use a sql step for it")
    // What follows is never prepared: a second statement on a table that does not exist is
    // still a second statement, not "no such table".
    let (_, missing) = try run(
      """
        - id: check
          query: { sql: "SELECT 1; DROP TABLE x" }
      """, on: kind)
    #expect(
      missing.steps[1].errorMessage == "a query runs one statement; found another after the first: DROP TABLE x; use a sql step for it")
    let (_, comments) = try run(
      """
        - id: check
          query: { sql: "SELECT count(*) AS n FROM fruit; -- done\n;", expect: { n: { equals: 3 } } }
      """, on: kind)
    #expect(comments.exitCode == 0, "\(comments.steps.compactMap(\.errorMessage))")
  }

  /// Integers compare as integers: through doubles 9223372036854775807 would equal
  /// 9223372036854775806 (both round to 2^63).
  @Test func largeIntegersCompareExactly() throws {
    let (_, report) = try run(
      """
        - id: check
          query:
            sql: SELECT 9223372036854775807 AS n, 9007199254740993 AS m, 0.5 AS r
            expect:
              n: { equals: 9223372036854775806, max: 9223372036854775806 }
              m: { equals: 9007199254740992, min: 9007199254740992.0, max: 9007199254740992.0 }
              r: { equals: 0.5, min: 0, max: 1 }
      """)
    #expect(
      report.steps[1].errorMessage
        == "4 expectations failed: n = 9223372036854775807, expected at most 9223372036854775806; n = 9223372036854775807, expected 9223372036854775806; "
        + "m = 9007199254740993, expected at most 9007199254740992; m = 9007199254740993, expected 9007199254740992")
    let (_, exact) = try run(
      """
        - id: check
          query:
            sql: SELECT 9223372036854775807 AS n, -9223372036854775808 AS low, 2.0 AS two, 'x' AS s
            expect:
              n: { equals: 9223372036854775807, min: 9223372036854775807, max: 9223372036854775807 }
              low: { equals: -9223372036854775808, max: -9223372036854775808 }
              two: { equals: 2 }
              s: { equals: x }
      """)
    #expect(exact.exitCode == 0, "\(exact.steps.compactMap(\.errorMessage))")
  }

  @Test func anInfiniteRealIsANumberNotNull() throws {
    let (_, report) = try run(
      """
        - id: check
          query: { sql: "SELECT 1e999 AS big, -1e999 AS small", expect: { big: { max: 10, min: 0 }, small: { min: 0 } } }
      """)
    #expect(
      report.steps[1].errorMessage == "2 expectations failed: big = Infinity, expected at most 10; small = -Infinity, expected at least 0")
  }
}

@Suite struct QueryNumberTextTests {
  /// TEXT counts as a number only when, trimmed of ASCII spaces, it is a JSON number.
  @Test func onlyTextThatIsAJSONNumberCountsAsANumber() throws {
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      """
      version: 1
      job: numbers
      database: { path: db.sqlite }
      steps:
        - id: junk
          query:
            sql: SELECT 'inf' AS a, 'infinity' AS b, '0x10' AS c, '0x1p3' AS d, ' 12 ' AS e, '-0.5e1' AS f, '012' AS g
            expect: { a: { min: 1000000 }, b: { min: 0 }, c: { min: 16 }, d: { max: 8 }, e: { min: 12, max: 12 }, f: { max: -5 }, g: { min: 0 } }
      """)
    #expect(report.steps[0].status == .failed)
    let message = report.steps[0].errorMessage ?? ""
    for expected in [
      #"a = "inf" is not a number, expected at least 1000000"#, #"b = "infinity" is not a number, expected at least 0"#,
      #"c = "0x10" is not a number, expected at least 16"#, #"d = "0x1p3" is not a number, expected at most 8"#,
      #"g = "012" is not a number, expected at least 0"#,
    ] {
      #expect(message.contains(expected), "\(message)")
    }
    #expect(!message.contains("e = "), "\(message)")
    #expect(!message.contains("f = "), "\(message)")
  }
}
