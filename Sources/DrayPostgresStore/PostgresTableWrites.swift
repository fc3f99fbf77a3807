public import DrayModel
public import DrayPostgres
internal import DrayTarget

/// An `http` step's writes into existing tables on PostgreSQL (`load.write`, docs/http.md
/// "Write modes"): the counterpart of SQLite's `TableWrites`, inside the caller's
/// transaction. The step stages its records page by page in a local SQLite file; when the
/// last page is in, `stage` copies them (`COPY ... FROM STDIN`) into a temporary table
/// numbered in staging order (`_dray_order`), and `append` or `merge` write them with one
/// statement each.
extension PostgresTransaction {
  /// The column type of a staged column (docs/postgres.md, "http loads").
  static func columnType(_ type: ColumnType?) -> PostgresColumnType {
    switch type {
    case .integer: .bigint
    case .real: .doublePrecision
    case .numeric: .numeric
    case .text, nil: .text
    }
  }

  private func definitions(_ columns: [(name: String, type: ColumnType?)]) -> String {
    columns.map { "\(PostgresIdentifier.sql($0.name)) \(PostgresTransaction.columnType($0.type).sqlName)" }.joined(separator: ", ")
  }

  /// The staged table `name`, in this session's temporary schema.
  private func staged(_ name: String) -> String { "pg_temp." + PostgresIdentifier.sql(name) }

  private func list(_ columns: [String]) -> String { columns.map(PostgresIdentifier.sql).joined(separator: ", ") }

  /// Names match exactly, as PostgreSQL matches quoted identifiers (after fitting to 63
  /// bytes).
  func addMissingColumns(_ columns: [(name: String, type: ColumnType?)], toTable name: String) throws -> [String] {
    try store.lockDefinitions()
    let existing = Set(try store.columnNames(ofTable: PostgresIdentifier.fitted(name)))
    guard !existing.isEmpty else {
      try connection.execute("CREATE TABLE \(store.qualified(name)) (\(definitions(columns)))")
      return []
    }
    var added: [String] = []
    for column in columns where !existing.contains(PostgresIdentifier.fitted(column.name)) {
      try connection.execute("ALTER TABLE \(store.qualified(name)) ADD COLUMN \(definitions([column]))")
      added.append(column.name)
    }
    return added
  }

  /// From `pg_attribute` (`format_type`): bigint is INTEGER, double precision REAL,
  /// numeric NUMERIC, text TEXT; any other type nil.
  func columnTypes(ofTable name: String) throws -> [(name: String, type: ColumnType?)] {
    try connection.execute(
      """
      SELECT a.attname::text, format_type(a.atttypid, NULL) FROM pg_catalog.pg_attribute a
      JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
      """, [.text(store.schema), .text(PostgresIdentifier.fitted(name))]
    ).rows.compactMap { row -> (name: String, type: ColumnType?)? in
      guard row.count == 2, let name = row[0].text, let type = row[1].text else { return nil }
      let columnType: ColumnType? =
        switch type {
        case "bigint", "integer", "smallint": .integer
        case "double precision", "real": .real
        case "numeric": .numeric
        case "text", "character varying": .text
        default: nil
        }
      return (name, columnType)
    }
  }

  /// The columns `_dray_tables` records for table `name` (`StoreTransaction.recordedColumns`).
  func recordedColumns(ofTable name: String) throws -> [ResourceScheme.Column]? {
    let rows = try connection.execute("SELECT column_types FROM \(store.own("_dray_tables")) WHERE name = $1", [.text(name)]).rows
    return rows.first?.first?.text.flatMap(Bookkeeping.decodeColumns)
  }

  /// `ALTER TABLE ... ALTER COLUMN ... TYPE ... USING column::type`, in this transaction:
  /// bigint → double precision → text, numeric → text (docs/http.md, "Contract").
  func widenColumns(_ columns: [(name: String, type: ColumnType)], ofTable name: String) throws {
    guard !columns.isEmpty else { return }
    let changes = columns.map { column in
      let type = PostgresTransaction.columnType(column.type).sqlName
      let quoted = PostgresIdentifier.sql(column.name)
      return "ALTER COLUMN \(quoted) TYPE \(type) USING \(quoted)::\(type)"
    }
    try connection.execute("ALTER TABLE \(store.qualified(name)) \(changes.joined(separator: ", "))")
  }

  /// Values go in under `PostgresValueRule`, a staged column typed as `columnType` says; a
  /// refusal names the step's table, the record (in staging order) and the column.
  func stage(
    _ name: String, columns: [(name: String, type: ColumnType?)], for target: String,
    rows: ((_ add: ([SQLValue]) throws -> Void) throws -> Void)
  ) throws {
    try connection.execute("DROP TABLE IF EXISTS \(staged(name))")
    try connection.execute(
      """
      CREATE TEMPORARY TABLE \(staged(name)) (\(definitions(columns)), \(PostgresDelta.orderColumn) bigint GENERATED ALWAYS AS IDENTITY)
      ON COMMIT DROP
      """)
    let types = columns.map { PostgresTransaction.columnType($0.type) }
    let writer = try connection.copyIn("COPY \(staged(name)) (\(list(columns.map(\.name)))) FROM STDIN")
    var row = 0
    do {
      try rows { values in
        row += 1
        for (index, value) in values.enumerated() {
          do throws(PostgresValueRefusal) {
            try PostgresTransaction.append(value.json, as: types[index], to: writer)
          } catch {
            throw StagedValueError(
              table: target, record: row, column: index + 1, columnName: columns[index].name, declaredType: columns[index].type,
              refusal: error)
          }
        }
        try writer.endRow()
      }
      _ = try writer.finish()
    } catch {
      writer.cancel("the staged records were refused")
      throw error
    }
  }

  func deleteRows(ofTable name: String) throws -> Int {
    try connection.execute("DELETE FROM \(store.qualified(name))").affectedRows
  }

  /// One `INSERT ... SELECT` from `source`, a table of the schema; a new `target` is
  /// `CREATE TABLE ... (LIKE source)`, a column `target` lacks is added with `source`'s type
  /// (`format_type`, from `pg_attribute`).
  func replaceRows(ofTable target: String, withTable source: String) throws -> [String] {
    try store.lockDefinitions()
    let columns = try connection.execute(
      """
      SELECT a.attname::text, format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a
      JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
      """, [.text(store.schema), .text(PostgresIdentifier.fitted(source))]
    ).rows.compactMap { row -> (name: String, type: String)? in
      guard row.count == 2, let name = row[0].text, let type = row[1].text else { return nil }
      return (name, type)
    }
    let existing = try store.columnNames(ofTable: PostgresIdentifier.fitted(target))
    guard !columns.isEmpty else {
      if !existing.isEmpty { _ = try deleteRows(ofTable: target) }
      return []
    }
    var added: [String] = []
    if existing.isEmpty {
      try connection.execute("CREATE TABLE \(store.qualified(target)) (LIKE \(store.qualified(source)))")
    } else {
      for column in columns where !existing.contains(column.name) {
        try connection.execute("ALTER TABLE \(store.qualified(target)) ADD COLUMN \(PostgresIdentifier.sql(column.name)) \(column.type)")
        added.append(column.name)
      }
      try refuseRounding(from: store.qualified(source), order: nil, into: target, columns: columns.map(\.name))
      _ = try deleteRows(ofTable: target)
    }
    let names = list(columns.map(\.name))
    try connection.execute("INSERT INTO \(store.qualified(target)) (\(names)) SELECT \(names) FROM \(store.qualified(source))")
    try dropTable(source)
    return added
  }

  func dropTable(_ name: String) throws {
    try connection.execute("DROP TABLE IF EXISTS \(store.qualified(name))")
  }

  func append(from staging: String, into target: String, columns: [String]) throws -> Int {
    try refuseRounding(from: staged(staging), order: PostgresDelta.orderColumn, into: target, columns: columns)
    return try connection.execute(
      "INSERT INTO \(store.qualified(target)) (\(list(columns))) SELECT \(list(columns)) FROM \(staged(staging)) ORDER BY \(PostgresDelta.orderColumn)"
    ).affectedRows
  }

  /// The last staged version of each key (`DISTINCT ON (key) ... ORDER BY _dray_order
  /// DESC`) inserts or updates (`INSERT ... ON CONFLICT (key) DO UPDATE`, PostgreSQL 15
  /// documentation §INSERT), or deletes the row with its key when `deletedColumn` holds 1.
  /// An updated row takes the record whole: a column of `target` that `columns` lacks is set
  /// NULL (docs/http.md, "A field a record omits").
  func merge(from staging: String, into target: String, columns: [String], key: [String], deletedColumn: String?) throws
    -> (written: Int, deleted: Int)
  {
    try refuseRounding(from: staged(staging), order: PostgresDelta.orderColumn, into: target, columns: columns)
    let keys = list(key)
    if let row = try connection.execute(
      "SELECT \(keys) FROM \(store.qualified(target)) GROUP BY \(keys) HAVING count(*) > 1 LIMIT 1"
    ).rows.first {
      throw MergeError.duplicateKeys(
        table: target, key: key,
        values: row.map { value in
          switch value {
          case .null: "null"
          case .integer(let i): String(i)
          case .real(let d): String(d)
          case .bool(let b): b ? "true" : "false"
          case .text(let t): t
          }
        })
    }
    try connection.execute(
      "CREATE UNIQUE INDEX IF NOT EXISTS \(PostgresIdentifier.sql("_dray_key__" + target)) ON \(store.qualified(target)) (\(keys))")
    let last = """
      WITH last AS (
        SELECT DISTINCT ON (\(keys)) * FROM \(staged(staging)) ORDER BY \(keys), \(PostgresDelta.orderColumn) DESC)
      """
    let fitted = Set(key.map(PostgresIdentifier.fitted))
    // A merged row is the record whole (docs/http.md, "A field a record omits"): the table's
    // columns no staged record fills are NULL in it, as the staged NULL of a field one record
    // omits is.
    let staged = Set(columns.map(PostgresIdentifier.fitted))
    let unfilled = try store.columnNames(ofTable: PostgresIdentifier.fitted(target)).filter {
      !staged.contains($0) && !fitted.contains($0)
    }
    let updates =
      columns.filter { !fitted.contains(PostgresIdentifier.fitted($0)) }.map {
        "\(PostgresIdentifier.sql($0)) = excluded.\(PostgresIdentifier.sql($0))"
      } + unfilled.map { "\(PostgresIdentifier.sql($0)) = NULL" }
    let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET " + updates.joined(separator: ", ")
    let live = deletedColumn.map { "WHERE \(PostgresIdentifier.sql($0)) IS DISTINCT FROM 1" } ?? ""
    let written = try connection.execute(
      """
      \(last)
      INSERT INTO \(store.qualified(target)) (\(list(columns)))
      SELECT \(list(columns)) FROM last \(live) ORDER BY \(PostgresDelta.orderColumn)
      ON CONFLICT (\(keys)) \(conflict)
      """
    ).affectedRows
    guard let deletedColumn else { return (written, 0) }
    let match = key.map { "t.\(PostgresIdentifier.sql($0)) = l.\(PostgresIdentifier.sql($0))" }.joined(separator: " AND ")
    let deleted = try connection.execute(
      """
      \(last)
      DELETE FROM \(store.qualified(target)) AS t USING last AS l WHERE \(match) AND l.\(PostgresIdentifier.sql(deletedColumn)) = 1
      """
    ).affectedRows
    return (written, deleted)
  }

  /// Refuses the write when a number with a fraction would go into an integer column of
  /// `target`: PostgreSQL's assignment cast from double precision or numeric to bigint
  /// rounds (2.5 → 2; PostgreSQL 15 documentation §10.4, "Value Storage"), where the value
  /// rule refuses what a column cannot hold exactly (docs/postgres.md). A number without a
  /// fraction (5.0, 1e2) is stored as its integer, as SQLite's INTEGER affinity stores it.
  /// - Parameters:
  ///   - source: the qualified table the rows come from; `order`, its column numbering
  ///     the records in staging order (nil: the table's own order).
  /// - Throws: `StagedValueError` naming the table, the first such record and its column.
  func refuseRounding(from source: String, order: String?, into target: String, columns: [String]) throws {
    let types = """
      SELECT a.attname::text, format_type(a.atttypid, NULL) FROM pg_catalog.pg_attribute a
      WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
      """
    func typesOf(_ table: String) throws -> [String: String] {
      Dictionary(
        try connection.execute(types, [.text(table)]).rows.compactMap { row in
          guard row.count == 2, let name = row[0].text, let type = row[1].text else { return nil }
          return (name, type)
        }, uniquingKeysWith: { a, _ in a })
    }
    let into = try typesOf(store.qualified(target))
    let from = try typesOf(source)
    for (index, column) in columns.enumerated() {
      let name = PostgresIdentifier.fitted(column)
      guard let type = into[name], ["bigint", "integer", "smallint"].contains(type),
        let staged = from[name], ["double precision", "numeric", "real"].contains(staged)
      else { continue }
      let quoted = PostgresIdentifier.sql(column)
      let numbered = "row_number() OVER (\(order.map { "ORDER BY \(PostgresIdentifier.sql($0))" } ?? ""))"
      guard
        let row = try connection.execute(
          """
          SELECT n, v::text FROM (SELECT \(numbered) AS n, \(quoted) AS v FROM \(source)) s
          WHERE v IS NOT NULL AND v::numeric <> trunc(v::numeric) ORDER BY n LIMIT 1
          """
        ).rows.first, let record = row[0].integer
      else { continue }
      throw StagedValueError(
        table: target, record: Int(record), column: index + 1, columnName: column, declaredType: staged == "numeric" ? .numeric : .real,
        refusal: PostgresValueRefusal(found: "a number with a fraction", value: row[1].text, column: .bigint), tableColumn: type)
    }
  }

  /// One `DELETE ... WHERE NOT EXISTS` against the staged records.
  func deleteMissing(from staging: String, in target: String, key: [String]) throws -> Int {
    let match = key.map { "s.\(PostgresIdentifier.sql($0)) = t.\(PostgresIdentifier.sql($0))" }.joined(separator: " AND ")
    return try connection.execute(
      "DELETE FROM \(store.qualified(target)) AS t WHERE NOT EXISTS (SELECT 1 FROM \(staged(staging)) AS s WHERE \(match))"
    ).affectedRows
  }

  func saveCursor(_ entry: CursorEntry, job: String, stepID: String) throws {
    try connection.execute(
      """
      INSERT INTO \(store.own("_dray_http_cursors"))(job, step_id, value, staged, fresh, updated_at, boundary, staged_boundary)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (job, step_id) DO UPDATE SET value = excluded.value, staged = excluded.staged, fresh = excluded.fresh,
        updated_at = excluded.updated_at, boundary = excluded.boundary, staged_boundary = excluded.staged_boundary
      """,
      [
        .text(job), .text(stepID), entry.value.map { .text($0.json) } ?? .null, entry.staged.map { .text($0.json) } ?? .null,
        .bool(entry.fresh), .text(PostgresTransaction.timestamp()), CursorEntry.storedDigests(entry.boundary).map { .text($0) } ?? .null,
        CursorEntry.storedDigests(entry.stagedBoundary).map { .text($0) } ?? .null,
      ])
  }

  func saveValidators(_ validators: KeptValidators?, job: String, stepID: String) throws {
    guard let validators else {
      try connection.execute(
        "DELETE FROM \(store.own("_dray_http_validators")) WHERE job = $1 AND step_id = $2", [.text(job), .text(stepID)])
      return
    }
    try connection.execute(
      """
      INSERT INTO \(store.own("_dray_http_validators"))(job, step_id, fingerprint, request, etag, last_modified, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7)
      ON CONFLICT (job, step_id) DO UPDATE SET fingerprint = excluded.fingerprint, request = excluded.request,
        etag = excluded.etag, last_modified = excluded.last_modified, updated_at = excluded.updated_at
      """,
      [
        .text(job), .text(stepID), .text(validators.fingerprint), .text(validators.request), validators.etag.map { .text($0) } ?? .null,
        validators.lastModified.map { .text($0) } ?? .null, .text(PostgresTransaction.timestamp()),
      ])
  }

  /// The name as PostgreSQL keeps it (fitted to 63 bytes), as the guard's trigger names it.
  func armGuard(ofTable name: String) throws {
    let fitted = PostgresIdentifier.fitted(name)
    guard try store.tableExists(fitted) else { return }
    try PostgresTableGuard.arm(fitted, in: store)
  }
}

/// A staged record's value that its PostgreSQL column cannot hold
/// (`StoreTransaction.stage`): the value rule of docs/postgres.md refuses it rather than
/// convert it.
public struct StagedValueError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The table the records are for (`load.table`).
  public var table: String
  /// 1-based, in staging order (pages, then records within a page).
  public var record: Int
  /// 1-based position of the column in the staged records.
  public var column: Int
  public var columnName: String
  /// The type the staged column has; nil for a column that has held only nulls.
  public var declaredType: ColumnType?
  public var refusal: PostgresValueRefusal
  /// The type of the table's column when it is the table's, not the staged column's, that
  /// cannot hold the value (a fraction for an integer column).
  public var tableColumn: String?

  public init(
    table: String, record: Int, column: Int, columnName: String, declaredType: ColumnType?, refusal: PostgresValueRefusal,
    tableColumn: String? = nil
  ) {
    self.table = table
    self.record = record
    self.column = column
    self.columnName = columnName
    self.declaredType = declaredType
    self.refusal = refusal
    self.tableColumn = tableColumn
  }

  /// `table orders, record 3, column 2 'amount' (INTEGER, a bigint column): "ten" is a string; a bigint column takes ...`
  public var description: String {
    if let tableColumn {
      return "table \(table), record \(record), column '\(columnName)': \(refusal.value ?? "the value") is \(refusal.found), and the "
        + "table's column is \(tableColumn), which would round it; nothing of the step's records was written"
    }
    let type = PostgresTransaction.columnType(declaredType)
    var text =
      "table \(table), record \(record), column \(column) '\(columnName)' (\(declaredType?.rawValue ?? "no type"), a \(type.sqlName) column): "
    if let value = refusal.value { text += "\(value) is \(refusal.found)" } else { text += "the value is \(refusal.found)" }
    text += refusal.found.contains("NUL") ? "; PostgreSQL cannot store NUL in text" : "; a \(type.sqlName) column takes \(type.accepts)"
    return text + "; nothing of the step's records was written"
  }
}

extension SQLValue {
  /// The value as the JSON the value rule reads: a staged record's integer, real or text.
  var json: JSONValue {
    switch self {
    case .null: .null
    case .integer(let i): .integer(i)
    case .real(let d): .number("\(d)")
    case .text(let t): .string(t)
    // Records hold no blobs (`Record`); one put in the staging file by hand goes as its bytes.
    case .blob(let b): .string(String(decoding: b, as: UTF8.self))
    }
  }
}
