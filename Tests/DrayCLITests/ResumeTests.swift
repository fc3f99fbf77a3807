import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A small job in its own folder: schemes, two loads and a step that is not idempotent
/// (`tally` gains a row each time it runs), run by the built `dray`.
struct ResumeJob {
  let folder = TemporaryDirectory("dray-resume")
  let emulator: Emulator
  var manifest: String { folder.path + "/resume.yaml" }
  var database: String { folder.path + "/data/resume.sqlite" }
  var lockFile: String { folder.path + "/.dray/resume.lock" }

  static func text(host: String, fruits: String = "{ resource: FRUITS }") -> String {
    """
    version: 1
    job: resume
    platform:
      host: "\(host)"
      environment: DocumentationExampleEnv
      project: DocumentationExampleProj
      timeouts: { connect: 2s }
    auth: { username: demo, password: demo-password }
    database: { path: data/resume.sqlite }
    retry: { count: 2, interval: 10ms }
    steps:
      - id: schemes
        schemes: {}
      - id: fruits
        table_stream: \(fruits)
      - id: countries
        table_stream: { resource: COUNTRIES }
      - id: tally
        sql: CREATE TABLE IF NOT EXISTS tally(n INTEGER); INSERT INTO tally VALUES (1);

    """
  }

  init(_ emulatorArguments: [String] = [], fruits: String = "{ resource: FRUITS }") throws {
    emulator = try Emulator(emulatorArguments)
    try write(fruits: fruits)
  }

  func write(fruits: String = "{ resource: FRUITS }") throws {
    try folder.write("resume.yaml", ResumeJob.text(host: emulator.url, fruits: fruits))
  }

  func run(_ options: [String] = [], environment: [String: String] = [:]) throws -> Command.Result {
    try Command.dray(["run", manifest] + options, environment: environment)
  }

  func start(_ options: [String] = [], name: String, environment: [String: String] = [:]) throws -> ChildProcess {
    try ChildProcess.dray(["run", manifest] + options, environment: environment, logPrefix: folder.path + "/" + name)
  }

  func rows(_ sql: String) throws -> [[String?]] { try SQLiteFile.rows(database, sql) }

  /// Requests the emulator received for `resource`'s table data.
  func rpcRequests(_ resource: String) throws -> [[String: Any]] {
    try emulator.requests().filter { ($0["path"] as? String) == "/api/v1/rpc/\(resource)/" }
  }
}

/// The report a run printed the path of, as JSON.
struct Report {
  let json: [String: Any]

  init(_ output: String) throws {
    let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("report: ") })
    let data = try #require(FileManager.default.contents(atPath: String(line.dropFirst("report: ".count))))
    json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
  }

  var runID: String { json["run_id"] as? String ?? "" }
  var status: String { json["status"] as? String ?? "" }
  var resumes: String? { json["resumes"] as? String }
  var steps: [[String: Any]] { json["steps"] as? [[String: Any]] ?? [] }

  /// `id status [skip reason]` for each step.
  var lines: [String] {
    steps.map { step in
      [step["id"] as? String, step["status"] as? String, step["skip_reason"] as? String].compactMap { $0 }.joined(separator: " ")
    }
  }

  func step(_ id: String) -> [String: Any] { steps.first { $0["id"] as? String == id } ?? [:] }
}

@Suite struct ResumeTests {
  // MARK: Failing steps

  @Test func aResourceThatAnswers500UntilRetriesRunOutStopsTheRunAndTheNextRunStartsAtThatStep() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 500}"#])
    let first = try job.run()
    #expect(first.status == 69)  // 500 until the retries ran out: unavailable
    let url = job.emulator.url + "api/v1/rpc/COUNTRIES/"
    #expect(
      first.stdout.contains("  countries  table_stream  failed     3 attempts; HTTP 500 Internal Server Error from \(url): injected fault"))
    #expect(first.stdout.contains("  tally      sql           not_run    an earlier step failed"))
    let failed = try Report(first.stdout)
    #expect(failed.status == "failed")
    #expect((failed.step("countries")["attempts"] as? [Any])?.count == 3)
    #expect(try job.rows("SELECT name FROM sqlite_schema WHERE name = 'tally'").isEmpty)
    #expect(try job.rows("SELECT status FROM _dray_runs") == [["failed"]])
    #expect(
      try job.rows("SELECT step_id, status FROM _dray_checkpoints ORDER BY rowid") == [
        ["schemes", "succeeded"], ["fruits", "succeeded"], ["countries", "failed"],
      ])

    try job.emulator.admin("DELETE", "faults")
    let second = try job.run()
    #expect(second.status == 0, "\(second.output)")
    let resumed = try Report(second.stdout)
    #expect(resumed.resumes == failed.runID)
    #expect(
      resumed.lines == [
        "schemes skipped finished in run \(failed.runID), unchanged", "fruits skipped finished in run \(failed.runID), unchanged",
        "countries succeeded", "tally succeeded",
      ])
    #expect(second.stdout.contains("  schemes    schemes       skipped    finished in run \(failed.runID), unchanged"))
    #expect(try job.rpcRequests("FRUITS").count == 1)
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
    #expect(try job.rows("SELECT count(*) FROM tally") == [["1"]])
  }

  /// A run recorded while the clock was fast keeps its future `started_at`, but the runs
  /// recorded after it are newer: the journal's insertion order decides.
  @Test func aRunRecordedWithAFutureStartTimeIsNotTheNewestOnceALaterRunIsRecorded() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 500}"#])
    let first = try job.run()
    #expect(first.status == 69)
    let firstID = try Report(first.stdout).runID
    try ResumeTests.sqlite(job.database, "UPDATE _dray_runs SET started_at = '2999-01-01T00:00:00.000Z'")
    try job.emulator.admin("DELETE", "faults")

    let second = try job.run()
    #expect(second.status == 0, "\(second.output)")
    let resumed = try Report(second.stdout)
    #expect(resumed.resumes == firstID)
    #expect(
      resumed.lines == [
        "schemes skipped finished in run \(firstID), unchanged", "fruits skipped finished in run \(firstID), unchanged",
        "countries succeeded", "tally succeeded",
      ])

    let third = try job.run()
    #expect(third.status == 0, "\(third.output)")
    let fresh = try Report(third.stdout)
    #expect(fresh.resumes == nil)
    #expect(fresh.lines == ["schemes succeeded", "fruits succeeded", "countries succeeded", "tally succeeded"])
    #expect(try job.rows("SELECT count(*) FROM tally") == [["2"]])

    let status = try Command.dray(["status", job.manifest])
    let listed = status.stdout.split(separator: "\n").dropFirst().prefix(3).map { String($0.split(separator: " ")[0]) }
    #expect(listed == [fresh.runID, resumed.runID, firstID])
    let plan = try Command.dray(["plan", job.manifest])
    #expect(!plan.stdout.contains(firstID), "\(plan.stdout)")
  }

  @Test func aChangedStepRunsAgainWithEveryStepAfterIt() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 500}"#])
    let first = try job.run()
    #expect(first.status == 69)
    try job.emulator.admin("DELETE", "faults")
    try job.write(fruits: "{ resource: FRUITS, transaction: false }")
    let second = try job.run()
    #expect(second.status == 0, "\(second.output)")
    let firstID = try Report(first.stdout).runID
    #expect(
      try Report(second.stdout).lines == [
        "schemes skipped finished in run \(firstID), unchanged", "fruits succeeded", "countries succeeded", "tally succeeded",
      ])
    #expect(try job.rpcRequests("FRUITS").count == 2)
    #expect(try job.rows("SELECT count(*) FROM FRUITS__output_table") == [["5"]])
  }

  @Test func aStepAfterAFailedOnlyStepSaysItWasNotSelectedNotThatAnEarlierStepFailed() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 500}"#])
    let only = try job.run(["--only", "countries"])
    #expect(only.status == 69, "\(only.output)")
    #expect(only.stdout.contains("  tally      sql           skipped    not selected by --only countries"), "\(only.stdout)")
    #expect(!only.stdout.contains("an earlier step failed"), "\(only.stdout)")
    #expect(
      try Report(only.stdout).lines == [
        "schemes skipped not selected by --only countries", "fruits skipped not selected by --only countries", "countries failed",
        "tally skipped not selected by --only countries",
      ])
  }

  @Test func operatorFlagsOnlyFromAndFresh() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 500, "times": 3}"#])
    let failed = try Report(try job.run().stdout)
    #expect(failed.status == "failed")

    // --only re-runs one step; the next plain run continues the failed run after it.
    let only = try job.run(["--only", "countries"])
    #expect(only.status == 0, "\(only.output)")
    let onlyReport = try Report(only.stdout)
    #expect(
      onlyReport.lines == [
        "schemes skipped not selected by --only countries", "fruits skipped not selected by --only countries",
        "countries succeeded", "tally skipped not selected by --only countries",
      ])
    let plain = try job.run()
    #expect(plain.status == 0, "\(plain.output)")
    let plainReport = try Report(plain.stdout)
    #expect(plainReport.resumes == failed.runID)
    #expect(
      plainReport.lines == [
        "schemes skipped finished in run \(failed.runID), unchanged", "fruits skipped finished in run \(failed.runID), unchanged",
        "countries skipped finished in run \(onlyReport.runID), unchanged", "tally succeeded",
      ])
    #expect(try job.rows("SELECT count(*) FROM tally") == [["1"]])

    // --from runs a step and every later one, even after a success.
    let from = try job.run(["--from", "countries"])
    #expect(from.status == 0)
    #expect(
      try Report(from.stdout).lines == [
        "schemes skipped before --from countries", "fruits skipped before --from countries", "countries succeeded", "tally succeeded",
      ])
    #expect(try job.rows("SELECT count(*) FROM tally") == [["2"]])

    // --fresh runs everything.
    let fresh = try job.run(["--fresh"])
    #expect(fresh.status == 0)
    #expect(try Report(fresh.stdout).lines == ["schemes succeeded", "fruits succeeded", "countries succeeded", "tally succeeded"])
    #expect(
      try job.rows("SELECT fresh, from_step, only_step FROM _dray_runs ORDER BY rowid") == [
        ["0", nil, nil], ["0", nil, "countries"], ["0", nil, nil], ["0", "countries", nil], ["1", nil, nil],
      ])
  }

  @Test func anSQLStepMayNotCommitOnItsOwn() throws {
    let job = try ResumeJob()
    try job.folder.write(
      "resume.yaml",
      ResumeJob.text(host: job.emulator.url).replacing(
        "sql: CREATE TABLE IF NOT EXISTS tally(n INTEGER); INSERT INTO tally VALUES (1);",
        with: "sql: CREATE TABLE tally(n INTEGER); INSERT INTO tally VALUES (1); COMMIT; INSERT INTO tally VALUES (2);"))
    let result = try job.run()
    #expect(result.status == 1)
    #expect(
      result.stdout.contains(
        "  tally      sql           failed     'COMMIT' would end the transaction dray runs the step in; remove it: dray commits the step's statements together with its checkpoint, so that a rerun never repeats them\n"
      ))
    #expect(try job.rows("SELECT name FROM sqlite_schema WHERE name = 'tally'").isEmpty)
  }

  /// When the journal cannot record the end of the run (here another program dropped its
  /// runs table while the run waited for an answer), the run does not claim success.
  @Test func aRunWhoseEndTheJournalCannotRecordFails() throws {
    // COUNTRIES answers after 4 s; until its first bytes come, its load holds no lock.
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "delay": 4}"#])
    let run = try job.start(name: "unrecorded")
    #expect(run.waitUntil { run.errors.contains("step countries: table_stream") })
    try SQLiteFile.execute(job.database, "DROP TABLE _dray_runs")
    #expect(run.wait() == .exited(1), "\(run.output)\(run.errors)")
    let message =
      "the run journal at \(job.database) could not record the end of this run: SQLite error 1 in \(job.database): no such table: _dray_runs (in: UPDATE _dray_runs SET status = ?, ended_at = ? WHERE run_id = ?); the next 'dray run' resumes the run when the journal is whole, and says what to do when it is not"
    #expect(run.output.hasPrefix("job resume: failed in "), "\(run.output)")
    #expect(run.output.contains("error: \(message)\n"))
    #expect(run.errors.contains("error: \(message)\n"))
    let report = try Report(run.output)
    #expect(report.status == "failed")
    #expect(report.json["exit_code"] as? Int == 1)
    #expect(report.json["error"] as? String == message)
  }

  // MARK: Crashes at chosen instants

  /// What a rerun after a kill at `point` skips.
  static let crashPoints: [(point: String, skipped: [String])] = [
    ("run-recorded", []),
    ("downloaded:countries", ["schemes", "fruits"]),
    ("before-commit:countries", ["schemes", "fruits"]),
    ("committed:countries", ["schemes", "fruits", "countries"]),
    ("before-commit:tally", ["schemes", "fruits", "countries"]),
    ("committed:tally", ["schemes", "fruits", "countries", "tally"]),
  ]

  @Test(arguments: ResumeTests.crashPoints.map(\.point))
  func aKillAtEachInstantLeavesWhatACleanRunLeaves(point: String) throws {
    let skipped = try #require(ResumeTests.crashPoints.first { $0.point == point }?.skipped)
    let job = try ResumeJob()
    let clean = ResumeJob(sharing: job)
    #expect(try clean.run().status == 0)

    let killed = try job.start(name: "killed", environment: ["DRAY_TEST_CRASH_AT": point])
    #expect(killed.wait() == .signaled(SIGKILL))
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    let report = try Report(rerun.stdout)
    let abandoned = try #require(try job.rows("SELECT run_id, status FROM _dray_runs ORDER BY rowid").first)
    #expect(abandoned[1] == "abandoned")
    #expect(report.resumes == abandoned[0])
    #expect(
      report.lines
        == ["schemes", "fruits", "countries", "tally"].map { id in
          skipped.contains(id) ? "\(id) skipped finished in run \(abandoned[0]!), unchanged" : "\(id) succeeded"
        })
    #expect(rerun.stderr.contains("run \(abandoned[0]!) (process \(killed.pid)) ended without recording an end; marked abandoned"))
    #expect(try DatabaseDigest(path: job.database).differences(from: DatabaseDigest(path: clean.database)) == [])
  }

  @Test func aDownloadFinishedButNotLoadedIsConfirmedWithTheServerInsteadOfFetchedAgain() throws {
    let job = try ResumeJob()
    let killed = try job.start(name: "killed", environment: ["DRAY_TEST_CRASH_AT": "downloaded:countries"])
    #expect(killed.wait() == .signaled(SIGKILL))
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    let notes = try Report(rerun.stdout).step("countries")["notes"] as? [String]
    #expect(notes == ["the answer an earlier run downloaded (17067 bytes) is unchanged; not downloaded again"])
    let requests = try job.rpcRequests("COUNTRIES").map { ($0["headers"] as? [String: String])?["X-Range"] }
    #expect(requests == [nil, "bytes=17067-"])
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
    #expect(try FileManager.default.contentsOfDirectory(atPath: job.folder.path + "/.dray/downloads").isEmpty)
  }

  @Test func aKillWhileANewJournalIsBuiltLeavesNoJournalAndTheNextRunStartsClean() throws {
    let job = try ResumeJob()
    let killed = try job.start(name: "killed", environment: ["DRAY_TEST_CRASH_AT": "journal-built"])
    #expect(killed.wait() == .signaled(SIGKILL))
    #expect(try FileManager.default.contentsOfDirectory(atPath: job.folder.path + "/data") == ["resume.sqlite.new-\(killed.pid)"])
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    #expect(try Report(rerun.stdout).lines == ["schemes succeeded", "fruits succeeded", "countries succeeded", "tally succeeded"])
    #expect(try FileManager.default.contentsOfDirectory(atPath: job.folder.path + "/data") == ["resume.sqlite"])
  }

  /// A kill while a database is in rollback-journal mode (a new database is, until dray
  /// switches it to WAL) leaves a hot journal; the next run lets SQLite roll it back instead
  /// of calling the journal unreadable.
  @Test func aHotRollbackJournalIsRecoveredByTheNextRun() throws {
    let job = try ResumeJob()
    #expect(try job.run().status == 0)
    let script = """
      import os, sqlite3, sys
      c = sqlite3.connect(sys.argv[1], isolation_level=None)
      c.execute("PRAGMA journal_mode=DELETE")
      c.execute("PRAGMA cache_size=1")
      c.execute("BEGIN IMMEDIATE")
      for i in range(5000):
          c.execute("INSERT INTO tally VALUES (?)", (i,))
      os._exit(0)  # neither commit nor rollback: the journal stays hot
      """
    let cut = try Command.run("/usr/bin/env", ["python3", "-c", script, job.database])
    #expect(cut.status == 0, "\(cut.output)")
    #expect(FileManager.default.fileExists(atPath: job.database + "-journal"))
    let again = try job.run()
    #expect(again.status == 0, "\(again.output)")
    #expect(try job.rows("SELECT count(*) FROM tally") == [["2"]])
  }

  @Test func aKillAfterTheRunIsRecordedAsSucceededLeavesAFinishedJob() throws {
    let job = try ResumeJob()
    let killed = try job.start(name: "killed", environment: ["DRAY_TEST_CRASH_AT": "run-finished"])
    #expect(killed.wait() == .signaled(SIGKILL))
    #expect(try job.rows("SELECT status FROM _dray_runs") == [["succeeded"]])
    #expect(try job.rows("SELECT count(*) FROM tally") == [["1"]])
    // The report was not written yet; the journal is the record.
    #expect(!FileManager.default.fileExists(atPath: job.folder.path + "/.dray/reports"))
  }

  // MARK: One run at a time

  @Test func aSecondRunWhileTheFirstHoldsTheLockExits75AndChangesNothing() throws {
    // COUNTRIES (17067 bytes) trickles at 4000 bytes/s: the first run holds the lock ~4 s.
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 4000}"#])
    let first = try job.start(name: "first")
    #expect(first.waitUntil { first.errors.contains("step countries: table_stream") })
    let holder = try job.folder.read(".dray/resume.lock").trimmingCharacters(in: .whitespacesAndNewlines)
    let startedAt = String(holder.split(separator: " ").last ?? "")
    #expect(holder == "\(first.pid) \(startedAt)")

    let second = try job.run()
    #expect(second.status == 75)
    #expect(second.stdout == "")
    #expect(
      second.stderr.hasSuffix(
        "error: job 'resume' is already running (process \(first.pid), started \(startedAt)); this run changed nothing. Wait for it to finish, or stop it first.\n"
      ))
    #expect(first.wait() == .exited(0))
    let report = try Report(first.output)
    #expect((report.json["started_at"] as? String) == startedAt)
    #expect(try job.rows("SELECT run_id FROM _dray_runs") == [[report.runID]])
    #expect(try FileManager.default.contentsOfDirectory(atPath: job.folder.path + "/.dray/reports").count == 1)
    #expect(try job.rows("SELECT count(*) FROM tally") == [["1"]])
  }

  @Test func twoFoldersOfOneJobSharingADatabaseRunOneAtATime() throws {
    // The same manifest in folders a/ and b/, with one absolute database path: two locks
    // (one per state.path), one journal.
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 4000}"#])
    let shared = job.folder.path + "/shared/resume.sqlite"
    let text = ResumeJob.text(host: job.emulator.url).replacing("path: data/resume.sqlite", with: "path: \(shared)")
    let a = try job.folder.write("a/job.yaml", text)
    let b = try job.folder.write("b/job.yaml", text)
    let first = try ChildProcess.dray(["run", a], logPrefix: job.folder.path + "/first")
    #expect(first.waitUntil { first.errors.contains("step countries: table_stream") })
    let runID = try #require(try SQLiteFile.rows(shared, "SELECT run_id, started_at FROM _dray_runs").first)

    let second = try Command.dray(["run", b])
    #expect(second.status == 75)
    #expect(second.stdout == "")
    #expect(
      second.stderr.hasSuffix(
        "error: job 'resume' is already running on the run journal \(shared) (run \(runID[0]!), process \(first.pid), started \(runID[1]!)); this run changed nothing. Wait for it to finish, or stop it first.\n"
      ), "\(second.stderr)")
    #expect(!FileManager.default.fileExists(atPath: job.folder.path + "/b/.dray/reports"))
    #expect(first.wait() == .exited(0))
    #expect(try SQLiteFile.rows(shared, "SELECT run_id, status FROM _dray_runs") == [[runID[0], "succeeded"]])
    #expect(try SQLiteFile.rows(shared, "SELECT count(*) FROM tally") == [["1"]])

    // A run whose process died, or whose process id now belongs to another program, is
    // marked abandoned by the next run from either folder.
    try job.emulator.admin("DELETE", "faults")
    let other = try ChildProcess("/bin/sleep", ["30"], logPrefix: job.folder.path + "/sleep")
    defer {
      other.send(SIGKILL)
      _ = other.wait()
    }
    try ResumeTests.sqlite(
      shared,
      "INSERT INTO _dray_runs(run_id, lineage, job, started_at, status, manifest_fingerprint, pid) VALUES "
        + "('20261130T080000Z-aaaaaa', '20261130T080000Z-aaaaaa', 'resume', '2026-11-30T08:00:00.000Z', 'running', 'x', 999999), "
        + "('20261130T080001Z-bbbbbb', '20261130T080001Z-bbbbbb', 'resume', '2026-11-30T08:00:01.000Z', 'running', 'x', \(other.pid))")
    let third = try Command.dray(["run", b])
    #expect(third.status == 0, "\(third.output)")
    #expect(third.stderr.contains("run 20261130T080000Z-aaaaaa (process 999999) ended without recording an end; marked abandoned\n"))
    #expect(third.stderr.contains("run 20261130T080001Z-bbbbbb (process \(other.pid)) ended without recording an end; marked abandoned\n"))
  }

  @Test func aHeldLockLeavesEveryFileAsItWas() throws {
    let job = try ResumeJob()
    #expect(try job.run().status == 0)
    let fd = open(job.lockFile, O_RDWR)
    defer { close(fd) }
    #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
    _ = ftruncate(fd, 0)
    _ = "4242 2026-11-30T08:00:00.000Z\n".withCString { pwrite(fd, $0, strlen($0), 0) }
    let before = ResumeTests.snapshot(job.folder.path)

    let second = try job.run()
    #expect(second.status == 75)
    #expect(
      second.stderr.hasSuffix(
        "error: job 'resume' is already running (process 4242, started 2026-11-30T08:00:00.000Z); this run changed nothing. Wait for it to finish, or stop it first.\n"
      ))
    #expect(ResumeTests.snapshot(job.folder.path) == before)
  }

  @Test func aLockLeftByADeadProcessIsTakenOver() throws {
    let job = try ResumeJob()
    try job.folder.write(".dray/resume.lock", "999999 2026-11-30T08:00:00.000Z\n")
    let result = try job.run()
    #expect(result.status == 0, "\(result.output)")
    let holder = try job.folder.read(".dray/resume.lock")
    #expect(!holder.hasPrefix("999999 "))
  }

  /// Path, size, modification time and SHA-256 of every file under `folder`, leaving out
  /// SQLite's shared-memory index and empty write-ahead logs, which readers may create.
  static func snapshot(_ folder: String) -> [String] {
    (FileManager.default.subpaths(atPath: folder) ?? []).sorted().compactMap { name in
      var info = stat()
      stat(folder + "/" + name, &info)
      if name.hasSuffix("-shm") || (name.hasSuffix("-wal") && info.st_size == 0) { return nil }
      let digest = FileManager.default.contents(atPath: folder + "/" + name).map { FolderDigest.sha256(of: $0) } ?? "-"
      return "\(name) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec) \(digest)"
    }
  }

  // MARK: Journals dray cannot trust

  enum Damage: String, CaseIterable, Sendable {
    case empty, cutOff, notSQLite, wrongShape, missingTable, unknownStatus
  }

  @Test(arguments: Damage.allCases)
  func aDamagedJournalIsAClearErrorAndNoStepRuns(damage: Damage) throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 500}"#])
    #expect(try job.run().status == 69)
    let path = job.database
    var expected: String
    switch damage {
    case .empty:
      try Data().write(to: URL(fileURLWithPath: path))
      expected =
        "the run journal at \(path) is empty (0 bytes), so dray cannot tell which steps already ran; restore it from a backup, or run again with --fresh to start over"
    case .cutOff:
      let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
      truncate(path, off_t(size / 2))
      expected =
        "the run journal at \(path) is cut off (\(size / 2) bytes, its header says \(size)), so dray cannot tell which steps already ran; restore it from a backup, or move it aside and run again with --fresh to start over"
    case .notSQLite:
      try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
      expected =
        "the run journal at \(path) cannot be read (it is not an SQLite database); restore it from a backup, or move it aside and run again with --fresh to start over"
    case .wrongShape:
      try FileManager.default.removeItem(atPath: path)
      try ResumeTests.sqlite(path, "CREATE TABLE _dray_runs(id TEXT); CREATE TABLE _dray_checkpoints(step TEXT);")
      expected =
        "the run journal at \(path) has a table _dray_runs of another shape (columns: id); it was not written by this dray. Move it aside and run again with --fresh"
    case .missingTable:
      try ResumeTests.sqlite(path, "DROP TABLE _dray_checkpoints")
      expected =
        "the run journal at \(path) lacks its table _dray_checkpoints, so dray cannot tell which steps already ran; restore it from a backup, or move it aside and run again with --fresh to start over"
    case .unknownStatus:
      try ResumeTests.sqlite(path, "UPDATE _dray_runs SET status = 'paused'")
      let runID = try #require(try job.rows("SELECT run_id FROM _dray_runs").first?[0])
      expected =
        "the run journal at \(path) holds a record this dray does not understand (run \(runID) has status 'paused', expected one of abandoned, failed, interrupted, running, succeeded); it may come from a newer dray. Use that dray, or move the journal aside and run again with --fresh"
    }
    try job.emulator.admin("DELETE", "faults")
    try job.emulator.admin("POST", "reset")
    let before = ResumeTests.snapshot(job.folder.path + "/data")

    let result = try job.run()
    #expect(result.status == 1)
    #expect(result.stderr.contains("error: " + expected + "\n"), "\(result.stderr)")
    #expect(result.stdout.contains("error: " + expected + "\n"))
    #expect(try job.emulator.requests().isEmpty, "no step may run")
    #expect(ResumeTests.snapshot(job.folder.path + "/data") == before)
    if damage == .empty {
      #expect(try job.run(["--fresh"]).status == 0)
    }
  }

  @Test func aJournalLockedByAnotherProgramSaysToWaitNotToRestoreABackup() throws {
    let job = try ResumeJob()
    #expect(try job.run().status == 0)
    // Another program holds the database locked for longer than the busy timeout (10 s).
    let holder = try ResumeTests.lockHolder(job.database, seconds: 30, logPrefix: job.folder.path + "/holder")
    defer {
      holder.send(SIGKILL)
      _ = holder.wait()
    }
    let result = try job.run()
    #expect(result.status == 1)
    #expect(
      result.stderr.contains(
        "error: cannot write the run journal at \(job.database): SQLite error 5 in \(job.database): database is locked (in: BEGIN IMMEDIATE); another process (another job or program writing this database) held it locked longer than the busy timeout (10 s): wait for it to finish, then run again; finished steps are skipped\n"
      ), "\(result.stderr)")
    #expect(!result.output.contains("backup"))
  }

  @Test func aLoadMeetingAnotherWritersLockSaysToWaitAndTheNextRunResumes() throws {
    // COUNTRIES answers after 4 s: its load asks for the write lock when the answer's first
    // bytes arrive, about 4 s after its step starts.
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "delay": 4}"#])
    let run = try ChildProcess.dray(["run", job.manifest], logPrefix: job.folder.path + "/run")
    #expect(run.waitUntil { run.errors.contains("step countries: table_stream") })
    // Another program takes the write lock for 18 s: longer than the busy timeout (10 s)
    // from when the load asks for it, shorter than that again for the checkpoint after.
    let holder = try ResumeTests.lockHolder(job.database, seconds: 18, logPrefix: job.folder.path + "/holder")
    defer {
      holder.send(SIGKILL)
      _ = holder.wait()
    }
    #expect(run.wait() == .exited(1))
    #expect(
      run.errors.contains(
        "database is locked (in: BEGIN IMMEDIATE); another process (another job or program writing this database) held it locked longer than the busy timeout (10 s): wait for it to finish, then run again; finished steps are skipped"
      ), "\(run.errors)")
    _ = holder.wait()
    let again = try job.run()
    #expect(again.status == 0, "\(again.output)")
    #expect(again.stdout.contains("fruits     table_stream  skipped"))
    #expect(try job.rows("SELECT count(*) FROM tally") == [["1"]])
  }

  /// Another program (Python's sqlite3) holding the write lock of the database at `path`
  /// for `seconds`, started and holding it when this returns; the caller kills it.
  static func lockHolder(_ path: String, seconds: Int, logPrefix: String) throws -> ChildProcess {
    let holder = try ChildProcess(
      "/usr/bin/env",
      [
        "python3", "-c",
        "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(\(seconds))",
        path,
      ], logPrefix: logPrefix)
    #expect(holder.waitUntil { holder.output.contains("locked") })
    return holder
  }

  /// Runs `sql` on the database at `path` with Python's sqlite3 (a writer other than dray).
  static func sqlite(_ path: String, _ sql: String) throws {
    let result = try Command.run(
      "/usr/bin/env",
      ["python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.close()", path, sql])
    #expect(result.status == 0, "\(result.stderr)")
  }

  // MARK: Signals

  /// Members of a `parallel` group a signal kept from starting are in the summary and the
  /// report as `not_run`, in file order, as top-level steps that never started are.
  @Test(arguments: [SIGINT, SIGTERM])
  func membersOfAGroupThatASignalKeptFromStartingAreReportedNotRun(signal: Int32) throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 4000}"#])
    let folder = TemporaryDirectory("dray-group-signal")
    let manifest = try folder.write(
      "group.yaml",
      JobText.header(job: "group", emulator: emulator, database: "data/group.sqlite") + """
        steps:
          - id: group
            parallel:
              max: 1
              steps:
                - id: countries
                  table_stream: { resource: COUNTRIES }
                - id: fruits
                  table_stream: { resource: FRUITS }
                - id: currencies
                  table_stream: { resource: CURRENCIES }
          - id: after
            sql: SELECT 1;

        """)
    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    let part = folder.path + "/.dray/downloads/group"
    #expect(
      run.waitUntil {
        ((try? FileManager.default.contentsOfDirectory(atPath: part)) ?? []).contains { $0.hasSuffix(".part") }
      })
    run.send(signal)
    #expect(run.wait() == .exited(130))
    let name = signal == SIGINT ? "SIGINT" : "SIGTERM"
    #expect(run.output.contains("    countries   table_stream  interrupted  interrupted by \(name)\n"), "\(run.output)")
    #expect(run.output.contains("    fruits      table_stream  not_run      the run was interrupted\n"))
    #expect(run.output.contains("    currencies  table_stream  not_run      the run was interrupted\n"))
    let report = try Report(run.output)
    let members = report.step("group")["steps"] as? [[String: Any]] ?? []
    #expect(members.map { $0["id"] as? String } == ["countries", "fruits", "currencies"])
    #expect(members.map { $0["status"] as? String } == ["interrupted", "not_run", "not_run"])
    #expect((report.step("group")["error"] as? [String: Any])?["code"] as? String == "interrupted")
    #expect((members[0]["error"] as? [String: Any])?["code"] as? String == "interrupted")
    #expect(members.map { $0["skip_reason"] as? String } == [nil, "the run was interrupted", "the run was interrupted"])
    #expect(report.step("after")["status"] as? String == "not_run")
  }

  /// SIGHUP is what a run gets when the ssh session it was started from drops.
  @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
  func aSignalStopsTheRunAtASafePointWithExit130AndTheNextRunResumesThePartFile(signal: Int32) throws {
    let name = [SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"][signal] ?? ""
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 4000}"#])
    let run = try job.start(name: "signalled")
    let part = job.folder.path + "/.dray/downloads/resume"
    #expect(
      run.waitUntil {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: part)) ?? []
        return names.contains { $0.hasSuffix(".part") && (ResumeTests.size(part + "/" + $0) ?? 0) >= 2000 }
      })
    run.send(signal)
    let ended = run.wait(timeout: 5)
    #expect(ended == .exited(130))
    #expect(run.output.hasPrefix("job resume: interrupted in "))
    #expect(run.output.contains("  countries  table_stream  interrupted  interrupted by \(name)\n"))
    #expect(run.output.contains("  tally      sql           not_run      the run was interrupted\n"))
    #expect(run.errors.contains("warning: interrupted by \(name); the run stopped at a safe point and the next 'dray run' resumes it\n"))
    let report = try Report(run.output)
    #expect(report.status == "interrupted")
    #expect(report.json["exit_code"] as? Int == 130)
    #expect(report.step("countries")["status"] as? String == "interrupted")
    #expect((report.step("countries")["error"] as? [String: Any])?["code"] as? String == "interrupted")
    #expect(try job.rows("SELECT status FROM _dray_runs") == [["interrupted"]])

    try job.emulator.admin("DELETE", "faults")
    let rerun = try job.run()
    #expect(rerun.status == 0, "\(rerun.output)")
    let resumed = try Report(rerun.stdout)
    #expect(resumed.resumes == report.runID)
    #expect(
      resumed.lines.prefix(2) == [
        "schemes skipped finished in run \(report.runID), unchanged", "fruits skipped finished in run \(report.runID), unchanged",
      ])
    let notes = resumed.step("countries")["notes"] as? [String] ?? []
    #expect(notes.contains { $0.hasPrefix("resumed a partial download at byte ") })
    let ranged = try job.rpcRequests("COUNTRIES").compactMap { ($0["headers"] as? [String: String])?["X-Range"] }
    #expect(ranged.count == 1)
    #expect(try job.rows("SELECT count(*) FROM COUNTRIES__output_table") == [["249"]])
  }

  @Test func underNohupAHangupIsIgnored() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "trickle": 8000}"#])
    let run = try ChildProcess(
      "/usr/bin/nohup", [Repository.drayBinary, "run", job.manifest], logPrefix: job.folder.path + "/nohup")
    #expect(run.waitUntil { run.errors.contains("step countries: table_stream") })
    run.send(SIGHUP)
    #expect(run.wait(timeout: 20) == .exited(0))
    #expect(run.output.hasPrefix("job resume: succeeded in "))
  }

  @Test func aSignalDuringALoadRollsItBackAtOnce() throws {
    let job = try ResumeJob(["--generate", "BIG:200000"])
    try job.folder.write(
      "resume.yaml",
      ResumeJob.text(host: job.emulator.url).replacing(
        "  - id: tally\n", with: "  - id: big\n    table_stream: { resource: BIG }\n  - id: tally\n"))
    let run = try job.start(name: "signalled")
    let downloads = job.folder.path + "/.dray/downloads/resume"
    #expect(
      run.waitUntil(timeout: 60) {
        ((try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []).contains {
          $0.hasPrefix("big-") && $0.hasSuffix(".answer")
        }
      })
    let signalled = Date()
    run.send(SIGTERM)
    #expect(run.wait(timeout: 10) == .exited(130))
    #expect(Date().timeIntervalSince(signalled) < 1.5)
    #expect(run.output.contains("  big        table_stream  interrupted  "))
    #expect(run.output.contains(" MiB; interrupted by SIGTERM\n"))
    #expect(try job.rows("SELECT count(*) FROM BIG__output_table") == [["0"]])
    #expect(try job.rows("SELECT step_id FROM _dray_checkpoints WHERE step_id = 'big'").isEmpty)
  }

  static func size(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
  }

  // MARK: Status

  /// A checkpoint's attempts are its step's own calls' (no retry here): not the sign-in of
  /// `schemes`, nor the scheme fetch of `countries`.
  @Test func statusListsRunsAndCheckpoints() throws {
    let job = try ResumeJob(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 500}"#])
    #expect(try job.run().status == 69)
    try job.emulator.admin("DELETE", "faults")
    #expect(try job.run().status == 0)
    let runs = try job.rows("SELECT run_id, started_at, ended_at FROM _dray_runs ORDER BY rowid")
    let checkpoints = try job.rows("SELECT step_id, run_id, finished_at FROM _dray_checkpoints")
    func finished(_ id: String) -> String { checkpoints.first { $0[0] == id }?[2].flatMap { $0 } ?? "" }
    let (first, second) = (runs[0][0]!, runs[1][0]!)
    let status = try Command.dray(["status", job.manifest])
    #expect(status.status == 0)
    #expect(
      status.stdout == """
        job resume: 2 recent runs (journal \(job.database))
          \(second)  succeeded   started \(runs[1][1]!), ended \(runs[1][2]!); continues \(first)
          \(first)  failed      started \(runs[0][1]!), ended \(runs[0][2]!)
        checkpoints:
          schemes: succeeded in run \(first) at \(finished("schemes")), 0 rows, 0 bytes
          fruits: succeeded in run \(first) at \(finished("fruits")), 5 rows, 138 bytes
          countries: succeeded in run \(second) at \(finished("countries")), 249 rows, 17067 bytes
          tally: succeeded in run \(second) at \(finished("tally")), 0 rows, 0 bytes

        """)
  }

  @Test func statusOfAJobNeverRunCreatesNothing() throws {
    let job = try ResumeJob()
    let status = try Command.dray(["status", job.manifest])
    #expect(status.status == 0)
    #expect(status.stdout == "job resume: no runs yet (no journal at \(job.database))\n")
    #expect(!FileManager.default.fileExists(atPath: job.folder.path + "/data"))
  }
}

extension ResumeJob {
  /// Another folder for the same job against the same emulator.
  init(sharing other: ResumeJob) {
    emulator = other.emulator
    try? write()
  }
}
