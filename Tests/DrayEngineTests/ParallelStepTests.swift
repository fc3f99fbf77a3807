import DrayEngine
import DrayModel
import DrayStore
import DrayTestSupport
import Foundation
import Testing

@Suite struct ParallelStepTests {
  /// A job whose group has a member that inserts a row and one that fails until fixed.
  static func resumeJob(pre: String, failing: Bool) -> String {
    """
    version: 1
    job: group-resume
    database: { path: data/db.sqlite }
    steps:
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

  @Test func aGroupAfterAStepThatRanAgainRunsWhole() throws {
    let folder = TemporaryDirectory()
    let (_, first) = try runJob(folder, Self.resumeJob(pre: "CREATE TABLE log(x TEXT);", failing: true))
    #expect(first.exitCode == 1)
    #expect(first.steps[1].members.map(\.status) == [.succeeded, .failed])
    // `pre` changed: it runs again and recreates `log`, so `s` must run again too.
    let (manifest, second) = try runJob(folder, Self.resumeJob(pre: "CREATE TABLE log(x TEXT, note TEXT);", failing: false))
    #expect(second.exitCode == 0)
    #expect(second.steps.map(\.status) == [.succeeded, .succeeded, .succeeded])
    #expect(second.steps[1].members.map(\.status) == [.succeeded, .succeeded])
    let database = try Database(path: manifest.directory + "/data/db.sqlite")
    #expect(try database.rows("SELECT x FROM log ORDER BY rowid").map { $0[0].1 } == [.text("s"), .text("post")])
  }

  @Test func aGroupThatIsTheFirstStepToRunSkipsItsFinishedMembers() throws {
    let folder = TemporaryDirectory()
    let (_, first) = try runJob(folder, Self.resumeJob(pre: "CREATE TABLE log(x TEXT);", failing: true))
    #expect(first.exitCode == 1)
    let (manifest, second) = try runJob(folder, Self.resumeJob(pre: "CREATE TABLE log(x TEXT);", failing: false))
    #expect(second.exitCode == 0)
    #expect(second.steps.map(\.status) == [.skipped, .succeeded, .succeeded])
    #expect(second.steps[1].members.map(\.status) == [.skipped, .succeeded])
    let database = try Database(path: manifest.directory + "/data/db.sqlite")
    #expect(try database.rows("SELECT x FROM log ORDER BY rowid").map { $0[0].1 } == [.text("s"), .text("post")])
  }

  @Test func aGroupRunsItsMembersAtOnceAndReportsThemInFileOrderWithRealTimings() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/", "delay": 0.3}"#])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "group", emulator: emulator, database: "data/db.sqlite") + """
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
  }
}
