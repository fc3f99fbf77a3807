internal import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation

/// A runner started with `--join` while another holds the job's run lock (docs/partitions.md,
/// "Many runners"): it follows the run in progress (the one its `--run-key` names, or the
/// job's live run), claims and runs the partitions of each partitioned step the holder opens
/// for claims, and ends with the run's exit code once the run ends. When the holder dies the
/// runner's next start attempt takes the lock over (`Runner.run`) and carries the run on.
final class JoinedRunner {
  let runner: Runner
  let joining: Joining
  /// The run this runner follows, once it found one.
  private(set) var following: RunRecord?
  /// How many partitions this runner ran.
  private(set) var ran = 0
  private var context: RunContext?
  private var claims: (any PartitionClaims)?
  /// The journal this runner reads the followed run's record in.
  private var journal: (any RunJournal)?
  /// The run whose holder was seen not sharing it (started without `--join`), once said.
  private var unshared: String?
  /// Why this runner stopped following the run without running its partitions: its
  /// manifest defines the step the run opened for claims otherwise.
  private(set) var refusal: String?

  init(runner: Runner, joining: Joining) {
    self.runner = runner
    self.joining = joining
  }

  private var manifest: Manifest { runner.manifest }
  private var console: Console { runner.console }

  /// One round: finds the run to follow (`live`, the run holding the lock, or the run the
  /// key names), runs the partitions open for claims, or waits a moment.
  /// - Returns: the run's end once it ended (or this runner was interrupted), else nil: the
  ///   caller tries to take the lock, then calls again.
  func follow(_ live: RunRecord?) -> RunEnded? {
    if runner.cancellation.isCancelled { return RunEnded(runID: following?.id ?? "", exitCode: ExitCode.interrupted) }
    do {
      if claims == nil { claims = try runner.database.openClaims(cancellation: runner.cancellation) }
      guard let claims else { return RunEnded(runID: "", exitCode: ExitCode.usage) }
      var target = live
      if let live, live.status == .running, unshared != live.id, try !claims.isShared(job: manifest.job, runID: live.id) {
        unshared = live.id
        console.info(
          "run \(live.id) of job '\(manifest.job)' is held by process \(live.processID), started without --join: it does not "
            + "share its partitions, so this runner waits for that run to end\(runner.runKey == nil ? "" : ", then starts the key's run")"
            + (runner.options.text.isEmpty ? "" : " (\(runner.options.text) applies only if this runner takes the run lock)"))
      }
      if let key = runner.runKey {
        guard let bound = try claims.run(job: manifest.job, key: key) else { return pause() }
        if let code = bound.exitCode {
          // A run that ended with a code saying "try again", which this runner did not follow:
          // it waits to take the lock and resume the job (`JoinStart.retries`).
          if JoinStart.retries(code) && following?.id != bound.runID { return pause() }
          return RunEnded(runID: bound.runID, exitCode: code)
        }
        if journal == nil { journal = try runner.database.openJournal(fresh: false, cancellation: runner.cancellation) }
        target = try journal?.runs(job: manifest.job, limit: 100).first { $0.id == bound.runID }
      }
      guard let run = target else { return pause() }
      if run.status != .running && run.status != .abandoned {
        let code = try claims.exitCode(job: manifest.job, runID: run.id) ?? JoinedRunner.exitCode(run.status)
        if runner.runKey != nil && JoinStart.retries(code) && following?.id != run.id { return pause() }
        return RunEnded(runID: run.id, exitCode: code)
      }
      if following?.id != run.id || context == nil {
        following = run
        context = RunContext(
          manifest: manifest, runID: run.id, lineage: run.lineage, fresh: run.flags.fresh, skipReasons: [:], unresolvedWrites: [:],
          console: console, cancellation: runner.cancellation, session: runner.platformSession(), database: runner.database,
          journal: try runner.database.openJournal(fresh: false, cancellation: runner.cancellation), retryBudget: RetryBudget(),
          joining: joining)
        console.info("joined run \(run.id) of job \(manifest.job): this runner claims partitions of its partitioned steps")
      }
      guard let context, let open = try claims.openStep(job: manifest.job, runID: run.id) else { return pause() }
      // A runner whose manifest differs from the holder's (a rolling update) would load its
      // claims its own way: it claims nothing and ends.
      guard let step = manifest.steps.first(where: { $0.id == open.stepID }), let partitions = step.partitions,
        open.fingerprint.map({ $0 == step.definitionDigest }) ?? true
      else {
        refusal =
          "step '\(open.stepID)' of run \(run.id) of job '\(manifest.job)' was opened for claims with another definition than "
          + "this runner's manifest gives it (\(manifest.steps.contains { $0.id == open.stepID } ? "its settings differ" : "this manifest has no such partitioned step")): "
          + "this runner claims none of its partitions, so that each loads as the run's holder defined it; start every runner "
          + "of a run with the same manifest"
        return RunEnded(runID: run.id, exitCode: ExitCode.locked)
      }
      ran += StepRunner(context: context, step: step).joinPartitions(partitions, joining: joining)
    } catch {
      console.warn("joining the run: \(runner.database.failure(error)?.message ?? "\(error)")")
      return pause()
    }
    return nil
  }

  /// Waits `Joining.poll` before the next round.
  private func pause() -> RunEnded? {
    Thread.sleep(forTimeInterval: Joining.poll.seconds)
    return nil
  }

  /// The exit code of a run that ended as `status`, when none was recorded.
  static func exitCode(_ status: RunRecord.Status) -> Int32 {
    switch status {
    case .succeeded: ExitCode.success
    case .interrupted: ExitCode.interrupted
    default: ExitCode.stepFailed
    }
  }
}

extension Runner {
  /// Ends a start with `--join` whose run ended (`ended`): the run's exit code, no report
  /// file (the holder writes the run's), one info line.
  func joined(_ report: inout RunReport, _ ended: RunEnded, _ follower: JoinedRunner?) -> RunReport {
    let message: String
    if let refusal = follower?.refusal {
      message = refusal
    } else if ended.exitCode == ExitCode.interrupted && cancellation.isCancelled {
      message = "interrupted by \(Runner.signalName(cancellation)) while joined to run \(ended.runID); the run goes on without this runner"
    } else if follower?.following == nil {
      message =
        "run \(ended.runID) of job '\(manifest.job)'\(runKey.map { " (--run-key \($0))" } ?? "") already ended with exit code "
        + "\(ended.exitCode): this start changed nothing and ends with that code"
    } else {
      message =
        "run \(ended.runID) of job '\(manifest.job)' ended with exit code \(ended.exitCode); this runner joined it and ran "
        + HumanUnits.counted(follower?.ran ?? 0, "partition")
    }
    report.errorMessage = message
    report.exitCode = ended.exitCode
    report.status = ended.exitCode == ExitCode.success ? .succeeded : ended.exitCode == ExitCode.interrupted ? .interrupted : .failed
    report.lockedOut = true
    if follower?.refusal != nil { console.error(message) } else { console.info(message) }
    return report
  }
}
