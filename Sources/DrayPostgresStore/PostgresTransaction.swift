internal import DrayJSON
internal import DrayModel
internal import DrayPostgres
internal import DrayTarget
internal import Foundation

/// An open transaction of a `PostgresStore` (`PostgresStore.write`).
final class PostgresTransaction: StoreTransaction {
  let store: PostgresStore
  var connection: PostgresConnection { store.connection }

  init(store: PostgresStore) { self.store = store }

  // MARK: Schemes and tables

  func createTables(for scheme: ResourceScheme, params: JSONValue) throws -> [String: String] {
    try store.lockDefinitions()
    try PostgresStore.schemeLimits.check(scheme)
    try saveScheme(scheme)
    var names: [String: String] = [:]
    for table in scheme.outputs {
      let name = store.naming.physicalName(resource: scheme.name, table: table.name, params: params)
      try claim(name, resource: scheme.name, table: table.name, params: params)
      let made = try !store.tableExists(name)
      try connection.execute(createTableSQL(name: name, table: table, cached: scheme.isCached))
      // A table made now records the columns it was made with; an existing one keeps those
      // it was made or last loaded with (`recordedColumns`).
      try connection.execute(
        """
        INSERT INTO \(store.own("_dray_tables"))(name, resource, params, source_table, column_types) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (name) DO UPDATE SET column_types = excluded.column_types WHERE $6
        """,
        [
          .text(name), .text(scheme.name), .text(params.canonicalJSON), .text(table.name),
          .text(Bookkeeping.encodeColumns(table.columns)), .bool(made),
        ])
      names[table.name] = name
    }
    return names
  }

  private func saveScheme(_ scheme: ResourceScheme) throws {
    try connection.execute(
      """
      INSERT INTO \(store.own("_dray_resources"))(resource, scheme, fetched_at) VALUES ($1, $2, $3)
      ON CONFLICT (resource) DO UPDATE SET scheme = excluded.scheme, fetched_at = excluded.fetched_at
      """, [.text(scheme.name), .text(Bookkeeping.encodeScheme(scheme)), .text(PostgresTransaction.timestamp())])
  }

  /// Refuses a physical name another resource, table or parameter set already holds (two
  /// long names fitted to one, or `A__b` + `c` against `A` + `b__c`).
  private func claim(_ name: String, resource: String, table: String, params: JSONValue) throws {
    let rows = try connection.execute(
      "SELECT resource, source_table, params FROM \(store.own("_dray_tables")) WHERE name = $1", [.text(name)]
    ).rows
    for row in rows {
      let other = row.map { $0.text ?? "" }
      if other == [resource, table, params.canonicalJSON] { continue }
      throw StoreError.nameClash(
        name: name, resource: resource, table: table, otherResource: other[0], otherTable: other[1], otherParams: other[2],
        reason: "two tables cannot share one name (long names are cut to PostgreSQL's 63 bytes and end in a hash of the whole name)")
    }
  }

  /// The columns of a table: `hhive_id bigint` (the primary key) first for a cached
  /// resource, then the scheme's, each typed by `PostgresColumnType`.
  static func columnDefinitions(_ table: ResourceScheme.Table, cached: Bool) -> [(name: String, type: PostgresColumnType)] {
    var columns: [(name: String, type: PostgresColumnType)] = []
    if cached { columns.append((ResourceScheme.rowIDColumn, .bigint)) }
    for column in table.columns { columns.append((column.name, PostgresColumnType(schemeType: column.type))) }
    return columns
  }

  fileprivate func createTableSQL(name: String, table: ResourceScheme.Table, cached: Bool) -> String {
    let columns = PostgresTransaction.columnDefinitions(table, cached: cached).enumerated().map { index, column in
      "\(PostgresIdentifier.sql(column.name)) \(column.type.sqlName)\(cached && index == 0 ? " PRIMARY KEY" : "")"
    }
    return "CREATE TABLE IF NOT EXISTS \(store.qualified(name)) (\(columns.joined(separator: ", ")))"
  }

  // MARK: Loads

  /// A full answer: each table the answer holds is emptied (`TRUNCATE`, which makes readers
  /// wait for this transaction and then see the new rows whole; recreated when its columns
  /// are no longer the scheme's) and refilled by one `COPY ... FROM STDIN`. A delta: its
  /// `insert_rows` and `delete_ids` are copied into temporary tables and applied when the
  /// answer is read, deletes first (`PostgresDelta`); a table whose `data` it holds is
  /// emptied and refilled the same way. What each list does, the refusals, the result and
  /// the bookkeeping are `TableAnswerApplier`'s. Values go in under `PostgresValueRule`.
  /// `file` is read whole: the engine loads PostgreSQL after its download, never from a
  /// `growing` part.
  func load(
    file: String, growing: GrowingFile?, scheme: ResourceScheme, params: JSONValue, delta: Bool, cancellation: Cancellation?,
    info: () -> AnswerInfo
  ) throws -> LoadResult {
    let applier = try TableAnswerApplier(scheme: scheme, params: params, delta: delta, store: self)
    let load = PostgresLoad(transaction: self, applier: applier)
    do {
      try NamedLists.read(file: file, into: load) {
        if cancellation?.isCancelled == true { throw applier.interrupted }
      }
      return try applier.finish(
        counts: {
          var inserted = load.inserted
          var deleted: [String: Int] = [:]
          for (source, counts) in try load.staged.apply() {
            inserted[source, default: 0] += counts.inserted
            deleted[source, default: 0] += counts.deleted
          }
          return (inserted, deleted)
        }, info: info)
    } catch {
      load.rows?.writer.cancel("the load failed")
      guard let error = error as? TableAnswerError else { throw error }
      throw LoadError(resource: scheme.name, table: error.table, row: error.row, column: error.column, message: error.message)
    }
  }

  /// Appends one JSON value of a row under the value rule (an `http` step's staged records;
  /// a table answer's values come as the scanner's bytes, `PostgresRowSink`).
  static func append(_ value: JSONValue, as type: PostgresColumnType, to writer: PostgresCopyWriter) throws(PostgresValueRefusal) {
    func bytes(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) throws(PostgresValueRefusal) -> Void) throws(PostgresValueRefusal) {
      var text = text
      let refusal: PostgresValueRefusal? = text.withUTF8 { buffer in
        do throws(PostgresValueRefusal) {
          try body(buffer)
          return nil
        } catch { return error }
      }
      if let refusal { throw refusal }
    }
    switch value {
    case .null: try PostgresValueRule.append(.null, as: type, to: writer)
    case .bool(let b): try PostgresValueRule.append(.bool(b), as: type, to: writer)
    case .integer(let i):
      try bytes(String(i)) { (b) throws(PostgresValueRefusal) in try PostgresValueRule.append(.number(b), as: type, to: writer) }
    case .number(let text):
      try bytes(text) { (b) throws(PostgresValueRefusal) in try PostgresValueRule.append(.number(b), as: type, to: writer) }
    case .string(let s): try bytes(s) { (b) throws(PostgresValueRefusal) in try PostgresValueRule.append(.string(b), as: type, to: writer) }
    case .array, .object:
      try bytes(value.json) { (b) throws(PostgresValueRefusal) in try PostgresValueRule.append(.nested(b), as: type, to: writer) }
    }
  }

  // MARK: Reading

  func rowCount(ofTable name: String) throws -> Int {
    Int(try connection.execute("SELECT count(*) FROM \(store.qualified(name))").rows.first?.first?.integer ?? 0)
  }

  /// The table PostgreSQL holds under `name` fitted to 63 bytes, as every write names it.
  func columns(ofTable name: String) throws -> [String] { try store.columnNames(ofTable: PostgresIdentifier.fitted(name)) }

  func aggregates(ofTable name: String, _ aggregates: [TableAggregate]) throws -> [SQLValue] {
    let list = aggregates.map { "\($0.function.rawValue)(\($0.column.map(PostgresIdentifier.sql) ?? "*"))" }
    let row = try connection.execute("SELECT \(list.joined(separator: ", ")) FROM \(store.qualified(name))").rows.first ?? []
    return row.map(\.sqlValue)
  }

  // MARK: A step's SQL

  /// Every statement is checked before the first runs: transaction control and writes that
  /// name dray's own tables are refused (`UserSQLError`).
  func execute(userSQL sql: String) throws -> [(sql: String, changes: Int)] {
    let statements = PostgresSQLText.statements(sql)
    for statement in statements {
      if let error = PostgresSQLText.transactionControl(statement) ?? PostgresSQLText.ownTableWrite(statement) { throw error }
    }
    return try statements.map { ($0, try connection.execute($0).affectedRows) }
  }

  // MARK: The journal

  func record(_ checkpoint: CheckpointRecord) throws {
    try PostgresJournal.record(checkpoint, on: connection, schema: store.schema)
  }

  /// RFC 3339 UTC time, seconds precision.
  static func timestamp(_ date: Date = Date()) -> String {
    Bookkeeping.timestamp(date)
  }
}

@available(*, unavailable)
extension PostgresTransaction: Sendable {}

/// The lists of an answer loaded into PostgreSQL (`NamedLists`' sink), as
/// `TableAnswerApplier` says: a full answer's `data` refilled by one `COPY ... FROM STDIN`;
/// a delta's `insert_rows` and `delete_ids` copied into temporary tables (`PostgresDelta`),
/// applied when the answer is read. Each list's values go to a `PostgresRowSink`.
private final class PostgresLoad: NamedListSink {
  let transaction: PostgresTransaction
  let applier: TableAnswerApplier
  var staged: PostgresDelta
  /// The COPY of the list being read.
  var rows: PostgresRowSink?
  /// Rows of a full answer, by source table name (a delta's are counted when they apply).
  var inserted: [String: Int] = [:]

  init(transaction: PostgresTransaction, applier: TableAnswerApplier) {
    self.transaction = transaction
    self.applier = applier
    staged = PostgresDelta(store: transaction.store)
  }

  func beginList(_ key: TableAnswerKey, of source: String) throws -> TableAnswerList {
    try applier.admit(key)
    guard let target = applier.target(named: source), let action = try applier.list(key, of: source) else { return .skip }
    var columns = target.table.columns.map { (name: $0.name, type: $0.type) }
    if target.cached { columns.insert((ResourceScheme.rowIDColumn, "BIGINT"), at: 0) }
    let qualified = transaction.store.qualified(target.physicalName)
    let destination: String
    switch action {
    case .rows(upsert: false): destination = qualified
    case .rows(upsert: true): destination = try staged.rows(of: source, target: qualified, cached: target.cached)
    case .ids:
      destination = try staged.ids(of: source, target: qualified)
      columns = [columns[0]]
    }
    let list = columns.map { PostgresIdentifier.sql($0.name) }.joined(separator: ", ")
    let copy = "COPY \(destination) (\(list)) FROM STDIN"
    let connection = transaction.connection
    let writer =
      try Self.binary(destination, columns, on: connection)
      ? connection.copyInBinary(copy, width: columns.count) : connection.copyIn(copy)
    let sink = PostgresRowSink(
      writer: writer, resource: applier.scheme.name, table: source, columns: columns, rowIDFirst: target.cached)
    rows = sink
    return action == .ids ? .ids : .rows(sink)
  }

  /// Whether the list goes by binary COPY (`PostgresCopyWriter+Binary.swift`): when each
  /// column's type in the catalog is the one `PostgresColumnType` gives its scheme type. A
  /// column a user altered to another type makes it text, which the server casts as before;
  /// `DRAY_TEST_POSTGRES_COPY=text` makes every list text (tests compare the two with it).
  static func binary(_ table: String, _ columns: [(name: String, type: String)], on connection: PostgresConnection) throws -> Bool {
    if ProcessInfo.processInfo.environment["DRAY_TEST_POSTGRES_COPY"] == "text" { return false }
    let types = try connection.columnTypes(of: table, columns.map(\.name))
    return types == columns.map { PostgresColumnType(schemeType: $0.type).sqlName }
  }

  func deleteID(_ token: JSONToken, item: Int) throws {
    guard let sink = rows else { return }
    guard case .number(let text) = token, Int64(String(decoding: text, as: UTF8.self)) != nil else {
      throw TableAnswerApplier.badRowID(token, item: item)
    }
    try sink.value(token, row: item, column: 0)
    try sink.endRow(item, values: 1)
  }

  func endList(_ key: TableAnswerKey, of source: String, items: Int) throws {
    guard let sink = rows else { return }
    rows = nil
    let count = try sink.finish()
    // A delta's rows and ids are counted when they apply (`PostgresDelta.apply`).
    if !applier.delta { inserted[source, default: 0] += count }
  }
}

/// A load's table work on PostgreSQL, for `TableAnswerApplier`.
extension PostgresTransaction: TableAnswerStore {
  func hasSchemeShape(_ name: String, table: ResourceScheme.Table, cached: Bool) throws -> Bool {
    try store.hasSchemeShape(name, table: table, cached: cached)
  }

  /// `TRUNCATE` makes readers wait for this transaction and then see the new rows whole.
  func emptyTable(_ name: String) throws { try connection.execute("TRUNCATE \(store.qualified(name))") }

  func recreateTable(_ target: TableAnswerApplier.Target) throws {
    try connection.execute("DROP TABLE IF EXISTS \(store.qualified(target.physicalName))")
    try connection.execute(createTableSQL(name: target.physicalName, table: target.table, cached: target.cached))
  }

  /// `createTables` made each table's `_dray_tables` row; arming the guard
  /// (`PostgresTableGuard.arm`) clears the mark dray's own writes just set.
  func recordLoads(_ tables: [LoadedTable]) throws {
    let now = PostgresTransaction.timestamp()
    for table in tables {
      try connection.execute(
        """
        UPDATE \(store.own("_dray_tables")) SET content_version = $2, etag = $3, cache_hash = $4, row_count = $5, loaded_at = $6,
        column_types = $7 WHERE name = $1
        """,
        [
          .text(table.name), table.answer.contentVersion.map { .text($0) } ?? .null, table.answer.etag.map { .text($0) } ?? .null,
          table.answer.cacheHash.map { .text($0) } ?? .null, .integer(Int64(table.rowCount)), .text(now),
          .text(Bookkeeping.encodeColumns(table.columns)),
        ])
      try PostgresTableGuard.arm(table.name, in: store)
    }
  }

  func quoted(_ name: String) -> String { PostgresIdentifier.quoted(name) }
}
