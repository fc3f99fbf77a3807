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
    file: String, growing: GrowingFile?, scheme: ResourceScheme, params: JSONValue, delta: Bool, cancellation: Cancellation?,
    info: () -> AnswerInfo
  ) throws -> LoadResult {
    if delta {
      throw LoadError(
        resource: scheme.name, message: "a PostgreSQL target loads full answers only; run the step again without delta")
    }
    let names = try createTables(for: scheme, params: params)
    let tables = Dictionary(scheme.outputs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    var result = LoadResult(rowCounts: [:], inserted: [:], deleted: [:], tables: names)
    var copy: PostgresCopyWriter?
    var current: (source: String, types: [PostgresColumnType], columns: [ResourceScheme.Column])?
    var row = 0
    var replaced: Set<String> = []

    func finishCopy() throws {
      guard let writer = copy, let table = current else { return }
      let count = try writer.finish()
      result.inserted[table.source, default: 0] += count
      copy = nil
    }

    do {
      try AnswerReader(path: file, growing: growing).read(
        table: { source in
          try finishCopy()
          current = nil
          guard let table = tables[source], let name = names[source] else {
            if !result.skippedTables.contains(source) { result.skippedTables.append(source) }
            return
          }
          if replaced.insert(source).inserted { try replace(name: name, table: table, cached: scheme.isCached) }
          var columns = table.columns
          if scheme.isCached { columns.insert(.init(name: Store.rowIDColumn, type: "BIGINT"), at: 0) }
          current = (source, columns.map { PostgresColumnType(schemeType: $0.type) }, columns)
          row = 0
          let list = columns.map { PostgresIdentifier.sql($0.name) }.joined(separator: ", ")
          copy = try connection.copyIn("COPY \(store.qualified(name)) (\(list)) FROM STDIN")
        },
        row: { values in
          guard let writer = copy, let table = current else { return }
          row += 1
          if row % 4096 == 0, cancellation?.isCancelled == true {
            throw LoadError(resource: scheme.name, message: "the load was interrupted; nothing of it was kept")
          }
          guard values.count == table.types.count else {
            throw LoadError(
              resource: scheme.name, table: table.source, row: row,
              message:
                "the row has \(values.count) value\(values.count == 1 ? "" : "s"); the table has \(table.types.count) column\(table.types.count == 1 ? "" : "s")\(scheme.isCached ? " (a row id, then the scheme's columns)" : ""); the row is refused"
            )
          }
          for (index, value) in values.enumerated() {
            do throws(PostgresValueRefusal) {
              if scheme.isCached && index == 0 && value.intValue == nil {
                throw PostgresValueRefusal(found: "not an integer of at most 64 bits", value: value.json, column: .bigint)
              }
              try PostgresTransaction.append(value, as: table.types[index], to: writer)
            } catch {
              let column = table.columns[index]
              let refused = PostgresValueError(
                resource: scheme.name, table: table.source, row: row, column: index + 1, columnName: column.name,
                declaredType: column.type, refusal: error)
              let place = "resource \(scheme.name), table \(table.source), row \(row), column \(index + 1) "
              throw LoadError(
                resource: scheme.name, table: table.source, row: row, column: index + 1,
                message: String(refused.description.dropFirst(place.count)))
            }
          }
          try writer.endRow()
        })
      try finishCopy()
    } catch let error as AnswerReadError {
      copy?.cancel("the answer could not be read")
      throw LoadError(resource: scheme.name, table: current?.source, message: error.message)
    } catch {
      copy?.cancel("the load failed")
      throw error
    }
    try record(scheme: scheme, params: params, names: names, replaced: replaced, info: info(), result: &result)
    return result
  }

  /// Empties table `name` for a full answer, or recreates it when its columns are no
  /// longer the scheme's.
  private func replace(name: String, table: ResourceScheme.Table, cached: Bool) throws {
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

  /// Appends one JSON value of a row under the value rule.
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
