public import DrayModel
internal import DrayPostgres
public import DrayTarget

/// A job's PostgreSQL database behind the target seam: the target store and the run journal
/// both live in the schema of `target` (docs/postgres.md).
public struct PostgresDatabase: JobDatabase {
  public let target: PostgresTarget
  /// Opens where an `http` step stages (`openStaging`): a local database of the job's state
  /// folder, given by DrayDatabases; nil where no step runs (`dray tables`, `query`).
  let staging: (@Sendable (_ records: Bool, Cancellation) throws -> any RecordStaging)?

  public init(target: PostgresTarget, staging: (@Sendable (_ records: Bool, Cancellation) throws -> any RecordStaging)? = nil) {
    self.target = target
    self.staging = staging
  }

  public var location: String { "schema \(target.schema) of \(target.url.redacted)" }
  public var journalLocation: String { location }
  public var journalPlace: String { "in \(location)" }
  public var absence: String {
    "PostgreSQL at \(target.url.redacted) has no schema \(target.schema); name the job's schema with --schema (database.schema in its manifest)"
  }
  public var naming: TableNaming { PostgresStore.naming }
  /// A load reads the answer after its download (`PostgresTransaction.load`); a lost
  /// connection is made again (`PostgresJournal.reconnectIfLost`).
  public var capabilities: DatabaseCapabilities { DatabaseCapabilities(loadsWhileDownloading: false, reconnects: true) }

  /// Connects and closes, so that the journal opens on a server that is up.
  public func connect(cancellation: Cancellation) throws {
    try PostgresConnection(url: target.url, password: target.password, timeouts: target.timeouts, cancellation: cancellation).close()
  }

  /// `PostgresJournal`: a server's journal is never replaced, `fresh` or not.
  public func openJournal(fresh: Bool, cancellation: Cancellation) throws -> sending any RunJournal {
    try PostgresJournal(target: target, cancellation: cancellation)
  }

  /// `PostgresStore`, its commits fenced by `fence`: the `PostgresRunLock` the journal took,
  /// and a partition's `PartitionClaim` (both in a `RunFences`).
  public func openStore(fence: (any RunFence)?, cancellation: Cancellation) throws -> any TargetStore {
    let fences = (fence as? RunFences)?.fences ?? (fence.map { [$0] } ?? [])
    return try PostgresStore(
      target: target, fence: fences.lazy.compactMap { $0 as? PostgresRunLock }.first,
      claim: fences.lazy.compactMap { $0 as? PartitionClaim }.first, cancellation: cancellation)
  }

  /// `PostgresClaims` in the job's schema.
  public func openClaims(cancellation: Cancellation) throws -> (any PartitionClaims)? {
    try PostgresClaims(target: target, cancellation: cancellation)
  }

  /// The local staging database DrayDatabases gave (the step's records are copied into the
  /// publishing transaction with `StoreTransaction.stage`).
  public func openStaging(records: Bool, cancellation: Cancellation) throws -> any RecordStaging {
    guard let staging else { throw StoreError.noDatabase }
    return try staging(records, cancellation)
  }

  /// A read-only session (`PostgresStore(reading:)`); nil when the schema does not exist.
  public func openReadOnly() throws -> (any DatabaseReader)? {
    let store = try PostgresStore(reading: target)
    return try store.schemaExists() ? PostgresReader(store: store, schema: target.schema) : nil
  }

  /// `PostgresTokenKeeper` in the job's schema.
  public func openTokenKeeper(cancellation: Cancellation) throws -> any TokenKeeper {
    try PostgresTokenKeeper(target: target, cancellation: cancellation)
  }

  public func failure(_ error: any Error) -> DatabaseFailure? {
    switch error {
    case let error as StagedValueError:
      DatabaseFailure(code: "load_error", refusesData: true, message: error.description)
    case let error as PartitionClaimLost:
      DatabaseFailure(code: "claim_lost", message: error.description)
    case let error as PostgresRunLockError:
      DatabaseFailure(code: "lock_lost", isLockLost: true, message: error.description)
    case let error as PostgresError:
      DatabaseFailure(
        code: error.timeout != nil ? "database_timeout" : nil, isTransient: error.isTransient, isTimeout: error.timeout != nil,
        refusesData: error.sqlState.map { $0.hasPrefix("22") || $0 == "42804" } ?? false, message: error.userMessage)
    default: nil
    }
  }
}

extension PostgresRunLock: RunFence {}

/// A schema read on a read-only session (`JobDatabase.openReadOnly`).
final class PostgresReader: DatabaseReader {
  let store: PostgresStore
  /// The journal, read on the store's session; nil when the schema holds none.
  private let existingJournal: PostgresJournal?

  init(store: PostgresStore, schema: String) throws {
    self.store = store
    existingJournal = try PostgresJournal.existing(on: store.connection, schema: schema)
  }

  func journal() throws -> (any RunJournal)? { existingJournal }

  /// The runs' processes ran on whichever machines ran them: a live runner holds the job's
  /// run lock, in a session the server knows.
  func runner(of run: RunRecord) throws -> String {
    let holder = try existingJournal?.lockHolder(job: run.job)
    return holder.map { "process \(run.processID); its runner's session: \($0)" }
      ?? "process \(run.processID); no session holds the job's run lock, so its runner is gone; the next run marks it abandoned"
  }

  func tables(resource: String?) throws -> [Bookkeeping.TableRecord] { try store.records(resource: resource) }

  /// From `_dray_claims`, when the schema holds it; expiries by the server's clock.
  func claims(job: String, runID: String) throws -> [ClaimView] {
    guard try PostgresStore.hasOwnTables(["_dray_claims"], schema: store.schema, on: store.connection) else { return [] }
    return try store.connection.execute(
      """
      SELECT step_id, member_id, state, owner,
        CASE WHEN state = 'claimed' THEN ((expires_us - \(PostgresClaims.now)) / 1000000.0)::double precision END AS expires_in
      FROM \(PostgresIdentifier.quoted(store.schema))._dray_claims WHERE job = $1 AND run_id = $2 ORDER BY step_id, ordinal
      """, [.text(job), .text(runID)]
    ).named.map { row in
      ClaimView(
        stepID: try row["step_id"].text ?? "", memberID: try row["member_id"].text ?? "",
        state: ClaimState.State(rawValue: try row["state"].text ?? "") ?? .pending, owner: try row["owner"].text,
        expiresIn: try row["expires_in"].real)
    }
  }
  func scheme(for resource: String) throws -> ResourceScheme? { try store.scheme(for: resource) }
  func cursor(job: String, stepID: String) throws -> CursorEntry { try store.cursor(job: job, stepID: stepID) }
  func keptToken(key: String) throws -> KeptToken? {
    try PostgresTokenKeeper.read(store.connection, schema: store.schema, key: key)
  }

  /// In a `READ ONLY` transaction of a read-only session: the server refuses any write
  /// (SQLSTATE 25006, read_only_sql_transaction).
  func query(_ sql: String, columns: ([String]) throws -> Void, row: ([SQLValue]) throws -> Void) throws {
    do {
      try store.query(sql, columns: columns, row: row)
    } catch let error as PostgresError where error.sqlState == "25006" {
      throw ReadOnlyQueryError("dray query only reads; change data with an sql step in a job (\(error.userMessage))")
    }
  }

  func quoted(_ name: String) -> String { PostgresIdentifier.quoted(name) }
}
