import DrayPostgres
import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Runners of a job on a PostgreSQL target meeting faults, with the built `dray` as child
/// processes and real signals (docs/postgres.md, "What the tests show"): a server restart in
/// the middle of a `COPY`, four runners started together, and a paused runner whose session
/// was ended while another took over.
@Suite struct PostgresFaultTests {
  static let bigRows = 20_000

  /// A job of the emulator's demo user on `database`, with `steps` (YAML, indented by two)
  /// and the job's `retry` block when given.
  static func job(
    _ name: String, emulator: Emulator, server: PostgresServer, database: String, retry: String? = nil, steps: String
  ) -> String {
    (retry.map { JobText.header(job: name, emulator: emulator, retry: $0) } ?? JobText.header(job: name, emulator: emulator))
      + "database: { url: \"\(server.urlText(database: database))\" }\nsteps:\n" + steps
  }

  static let bigSteps = """
      - id: schemes
        schemes: { resources: [FRUITS, BIG] }
      - id: fruits
        table_stream: { resource: FRUITS }
      - id: big
        table_stream: { resource: BIG }
      - id: tally
        sql: |
          CREATE TABLE IF NOT EXISTS tally(n bigint NOT NULL, big bigint NOT NULL);
          INSERT INTO tally SELECT 0, 0 WHERE NOT EXISTS (SELECT 1 FROM tally);
          UPDATE tally SET n = n + 1, big = (SELECT count(*) FROM {{ table "BIG" "output_table" }});

    """

  /// The run id a `dray run` printed in its first log line (`run <id> of job <job>`).
  static func runID(_ process: ChildProcess) -> String? {
    for line in process.errors.split(separator: "\n") {
      let words = line.split(separator: " ")
      if words.count > 4, words[1] == "run", words[3] == "of", words[4] == "job" { return String(words[2]) }
    }
    return nil
  }

  /// Lines of a run's standard error that are not dray's log lines (each begins with its
  /// time): text libpq or anything else printed past the console.
  static func strayLines(_ process: ChildProcess) -> [Substring] {
    process.errors.split(separator: "\n").filter { $0.firstMatch(of: #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /#) == nil }
  }

  /// The error of step `id` in the run's JSON report: code and message.
  static func stepError(_ process: ChildProcess, _ id: String) -> (code: String?, message: String?) {
    let steps = CrashTests.reportObject(process)?["steps"] as? [[String: Any]]
    let error = steps?.first { $0["id"] as? String == id }?["error"] as? [String: Any]
    return (error?["code"] as? String, error?["message"] as? String)
  }

  /// The rows of `sql` in `database`, read over TCP as the job's role.
  static func rows(_ server: PostgresServer, _ database: String, _ sql: String) throws -> [[String?]] {
    try server.connect(database: database).textRows(sql)
  }

  // MARK: A lost connection

  /// How the connection of a load is lost in the middle of its `COPY`.
  enum Lost: String, CaseIterable, CustomStringConvertible {
    /// `pg_ctl restart -m immediate`: every session ends, the run lock's too.
    case serverRestart
    /// `pg_terminate_backend` on the load's session alone, as a dropped connection: the run
    /// keeps its lock.
    case loadSessionEnded
    var description: String { rawValue }
  }

  /// The connection of a load lost while its `COPY` runs, in a job that does not retry
  /// (`retry.count: 0`; PostgresRetryTests shows a retried one finishing): the run fails
  /// as unavailable (exit 69) with a message naming what was lost, the table shows none of the rows it was sent, and
  /// the next run resumes at that step and loads every row once.
  @Test(.timeLimit(.minutes(5)), arguments: Lost.allCases)
  func aConnectionLostDuringACopyLosesNothingAndTheNextRunResumes(lost: Lost) throws {
    let server = try lost == .serverRestart ? PostgresServer() : PostgresServer.shared()
    let database = try server.createDatabase("lost")
    let emulator = try Emulator(["--generate", "BIG:\(Self.bigRows)"])
    let folder = TemporaryDirectory("dray-pg-lost")
    let manifest = try folder.write(
      "job.yaml", Self.job("lost", emulator: emulator, server: server, database: database, retry: "{ count: 0 }", steps: Self.bigSteps))

    let first = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/first")
    let admin = try server.admin()
    var copying: [Int32] = []
    #expect(
      first.waitUntil(timeout: 60) {
        copying =
          (try? PostgresServer.sessions(of: database, runningStatementLike: PostgresServer.copy(into: "BIG__"), through: admin)) ?? []
        return !copying.isEmpty
      })
    switch lost {
    case .serverRestart: try server.restart()
    case .loadSessionEnded: try server.terminate(backend: try #require(copying.first))
    }
    // A lost connection is a service unavailable: exit 69, a later run may succeed.
    #expect(first.wait(timeout: 60) == .exited(69))
    #expect(CrashTests.reportObject(first)?["failure_class"] as? String == "unavailable")
    #expect(
      CrashTests.reportObject(first)?["failure_reason"] as? String
        == (lost == .serverRestart
          ? "step big: the run lost the job's lock on the database (lock_lost); "
            + "the run journal: the database connection failed or was lost (database_error)"
          : "step big: the database connection failed or was lost (database_error)"))
    let failure = Self.stepError(first, "big")
    let connection = "PostgreSQL at postgresql://dray:***@127.0.0.1:\(server.port)/\(database)"
    switch lost {
    case .serverRestart:
      #expect(failure.code == "lock_lost")
      #expect(
        failure.message?.hasPrefix(
          "this run lost the run lock of job 'lost' (its session with PostgreSQL ended): another runner may take over, so this run commits nothing more; the next run resumes from the last commit; the step's own error: \(connection) closed the connection: "
        ) == true, "\(first.errors)")
    case .loadSessionEnded:
      #expect(failure.message?.hasPrefix("\(connection) closed the connection: ") == true, "\(first.errors)")
      // The run kept its lock and journal: its end and the step's failure are recorded.
      #expect(try Self.rows(server, database, "SELECT status FROM _dray_runs") == [["failed"]])
      #expect(try Self.rows(server, database, "SELECT status FROM _dray_checkpoints WHERE step_id = 'big'") == [["failed"]])
    }
    #expect(Self.strayLines(first).isEmpty, "\(first.errors)")
    #expect(!first.errors.contains(PostgresServer.password))
    #expect(try Self.rows(server, database, #"SELECT count(*) FROM "BIG__output_table""#) == [["0"]])
    #expect(
      try Self.rows(server, database, "SELECT step_id FROM _dray_checkpoints WHERE status = 'succeeded' ORDER BY step_id") == [
        ["fruits"], ["schemes"],
      ])

    let second = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/second")
    #expect(second.wait(timeout: 120) == .exited(0), "\(second.errors)")
    let firstRun = try #require(Self.runID(first))
    #expect(second.errors.contains("step fruits: skipped (finished in run \(firstRun), unchanged)"))
    let digest = try DatabaseDigest(postgres: server.connect(database: database))
    #expect(digest.tables["BIG__output_table"]?.rows == Self.bigRows)
    #expect(digest.tables["BIG__output_table"]?.distinctRows == Self.bigRows)
    #expect(try Self.rows(server, database, "SELECT n, big FROM tally") == [["1", "\(Self.bigRows)"]])
    #expect(
      try Self.rows(server, database, "SELECT status FROM _dray_runs ORDER BY seq") == [
        [lost == .serverRestart ? "abandoned" : "failed"], ["succeeded"],
      ])
  }

  // MARK: Signals

  /// What runs when the interruption test sends SIGTERM.
  enum Running: String, CaseIterable, CustomStringConvertible {
    /// The large table's `COPY`.
    case copy
    /// An `sql` step's statement that would take a minute.
    case statement
    var description: String { rawValue }
  }

  /// SIGTERM while a `COPY` or a long statement runs on PostgreSQL stops the run at once
  /// (the statement is cancelled, as SQLite's is interrupted): exit 130, nothing of the step
  /// kept, and the next run resumes at that step.
  @Test(.timeLimit(.minutes(5)), arguments: Running.allCases)
  func aSignalCancelsTheRunningStatement(running: Running) throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase("signal")
    let admin = try server.admin()
    let emulator = try Emulator(["--generate", "BIG:\(Self.bigRows)"])
    let folder = TemporaryDirectory("dray-pg-signal")
    let slow = """
        - id: slow
          sql: CREATE TABLE slept AS SELECT pg_sleep(60) IS NULL AS done;

      """
    let steps = running == .copy ? Self.bigSteps : Self.bigSteps.replacingOccurrences(of: "  - id: big\n", with: slow + "  - id: big\n")
    let manifest = try folder.write("job.yaml", Self.job("signal", emulator: emulator, server: server, database: database, steps: steps))
    let pattern = running == .copy ? PostgresServer.copy(into: "BIG__") : "CREATE TABLE slept %"

    let first = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/first")
    #expect(first.waitUntil(timeout: 60) { (try? PostgresServer.isRunning(statementLike: pattern, in: database, through: admin)) == true })
    first.send(SIGTERM)
    // Far less than the statement's minute.
    #expect(first.wait(timeout: 20) == .exited(130), "\(first.errors)")
    let step = running == .copy ? "big" : "slow"
    #expect(first.output.contains("interrupted by SIGTERM"), "\(first.output)")
    #expect(Self.strayLines(first).isEmpty, "\(first.errors)")
    #expect(try Self.rows(server, database, "SELECT to_regclass('public.slept') IS NULL") == [["1"]])
    #expect(try Self.rows(server, database, #"SELECT count(*) FROM "BIG__output_table""#) == [["0"]])
    #expect(try Self.rows(server, database, "SELECT count(*) FROM _dray_checkpoints WHERE step_id = '\(step)'") == [["0"]])
    #expect(try Self.rows(server, database, "SELECT status FROM _dray_runs") == [["interrupted"]])
    #expect(
      try PostgresServer.isRunning(statementLike: pattern, in: database, through: admin) == false, "the statement still runs")
  }

  // MARK: Four runners

  /// Two runners of job A from two folders, one of job B, started together; then, after the
  /// first A is killed with SIGKILL, one more A. One A runs, the other exits 75 at once and
  /// records nothing; B runs alongside; the A started after the kill takes over and
  /// resumes after the steps the killed run committed.
  @Test(.timeLimit(.minutes(5)))
  func oneRunnerOfAJobAtATimeOthersAlongsideAndATakeoverAfterAKill() throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase("four")
    // The first COUNTRIES answer (the first A's) trickles, so that A is still busy when B
    // and the loser end.
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 4000, "times": 1}"#])
    let folder = TemporaryDirectory("dray-pg-four")
    let jobA = Self.job(
      "pga", emulator: emulator, server: server, database: database,
      steps: """
          - id: schemes
            schemes: { resources: [FRUITS, COUNTRIES] }
          - id: fruits
            table_stream: { resource: FRUITS }
          - id: countries
            table_stream: { resource: COUNTRIES }

        """)
    let jobB = Self.job(
      "pgb", emulator: emulator, server: server, database: database,
      steps: """
          - id: currencies
            table_stream: { resource: CURRENCIES }

        """)
    let manifests = [
      try folder.write("a1/job.yaml", jobA), try folder.write("a2/job.yaml", jobA), try folder.write("b/job.yaml", jobB),
    ]
    let a = try [0, 1].map { try ChildProcess.dray(["run", manifests[$0]], logPrefix: folder.path + "/a\($0 + 1)") }
    let b = try ChildProcess.dray(["run", manifests[2]], logPrefix: folder.path + "/b")

    // The loser: the first A to end, timed from its own start to its end.
    var loserIndex: Int?
    var loserSeconds = 0.0
    let deadline = Date().addingTimeInterval(60)
    while loserIndex == nil && Date() < deadline {
      for index in a.indices where a[index].poll() != nil {
        loserSeconds = Date().timeIntervalSince(a[index].startedAt)
        loserIndex = index
        break
      }
      usleep(1_000)
    }
    let lost = try #require(loserIndex)
    let (loser, winner) = (a[lost], a[1 - lost])
    print("postgres four runners: the losing A exited \(loser.wait()) after \(String(format: "%.3f", loserSeconds)) s")
    #expect(loser.wait() == .exited(75), "\(loser.errors)")
    // Refused without waiting for the lock: the loser ended while the winner still runs.
    #expect(winner.isRunning)
    // The winner may not have recorded its run yet when the loser asks.
    let journal = "postgresql://dray:***@127.0.0.1:\(server.port)/\(database)"
    let refusal = try #require(loser.errors.split(separator: "\n").first { $0.contains(" error: ") }).split(separator: " error: ")[1]
    #expect(
      refusal.hasPrefix("job 'pga' is already running on the run journal \(journal) (run ")
        && refusal.contains(", process \(winner.pid), started ")
        || refusal.hasPrefix(
          "job 'pga' is already running on the run journal \(journal) (another session holds its run lock and has recorded no run yet: server process "
        ),
      "\(refusal)")
    #expect(refusal.hasSuffix("; this run changed nothing. Wait for it to finish, or stop it first."))

    #expect(b.wait(timeout: 60) == .exited(0), "\(b.errors)")
    #expect(winner.waitUntil { winner.errors.contains("step countries: table_stream COUNTRIES") })
    #expect(winner.isRunning, "B ran alongside A")
    let killedRun = try #require(Self.runID(winner))
    winner.send(SIGKILL)
    #expect(winner.wait() == .signaled(SIGKILL))

    let takeover = try ChildProcess.dray(["run", manifests[lost]], logPrefix: folder.path + "/a3")
    #expect(takeover.waitUntil { takeover.errors.contains("step countries: table_stream") })
    let takeoverSeconds = Date().timeIntervalSince(takeover.startedAt)
    #expect(takeover.wait(timeout: 60) == .exited(0), "\(takeover.errors)")
    print("postgres four runners: the A started after the kill reached its first step in \(String(format: "%.3f", takeoverSeconds)) s")
    #expect(takeover.errors.contains("resuming run \(killedRun)"))
    #expect(takeover.errors.contains("step fruits: skipped (finished in run \(killedRun), unchanged)"))

    #expect(
      try Self.rows(server, database, "SELECT job, status FROM _dray_runs ORDER BY job, seq") == [
        ["pga", "abandoned"], ["pga", "succeeded"], ["pgb", "succeeded"],
      ])
    #expect(try Self.rows(server, database, #"SELECT count(*) FROM "COUNTRIES__output_table""#) == [["249"]])
    #expect(try Self.rows(server, database, #"SELECT count(*) FROM "FRUITS__output_table""#) == [["5"]])
    #expect(try Self.rows(server, database, #"SELECT count(*) FROM "CURRENCIES__output_table""#) == [["181"]])
  }

  // MARK: Fencing

  /// Which sessions of the paused runner the fencing test ends.
  enum Ended: String, CaseIterable, CustomStringConvertible {
    /// Every session: the one holding the lock and the load's (paused in its `COPY`).
    case everySession
    /// Only the session holding the run lock; the load's stays open (paused while
    /// downloading), so the fence is what stops its commit.
    case theLockSession
    var description: String { rawValue }
  }

  /// A runner paused with SIGSTOP during its load has its sessions ended on the server;
  /// a second runner takes over and finishes; the first, resumed with SIGCONT, commits
  /// nothing and exits naming the lock it lost.
  @Test(.timeLimit(.minutes(5)), arguments: Ended.allCases)
  func aPausedRunnerThatLostItsLockCommitsNothing(ended: Ended) throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase("fence")
    let admin = try server.admin()
    // For `theLockSession`, the first BIG answer trickles (about 1.5 s), so that the
    // runner is paused while it downloads, outside any transaction.
    let trickle = ended == .theLockSession ? [#"--fault={"path": "/api/v1/rpc/BIG/", "trickle": 1200000, "times": 1}"#] : []
    let emulator = try Emulator(["--generate", "BIG:\(Self.bigRows)"] + trickle)
    let folder = TemporaryDirectory("dray-pg-fence")
    let text = Self.job("pgfence", emulator: emulator, server: server, database: database, steps: Self.bigSteps)
    let manifests = [try folder.write("first/job.yaml", text), try folder.write("second/job.yaml", text)]

    let first = try ChildProcess.dray(["run", manifests[0]], logPrefix: folder.path + "/first")
    switch ended {
    case .everySession:
      #expect(
        first.waitUntil(timeout: 60) {
          (try? PostgresServer.isRunning(statementLike: PostgresServer.copy(into: "BIG__"), in: database, through: admin)) == true
        })
    case .theLockSession:
      let downloads = folder.path + "/first/.dray/downloads/pgfence"
      #expect(
        first.waitUntil(timeout: 60) {
          ((try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []).contains {
            $0.hasPrefix("big-") && $0.hasSuffix(".part")
          }
        })
    }
    first.send(SIGSTOP)
    defer { first.send(SIGCONT) }
    let lockHolders = try PostgresServer.advisoryLockHolders(in: database, through: admin)
    let sessions = try PostgresServer.sessions(of: database, through: admin)
    #expect(lockHolders.count == 1 && sessions.count == 2, "lock \(lockHolders), sessions \(sessions)")
    for pid in ended == .everySession ? sessions : lockHolders { try server.terminate(backend: pid) }
    #expect(first.waitUntil { (try? PostgresServer.advisoryLockHolders(in: database, through: admin).isEmpty) == true })

    let second = try ChildProcess.dray(["run", manifests[1]], logPrefix: folder.path + "/second")
    #expect(second.wait(timeout: 120) == .exited(0), "\(second.errors)")
    let firstRun = try #require(Self.runID(first))
    let secondRun = try #require(Self.runID(second))
    #expect(second.errors.contains("run \(firstRun) (process \(first.pid)) ended without recording an end; marked abandoned"))

    first.send(SIGCONT)
    #expect(first.wait(timeout: 60) == .exited(69), "\(first.errors)")  // the lock lost with its session: unavailable
    let failure = Self.stepError(first, "big")
    #expect(failure.code == "lock_lost")
    // Whether its store's session or its lock's ended, the first runner learns on resuming
    // that another runner held the lock since: with every session ended, its retry connects
    // again and finds the lock's generation moved on past its own retake.
    #expect(
      failure.message
        == "this run lost the run lock of job 'pgfence' to another runner (lock generation 2, this run held 1): it commits nothing more; the other runner resumes from the last commit",
      "\(first.errors)")
    #expect(Self.strayLines(first).isEmpty, "\(first.errors)")
    #expect(!first.errors.contains(PostgresServer.password))

    let digest = try DatabaseDigest(postgres: server.connect(database: database))
    #expect(digest.tables["BIG__output_table"]?.rows == Self.bigRows)
    #expect(digest.tables["BIG__output_table"]?.distinctRows == Self.bigRows)
    #expect(try Self.rows(server, database, "SELECT n, big FROM tally") == [["1", "\(Self.bigRows)"]])
    let runs = try Self.rows(server, database, "SELECT run_id, status FROM _dray_runs ORDER BY seq")
    #expect(runs == [[firstRun, "abandoned"], [secondRun, "succeeded"]], "\(runs)")
    // The first run committed the steps before the load; the second resumed after them.
    let checkpoints = try Self.rows(server, database, "SELECT step_id, run_id, status FROM _dray_checkpoints ORDER BY step_id")
    #expect(
      checkpoints == [
        ["big", secondRun, "succeeded"], ["fruits", firstRun, "succeeded"], ["schemes", firstRun, "succeeded"],
        ["tally", secondRun, "succeeded"],
      ], "\(checkpoints)")
  }
}
