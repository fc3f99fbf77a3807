public import DrayModel

/// Which steps a run will skip and why, decided from the journal before the first step.
///
/// Rules (`docs/resume.md`):
/// - A plain run continues the job's last run when that run did not succeed. Runs with
///   `--only` are neither continued nor counted as the last run, so an operator may re-run
///   one step and then let `dray run` carry on where the job stopped.
/// - A continued run skips each step that finished in the chain of runs it continues
///   (`lineage`) with an unchanged fingerprint, up to the first step that must run; that
///   step and every later one run, whatever their checkpoints say.
/// - `--fresh` starts a new chain and runs every step.
/// - `--from STEP` runs STEP and every later one; `--only STEP` runs STEP alone. Both add
///   their checkpoints to the chain of the job's last run, so a later plain run that
///   continues it skips what they finished.
public struct ResumePlan: Sendable {
  /// The run continued, when the last run did not succeed (and not `--fresh`).
  public var resumes: Journal.Run?
  /// Why each top-level step is skipped, by step id; absent for steps that run.
  public var skipReasons: [String: String]
  /// Why the first step of a continued run runs although the chain ran it before, by step
  /// id: `its definition changed since run …`, `did not finish in run … (failed)`.
  public var runReasons: [String: String] = [:]
  /// The chain the run's checkpoints join: the lineage of the run it continues or, with
  /// `--from` and `--only`, of the job's last run; nil when the run starts a chain.
  public var lineage: String?

  /// Decides the plan for `manifest` under `options` from `journal` (nil: no journal yet).
  /// - Throws: `JournalError`, or an SQLite error reading the journal.
  public init(manifest: Manifest, options: RunOptions, journal: Journal?) throws {
    skipReasons = [:]
    resumes = nil
    lineage = nil
    guard !options.fresh else {
      ResumePlan.select(manifest, options, into: &skipReasons)
      return
    }
    let last = try journal?.lastWholeRun(job: manifest.job)
    if let last, last.status != RunStatus.succeeded.rawValue { resumes = last }
    if ResumePlan.select(manifest, options, into: &skipReasons) {
      lineage = last?.lineage
      return
    }
    guard let resumes, let journal else { return }
    lineage = resumes.lineage
    let checkpoints = try journal.checkpoints(job: manifest.job)
    for step in manifest.steps {
      guard let checkpoint = checkpoints.first(where: { $0.stepID == step.id }), checkpoint.lineage == resumes.lineage else {
        break
      }
      guard checkpoint.status == RunStatus.succeeded.rawValue else {
        runReasons[step.id] = "did not finish in run \(checkpoint.runID) (\(checkpoint.status))"
        break
      }
      guard checkpoint.fingerprint == step.fingerprint(in: manifest) else {
        runReasons[step.id] = "its definition changed since run \(checkpoint.runID)"
        break
      }
      skipReasons[step.id] = "finished in run \(checkpoint.runID), unchanged"
    }
  }

  /// Skip reasons for `--only` and `--from`.
  /// - Returns: true when the operator chose the steps.
  @discardableResult
  private static func select(_ manifest: Manifest, _ options: RunOptions, into reasons: inout [String: String]) -> Bool {
    if let only = options.only {
      for step in manifest.steps where step.id != only { reasons[step.id] = "not selected by --only \(only)" }
      return true
    }
    if let from = options.from {
      for step in manifest.steps.prefix(while: { $0.id != from }) { reasons[step.id] = "before --from \(from)" }
      return true
    }
    return false
  }
}
