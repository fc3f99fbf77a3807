internal import DrayModel
internal import DrayTarget

/// SQLite's SQL of `http` loads that write into an existing table (`load.write: append` and
/// `merge`), behind `StoreTransaction`. Every function works inside the caller's
/// transaction; identifiers are quoted, values bound. docs/http.md, "Write modes".
enum TableWrites {
  /// Adds each of `columns` that `table` lacks (`ALTER TABLE ... ADD COLUMN`; names matched
  /// as SQLite matches them, `IdentifierKey`), or creates `table` with `columns` when it
  /// does not exist. A column without a type is added without one.
  /// - Returns: the names added to an existing table, in order.
  /// - Throws: `SQLiteError`.
  static func addMissingColumns(_ columns: [(name: String, type: ColumnType?)], to table: String, in database: Database)
    throws -> [String]
  {
    let existing = Set(try columnNames(of: table, in: database).map(IdentifierKey.init))
    guard !existing.isEmpty else {
      _ = try database.execute("CREATE TABLE \(Database.quote(table)) (\(columns.map(definition).joined(separator: ", ")))")
      return []
    }
    var added: [String] = []
    for column in columns where !existing.contains(IdentifierKey(column.name)) {
      _ = try database.execute("ALTER TABLE \(Database.quote(table)) ADD COLUMN \(definition(column))")
      added.append(column.name)
    }
    return added
  }

  /// `"name" TYPE`, or `"name"` for a column without a type.
  private static func definition(_ column: (name: String, type: ColumnType?)) -> String {
    Database.quote(column.name) + (column.type.map { " " + $0.rawValue } ?? "")
  }

  /// Creates the temporary table `name` with `columns` and inserts the rows `rows` gives
  /// (`StoreTransaction.stage`).
  /// - Throws: `SQLiteError`.
  static func stage(
    _ name: String, columns: [(name: String, type: ColumnType?)], rows: ((([SQLValue]) throws -> Void) throws -> Void),
    in database: Database
  ) throws {
    _ = try database.execute(
      "DROP TABLE IF EXISTS temp.\(Database.quote(name)); CREATE TEMP TABLE \(Database.quote(name)) (\(columns.map(definition).joined(separator: ", ")))"
    )
    let insert = try database.prepare(
      "INSERT INTO temp.\(Database.quote(name)) VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))")
    try rows { values in
      insert.reset()
      try insert.bind(values)
      _ = try insert.step()
    }
  }

  /// The columns of `table`, in order; empty when it does not exist.
  static func columnNames(of table: String, in database: Database) throws -> [String] {
    try database.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap { row throws(SQLiteError) in
      if case .text(let name) = try row["name"] { name } else { nil }
    }
  }

  /// The columns of `table` and their declared types (nil: none, or one that is not a
  /// `ColumnType`), in order; empty when it does not exist.
  static func columnTypes(of table: String, in database: Database) throws -> [(name: String, type: ColumnType?)] {
    try database.rows("SELECT name, type FROM pragma_table_info(?)", [.text(table)]).map { row throws(SQLiteError) in
      let name = if case .text(let text) = try row["name"] { text } else { "" }
      let declared = if case .text(let text) = try row["type"] { text.uppercased() } else { "" }
      return (name, ColumnType(rawValue: declared))
    }
  }

  /// Gives each of `columns` of `table` its new declared type (`load.contract.types:
  /// evolve`). SQLite cannot change a column's type in place, so the table is made again
  /// (https://sqlite.org/lang_altertable.html §7): a new table with the columns (their NOT
  /// NULL, DEFAULT and PRIMARY KEY kept), the rows copied, the old table dropped, the new one
  /// renamed, and the table's indexes and triggers created again from their SQL.
  /// - Throws: `SQLiteError`.
  static func widen(_ columns: [(name: String, type: ColumnType)], of table: String, in database: Database) throws {
    let wanted = Dictionary(columns.map { (IdentifierKey($0.name), $0.type) }, uniquingKeysWith: { $1 })
    let info = try database.rows("SELECT name, type, \"notnull\" AS nn, dflt_value, pk FROM pragma_table_info(?)", [.text(table)])
    var definitions: [String] = []
    var names: [String] = []
    var values: [String] = []
    var keys: [(Int64, String)] = []
    for row in info {
      guard case .text(let name) = try row["name"] else { continue }
      let declared = if case .text(let text) = try row["type"] { text } else { "" }
      let type = wanted[IdentifierKey(name)]?.rawValue ?? declared
      var definition = Database.quote(name) + (type.isEmpty ? "" : " " + type)
      if case .integer(1) = try row["nn"] { definition += " NOT NULL" }
      if case .text(let value) = try row["dflt_value"] { definition += " DEFAULT \(value)" }
      if case .integer(let position) = try row["pk"], position > 0 { keys.append((position, Database.quote(name))) }
      definitions.append(definition)
      names.append(Database.quote(name))
      values.append(wanted[IdentifierKey(name)] == .text ? TableWrites.textOfReal(Database.quote(name)) : Database.quote(name))
    }
    if !keys.isEmpty { definitions.append("PRIMARY KEY (\(keys.sorted { $0.0 < $1.0 }.map(\.1).joined(separator: ", ")))") }
    let others = try database.rows(
      // The table guard's triggers stay dropped: the table changed (`TableGuard`).
      "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL AND substr(name, 1, ?) <> ?",
      [.text(table), .integer(Int64(TableGuard.triggerPrefix.count)), .text(TableGuard.triggerPrefix)]
    ).compactMap { row throws(SQLiteError) in if case .text(let sql) = try row["sql"] { sql } else { nil } }
    let copy = Database.quote("_dray_widen__" + table)
    let list = names.joined(separator: ", ")
    _ = try database.execute(
      """
      CREATE TABLE main.\(copy) (\(definitions.joined(separator: ", ")));
      INSERT INTO main.\(copy) (\(list)) SELECT \(values.joined(separator: ", ")) FROM main.\(Database.quote(table));
      DROP TABLE main.\(Database.quote(table));
      PRAGMA legacy_alter_table = ON;
      ALTER TABLE main.\(copy) RENAME TO \(Database.quote(table));
      PRAGMA legacy_alter_table = OFF;
      """)
    for sql in others { _ = try database.execute(sql) }
  }

  /// SQL giving the value of `column` (quoted) as a TEXT column keeps it: a real as its
  /// shortest digits that read back as the same double (15, 16 or 17 significant digits,
  /// as PostgreSQL writes a double), not SQLite's 15-digit conversion (which turns
  /// 0.30000000000000004 into 0.3); any other value as it is.
  static func textOfReal(_ column: String) -> String {
    let digits = [15, 16].map { "printf('%!.\($0)g', \(column))" }
    return "CASE WHEN typeof(\(column)) <> 'real' THEN \(column) "
      + digits.map { "WHEN CAST(\($0) AS REAL) = \(column) THEN \($0) " }.joined()
      + "ELSE printf('%!.17g', \(column)) END"
  }

  /// Adds every row of `staging` to `target`, in the order they were staged.
  /// - Parameter columns: the columns copied (they exist in both tables).
  /// - Returns: the rows added.
  static func append(from staging: String, into target: String, columns: [String], in database: Database) throws -> Int {
    let names = columns.map(Database.quote).joined(separator: ", ")
    return try database.execute(
      "INSERT INTO \(Database.quote(target)) (\(names)) SELECT \(names) FROM \(Database.quote(staging)) ORDER BY rowid")
  }

  /// Merges `staging` into `target` by `key`: for each key, the last staged version of the
  /// record inserts a row or updates the row with that key
  /// (`INSERT ... ON CONFLICT(key) DO UPDATE`, https://sqlite.org/lang_upsert.html); when
  /// `deletedColumn` is given and that version holds 1 there, the row with that key is
  /// deleted instead. An updated row takes the record whole: a column of `target` that
  /// `columns` lacks is set NULL (docs/http.md, "A field a record omits").
  ///
  /// `target` gets a unique index on `key` (`_dray_key__<table>`) when it has none, which
  /// the upsert needs.
  /// - Returns: rows written (inserted or updated) and rows deleted.
  /// - Throws: `MergeError.duplicateKeys` when `target` already holds two rows with one
  ///   key; `SQLiteError`.
  static func merge(
    from staging: String, into target: String, columns: [String], key: [String], deletedColumn: String?, in database: Database
  ) throws -> (written: Int, deleted: Int) {
    let keyList = key.map(Database.quote).joined(separator: ", ")
    let duplicates = try database.rows(
      "SELECT \(keyList) FROM \(Database.quote(target)) GROUP BY \(keyList) HAVING count(*) > 1 LIMIT 1")
    if let row = duplicates.first {
      throw MergeError.duplicateKeys(
        table: target, key: key,
        values: try key.map { column throws(SQLiteError) in
          switch try row[column] {
          case .text(let s): s
          case .integer(let i): String(i)
          case .real(let d): String(d)
          case .null: "null"
          case .blob: "a blob"
          }
        })
    }
    _ = try database.execute(
      "CREATE UNIQUE INDEX IF NOT EXISTS \(Database.quote("_dray_key__" + target)) ON \(Database.quote(target)) (\(keyList))")
    let names = columns.map(Database.quote).joined(separator: ", ")
    let last = "rowid IN (SELECT max(rowid) FROM \(Database.quote(staging)) GROUP BY \(keyList))"
    let keys = Set(key.map(IdentifierKey.init))
    // A merged row is the record whole (docs/http.md, "A field a record omits"): the table's
    // columns no staged record fills are NULL in it, as the staged NULL of a field one record
    // omits is.
    let staged = Set(columns.map(IdentifierKey.init))
    let unfilled = try columnNames(of: target, in: database).filter {
      !staged.contains(IdentifierKey($0)) && !keys.contains(IdentifierKey($0))
    }
    let updates =
      columns.filter { !keys.contains(IdentifierKey($0)) }.map { "\(Database.quote($0)) = excluded.\(Database.quote($0))" }
      + unfilled.map { "\(Database.quote($0)) = NULL" }
    let conflict = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET " + updates.joined(separator: ", ")
    let live = deletedColumn.map { "AND \(Database.quote($0)) IS NOT 1" } ?? ""
    // `WHERE` before `ON CONFLICT` keeps SQLite from reading ON as a join's (lang_upsert.html §2.2).
    let written = try database.execute(
      """
      INSERT INTO \(Database.quote(target)) (\(names))
      SELECT \(names) FROM \(Database.quote(staging)) WHERE \(last) \(live) ORDER BY rowid
      ON CONFLICT(\(keyList)) \(conflict)
      """)
    guard let deletedColumn else { return (written, 0) }
    let deleted = try database.execute(
      """
      DELETE FROM \(Database.quote(target)) WHERE (\(keyList)) IN
        (SELECT \(keyList) FROM \(Database.quote(staging)) WHERE \(last) AND \(Database.quote(deletedColumn)) IS 1)
      """)
    return (written, deleted)
  }

  /// Deletes the rows of `target` whose `key` no row of `staging` holds (`NOT EXISTS`, one
  /// statement), for `load.delete_missing` after `merge`.
  /// - Returns: the rows deleted.
  static func deleteMissing(from staging: String, in target: String, key: [String], in database: Database) throws -> Int {
    let match = key.map { "s.\(Database.quote($0)) = t.\(Database.quote($0))" }.joined(separator: " AND ")
    return try database.execute(
      "DELETE FROM \(Database.quote(target)) AS t WHERE NOT EXISTS (SELECT 1 FROM \(Database.quote(staging)) AS s WHERE \(match))")
  }

}

/// The kept cursor of each `incremental` step, in the table `_dray_http_cursors` of the
/// job's database:
///
///     _dray_http_cursors(job, step_id, value, staged, fresh, updated_at, boundary, staged_boundary)
///
/// `value` is the cursor the next run sends: the highest cursor among the records published
/// (JSON text, as the API gave it). `staged` is the highest among the records of the pages
/// staged so far, written in the transaction of each page; the transaction that publishes
/// the pages moves it to `value`. `fresh` is 1 while the staged pages started again from
/// `initial` (`--fresh`), so that they replace the table when published. `boundary` and
/// `staged_boundary` hold the digests of the records at `value` and `staged`
/// (`CursorEntry.storedDigests`), NULL when unknown; a table an older dray made gets them
/// (`ALTER TABLE ... ADD COLUMN`) when the ledger first writes to it.
struct CursorLedger {
  public let database: Database
  public let job: String
  public let stepID: String

  public init(database: Database, job: String, stepID: String) {
    self.database = database
    self.job = job
    self.stepID = stepID
  }

  public func createTable() throws {
    _ = try database.execute(Store.createStatement(Bookkeeping.cursors))
    let columns = try database.rows("SELECT name FROM pragma_table_info('_dray_http_cursors')").compactMap { row in
      if case .text(let name) = try row["name"] { name } else { nil }
    }
    for name in Bookkeeping.cursorsAddedColumns where !columns.contains(name) {
      _ = try database.execute("ALTER TABLE _dray_http_cursors ADD COLUMN \(name) TEXT")
    }
  }

  /// The step's entry; an empty one when none is kept (or the table does not exist). A
  /// table an older dray made has no digests: they read as unknown.
  /// - Throws: `SQLiteError`; `CursorLedgerError` for a value that is not JSON.
  public func read() throws -> CursorEntry {
    let exists = try database.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_dray_http_cursors'")
    guard !exists.isEmpty else { return CursorEntry() }
    let rows = try database.rows("SELECT * FROM _dray_http_cursors WHERE job = ? AND step_id = ?", [.text(job), .text(stepID)])
    guard let row = rows.first else { return CursorEntry() }
    func text(_ value: SQLValue?) -> String? {
      guard case .text(let text)? = value else { return nil }
      return text
    }
    return try CursorEntry(
      storedValue: text(try row["value"]), staged: text(try row["staged"]), fresh: try row["fresh"] == .integer(1), stepID: stepID,
      boundary: text(try? row["boundary"]), stagedBoundary: text(try? row["staged_boundary"]))
  }

  /// Records `entry`, inside the caller's transaction when there is one.
  public func save(_ entry: CursorEntry, at time: String) throws {
    let statement = try database.cached(
      """
      INSERT INTO _dray_http_cursors(job, step_id, value, staged, fresh, updated_at, boundary, staged_boundary)
      VALUES (?,?,?,?,?,?,?,?)
      ON CONFLICT(job, step_id) DO UPDATE SET value = excluded.value, staged = excluded.staged, fresh = excluded.fresh,
        updated_at = excluded.updated_at, boundary = excluded.boundary, staged_boundary = excluded.staged_boundary
      """)
    try statement.bind([
      .text(job), .text(stepID), entry.value.map { .text($0.json) } ?? .null, entry.staged.map { .text($0.json) } ?? .null,
      .integer(entry.fresh ? 1 : 0), .text(time), CursorEntry.storedDigests(entry.boundary).map { .text($0) } ?? .null,
      CursorEntry.storedDigests(entry.stagedBoundary).map { .text($0) } ?? .null,
    ])
    _ = try statement.step()
  }
}
