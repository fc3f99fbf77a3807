import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// The columns of a `rows` source are the placeholder names (docs/partitions.md, "Sources"):
/// a column no placeholder uses, or two columns of one name, fails the step before any
/// request, saying which column and what to write.
@Suite struct PartitionRowsColumnsTests {
  let steps = PartitionedStepTests()

  func run(_ kind: TargetDatabase.Kind, rows sql: String) throws -> (StepReport, RestServer, TargetDatabase) {
    let target = try TargetDatabase(kind, folder: steps.folder.path)
    let server = try RestServer()
    let yaml = """
        - id: prep
          sql: "CREATE TABLE p (a integer, b text); INSERT INTO p VALUES (1, 'x'), (1, 'y');"
        - id: echo
          http: { base_url: '${API}', path: 'echo/{a}', load: { table: echoes, records: /data, write: append } }
      """
    let partitions = Partitions(source: .rows(sql), location: SourceLocation(file: "job.yaml", line: 1, column: 1))
    let report = steps.run(try steps.manifest(yaml, server: server, target: target, partitioned: "echo", partitions))
    #expect(report.exitCode == 1)
    return (report.steps[1], server, target)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aColumnNoPlaceholderUsesFailsTheStepBeforeAnyRequest(kind: TargetDatabase.Kind) throws {
    // Without the check, a=1,b=x and a=1,b=y are two partitions sending the same request.
    let (step, server, target) = try run(kind, rows: "SELECT a, b FROM p")
    #expect(step.errorCode == "partitions_query")
    #expect(step.errorMessage?.contains("returns column b (of a, b), which no placeholder of the step uses") == true)
    #expect(step.errorMessage?.contains("write {b}") == true)
    #expect(try server.requests().isEmpty)
    #expect(try target.columnNames("echoes").isEmpty)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func twoColumnsOfOneNameFailTheStep(kind: TargetDatabase.Kind) throws {
    let (step, server, _) = try run(kind, rows: "SELECT a, b AS a FROM p")
    #expect(step.errorCode == "partitions_query")
    #expect(step.errorMessage?.hasPrefix("the partitions' rows query returns two columns named a") == true)
    #expect(try server.requests().isEmpty)
  }

  /// D-pg-rows: a `rows` query gives its placeholders the same text on both databases: a
  /// boolean as 1 or 0 (SQLite has none: its `true` is 1, a loaded JSON boolean is stored as
  /// 1 or 0), a PostgreSQL `timestamptz` in RFC 3339 (`2024-01-01T08:00:00Z`, not the
  /// session's `2024-01-01 08:00:00+00`), a `timestamp` with `T`, and a JSON string as the
  /// string, as SQLite holds it.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func rowsValuesAreTheSameTextOnBothDatabases(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: steps.folder.path)
    let server = try RestServer()
    let table =
      kind == .sqlite
      ? "CREATE TABLE p (b, t, l, j); INSERT INTO p VALUES (true, '2024-01-01T08:00:00Z', '2024-01-01T08:00:00.5', 'x y'), (false, '2024-06-30T23:59:59.123456Z', '2024-06-30T23:59:59', 'z');"
      : "CREATE TABLE p (b boolean, t timestamptz, l timestamp, j jsonb); INSERT INTO p VALUES (true, '2024-01-01 10:00:00+02', '2024-01-01 08:00:00.5', '\"x y\"'), (false, '2024-06-30 23:59:59.123456+00', '2024-06-30 23:59:59', '\"z\"');"
    let yaml = """
        - id: prep
          sql: |
            \(table)
        - id: echo
          http: { base_url: '${API}', path: 'echo/{b}', query: { t: '{t}', l: '{l}', j: '{j}' }, load: { table: echoes, records: /data, write: append } }
      """
    let partitions = Partitions(
      source: .rows("SELECT b, t, l, j FROM p ORDER BY b DESC"), location: SourceLocation(file: "job.yaml", line: 1, column: 1))
    let report = steps.run(try steps.manifest(yaml, server: server, target: target, partitioned: "echo", partitions))
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    let paths = try server.requests().map(\.path).sorted()
    #expect(
      paths == [
        "/echo/0?t=2024-06-30T23%3A59%3A59.123456Z&l=2024-06-30T23%3A59%3A59&j=z",
        "/echo/1?t=2024-01-01T08%3A00%3A00Z&l=2024-01-01T08%3A00%3A00.5&j=x%20y",
      ], "\(paths)")
  }

  /// D-nfc: partitions whose values are canonically equivalent but not the same bytes
  /// (`é`, U+00E9, and `e` + U+0301) are two partitions: each runs, sending its own bytes.
  @Test func canonicallyEquivalentValuesAreTwoPartitions() throws {
    let target = try TargetDatabase(.sqlite, folder: steps.folder.path)
    let server = try RestServer()
    let yaml = """
        - id: echo
          http: { base_url: '${API}', path: 'echo/{v}', load: { table: echoes, records: /data, write: append } }
      """
    let partitions = PartitionedStepTests.list([[("v", "\u{E9}")], [("v", "e\u{301}")]])
    let report = steps.run(try steps.manifest(yaml, server: server, target: target, partitioned: "echo", partitions))
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    let paths = try server.requests().map(\.path).sorted()
    #expect(paths == ["/echo/%C3%A9", "/echo/e%CC%81"], "\(paths)")
  }
}
