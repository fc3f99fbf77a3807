import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A run that continues a `--fresh` run killed (SIGKILL) or interrupted (SIGINT) before it
/// finished is itself fresh (docs/resume.md): every incremental step and partition it runs
/// sends `initial` and skips no record as "already appended" against the rows the fresh load
/// replaces. The table ends as an uninterrupted `--fresh` run leaves it.
@Suite struct FreshResumeTests {
  /// An incremental `append` of the server's orders, 3 a page; with `partitioned`, once for
  /// each of 4 regions (the server ignores `region`, so each gets every order), one at a time.
  static func job(_ url: String, _ target: TargetDatabase, partitioned: Bool) -> String {
    """
    version: 1
    job: fi
    \(target.manifestBlock)retry: { count: 0 }
    steps:
      - id: o
    \(partitioned ? "    partitions: { list: [{r: a}, {r: b}, {r: c}, {r: d}], concurrency: 1 }\n" : "")\
        http:
          base_url: "\(url)"
          path: orders
          query: { per_page: 3\(partitioned ? ", region: \"{r}\"" : "") }
          load: { table: orders, records: /data, write: append }
          paginate: { next: /links/next }
          incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z" }

    """
  }

  struct Trial {
    let folder = TemporaryDirectory()
    let target: TargetDatabase
    let server: RestServer
    var runs = 0

    init(_ kind: TargetDatabase.Kind, partitioned: Bool, rules: [String] = []) throws {
      target = try TargetDatabase(kind, folder: folder.path)
      server = try RestServer(["--orders", "7"] + rules.flatMap { ["--rule", $0] })
      try FreshResumeTests.job(server.url, target, partitioned: partitioned).write(
        toFile: folder.path + "/job.yaml", atomically: true, encoding: .utf8)
    }

    mutating func start(_ flags: [String] = [], crashAt point: String? = nil) throws -> ChildProcess {
      runs += 1
      return try ChildProcess.dray(
        ["run", folder.path + "/job.yaml"] + flags, environment: point.map { ["DRAY_TEST_CRASH_AT": $0] } ?? [:],
        logPrefix: folder.path + "/run-\(runs)")
    }

    /// How many rows each order has in the table.
    func copies() throws -> [[String?]] {
      try target.rows("SELECT id, count(*) FROM orders GROUP BY id ORDER BY id")
    }
  }

  static func each(_ count: Int) -> [[String?]] { (1...7).map { [String($0), String(count)] } }

  /// Killed when partition a finished and b committed its second page (c and d never
  /// started), or before the step started (the table not yet emptied).
  @Test(
    arguments: zip(
      [TargetDatabase.Kind.sqlite, .postgres, .sqlite], ["page-committed:o[r=b]:2", "page-committed:o[r=b]:2", "run-recorded"]))
  func aKilledFreshPartitionedLoadIsFreshForEveryPartitionWhenContinued(kind: TargetDatabase.Kind, point: String) throws {
    var trial = try Trial(kind, partitioned: true)
    #expect(try trial.start().wait() == .exited(0))
    #expect(try trial.copies() == FreshResumeTests.each(4))
    #expect(try trial.start(["--fresh"], crashAt: point).wait() == .signaled(SIGKILL))
    let resumed = try trial.start()
    #expect(resumed.wait() == .exited(0), "\(resumed.errors)")
    #expect(resumed.errors.contains("(a --fresh run: the steps it had not finished load afresh)"), "\(resumed.errors)")
    for region in ["c", "d"] {
      #expect(resumed.errors.contains("step o[r=\(region)]: incremental: sending updated_since=2024-01-01T00:00:00Z"), "\(resumed.errors)")
    }
    #expect(try trial.copies() == FreshResumeTests.each(4))
    // The cursors kept are the fresh load's: a plain run afterwards adds nothing.
    #expect(try trial.start().wait() == .exited(0))
    #expect(try trial.copies() == FreshResumeTests.each(4))
  }

  @Test func aKilledFreshLoadContinuedKeepsTheRecordAtTheOldCursor() throws {
    var trial = try Trial(.sqlite, partitioned: false)
    #expect(try trial.start().wait() == .exited(0))
    #expect(try trial.start(["--fresh"], crashAt: "page-committed:o:2").wait() == .signaled(SIGKILL))
    let plan = try Command.dray(["plan", trial.folder.path + "/job.yaml"])
    #expect(plan.stdout.contains("updated_since=2024-01-01T00:00:00Z (initial, as --fresh starts again)"), "\(plan.stdout)")
    let resumed = try trial.start()
    #expect(resumed.wait() == .exited(0), "\(resumed.errors)")
    #expect(try trial.copies() == FreshResumeTests.each(1))
    #expect(!resumed.errors.contains("already appended"), "\(resumed.errors)")
    // A later run given the record at the kept cursor again names that cursor when it skips it.
    try trial.server.setOrdersMode(#"{"boundary": "inclusive"}"#)
    let later = try trial.start()
    #expect(later.wait() == .exited(0), "\(later.errors)")
    #expect(try trial.copies() == FreshResumeTests.each(1))
    #expect(
      later.errors.contains(
        "1 record at the kept cursor 2024-01-01T00:00:07Z already appended by an earlier run was not appended again"),
      "\(later.errors)")
  }

  @Test func anInterruptedFreshPartitionedLoadIsFreshForEveryPartitionWhenContinued() throws {
    // The first request of partition c waits until released: the run is interrupted there.
    var trial = try Trial(
      .sqlite, partitioned: true, rules: [#"{"path": "/orders", "query": {"region": "c"}, "hold": true, "times": 2}"#])
    let first = try trial.start()
    // The first run's partition c is held once and let go.
    #expect(try trial.server.waitForHeld() == 1)
    try trial.server.release()
    #expect(first.wait() == .exited(0), "\(first.errors)")
    let fresh = try trial.start(["--fresh"])
    #expect(try trial.server.waitForHeld() == 1)
    fresh.send(SIGINT)
    let ended = fresh.wait(timeout: 30)
    try trial.server.release()
    #expect((ended ?? fresh.wait()) == .exited(130), "\(fresh.errors)")
    let resumed = try trial.start()
    #expect(resumed.wait() == .exited(0), "\(resumed.errors)")
    #expect(try trial.copies() == FreshResumeTests.each(4))
  }
}
