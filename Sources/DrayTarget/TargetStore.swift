public import DrayModel

// The target seam: everything the engine asks of a job's target database and of its run
// journal. `JobDatabase` opens them; SQLite (DraySQLite) and PostgreSQL (DrayPostgresStore)
// implement these protocols, and DrayDatabases picks one from the manifest
// (docs/architecture.md, "The target seam").

/// The target database of a job, as the engine sees it: schemes, tables, loads, SQL, and
/// the transaction that commits rows together with the step's checkpoint.
///
/// One connection, one owner: an implementation need not be thread-safe, and each step
/// thread opens its own. Quoting, naming and SQL dialect are the store's: the engine never
/// builds SQL for it.
public protocol TargetStore: AnyObject {
  /// Where the database is, for messages: SQLite's file path; a URL with any password
  /// masked.
  var location: String { get }

  /// The physical table naming rule with this database's identifier limit.
  var naming: TableNaming { get }

  /// Whether a table answer loads while it downloads (docs/network.md, "Loading while
  /// downloading"): SQLite's does; a server database's does not, since its `TRUNCATE` would
  /// lock the table for the download's length (a paused runner's would stop the runner that
  /// takes over from it).
  var loadsWhileDownloading: Bool { get }

  /// Makes running statements stop with an error once `cancellation` is cancelled.
  func stopWhen(_ cancellation: Cancellation)

  /// The scheme last recorded for `resource`, or nil.
  func scheme(for resource: String) throws -> ResourceScheme?

  /// The content version a delta for `scheme` and `params` can start from, or nil when
  /// full data is needed (docs/store.md, "Deltas").
  func deltaBase(scheme: ResourceScheme, params: JSONValue) throws -> String?

  /// Whether the tables of `scheme` and `params` already hold the full answer `info`
  /// describes, so that loading it would rewrite every row as it is (docs/store.md,
  /// "Unchanged answers").
  func holdsAnswer(_ info: AnswerInfo, scheme: ResourceScheme, params: JSONValue) throws -> Bool

  /// The SQL that names the physical table of `{{ table "resource" "table" params }}`,
  /// quoted as this database quotes identifiers; nil when no such table exists.
  func tableReference(resource: String, table: String, params: JSONValue) throws -> String?

  /// Runs one statement a `query` step wrote (its `{{ table }}` references resolved),
  /// handing `columns` the column names, then `row` each row. Writes to dray's own tables
  /// are refused.
  /// - Throws: `UserSQLError` for SQL the step may not run; the database's errors.
  func query(_ sql: String, columns: ([String]) throws -> Void, row: ([SQLValue]) throws -> Void) throws

  /// Calls `body` with the running count of rows the store's loads insert, every
  /// `interval` rows, for progress; nil when the store cannot tell. Stops when the returned
  /// value is released or stopped.
  func observeInsertedRows(every interval: Int, _ body: @escaping (Int) -> Void) -> (any InsertedRowsObservation)?

  /// Runs `body` in one write transaction and commits when it returns; rolls back and
  /// rethrows when it throws. Everything a step changes, its checkpoint included, goes
  /// through one call, so a crash at any instant keeps all of it or none.
  ///
  /// A store whose run lock lives in the database (an advisory lock taken by its
  /// `RunJournal.begin`) fences the commit here: in the same transaction, just before
  /// COMMIT, it checks that this run still holds the lock (the generation taken with it),
  /// and throws instead of committing when another runner has taken over.
  func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T

  /// What the store keeps for an `incremental` step (its kept cursor); an empty entry when
  /// it keeps nothing. Creates nothing.
  func cursor(job: String, stepID: String) throws -> CursorEntry

  /// The validators step `stepID` of `job` kept for the answer it last published
  /// (`_dray_http_validators`), or nil. Creates nothing.
  func validators(job: String, stepID: String) throws -> KeptValidators?

  /// Whether table `name` holds exactly what dray last wrote there, by the store's table
  /// guard (SQLite: `TableGuard`; PostgreSQL: `PostgresTableGuard`; docs/store.md, "The
  /// table guard"): false for a table changed since, one the guard never armed, or none.
  func isIntact(table name: String) throws -> Bool
}

/// An SQL aggregate over a table's column, or over its rows (`count` of no column).
public struct TableAggregate: Sendable, Equatable {
  public enum Function: String, Sendable { case count, min, max }

  public var function: Function
  /// The column, exactly as named; nil for `count(*)`.
  public var column: String?

  public init(_ function: Function, of column: String?) {
    self.function = function
    self.column = column
  }
}

/// The operations of one open write transaction of a `TargetStore`.
public protocol StoreTransaction: AnyObject {
  /// Records `scheme` and creates the tables of its outputs for `params`, leaving existing
  /// tables and their rows alone.
  /// - Returns: the physical table names, by output table name.
  /// - Throws: `StoreError` for names the database cannot hold.
  func createTables(for scheme: ResourceScheme, params: JSONValue) throws -> [String: String]

  /// Loads the table answer in `file` (platform-api.md §3) for `scheme` and `params`:
  /// creates missing tables, replaces a full answer's tables (recreating one whose columns
  /// are no longer the scheme's), or applies a delta (deletes, then inserts); streams the
  /// rows (SQLite: prepared INSERTs; a server database: its bulk copy) and records the
  /// bookkeeping. Value rules: docs/store.md.
  /// - Parameters:
  ///   - delta: the answer is a delta (its `Content-Version` reads `delta v<n>-v<m>`).
  ///   - cancellation: checked between pieces of the file; a cancelled load throws.
  ///   - growing: the part a download is still writing, when the load reads the answer as
  ///     it arrives (`GrowingFile`): its first pass reads the part as it grows and reaches
  ///     its end only once the download is finished and verified; `file` is where the
  ///     finished answer is then (read by any later pass). nil when `file` is whole.
  ///   - info: the answer's version and validators, asked once its rows are read (an answer
  ///     still arriving has them only when its download is finished).
  /// - Throws: `LoadError` naming resource, table, row and column; `StoreError`;
  ///   `GrowingFile.Stop` when the download failed or started the part again.
  func load(
    file: String, growing: GrowingFile?, scheme: ResourceScheme, params: JSONValue, delta: Bool, cancellation: Cancellation?,
    info: () -> AnswerInfo
  ) throws -> LoadResult

  /// Rows in the physical table `name`.
  func rowCount(ofTable name: String) throws -> Int

  /// The column names of table `name`, in order; empty when there is no such table.
  func columns(ofTable name: String) throws -> [String]

  /// One row of `aggregates` over table `name`, in order (SQL's `count`, `min`, `max`;
  /// `min` and `max` skip NULLs and give NULL for a table without values).
  func aggregates(ofTable name: String, _ aggregates: [TableAggregate]) throws -> [SQLValue]

  /// Runs the statements an `sql` step wrote (its `{{ table }}` references resolved), in
  /// order, inside this transaction.
  /// - Returns: each statement's text and the rows it changed.
  /// - Throws: `UserSQLError` for a statement that would end the transaction or change
  ///   dray's own tables; the database's errors.
  func execute(userSQL sql: String) throws -> [(sql: String, changes: Int)]

  /// Records a step's checkpoint in the run journal, committing with this transaction.
  func record(_ checkpoint: CheckpointRecord) throws

  // MARK: Loads into existing tables (`http` `load.write`, docs/http.md)

  /// Adds each of `columns` that table `name` lacks (`ALTER TABLE ... ADD COLUMN`; names
  /// matched as the database matches identifiers); a column without a type is added
  /// without one (SQLite) or as text. Creates the table with `columns` when it does not
  /// exist.
  /// - Returns: the names added to an existing table, in order.
  func addMissingColumns(_ columns: [(name: String, type: ColumnType?)], toTable name: String) throws -> [String]

  /// The columns of table `name` and their types as `ColumnType`s, in order (nil: a type
  /// that is none of them, or none: SQLite's untyped columns, PostgreSQL's boolean and
  /// jsonb); empty when the table does not exist. What `load.contract` checks records
  /// against (docs/http.md, "Contract").
  func columnTypes(ofTable name: String) throws -> [(name: String, type: ColumnType?)]

  /// The scheme's columns, with the platform's type names, that the physical table `name`
  /// of a resource was last made or loaded with (`_dray_tables.column_types`); nil when
  /// none is recorded (no such table, or one an older dray loaded). What a `table_stream`
  /// contract compares the server's scheme with (docs/steps.md, "Scheme drift"), whatever
  /// scheme a `schemes` step kept since.
  func recordedColumns(ofTable name: String) throws -> [ResourceScheme.Column]?

  /// Gives each of `columns` of table `name` its wider type (`load.contract.types: evolve`),
  /// keeping the table's rows: SQLite makes the table again with its indexes and triggers
  /// (`TableWrites.widen`); PostgreSQL alters the column's type
  /// (`ALTER TABLE ... ALTER COLUMN ... TYPE ... USING`). Commits with this transaction.
  func widenColumns(_ columns: [(name: String, type: ColumnType)], ofTable name: String) throws

  /// The staging of `http` records (`RecordStaging`) in this same transaction, when the
  /// records stage in this database (SQLite: the job's database file); nil when they stage
  /// elsewhere (beside a server database, a local file), the default. Forgetting the staged
  /// pages in the transaction that publishes them leaves no instant where a kill keeps both
  /// the published rows and their staged pages.
  var sameDatabaseStaging: (any StagingTransaction)? { get }

  /// Copies records staged in another database into the temporary table `name` (dropped
  /// when the transaction ends), for `append` and `merge` to read: how an `http` step's
  /// records, staged page by page in a local SQLite file, reach a server database.
  /// - Parameters:
  ///   - columns: the staged columns and their types.
  ///   - target: the table the records are for, named in a refusal.
  ///   - rows: calls its argument with each row's values, in column order.
  /// - Throws: a refusal naming step, table, row and column for a value its column's type
  ///   cannot hold (the value rule of the database); the database's errors.
  func stage(
    _ name: String, columns: [(name: String, type: ColumnType?)], for target: String,
    rows: ((_ add: ([SQLValue]) throws -> Void) throws -> Void)
  ) throws

  /// Replaces the rows of table `target` with every row of table `staging` (`load.write:
  /// replace`), creating `target` when it does not exist. The default adds the columns
  /// `target` lacks and keeps its other columns; SQLite makes `target` again with
  /// `staging`'s columns when their names or types differ (`RecordTable.publish`).
  /// - Parameter columns: the columns of `staging`, untyped ones as text.
  /// - Returns: the names of the columns added to an existing `target`, in order.
  func replaceRows(ofTable target: String, from staging: String, columns: [(name: String, type: ColumnType)]) throws -> [String]

  /// Deletes every row of table `name`.
  /// - Returns: the rows deleted.
  func deleteRows(ofTable name: String) throws -> Int

  /// Replaces the rows of table `target` with every row of table `source` of this database
  /// (a table every session sees, where the partitions of a `write: replace` step gathered
  /// their records, docs/partitions.md), then drops `source`: readers see the old rows or
  /// all the new ones, never a part. Creates `target` with `source`'s columns when it does
  /// not exist; adds the columns an existing `target` lacks. Without `source`, empties
  /// `target` (when it exists).
  /// - Returns: the names of the columns added to an existing `target`, in order.
  func replaceRows(ofTable target: String, withTable source: String) throws -> [String]

  /// Drops table `name` of this database when it exists (a partitioned step's gathered
  /// records that a run starting the step over does not keep).
  func dropTable(_ name: String) throws

  /// Adds every row of table `staging` to `target`, in the order they were staged.
  /// - Parameter columns: the columns copied; both tables have them.
  /// - Returns: the rows added.
  func append(from staging: String, into target: String, columns: [String]) throws -> Int

  /// Merges table `staging` into `target` by `key`: the last staged version of each key
  /// inserts a row or updates the row with that key (`INSERT ... ON CONFLICT (key) DO
  /// UPDATE`); with `deletedColumn`, a last version holding 1 there deletes the row with
  /// its key instead. Gives `target` a unique index on `key` when it has none.
  /// - Returns: the rows written (inserted or updated) and deleted.
  /// - Throws: `MergeError.duplicateKeys` when `target` holds two rows with one key.
  func merge(from staging: String, into target: String, columns: [String], key: [String], deletedColumn: String?) throws
    -> (written: Int, deleted: Int)

  /// Deletes the rows of `target` whose `key` no row of table `staging` holds (the rows a
  /// full `merge` pull did not see, `load.delete_missing`), after `merge` from the same
  /// `staging`. A staged version marked deleted counts as seen (`merge` deleted its row).
  /// - Returns: the rows deleted.
  func deleteMissing(from staging: String, in target: String, key: [String]) throws -> Int

  /// Records the cursor of an `incremental` step, committing with this transaction.
  func saveCursor(_ entry: CursorEntry, job: String, stepID: String) throws

  /// Keeps `validators` for step `stepID` of `job` (nil: forgets the step's), committing
  /// with this transaction.
  func saveValidators(_ validators: KeptValidators?, job: String, stepID: String) throws

  /// Arms the table guard of table `name` after dray's writes in this transaction: from its
  /// commit on, any other write to the table makes `TargetStore.isIntact` false. Does
  /// nothing when there is no such table.
  func armGuard(ofTable name: String) throws
}

/// The run journal of a job: its runs and a checkpoint per step (docs/resume.md). With a
/// target database it lives there, so that `StoreTransaction.record` commits a step's
/// checkpoint with its rows.
public protocol RunJournal: AnyObject {
  /// Where the journal is, for messages.
  var location: String { get }

  /// The most recent run of `job`.
  func lastRun(job: String) throws -> RunRecord?
  /// The most recent run of `job` that was not an `--only` run.
  func lastWholeRun(job: String) throws -> RunRecord?
  /// Recent runs of `job`, newest first.
  func runs(job: String, limit: Int) throws -> [RunRecord]
  /// Every checkpoint of `job`.
  func checkpoints(job: String) throws -> [CheckpointRecord]
  /// The checkpoint of `stepID` of `job`, or nil, read by its key: asked by every step and
  /// every partition of a fan-out, so it must not read the whole journal.
  func checkpoint(job: String, stepID: String) throws -> CheckpointRecord?

  /// Records the start of `run`, the part of the job's run lock the journal holds: a run of
  /// the job still alive elsewhere makes it throw `RunInProgress`; `running` runs whose
  /// process is gone become `abandoned`. SQLite: one `BEGIN IMMEDIATE` transaction beside
  /// the lock file; a server database: a session advisory lock keyed by the job, with a
  /// fencing generation its store's `write` checks.
  /// - Returns: the runs marked abandoned.
  @discardableResult
  func begin(_ run: RunRecord) throws -> [RunRecord]
  /// `begin` for a runner started with `--join`: within the run lock, a `joining.key` that
  /// names a run that ended, or a `joining.follows` run that ended, throws `RunEnded` (with
  /// the lock released and nothing recorded); otherwise the key is bound to `run`. Defaults
  /// to `begin(run)` where runs cannot be shared.
  @discardableResult
  func begin(_ run: RunRecord, joining: JoinStart) throws -> [RunRecord]
  /// Records the exit code of run `runID` for the runners that joined it and the late ones
  /// of its `--run-key` (a default that does nothing).
  func recordExit(job: String, runID: String, code: Int32) throws
  /// Records the end of run `runID`.
  func finish(runID: String, status: RunRecord.Status, endedAt: String) throws
  /// Records `checkpoint` in its own transaction (steps that write no target database).
  func record(_ checkpoint: CheckpointRecord) throws
  /// Why this run no longer holds the job's run lock, or nil while it does. Asked when a
  /// step fails, so that a failure a lost lock caused says so. A server database's lock
  /// lives in a session, which can end under a running runner; SQLite's lock file cannot
  /// be lost (nil, the default).
  func lostLock() -> (any Error)?
  /// The run lock `begin` took, for the stores' commits to check (`JobDatabase.openStore`);
  /// nil when the lock does not live in the database (SQLite: the lock file), the default.
  var fence: (any RunFence)? { get }
  /// Connects again when the journal's connection to a server was lost, and takes the run
  /// lock again; does nothing while connected, or for a file (the default).
  /// - Throws: the database's errors; `RunInProgress` when another runner took the lock.
  func reconnectIfLost() throws
}

extension StoreTransaction {
  /// `load` of an answer file that is whole.
  public func load(
    file: String, scheme: ResourceScheme, params: JSONValue, delta: Bool, info: AnswerInfo, cancellation: Cancellation?
  ) throws -> LoadResult {
    try load(file: file, growing: nil, scheme: scheme, params: params, delta: delta, cancellation: cancellation) { info }
  }
}

extension StoreTransaction {
  public var sameDatabaseStaging: (any StagingTransaction)? { nil }

  public func replaceRows(ofTable target: String, from staging: String, columns: [(name: String, type: ColumnType)]) throws
    -> [String]
  {
    let existed = try !self.columns(ofTable: target).isEmpty
    let added = try addMissingColumns(columns.map { ($0.name, $0.type) }, toTable: target)
    if existed { _ = try deleteRows(ofTable: target) }
    _ = try append(from: staging, into: target, columns: columns.map(\.name))
    return added
  }
}

extension RunJournal {
  public func lostLock() -> (any Error)? { nil }
  public var fence: (any RunFence)? { nil }
  public func reconnectIfLost() throws {}
}

/// A running count of inserted rows (`TargetStore.observeInsertedRows`).
public protocol InsertedRowsObservation: AnyObject {
  /// Stops counting.
  func stop()
}

/// SQL a step wrote that dray does not run, found before any of it changed anything.
public enum UserSQLError: Error, Sendable, Equatable {
  /// A statement that would begin, commit or roll back a transaction.
  case transactionControl(statement: String)
  /// A statement that would create, alter, drop or write dray's own table `table`
  /// (`_dray_...`), itself or through the body of `trigger`.
  case ownTable(String, statement: String, trigger: String?)
  /// A statement that would let the database's own catalog be edited directly (SQLite:
  /// `PRAGMA writable_schema`), dray's own tables' definitions included.
  case catalogEdit(statement: String)
  /// A statement that would turn off or change the trigger of dray's table guard
  /// (PostgreSQL: `ALTER TABLE ... DISABLE TRIGGER`, `session_replication_role`).
  case tableGuard(statement: String)
  /// A `query` step's SQL without a statement (`rest` nil), or with another after the
  /// first (`rest` is its text, trimmed, cut after 200 characters).
  case notOneStatement(rest: String?)
}
