import DrayPostgres
import DrayTestSupport
import Foundation
import Glibc
import Testing

/// `CrashTests` on a PostgreSQL target: kills `dray run` with SIGKILL at random instants,
/// runs it again until the job completes, and checks that the database ends exactly as a
/// clean run leaves it (docs/postgres.md, "What the tests show").
///
/// The job (`crashJob`) has four loads: a generated resource large enough that its `COPY`
/// takes a while, two loads in a `parallel` group, a small one; and two SQL steps that are
/// not idempotent (they append to `load_log` and bump a counter), so that a step committed
/// twice shows as extra rows or a wrong counter.
///
/// Each trial gets a new database and folder and is killed one to four times in a row, then
/// runs to completion. A third of the kill instants are uniform over what is left of the
/// clean run after the steps already finished; a third fall from 30 ms before to 10 ms after
/// a step's end, where a commit and the next step meet; a third land while the large
/// table's `COPY` runs (the test watches `pg_stat_activity` and kills within the first 80%
/// of the clean run's `COPY` window). After a trial every table must equal the clean run's
/// (`DatabaseDigest(postgres:)`: columns and types, row count, no duplicate rows, SHA-256 of
/// the sorted rows; the journal, the lock's generations and load times left out), the
/// journal must hold exactly one finished run and none `running`, and the final report must
/// mark as skipped exactly the steps an earlier run finished.
///
/// Environment: `DRAY_PG_CRASH_KILLS` (default 30), `DRAY_PG_CRASH_SEED` (the seed is
/// printed), `DRAY_PG_CRASH_ROWS` (rows of the large resource, default 20000).
@Suite struct PostgresCrashTests {
  static let topLevelSteps = ["schemes", "fruits", "big", "log-big", "references", "tally"]

  static func crashJob(host: String, url: String) -> String {
    """
    version: 1
    job: pgcrash
    platform:
      host: "\(host)"
      environment: DocumentationExampleEnv
      project: DocumentationExampleProj
      timeouts: { connect: 2s, idle: 10s }
    auth: { username: demo, password: demo-password }
    database: { url: "\(url)" }
    retry: { count: 3, interval: 50ms }
    steps:
      - id: schemes
        schemes: { resources: [FRUITS, BIG, CURRENCIES, COUNTRIES] }
      - id: fruits
        table_stream: { resource: FRUITS }
      - id: big
        table_stream: { resource: BIG }
      - id: log-big
        sql: |
          CREATE TABLE IF NOT EXISTS load_log(step text NOT NULL, rows bigint NOT NULL, total numeric);
          INSERT INTO load_log SELECT 'big', count(*), sum(quantity) FROM {{ table "BIG" "output_table" }};
      - id: references
        parallel:
          max: 2
          steps:
            - id: currencies
              table_stream: { resource: CURRENCIES }
            - id: countries
              table_stream: { resource: COUNTRIES }
      - id: tally
        sql: |
          CREATE TABLE IF NOT EXISTS tally(n bigint NOT NULL);
          INSERT INTO tally SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM tally);
          UPDATE tally SET n = n + 1;
          INSERT INTO load_log SELECT 'countries', count(*), NULL FROM {{ table "COUNTRIES" "output_table" }};

    """
  }

  /// One trial: its folder, its database, and the logs of each process.
  struct Trial {
    let folder: String
    let manifest: String
    let database: String
    let server: PostgresServer
    var runs = 0

    init(folder: String, host: String, server: PostgresServer) throws {
      self.folder = folder
      self.server = server
      database = try server.createDatabase("pgcrash")
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      manifest = folder + "/pgcrash.yaml"
      try PostgresCrashTests.crashJob(host: host, url: server.urlText(database: database)).write(
        toFile: manifest, atomically: true, encoding: .utf8)
    }

    mutating func start() throws -> ChildProcess {
      runs += 1
      return try ChildProcess.dray(["run", manifest], logPrefix: folder + "/run-\(runs)")
    }

    /// The rows of `sql` in the trial's database, each value as text; none when the
    /// journal's tables do not exist yet.
    func rows(_ sql: String) throws -> [[String?]] {
      let connection = try server.connect(database: database)
      guard try !#require(connection.execute("SELECT to_regclass('public._dray_runs') IS NULL").rows[0][0].bool as Bool?) else { return [] }
      return try connection.textRows(sql)
    }

    func digest() throws -> DatabaseDigest { try DatabaseDigest(postgres: server.connect(database: database)) }
  }

  @Test(.timeLimit(.minutes(10)))
  func killedAtRandomInstantsTheJobEndsAsACleanRunDoes() throws {
    let environment = ProcessInfo.processInfo.environment
    let kills = Int(environment["DRAY_PG_CRASH_KILLS"] ?? "") ?? 30
    let rows = Int(environment["DRAY_PG_CRASH_ROWS"] ?? "") ?? 20_000
    var random = SeededRandom(seed: SeededRandom.seed(fromEnvironment: "DRAY_PG_CRASH_SEED"))
    let seed = random.seed
    print("postgres crash test: seed \(seed) (DRAY_PG_CRASH_SEED=\(seed) repeats it), \(kills) kills, \(rows) rows")
    let began = Date()
    let server = try PostgresServer.shared()
    let admin = try server.admin()
    let emulator = try Emulator(["--generate", "BIG:\(rows)"])
    let root = TemporaryDirectory("dray-pg-crash")

    // The clean run: the tables every trial must end with, its steps' timeline, and when the
    // large table's COPY ran.
    var clean = try Trial(folder: root.path + "/clean", host: emulator.url, server: server)
    let cleanRun = try clean.start()
    var copyWindow: (first: Double, last: Double)?
    while cleanRun.isRunning {
      if try PostgresServer.isRunning(statementLike: PostgresServer.copy(into: "BIG__"), in: clean.database, through: admin) {
        let now = Date().timeIntervalSince(cleanRun.startedAt)
        copyWindow = (copyWindow?.first ?? now, now)
      }
      usleep(2_000)
    }
    try #require(cleanRun.wait() == .exited(0), "the clean run failed: \(cleanRun.errors)")
    let expected = try clean.digest()
    let timeline = CrashTests.stepEnds(cleanRun)
    let length = timeline.last?.offset ?? 2
    #expect(expected.tables["tally"]?.rows == 1)
    #expect(expected.tables["load_log"]?.rows == 2)
    #expect(expected.tables["BIG__output_table"]?.rows == rows)
    let copying = try #require(copyWindow, "the clean run's COPY of BIG was never seen running")
    let copyLength = max(0.005, copying.last - copying.first)
    print(
      "postgres crash test: clean run \(String(format: "%.2f", length)) s, COPY of BIG from \(String(format: "%.2f", copying.first)) s "
        + "for \(String(format: "%.3f", copyLength)) s; steps end at "
        + timeline.map { "\($0.id) \(String(format: "%.2f", $0.offset))" }.joined(separator: ", "))

    var landed = 0
    var trials = 0
    var phases: [String: Int] = [:]
    var finishedBeforeKill = 0
    var failures: [String] = []
    while landed < kills && failures.isEmpty {
      trials += 1
      var trial = try Trial(folder: root.path + "/trial-\(trials)", host: emulator.url, server: server)
      let chain = min(kills - landed, Int.random(in: 1...4, using: &random))
      var completed = false
      var landedInTrial = 0
      for _ in 0..<chain {
        // A resumed run skips what earlier runs finished: aim within what is left.
        let done = Set(try trial.rows("SELECT step_id FROM _dray_checkpoints WHERE status = 'succeeded'").compactMap { $0[0] })
        let skipped = CrashTests.offset(after: done, topLevelSteps: PostgresCrashTests.topLevelSteps, timeline: timeline)
        let ends = timeline.filter { $0.offset > skipped }.map { $0.offset - skipped }
        let kind = Int.random(in: 0..<3, using: &random)
        let process = try trial.start()
        var ended: ChildProcess.Termination?
        if kind == 2 && !done.contains("big") {
          // While the large table's COPY runs.
          let delay = Double.random(in: 0...(copyLength * 0.8), using: &random)
          _ = process.waitUntil(timeout: 60) {
            (try? PostgresServer.isRunning(statementLike: PostgresServer.copy(into: "BIG__"), in: trial.database, through: admin)) == true
          }
          ended = process.wait(timeout: delay)
        } else {
          let delay =
            kind == 0 || ends.isEmpty
            ? Double.random(in: 0...((length - skipped) * 1.05), using: &random)
            : max(0, ends.randomElement(using: &random)! + Double.random(in: -0.03...0.01, using: &random))
          ended = process.wait(timeout: delay)
        }
        if let ended {
          // It finished before the instant came: no kill, and the trial is over.
          if ended != .exited(0) { failures.append("trial \(trials) run \(trial.runs) ended with \(ended): \(process.errors)") }
          finishedBeforeKill += 1
          completed = true
          break
        }
        let midCopy = try PostgresServer.isRunning(statementLike: PostgresServer.copy(into: "BIG__"), in: trial.database, through: admin)
        process.send(SIGKILL)
        let end = process.wait()
        if end == .exited(0) {
          finishedBeforeKill += 1
          completed = true
          break
        }
        guard end == .signaled(SIGKILL) else {
          failures.append("trial \(trials) run \(trial.runs) ended with \(end) instead of the kill: \(process.errors)")
          break
        }
        landed += 1
        landedInTrial += 1
        let phase =
          midCopy ? "during step big (in COPY)" : CrashTests.phase(of: process, downloads: trial.folder + "/.dray/downloads/pgcrash")
        phases[phase, default: 0] += 1
        // Killed after recording its success: the job is complete.
        let last = try trial.rows("SELECT status FROM _dray_runs ORDER BY started_at DESC, seq DESC LIMIT 1")
        if last.first?.first == "succeeded" {
          completed = true
          break
        }
      }
      guard failures.isEmpty else { break }

      // Run again until the job completes: the first rerun must do it, nothing failed.
      var final: ChildProcess?
      if !completed {
        let process = try trial.start()
        let ended = process.wait(timeout: 120) ?? .signaled(0)
        if ended != .exited(0) {
          failures.append("trial \(trials): the rerun ended with \(ended):\n\(process.output)\n\(process.errors)")
          break
        }
        final = process
      }
      let problems = landedInTrial == 0 ? [] : try check(trial, final: final, expected: expected)
      if !problems.isEmpty {
        failures.append("trial \(trials) (\(trial.folder), database \(trial.database)):\n  " + problems.joined(separator: "\n  "))
        break
      }
      try? FileManager.default.removeItem(atPath: trial.folder)
    }

    print(
      "postgres crash test: \(landed) kills in \(trials) trials, \(finishedBeforeKill) runs finished before their kill, "
        + String(format: "%.1f s", Date().timeIntervalSince(began)))
    for (phase, count) in phases.sorted(by: { $0.key < $1.key }) { print("postgres crash test:   \(count) killed \(phase)") }
    #expect(failures.isEmpty, "seed \(seed) (DRAY_PG_CRASH_SEED=\(seed) repeats it):\n\(failures.joined(separator: "\n"))")
    #expect(phases["during step big (in COPY)", default: 0] > 0, "no kill landed in the COPY (seed \(seed))")
    withExtendedLifetime(root) {}
  }

  /// Everything that differs between a completed trial and the clean run.
  func check(_ trial: Trial, final: ChildProcess?, expected: DatabaseDigest) throws -> [String] {
    var problems = try trial.digest().differences(from: expected)
    let runs = try trial.rows("SELECT status FROM _dray_runs ORDER BY started_at DESC, seq DESC").map { $0[0] ?? "" }
    if runs.first != "succeeded" || runs.filter({ $0 == "succeeded" }).count != 1 || runs.contains("running") {
      problems.append("the journal does not say one finished run: \(runs)")
    }
    guard let final else { return problems }
    let checkpoints = try trial.rows("SELECT step_id, run_id, status FROM _dray_checkpoints")
    return try problems
      + CrashTests.reportProblems(final, checkpoints: checkpoints, topLevelSteps: PostgresCrashTests.topLevelSteps)
  }
}
