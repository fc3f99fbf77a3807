public import DrayModel

/// Which steps a run will skip and why, decided from the journal before the first step.
///
/// Rules (README, "Resume"): a run continues the job's last run when that run did not
/// succeed; it skips a finished step of that run whose fingerprint is unchanged, until the
/// first step that must run; that step and every later one run. `--fresh` runs every step,
/// `--from STEP` runs STEP and every later one, `--only STEP` runs STEP alone.
public struct ResumePlan: Sendable {
  /// The run continued, when the last run did not succeed (and not `--fresh`).
  public var resumes: Journal.Run?
  /// Why each top-level step is skipped, by step id; absent for steps that run.
  public var skipReasons: [String: String]

  /// Decides the plan for `manifest` under `options` from `journal` (nil: no journal yet).
  /// - Throws: `JournalError`, or an SQLite error reading the journal.
  public init(manifest: Manifest, options: RunOptions, journal: Journal?) throws {
    skipReasons = [:]
    resumes = nil
    if !options.fresh, let last = try journal?.lastRun(job: manifest.job), last.status != RunStatus.succeeded.rawValue {
      resumes = last
    }
    if let only = options.only {
      for step in manifest.steps where step.id != only { skipReasons[step.id] = "not selected by --only \(only)" }
      return
    }
    if let from = options.from {
      for step in manifest.steps.prefix(while: { $0.id != from }) { skipReasons[step.id] = "before --from \(from)" }
      return
    }
    guard let resumes, let journal else { return }
    let checkpoints = try journal.checkpoints(job: manifest.job)
    for step in manifest.steps {
      guard let checkpoint = checkpoints.first(where: { $0.stepID == step.id }), checkpoint.lineage == resumes.lineage,
        checkpoint.status == RunStatus.succeeded.rawValue, checkpoint.fingerprint == step.fingerprint(in: manifest)
      else { break }
      skipReasons[step.id] = "finished in run \(checkpoint.runID), unchanged"
    }
  }
}
