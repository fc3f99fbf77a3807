public import DrayModel
internal import DrayPlatform
public import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Synchronization

/// Exit codes of `dray run` (README, "Exit codes").
public enum ExitCode {
  public static let success: Int32 = 0
  public static let stepFailed: Int32 = 1
  public static let usage: Int32 = 2
  /// EX_TEMPFAIL (sysexits.h): another run of the job holds the lock, or is in progress on
  /// the same run journal.
  public static let locked: Int32 = 75
  /// EX_UNAVAILABLE (sysexits.h): the run failed only because services stayed unavailable
  /// after its retry policy (`FailureClass.unavailable`); trying again later may succeed.
  public static let unavailable: Int32 = 69
  public static let interrupted: Int32 = 130
}

/// Runs a validated job: takes the lock, opens the journal, runs the steps in order with
/// checkpoints, writes the report.
public final class Runner {
  public let manifest: Manifest
  /// How the run was asked to run (`--fresh`, `--from`, `--only`), as the journal records it.
  public let options: RunFlags
  public let console: Console
  public let cancellation: Cancellation
  /// The job's database (target store and run journal), chosen once by DrayDatabases.
  public let database: any JobDatabase
  /// What a start that finds another run holding the job's lock ends as (`--when-locked`).
  public var whenLocked: WhenLocked = .exit
  /// The run's OpenLineage events and trace (`report.openlineage`, `report.otlp`), once the
  /// lock is held.
  private var exports: Exports?
  /// `--join` (or `--when-locked join`): a start that finds a run of the job in progress
  /// joins it (`JoinedRun.swift`); PostgreSQL only.
  public var join = false
  /// `--run-key`: runners given one key share one run; a key whose run ended ends a start
  /// with that run's exit code.
  public var runKey: String?

  /// - Parameter database: the job's database, as `Databases.open(manifest)` chose it.
  public init(
    manifest: Manifest, database: any JobDatabase, options: RunFlags = RunFlags(), console: Console, cancellation: Cancellation
  ) {
    self.manifest = manifest
    self.database = database
    self.options = options
    self.console = console
    self.cancellation = cancellation
  }

  static func lockPath(for manifest: Manifest) -> String {
    manifest.resolve(manifest.state.path) + "/\(manifest.job).lock"
  }

  /// Runs the job. Never throws: every outcome is in the report, whose `exitCode` is the
  /// process's.
  public func run() -> RunReport {
    let startedAt = Date()
    let runID = Runner.newRunID(startedAt)
    // The manifest's secrets are masked in everything the run writes, whatever console the
    // caller made (the command line makes it with them; a library caller may not).
    console.setRedactor(manifest.redactor)
    // Names dray writes are never masked (the manifest's redactor keeps the job and step ids).
    console.redactor.keep(
      [runID] + ReportFiles.paths(manifest, runID: runID).flatMap { [$0.path, ReportFiles.display($0.path)] })
    var report = RunReport(
      job: manifest.job, runID: runID, manifestPath: manifest.path, manifestFingerprint: Runner.manifestFingerprint(manifest),
      host: ProcessInfo.processInfo.hostName, startedAt: startedAt, endedAt: startedAt, status: .failed,
      exitCode: ExitCode.stepFailed, steps: manifest.steps.map { StepReport(id: $0.id, kind: $0.kindName, status: .notRun) })

    // Joined runners share the run through the database's lock and claims; the lock file
    // would keep a second runner of one machine out.
    var lock: JobLock?
    do {
      if !join { lock = try JobLock(path: Runner.lockPath(for: manifest), startedAt: RunReport.rfc3339(startedAt)) }
    } catch {
      switch error {
      case .held(let holder):
        var holding = "job '\(manifest.job)' is already running"
        if let holder { holding += " (process \(holder.processID), started \(holder.startedAt))" }
        return locked(&report, holding)
      case .cannotOpen(let path, let detail):
        return fail(
          &report, "cannot create the lock file \(path): \(detail); check state.path and permissions",
          FailureCause(.permanent, "the lock file could not be created (lock_file)"))
      case .symbolicLink(let path, let target):
        return fail(
          &report,
          "the lock file \(path) is a symbolic link to \(target); dray does not follow links where it keeps its own files: remove the link and run again",
          FailureCause(.permanent, "the lock file is a symbolic link (lock_file)"))
      }
    }
    defer { withExtendedLifetime(lock) {} }
    // OpenLineage and OTLP: only a run that holds the lock has events and a trace.
    exports = Exports(manifest: manifest, console: console, cancellation: cancellation)

    if let platform = manifest.platform, !platform.tls.verify {
      console.warn(
        "TLS certificate verification is OFF for \(platform.host) (platform.tls.verify: false); anyone on the path can read and change this job's traffic"
      )
    }

    // A PostgreSQL server that cannot be reached, or drops the connection, is retried under
    // the job's retry policy (ConnectionRetry), at the start, in each step and at the end.
    let retryBudget = RetryBudget()
    let connections = ConnectionRetry(
      database: database, policy: manifest.retry, cancellation: cancellation, budget: retryBudget,
      record: { [console] in console.info(Runner.describe($0)) })
    let journal: any RunJournal
    // Opening the journal creates an SQLite database's missing folders: said, as a path
    // misspelt in the manifest would otherwise leave a new folder unnoticed.
    let missingFolder = manifest.database?.path.flatMap { Folders.firstMissing(holding: manifest.resolve($0)) }
    do {
      // Until the database answers: then the journal opens on a database that is up.
      try connections.run { _ in try database.connect(cancellation: cancellation) }
      journal = try database.openJournal(fresh: options.fresh, cancellation: cancellation)
    } catch {
      // One line: what failed, where (the URL's password masked), and what to do.
      return fail(&report, database.failure(error)?.message ?? "\(error)", FailureCause.of(error, in: database).at("the database"))
    }

    do {
      // A quarantine's name taken by a table of the user's is refused before anything runs.
      let opened = { [database, cancellation] in try database.openStore(fence: nil, cancellation: cancellation) }
      if let clash = try connections.run({ _ in try Quarantine.clash(in: manifest, store: opened) }) {
        return fail(&report, clash, FailureCause(.permanent, "a quarantine table's name is taken (quarantine_clash)"))
      }
    } catch {
      return fail(&report, database.failure(error)?.message ?? "\(error)", FailureCause.of(error, in: database).at("the database"))
    }
    // A recording keeps the state the run starts from; a replay starts from it (RunStart).
    do {
      var recording = false
      if case .recording = Traffic.mode { recording = true }
      let seeded = try recordingStart(
        earlierRun: Traffic.isReplaying ? journal.lastRun(job: manifest.job)?.id : nil,
        checkpoints: recording ? journal.checkpoints(job: manifest.job) : [], connections: connections)
      for checkpoint in seeded { try journal.record(checkpoint) }
    } catch let refusal as RunStart.Refusal {
      return fail(&report, refusal.description, FailureCause(.permanent, "the folder holds state of the job (replay_not_fresh)"))
    } catch {
      return fail(&report, database.failure(error)?.message ?? "\(error)", FailureCause.of(error, in: database).at("the database"))
    }
    var plan: ResumePlan
    var lineage: String
    var flags = options
    // `--fresh` with a `--run-key` starts the key's run afresh once: a later start given the
    // key (a pod restarted with the same arguments after 69 or 130) continues that run's
    // chain, fresh as it began, instead of loading again what it published.
    var startOptions = options
    if options.fresh, let runKey, join {
      do {
        if let bound = try connections.run({ _ in try database.openClaims(cancellation: cancellation)?.run(job: manifest.job, key: runKey) }
        ) {
          startOptions.fresh = false
          if bound.exitCode.map(JoinStart.retries) == true {
            console.info(
              "--run-key \(runKey) already started run \(bound.runID) with --fresh: this start continues its chain, fresh as it began, "
                + "and does not start over (--fresh applies to a key's first start)")
          }
        }
      } catch {
        return fail(&report, database.failure(error)?.message ?? "\(error)", FailureCause.of(error, in: database).at("the database"))
      }
    }
    var abandonedRuns: [RunRecord] = []
    let joining = join ? Joining(owner: Joining.newOwner()) : nil
    let follower = joining.map { JoinedRunner(runner: self, joining: $0) }
    while true {
      // A joined runner interrupted while it waited takes nothing over.
      if let follower, follower.following != nil, cancellation.isCancelled {
        return joined(&report, RunEnded(runID: follower.following?.id ?? "", exitCode: ExitCode.interrupted), follower)
      }
      do {
        plan = try ResumePlan(manifest: manifest, options: startOptions, journal: journal)
      } catch let error as JournalError {
        return fail(&report, "\(error)", FailureCause(.permanent, "the run journal: it cannot be trusted as it is (journal_error)"))
      } catch {
        return fail(
          &report, "cannot read the run journal at \(journal.location): \(error)",
          FailureCause.of(error, in: database).at("the run journal"))
      }
      lineage = plan.lineage ?? runID
      report.resumes = plan.resumes?.id
      // A run that continues a `--fresh` run carries the fresh load on (docs/resume.md): its
      // journal row says fresh too, so a run continuing it in turn is fresh as well.
      flags = options
      flags.fresh = startOptions.fresh || plan.resumes?.flags.fresh == true
      do {
        let record = RunRecord(
          id: runID, lineage: lineage, job: manifest.job, startedAt: RunReport.rfc3339(startedAt), endedAt: nil,
          status: .running, manifestFingerprint: report.manifestFingerprint, processID: Int(getpid()),
          flags: flags)
        let abandoned =
          if let follower {
            try journal.begin(record, joining: JoinStart(key: runKey, follows: follower.following?.id))
          } else {
            try journal.begin(record)
          }
        for run in abandoned {
          console.info("run \(run.id) (process \(run.processID)) ended without recording an end; marked abandoned")
        }
        abandonedRuns = abandoned
        if let following = follower?.following {
          console.info("the runner holding run \(following.id) is gone: this runner took the run lock over and carries the run on")
        }
        break
      } catch let running as RunInProgress {
        // Like a held lock: nothing was touched, no report.
        guard follower != nil else { return locked(&report, running.holding) }
        if let ended = follower?.follow(running.run) { return joined(&report, ended, follower) }
      } catch let ended as RunEnded {
        return joined(&report, ended, follower)
      } catch {
        return fail(
          &report, "cannot write the run journal at \(journal.location): \(error)",
          FailureCause.of(error, in: database).at("the run journal")
        )
      }
    }
    CrashPoint.reach("run-recorded")
    // The end the killed runs never sent, then this run's START, off the steps' way.
    exports?.start(
      job: manifest.job, runID: runID, startedAt: startedAt, resumes: report.resumes, abandoned: abandonedRuns, background: true)
    // A fresh run starts over: no answer an earlier run downloaded, finished or partial, is
    // reused (docs/resume.md).
    if startOptions.fresh { DownloadFolder(manifest).removeOwnFiles() }

    console.info(
      "run \(runID) of job \(manifest.job)" + (report.resumes.map { ", resuming run \($0)" } ?? "")
        + (flags.fresh && !startOptions.fresh ? " (a --fresh run: the steps it had not finished load afresh)" : ""))
    if let missingFolder, let path = manifest.database?.path {
      console.info("database: created the folder \(missingFolder), which did not exist (database.path: \(path))")
    }
    let session = platformSession()
    let shared = RunContext(
      manifest: manifest, runID: runID, lineage: lineage, fresh: flags.fresh, skipReasons: plan.skipReasons,
      unresolvedWrites: plan.unresolvedWrites, resumedPartitions: plan.resumedPartitions, console: console, cancellation: cancellation,
      session: session, database: database,
      journal: journal, retryBudget: retryBudget, joining: joining)

    var stopped: RunStatus?
    for (index, step) in manifest.steps.enumerated() {
      // A step `--only` left out was never going to run: it says so, whatever stopped the run.
      if stopped != nil, options.only != nil, let reason = plan.skipReasons[step.id] {
        report.steps[index].status = .skipped
        report.steps[index].skipReason = reason
        console.info("skipped (\(reason))", step: step.id)
        continue
      }
      if let stopped {
        report.steps[index].status = .notRun
        report.steps[index].skipReason = stopped == .interrupted ? "the run was interrupted" : "an earlier step failed"
        continue
      }
      if cancellation.isCancelled {
        stopped = .interrupted
        report.steps[index].skipReason = "the run was interrupted"
        continue
      }
      if let reason = plan.skipReasons[step.id] {
        report.steps[index].status = .skipped
        report.steps[index].skipReason = reason
        console.info("skipped (\(reason))", step: step.id)
        if case .parallel(let group) = step.kind {
          report.steps[index].notes = group.steps.map { "\($0.id): skipped" }
        }
        continue
      }
      let stepReport = StepRunner(context: shared, step: step).run()
      report.steps[index] = stepReport
      if stepReport.status == .failed { stopped = .failed }
      if stepReport.status == .interrupted { stopped = .interrupted }
    }
    let status: RunStatus = stopped ?? .succeeded
    report.status = status
    report.exitCode = status == .interrupted ? ExitCode.interrupted : ExitCode.success
    if status == .failed {
      let causes = report.stepFailures
      for cause in causes { report.addFailure(cause) }
      if causes.isEmpty { report.addFailure(FailureCause(.permanent, "a step failed (error)")) }
    }
    report.endedAt = Date()
    if status == .interrupted {
      console.warn(
        "interrupted by \(Runner.signalName(cancellation)); the run stopped at a safe point and the next 'dray run' resumes it")
    }
    do {
      try connections.run(reconnect: shared.reconnectJournal) { _ in
        try shared.journal.withLock {
          try $0.finish(runID: runID, status: status.journalStatus, endedAt: RunReport.rfc3339(report.endedAt))
          if join { try $0.recordExit(job: manifest.job, runID: runID, code: report.exitCode) }
        }
      }
    } catch {
      // The journal is the record of what ran: a run whose end it lacks must not claim
      // success (the next run finds it still 'running', marks it abandoned and resumes).
      let message =
        "the run journal at \(shared.journalLocation) could not record the end of this run: \(error); the next 'dray run' resumes the run when the journal is whole, and says what to do when it is not"
      console.error(message)
      if report.status == .succeeded {
        report.status = .failed
        report.errorMessage = message
      } else if report.errorMessage == nil {
        report.errorMessage = message
      }
      if report.status == .failed { report.addFailure(FailureCause.of(error, in: database).at("the run journal")) }
    }
    CrashPoint.reach("run-finished")
    if report.status == .succeeded && options.only == nil { removeDownloads() }
    shared.journal.withLock { report.recordCheckpointsOfStepsNotRun($0) }
    write(&report)
    return report
  }

  /// The session with the platform of `table_stream` steps, nil for a job without one.
  func platformSession() -> PlatformSession? {
    manifest.platform.flatMap { written in
      var platform = written
      // A relative CA file is relative to the job folder, like every path of a manifest.
      platform.tls.caFile = written.tls.caFile.map { manifest.resolve($0) }
      return manifest.auth.map { [console] in
        // Tokens are secrets too: mask them wherever the console and the report print.
        PlatformSession(settings: platform, credentials: $0, onToken: { console.addSecret($0) })
      }
    }
  }

  /// After a whole run succeeded nothing is left to resume: removes the job's download
  /// files (answers left by a run killed between a load's commit and its cleanup), and
  /// their folder when that empties it. Nothing dray did not write is touched.
  private func removeDownloads() {
    DownloadFolder(manifest).removeOwnFiles()
  }

  /// Ends a run that did not start: `message` says why and `cause` of which class (exit 69 or
  /// 1); a run interrupted meanwhile (a signal ended its connection attempt) is
  /// `interrupted` (exit 130), not failed.
  private func fail(_ report: inout RunReport, _ message: String, _ cause: FailureCause) -> RunReport {
    let interrupted = cancellation.isCancelled
    let message = interrupted ? "interrupted by \(Runner.signalName(cancellation)) before the run started: \(message)" : message
    report.errorMessage = message
    for index in report.steps.indices where report.steps[index].status == .notRun {
      report.steps[index].skipReason = interrupted ? "the run was interrupted" : "the run did not start"
    }
    report.exitCode = interrupted ? ExitCode.interrupted : ExitCode.stepFailed
    report.status = interrupted ? .interrupted : .failed
    if !interrupted { report.addFailure(cause) }
    report.endedAt = Date()
    console.error(message)
    write(&report)
    return report
  }

  /// Ends a start that found another run of the job holding its lock (`holding` says which):
  /// nothing was touched and no report is written. Exit 75 with an error line, or under
  /// `--when-locked succeed` (`whenLocked`) exit 0 with an info line saying so.
  private func locked(_ report: inout RunReport, _ holding: String) -> RunReport {
    if whenLocked == .succeed {
      let message =
        holding + "; this start changed nothing and ends as a success (--when-locked succeed): the run holding the lock does the job"
      report.errorMessage = message
      report.exitCode = ExitCode.success
      report.status = .succeeded
      report.lockedOut = true
      console.info(message)
    } else {
      let message = holding + "; this run changed nothing. Wait for it to finish, or stop it first."
      report.errorMessage = message
      report.exitCode = ExitCode.locked
      console.error(message)
    }
    return report
  }

  /// Writes the report to its path (temp file, fsync, rename), and any extra formats. A file
  /// that could not be written leaves the run's record incomplete: a run that succeeded, or
  /// failed only for unavailable services, exits 1 (`ExitCode.stepFailed`: a permanent
  /// failure), and the report notes the files not written.
  private func write(_ report: inout RunReport) {
    report.unwrittenReports = ReportFiles.write(report, manifest: manifest, database: database, console: console)
    if let exports, exports.isOn {
      var store: (any TargetStore)?
      exports.finish(report) { [database, cancellation] table in
        if store == nil { store = try? database.openStore(fence: nil, cancellation: cancellation) }
        return try? store?.write { try $0.columns(ofTable: table) }
      }
    }
    guard !report.unwrittenReports.isEmpty else { return }
    report.addFailure(FailureCause(.permanent, "a report file could not be written (report_file)"))
    let names = report.unwrittenReports.map(ReportFiles.display).joined(separator: ", ")
    let what = "the run's record is incomplete: \(names) could not be written"
    report.errorMessage = report.errorMessage.map { "\($0); \(what)" } ?? what
  }

  /// The report path with `{job}` and `{run_id}` replaced, absolute.
  public static func reportPath(_ manifest: Manifest, runID: String) -> String {
    manifest.reportFiles(runID: runID)[0].path
  }

  /// `SIGINT`, `SIGTERM`, `SIGHUP`, or `signal N` for the signal that cancelled the run; `a request
  /// to stop` when it was cancelled otherwise.
  static func signalName(_ cancellation: Cancellation) -> String {
    switch cancellation.signal {
    case SIGINT?: "SIGINT"
    case SIGTERM?: "SIGTERM"
    case SIGHUP?: "SIGHUP"
    case let other?: "signal \(other)"
    case nil: "a request to stop"
    }
  }

  /// A unique run id that sorts by start time: `20261130T114740.123Z-3f2a9c`, the start
  /// time in UTC to the millisecond (ISO 8601 basic format, as precise as `started_at`), so
  /// that runs started within one second sort in the order they started, then 6 random hex
  /// digits (docs/report.md).
  static func newRunID(_ date: Date) -> String {
    // `started_at` (RunReport.rfc3339) without its separators: the two agree to the millisecond.
    let basic = RunReport.rfc3339(date).filter { $0 != "-" && $0 != ":" }
    return basic + "-" + UUID().uuidString.lowercased().prefix(6)
  }

  /// An attempt of a run-level call (a PostgreSQL connection) as the log shows it.
  static func describe(_ attempt: Attempt) -> String {
    let call = attempt.call.map { "\($0) " } ?? ""
    let what =
      "\(call)attempt \(attempt.number) failed after \(String(format: "%.2fs", attempt.duration)): \(attempt.message ?? attempt.outcome.code)"
    guard attempt.outcome != .ok else { return "\(call)attempt \(attempt.number): ok" }
    return what + (attempt.wait.map { "; trying again in \(String(format: "%.2fs", $0))" } ?? "")
  }

  /// SHA-256 of the canonical JSON of every step's definition and the job's name.
  static func manifestFingerprint(_ manifest: Manifest) -> String {
    SHA256.hex(JSONValue.object([("job", .string(manifest.job)), ("steps", .array(manifest.steps.map(\.definition)))]).canonicalJSON)
  }
}

/// What every step of a run shares.
final class RunContext: Sendable {
  let manifest: Manifest
  let runID: String
  let lineage: String
  /// The run was started with `--fresh`: incremental steps start again from `initial`.
  let fresh: Bool
  /// The plan's skip reasons by step id, members of a resumed group included
  /// (`ResumePlan.skipReasons`).
  let skipReasons: [String: String]
  /// Why each step that must not send its call is failed instead, by step id
  /// (`ResumePlan.unresolvedWrites`).
  let unresolvedWrites: [String: String]
  /// The partitioned step whose partitions that finished in the chain are skipped
  /// (`ResumePlan.resumedPartitions`).
  let resumedPartitions: String?
  let console: Console
  let cancellation: Cancellation
  let session: PlatformSession?
  /// The job's database, which each step thread opens its store from.
  let database: any JobDatabase
  /// The journal's own connection, shared by parallel members: one of them at a time.
  let journal: Mutex<any RunJournal>
  /// Where the journal is, for messages.
  let journalLocation: String
  /// Serialises write transactions on the target database within this process, so that
  /// parallel loads wait for each other here instead of meeting SQLITE_BUSY.
  let databaseWrites = Mutex<Void>(())
  /// The files no step may write: the database, the manifest, the state and download
  /// folders, this run's reports.
  let kept: KeptPaths
  /// The run's retry waits, over every step and thread (`retry.wait_budget`).
  let retryBudget: RetryBudget
  /// The tokens of `http` steps' sign-ins, one per OAuth 2.0 token endpoint and client or
  /// login endpoint and user (`signIn(_:)`).
  let sessions = TokenSessions()
  /// The request budgets of `http` steps, one per host (`rate_limit`).
  let budgets = RequestBudgets()
  /// What the partitions of each partitioned `http` step published in this run, by the
  /// step's id: records set aside or trimmed, and records read. `load.quarantine`'s bounds
  /// count over them (`StepRunner.checkBounds`); read and added under `databaseWrites`.
  let quarantined = Mutex<[String: (total: Int, records: Int)]>([:])
  /// This runner shares the run with others (`dray run --join`): its partitioned steps hand
  /// their partitions out through claims (`runClaimed`); nil for a runner alone.
  let joining: Joining?

  init(
    manifest: Manifest, runID: String, lineage: String, fresh: Bool, skipReasons: [String: String],
    unresolvedWrites: [String: String], resumedPartitions: String? = nil, console: Console, cancellation: Cancellation,
    session: PlatformSession?,
    database: any JobDatabase, journal: sending any RunJournal, retryBudget: RetryBudget, joining: Joining? = nil
  ) {
    self.joining = joining
    self.database = database
    self.retryBudget = retryBudget
    self.manifest = manifest
    self.runID = runID
    self.lineage = lineage
    self.fresh = fresh
    self.skipReasons = skipReasons
    self.unresolvedWrites = unresolvedWrites
    self.resumedPartitions = resumedPartitions
    self.console = console
    self.cancellation = cancellation
    self.session = session
    self.journalLocation = journal.location
    self.journal = Mutex(journal)
    self.kept = KeptPaths.forOutputs(of: manifest, runID: runID)
  }
}

extension RunContext {
  /// Connects the run journal again when its connection to a server was lost
  /// (`RunJournal.reconnectIfLost`); does nothing on a file.
  /// - Throws: the database's errors; `RunInProgress` when another runner took the job's lock.
  func reconnectJournal() throws {
    try journal.withLock { try $0.reconnectIfLost() }
  }
}

/// Writes files whole or not at all.
enum AtomicFile {
  /// Writes `text` to a new temporary file beside `path` (`OutputFile`), flushes it to disk,
  /// and renames it over `path`, creating the folder.
  ///
  /// - Throws: `LocalFileError.refused` when `path` is a folder, a device, a FIFO or a socket
  ///   (nothing is written); `.io` with the system's reason (`strerror`) when a folder on
  ///   the way is a file (ENOTDIR), cannot be created, or the disk is full (ENOSPC), and
  ///   nothing is left at `path` but what was there.
  static func write(_ text: String, to path: String) throws {
    if let kind = FileKind.refusal(at: path) {
      throw LocalFileError.refused("it is \(kind), not a regular file, and dray replaces only a regular file")
    }
    do {
      try Folders.create(holding: path)
    } catch {
      throw LocalFileError.io(path: path, detail: error.description)
    }
    let file = try OutputFile(path: path)
    try file.write(text)
    try file.commit()
  }
}
