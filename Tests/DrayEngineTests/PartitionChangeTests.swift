import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A partitioned step whose partitions change between a failed run and the run that continues
/// it (docs/partitions.md, "How a partitioned step runs"): with `write: replace`, the records an
/// earlier run gathered for partitions that are no longer the step's must not reach the table;
/// with `append` and `merge`, a partition that published is not fetched again.
@Suite struct PartitionChangeTests {
  let steps = PartitionedStepTests()

  /// Runs `issues` over repositories 1, 2 and 3 with repository 3 answering 503 for good,
  /// then again with `issues` changed by `change` and the server mended.
  func failThenContinue(
    _ kind: TargetDatabase.Kind, write: String = "replace", list second: [String], query: String
  ) throws -> (RunReport, TargetDatabase) {
    let target = try TargetDatabase(kind, folder: steps.folder.path)
    let server = try RestServer(["--repos", "4", "--issues", "3"])
    func manifest(_ repos: [String], perPage: String) throws -> Manifest {
      let yaml = PartitionedStepTests.children.replacingOccurrences(of: "WRITE", with: write)
        .replacingOccurrences(of: "per_page: 2 }, load: { table: issues", with: "per_page: \(perPage) }, load: { table: issues")
      return try steps.manifest(
        yaml, server: server, target: target, partitioned: "issues", PartitionedStepTests.list(repos.map { [("repo", $0)] }))
    }
    try server.setRules(#"[{"path": "/repos/3/issues", "status": 503, "times": 1000}]"#)
    let failed = steps.run(try manifest(["1", "2", "3"], perPage: "2"))
    // Repository 3's 503s outlast the retry policy: trying again later may succeed.
    #expect(failed.exitCode == 69)
    #expect(failed.failure?.failureClass == .unavailable)
    #expect(failed.steps[1].members.map(\.status) == [.succeeded, .succeeded, .failed])
    try server.setRules("[]")
    return (steps.run(try manifest(second, perPage: query)), target)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPartitionDroppedFromTheListLeavesNoRowsInAReplacedTable(kind: TargetDatabase.Kind) throws {
    let (report, target) = try failThenContinue(kind, list: ["1", "4"], query: "2")
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    // Repository 2 finished in the failed run, but is no partition now.
    #expect(try target.rows("SELECT repo, count(*) FROM issues GROUP BY repo ORDER BY repo") == [["1", "3"], ["4", "3"]])
    #expect(report.steps[1].notes.contains { $0.hasPrefix("the partitions changed since they were gathered") })
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aStepChangedBetweenRunsGathersEachPartitionOnce(kind: TargetDatabase.Kind) throws {
    let (report, target) = try failThenContinue(kind, list: ["1", "2", "3"], query: "3")
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM issues") == [["9", "9"]])
    #expect(report.steps[1].members.map(\.status) == [.succeeded, .succeeded, .succeeded])
  }

  /// The path dray's own advice takes (a bound raised, a query changed): the partitions that
  /// published before the change are skipped, never appended twice.
  @Test(arguments: TargetDatabase.Kind.allCases, ["append", "merge, primary_key: [id]"])
  func aChangedStepDoesNotFetchPublishedPartitionsAgain(kind: TargetDatabase.Kind, write: String) throws {
    let (report, target) = try failThenContinue(kind, write: write, list: ["1", "2", "3"], query: "3")
    #expect(report.exitCode == 0, "\(report.steps.map { $0.errorMessage ?? "" })")
    #expect(try target.rows("SELECT count(*), count(DISTINCT id) FROM issues") == [["9", "9"]])
    let members = report.steps[1].members
    #expect(members.map(\.status) == [.skipped, .skipped, .succeeded])
    #expect(members[0].skipReason?.contains("under the step's earlier definition") == true, "\(members[0].skipReason ?? "")")
  }
}
