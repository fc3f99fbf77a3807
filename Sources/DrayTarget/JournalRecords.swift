/// A run as the run journal records it (`_dray_runs`; docs/resume.md).
public struct RunRecord: Sendable, Equatable {
  /// Where a run stands. Stored as its raw value; any other text in the journal is a
  /// `JournalError.badRecord`.
  public enum Status: String, Sendable, Equatable, CaseIterable {
    case running, succeeded, failed, interrupted
    /// Its process ended without recording an end: killed, crashed, or the machine stopped.
    case abandoned
  }

  public var id: String
  /// The first run of the chain this run continues (its own id when it starts afresh).
  public var lineage: String
  public var job: String
  public var startedAt: String
  public var endedAt: String?
  public var status: Status
  public var manifestFingerprint: String
  public var processID: Int
  /// The operator's flags; none for a plain run.
  public var flags: RunFlags

  public init(
    id: String, lineage: String, job: String, startedAt: String, endedAt: String?, status: Status, manifestFingerprint: String,
    processID: Int, flags: RunFlags = RunFlags()
  ) {
    self.id = id
    self.lineage = lineage
    self.job = job
    self.startedAt = startedAt
    self.endedAt = endedAt
    self.status = status
    self.manifestFingerprint = manifestFingerprint
    self.processID = processID
    self.flags = flags
  }

  /// True for an `--only STEP` run, which a later plain run neither continues nor counts
  /// as the job's last run.
  public var isOnly: Bool { flags.only != nil }
}

/// How `dray run` was asked to run: `--fresh`, `--from STEP`, `--only STEP`. Stored in the
/// columns `fresh`, `from_step` and `only_step` of `_dray_runs`.
public struct RunFlags: Sendable, Equatable {
  /// Ignore checkpoints and start a new run.
  public var fresh: Bool
  /// Start at this step, running it and every later one.
  public var from: String?
  /// Run only this step.
  public var only: String?
  /// Send this step's call again although the server may have applied it once already
  /// (its checkpoint is `sent`). Not kept in the journal: it concerns this run alone.
  public var resend: String?

  public init(fresh: Bool = false, from: String? = nil, only: String? = nil, resend: String? = nil) {
    self.fresh = fresh
    self.from = from
    self.only = only
    self.resend = resend
  }

  /// The flags as the operator writes them, `--fresh --from STEP`; empty for a plain run.
  public var text: String {
    ((fresh ? ["--fresh"] : []) + (from.map { ["--from \($0)"] } ?? []) + (only.map { ["--only \($0)"] } ?? [])).joined(separator: " ")
  }

  /// The flags of `text` as journals before the flag columns stored them (the `options`
  /// column, written by `text`); read once, when such a journal is migrated or read.
  public init(text: String) {
    var flags = RunFlags()
    var words = text.split(separator: " ").map(String.init)[...]
    while let word = words.popFirst() {
      switch word {
      case "--fresh": flags.fresh = true
      case "--from": flags.from = words.popFirst()
      case "--only": flags.only = words.popFirst()
      default: break
      }
    }
    self = flags
  }
}

/// A step's last recorded state (`_dray_checkpoints`).
public struct CheckpointRecord: Sendable, Equatable {
  /// How the step ended. Stored as its raw value; any other text in the journal is a
  /// `JournalError.badRecord`.
  public enum Status: String, Sendable, Equatable, CaseIterable {
    case succeeded, failed
    /// The step's call may change data on the server and carries no transaction id: recorded
    /// before its request goes out, and kept while the server may have applied it (its
    /// answer broke off, the run was killed, the step failed after the answer). No run sends
    /// the step again unless `--resend` names it (`ResumePlan.unresolvedWrites`).
    case sent
  }

  public var job: String
  public var stepID: String
  public var runID: String
  public var lineage: String
  public var fingerprint: String
  public var status: Status
  /// Attempts of the step's own calls (`StepReport.ownAttempts`): not the sign-in or a
  /// scheme fetch made on their way, which the run's report lists apart.
  public var attempts: Int
  public var rows: Int
  public var bytes: Int64
  /// JSON text: tables and files the step wrote.
  public var outputs: String
  public var finishedAt: String

  public init(
    job: String, stepID: String, runID: String, lineage: String, fingerprint: String, status: Status, attempts: Int, rows: Int,
    bytes: Int64, outputs: String, finishedAt: String
  ) {
    self.job = job
    self.stepID = stepID
    self.runID = runID
    self.lineage = lineage
    self.fingerprint = fingerprint
    self.status = status
    self.attempts = attempts
    self.rows = rows
    self.bytes = bytes
    self.outputs = outputs
    self.finishedAt = finishedAt
  }
}
