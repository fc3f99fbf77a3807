public import DrayModel
public import DrayTarget
internal import Foundation

/// SQLite as a `TargetStore`: one database file, the journal's tables beside the data.
extension Store: TargetStore {
  public var location: String { database.path }

  public var naming: TableNaming { Store.naming }

  public var loadsWhileDownloading: Bool { true }

  public func stopWhen(_ cancellation: Cancellation) { database.stopWhen(cancellation) }

  public func tableReference(resource: String, table: String, params: JSONValue) throws -> String? {
    let name = naming.physicalName(resource: resource, table: table, params: params)
    return try database.tableExists(name) ? Database.quote(name) : nil
  }

  /// Runs under `Database.protectingOwnTables`; what follows the first statement is never
  /// prepared (`Database.prepareFirst`).
  public func query(_ sql: String, columns: ([String]) throws -> Void, row: ([SQLValue]) throws -> Void) throws {
    try refusingUserSQL {
      try database.protectingOwnTables {
        let (first, rest) = try database.prepareFirst(sql)
        guard let statement = first, rest == nil else { throw UserSQLError.notOneStatement(rest: rest) }
        let count = statement.columnCount
        try columns((0..<count).map { statement.columnName($0) })
        while try statement.step() {
          try row((0..<count).map { statement.value($0) })
        }
        try database.checkTriggers()
      }
    }
  }

  public func observeInsertedRows(every interval: Int, _ body: @escaping (Int) -> Void) -> (any InsertedRowsObservation)? {
    database.observeInsertedRows(every: interval, body)
  }

  /// A `BEGIN IMMEDIATE` transaction (`Database.transaction`). SQLite's run lock is the
  /// job's lock file and the journal's check in `RunJournal.begin`, on this one machine, so
  /// the commit has no fence to check.
  public func write<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
    try database.transaction { try body(SQLiteTransaction(store: self)) }
  }

  public func cursor(job: String, stepID: String) throws -> CursorEntry {
    try Store.cursor(in: database, job: job, stepID: stepID)
  }

  public func validators(job: String, stepID: String) throws -> KeptValidators? {
    try ValidatorLedger(database: database).read(job: job, stepID: stepID)
  }

  public func isIntact(table name: String) throws -> Bool { try TableGuard.isIntact(name, in: database) }

  /// What `database` keeps for an `incremental` step, read without creating anything (for
  /// `dray plan`, on a read-only connection).
  public static func cursor(in database: Database, job: String, stepID: String) throws -> CursorEntry {
    try CursorLedger(database: database, job: job, stepID: stepID).read()
  }

  /// Rows in the physical table `name`.
  func rowCount(ofTable name: String) throws -> Int {
    let count = try database.rows("SELECT count(*) AS n FROM \(Database.quote(name))").first?["n"]
    return if case .integer(let n)? = count { Int(n) } else { 0 }
  }

  /// Runs `body`, turning SQLite's refusals of a step's SQL (`Database.refusingTransactionControl`,
  /// `Database.protectingOwnTables`) into `UserSQLError`.
  func refusingUserSQL<T>(_ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as SQLiteError where error.isRefusedTransactionControl {
      throw UserSQLError.transactionControl(statement: Store.statementText(error))
    } catch let error as SQLiteError {
      guard let table = error.refusedOwnTable else { throw error }
      if table == Database.catalog { throw UserSQLError.catalogEdit(statement: Store.statementText(error)) }
      throw UserSQLError.ownTable(table, statement: Store.statementText(error), trigger: error.refusedInTrigger)
    }
  }

  private static func statementText(_ error: SQLiteError) -> String {
    (error.sql ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "; \n\t"))
  }
}

/// An open `BEGIN IMMEDIATE` transaction of a `Store`.
final class SQLiteTransaction: StoreTransaction {
  let store: Store

  init(store: Store) { self.store = store }

  func createTables(for scheme: ResourceScheme, params: JSONValue) throws -> [String: String] {
    try store.createTablesInTransaction(for: scheme, params: params)
  }

  func load(
    file: String, growing: GrowingFile?, scheme: ResourceScheme, params: JSONValue, delta: Bool, cancellation: Cancellation?,
    info: () -> AnswerInfo
  ) throws -> LoadResult {
    let applier = try TableAnswerApplier(scheme: scheme, params: params, delta: delta, store: self)
    return try store.loadInTransaction(file: file, growing: growing, applier: applier, cancellation: cancellation, info: info)
  }

  func rowCount(ofTable name: String) throws -> Int { try store.rowCount(ofTable: name) }

  func columns(ofTable name: String) throws -> [String] {
    try TableWrites.columnNames(of: name, in: store.database)
  }

  func columnTypes(ofTable name: String) throws -> [(name: String, type: ColumnType?)] {
    try TableWrites.columnTypes(of: name, in: store.database)
  }

  func widenColumns(_ columns: [(name: String, type: ColumnType)], ofTable name: String) throws {
    try TableWrites.widen(columns, of: name, in: store.database)
  }

  func recordedColumns(ofTable name: String) throws -> [ResourceScheme.Column]? { try store.recordedColumns(ofTable: name) }

  func aggregates(ofTable name: String, _ aggregates: [TableAggregate]) throws -> [SQLValue] {
    let list = aggregates.map { "\($0.function.rawValue)(\($0.column.map(Database.quote) ?? "*"))" }
    // Read by position: the aggregates are the statement's columns, in order.
    return try store.database.rows("SELECT \(list.joined(separator: ", ")) FROM \(Database.quote(name))").first?.values ?? []
  }

  /// A COMMIT among the statements would commit the first ones without the checkpoint, and
  /// a rerun would repeat them; writes to dray's own tables (the journal among them) are
  /// refused too, and so is a trigger whose body would write them when a load fires it.
  func execute(userSQL sql: String) throws -> [(sql: String, changes: Int)] {
    let database = store.database
    var statements: [(sql: String, changes: Int)] = []
    try store.refusingUserSQL {
      try database.refusingTransactionControl {
        try database.forEachStatement(sql) { (statement) throws(SQLiteError) in
          let before = database.totalChanges
          while try statement.step() {}
          // `changes` keeps the last write's count through a SELECT or a CREATE after it.
          statements.append((statement.sql, database.totalChanges == before ? 0 : database.changes))
        }
        try database.checkTriggers()
      }
    }
    return statements
  }

  func record(_ checkpoint: CheckpointRecord) throws {
    try Journal.record(checkpoint, in: store.database)
  }

  /// An `http` step's records stage in the job's database file itself
  /// (`SQLiteDatabase.openStaging`), whose page ledger `SQLiteStaging` created.
  var sameDatabaseStaging: (any StagingTransaction)? { SQLiteStagingTransaction(database: store.database) }

  func addMissingColumns(_ columns: [(name: String, type: ColumnType?)], toTable name: String) throws -> [String] {
    try TableWrites.addMissingColumns(columns, to: name, in: store.database)
  }

  func stage(
    _ name: String, columns: [(name: String, type: ColumnType?)], for target: String,
    rows: ((_ add: ([SQLValue]) throws -> Void) throws -> Void)
  ) throws {
    try TableWrites.stage(name, columns: columns, rows: rows, in: store.database)
  }

  // dray's writes to a table drop its guard first (`TableGuard`): `armGuard` sets it again.

  func replaceRows(ofTable target: String, from staging: String, columns: [(name: String, type: ColumnType)]) throws -> [String] {
    try TableGuard.disarm(target, in: store.database)
    try RecordTable(database: store.database, name: staging).publish(into: target)
    return []
  }

  /// `RecordTable.publish`: `target` made again with `source`'s columns when their names
  /// or types differ.
  func replaceRows(ofTable target: String, withTable source: String) throws -> [String] {
    try TableGuard.disarm(target, in: store.database)
    _ = try RecordTable(database: store.database, name: source).publish(into: target)
    return []
  }

  func dropTable(_ name: String) throws {
    _ = try store.database.execute("DROP TABLE IF EXISTS \(Database.quote(name))")
  }

  func deleteRows(ofTable name: String) throws -> Int {
    try TableGuard.disarm(name, in: store.database)
    return try store.database.execute("DELETE FROM \(Database.quote(name))")
  }

  func append(from staging: String, into target: String, columns: [String]) throws -> Int {
    try TableGuard.disarm(target, in: store.database)
    return try TableWrites.append(from: staging, into: target, columns: columns, in: store.database)
  }

  func merge(from staging: String, into target: String, columns: [String], key: [String], deletedColumn: String?) throws
    -> (written: Int, deleted: Int)
  {
    try TableGuard.disarm(target, in: store.database)
    return try TableWrites.merge(from: staging, into: target, columns: columns, key: key, deletedColumn: deletedColumn, in: store.database)
  }

  func deleteMissing(from staging: String, in target: String, key: [String]) throws -> Int {
    try TableGuard.disarm(target, in: store.database)
    return try TableWrites.deleteMissing(from: staging, in: target, key: key, in: store.database)
  }

  func saveCursor(_ entry: CursorEntry, job: String, stepID: String) throws {
    let ledger = CursorLedger(database: store.database, job: job, stepID: stepID)
    try ledger.createTable()
    try ledger.save(entry, at: Bookkeeping.timestamp())
  }

  func saveValidators(_ validators: KeptValidators?, job: String, stepID: String) throws {
    try ValidatorLedger(database: store.database).save(validators, job: job, stepID: stepID)
  }

  func armGuard(ofTable name: String) throws { try TableGuard.arm(name, in: store.database) }
}

@available(*, unavailable)
extension SQLiteTransaction: Sendable {}

/// A load's table work on SQLite, for `TableAnswerApplier`.
extension SQLiteTransaction: TableAnswerStore {
  func hasSchemeShape(_ name: String, table: ResourceScheme.Table, cached: Bool) throws -> Bool {
    try store.hasSchemeShape(name, table: table, cached: cached)
  }

  func emptyTable(_ name: String) throws { try store.database.execute("DELETE FROM \(Database.quote(name))") }

  func recreateTable(_ target: TableAnswerApplier.Target) throws {
    try store.database.execute("DROP TABLE IF EXISTS \(Database.quote(target.physicalName))")
    try store.database.execute(Store.createTableSQL(name: target.physicalName, table: target.table, cached: target.cached))
  }

  /// `createTables` made each table's `_dray_tables` row; the guard (`TableGuard.arm`) is
  /// armed on what the load left.
  func recordLoads(_ tables: [LoadedTable]) throws {
    let now = Bookkeeping.timestamp()
    for table in tables {
      let record = try store.database.cached(
        """
        UPDATE _dray_tables SET content_version = ?, etag = ?, cache_hash = ?, row_count = ?, loaded_at = ?, column_types = ?
        WHERE name = ?
        """)
      try record.bind([
        table.answer.contentVersion.map { .text($0) } ?? .null, table.answer.etag.map { .text($0) } ?? .null,
        table.answer.cacheHash.map { .text($0) } ?? .null, .integer(Int64(table.rowCount)), .text(now),
        .text(Bookkeeping.encodeColumns(table.columns)), .text(table.name),
      ])
      _ = try record.step()
      try TableGuard.arm(table.name, in: store.database)
    }
  }

  func quoted(_ name: String) -> String { Database.quote(name) }
}

extension Journal: RunJournal {
  public var location: String { path }
}

extension InsertedRowsObserver: InsertedRowsObservation {}
