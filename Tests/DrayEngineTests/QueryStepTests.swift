import DrayEngine
import DrayModel
import DrayTestSupport
import Foundation
import Testing

@Suite struct QueryStepTests {
  let header = """
    version: 1
    job: query
    database: { path: data/db.sqlite }
    steps:
      - id: setup
        sql: |
          CREATE TABLE fruit (id INTEGER, name TEXT, price REAL, note TEXT);
          INSERT INTO fruit VALUES (1, 'apple', 0.52, 'crisp, red'), (2, 'pear', NULL, ''), (3, 'say "plum"', 1.25, NULL);

    """

  func run(_ steps: String) throws -> (TemporaryDirectory, RunReport) {
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(folder, header + steps)
    return (folder, report)
  }

  @Test func rowsGoToTheFileInEachFormat() throws {
    let (folder, report) = try run(
      """
        - id: json
          query: { sql: SELECT * FROM fruit ORDER BY id, output: out/rows.json }
        - id: ndjson
          query: { sql: SELECT * FROM fruit ORDER BY id, output: out/rows.ndjson, format: ndjson }
        - id: csv
          query: { sql: SELECT * FROM fruit ORDER BY id, output: out/rows.csv, format: csv }
      """)
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

  @Test func aFailedExpectationNamesTheColumnTheConditionAndTheValue() throws {
    let (folder, report) = try run(
      """
        - id: check
          query:
            sql: SELECT count(*) AS n FROM fruit
            output: out/count.json
            expect: { n: { min: 200 } }
      """)
    #expect(report.exitCode == 1)
    #expect(report.steps[1].errorCode == "expectation_failed")
    #expect(report.steps[1].errorMessage == "expectation failed: n = 3, expected at least 200")
    #expect(try text(folder.path + "/out/count.json") == #"{"status":"ok","result":{"database":{"records":[{"n":3}]}}}"# + "\n")
  }

  @Test func everyFailedExpectationIsListed() throws {
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
      """)
    #expect(
      report.steps[1].errorMessage
        == #"3 expectations failed: n = 3, expected at most 2; first = "apple", expected "pear"; the query has no column 'missing' (its columns: n, first, top)"#
    )
  }

  @Test func noRowsAndNonNumbersAreSaidPlainly() throws {
    let (_, empty) = try run(
      """
        - id: check
          query: { sql: SELECT id FROM fruit WHERE id > 100, expect: { id: { min: 1, max: 9 } } }
      """)
    #expect(empty.steps[1].errorMessage == "expectation failed: the query returned no rows, expected id at least 1 and at most 9")
    let (_, text) = try run(
      """
        - id: check
          query: { sql: SELECT name FROM fruit ORDER BY id, expect: { name: { min: 1 } } }
      """)
    #expect(text.steps[1].errorMessage == #"expectation failed: name = "apple" is not a number, expected at least 1"#)
  }

  @Test func aQueryRunsOneStatement() throws {
    let (_, report) = try run(
      """
        - id: check
          query: { sql: "SELECT 1; DELETE FROM fruit" }
      """)
    #expect(report.steps[1].errorMessage == "a query runs one statement; this one holds 2: use a sql step for the others")
  }
}
