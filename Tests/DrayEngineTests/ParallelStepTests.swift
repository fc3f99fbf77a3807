import DrayEngine
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// The `parallel` step: members run at once, each with its own connection to the target,
/// and resume as a group, on both targets (one suite, two databases).
@Suite struct ParallelStepTests {
  /// A job whose group has a member that inserts a row and one that fails until fixed.
  static func resumeJob(_ target: TargetDatabase, pre: String, failing: Bool) -> String {
    """
    version: 1
    job: group-resume
    \(target.manifestBlock)steps:
      - id: pre
        sql: DROP TABLE IF EXISTS log; \(pre)
      - id: loads
        parallel:
          steps:
            - id: s
              sql: INSERT INTO log(x) VALUES ('s')
            - id: f
              sql: \(failing ? "SELECT * FROM nowhere" : "SELECT 1")
      - id: post
        sql: INSERT INTO log(x) VALUES ('post')
    """
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aGroupAfterAStepThatRanAgainRunsWhole(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let (_, first) = try runJob(folder, Self.resumeJob(target, pre: "CREATE TABLE log(x TEXT);", failing: true))
    #expect(first.exitCode == 1)
    #expect(first.steps[1].members.map(\.status) == [.succeeded, .failed])
    // `pre` changed: it runs again and recreates `log`, so `s` must run again too.
    let (_, second) = try runJob(folder, Self.resumeJob(target, pre: "CREATE TABLE log(x TEXT, note TEXT);", failing: false))
    #expect(second.exitCode == 0)
    #expect(second.steps.map(\.status) == [.succeeded, .succeeded, .succeeded])
    #expect(second.steps[1].members.map(\.status) == [.succeeded, .succeeded])
    // Each once (the steps' order is the report's, above).
    #expect(try target.rows("SELECT x FROM log ORDER BY x") == [["post"], ["s"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aGroupThatIsTheFirstStepToRunSkipsItsFinishedMembers(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let (_, first) = try runJob(folder, Self.resumeJob(target, pre: "CREATE TABLE log(x TEXT);", failing: true))
    #expect(first.exitCode == 1)
    let (_, second) = try runJob(folder, Self.resumeJob(target, pre: "CREATE TABLE log(x TEXT);", failing: false))
    #expect(second.exitCode == 0)
    #expect(second.steps.map(\.status) == [.skipped, .succeeded, .succeeded])
    #expect(second.steps[1].members.map(\.status) == [.skipped, .succeeded])
    #expect(try target.rows("SELECT x FROM log ORDER BY x") == [["post"], ["s"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aGroupRunsItsMembersAtOnceAndReportsThemInFileOrderWithRealTimings(kind: TargetDatabase.Kind) throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/", "delay": 0.3}"#])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "group", emulator: emulator) + target.manifestBlock + """
        steps:
          - id: schemes
            schemes: { resources: [FRUITS, test_resource, CURRENCIES] }
          - id: group
            parallel:
              max: 4
              steps:
                - id: fruits
                  table_stream: { resource: FRUITS }
                - id: test
                  table_stream: { resource: test_resource }
                - id: currencies
                  table_stream: { resource: CURRENCIES }
                - id: fruits-file
                  table: { resource: FRUITS, output: out/fruits.json }
        """)
    #expect(report.exitCode == 0, "\(report.steps.flatMap(\.members).compactMap(\.errorMessage))")
    let group = report.steps[1]
    #expect(group.members.map(\.id) == ["fruits", "test", "currencies", "fruits-file"])
    #expect(group.members.allSatisfy { $0.status == .succeeded })
    #expect(group.members.allSatisfy { $0.duration >= 0.3 })
    let starts = group.members.compactMap(\.startedAt)
    let ends = group.members.compactMap { member in member.startedAt.map { $0.addingTimeInterval(member.duration) } }
    #expect(starts.count == 4)
    // Overlap, from the report's own times: no bound on how long the machine took.
    #expect(starts.max()! < ends.min()!, "every member started before the first one ended")
    #expect(group.notes == ["fruits: succeeded", "test: succeeded", "currencies: succeeded", "fruits-file: succeeded"])
    #expect(group.rows["FRUITS__output_table"] == 5)
    #expect(group.rows["FRUITS.output_table"] == 5)
    #expect(group.outputs == ["out/fruits.json"])
    #expect(
      try target.rows(#"SELECT count(*) FROM "CURRENCIES__output_table""#) == [[String(group.rows["CURRENCIES__output_table"] ?? -1)]])
  }
}
