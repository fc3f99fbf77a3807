internal import DrayJSON
internal import DrayModel
internal import DrayPostgres
internal import DrayStore
internal import Foundation

/// An open transaction of a `PostgresStore` (`PostgresStore.write`).
final class PostgresTransaction: StoreTransaction {
  let store: PostgresStore
  var connection: PostgresConnection { store.connection }

  init(store: PostgresStore) { self.store = store }

  // MARK: Schemes and tables

  func createTables(for scheme: ResourceScheme, params: JSONValue) throws -> [String: String] {
    try Store.check(scheme)
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
      """, [.text(scheme.name), .text(Store.encodeScheme(scheme)), .text(PostgresTransaction.timestamp())])
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

  /// The columns of a table: `hhive_id bigint PRIMARY KEY` first for a cached resource,
  /// then the scheme's, each typed by `PostgresColumnType`.
  private func columnDefinitions(_ table: ResourceScheme.Table, cached: Bool) -> [(name: String, type: String)] {
    var columns: [(name: String, type: String)] = []
    if cached { columns.append((Store.rowIDColumn, "bigint PRIMARY KEY")) }
    for column in table.columns { columns.append((column.name, PostgresColumnType(schemeType: column.type).sqlName)) }
    return columns
  }

  private func createTableSQL(name: String, table: ResourceScheme.Table, cached: Bool) -> String {
    let columns = columnDefinitions(table, cached: cached).map { "\(PostgresIdentifier.sql($0.name)) \($0.type)" }
    return "CREATE TABLE IF NOT EXISTS \(store.qualified(name)) (\(columns.joined(separator: ", ")))"
  }

  // MARK: Loads

  /// Full answers only (`PostgresStore.deltaBase` never offers a delta). Each table the
  /// answer holds is emptied (`TRUNCATE`, which makes readers wait for this transaction and
  /// then see the new rows whole; recreated when its columns are no longer the scheme's) and
  /// refilled by one `COPY ... FROM STDIN`, its values under `PostgresValueRule`.
  func load(
    file: String, scheme: ResourceScheme, params: JSONValue, delta: Bool, info: AnswerInfo, cancellation: Cancellation?
  ) throws -> LoadResult {
    if delta {
      throw LoadError(
        resource: scheme.name, message: "a PostgreSQL target loads full answers only; run the step again without delta")
    }
    let names = try createTables(for: scheme, params: params)
    var result = LoadResult(rowCounts: [:], inserted: [:], deleted: [:], tables: names)
    let load = PostgresLoad(transaction: self, scheme: scheme, names: names)
    do {
      try TableAnswerScanner(sink: load).scan(file: file) {
        if cancellation?.isCancelled == true {
          throw LoadError(resource: scheme.name, message: "the load was interrupted; nothing of it was kept")
        }
      }
    } catch {
      load.rows?.writer.cancel("the load failed")
      guard let error = error as? TableAnswerError else { throw error }
      throw LoadError(resource: scheme.name, table: error.table, row: error.row, column: error.column, message: error.message)
    }
    result.inserted = load.inserted
    result.skippedTables = load.skipped
    let replaced = load.replaced
    try record(scheme: scheme, params: params, names: names, replaced: replaced, info: info, result: &result)
    return result
  }

  /// Empties table `name` for a full answer, or recreates it when its columns are no
  /// longer the scheme's.
  fileprivate func replace(name: String, table: ResourceScheme.Table, cached: Bool) throws {
    let expected = columnDefinitions(table, cached: cached).map { PostgresIdentifier.fitted($0.name) }
    if try store.columnNames(ofTable: name) == expected {
      try connection.execute("TRUNCATE \(store.qualified(name))")
    } else {
      try connection.execute("DROP TABLE IF EXISTS \(store.qualified(name))")
      try connection.execute(createTableSQL(name: name, table: table, cached: cached))
    }
  }

  /// Row counts and the bookkeeping row of each table the answer replaced.
  private func record(
    scheme: ResourceScheme, params: JSONValue, names: [String: String], replaced: Set<String>, info: AnswerInfo,
    result: inout LoadResult
  ) throws {
    let now = PostgresTransaction.timestamp()
    for table in scheme.outputs {
      guard let name = names[table.name] else { continue }
      let rows = replaced.contains(table.name) ? result.inserted[table.name] ?? 0 : try rowCount(ofTable: name)
      result.rowCounts[table.name] = rows
      result.inserted[table.name] = result.inserted[table.name] ?? 0
      result.deleted[table.name] = 0
      guard replaced.contains(table.name) else { continue }
      let hash = info.cacheHash.flatMap { Store.cacheHash(for: table.name, in: $0) }
      try connection.execute(
        """
        UPDATE \(store.own("_dray_tables")) SET content_version = $2, etag = $3, cache_hash = $4, row_count = $5, loaded_at = $6
        WHERE name = $1
        """,
        [
          .text(name), info.contentVersion.map { .text($0) } ?? .null, info.etag.map { .text($0) } ?? .null,
          hash.map { .text($0) } ?? .null, .integer(Int64(rows)), .text(now),
        ])
    }
  }

  // MARK: Reading

  func rowCount(ofTable name: String) throws -> Int {
    Int(try connection.execute("SELECT count(*) FROM \(store.qualified(name))").rows.first?.first?.integer ?? 0)
  }

  func columns(ofTable name: String) throws -> [String] { try store.columnNames(ofTable: name) }

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

  // MARK: An http step's writes: SQLite only for now (docs/postgres.md, "Limits")

  func addMissingColumns(_ columns: [(name: String, type: ColumnType?)], toTable name: String) throws -> [String] {
    throw PostgresTransaction.httpLoads
  }

  func append(from staging: String, into target: String, columns: [String]) throws -> Int {
    throw PostgresTransaction.httpLoads
  }

  func merge(from staging: String, into target: String, columns: [String], key: [String], deletedColumn: String?) throws
    -> (written: Int, deleted: Int)
  {
    throw PostgresTransaction.httpLoads
  }

  func saveCursor(_ entry: CursorEntry, job: String, stepID: String) throws { throw PostgresTransaction.httpLoads }

  static let httpLoads = StoreError.badScheme(
    resource: "http",
    reason: "an http load into a PostgreSQL database (database.url) is not supported yet; load it into an SQLite database (database.path)")

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

/// The scanner's sink for a PostgreSQL load: each table of the scheme the answer holds is
/// emptied once and its rows go to a `PostgresRowSink` over one `COPY ... FROM STDIN`.
private final class PostgresLoad: TableAnswerSink {
  let transaction: PostgresTransaction
  let scheme: ResourceScheme
  let names: [String: String]
  let tables: [String: ResourceScheme.Table]
  var name: String?
  /// The COPY of the list being read.
  var rows: PostgresRowSink?
  var inserted: [String: Int] = [:]
  var replaced: Set<String> = []
  var skipped: [String] = []

  init(transaction: PostgresTransaction, scheme: ResourceScheme, names: [String: String]) {
    self.transaction = transaction
    self.scheme = scheme
    self.names = names
    // `Store.check` refused two output tables of one name; never trap on one anyway.
    tables = Dictionary(scheme.outputs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
  }

  func beginTable() throws { name = nil }
  func tableName(_ name: String) throws { self.name = name }
  func endTable() throws {}
  func deleteID(_ token: JSONToken, item: Int) throws {}

  func beginList(_ key: TableAnswerKey) throws -> TableAnswerList {
    guard key == .data else { return .skip }
    guard let source = name else { throw TableAnswerRefusal("a table's rows come before its name") }
    guard let table = tables[source], let physical = names[source] else {
      if !skipped.contains(source) { skipped.append(source) }
      return .skip
    }
    if replaced.insert(source).inserted { try transaction.replace(name: physical, table: table, cached: scheme.isCached) }
    var columns = table.columns.map { (name: $0.name, type: $0.type) }
    if scheme.isCached { columns.insert((Store.rowIDColumn, "BIGINT"), at: 0) }
    let list = columns.map { PostgresIdentifier.sql($0.name) }.joined(separator: ", ")
    let writer = try transaction.connection.copyIn("COPY \(transaction.store.qualified(physical)) (\(list)) FROM STDIN")
    let sink = PostgresRowSink(writer: writer, resource: scheme.name, table: source, columns: columns, rowIDFirst: scheme.isCached)
    rows = sink
    return .rows(sink)
  }

  func endList(_ key: TableAnswerKey, items: Int) throws {
    guard let sink = rows, let source = name else { return }
    rows = nil
    inserted[source, default: 0] += try sink.finish()
  }
}
