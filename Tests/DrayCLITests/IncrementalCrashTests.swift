import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Kills `dray run` with SIGKILL at random instants during an incremental, paginated
/// `append` load, runs it again until it completes, and checks that the table ends exactly
/// as a clean run leaves it: every record version once, none missing.
///
/// Each trial starts a REST test server with 30 orders, runs the job once to the end (the
/// kept cursor is then the newest of the 30), changes the server (15 inserts, then 10 updates),
/// then runs the job again one to three times, each killed at a random instant (seeded;
/// uniform over 1.1 times the length of a clean second run), and once more to the end.
/// The pages are slowed (30 ms each) so that kills land between and inside page commits.
/// The server's logical clock makes every trial's records identical, so the database must
/// equal the clean reference's table by table (`DatabaseDigest`, the kept cursor's time
/// left out).
///
/// Environment: `DRAY_INCREMENTAL_KILLS` (default 20), `DRAY_CRASH_SEED` (repeats a
/// sequence; the seed is printed).
@Suite struct IncrementalCrashTests {
  static func job(_ url: String) -> String {
    """
    version: 1
    job: orders
    database: { path: data/orders.sqlite }
    retry: { count: 3, interval: 20ms }
    steps:
      - id: orders
        http:
          base_url: "\(url)"
          path: orders
          query: { per_page: 4 }
          load: { table: order_versions, records: /data, write: append }
          paginate: { next: /links/next }
          incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z" }

    """
  }

  /// A folder with the job against a new server in the state after the first run's changes.
  struct Trial {
    let folder: String
    let server: RestServer
    var runs = 0
    var database: String { folder + "/data/orders.sqlite" }

    init(folder: String) throws {
      self.folder = folder
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      server = try RestServer(["--orders", "30", "--rule", #"{"path": "/orders", "delay": 0.03}"#])
      try IncrementalCrashTests.job(server.url).write(toFile: folder + "/job.yaml", atomically: true, encoding: .utf8)
      var first = self
      let ended = try first.start().wait()
      try #require(ended == .exited(0), "the first run of \(folder) failed")
      runs = first.runs
      try server.changeOrders(#"{"insert": 15, "update": [3, 7, 11, 12, 20, 25, 30, 31, 40, 44]}"#)
    }

    mutating func start() throws -> ChildProcess {
      runs += 1
      return try ChildProcess.dray(["run", folder + "/job.yaml"], logPrefix: folder + "/run-\(runs)")
    }

    func digest() throws -> DatabaseDigest {
      var ignoring = DatabaseDigest.timeColumns
      ignoring["_dray_http_cursors"] = ["updated_at"]
      return try DatabaseDigest(path: database, ignoringColumns: ignoring)
    }
  }

  @Test(.timeLimit(.minutes(10)))
  func killedDuringAnIncrementalAppendTheTableEndsAsACleanRunLeavesIt() throws {
    let environment = ProcessInfo.processInfo.environment
    let kills = Int(environment["DRAY_INCREMENTAL_KILLS"] ?? "") ?? 20
    var random = SeededRandom(seed: SeededRandom.seed(fromEnvironment: "DRAY_CRASH_SEED"))
    print("incremental crash test: seed \(random.seed) (DRAY_CRASH_SEED=\(random.seed) repeats it), \(kills) kills")
    let root = TemporaryDirectory("dray-incremental-crash")

    var clean = try Trial(folder: root.path + "/clean")
    let cleanRun = try clean.start()
    try #require(cleanRun.wait() == .exited(0), "the clean run failed: \(cleanRun.errors)")
    let length = Date().timeIntervalSince(cleanRun.startedAt)
    let expected = try clean.digest()
    // 30 first versions, then 15 new records and 7 updated old ones (the server keeps only
    // the newest version of the 3 new records that were updated too).
    #expect(expected.tables["order_versions"]?.rows == 52)
    #expect(expected.tables["order_versions"]?.distinctRows == 52)

    var landed = 0
    var trials = 0
    var failures: [String] = []
    while landed < kills && failures.isEmpty {
      trials += 1
      var trial = try Trial(folder: root.path + "/trial-\(trials)")
      var completed = false
      for _ in 0..<min(kills - landed, Int.random(in: 1...3, using: &random)) {
        let process = try trial.start()
        if let ended = process.wait(timeout: Double.random(in: 0...(length * 1.1), using: &random)) {
          if ended != .exited(0) { failures.append("trial \(trials) run \(trial.runs) ended with \(ended): \(process.errors)") }
          completed = true
          break
        }
        process.send(SIGKILL)
        let ended = process.wait()
        guard ended == .signaled(SIGKILL) else {
          completed = ended == .exited(0)
          break
        }
        landed += 1
      }
      guard failures.isEmpty else { break }
      if !completed {
        let process = try trial.start()
        let ended = process.wait(timeout: 120) ?? .signaled(0)
        if ended != .exited(0) {
          failures.append("trial \(trials): the rerun ended with \(ended):\n\(process.errors)")
          break
        }
      }
      let problems = try trial.digest().differences(from: expected)
      if !problems.isEmpty { failures.append("trial \(trials) (\(trial.folder)):\n  " + problems.joined(separator: "\n  ")) }
    }
    print("incremental crash test: \(landed) kills in \(trials) trials")
    #expect(landed >= kills || !failures.isEmpty)
    #expect(failures.isEmpty, "seed \(random.seed):\n\(failures.joined(separator: "\n"))")
    withExtendedLifetime(root) {}
  }
}
