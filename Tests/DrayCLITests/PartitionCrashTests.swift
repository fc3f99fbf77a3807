import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Kills `dray run` with SIGKILL at random instants during a fan-out (`partitions:` over the
/// rows of a parent table, `concurrency: 4`; docs/partitions.md), runs it again until it
/// completes, and checks, on both databases and for `append` and `replace` loads:
/// - the children's table equals a clean run's, row for row;
/// - no partition that had finished (its checkpoint committed, read from the journal after
///   each kill) is fetched again by a later run (the server's request log);
/// - no staging or gathering table is left once the job succeeded.
///
/// Each trial starts a REST test server with 12 repositories of 5 issues (3 pages each, 30
/// ms a page). Kills land uniformly over 1.1 times a clean run's length (seeded).
///
/// Environment: `DRAY_PARTITION_KILLS` (default 6 per case), `DRAY_CRASH_SEED` (repeats a
/// sequence; the seed is printed).
@Suite struct PartitionCrashTests {
  struct Case: Sendable, CustomStringConvertible {
    var kind: TargetDatabase.Kind
    var write: String
    var description: String { "\(kind) \(write)" }
  }

  static let cases = TargetDatabase.Kind.allCases.flatMap { kind in ["append", "replace"].map { Case(kind: kind, write: $0) } }

  static func job(_ url: String, _ target: TargetDatabase, write: String) -> String {
    """
    version: 1
    job: fan
    \(target.manifestBlock)retry: { count: 3, interval: 20ms }
    steps:
      - id: repos
        http: { base_url: "\(url)", path: repos, query: { per_page: 5 }, load: { table: repos, records: /data }, paginate: { next: /links/next } }
      - id: issues
        partitions:
          rows: "SELECT id AS repo FROM repos ORDER BY id"
          concurrency: 4
        http: { base_url: "\(url)", path: "repos/{repo}/issues", query: { per_page: 2 }, load: { table: issues, records: /data, write: \(write) }, paginate: { next: /links/next } }

    """
  }

  /// A job folder with its own server and database.
  struct Trial {
    let folder: String
    let server: RestServer
    let target: TargetDatabase
    var runs = 0

    init(folder: String, _ test: Case) throws {
      self.folder = folder
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      server = try RestServer(["--repos", "12", "--issues", "5", "--rule", #"{"path": "/repos", "delay": 0.03}"#])
      target = try TargetDatabase(test.kind, folder: folder)
      try PartitionCrashTests.job(server.url, target, write: test.write).write(
        toFile: folder + "/job.yaml", atomically: true, encoding: .utf8)
    }

    mutating func start() throws -> ChildProcess {
      runs += 1
      return try ChildProcess.dray(["run", folder + "/job.yaml"], logPrefix: folder + "/run-\(runs)")
    }

    /// Whether the run journal exists (a kill can come before a run made it).
    func hasJournal() throws -> Bool {
      let journal =
        target.kind == .sqlite
        ? "SELECT count(*) FROM sqlite_master WHERE name = '_dray_checkpoints'"
        : "SELECT count(*) FROM information_schema.tables WHERE table_name = '_dray_checkpoints'"
      return try (target.kind == .postgres || FileManager.default.fileExists(atPath: folder + "/" + TargetDatabase.sqlitePath))
        && target.rows(journal) == [["1"]]
    }

    /// Whether the last run recorded its success before it was killed (between that and
    /// its exit): the job is done, and another run would be a new one, which appends again.
    /// A file a kill left with a hot rollback journal cannot be read without a writer: its
    /// last write did not commit, so the run did not record its success.
    func lastRunSucceeded() -> Bool {
      (try? hasJournal() && target.rows("SELECT status FROM _dray_runs ORDER BY run_id DESC LIMIT 1") == [["succeeded"]]) ?? false
    }

    /// The partitions that finished (their checkpoints succeeded).
    func finished() throws -> Set<String> {
      guard try hasJournal() else { return [] }
      return Set(
        try target.rows("SELECT step_id FROM _dray_checkpoints WHERE step_id LIKE 'issues[%' AND status = 'succeeded'")
          .compactMap { $0.first ?? nil })
    }

    /// The repositories asked for issues since the log was last cleared, as member ids.
    func fetched() throws -> Set<String> {
      Set(
        try server.requests().map(\.path).compactMap { path -> String? in
          let parts = path.split(separator: "/")
          guard parts.count >= 3, parts[0] == "repos", parts[2].hasPrefix("issues") else { return nil }
          return "issues[repo=\(parts[1])]"
        })
    }

    func issues() throws -> [[String?]] { try target.rows("SELECT id, repo, title FROM issues ORDER BY id") }

    /// dray's staging and gathering tables left in the target.
    func leftovers() throws -> [[String?]] {
      try target.rows(
        target.kind == .sqlite
          ? "SELECT name FROM sqlite_master WHERE name LIKE '\\_dray\\_parts%' ESCAPE '\\' OR name LIKE '\\_dray\\_http\\_\\_%' ESCAPE '\\'"
          : "SELECT table_name FROM information_schema.tables WHERE table_name LIKE '\\_dray\\_parts%'")
    }
  }

  @Test(.timeLimit(.minutes(15)), arguments: PartitionCrashTests.cases)
  func killedDuringAFanOutTheTableEndsAsACleanRunLeavesIt(test: Case) throws {
    let environment = ProcessInfo.processInfo.environment
    let kills = Int(environment["DRAY_PARTITION_KILLS"] ?? "") ?? 6
    var random = SeededRandom(seed: SeededRandom.seed(fromEnvironment: "DRAY_CRASH_SEED"))
    print("partition crash test (\(test)): seed \(random.seed) (DRAY_CRASH_SEED=\(random.seed) repeats it), \(kills) kills")
    let root = TemporaryDirectory("dray-partition-crash")

    var clean = try Trial(folder: root.path + "/clean", test)
    let cleanRun = try clean.start()
    try #require(cleanRun.wait() == .exited(0), "the clean run failed: \(cleanRun.errors)")
    let length = Date().timeIntervalSince(cleanRun.startedAt)
    let expected = try clean.issues()
    #expect(expected.count == 60)
    // The console's progress line ends with every partition.
    #expect(cleanRun.errors.contains("step issues: partitions 12/12 done, 60 rows, "))
    #expect(try clean.leftovers() == [])

    var landed = 0
    var trials = 0
    var failures: [String] = []
    while landed < kills && failures.isEmpty {
      trials += 1
      var trial = try Trial(folder: root.path + "/trial-\(trials)", test)
      var completed = false
      var finished: Set<String> = []
      func refetched() throws {
        let again = try trial.fetched().intersection(finished)
        if !again.isEmpty {
          let logs = (1...trial.runs).map { (try? String(contentsOfFile: trial.folder + "/run-\($0).err", encoding: .utf8)) ?? "" }
          failures.append(
            "trial \(trials) run \(trial.runs) fetched finished partitions again: \(again.sorted()); the runs' logs:\n"
              + logs.joined(separator: "\n---\n"))
        }
        try trial.server.reset()
        // Checkpoints that committed stay: a file that cannot be read now (a hot rollback
        // journal, rolled back by the next run) keeps the set known so far.
        finished = (try? trial.finished()) ?? finished
      }
      for _ in 0..<min(kills - landed, Int.random(in: 1...3, using: &random)) {
        let process = try trial.start()
        if let ended = process.wait(timeout: Double.random(in: 0...(length * 1.1), using: &random)) {
          if ended != .exited(0) { failures.append("trial \(trials) run \(trial.runs) ended with \(ended): \(process.errors)") }
          completed = true
          break
        }
        process.send(SIGKILL)
        let ended = process.wait()
        try refetched()
        guard ended == .signaled(SIGKILL), !trial.lastRunSucceeded() else {
          completed = ended == .exited(0) || ended == .signaled(SIGKILL)
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
        try refetched()
      }
      let issues = try trial.issues()
      if issues != expected {
        failures.append("trial \(trials) (\(trial.folder)): \(issues.count) issues, \(Set(issues.map { $0.first ?? nil }).count) distinct")
      }
      let left = try trial.leftovers()
      if !left.isEmpty { failures.append("trial \(trials): tables left behind: \(left)") }
    }
    print("partition crash test (\(test)): \(landed) kills in \(trials) trials")
    #expect(landed >= kills || !failures.isEmpty)
    #expect(failures.isEmpty, "seed \(random.seed):\n\(failures.joined(separator: "\n"))")
    withExtendedLifetime(root) {}
  }
}
