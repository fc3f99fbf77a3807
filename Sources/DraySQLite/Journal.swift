internal import DrayModel
public import DrayTarget
internal import Foundation
internal import Glibc

/// The run journal of a job: its runs, and a checkpoint per step.
///
/// It lives in the job's target database when the job has one (tables `_dray_runs` and
/// `_dray_checkpoints`), so that a load commits its rows and its checkpoint in one
/// transaction; a job without a database keeps it in `<state.path>/<job>.journal.sqlite`.
///
/// A crash can never leave it half-written: every change is one SQLite transaction (WAL
/// mode), and a new journal file is built beside its path and linked into place only once
/// its tables exist, so the path never names an empty or half-made file. A journal dray
/// cannot trust (empty, cut off, not SQLite, tables of another shape, a record it does not
/// know) is a `JournalError` naming the path and what to do, never a silent fresh start.
/// See `docs/resume.md`.
public final class Journal {
  public let path: String
  let database: Database
  /// False when a journal opened for reading has no journal tables yet.
  private let hasTables: Bool
  /// How runs' flags are stored: in their columns, or as text in a journal opened for
  /// reading that predates them (`migrate` converts it when a run opens it).
  private var flagsStorage = FlagsStorage.columns

  static let schema = [Bookkeeping.runs, Bookkeeping.checkpoints].map(Store.createStatement).joined(separator: ";\n")

  static let tables = expectedColumns.map(\.table)

  /// The columns of `_dray_runs` before the flag columns: dray 0.1.0 had no flags at all,
  /// later versions kept them as text in `options` (`RunFlags.text`).
  static let runColumnsBeforeFlags = Array(runColumns.prefix(8))

  /// Where a journal keeps its runs' flags.
  enum FlagsStorage {
    case columns
    /// The `options` text column of journals written before the flag columns.
    case text
    /// No flags at all (dray 0.1.0).
    case none

    /// The storage of a `_dray_runs` table with `columns`; nil for another shape.
    init?(columns: [String]) {
      switch columns {
      case Journal.runColumns: self = .columns
      case Journal.runColumnsBeforeFlags + ["options"]: self = .text
      case Journal.runColumnsBeforeFlags: self = .none
      default: return nil
      }
    }
  }

  static let runColumns = Bookkeeping.runs.columnNames

  /// Each journal table and its columns, in order.
  static let expectedColumns: [(table: String, columns: [String])] = [Bookkeeping.runs, Bookkeeping.checkpoints].map {
    ($0.name, $0.columnNames)
  }

  /// Opens the journal at `path` for a run, creating it (or its tables, in an existing
  /// database) when missing.
  ///
  /// - Parameters:
  ///   - startingFresh: the run ignores checkpoints (`--fresh`), so an empty (0-byte) file
  ///     at `path` is taken as a new journal instead of an error.
  /// - Throws: `JournalError` when the file is empty, cut off, not a usable SQLite
  ///   database, or holds journal tables of another shape.
  public init(path: String, startingFresh: Bool = false) throws(JournalError) {
    self.path = path
    var recovering = false
    do {
      var state = try Journal.inspect(path)
      if state == .empty {
        guard startingFresh else { throw JournalError.empty(path: path) }
        for name in [path, path + "-wal", path + "-shm"] { unlink(name) }
        state = .missing
      }
      if state == .missing {
        try Journal.create(at: path)
      } else {
        // Look before writing: opening for writing turns on WAL mode, and a file whose
        // journal dray cannot trust must stay as it is.
        do {
          _ = try Journal.check(Database(path: path, create: false, readOnly: true))
        } catch let error as SQLiteError where error.isHotJournal {
          // A write cut short by a crash (say, while a new database was switched to WAL
          // mode) left SQLite's rollback journal; opening for writing rolls it back, and
          // the shape is checked after that.
          recovering = true
        }
      }
      let database = try Database(path: path)
      if recovering { _ = try Journal.check(database) }
      // Looked at before the write lock is asked for: another run may hold it for as long as
      // a load reads an answer that is still arriving.
      if try Journal.presentTables(database).isEmpty {
        _ = try database.transaction {
          if try Journal.presentTables(database).isEmpty { try database.execute(Journal.schema) }
        }
      }
      try Journal.migrate(database)
      self.database = database
      hasTables = true
    } catch let error as JournalError {
      throw error
    } catch {
      throw JournalError.opening(path: path, error)
    }
  }

  /// Opens an existing journal for reading only (`dray status`, `dray plan`): it creates
  /// nothing and writes nothing. A database without journal tables reads as no runs.
  /// - Throws: `JournalError` as `init(path:startingFresh:)` does, and `.missing` when
  ///   there is no file at `path`.
  public init(readingAt path: String) throws(JournalError) {
    self.path = path
    do {
      switch try Journal.inspect(path) {
      case .missing: throw JournalError.missing(path: path)
      case .empty: throw JournalError.empty(path: path)
      case .usable: break
      }
      database = try Database(path: path, create: false, readOnly: true)
      hasTables = try Journal.check(database)
      if hasTables { flagsStorage = FlagsStorage(columns: try Journal.columns(of: "_dray_runs", in: database)) ?? .columns }
    } catch let error as JournalError {
      throw error
    } catch {
      throw JournalError.opening(path: path, error)
    }
  }

  /// Checks the journal tables of `database`, when it has them.
  /// - Returns: whether it has them.
  /// - Throws: `JournalError.incomplete` when it has one without the other, `.wrongShape`.
  private static func check(_ database: Database) throws -> Bool {
    let present = try presentTables(database)
    if present.isEmpty { return false }
    if present.count < tables.count {
      throw JournalError.incomplete(path: database.path, missing: tables.filter { !present.contains($0) })
    }
    try checkShape(database)
    return true
  }

  // MARK: The file

  enum FileState { case missing, empty, usable }

  /// Looks at the file before SQLite does, to tell an empty or cut-off journal from a new
  /// one, and a folder, device, FIFO or socket from a file (`JournalError.notAFile`).
  ///
  /// SQLite opens a 0-byte file as a new, empty database, and may read a file cut short
  /// without complaint until it needs a missing page; dray never leaves either at the
  /// journal's path (see `create(at:)`), so both mean the file was damaged. The size check
  /// uses the page size (offset 16) and page count (offset 28) of the database header
  /// (https://sqlite.org/fileformat2.html#the_database_header), and is skipped while a
  /// write-ahead log or a hot rollback journal holds changes.
  static func inspect(_ path: String) throws(JournalError) -> FileState {
    // SQLite would hang on a FIFO, and `create(at:)` or --fresh would replace a device.
    if let kind = FileKind.refusal(at: path, followingLinks: true) { throw .notAFile(path: path, kind: kind) }
    guard let size = fileSize(path) else { return .missing }
    // Changes SQLite has yet to copy into the file (WAL mode) or to roll back out of it (a
    // hot rollback journal) make its size meaningless until SQLite has opened it.
    let walSize = (fileSize(path + "-wal") ?? 0) + (fileSize(path + "-journal") ?? 0)
    if size == 0 { return walSize == 0 ? .empty : .usable }
    let header = readPrefix(path, count: 100)
    guard header.count == 100 else { throw .cutOff(path: path, size: size, expected: nil) }
    guard header.prefix(16).elementsEqual(Array("SQLite format 3\0".utf8)) else {
      throw .unreadable(path: path, detail: "it is not an SQLite database")
    }
    func be(_ offset: Int, _ count: Int) -> Int64 {
      header[offset..<offset + count].reduce(0) { $0 << 8 | Int64($1) }
    }
    let pageSize = be(16, 2) == 1 ? 65536 : be(16, 2)
    let pages = be(28, 4)
    let headerCountValid = be(24, 4) == be(92, 4)
    if walSize == 0, headerCountValid, pages > 0, size < pageSize * pages {
      throw .cutOff(path: path, size: size, expected: pageSize * pages)
    }
    return .usable
  }

  /// Builds a journal beside `path` and links it into place, so that `path` names either
  /// nothing or a whole journal, whenever the process dies. `link(2)` never replaces a file
  /// made meanwhile by another job sharing the database; that file is used instead.
  static func create(at path: String) throws {
    let folder = (path as NSString).deletingLastPathComponent
    do {
      try Folders.create(holding: path)
    } catch {
      throw JournalError.unavailable(path: path, detail: error.description, advice: JournalError.permissionAdvice)
    }
    let temporary = path + ".new-\(getpid())"
    removeLeftovers(of: path)
    defer {
      for suffix in ["", "-journal", "-wal", "-shm"] { unlink(temporary + suffix) }
    }
    let database = try Database(path: temporary)
    _ = try database.transaction { try database.execute(Journal.schema) }
    // Back to a rollback journal so that the whole file is in `temporary` when it closes.
    try database.execute("PRAGMA journal_mode=DELETE")
    try database.close()
    try sync(temporary, journal: path)
    CrashPoint.reach("journal-built")
    if link(temporary, path) != 0 && errno != EEXIST {
      throw JournalError.unavailable(
        path: path, detail: "cannot create it: \(String(cString: strerror(errno)))", advice: JournalError.permissionAdvice)
    }
    try sync(folder.isEmpty ? "." : folder, journal: path)
  }

  /// Flushes the file or folder at `file` to disk (`fsync(2)`), for the journal at `path`.
  /// - Throws: `JournalError.unavailable` with the system's reason.
  static func sync(_ file: String, journal path: String) throws(JournalError) {
    let fd = open(file, O_RDONLY)
    guard fd >= 0, fsync(fd) == 0 else {
      let reason = String(cString: strerror(errno))
      if fd >= 0 { close(fd) }
      throw .unavailable(path: path, detail: "cannot flush \(file) to disk: \(reason)", advice: JournalError.permissionAdvice)
    }
    close(fd)
  }

  /// Removes journals half-built by processes that died before linking them into place
  /// (`<path>.new-<pid>` of a process that no longer exists).
  static func removeLeftovers(of path: String) {
    let folder = (path as NSString).deletingLastPathComponent
    let prefix = (path as NSString).lastPathComponent + ".new-"
    for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder)) ?? [] {
      guard name.hasPrefix(prefix), let pid = Int32(name.dropFirst(prefix.count).prefix { $0.isNumber }) else { continue }
      if pid == getpid() || kill(pid, 0) != 0 && errno == ESRCH {
        unlink((folder.isEmpty ? "" : folder + "/") + name)
      }
    }
  }

  static func fileSize(_ path: String) -> Int64? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int64(info.st_size)
  }

  static func readPrefix(_ path: String, count: Int) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: count)
    let n = pread(fd, &buffer, count, 0)
    return n > 0 ? Array(buffer.prefix(n)) : []
  }

  // MARK: Shape

  private static func presentTables(_ database: Database) throws -> Set<String> {
    let rows = try database.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('_dray_runs', '_dray_checkpoints')")
    return Set(try rows.map { row throws(SQLiteError) in try row.text("name") })
  }

  /// Brings a journal of an earlier dray up to date, in one transaction: runs' flags move
  /// from the `options` text (or from nothing, dray 0.1.0) into their columns.
  private static func migrate(_ database: Database) throws {
    guard let storage = FlagsStorage(columns: try columns(of: "_dray_runs", in: database)), storage != .columns else { return }
    try database.transaction {
      try database.execute(
        """
        ALTER TABLE _dray_runs ADD COLUMN fresh INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE _dray_runs ADD COLUMN from_step TEXT;
        ALTER TABLE _dray_runs ADD COLUMN only_step TEXT;
        """)
      guard storage == .text else { return }
      let update = try database.prepare("UPDATE _dray_runs SET fresh = ?, from_step = ?, only_step = ? WHERE rowid = ?")
      for row in try database.rows("SELECT rowid AS rowid, options FROM _dray_runs") {
        let flags = RunFlags(text: try row.text("options"))
        try update.bind([
          .integer(flags.fresh ? 1 : 0), flags.from.map { .text($0) } ?? .null, flags.only.map { .text($0) } ?? .null, try row["rowid"],
        ])
        _ = try update.step()
        update.reset()
      }
      try database.execute("ALTER TABLE _dray_runs DROP COLUMN options")
    }
  }

  private static func columns(of table: String, in database: Database) throws -> [String] {
    try database.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).map { row throws(SQLiteError) in try row.text("name") }
  }

  /// Checks each journal table's columns (a journal from before the flag columns passes:
  /// opening it for a run migrates it) and pages.
  private static func checkShape(_ database: Database) throws {
    for (table, expected) in expectedColumns {
      let found = try columns(of: table, in: database)
      let older = table == "_dray_runs" && FlagsStorage(columns: found) != nil
      guard found == expected || older else {
        throw JournalError.wrongShape(path: database.path, table: table, found: found)
      }
      // Reads every page of the table and its index, so a damaged page is found now.
      let check = try database.rows("PRAGMA quick_check(\(Database.quote(table)))").map { row throws(SQLiteError) in
        try row.text("quick_check")
      }
      guard check == ["ok"] else {
        throw JournalError.unreadable(path: database.path, detail: "table \(table) is damaged: \(check.prefix(3).joined(separator: "; "))")
      }
    }
  }

  // MARK: Runs

  /// The most recent run of `job`: the last one recorded, whatever clock wrote its
  /// `started_at`.
  public func lastRun(job: String) throws -> RunRecord? {
    try runs(job: job, limit: 1).first
  }

  /// The most recent run of `job` that was not an `--only` run: the run a plain
  /// `dray run` continues when it did not succeed.
  public func lastWholeRun(job: String) throws -> RunRecord? {
    if flagsStorage == .text { return try select("job = ?", [.text(job)], limit: -1).first { !$0.isOnly } }
    return try select("job = ?\(flagsStorage == .columns ? " AND only_step IS NULL" : "")", [.text(job)], limit: 1).first
  }

  /// Recent runs of `job`, newest first.
  /// - Throws: `JournalError.badRecord` for a status dray does not know; `SQLiteError`.
  public func runs(job: String, limit: Int) throws -> [RunRecord] {
    try select("job = ?", [.text(job)], limit: limit)
  }

  private func select(_ condition: String, _ values: [SQLValue], limit: Int) throws -> [RunRecord] {
    guard hasTables else { return [] }
    let flags =
      switch flagsStorage {
      case .columns: "fresh, from_step, only_step, NULL AS options"
      case .text: "0 AS fresh, NULL AS from_step, NULL AS only_step, options"
      case .none: "0 AS fresh, NULL AS from_step, NULL AS only_step, NULL AS options"
      }
    // Newest first by insertion order (`rowid`), not by `started_at`: a clock that was fast
    // and then corrected writes a future time, and that run must not stay the newest.
    let sql = """
      SELECT run_id, lineage, job, started_at, ended_at, status, manifest_fingerprint, pid, \(flags)
      FROM _dray_runs WHERE \(condition) ORDER BY rowid DESC LIMIT ?
      """
    return try database.rows(sql, values + [.integer(Int64(limit))]).map { row throws in
      let id = try row.text("run_id")
      guard let status = RunRecord.Status(rawValue: try row.text("status")) else {
        let known = RunRecord.Status.allCases.map(\.rawValue).sorted().joined(separator: ", ")
        throw JournalError.badRecord(path: path, detail: "run \(id) has status '\(try row.text("status"))', expected one of \(known)")
      }
      let flags =
        try row["options"] == .null
        ? RunFlags(fresh: try row.integer("fresh") != 0, from: try row.optionalText("from_step"), only: try row.optionalText("only_step"))
        : RunFlags(text: try row.text("options"))
      return RunRecord(
        id: id, lineage: try row.text("lineage"), job: try row.text("job"), startedAt: try row.text("started_at"),
        endedAt: try row.optionalText("ended_at"), status: status, manifestFingerprint: try row.text("manifest_fingerprint"),
        processID: Int(try row.integer("pid")), flags: flags)
    }
  }

  /// Records the start of `run` in one transaction with marking every `running` run of the
  /// same job whose process is gone `abandoned`.
  ///
  /// The caller holds the job's lock, but another folder (or `state.path`) sharing this
  /// journal has a lock of its own: a `running` run whose process is alive on this host
  /// (`RunProcess.isAlive`) is another run of the job in progress, and this one does not
  /// start. The transaction (`BEGIN IMMEDIATE`) makes the check and the new row one step,
  /// so of two runs starting at once the second sees the first.
  /// - Returns: the runs marked abandoned.
  /// - Throws: `RunInProgress` naming the live run; SQLite errors.
  @discardableResult
  public func begin(_ run: RunRecord) throws -> [RunRecord] {
    /// The job's runs recorded as running; throws for one whose process is alive.
    func running() throws -> [RunRecord] {
      let running = try select("job = ? AND status = ?", [.text(run.job), .text(RunRecord.Status.running.rawValue)], limit: -1)
      if let live = running.first(where: { RunProcess.isAlive(pid: $0.processID, startedAt: Journal.date($0.startedAt)) }) {
        throw RunInProgress(journal: path, job: live.job, run: live)
      }
      return running
    }
    // First without the write lock, which a live run may hold for as long as a load reads an
    // answer that is still arriving: this run is told at once, not after the busy timeout.
    _ = try running()
    return try database.transaction {
      let running = try running()
      let abandon = try database.prepare("UPDATE _dray_runs SET status = ? WHERE run_id = ? AND status = ?")
      for stale in running {
        try abandon.bind([.text(RunRecord.Status.abandoned.rawValue), .text(stale.id), .text(RunRecord.Status.running.rawValue)])
        _ = try abandon.step()
        abandon.reset()
      }
      try start(run)
      return running
    }
  }

  /// A time as the journal writes it (RFC 3339 with milliseconds), or nil.
  static func date(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
  }

  func start(_ run: RunRecord) throws {
    let s = try database.prepare(
      """
      INSERT INTO _dray_runs(run_id, lineage, job, started_at, ended_at, status, manifest_fingerprint, pid, fresh, from_step, only_step)
      VALUES (?,?,?,?,?,?,?,?,?,?,?)
      """)
    try s.bind([
      .text(run.id), .text(run.lineage), .text(run.job), .text(run.startedAt), .null, .text(run.status.rawValue),
      .text(run.manifestFingerprint), .integer(Int64(run.processID)), .integer(run.flags.fresh ? 1 : 0),
      run.flags.from.map { .text($0) } ?? .null, run.flags.only.map { .text($0) } ?? .null,
    ])
    _ = try s.step()
  }

  /// Records the end of run `runID`: its final `status` and `endedAt` (RFC 3339, UTC).
  /// - Throws: `SQLiteError` when the journal cannot be written, `RunRowMissing` when the
  ///   run's row is gone (removed by another program).
  public func finish(runID: String, status: RunRecord.Status, endedAt: String) throws {
    let s = try database.prepare("UPDATE _dray_runs SET status = ?, ended_at = ? WHERE run_id = ?")
    try s.bind([.text(status.rawValue), .text(endedAt), .text(runID)])
    _ = try s.step()
    guard database.changes == 1 else {
      throw RunRowMissing(runID: runID)
    }
  }

  // MARK: Checkpoints

  /// Every checkpoint of `job`.
  /// - Throws: `JournalError.badRecord` for a status dray does not know; `SQLiteError`.
  public func checkpoints(job: String) throws -> [CheckpointRecord] { try checkpoints(job: job, stepID: nil) }

  /// The checkpoint of `stepID` of `job`, or nil: one row read by its key, however many
  /// checkpoints the journal holds (a fan-out's partitions each have one).
  /// - Throws: `JournalError.badRecord` for a status dray does not know; `SQLiteError`.
  public func checkpoint(job: String, stepID: String) throws -> CheckpointRecord? {
    try checkpoints(job: job, stepID: stepID).first
  }

  private func checkpoints(job: String, stepID: String?) throws -> [CheckpointRecord] {
    guard hasTables else { return [] }
    return try database.rows(
      "SELECT job, step_id, run_id, lineage, fingerprint, status, attempts, rows, bytes, outputs, finished_at FROM _dray_checkpoints WHERE job = ?"
        + (stepID == nil ? "" : " AND step_id = ?"),
      [.text(job)] + (stepID.map { [.text($0)] } ?? [])
    ).map { row throws in
      let stepID = try row.text("step_id")
      guard let status = CheckpointRecord.Status(rawValue: try row.text("status")) else {
        throw JournalError.badRecord(
          path: path, detail: "the checkpoint of step \(stepID) has status '\(try row.text("status"))', expected succeeded or failed")
      }
      return CheckpointRecord(
        job: try row.text("job"), stepID: stepID, runID: try row.text("run_id"), lineage: try row.text("lineage"),
        fingerprint: try row.text("fingerprint"), status: status, attempts: Int(try row.integer("attempts")),
        rows: Int(try row.integer("rows")), bytes: try row.integer("bytes"), outputs: try row.text("outputs"),
        finishedAt: try row.text("finished_at"))
    }
  }

  /// Records `checkpoint` through `database`, inside the caller's transaction when there is
  /// one (so that it commits with the step's rows).
  static func record(_ checkpoint: CheckpointRecord, in database: Database) throws {
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
      .text(checkpoint.fingerprint), .text(checkpoint.status.rawValue), .integer(Int64(checkpoint.attempts)),
      .integer(Int64(checkpoint.rows)), .integer(checkpoint.bytes), .text(checkpoint.outputs), .text(checkpoint.finishedAt),
    ])
    _ = try s.step()
  }

  /// Records `checkpoint` in its own transaction.
  public func record(_ checkpoint: CheckpointRecord) throws {
    try Journal.record(checkpoint, in: database)
  }
}

/// The row of a run in `_dray_runs` was removed while the run went on.
struct RunRowMissing: Error, CustomStringConvertible {
  var runID: String
  var description: String { "the row of run \(runID) in _dray_runs is gone, removed by another program" }
}

extension JournalError {
  static let permissionAdvice =
    "check that the file and its folder exist and that this user may read and write both (SQLite writes its -wal and -shm files beside the database)"

  /// The error for `error`, met opening the journal's database. A lock held past the busy
  /// timeout, a file or folder this user may not use, or a full disk is not damage: the
  /// advice is to wait, to fix permissions or to free space, never to restore a backup
  /// (SQLite result codes, https://sqlite.org/rescode.html).
  static func opening(path: String, _ error: any Error) -> JournalError {
    guard let sqlite = error as? SQLiteError else { return .unreadable(path: path, detail: "\(error)") }
    if sqlite.isBusy {
      return .unavailable(
        path: path, detail: sqlite.message,
        advice: "another process has kept the database locked past the busy timeout (10 s); wait for it to finish, then run again")
    }
    if sqlite.isAccessDenied { return .unavailable(path: path, detail: sqlite.message, advice: permissionAdvice) }
    if sqlite.isFull {
      return .unavailable(path: path, detail: sqlite.message, advice: "the disk holding it is full: free space there, then run again")
    }
    return .unreadable(path: path, detail: "\(error)")
  }
}

// One connection, one owner: shared between threads only behind a `Mutex`.
@available(*, unavailable)
extension Journal: Sendable {}
