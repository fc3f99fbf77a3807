internal import DrayPostgres

/// Notices any change to a table dray loaded on PostgreSQL, as `TableGuard` does on SQLite,
/// so that a delta applies, and an unchanged answer or an `http` step's `304` keeps the
/// table, only when it still holds exactly what dray put there (docs/postgres.md, "The
/// table guard").
///
/// Each loaded table has one statement-level trigger, `_dray_guard`, `AFTER INSERT OR UPDATE
/// OR DELETE OR TRUNCATE ... FOR EACH STATEMENT`, calling `"schema"._dray_guard_mark()`,
/// which sets `changed` in
///
///     _dray_table_guard(name, definition, changed)
///
/// dray's own writes fire it too; `arm` then, in the same transaction, records the table's
/// columns and types (`definition`, from `pg_attribute`) with `changed = false`. A write
/// rolled back takes its mark with it. `ALTER TABLE` changes the definition; a table dropped
/// and made again, `DROP TRIGGER` or `ALTER TABLE ... DISABLE TRIGGER` leave it without an
/// enabled trigger: each makes the table not intact. A table loaded before the guard has no
/// row, so it is not intact, and is loaded in full once.
enum PostgresTableGuard {
  /// The trigger's name on every guarded table (trigger names are per table on PostgreSQL).
  static let trigger = "_dray_guard"
  /// The trigger function, in the store's schema.
  static let function = "_dray_guard_mark"

  /// The guard's table and function, created with the other bookkeeping
  /// (`PostgresStore.prepare`, under the schema's setup lock); the function writes the
  /// schema's `_dray_table_guard`, named with its schema.
  static func create(schema: String, on connection: PostgresConnection) throws {
    let guardTable = PostgresIdentifier.quoted(schema) + "._dray_table_guard"
    try connection.execute(
      "CREATE TABLE IF NOT EXISTS \(guardTable)(name text PRIMARY KEY, definition text NOT NULL, changed boolean NOT NULL)")
    try connection.execute(
      """
      CREATE OR REPLACE FUNCTION \(PostgresIdentifier.quoted(schema)).\(function)() RETURNS trigger LANGUAGE plpgsql AS $dray$
      BEGIN
        UPDATE \(guardTable) SET changed = true WHERE name = TG_TABLE_NAME AND NOT changed;
        RETURN NULL;
      END
      $dray$
      """)
  }

  /// Records table `name` as holding what dray wrote, and puts its trigger in place, inside
  /// the caller's transaction, after dray's writes.
  static func arm(_ name: String, in store: PostgresStore) throws {
    try store.connection.execute(
      """
      CREATE OR REPLACE TRIGGER \(trigger) AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON \(store.qualified(name))
      FOR EACH STATEMENT EXECUTE FUNCTION \(store.own(function))()
      """)
    try store.connection.execute(
      """
      INSERT INTO \(store.own("_dray_table_guard"))(name, definition, changed) VALUES ($1, $2, false)
      ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, changed = false
      """, [.text(name), .text(try definition(of: name, in: store))])
  }

  /// Whether table `name` holds exactly what dray last wrote: it is armed, no write marked
  /// it, its columns and types are the ones armed, and its trigger is in place and enabled,
  /// calling the schema's function.
  static func isIntact(_ name: String, in store: PostgresStore) throws -> Bool {
    guard try store.tableExists(name) else { return false }
    let row = try store.connection.execute(
      "SELECT definition, changed FROM \(store.own("_dray_table_guard")) WHERE name = $1", [.text(name)]
    ).named.first
    guard let row, try row["changed"].bool == false, try row["definition"].text == (try definition(of: name, in: store)) else {
      return false
    }
    let triggers = try store.connection.execute(
      """
      SELECT 1 FROM pg_catalog.pg_trigger
      WHERE tgrelid = $1::regclass AND tgname = $2 AND tgenabled = 'O' AND tgfoid = $3::regprocedure
      """, [.text(store.qualified(name)), .text(trigger), .text(store.own(function) + "()")]
    ).rows
    return !triggers.isEmpty
  }

  /// The table's columns with their types (`format_type`), in order, one text.
  static func definition(of name: String, in store: PostgresStore) throws -> String {
    try store.connection.execute(
      """
      SELECT string_agg(quote_ident(attname) || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
      FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
      """, [.text(store.qualified(name))]
    ).rows.first?.first?.text ?? ""
  }
}
