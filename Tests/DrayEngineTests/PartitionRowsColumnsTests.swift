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
}
