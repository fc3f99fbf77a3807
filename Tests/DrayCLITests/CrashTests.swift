import DrayTestSupport
import Foundation
import Glibc
import Testing

/// Kills `dray run` with SIGKILL at random instants, runs it again until the job completes,
/// and checks that the database ends exactly as a clean run leaves it.
///
/// The job (`crashJob`) has six loads: a generated resource large enough that kills land
/// mid-download (the emulator trickles it) and mid-load, two loads in a `parallel` group,
/// and three small ones; a file step (`files get`, whose bytes are compared under `out/`);
/// and two SQL steps, one of them not idempotent (it appends to
/// `load_log` and bumps a counter), so that a step run twice, or a load committed twice,
/// shows as extra rows or a wrong counter.
///
/// Each trial starts in a new folder and is killed one to four times in a row (the later
/// kills land in resumed runs, with part files and abandoned runs left by the earlier
/// ones), then runs to completion. Half the kill instants are uniform over what is left of
/// the clean run's length after the steps already finished; half fall from 30 ms before to
/// 10 ms after a step's end, where a commit and the next step meet. After the trial the
/// database must equal the clean one table by table (schema, row count, no duplicate rows,
/// SHA-256 of the sorted rows; the journal tables and load times left out), files under
/// `out/` must match, the final report must mark as skipped exactly the steps an earlier
/// run finished, and no run may be left `running`.
///
/// Environment: `DRAY_CRASH_KILLS` (kills, default 50, about two minutes on two cores),
/// `DRAY_CRASH_SEED` (to repeat a failing
/// sequence; the seed is printed), `DRAY_CRASH_ROWS` (rows of the large resource, default
/// 40000), `DRAY_CRASH_KEEP=1` keeps the folders.
@Suite struct CrashTests {
  static let bigRowsDefault = 40_000

  static func crashJob(host: String) -> String {
    """
    version: 1
    job: crash
    platform:
      host: "\(host)"
      environment: DocumentationExampleEnv
      project: DocumentationExampleProj
      timeouts: { connect: 2s, idle: 10s }
    auth: { username: demo, password: demo-password }
    database: { path: data/crash.sqlite }
    retry: { count: 3, interval: 50ms }
    steps:
      - id: schemes
        schemes: {}
      - id: fruits
        table_stream: { resource: FRUITS }
      - id: countries
        table_stream: { resource: COUNTRIES }
      - id: big
        table_stream: { resource: BIG }
      - id: log-big
        sql: |
          CREATE TABLE IF NOT EXISTS load_log(step TEXT NOT NULL, rows INTEGER NOT NULL, total REAL);
          INSERT INTO load_log SELECT 'big', count(*), sum(amount) FROM {{ table "BIG" "output_table" }};
      - id: references
        parallel:
          max: 2
          steps:
            - id: currencies
              table_stream: { resource: CURRENCIES }
            - id: languages
              table_stream: { resource: LANGUAGES }
      - id: subdivisions
        table_stream: { resource: SUBDIVISIONS }
      - id: readme
        files: { action: get, connection: nfs4, path: docs/readme.txt, local: out/readme.txt }
      - id: tally
        sql: |
          CREATE TABLE IF NOT EXISTS tally(n INTEGER NOT NULL);
          INSERT INTO tally SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM tally);
          UPDATE tally SET n = n + 1;
          INSERT INTO load_log SELECT 'subdivisions', count(*), NULL FROM {{ table "SUBDIVISIONS" "output_table" }};

    """
  }

  static let topLevelSteps = ["schemes", "fruits", "countries", "big", "log-big", "references", "subdivisions", "readme", "tally"]

  /// One trial folder: the manifest, its database, and the logs of each process.
  struct Trial {
    let folder: String
    let manifest: String
    var database: String { folder + "/data/crash.sqlite" }
    var runs = 0

    init(folder: String, host: String) throws {
      self.folder = folder
      try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      manifest = folder + "/crash.yaml"
      try CrashTests.crashJob(host: host).write(toFile: manifest, atomically: true, encoding: .utf8)
    }

    mutating func start() throws -> ChildProcess {
      runs += 1
      return try ChildProcess.dray(["run", manifest], logPrefix: folder + "/run-\(runs)")
    }
  }

  @Test(.timeLimit(.minutes(10)))
  func killedAtRandomInstantsTheJobEndsAsACleanRunDoes() throws {
    let environment = ProcessInfo.processInfo.environment
    let kills = Int(environment["DRAY_CRASH_KILLS"] ?? "") ?? 50
    let rows = Int(environment["DRAY_CRASH_ROWS"] ?? "") ?? CrashTests.bigRowsDefault
    let keep = environment["DRAY_CRASH_KEEP"] == "1"
    var random = SeededRandom(seed: SeededRandom.seed(fromEnvironment: "DRAY_CRASH_SEED"))
    let seed = random.seed
    print("crash test: seed \(seed) (DRAY_CRASH_SEED=\(seed) repeats it), \(kills) kills, \(rows) rows")
    let began = Date()

    // About 90 bytes a row: trickle the large answer so that its download takes about as
    // long as its load.
    let trickle = max(1_000_000, rows * 90 * 2)
    let emulator = try Emulator([
      "--generate", "BIG:\(rows)", "--fault", #"{"path": "/api/v1/rpc/BIG/", "trickle": \#(trickle)}"#,
    ])
    let root = TemporaryDirectory("dray-crash")

    // The clean run: the database every trial must end with, and the timeline of its steps.
    var clean = try Trial(folder: root.path + "/clean", host: emulator.url)
    let cleanRun = try clean.start()
    let cleanEnd = cleanRun.wait()
    try #require(cleanEnd == .exited(0), "the clean run failed: \(cleanRun.errors)")
    let expected = try DatabaseDigest(path: clean.database)
    let expectedFiles = CrashTests.outputDigest(clean.folder)
    let timeline = CrashTests.stepEnds(cleanRun)
    let length = timeline.last?.offset ?? 2
    #expect(expected.tables["tally"]?.rows == 1)
    #expect(expected.tables["load_log"]?.rows == 2)
    print(
      "crash test: clean run \(String(format: "%.2f", length)) s; steps end at "
        + timeline.map { "\($0.id) \(String(format: "%.2f", $0.offset))" }.joined(separator: ", "))

    var landed = 0
    var trials = 0
    var phases: [String: Int] = [:]
    var finishedBeforeKill = 0
    var skippedInFinalRuns = 0
    var failures: [String] = []
    while landed < kills && failures.isEmpty {
      trials += 1
      var trial = try Trial(folder: root.path + "/trial-\(trials)", host: emulator.url)
      let chain = min(kills - landed, Int.random(in: 1...4, using: &random))
      var completed = false
      var landedInTrial = 0
      for _ in 0..<chain {
        // A resumed run skips what earlier runs finished: aim within what is left.
        let skipped = try CrashTests.finishedOffset(trial, timeline: timeline)
        let ends = timeline.filter { $0.offset > skipped }.map { $0.offset - skipped }
        let delay =
          Bool.random(using: &random) || ends.isEmpty
          ? Double.random(in: 0...((length - skipped) * 1.05), using: &random)
          : max(0, ends.randomElement(using: &random)! + Double.random(in: -0.03...0.01, using: &random))
        let process = try trial.start()
        if let ended = process.wait(timeout: delay) {
          // It finished before the instant came: no kill, and the trial is over.
          if ended != .exited(0) { failures.append("trial \(trials) run \(trial.runs) ended with \(ended): \(process.errors)") }
          finishedBeforeKill += 1
          completed = true
          break
        }
        process.send(SIGKILL)
        let ended = process.wait()
        if ended == .exited(0) {
          finishedBeforeKill += 1
          completed = true
          break
        }
        guard ended == .signaled(SIGKILL) else {
          failures.append("trial \(trials) run \(trial.runs) ended with \(ended) instead of the kill: \(process.errors)")
          break
        }
        landed += 1
        landedInTrial += 1
        phases[CrashTests.phase(of: process, downloads: trial.folder + "/.dray/downloads/crash"), default: 0] += 1
        // Killed after recording its success: the job is complete, and a rerun would be
        // a new run of it.
        if try CrashTests.lastRunStatus(trial) == "succeeded" {
          completed = true
          break
        }
      }
      guard failures.isEmpty else { break }

      // Run again until the job completes (the first rerun must do it: nothing failed).
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
      let problems =
        landedInTrial == 0 ? [] : try CrashTests.check(trial, final: final, expected: expected, expectedFiles: expectedFiles)
      if !problems.isEmpty {
        failures.append("trial \(trials) (\(trial.folder)):\n  " + problems.joined(separator: "\n  "))
        break
      }
      if let final { skippedInFinalRuns += CrashTests.reportSteps(final).filter { $0.status == "skipped" }.count }
      if !keep { try? FileManager.default.removeItem(atPath: trial.folder) }
    }

    let resumedDownloads = try emulator.requests().filter {
      ($0["path"] as? String) == "/api/v1/rpc/BIG/" && (($0["headers"] as? [String: String])?["X-Range"] != nil)
    }.count
    let seconds = Date().timeIntervalSince(began)
    print(
      "crash test: \(landed) kills in \(trials) trials, \(finishedBeforeKill) runs finished before their kill, "
        + "\(skippedInFinalRuns) steps skipped in final runs, \(resumedDownloads) ranged requests for the large answer "
        + "(resuming a part, or confirming a finished download), "
        + String(format: "%.1f s", seconds))
    for (phase, count) in phases.sorted(by: { $0.key < $1.key }) { print("crash test:   \(count) killed \(phase)") }
    if keep { print("crash test: folders kept in \(root.path)") }
    #expect(failures.isEmpty, "seed \(seed) (DRAY_CRASH_SEED=\(seed) repeats it):\n\(failures.joined(separator: "\n"))")
    if !failures.isEmpty { print("crash test: FAILED with seed \(seed); trial folders under \(root.path)") }
    withExtendedLifetime(root) {}
  }

  // MARK: Checks

  /// Everything that differs between a completed trial and the clean run.
  static func check(_ trial: Trial, final: ChildProcess?, expected: DatabaseDigest, expectedFiles: [String: String]) throws -> [String] {
    var problems = try DatabaseDigest(path: trial.database).differences(from: expected)
    let files = outputDigest(trial.folder)
    if files != expectedFiles { problems.append("files under out/ differ: \(files) expected \(expectedFiles)") }
    let running = try SQLiteFile.rows(trial.database, "SELECT run_id FROM _dray_runs WHERE status = 'running'")
    if !running.isEmpty { problems.append("runs left running: \(running)") }
    let statuses = try SQLiteFile.rows(trial.database, "SELECT status FROM _dray_runs ORDER BY started_at DESC, rowid DESC")
    if statuses.first != ["succeeded"] { problems.append("the last run is not recorded as succeeded: \(statuses)") }
    guard let final else { return problems }
    let checkpoints = try SQLiteFile.rows(trial.database, "SELECT step_id, run_id, status FROM _dray_checkpoints")
    return try problems + reportProblems(final, checkpoints: checkpoints, topLevelSteps: topLevelSteps)
  }

  /// What is wrong in the report of a trial's final run: each step must be skipped exactly
  /// when an earlier run finished it (`checkpoints`: step id, run id, status).
  static func reportProblems(_ final: ChildProcess, checkpoints rows: [[String?]], topLevelSteps: [String]) throws -> [String] {
    var problems: [String] = []
    let finalRunID = try #require(reportObject(final)?["run_id"] as? String)
    let checkpoints = Dictionary(uniqueKeysWithValues: rows.map { ($0[0] ?? "", ($0[1] ?? "", $0[2] ?? "")) })
    var steps = reportSteps(final)
    steps += steps.flatMap(\.members)
    if steps.map(\.id).prefix(topLevelSteps.count) != topLevelSteps[...] {
      problems.append("the report lists steps \(steps.map(\.id))")
    }
    for step in steps {
      guard let (runID, status) = checkpoints[step.id], status == "succeeded" else {
        problems.append("step \(step.id) has no succeeded checkpoint")
        continue
      }
      let earlier = runID != finalRunID
      if earlier && !(step.status == "skipped" && step.skipReason == "finished in run \(runID), unchanged") {
        problems.append("step \(step.id) finished in run \(runID) but the final report says \(step.status) (\(step.skipReason ?? "-"))")
      }
      if !earlier && step.status != "succeeded" {
        problems.append("step \(step.id) ran in the final run but the report says \(step.status)")
      }
    }
    return problems
  }

  /// The status of the trial's last run in the journal, or nil before any, or while a
  /// write the kill cut short is still to be rolled back (a hot rollback journal, which
  /// only a writer, the next `dray run`, rolls back: this read-only look cannot).
  static func lastRunStatus(_ trial: Trial) throws -> String? {
    guard isReadable(trial) else { return nil }
    return try SQLiteFile.rows(trial.database, "SELECT status FROM _dray_runs ORDER BY started_at DESC, rowid DESC LIMIT 1").first?[0]
      ?? nil
  }

  /// True when the trial's database exists and holds no write a kill cut short (a hot
  /// rollback journal, which only a writer, the next `dray run`, rolls back; a read-only
  /// look fails on it).
  static func isReadable(_ trial: Trial) -> Bool {
    guard FileManager.default.fileExists(atPath: trial.database) else { return false }
    let rollbackJournal = (try? FileManager.default.attributesOfItem(atPath: trial.database + "-journal"))?[.size] as? Int
    return (rollbackJournal ?? 0) == 0
  }

  /// SHA-256 of each file under `out/` in a job folder, by relative path.
  static func outputDigest(_ folder: String) -> [String: String] {
    FolderDigest.sha256(ofFilesUnder: folder + "/out")
  }

  struct StepLine {
    var id: String
    var status: String
    var skipReason: String?
    var members: [StepLine]
  }

  static func reportObject(_ process: ChildProcess) -> [String: Any]? {
    guard let line = process.output.split(separator: "\n").last(where: { $0.hasPrefix("report: ") }),
      let data = FileManager.default.contents(atPath: String(line.dropFirst("report: ".count)))
    else { return nil }
    return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
  }

  static func reportSteps(_ process: ChildProcess) -> [StepLine] {
    func lines(_ list: Any?) -> [StepLine] {
      ((list as? [[String: Any]]) ?? []).map {
        StepLine(
          id: $0["id"] as? String ?? "", status: $0["status"] as? String ?? "", skipReason: $0["skip_reason"] as? String,
          members: lines($0["steps"]))
      }
    }
    return lines(reportObject(process)?["steps"])
  }

  // MARK: Timeline

  /// Seconds from the process's start to each step's end (and to the report, as
  /// `report`), from the timestamps dray puts on each log line when standard error is not a
  /// terminal.
  static func stepEnds(_ process: ChildProcess) -> [(id: String, offset: Double)] {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return process.errors.split(separator: "\n").compactMap { line in
      let parts = line.split(separator: " ", maxSplits: 1)
      guard parts.count == 2, let date = formatter.date(from: String(parts[0])) else { return nil }
      let message = parts[1]
      if message.hasPrefix("report: ") { return ("report", date.timeIntervalSince(process.startedAt)) }
      guard message.hasPrefix("step "), message.contains(": ok in ") else { return nil }
      return (String(message.dropFirst(5).prefix { $0 != ":" }), date.timeIntervalSince(process.startedAt))
    }
  }

  /// How far into the clean run's timeline the trial's checkpoints reach: the end of the
  /// last of the leading top-level steps an earlier run finished (0 when the database
  /// cannot be read yet: the next instant is then aimed over the whole run).
  static func finishedOffset(_ trial: Trial, timeline: [(id: String, offset: Double)]) throws -> Double {
    guard isReadable(trial) else { return 0 }
    let done = Set(
      try SQLiteFile.rows(trial.database, "SELECT step_id FROM _dray_checkpoints WHERE status = 'succeeded'").compactMap { $0[0] })
    return offset(after: done, topLevelSteps: topLevelSteps, timeline: timeline)
  }

  /// The end, in the clean run's timeline, of the last of the leading top-level steps in
  /// `done`.
  static func offset(after done: Set<String>, topLevelSteps: [String], timeline: [(id: String, offset: Double)]) -> Double {
    var offset = 0.0
    for id in topLevelSteps {
      guard done.contains(id), let end = timeline.first(where: { $0.id == id }) else { break }
      offset = end.offset
    }
    return offset
  }

  /// Where a killed run was, from its last log line and the files it left.
  /// `downloads` is the job's download folder (`.dray/downloads/<job>`).
  static func phase(of process: ChildProcess, downloads: String) -> String {
    let lines = process.errors.split(separator: "\n").map { $0.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "" }
    guard let last = lines.last(where: { $0.hasPrefix("step ") || $0.hasPrefix("run ") || $0.hasPrefix("report: ") }) else {
      return "before the run was recorded"
    }
    if last.hasPrefix("run ") { return "before the first step" }
    if last.hasPrefix("report: ") { return "after the report" }
    let id = String(last.dropFirst("step ".count).prefix { $0 != ":" })
    if last.contains(": ok in ") { return "after step \(id) finished" }
    if id == "big" {
      let files = (try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []
      if files.contains(where: { $0.hasSuffix(".part") }) { return "during step big (downloading)" }
      if files.contains(where: { $0.hasSuffix(".answer") }) { return "during step big (loading)" }
      return "during step big (asking)"
    }
    return "during step \(id)"
  }
}
