public import DrayModel
public import DrayTarget

/// Which steps a run will skip and why, decided from the journal before the first step.
///
/// Rules (`docs/resume.md`):
/// - A plain run continues the job's last run when that run did not succeed. Runs with
///   `--only` are neither continued nor counted as the last run, so an operator may re-run
///   one step and then let `dray run` carry on where the job stopped.
/// - A continued run skips each step that finished in the chain of runs it continues
///   (`lineage`) with an unchanged fingerprint, up to the first step that must run; that
///   step and every later one run, whatever their checkpoints say. When that first step is
///   a `parallel` group, its members that finished unchanged are skipped; the members of a
///   later group all run. So are the partitions of a partitioned step (`resumedPartitions`).
/// - `--fresh` starts a new chain and runs every step.
/// - `--from STEP` runs STEP and every later one; `--only STEP` runs STEP alone. Both add
///   their checkpoints to the chain of the job's last run, so a later plain run that
///   continues it skips what they finished.
/// - A step whose checkpoint is `sent` (a call that may change data, sent without a
///   transaction id, that the server may have applied) is not sent again by a run that would
///   run it in that checkpoint's chain (continuing it, joining it with `--from` or `--only`,
///   or leaving it unfinished with `--fresh`) unless `--resend` names it: the run fails it
///   instead, before it calls the server (`unresolvedWrites`).
public struct ResumePlan: Sendable {
  /// The run continued, when the last run did not succeed (and not `--fresh`).
  public var resumes: RunRecord?
  /// Why each step is skipped, by step id; absent for steps that run. Members of a group
  /// appear when the group is the first step a continued run runs (those that finished).
  public var skipReasons: [String: String]
  /// Why the first step of a continued run runs although the chain ran it before, by step
  /// id: `its definition changed since run …`, `did not finish in run … (failed)`.
  public var runReasons: [String: String] = [:]
  /// The chain the run's checkpoints join: the lineage of the run it continues or, with
  /// `--from` and `--only`, of the job's last run; nil when the run starts a chain.
  public var lineage: String?
  /// Why each step that would run is not sent, by step id (members of groups included): its
  /// call was sent by an earlier run of the chain, and whether the server applied it is
  /// unknown. A step `--resend` names is never here.
  public var unresolvedWrites: [String: String] = [:]
  /// The partitioned step (`partitions:`) a continued run runs first, whose partitions that
  /// finished unchanged in the chain are skipped (as a group's members are); nil when the
  /// first step that runs has no partitions, or the run continues none.
  public var resumedPartitions: String?

  /// Decides the plan for `manifest` under `options` from `journal` (nil: no journal yet).
  /// - Throws: `JournalError`, or an SQLite error reading the journal.
  public init(manifest: Manifest, options: RunFlags, journal: (any RunJournal)?) throws {
    skipReasons = [:]
    resumes = nil
    lineage = nil
    try decide(manifest, options, journal)
    // The chains whose unresolved writes hold: the one the run joins, and the unfinished one
    // the job last ran (which `--fresh` leaves).
    let last = try journal?.lastWholeRun(job: manifest.job)
    let chains = Set([lineage, last.flatMap { $0.status == .succeeded ? nil : $0.lineage }].compactMap { $0 })
    for checkpoint in try journal?.checkpoints(job: manifest.job) ?? []
    where checkpoint.status == .sent && chains.contains(checkpoint.lineage) && checkpoint.stepID != options.resend
      && skipReasons[checkpoint.stepID] == nil && manifest.allSteps.contains(where: { $0.id == checkpoint.stepID })
    {
      unresolvedWrites[checkpoint.stepID] =
        "its call was sent in run \(checkpoint.runID) (\(checkpoint.finishedAt)) without a transaction id, and whether the server "
        + "applied it is unknown, so it was not sent again; check on the server, then run dray run \(manifest.path) "
        + "--resend \(checkpoint.stepID) to send it again"
    }
  }

  private mutating func decide(_ manifest: Manifest, _ options: RunFlags, _ journal: (any RunJournal)?) throws {
    guard !options.fresh else {
      ResumePlan.select(manifest, options, into: &skipReasons)
      return
    }
    let last = try journal?.lastWholeRun(job: manifest.job)
    if let last, last.status != .succeeded { resumes = last }
    if ResumePlan.select(manifest, options, into: &skipReasons) {
      lineage = last?.lineage
      return
    }
    guard let resumes, let journal else { return }
    lineage = resumes.lineage
    let checkpoints = try journal.checkpoints(job: manifest.job)
    /// The checkpoint of `step` when it finished in the continued chain, unchanged since.
    func finished(_ step: Step) -> CheckpointRecord? {
      checkpoints.first {
        $0.stepID == step.id && $0.lineage == resumes.lineage && $0.status == .succeeded
          && $0.fingerprint == step.fingerprint(in: manifest)
      }
    }
    /// Records whether `step` is skipped, or why it runs although the chain ran it.
    /// - Returns: whether it is skipped.
    func decide(_ step: Step) -> Bool {
      if let checkpoint = finished(step) {
        skipReasons[step.id] = "finished in run \(checkpoint.runID), unchanged"
        return true
      }
      if let checkpoint = checkpoints.first(where: { $0.stepID == step.id && $0.lineage == resumes.lineage }) {
        runReasons[step.id] =
          checkpoint.status == .succeeded
          ? "its definition changed since run \(checkpoint.runID)"
          : "did not finish in run \(checkpoint.runID) (\(checkpoint.status.rawValue))"
      }
      return false
    }
    for step in manifest.steps where !decide(step) {
      // The first step that runs: when it is a group, its members that finished unchanged
      // are skipped. Any later group runs whole, since an earlier step ran again.
      if case .parallel(let group) = step.kind {
        for member in group.steps { _ = decide(member) }
      }
      // Its partitions are known once it runs (a `rows` query): it skips those that finished.
      if step.partitions != nil {
        resumedPartitions = step.id
        let done = checkpoints.filter {
          $0.stepID.hasPrefix(step.id + "[") && $0.lineage == resumes.lineage && $0.status == .succeeded
        }.count
        if done > 0 {
          let note = "\(HumanUnits.counted(done, "partition")) finished in the chain, skipped unless changed since"
          runReasons[step.id] = runReasons[step.id].map { "\($0); \(note)" } ?? note
        }
      }
      break
    }
  }

  /// Skip reasons for `--only` and `--from`.
  /// - Returns: true when the operator chose the steps.
  @discardableResult
  private static func select(_ manifest: Manifest, _ options: RunFlags, into reasons: inout [String: String]) -> Bool {
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
