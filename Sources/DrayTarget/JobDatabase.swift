public import DrayModel

/// A job's database as the engine and the commands reach it: its target store and its run
/// journal, chosen once from the manifest's `database:` block (or a command line's
/// DATABASE argument) by the one place that knows every store (`DrayDatabases`). Everything
/// else asks it, never "which database is it?" (docs/architecture.md, "The target seam").
///
/// A value: cheap to copy and to share between step threads; every connection it opens has
/// one owner.
public protocol JobDatabase: Sendable {
  /// Where the database is, for messages: SQLite's file path; "schema S of URL" with the
  /// URL's password masked.
  var location: String { get }

  /// Where the run journal is, for messages (`dray plan`, `dray status`): the journal's
  /// file, or `location` when the journal lives in the target database.
  var journalLocation: String { get }

  /// Where the run journal is, as a phrase that follows "journal": `at /jobs/app.sqlite`,
  /// `in schema public of postgresql://dray@db/app`.
  var journalPlace: String { get }

  /// Why `openReadOnly` found nothing, and what to do, as one line: `no database at
  /// /x.sqlite; check the path (a run of the job creates it)`.
  var absence: String { get }

  /// The physical table naming rule with this database's identifier limit.
  var naming: TableNaming { get }

  /// What this database can do, for the engine's choices.
  var capabilities: DatabaseCapabilities { get }

  /// Returns once the database answers, so that a run starts on a database that is up: a
  /// server is connected to and left; a file needs nothing.
  /// - Throws: the database's error (`failure(_:)` classifies it).
  func connect(cancellation: Cancellation) throws

  /// The job's run journal, opened for a run: its tables created when missing.
  /// - Parameter fresh: `--fresh`: a damaged journal file may be set aside and started anew
  ///   (docs/resume.md); a server's journal is never replaced.
  /// - Throws: `JournalError`; the database's errors.
  func openJournal(fresh: Bool, cancellation: Cancellation) throws -> sending any RunJournal

  /// The target store, opened for one step thread.
  /// - Parameter fence: the run lock the journal took (`RunJournal.fence`), checked by every
  ///   commit of a store whose lock lives in the database; nil outside a run.
  /// - Throws: `StoreError.noDatabase` for a job whose manifest names no database; the
  ///   database's errors.
  func openStore(fence: (any RunFence)?, cancellation: Cancellation) throws -> any TargetStore

  /// Where an `http` step stages its records and page ledger, opened for one step thread:
  /// with `records`, the staging tables of its load and their ledger (SQLite: the job's
  /// database; beside a server database, the local file `<state.path>/<job>.staging.sqlite`);
  /// without, the ledger of a step that only paginates (beside the run journal).
  /// - Throws: `StoreError.noDatabase` for records of a job without a database; the
  ///   staging database's errors.
  func openStaging(records: Bool, cancellation: Cancellation) throws -> any RecordStaging

  /// The database as it is, read without creating or changing anything (`dray status`,
  /// `plan`, `report`, `tables`, `query`); nil when it does not exist yet (no file; no
  /// schema).
  /// - Throws: the database's errors; `JournalError` for a journal file dray cannot trust.
  func openReadOnly() throws -> (any DatabaseReader)?

  /// The refresh tokens kept in the run journal's database, on a connection of its own,
  /// for one refresh (`TokenKeeper`); its table is created when missing.
  /// - Throws: the database's errors.
  func openTokenKeeper(cancellation: Cancellation) throws -> any TokenKeeper

  /// The claims of partitions shared by the runners of one run (`dray run --join`), on a
  /// connection of its own; nil where runners cannot share a run (SQLite: one file serves
  /// one machine), the default.
  /// - Throws: the database's errors.
  func openClaims(cancellation: Cancellation) throws -> (any PartitionClaims)?

  /// This database's view of `error`: its code, whether trying again may succeed, one line
  /// for people; nil for an error that is not the database's.
  func failure(_ error: any Error) -> DatabaseFailure?
}

extension JobDatabase {
  public func openClaims(cancellation: Cancellation) throws -> (any PartitionClaims)? { nil }

  /// Whether trying `error`'s work again after connecting anew may succeed
  /// (`DatabaseFailure.isTransient`): false for an error that is not the database's.
  public func isTransient(_ error: any Error) -> Bool { failure(error)?.isTransient == true }
}

/// What a database can do, for the engine's choices.
public struct DatabaseCapabilities: Sendable, Equatable {
  /// A `table_stream` or `http` load may read an answer while it downloads (on a thread
  /// of its own, `GrowingFile`): SQLite's loads can; PostgreSQL's load after the download.
  public var loadsWhileDownloading: Bool
  /// A connection the database drops may be made again and the step run again from its
  /// last commit (`ConnectionRetry`): a server; a file is never "lost".
  public var reconnects: Bool

  public init(loadsWhileDownloading: Bool, reconnects: Bool) {
    self.loadsWhileDownloading = loadsWhileDownloading
    self.reconnects = reconnects
  }
}

/// A database's view of an error it raised (`JobDatabase.failure(_:)`).
public struct DatabaseFailure: Sendable, Equatable {
  /// The step report's `error_code`: `lock_lost`, `database_timeout`, `sqlite_error`; nil
  /// when the engine's own classes apply.
  public var code: String?
  /// Trying again after connecting anew may succeed (a lost connection, a server shutting
  /// down: SQLSTATE classes 08 and 57P).
  public var isTransient: Bool
  /// The run no longer holds the job's run lock: another runner may be running the job.
  public var isLockLost: Bool
  /// A time limit of `database.timeouts` ended the work (the server stalled, or ended a
  /// statement at its `statement_timeout`): not retried within the run, but a later run may
  /// succeed (`FailureClass.unavailable`).
  public var isTimeout: Bool
  /// The database refused a value for the data's sake: its column's type does not take it
  /// (PostgreSQL: SQLSTATE class 22 and 42804; SQLite: a STRICT table's
  /// `SQLITE_CONSTRAINT_DATATYPE`, `SQLITE_MISMATCH`). Publishing the same records again
  /// fails the same way, so an `http` load drops its staged pages (docs/http.md, "Contract").
  public var refusesData: Bool
  /// One line: what failed, where (the URL's password masked), what to do.
  public var message: String

  public init(
    code: String?, isTransient: Bool = false, isLockLost: Bool = false, isTimeout: Bool = false, refusesData: Bool = false, message: String
  ) {
    self.code = code
    self.refusesData = refusesData
    self.isTransient = isTransient
    self.isTimeout = isTimeout
    self.isLockLost = isLockLost
    self.message = message
  }
}

/// What a store checks at each commit when the job's run lock lives in its database: the
/// lock and its fencing generation, as the journal took them (`RunJournal.fence`).
public protocol RunFence: Sendable {}

/// A database read as it is, creating nothing (`JobDatabase.openReadOnly`).
public protocol DatabaseReader: AnyObject {
  /// The run journal; nil when the database holds none.
  func journal() throws -> (any RunJournal)?
  /// What is known of a `running` run's runner, as `dray status` says it: whether its
  /// process lives (a journal on this machine's disk), or which session holds the job's run
  /// lock (a shared database).
  func runner(of run: RunRecord) throws -> String
  /// Every physical table the bookkeeping records, optionally of one resource, by name.
  func tables(resource: String?) throws -> [Bookkeeping.TableRecord]
  /// The scheme last recorded for `resource`, or nil.
  func scheme(for resource: String) throws -> ResourceScheme?
  /// The refresh token kept under `key` (`OAuth2.key`), or nil (`dray plan`).
  func keptToken(key: String) throws -> KeptToken?
  /// What the store keeps for an `incremental` step (an empty entry when nothing).
  func cursor(job: String, stepID: String) throws -> CursorEntry
  /// Runs one statement that only reads, as `dray query` does, handing `columns` the column
  /// names, then `row` each row.
  /// - Throws: `ReadOnlyQueryError` for a statement that would write; `UserSQLError`; the
  ///   database's errors.
  func query(_ sql: String, columns: ([String]) throws -> Void, row: ([SQLValue]) throws -> Void) throws
  /// `name` quoted as this database quotes identifiers.
  func quoted(_ name: String) -> String
  /// The claims of run `runID`'s partitions (`dray run --join`; `dray status`), by step and
  /// in order; empty where runners share no run (SQLite) or none was opened for claims.
  func claims(job: String, runID: String) throws -> [ClaimView]
}

extension DatabaseReader {
  /// No claims: a database whose runs runners do not share.
  public func claims(job: String, runID: String) throws -> [ClaimView] { [] }
}

/// A statement `DatabaseReader.query` does not run, or that the database refused, because it
/// would write: `description` says so and what to do instead.
public struct ReadOnlyQueryError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}
