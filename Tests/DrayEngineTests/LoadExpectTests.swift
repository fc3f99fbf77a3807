import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A load may carry `expect`: checked inside the load's own transaction, before the new table
/// replaces the old one (write, audit, publish). A load that fails it rolls back, keeps the
/// old table, and fails the step with the figures; readers never see the bad table.
@Suite struct LoadExpectTests {
  static let kept = "; nothing was published: the load was rolled back and the table keeps its previous rows"

  func rows(_ folder: TemporaryDirectory, _ table: String) throws -> [[SQLValue]] {
    try Database(path: folder.path + "/data.sqlite").rows("SELECT * FROM \(Database.quote(table)) ORDER BY 1").map(\.values)
  }

  func fruits(_ emulator: Emulator, _ folder: TemporaryDirectory, _ options: String, into target: TargetDatabase? = nil) throws
    -> RunReport
  {
    try runJob(
      folder,
      JobText.header(job: "fruits", emulator: emulator, database: target == nil ? "data.sqlite" : nil) + (target?.manifestBlock ?? "")
        + "steps:\n  - id: fruits\n    table_stream: { resource: FRUITS\(options) }\n"
    ).1
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aTableStreamThatFailsItsExpectationsKeepsTheOldTable(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    #expect(try fruits(emulator, folder, ", expect: { rows: { min: 5, max: 5 }, price: { max: 5 } }", into: target).exitCode == 0)
    // Yesterday's table: three of the five rows.
    try target.execute(#"DELETE FROM "FRUITS__output_table" WHERE id > 3"#)
    let table = #"SELECT * FROM "FRUITS__output_table" ORDER BY 1"#
    let yesterday = try target.rows(table)

    let cases: [(String, String)] = [
      (", expect: { rows: { min: 1000 } }", "expectation failed: rows = 5, expected at least 1000"),
      (
        ", expect: { rows: { equals: 4 }, price: { min: 1 }, in_season: { equals: 1 }, prise: { max: 3 } }",
        "4 expectations failed: the table has no column 'prise' (its columns: hhive_id, id, name, price, in_season); rows = 5, expected 4; min(price) = 0.52, expected at least 1; min(in_season) = 0, expected 1"
      ),
    ]
    for (options, message) in cases {
      let report = try fruits(emulator, folder, options, into: target)
      #expect(report.exitCode == 1)
      #expect(report.steps[0].errorCode == "expectation_failed")
      #expect(report.steps[0].errorMessage == "table FRUITS__output_table: " + message + Self.kept)
      #expect(try target.rows(table) == yesterday)
      // The answer is not kept to be reused: the next run asks again.
      let downloads = (try? FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/downloads/fruits")) ?? []
      #expect(downloads == [])
    }
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDeltasRowsAreTheTablesRowsAfterApplyingIt(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let count = #"SELECT count(*) FROM "FRUITS__output_table""#
    #expect(try fruits(emulator, folder, ", delta: true", into: target).exitCode == 0)
    try emulator.admin("POST", "versions/FRUITS", json: #"{"delete": [1, 2]}"#)
    // The delta deletes two of five rows: 3 remain, which `min: 4` refuses.
    let failed = try fruits(emulator, folder, ", delta: true, expect: { rows: { min: 4 } }", into: target)
    #expect(failed.steps[0].errorMessage == "table FRUITS__output_table: expectation failed: rows = 3, expected at least 4" + Self.kept)
    #expect(try target.rows(count) == [["5"]])
    let passed = try fruits(emulator, folder, ", delta: true, expect: { rows: { min: 3 } }", into: target)
    #expect(passed.exitCode == 0, "\(passed.steps.compactMap(\.errorMessage))")
    #expect(passed.steps[0].notes.contains { $0.hasPrefix("delta v1→v2") })
    #expect(try target.rows(count) == [["3"]])
  }

  @Test func anHTTPLoadThatFailsItsExpectationsKeepsTheOldTableAndFetchesAgainNextTime() throws {
    let server = try RestServer()
    let folder = TemporaryDirectory()
    func run(_ expect: String) throws -> RunReport {
      try runJob(
        folder,
        """
        version: 1
        job: items
        database: { path: data.sqlite }
        retry: { count: 0 }
        steps:
          - id: items
            http:
              base_url: '${API}'
              path: items
              query: { per_page: 10 }
              paginate: { next: /links/next }
              load: { table: items, records: /data\(expect) }
        """, environment: ["API": server.url]
      ).1
    }
    #expect(try run(", expect: { rows: { min: 1 } }").exitCode == 0)
    try Database(path: folder.path + "/data.sqlite").execute("DELETE FROM items WHERE id > 3")
    try server.reset()
    let failed = try run(", expect: { rows: { min: 1000 }, id: { min: 1 } }")
    #expect(failed.exitCode == 1)
    #expect(failed.steps[0].errorMessage == "table items: expectation failed: rows = 25, expected at least 1000" + Self.kept)
    #expect(try rows(folder, "items").count == 3)
    #expect(try server.requests().count == 3)
    // Nothing of the refused pages is kept to be published later: the next run starts over.
    try server.reset()
    let again = try run(", expect: { rows: { min: 25 } }")
    #expect(again.exitCode == 0, "\(again.steps.compactMap(\.errorMessage))")
    #expect(try server.requests().count == 3)
    #expect(try rows(folder, "items").count == 25)
  }

  @Test func anHTTPLoadWithNoRecordsHasNoRows() throws {
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/none", "[]")])
    let folder = TemporaryDirectory()
    let report = try runJob(
      folder,
      """
      version: 1
      job: none
      database: { path: data.sqlite }
      steps:
        - id: none
          http: { base_url: '${API}', path: none, load: { table: things, expect: { rows: { min: 1 }, id: { min: 1 } } } }
      """, environment: ["API": server.url]
    ).1
    #expect(
      report.steps[0].errorMessage
        == "table things: 2 expectations failed: the table has no column 'id' (the load had no records, so there is no table); rows = 0, expected at least 1"
        + Self.kept)
  }
}
