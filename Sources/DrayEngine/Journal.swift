internal import DrayModel
public import DrayStore
internal import Foundation

/// The run journal of a job: its runs, and a checkpoint per step.
///
/// It lives in the job's target database when the job has one (tables `_dray_runs` and
/// `_dray_checkpoints`), so that a load commits its rows and its checkpoint in one
/// transaction; a job without a database keeps it in `<state.path>/<job>.journal.sqlite`.
/// SQLite's own journal makes every write all-or-nothing, so a crash never leaves it
/// half-written.
public final class Journal {
  public let path: String
  let database: Database

  /// A run as recorded.
  public struct Run: Sendable, Equatable {
    public var id: String
    /// The first run of the chain this run continues (its own id when it starts afresh).
    public var lineage: String
    public var job: String
    public var startedAt: String
    public var endedAt: String?
    /// `running`, `succeeded`, `failed`, `interrupted`.
    public var status: String
    public var manifestFingerprint: String
    public var processID: Int
  }

  /// A step's last recorded state.
  public struct Checkpoint: Sendable, Equatable {
    public var job: String
    public var stepID: String
    public var runID: String
    public var lineage: String
    public var fingerprint: String
    /// `succeeded` or `failed`.
    public var status: String
    public var attempts: Int
    public var rows: Int
    public var bytes: Int64
    /// JSON text: tables and files the step wrote.
    public var outputs: String
    public var finishedAt: String

    public init(
      job: String, stepID: String, runID: String, lineage: String, fingerprint: String, status: String, attempts: Int, rows: Int,
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

  static let schema = """
    CREATE TABLE IF NOT EXISTS _dray_runs(
      run_id TEXT PRIMARY KEY, lineage TEXT NOT NULL, job TEXT NOT NULL, started_at TEXT NOT NULL,
      ended_at TEXT, status TEXT NOT NULL, manifest_fingerprint TEXT NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS _dray_checkpoints(
      job TEXT NOT NULL, step_id TEXT NOT NULL, run_id TEXT NOT NULL, lineage TEXT NOT NULL,
      fingerprint TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, rows INTEGER NOT NULL,
      bytes INTEGER NOT NULL, outputs TEXT NOT NULL, finished_at TEXT NOT NULL,
      PRIMARY KEY(job, step_id));
    """

  static let expectedColumns: [String: [String]] = [
    "_dray_runs": ["run_id", "lineage", "job", "started_at", "ended_at", "status", "manifest_fingerprint", "pid"],
    "_dray_checkpoints": [
      "job", "step_id", "run_id", "lineage", "fingerprint", "status", "attempts", "rows", "bytes", "outputs", "finished_at",
    ],
  ]

  /// Opens the journal at `path`, creating its tables when missing.
  /// - Throws: `JournalError` when the file is not a usable SQLite database or its journal
  ///   tables have another shape.
  public init(path: String) throws(JournalError) {
    self.path = path
    do {
      let folder = (path as NSString).deletingLastPathComponent
      if !folder.isEmpty { try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
      database = try Database(path: path)
      try database.execute(Journal.schema)
      try Journal.checkShape(database)
    } catch let error as JournalError {
      throw error
    } catch {
      throw JournalError.unreadable(path: path, detail: "\(error)")
    }
  }

  private static func checkShape(_ database: Database) throws {
    for (table, expected) in expectedColumns {
      let columns = try database.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap {
        if case .text(let name) = $0[0].1 { name } else { nil }
      }
      guard columns == expected else {
        throw JournalError.wrongShape(path: database.path, table: table, found: columns)
      }
    }
    _ = try database.rows("SELECT count(*) FROM _dray_runs")
    _ = try database.rows("SELECT count(*) FROM _dray_checkpoints")
  }

  /// The most recent run of `job`.
  public func lastRun(job: String) throws -> Run? {
    try runs(job: job, limit: 1).first
  }

  /// Recent runs of `job`, newest first.
  public func runs(job: String, limit: Int) throws -> [Run] {
    try database.rows(
      "SELECT run_id, lineage, job, started_at, ended_at, status, manifest_fingerprint, pid FROM _dray_runs WHERE job = ? ORDER BY started_at DESC, rowid DESC LIMIT ?",
      [.text(job), .integer(Int64(limit))]
    ).map { row in
      Run(
        id: row[0].1.text, lineage: row[1].1.text, job: row[2].1.text, startedAt: row[3].1.text,
        endedAt: row[4].1 == .null ? nil : row[4].1.text, status: row[5].1.text, manifestFingerprint: row[6].1.text,
        processID: Int(row[7].1.integer))
    }
  }

  public func start(_ run: Run) throws {
    let s = try database.prepare(
      "INSERT INTO _dray_runs(run_id, lineage, job, started_at, ended_at, status, manifest_fingerprint, pid) VALUES (?,?,?,?,?,?,?,?)")
    try s.bind([
      .text(run.id), .text(run.lineage), .text(run.job), .text(run.startedAt), .null, .text(run.status),
      .text(run.manifestFingerprint), .integer(Int64(run.processID)),
    ])
    _ = try s.step()
  }

  public func finish(runID: String, status: String, endedAt: String) throws {
    let s = try database.prepare("UPDATE _dray_runs SET status = ?, ended_at = ? WHERE run_id = ?")
    try s.bind([.text(status), .text(endedAt), .text(runID)])
    _ = try s.step()
  }

  /// The checkpoint of `stepID`, or nil.
  public func checkpoint(job: String, stepID: String) throws -> Checkpoint? {
    try checkpoints(job: job).first { $0.stepID == stepID }
  }

  /// Every checkpoint of `job`.
  public func checkpoints(job: String) throws -> [Checkpoint] {
    try database.rows(
      "SELECT job, step_id, run_id, lineage, fingerprint, status, attempts, rows, bytes, outputs, finished_at FROM _dray_checkpoints WHERE job = ?",
      [.text(job)]
    ).map { row in
      Checkpoint(
        job: row[0].1.text, stepID: row[1].1.text, runID: row[2].1.text, lineage: row[3].1.text,
        fingerprint: row[4].1.text, status: row[5].1.text, attempts: Int(row[6].1.integer), rows: Int(row[7].1.integer),
        bytes: row[8].1.integer, outputs: row[9].1.text, finishedAt: row[10].1.text)
    }
  }

  /// Records `checkpoint` through `database`, inside the caller's transaction when there is
  /// one (so that it commits with the step's rows).
  public static func record(_ checkpoint: Checkpoint, in database: Database) throws {
    let s = try database.cached(
      """
      INSERT INTO _dray_checkpoints(job, step_id, run_id, lineage, fingerprint, status, attempts, rows, bytes, outputs, finished_at)
      VALUES (?,?,?,?,?,?,?,?,?,?,?)
      ON CONFLICT(job, step_id) DO UPDATE SET run_id = excluded.run_id, lineage = excluded.lineage,
        fingerprint = excluded.fingerprint, status = excluded.status, attempts = excluded.attempts, rows = excluded.rows,
        bytes = excluded.bytes, outputs = excluded.outputs, finished_at = excluded.finished_at
      """)
    try s.bind([
      .text(checkpoint.job), .text(checkpoint.stepID), .text(checkpoint.runID), .text(checkpoint.lineage),
      .text(checkpoint.fingerprint), .text(checkpoint.status), .integer(Int64(checkpoint.attempts)),
      .integer(Int64(checkpoint.rows)), .integer(checkpoint.bytes), .text(checkpoint.outputs), .text(checkpoint.finishedAt),
    ])
    _ = try s.step()
  }

  /// Records `checkpoint` in its own transaction.
  public func record(_ checkpoint: Checkpoint) throws {
    try Journal.record(checkpoint, in: database)
  }
}

/// A journal dray cannot trust. Never answered by a silent fresh start.
public enum JournalError: Error, Sendable, CustomStringConvertible {
  case unreadable(path: String, detail: String)
  case wrongShape(path: String, table: String, found: [String])

  public var description: String {
    switch self {
    case .unreadable(let path, let detail):
      "the run journal at \(path) cannot be read (\(detail)); restore it from a backup, or move it aside and run again with --fresh to start over"
    case .wrongShape(let path, let table, let found):
      "the run journal at \(path) has a table \(table) of another shape (columns: \(found.isEmpty ? "none" : found.joined(separator: ", "))); it was not written by this dray. Move it aside and run again with --fresh"
    }
  }
}

extension SQLValue {
  var text: String {
    switch self {
    case .text(let s): s
    case .null: ""
    default: description
    }
  }

  var integer: Int64 {
    switch self {
    case .integer(let i): i
    case .real(let d): Int64(d)
    case .text(let s): Int64(s) ?? 0
    default: 0
    }
  }
}
