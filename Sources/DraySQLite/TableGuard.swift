internal import DrayModel

/// Notices any change to a table dray loaded, so that a table is kept as it is (an
/// unchanged platform answer, `Store.holdsAnswer`; an `http` step's `304 Not Modified`)
/// only when it still holds exactly what dray put there (docs/store.md, "Unchanged answers").
///
/// When dray has written a table, in the same transaction, `arm` records it in
///
///     _dray_table_guard(name, definition, changed)
///
/// with its `CREATE TABLE` text (`sqlite_schema.sql`) and `changed = 0`, and creates three
/// triggers on it, `AFTER INSERT`, `AFTER UPDATE` and `AFTER DELETE` (named
/// `_dray_guard_<event>_<SHA-256 of the name>`), that set `changed = 1`. dray's own writes
/// happen after `disarm` dropped the triggers, before `arm`. A write rolled back takes its
/// mark with it. `ALTER TABLE` changes the definition; `DROP TABLE` (a table dropped and
/// made again) and `DROP TRIGGER` take the triggers away: each makes the table not intact.
/// A table dray loaded before this existed has no row, so it is not intact either, and is
/// loaded again once.
public enum TableGuard {
  /// The prefix of the guard's trigger names; a `sql` step may fire them and drop them
  /// (`Database.protectingOwnTables`).
  public static let triggerPrefix = "_dray_guard_"
  static let events = ["insert", "update", "delete"]

  static func createTable(in database: Database) throws {
    _ = try database.execute(
      "CREATE TABLE IF NOT EXISTS _dray_table_guard(name TEXT PRIMARY KEY, definition TEXT NOT NULL, changed INTEGER NOT NULL)")
  }

  /// The name of the guard's trigger on `table` for `event` (`insert`, `update`, `delete`).
  public static func trigger(_ event: String, of table: String) -> String {
    "\(triggerPrefix)\(event)_\(SHA256.hex(table))"
  }

  /// Drops the guard of `table` (its triggers and its row), before dray writes it.
  public static func disarm(_ table: String, in database: Database) throws {
    try createTable(in: database)
    for event in events { _ = try database.execute("DROP TRIGGER IF EXISTS \(Database.quote(trigger(event, of: table)))") }
    _ = try database.rows("DELETE FROM _dray_table_guard WHERE name = ?", [.text(table)])
  }

  /// Records `table` as holding what dray wrote and creates the triggers that mark any
  /// later write, inside the caller's transaction, after dray's writes. Does nothing when
  /// the table does not exist.
  public static func arm(_ table: String, in database: Database) throws {
    try disarm(table, in: database)
    guard let definition = try definition(of: table, in: database) else { return }
    let literal = "'" + table.replacing("'", with: "''") + "'"
    for event in events {
      _ = try database.execute(
        """
        CREATE TRIGGER \(Database.quote(trigger(event, of: table))) AFTER \(event.uppercased()) ON \(Database.quote(table))
        BEGIN UPDATE _dray_table_guard SET changed = 1 WHERE name = \(literal) AND changed = 0; END
        """)
    }
    _ = try database.rows(
      "INSERT INTO _dray_table_guard(name, definition, changed) VALUES (?, ?, 0)", [.text(table), .text(definition)])
  }

  /// Whether `table` holds exactly what dray last wrote: it is armed, no write marked it,
  /// its definition is the one armed, and its three triggers are in place.
  public static func isIntact(_ table: String, in database: Database) throws -> Bool {
    guard try database.tableExists("_dray_table_guard"), let definition = try definition(of: table, in: database) else { return false }
    let rows = try database.rows("SELECT definition, changed FROM _dray_table_guard WHERE name = ?", [.text(table)])
    guard let row = rows.first, try row["definition"] == .text(definition), try row["changed"] == .integer(0) else { return false }
    let names = events.map { trigger($0, of: table) }
    let triggers = try database.rows(
      "SELECT count(*) AS n FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? AND name IN (?, ?, ?)",
      [.text(table)] + names.map { .text($0) })
    return try triggers.first?["n"] == .integer(Int64(events.count))
  }

  /// The table's `CREATE TABLE` text, or nil when no table has that exact name.
  static func definition(of table: String, in database: Database) throws -> String? {
    let rows = try database.rows("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(table)])
    if case .text(let sql)? = try rows.first?["sql"] { return sql }
    return nil
  }
}
