import DrayEngine
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A platform answer the tables already hold is not loaded again (`Store.holdsAnswer`), and
/// an answer that is not what was expected names what it is.
@Suite struct UnchangedAnswerTests {
  static let steps = """
    steps:
      - id: fruits
        table_stream: { resource: FRUITS }
    """

  func rows(_ folder: TemporaryDirectory, _ sql: String) throws -> [[SQLValue]] {
    try Database(path: folder.path + "/data.sqlite").rows(sql).map(\.values)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func theSameAnswerAgainRewritesNoRowAndATableChangedSinceIsLoadedAgain(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = JobText.header(job: "same", emulator: emulator) + target.manifestBlock + Self.steps
    let (_, first) = try runJob(folder, job)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(!first.steps[0].unchanged)
    let table = "FRUITS__output_table"
    // Quoted on PostgreSQL, which folds an unquoted name to lower case.
    let named = kind == .sqlite ? table : "\"\(table)\""
    try target.auditWrites(on: named)

    let (_, second) = try runJob(folder, job)
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    let step = second.steps[0]
    #expect(step.unchanged)
    #expect(step.rows == [table: 5])
    let requests = try emulator.requests().filter { ($0["path"] as? String) == "/api/v1/rpc/FRUITS/" }
    let headers = try #require(requests.last?["headers"] as? [String: String])
    #expect(headers["Accept-Encoding"] == "gzip")
    #expect(
      step.notes.contains {
        $0.hasPrefix("unchanged: every table already holds this answer (ETag \"") && $0.hasSuffix("; no row rewritten")
      })
    let audited = try target.auditedWrites(on: named)
    #expect(audited.events == [])
    #expect(audited.watching)

    // A row deleted behind dray's back: the table guard saw it, so the same answer is
    // loaded again and the table is whole.
    try target.execute("DELETE FROM \(named) WHERE id = 2")
    let (_, third) = try runJob(folder, job)
    #expect(third.exitCode == 0)
    #expect(!third.steps[0].unchanged)
    #expect(try target.rows("SELECT count(*) FROM \(named)") == [["5"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableTheJobsSQLChangesInPlaceIsLoadedAgainEachRun(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job =
      JobText.header(job: "raise", emulator: emulator) + target.manifestBlock + Self.steps
      + "\n  - id: raise\n    sql: UPDATE {{ table \"FRUITS\" \"output_table\" }} SET price = price * 2, name = name || '!'\n"
    var tables: [[[String?]]] = []
    for _ in 1...3 {
      let (_, report) = try runJob(folder, job)
      #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
      #expect(!report.steps[0].unchanged)
      tables.append(try target.rows(#"SELECT * FROM "FRUITS__output_table" ORDER BY id"#))
    }
    #expect(tables[0].count == 5)
    #expect(tables[1] == tables[0] && tables[2] == tables[0])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func anSQLStepMayDropAGuardedTableButNotClearItsMark(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let header = JobText.header(job: "drop", emulator: emulator) + target.manifestBlock + Self.steps
    let table = #"{{ table "FRUITS" "output_table" }}"#
    let drop = header + "\n  - id: drop\n    sql: 'DROP TABLE \(table)'\n"
    for _ in 1...2 {
      let (_, report) = try runJob(folder, drop)
      #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
      #expect(!report.steps[0].unchanged)
    }
    let clear =
      header
      + "\n  - id: clear\n    sql: 'UPDATE \(table) SET price = 0; UPDATE _dray_table_guard SET changed = \(kind == .sqlite ? "0" : "false")'\n"
    let (_, refused) = try runJob(folder, clear)
    #expect(refused.steps.last?.errorCode == "dray_table")
    // The refused step rolled back whole: the table is the answer's, and still kept (the
    // first run after the failure resumes it; the next one runs every step).
    _ = try runJob(folder, header)
    let (_, kept) = try runJob(folder, header)
    #expect(kept.steps[0].unchanged)
    #expect(try target.rows(#"SELECT count(*) FROM "FRUITS__output_table" WHERE price = 0"#) == [["0"]])
  }

  /// The changes are SQLite's own (its trigger names, its `CREATE TABLE` definitions): the
  /// same on PostgreSQL, in its terms, is `aPostgreSQLTableIsKeptOnlyWhileNothingChangedIt`.
  @Test func aTableChangedOutsideDrayInAnyWayIsLoadedAgain() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let job = JobText.header(job: "outside", emulator: emulator, database: "data.sqlite") + Self.steps
    let (_, first) = try runJob(folder, job)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    let table = "FRUITS__output_table"
    let loaded = try rows(folder, "SELECT * FROM \(table) ORDER BY id")
    let changes = [
      "UPDATE \(table) SET price = price * 2",
      // Changed and changed back: the same rows and count, still a change.
      "UPDATE \(table) SET name = 'x' WHERE id = 1; UPDATE \(table) SET name = 'apple' WHERE id = 1",
      "CREATE TABLE copy AS SELECT * FROM \(table); DROP TABLE \(table); ALTER TABLE copy RENAME TO \(table)",
      "DROP TRIGGER \"\(TableGuard.trigger("delete", of: table))\"",
      "UPDATE _dray_table_guard SET definition = 'CREATE TABLE other(x)'",
      "DROP TABLE _dray_table_guard",
    ]
    for change in changes {
      _ = try Database(path: folder.path + "/data.sqlite").execute(change)
      let (_, report) = try runJob(folder, job)
      #expect(report.exitCode == 0, "\(change): \(report.steps.compactMap(\.errorMessage))")
      #expect(!report.steps[0].unchanged, "\(change)")
      #expect(try rows(folder, "SELECT * FROM \(table) ORDER BY id") == loaded, "\(change)")
    }
    let (_, kept) = try runJob(folder, job)
    #expect(kept.steps[0].unchanged)
  }

  /// On PostgreSQL too (`PostgresTableGuard`): the same answer again is kept, a table
  /// changed in any way since is loaded again, and so is one the job's SQL changes in place.
  @Test func aPostgreSQLTableIsKeptOnlyWhileNothingChangedIt() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let job = JobText.header(job: "outside", emulator: emulator) + target.manifestBlock + Self.steps
    let (_, first) = try runJob(folder, job)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(!first.steps[0].unchanged)
    let table = #""FRUITS__output_table""#
    let loaded = try target.rows("SELECT * FROM \(table) ORDER BY id")
    let (_, second) = try runJob(folder, job)
    #expect(second.steps[0].unchanged)
    let changes = [
      "UPDATE \(table) SET price = price * 2",
      "UPDATE \(table) SET name = 'x' WHERE id = 1; UPDATE \(table) SET name = 'apple' WHERE id = 1",
      "ALTER TABLE \(table) ALTER COLUMN name TYPE varchar(40)",
      "DROP TRIGGER _dray_guard ON \(table)",
      "ALTER TABLE \(table) DISABLE TRIGGER _dray_guard",
      "UPDATE _dray_table_guard SET definition = 'other'",
      "DROP TABLE _dray_table_guard",
    ]
    for change in changes {
      for statement in change.split(separator: "; ") { try target.execute(String(statement)) }
      let (_, report) = try runJob(folder, job)
      #expect(report.exitCode == 0, "\(change): \(report.steps.compactMap(\.errorMessage))")
      #expect(!report.steps[0].unchanged, "\(change)")
      #expect(try target.rows("SELECT * FROM \(table) ORDER BY id") == loaded, "\(change)")
    }
    let (_, kept) = try runJob(folder, job)
    #expect(kept.steps[0].unchanged)

    let raise = job + "\n  - id: raise\n    sql: UPDATE {{ table \"FRUITS\" \"output_table\" }} SET price = price * 2\n"
    var tables: [[[String?]]] = []
    for run in 1...3 {
      let (_, report) = try runJob(folder, raise)
      #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
      // The first run finds the table as dray left it; the next ones find the raise.
      #expect(report.steps[0].unchanged == (run == 1))
      tables.append(try target.rows("SELECT * FROM \(table) ORDER BY id"))
    }
    #expect(tables[0] != loaded)
    #expect(tables[1] == tables[0] && tables[2] == tables[0])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func anHTMLPageInPlaceOfTheDataNamesItsTypeAndEncoding(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator([
      "--fault", #"{"path": "/api/v1/rpc/FRUITS/", "content_type": "text/html", "body": "<html><body>502 Bad Gateway</body></html>"}"#,
    ])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let (_, report) = try runJob(folder, JobText.header(job: "html", emulator: emulator) + target.manifestBlock + Self.steps)
    #expect(report.exitCode == 1)
    let message = try #require(report.steps[0].errorMessage)
    #expect(
      message.hasSuffix(
        " (the server sent it as Content-Type: text/html, Content-Encoding: gzip); the answer was discarded, so the next run downloads it again"
      ),
      "\(message)")
  }
}
