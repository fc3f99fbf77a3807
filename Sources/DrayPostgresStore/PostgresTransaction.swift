internal import DrayJSON
internal import DrayModel
internal import DrayPostgres
public import DrayTarget
internal import Foundation

/// An open transaction of a `PostgresStore` (`PostgresStore.write`).
final class PostgresTransaction: StoreTransaction {
  let store: PostgresStore
  var connection: PostgresConnection { store.connection }

  init(store: PostgresStore) { self.store = store }

  // MARK: Schemes and tables

  func createTables(for scheme: ResourceScheme, params: JSONValue) throws -> [String: String] {
    try SchemeLimits.check(scheme, for: PostgresStore.schemeLimits)
    try saveScheme(scheme)
    var names: [String: String] = [:]
    for table in scheme.outputs {
      let name = store.naming.physicalName(resource: scheme.name, table: table.name, params: params)
      try claim(name, resource: scheme.name, table: table.name, params: params)
      try connection.execute(createTableSQL(name: name, table: table, cached: scheme.isCached))
      try connection.execute(
        "INSERT INTO \(store.own("_dray_tables"))(name, resource, params, source_table) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
        [.text(name), .text(scheme.name), .text(params.canonicalJSON), .text(table.name)])
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
        name: name, resource: resource, table: table, otherResource: other[0], otherTable: other[1], otherParams: other[2])
    }
  }

  /// The columns of a table: `hhive_id bigint` (the primary key) first for a cached
  /// resource, then the scheme's, each typed by `PostgresColumnType`.
  static func columnDefinitions(_ table: ResourceScheme.Table, cached: Bool) -> [(name: String, type: PostgresColumnType)] {
    var columns: [(name: String, type: PostgresColumnType)] = []
    if cached { columns.append((Bookkeeping.rowIDColumn, .bigint)) }
    for column in table.columns { columns.append((column.name, PostgresColumnType(schemeType: column.type))) }
    return columns
  }

  private func createTableSQL(name: String, table: ResourceScheme.Table, cached: Bool) -> String {
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
  /// emptied and refilled the same way. Values go in under `PostgresValueRule`. `file` is
  /// read whole: the engine loads PostgreSQL after its download, never from a `growing` part.
  func load(
    file: String, growing: GrowingFile?, scheme: ResourceScheme, params: JSONValue, delta: Bool, cancellation: Cancellation?,
    info: () -> AnswerInfo
  ) throws -> LoadResult {
    let names = try createTables(for: scheme, params: params)
    var result = LoadResult(rowCounts: [:], inserted: [:], deleted: [:], tables: names)
    let load = PostgresLoad(transaction: self, scheme: scheme, names: names, delta: delta)
    do {
      try NamedLists.read(file: file, into: load) {
        if cancellation?.isCancelled == true {
          throw LoadError(resource: scheme.name, message: "the load was interrupted; nothing of it was kept")
        }
      }
      if let missing = LoadError.missingTable(of: scheme, named: load.named) { throw missing }
      result.inserted = load.inserted
      for (source, counts) in try load.staged.apply() {
        result.inserted[source, default: 0] += counts.inserted
        result.deleted[source, default: 0] += counts.deleted
      }
    } catch {
      load.rows?.writer.cancel("the load failed")
      guard let error = error as? TableAnswerError else { throw error }
      throw LoadError(resource: scheme.name, table: error.table, row: error.row, column: error.column, message: error.message)
    }
    result.skippedTables = load.skipped
    let replaced = load.replaced
    try record(scheme: scheme, params: params, names: names, replaced: replaced, delta: delta, info: info(), result: &result)
    return result
  }

  /// Empties table `name` for a full answer, or recreates it when its columns are no
  /// longer the scheme's.
  fileprivate func replace(name: String, table: ResourceScheme.Table, cached: Bool) throws {
    if try store.hasSchemeShape(name, table: table, cached: cached) {
      try connection.execute("TRUNCATE \(store.qualified(name))")
    } else {
      try connection.execute("DROP TABLE IF EXISTS \(store.qualified(name))")
      try connection.execute(createTableSQL(name: name, table: table, cached: cached))
    }
  }

  /// A delta applies only to a table with the scheme's columns (docs/store.md, "Deltas").
  fileprivate func checkDeltaTarget(name: String, table: ResourceScheme.Table, resource: String, cached: Bool) throws {
    guard try store.hasSchemeShape(name, table: table, cached: cached) else {
      throw LoadError(
        resource: resource, table: table.name,
        message:
          "table \(PostgresIdentifier.quoted(name)) does not have the scheme's columns, so a delta cannot apply to it; load full data (without delta) to recreate it"
      )
    }
  }

  /// Row counts and the bookkeeping row of each table the answer changed: the tables a full
  /// answer replaced; every table, for a delta (it brings them all to its version). Each
  /// changed table is armed (`PostgresTableGuard.arm`), clearing the mark dray's own writes
  /// just set.
  private func record(
    scheme: ResourceScheme, params: JSONValue, names: [String: String], replaced: Set<String>, delta: Bool, info: AnswerInfo,
    result: inout LoadResult
  ) throws {
    let now = PostgresTransaction.timestamp()
    for table in scheme.outputs {
      guard let name = names[table.name] else { continue }
      // A full answer empties a table before refilling it, so its rows are the ones inserted.
      let refilled = !delta && replaced.contains(table.name)
      let rows = refilled ? result.inserted[table.name] ?? 0 : try rowCount(ofTable: name)
      result.rowCounts[table.name] = rows
      result.inserted[table.name] = result.inserted[table.name] ?? 0
      result.deleted[table.name] = result.deleted[table.name] ?? 0
      guard delta || refilled else { continue }
      let hash = info.cacheHash.flatMap { AnswerInfo.cacheHash(for: table.name, in: $0) }
      try connection.execute(
        """
        UPDATE \(store.own("_dray_tables")) SET content_version = $2, etag = $3, cache_hash = $4, row_count = $5, loaded_at = $6
        WHERE name = $1
        """,
        [
          .text(name), info.contentVersion.map { .text($0) } ?? .null, info.etag.map { .text($0) } ?? .null,
          hash.map { .text($0) } ?? .null, .integer(Int64(rows)), .text(now),
        ])
      try PostgresTableGuard.arm(name, in: store)
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
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.string(from: date)
  }
}

@available(*, unavailable)
extension PostgresTransaction: Sendable {}

/// The lists of an answer loaded into PostgreSQL (`NamedLists`' sink): a full answer's
/// `data` emptied once and refilled by one `COPY ... FROM STDIN`; a delta's `insert_rows` and
/// `delete_ids` copied into temporary tables (`PostgresDelta`), applied when the answer is
/// read. Each list's values go to a `PostgresRowSink`.
private final class PostgresLoad: NamedListSink {
  let transaction: PostgresTransaction
  let scheme: ResourceScheme
  let names: [String: String]
  let tables: [String: ResourceScheme.Table]
  let delta: Bool
  var staged: PostgresDelta
  /// The COPY of the list being read.
  var rows: PostgresRowSink?
  var inserted: [String: Int] = [:]
  var replaced: Set<String> = []
  /// Tables of the scheme the answer holds a list of.
  var named: Set<String> = []
  var skipped = SkippedTables()

  init(transaction: PostgresTransaction, scheme: ResourceScheme, names: [String: String], delta: Bool) {
    self.transaction = transaction
    self.scheme = scheme
    self.names = names
    self.delta = delta
    staged = PostgresDelta(store: transaction.store)
    // `SchemeLimits.check` refused two output tables of one name; never trap on one anyway.
    tables = Dictionary(scheme.outputs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
  }

  func beginList(_ key: TableAnswerKey, of source: String) throws -> TableAnswerList {
    guard let table = tables[source], let name = names[source] else {
      skipped.add(source)
      return .skip
    }
    named.insert(source)
    var columns = table.columns.map { (name: $0.name, type: $0.type) }
    if scheme.isCached { columns.insert((Bookkeeping.rowIDColumn, "BIGINT"), at: 0) }
    let qualified = transaction.store.qualified(name)
    let destination: String
    switch (key, delta) {
    case (.data, false):
      if replaced.insert(source).inserted { try transaction.replace(name: name, table: table, cached: scheme.isCached) }
      destination = qualified
    case (.insertRows, false), (.deleteIDs, false):
      throw TableAnswerRefusal(
        "the answer holds a delta ('\(key.name)') but its Content-Version does not say so; refusing to apply it")
    case (.data, true), (.insertRows, true):
      if key == .data, replaced.insert(source).inserted {
        try transaction.replace(name: name, table: table, cached: scheme.isCached)
      } else if !replaced.contains(source) {
        try transaction.checkDeltaTarget(name: name, table: table, resource: scheme.name, cached: scheme.isCached)
      }
      destination = try staged.rows(of: source, target: qualified, cached: scheme.isCached)
    case (.deleteIDs, true):
      guard scheme.isCached else {
        throw TableAnswerRefusal(
          "the answer deletes rows by id from table \(source), whose resource has no row ids (it is not cached)")
      }
      if !replaced.contains(source) {
        try transaction.checkDeltaTarget(name: name, table: table, resource: scheme.name, cached: scheme.isCached)
      }
      destination = try staged.ids(of: source, target: qualified)
      columns = [columns[0]]
    }
    let list = columns.map { PostgresIdentifier.sql($0.name) }.joined(separator: ", ")
    let writer = try transaction.connection.copyIn("COPY \(destination) (\(list)) FROM STDIN")
    let sink = PostgresRowSink(writer: writer, resource: scheme.name, table: source, columns: columns, rowIDFirst: scheme.isCached)
    rows = sink
    return key == .deleteIDs ? .ids : .rows(sink)
  }

  func deleteID(_ token: JSONToken, item: Int) throws {
    guard let sink = rows else { return }
    guard case .number(let text) = token, Int64(String(decoding: text, as: UTF8.self)) != nil else {
      let shown = if case .number(let text) = token { PrintableText.excerpt(String(decoding: text, as: UTF8.self)) } else { "a non-number" }
      throw TableAnswerRefusal("delete_ids holds row ids (integers of at most 64 bits); item \(item) is \(shown)")
    }
    try sink.value(token, row: item, column: 0)
    try sink.endRow(item, values: 1)
  }

  func endList(_ key: TableAnswerKey, of source: String, items: Int) throws {
    guard let sink = rows else { return }
    rows = nil
    let count = try sink.finish()
    // A delta's rows and ids are counted when they apply (`PostgresDelta.apply`).
    if !delta { inserted[source, default: 0] += count }
  }
}
