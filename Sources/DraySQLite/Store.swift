internal import DrayJSON
public import DrayModel
public import DrayTarget
internal import Foundation

/// The target database of a job: physical tables per resource, parameters and output
/// table, and the bookkeeping that records what each holds (platform-api.md §7).
///
/// Bookkeeping tables, created on open:
/// - `_dray_resources(resource, scheme, fetched_at)`: each resource's scheme as last fetched;
/// - `_dray_tables(name, resource, params, source_table, content_version, etag, cache_hash,
///   row_count, loaded_at, column_types)`: one row per physical table.
public final class Store {
  public let database: Database

  /// What SQLite holds as a resource's tables (`SchemeLimits.check`): at most 2000 columns
  /// a table, its default SQLITE_MAX_COLUMN (https://sqlite.org/limits.html; Debian's
  /// library keeps the default); names starting `sqlite_` are its own; it compares names
  /// without regard to ASCII letter case and creates no table without columns.
  public static let schemeLimits = SchemeLimits(database: "SQLite", maxColumns: 2000, reservedPrefix: "sqlite_", isOwnRule: true)

  /// Opens or creates the database at `path`, creating its folder.
  /// - Throws: `SQLiteError`, or `StoreError.cannotCreateFolder`.
  public init(path: String) throws {
    do {
      try Folders.create(holding: path)
    } catch {
      throw StoreError.cannotCreateFolder(error)
    }
    database = try Database(path: path)
    for table in [Bookkeeping.resources, Bookkeeping.tables] { try database.execute(Store.createStatement(table)) }
    // A database an older dray made lacks `_dray_tables.column_types`.
    if try !TableWrites.columnNames(of: "_dray_tables", in: database).contains(Bookkeeping.addedTableColumn) {
      try database.execute("ALTER TABLE _dray_tables ADD COLUMN \(Bookkeeping.addedTableColumn) TEXT")
    }
  }

  /// `CREATE TABLE IF NOT EXISTS` for one of dray's own tables, in SQLite's types.
  static func createStatement(_ table: Bookkeeping.Table) -> String {
    table.createStatement { type in
      switch type {
      case .text: "TEXT"
      case .integer, .flag: "INTEGER"
      }
    }
  }

  // MARK: Names

  /// SQLite keeps identifiers of any length (https://sqlite.org/limits.html).
  public static let naming = TableNaming(maxIdentifierBytes: nil)

  /// The physical table name for a resource's output table and parameters on SQLite
  /// (`TableNaming.physicalName`).
  public static func tableName(resource: String, table: String, params: JSONValue) -> String {
    naming.physicalName(resource: resource, table: table, params: params)
  }

  // MARK: Schemes and tables

  /// Records `scheme` and creates the tables of its outputs for `params` (the SDK's
  /// `resources`) in a transaction of its own (`StoreTransaction.createTables`).
  /// - Returns: the physical table names, by output table name.
  /// - Throws: `StoreError` for names SQLite cannot hold; `SQLiteError`.
  @discardableResult
  public func createTables(for scheme: ResourceScheme, params: JSONValue = .object([])) throws -> [String: String] {
    try write { try $0.createTables(for: scheme, params: params) }
  }

  /// `StoreTransaction.createTables` on SQLite, inside the caller's open transaction.
  func createTablesInTransaction(for scheme: ResourceScheme, params: JSONValue) throws -> [String: String] {
    try Store.schemeLimits.check(scheme)
    try saveScheme(scheme)
    var names: [String: String] = [:]
    for table in scheme.outputs {
      let name = naming.physicalName(resource: scheme.name, table: table.name, params: params)
      try claim(name, resource: scheme.name, table: table.name, params: params)
      let made = try !database.tableExists(name)
      try database.execute(Store.createTableSQL(name: name, table: table, cached: scheme.isCached))
      // A table made now records the columns it was made with; an existing one keeps those
      // it was made or last loaded with (`recordedColumns`).
      let record = try database.cached(
        """
        INSERT INTO _dray_tables(name, resource, params, source_table, column_types) VALUES (?,?,?,?,?)
        ON CONFLICT(name) DO UPDATE SET column_types = excluded.column_types WHERE ?
        """)
      try record.bind([
        .text(name), .text(scheme.name), .text(params.canonicalJSON), .text(table.name),
        .text(Bookkeeping.encodeColumns(table.columns)), .integer(made ? 1 : 0),
      ])
      _ = try record.step()
      names[table.name] = name
    }
    return names
  }

  /// Refuses a physical name that another resource, table or parameter set already holds:
  /// `A__b` + `c` and `A` + `b__c` give the same name, and SQLite compares table names
  /// without regard to ASCII case, so `FRUITS` and `fruits` would share a table.
  func claim(_ name: String, resource: String, table: String, params: JSONValue) throws {
    let rows = try database.rows(
      "SELECT name, resource, source_table, params FROM _dray_tables WHERE name = ? COLLATE NOCASE", [.text(name)])
    for row in rows {
      let other = (resource: try row["resource"], table: try row["source_table"], params: try row["params"])
      if try row["name"] == .text(name), other == (.text(resource), .text(table), .text(params.canonicalJSON)) { continue }
      throw StoreError.nameClash(
        name: name, resource: resource, table: table, otherResource: other.resource.description,
        otherTable: other.table.description, otherParams: other.params.description,
        reason: "SQLite table names ignore ASCII case, so the two cannot share the database")
    }
  }

  /// The columns `_dray_tables` records for physical table `name` (`StoreTransaction.recordedColumns`).
  func recordedColumns(ofTable name: String) throws -> [ResourceScheme.Column]? {
    let rows = try database.rows("SELECT column_types FROM _dray_tables WHERE name = ?", [.text(name)])
    guard case .text(let json)? = try rows.first?["column_types"] else { return nil }
    return Bookkeeping.decodeColumns(json)
  }

  /// The scheme last recorded for `resource`, or nil.
  public func scheme(for resource: String) throws -> ResourceScheme? {
    let rows = try database.rows("SELECT scheme FROM _dray_resources WHERE resource = ?", [.text(resource)])
    guard case .text(let json)? = try rows.first?["scheme"] else { return nil }
    return try Bookkeeping.decodeScheme(json)
  }

  func saveScheme(_ scheme: ResourceScheme) throws {
    let statement = try database.cached(
      "INSERT INTO _dray_resources(resource, scheme, fetched_at) VALUES (?,?,?) ON CONFLICT(resource) DO UPDATE SET scheme = excluded.scheme, fetched_at = excluded.fetched_at"
    )
    try statement.bind([.text(scheme.name), .text(Bookkeeping.encodeScheme(scheme)), .text(Bookkeeping.timestamp())])
    _ = try statement.step()
  }

  /// `CREATE TABLE IF NOT EXISTS` for one output table: the row id column `hhive_id INTEGER
  /// PRIMARY KEY` first for a cached resource, then the scheme's columns in order, quoted
  /// and declared without a type.
  ///
  /// No declared type means no column affinity (https://sqlite.org/datatype3.html §3.1,
  /// "BLOB" affinity), so SQLite stores every bound value as it is bound and never turns
  /// text into a number or a big integer into a rounded REAL. The loader applies the
  /// scheme's types itself (docs/store.md, "Values"); the scheme, with its types, stays in
  /// `_dray_resources`.
  static func createTableSQL(name: String, table: ResourceScheme.Table, cached: Bool) -> String {
    var columns: [String] = []
    if cached { columns.append("\(Database.quote(ResourceScheme.rowIDColumn)) INTEGER PRIMARY KEY") }
    for column in table.columns { columns.append(Database.quote(column.name)) }
    return "CREATE TABLE IF NOT EXISTS \(Database.quote(name)) (\(columns.joined(separator: ", ")))"
  }

  /// True when the physical table exists with exactly the columns `createTableSQL` gives it.
  public func hasSchemeShape(_ name: String, table: ResourceScheme.Table, cached: Bool) throws -> Bool {
    let rows = try database.rows("SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", [.text(name)])
    var expected: [[SQLValue]] = []
    if cached { expected.append([.text(ResourceScheme.rowIDColumn), .text("INTEGER"), .integer(1)]) }
    for column in table.columns { expected.append([.text(column.name), .text(""), .integer(0)]) }
    return try rows.map { row throws(SQLiteError) in [try row["name"], try row["type"], try row["pk"]] } == expected
  }

  // MARK: Bookkeeping

  /// The physical name recorded for a resource's output table and parameters, or nil when
  /// no such table was created (the SDK's `getTablesName`).
  public func recordedTable(resource: String, table: String, params: JSONValue) throws -> String? {
    let name = naming.physicalName(resource: resource, table: table, params: params)
    let rows = try database.rows("SELECT name FROM _dray_tables WHERE name = ?", [.text(name)])
    return rows.isEmpty ? nil : name
  }

  /// Every recorded physical table, optionally of one resource, by name.
  public func records(resource: String? = nil) throws -> [Bookkeeping.TableRecord] {
    try Store.records(in: database, resource: resource)
  }

  /// Every physical table recorded in `database`, optionally of one resource, by name;
  /// empty when dray never loaded anything there. Reads only, so it works on a connection
  /// opened read-only.
  public static func records(in database: Database, resource: String? = nil) throws -> [Bookkeeping.TableRecord] {
    guard try database.tableExists("_dray_tables") else { return [] }
    var sql = "SELECT name, resource, params, source_table, content_version, etag, cache_hash, row_count, loaded_at FROM _dray_tables"
    var values: [SQLValue] = []
    if let resource {
      sql += " WHERE resource = ?"
      values.append(.text(resource))
    }
    sql += " ORDER BY name"
    return try database.rows(sql, values).map { row in
      func text(_ column: String) throws -> String? { if case .text(let s) = try row[column] { s } else { nil } }
      func int(_ column: String) throws -> Int { if case .integer(let n) = try row[column] { Int(n) } else { 0 } }
      return Bookkeeping.TableRecord(
        name: try text("name") ?? "", resource: try text("resource") ?? "", params: try text("params") ?? "{}",
        sourceTable: try text("source_table") ?? "", contentVersion: try text("content_version"), etag: try text("etag"),
        cacheHash: try text("cache_hash"), rowCount: try int("row_count"), loadedAt: try text("loaded_at"))
    }
  }

}

// Its connection has one owner at a time; each step thread opens its own store.
@available(*, unavailable)
extension Store: Sendable {}
