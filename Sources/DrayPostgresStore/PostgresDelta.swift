internal import DrayModel
internal import DrayPostgres

/// A delta answer (platform-api.md §3) staged and applied set-based, inside the load's
/// transaction.
///
/// The answer's `insert_rows` (and the `data` of a table it replaces) are copied into a
/// temporary table shaped like the target plus `_dray_order`, numbering rows as they
/// arrive; its `delete_ids` into a temporary table of row ids. Both are dropped at commit or
/// rollback (`ON COMMIT DROP`). When the whole answer is read, `apply` analyzes them and
/// changes each table with three statements, whatever the number of rows (memory stays
/// with the server):
///
/// 1. `DELETE ... USING` the ids: every `delete_ids` applies before any insert, else an
///    update (a delete plus an insert of one row id) would delete its own new row;
/// 2. `DELETE ... USING` the staged rows: an insert for a row id the table holds replaces
///    that row;
/// 3. `INSERT ... SELECT DISTINCT ON (hhive_id)`, the last staged row of each row id
///    (`ORDER BY _dray_order DESC`), as SQLite's `ON CONFLICT (hhive_id) DO UPDATE` keeps the last one.
///
/// The rules are docs/store.md's, "Deltas"; SQLite applies them row by row (`TableLoader`).
struct PostgresDelta {
  /// The temporary tables of one output table of the answer.
  private struct Staged {
    /// `"schema"."name"` of the output table.
    var target: String
    var cached: Bool
    var rows: String?
    var ids: String?
  }

  private let store: PostgresStore
  /// By source table name, in the order the answer named them.
  private var staged: [(source: String, tables: Staged)] = []

  /// The column numbering staged rows in the order the answer holds them.
  static let orderColumn = "_dray_order"

  init(store: PostgresStore) { self.store = store }

  /// The temporary table that stages the rows of `source` (created on first use, with the
  /// columns of `target`).
  /// - Returns: its qualified name, for `COPY`.
  mutating func rows(of source: String, target: String, cached: Bool) throws -> String {
    let index = entry(source, target: target, cached: cached)
    if let rows = staged[index].tables.rows { return rows }
    let name = "pg_temp.\(PostgresIdentifier.quoted("_dray_delta_rows_\(index)"))"
    try store.connection.execute("DROP TABLE IF EXISTS \(name)")
    try store.connection.execute(
      """
      CREATE TEMPORARY TABLE \(name) (LIKE \(target), \(PostgresDelta.orderColumn) bigint GENERATED ALWAYS AS IDENTITY)
      ON COMMIT DROP
      """)
    staged[index].tables.rows = name
    return name
  }

  /// The temporary table that stages the `delete_ids` of `source` (created on first use).
  /// - Returns: its qualified name, for `COPY`; its one column is the row id.
  mutating func ids(of source: String, target: String) throws -> String {
    let index = entry(source, target: target, cached: true)
    if let ids = staged[index].tables.ids { return ids }
    let name = "pg_temp.\(PostgresIdentifier.quoted("_dray_delta_ids_\(index)"))"
    try store.connection.execute("DROP TABLE IF EXISTS \(name)")
    try store.connection.execute(
      "CREATE TEMPORARY TABLE \(name) (\(PostgresIdentifier.sql(ResourceScheme.rowIDColumn)) bigint NOT NULL) ON COMMIT DROP")
    staged[index].tables.ids = name
    return name
  }

  private mutating func entry(_ source: String, target: String, cached: Bool) -> Int {
    if let index = staged.firstIndex(where: { $0.source == source }) { return index }
    staged.append((source, Staged(target: target, cached: cached)))
    return staged.count - 1
  }

  /// Deletes the staged ids, then inserts the staged rows, table by table (see above).
  /// - Returns: the rows inserted and deleted, by source table name.
  /// - Throws: `PostgresError`.
  func apply() throws -> [String: (inserted: Int, deleted: Int)] {
    let id = PostgresIdentifier.sql(ResourceScheme.rowIDColumn)
    var counts: [String: (inserted: Int, deleted: Int)] = [:]
    for (source, tables) in staged {
      // Temporary tables get no statistics from autovacuum; without them the planner
      // guesses their size, and the joins below ran about twice as long (20,000 ids and
      // rows against a 200,000-row table).
      for table in [tables.ids, tables.rows].compactMap({ $0 }) { try store.connection.execute("ANALYZE \(table)") }
      var deleted = 0
      var inserted = 0
      if let ids = tables.ids {
        deleted = try store.connection.execute(
          "DELETE FROM \(tables.target) AS t USING \(ids) AS d WHERE t.\(id) = d.\(id)"
        ).affectedRows
      }
      if let rows = tables.rows {
        let columns = try targetColumns(tables.target).map(PostgresIdentifier.sql).joined(separator: ", ")
        if tables.cached {
          try store.connection.execute("DELETE FROM \(tables.target) AS t USING \(rows) AS r WHERE t.\(id) = r.\(id)")
          inserted = try store.connection.execute(
            """
            INSERT INTO \(tables.target) (\(columns))
            SELECT DISTINCT ON (\(id)) \(columns) FROM \(rows) ORDER BY \(id), \(PostgresDelta.orderColumn) DESC
            """
          ).affectedRows
        } else {
          inserted = try store.connection.execute(
            "INSERT INTO \(tables.target) (\(columns)) SELECT \(columns) FROM \(rows) ORDER BY \(PostgresDelta.orderColumn)"
          ).affectedRows
        }
      }
      counts[source] = (inserted, deleted)
    }
    return counts
  }

  /// The columns of the table `"schema"."name"` names, read from the catalog.
  private func targetColumns(_ qualified: String) throws -> [String] {
    try store.connection.execute(
      "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
      [.text(qualified)]
    ).rows.compactMap { $0.first?.text }
  }
}
