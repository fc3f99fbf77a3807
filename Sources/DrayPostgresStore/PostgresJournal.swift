public import DrayModel
public import DrayPostgres
public import DrayTarget

/// The run journal in a PostgreSQL schema, beside the job's tables: `_dray_runs` and
/// `_dray_checkpoints` (the columns of SQLite's journal, docs/resume.md), and the run lock.
///
/// `begin` takes the job's session advisory lock on this journal's connection
/// (`PostgresRunLock`), which the server holds until the connection ends (a runner killed
/// with `kill -9` included); a second runner of the job, from any folder or machine, gets
/// `RunInProgress` at once. The lock's generation (`runLock`) is checked inside every
/// commit: the stores' (`PostgresStore.write`) and this journal's own.
public final class PostgresJournal {
  private(set) var connection: PostgresConnection
  let schema: String
  /// Where to connect again after the connection was lost (`reconnectIfLost`); nil for a
  /// journal opened to read only.
  private let target: PostgresTarget?
  /// The lock taken by `begin`; nil before.
  public private(set) var runLock: PostgresRunLock?
  public var fence: (any RunFence)? { runLock }

  /// The journal's tables; `seq` orders runs that started in the same second.
  static let tables = [
    PostgresStore.createStatement(Bookkeeping.runs, extra: ["seq bigserial"]), PostgresStore.createStatement(Bookkeeping.checkpoints),
    PostgresStore.createStatement(Bookkeeping.joins),
  ].joined(separator: ";\n")

  /// Ends the connection's waits soon after the run is interrupted; nil for a journal
  /// opened to read only.
  private let cancellation: Cancellation?

  /// Connects to `target` and creates the journal's tables when missing.
  ///
  /// Its statements are short, so the wait for each answer is bounded by
  /// `database.timeouts.idle` (`PostgresConnection.AnswerLimit.idle`); once `cancellation` is
  /// set each wait lasts at most `PostgresConnection.interruptGrace` more, so that the run's
  /// end is still recorded.
  /// - Throws: `PostgresError`.
  public init(target: PostgresTarget, cancellation: Cancellation) throws {
    schema = target.schema
    self.target = target
    self.cancellation = cancellation
    connection = try PostgresJournal.connect(target, cancellation: cancellation)
    try PostgresStore.prepare(connection, schema: schema, tables: PostgresJournal.tables)
  }

  /// The journal's own connection to `target`.
  private static func connect(_ target: PostgresTarget, cancellation: Cancellation) throws(PostgresError) -> PostgresConnection {
    let connection = try PostgresConnection(
      url: target.url, password: target.password, timeouts: target.timeouts, answers: .idle, cancellation: cancellation)
    connection.finishStatements(when: cancellation)
    return connection
  }

  /// Connects again when the connection no longer answers (the server restarted, the
  /// network dropped it), and takes the run lock again when this journal held it: the
  /// server released the lock with the old session, and the new generation fences out
  /// anything still using the old one. Does nothing while the connection answers.
  ///
  /// - Throws: `PostgresError` when the server cannot be reached (transient: the caller
  ///   retries under the job's policy); `RunInProgress` when another runner holds the job's
  ///   lock now, `PostgresRunLockError.fenced` when another runner held it in between (its
  ///   generation moved by more than this retake): this run must stop.
  public func reconnectIfLost() throws {
    guard let target, let cancellation, (try? connection.execute("SELECT 1")) == nil else { return }
    connection.close()
    connection = try PostgresJournal.connect(target, cancellation: cancellation)
    try PostgresStore.prepare(connection, schema: schema, tables: PostgresJournal.tables)
    // The old lock stays `runLock` until the new one is known to follow it directly, so
    // that a commit after a failed retake is fenced.
    guard let held = runLock else { return }
    guard let lock = try PostgresRunLock.acquire(job: held.job, schema: schema, on: connection) else {
      let holder = try PostgresRunLock.holder(job: held.job, schema: schema, on: connection)
      throw RunInProgress(journal: location, job: held.job, run: nil, holder: holder)
    }
    // Another runner held the lock in between (and may have run the job's steps since this
    // run planned them): this run must not go on.
    guard lock.generation == held.generation + 1 else {
      try? lock.release(on: connection)
      throw PostgresRunLockError.fenced(job: held.job, generation: held.generation, current: lock.generation - 1)
    }
    runLock = lock
  }

  /// The journal in `schema`, read on `connection`, a read-only session
  /// (`PostgresStore(reading:)`: `dray status`, `dray plan`): nothing is created and the
  /// session refuses writes; nil when the schema holds no journal yet.
  /// - Throws: `PostgresError`.
  static func existing(on connection: PostgresConnection, schema: String) throws -> PostgresJournal? {
    guard try PostgresStore.hasOwnTables([Bookkeeping.runs.name, Bookkeeping.checkpoints.name], schema: schema, on: connection) else {
      return nil
    }
    return PostgresJournal(connection: connection, schema: schema)
  }

  private init(connection: PostgresConnection, schema: String) {
    self.connection = connection
    self.schema = schema
    target = nil
    cancellation = nil
  }

  private func own(_ name: String) -> String { PostgresIdentifier.quoted(schema) + "." + name }

  /// Runs `body` in one transaction that commits only while this runner holds the lock.
  private func fenced<T>(_ body: () throws -> T) throws -> T {
    try connection.transaction {
      let value = try body()
      try runLock?.checkFence(on: connection)
      return value
    }
  }

  private func select(_ condition: String, _ values: [PostgresValue], limit: Int?) throws -> [RunRecord] {
    let sql = """
      SELECT run_id, lineage, job, started_at, ended_at, status, manifest_fingerprint, pid, fresh, from_step, only_step
      FROM \(own("_dray_runs")) WHERE \(condition) ORDER BY started_at DESC, seq DESC\(limit.map { " LIMIT \($0)" } ?? "")
      """
    return try connection.execute(sql, values).named.map { row in
      let id = try row["run_id"].text ?? ""
      guard let status = RunRecord.Status(rawValue: try row["status"].text ?? "") else {
        throw JournalError.badRecord(path: location, detail: "run \(id) has status '\(try row["status"].text ?? "")'")
      }
      return RunRecord(
        id: id, lineage: try row["lineage"].text ?? "", job: try row["job"].text ?? "", startedAt: try row["started_at"].text ?? "",
        endedAt: try row["ended_at"].text, status: status, manifestFingerprint: try row["manifest_fingerprint"].text ?? "",
        processID: Int(try row["pid"].integer ?? 0),
        flags: RunFlags(fresh: try row["fresh"].integer != 0, from: try row["from_step"].text, only: try row["only_step"].text))
    }
  }

  /// Records `checkpoint` through `connection`, inside the caller's transaction.
  static func record(_ checkpoint: CheckpointRecord, on connection: PostgresConnection, schema: String) throws {
    try connection.execute(
      """
      INSERT INTO \(PostgresIdentifier.quoted(schema))._dray_checkpoints(job, step_id, run_id, lineage, fingerprint, status,
        attempts, rows, bytes, outputs, finished_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
      ON CONFLICT (job, step_id) DO UPDATE SET run_id = excluded.run_id, lineage = excluded.lineage,
        fingerprint = excluded.fingerprint, status = excluded.status, attempts = excluded.attempts, rows = excluded.rows,
        bytes = excluded.bytes, outputs = excluded.outputs, finished_at = excluded.finished_at
      """,
      [
        .text(checkpoint.job), .text(checkpoint.stepID), .text(checkpoint.runID), .text(checkpoint.lineage),
        .text(checkpoint.fingerprint), .text(checkpoint.status.rawValue), .integer(Int64(checkpoint.attempts)),
        .integer(Int64(checkpoint.rows)), .integer(checkpoint.bytes), .text(checkpoint.outputs), .text(checkpoint.finishedAt),
      ])
  }
}

@available(*, unavailable)
extension PostgresJournal: Sendable {}

extension PostgresJournal: RunJournal {
  /// The URL with its password masked.
  public var location: String { connection.url.redacted }

  public func lastRun(job: String) throws -> RunRecord? { try runs(job: job, limit: 1).first }

  public func lastWholeRun(job: String) throws -> RunRecord? {
    try select("job = $1 AND only_step IS NULL", [.text(job)], limit: 1).first
  }

  public func runs(job: String, limit: Int) throws -> [RunRecord] {
    try select("job = $1", [.text(job)], limit: limit < 0 ? nil : limit)
  }

  public func checkpoints(job: String) throws -> [CheckpointRecord] { try checkpoints(job: job, stepID: nil) }

  /// The checkpoint of `stepID` of `job`, or nil: one row read by its key, however many
  /// checkpoints the journal holds (a fan-out's partitions each have one).
  public func checkpoint(job: String, stepID: String) throws -> CheckpointRecord? {
    try checkpoints(job: job, stepID: stepID).first
  }

  private func checkpoints(job: String, stepID: String?) throws -> [CheckpointRecord] {
    try connection.execute(
      """
      SELECT job, step_id, run_id, lineage, fingerprint, status, attempts, rows, bytes, outputs, finished_at
      FROM \(own("_dray_checkpoints")) WHERE job = $1
      """ + (stepID == nil ? "" : " AND step_id = $2"), [.text(job)] + (stepID.map { [.text($0)] } ?? [])
    ).named.map { row in
      let stepID = try row["step_id"].text ?? ""
      guard let status = CheckpointRecord.Status(rawValue: try row["status"].text ?? "") else {
        throw JournalError.badRecord(
          path: location, detail: "the checkpoint of step \(stepID) has status '\(try row["status"].text ?? "")'")
      }
      return CheckpointRecord(
        job: try row["job"].text ?? "", stepID: stepID, runID: try row["run_id"].text ?? "",
        lineage: try row["lineage"].text ?? "", fingerprint: try row["fingerprint"].text ?? "", status: status,
        attempts: Int(try row["attempts"].integer ?? 0), rows: Int(try row["rows"].integer ?? 0),
        bytes: try row["bytes"].integer ?? 0, outputs: try row["outputs"].text ?? "",
        finishedAt: try row["finished_at"].text ?? "")
    }
  }

  /// Takes the job's run lock (`PostgresRunLock.acquire`), then, in one fenced transaction,
  /// marks the job's `running` runs `abandoned` (whoever ran them lost the lock, so their
  /// process or session is gone) and records `run`.
  /// - Throws: `RunInProgress` when another session holds the lock (nothing written);
  ///   `PostgresRunLockError.transactionPooler`; `PostgresError`.
  /// What the server knows of the session holding `job`'s run lock ("server process 4242,
  /// client 10.0.0.5, connected ..."), or nil when none holds it: a run recorded as
  /// `running` then has no live runner (`PostgresRunLock.holder`).
  /// - Throws: `PostgresError`.
  public func lockHolder(job: String) throws -> String? {
    try PostgresRunLock.holder(job: job, schema: schema, on: connection)
  }

  @discardableResult
  public func begin(_ run: RunRecord) throws -> [RunRecord] { try begin(run, joining: nil) }

  /// `begin` for a runner started with `--join` (`RunJournal.begin(_:joining:)`): within the
  /// lock's first transaction, a key bound to a run that ended, or a followed run that
  /// ended, throws `RunEnded` (the lock released, nothing written); otherwise the key (or
  /// the run's own id) is bound to `run` in `_dray_joins`.
  @discardableResult
  public func begin(_ run: RunRecord, joining: JoinStart) throws -> [RunRecord] {
    try begin(run, joining: Optional(joining))
  }

  /// The exit code of run `runID`, for its joined runners and the late ones of its key.
  public func recordExit(job: String, runID: String, code: Int32) throws {
    try connection.execute(
      "UPDATE \(own("_dray_joins")) SET exit_code = $3 WHERE job = $1 AND run_id = $2", [.text(job), .text(runID), .integer(Int64(code))])
  }

  /// The exit code of a run that ended as `status` when none was recorded.
  static func exitCode(_ status: RunRecord.Status) -> Int32? {
    switch status {
    case .succeeded: 0
    case .failed: 1
    case .interrupted: 130
    default: nil
    }
  }

  /// Throws `RunEnded` when `joining` names a run that ended; binds its key to `run`.
  private func bind(_ run: RunRecord, joining: JoinStart) throws {
    var follows = joining.follows
    var recorded: Int32?
    if let key = joining.key {
      let row = try connection.execute(
        "SELECT run_id, exit_code FROM \(own("_dray_joins")) WHERE job = $1 AND run_key = $2", [.text(run.job), .text(key)]
      ).named.first
      if let row, let id = try row["run_id"].text {
        follows = id
        recorded = try row["exit_code"].integer.map { Int32(truncatingIfNeeded: $0) }
      }
    }
    if let follows {
      let status = try connection.execute("SELECT status FROM \(own("_dray_runs")) WHERE run_id = $1", [.text(follows)]).rows.first?
        .first?.text
      if let ended = recorded ?? status.flatMap(RunRecord.Status.init(rawValue:)).flatMap(PostgresJournal.exitCode) {
        // A key's run that ended with a code saying "try again" (69, 75, 130) is resumed by
        // a start that did not follow it (a retry: the key is bound to this run below); the
        // runners that followed it end with its code.
        if !(JoinStart.retries(ended) && joining.follows != follows) { throw RunEnded(runID: follows, exitCode: ended) }
      }
    }
    try connection.execute(
      """
      INSERT INTO \(own("_dray_joins"))(job, run_key, run_id, exit_code) VALUES ($1, $2, $3, NULL)
      ON CONFLICT (job, run_key) DO UPDATE SET run_id = excluded.run_id, exit_code = NULL
      """, [.text(run.job), .text(joining.key ?? run.id), .text(run.id)])
  }

  private func begin(_ run: RunRecord, joining: JoinStart?) throws -> [RunRecord] {
    let running = RunRecord.Status.running.rawValue
    guard let lock = try PostgresRunLock.acquire(job: run.job, schema: schema, on: connection) else {
      let live = try select("job = $1 AND status = $2", [.text(run.job), .text(running)], limit: 1).first
      // No run recorded (a runner starting, or another program): say what the server knows.
      let holder = live == nil ? try PostgresRunLock.holder(job: run.job, schema: schema, on: connection) : nil
      throw RunInProgress(journal: location, job: run.job, run: live, holder: holder)
    }
    runLock = lock
    if let joining {
      do {
        try fenced { try bind(run, joining: joining) }
      } catch {
        try? lock.release(on: connection)
        runLock = nil
        throw error
      }
    }
    return try fenced {
      let stale = try select("job = $1 AND status = $2", [.text(run.job), .text(running)], limit: nil)
      try connection.execute(
        "UPDATE \(own("_dray_runs")) SET status = $1 WHERE job = $2 AND status = $3",
        [.text(RunRecord.Status.abandoned.rawValue), .text(run.job), .text(running)])
      try connection.execute(
        """
        INSERT INTO \(own("_dray_runs"))(run_id, lineage, job, started_at, ended_at, status, manifest_fingerprint, pid, fresh,
          from_step, only_step)
        VALUES ($1, $2, $3, $4, NULL, $5, $6, $7, $8, $9, $10)
        """,
        [
          .text(run.id), .text(run.lineage), .text(run.job), .text(run.startedAt), .text(run.status.rawValue),
          .text(run.manifestFingerprint), .integer(Int64(run.processID)), .integer(run.flags.fresh ? 1 : 0),
          run.flags.from.map { .text($0) } ?? .null, run.flags.only.map { .text($0) } ?? .null,
        ])
      return stale
    }
  }

  public func finish(runID: String, status: RunRecord.Status, endedAt: String) throws {
    _ = try fenced {
      try connection.execute(
        "UPDATE \(own("_dray_runs")) SET status = $1, ended_at = $2 WHERE run_id = $3",
        [.text(status.rawValue), .text(endedAt), .text(runID)])
    }
  }

  public func record(_ checkpoint: CheckpointRecord) throws {
    try fenced { try PostgresJournal.record(checkpoint, on: connection, schema: schema) }
  }

  /// `PostgresRunLockError.lost` when the session that took the lock ended or no longer
  /// holds it (`PostgresRunLock.loss`); nil before `begin`.
  public func lostLock() -> (any Error)? { runLock?.loss(on: connection) }
}
