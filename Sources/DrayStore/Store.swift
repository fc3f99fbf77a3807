internal import DrayJSON
public import DrayModel
internal import Foundation

/// The target database of a job: physical tables per resource, parameters and output
/// table, and the bookkeeping that records what each holds (platform-api.md §7).
///
/// Bookkeeping tables, created on open:
/// - `_dray_resources(resource, scheme, fetched_at)`: each resource's scheme as last fetched;
/// - `_dray_tables(name, resource, params, source_table, content_version, etag, cache_hash,
///   row_count, loaded_at)`: one row per physical table.
public final class Store {
  public let database: Database

  /// Most columns SQLite allows in a table by default (SQLITE_MAX_COLUMN,
  /// https://sqlite.org/limits.html); Debian's library keeps the default.
  public static let maxColumns = 2000
  /// The column holding a cached resource's row id.
  public static let rowIDColumn = "hhive_id"

  /// Opens or creates the database at `path`, creating its folder.
  /// - Throws: `SQLiteError`, or `StoreError.cannotCreateFolder`.
  public init(path: String) throws {
    do {
      try Folders.create(holding: path)
    } catch {
      throw StoreError.cannotCreateFolder(error)
    }
    database = try Database(path: path)
    try database.execute(
      """
      CREATE TABLE IF NOT EXISTS _dray_resources(
        resource TEXT PRIMARY KEY, scheme TEXT NOT NULL, fetched_at TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS _dray_tables(
        name TEXT PRIMARY KEY, resource TEXT NOT NULL, params TEXT NOT NULL,
        source_table TEXT NOT NULL, content_version TEXT, etag TEXT, cache_hash TEXT,
        row_count INTEGER NOT NULL DEFAULT 0, loaded_at TEXT);
      """)
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
    try Store.check(scheme)
    try saveScheme(scheme)
    var names: [String: String] = [:]
    for table in scheme.outputs {
      let name = naming.physicalName(resource: scheme.name, table: table.name, params: params)
      try claim(name, resource: scheme.name, table: table.name, params: params)
      try database.execute(Store.createTableSQL(name: name, table: table, cached: scheme.isCached))
      let record = try database.cached(
        "INSERT INTO _dray_tables(name, resource, params, source_table) VALUES (?,?,?,?) ON CONFLICT(name) DO NOTHING")
      try record.bind([.text(name), .text(scheme.name), .text(params.canonicalJSON), .text(table.name)])
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
      let values = row.map(\.1)
      if values == [.text(name), .text(resource), .text(table), .text(params.canonicalJSON)] { continue }
      let other = values.map(\.description)
      throw StoreError.nameClash(
        name: name, resource: resource, table: table, otherResource: other[1], otherTable: other[2], otherParams: other[3])
    }
  }

  /// The scheme last recorded for `resource`, or nil.
  public func scheme(for resource: String) throws -> ResourceScheme? {
    let rows = try database.rows("SELECT scheme FROM _dray_resources WHERE resource = ?", [.text(resource)])
    guard case .text(let json)? = rows.first?.first?.1 else { return nil }
    return try Store.decodeScheme(json)
  }

  func saveScheme(_ scheme: ResourceScheme) throws {
    let statement = try database.cached(
      "INSERT INTO _dray_resources(resource, scheme, fetched_at) VALUES (?,?,?) ON CONFLICT(resource) DO UPDATE SET scheme = excluded.scheme, fetched_at = excluded.fetched_at"
    )
    try statement.bind([.text(scheme.name), .text(Store.encodeScheme(scheme)), .text(Store.timestamp())])
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
    if cached { columns.append("\(Database.quote(rowIDColumn)) INTEGER PRIMARY KEY") }
    for column in table.columns { columns.append(Database.quote(column.name)) }
    return "CREATE TABLE IF NOT EXISTS \(Database.quote(name)) (\(columns.joined(separator: ", ")))"
  }

  /// True when the physical table exists with exactly the columns `createTableSQL` gives it.
  func hasSchemeShape(_ name: String, table: ResourceScheme.Table, cached: Bool) throws -> Bool {
    let rows = try database.rows("SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", [.text(name)])
    var expected: [[SQLValue]] = []
    if cached { expected.append([.text(Store.rowIDColumn), .text("INTEGER"), .integer(1)]) }
    for column in table.columns { expected.append([.text(column.name), .text(""), .integer(0)]) }
    return rows.map { $0.map(\.1) } == expected
  }

  /// The database a scheme is checked for (`check(_:for:)`): its name in messages and its
  /// limits.
  public enum SchemeTarget: Sendable {
    case sqlite, postgres

    var name: String { self == .sqlite ? "SQLite" : "PostgreSQL" }

    /// Most columns a table may have: `Store.maxColumns` on SQLite; 1600 on PostgreSQL
    /// (PostgreSQL 15 documentation, Appendix K "PostgreSQL Limits").
    var maxColumns: Int { self == .sqlite ? Store.maxColumns : 1600 }

    /// Why two names that differ only in ASCII letter case are refused.
    var caseReason: String {
      self == .sqlite
        ? "which SQLite cannot tell apart (names differ only in letter case)"
        : "which differ only in letter case; dray refuses such names on every database, so that a job loads the same tables wherever it runs"
    }

    /// Why a table without columns is refused.
    var emptyTableReason: String {
      self == .sqlite ? "SQLite cannot create a table without columns" : "dray creates no table without columns, on any database"
    }
  }

  /// Refuses names the target database cannot hold as distinct columns, before anything is
  /// created: an empty resource, table or column name; a name holding a NUL character
  /// (U+0000, where SQLite's and libpq's C interfaces would cut it short); two output tables
  /// of one name; a table without columns (of a resource that is not cached: a cached one
  /// has its row id); two columns whose names differ only in ASCII letter case (SQLite
  /// compares identifiers that way, `IdentifierKey`, and PostgreSQL refuses them too, so a
  /// job's tables are the same on both: `é` and `e` + U+0301 are two columns); two output
  /// tables whose names differ only in Unicode normalization (answer tables are routed by
  /// name); a column named like the row id column of a cached resource; more columns than
  /// the database allows (`SchemeTarget.maxColumns`); on SQLite, a resource named
  /// `sqlite_...`. Every other name, quotes, spaces, reserved words and any script
  /// included, is quoted and kept exactly.
  ///
  /// - Throws: `StoreError.badScheme`, its reason naming `target` where the rule is the
  ///   database's.
  public static func check(_ scheme: ResourceScheme, for target: SchemeTarget = .sqlite) throws(StoreError) {
    if scheme.name.isEmpty { throw .badScheme(resource: scheme.name, reason: "the resource name is empty") }
    if scheme.name.utf8.contains(0) {
      throw .badScheme(resource: Store.shown(scheme.name), reason: "the resource name holds a NUL character (U+0000)")
    }
    if target == .sqlite && "\(scheme.name)__".lowercased().hasPrefix("sqlite_") {
      throw .badScheme(resource: scheme.name, reason: "SQLite reserves table names that start with 'sqlite_'")
    }
    var tables: [IdentifierKey: String] = [:]
    var equivalent: [String: String] = [:]
    for table in scheme.outputs {
      if table.name.isEmpty { throw .badScheme(resource: scheme.name, reason: "an output table has an empty name") }
      if table.name.utf8.contains(0) {
        throw .badScheme(
          resource: scheme.name, reason: "output table '\(Store.shown(table.name))' has a name holding a NUL character (U+0000)")
      }
      // Physical names compare without regard to ASCII case, as SQLite compares them.
      if let other = tables[IdentifierKey(table.name)] {
        let reason =
          IdentifierKey.sameBytes(other, table.name)
          ? "the scheme lists two output tables named '\(table.name)'; each output table needs its own name"
          : "the scheme lists output tables '\(other)' and '\(table.name)', \(target.caseReason)"
        throw .badScheme(resource: scheme.name, reason: reason)
      }
      tables[IdentifierKey(table.name)] = table.name
      // SQLite keeps `é` (U+00E9) and `e` + U+0301 apart, but the load routes answer tables
      // by Swift string, which would merge them: refuse such a pair by its real reason.
      if let other = equivalent.updateValue(table.name, forKey: table.name) {
        throw .badScheme(
          resource: scheme.name,
          reason:
            "the scheme lists output tables '\(other)' and '\(table.name)', which differ only in Unicode normalization (composed and decomposed accents); "
            + "dray cannot load both: rename one, or spell both alike on the platform")
      }
      if table.columns.isEmpty && !scheme.isCached {
        throw .badScheme(
          resource: scheme.name,
          reason: "output table '\(table.name)' has no columns; \(target.emptyTableReason)")
      }
      let limit = target.maxColumns - (scheme.isCached ? 1 : 0)
      if table.columns.count > limit {
        throw .badScheme(
          resource: scheme.name,
          reason: "output table '\(table.name)' has \(table.columns.count) columns; \(target.name) allows at most \(limit)")
      }
      var seen: [IdentifierKey: String] = [:]
      if scheme.isCached { seen[IdentifierKey(rowIDColumn)] = rowIDColumn }
      for (index, column) in table.columns.enumerated() {
        if column.name.isEmpty {
          throw .badScheme(
            resource: scheme.name, reason: "output table '\(table.name)' has a column with an empty name (column \(index + 1))")
        }
        if column.name.utf8.contains(0) {
          throw .badScheme(
            resource: scheme.name,
            reason: "output table '\(table.name)' has a column named '\(Store.shown(column.name))', which holds a NUL character (U+0000)")
        }
        // SQLite compares identifiers without regard to ASCII case.
        let folded = IdentifierKey(column.name)
        if let other = seen[folded] {
          let reason =
            IdentifierKey.sameBytes(other, rowIDColumn)
            ? "output table '\(table.name)' has a column '\(column.name)', which clashes with the row id column '\(rowIDColumn)' of a cached resource"
            : "output table '\(table.name)' has columns '\(other)' and '\(column.name)', \(target.caseReason)"
          throw .badScheme(resource: scheme.name, reason: reason)
        }
        seen[folded] = column.name
      }
    }
  }

  /// A server-supplied name for a message: a NUL (or another control character) as `\0`,
  /// `\u{1b}`, so that the message stays one readable line.
  static func shown(_ name: String) -> String {
    name.unicodeScalars.map { scalar in
      if scalar.value == 0 { return "\\0" }
      if scalar.value < 32 || scalar.value == 127 { return "\\u{\(String(scalar.value, radix: 16))}" }
      return String(scalar)
    }.joined()
  }

  // MARK: Bookkeeping

  /// The physical name recorded for a resource's output table and parameters, or nil when
  /// no such table was created (the SDK's `getTablesName`).
  public func recordedTable(resource: String, table: String, params: JSONValue) throws -> String? {
    let name = naming.physicalName(resource: resource, table: table, params: params)
    let rows = try database.rows("SELECT name FROM _dray_tables WHERE name = ?", [.text(name)])
    return rows.isEmpty ? nil : name
  }

  /// What the bookkeeping records about one physical table.
  public struct TableRecord: Sendable, Equatable {
    public var name: String
    public var resource: String
    public var params: String
    public var sourceTable: String
    public var contentVersion: String?
    public var etag: String?
    public var cacheHash: String?
    public var rowCount: Int
    public var loadedAt: String?

    public init(
      name: String, resource: String, params: String, sourceTable: String, contentVersion: String?, etag: String?,
      cacheHash: String?, rowCount: Int, loadedAt: String?
    ) {
      self.name = name
      self.resource = resource
      self.params = params
      self.sourceTable = sourceTable
      self.contentVersion = contentVersion
      self.etag = etag
      self.cacheHash = cacheHash
      self.rowCount = rowCount
      self.loadedAt = loadedAt
    }
  }

  /// Every recorded physical table, optionally of one resource, by name.
  public func records(resource: String? = nil) throws -> [TableRecord] {
    try Store.records(in: database, resource: resource)
  }

  /// Every physical table recorded in `database`, optionally of one resource, by name;
  /// empty when dray never loaded anything there. Reads only, so it works on a connection
  /// opened read-only.
  public static func records(in database: Database, resource: String? = nil) throws -> [TableRecord] {
    guard try database.tableExists("_dray_tables") else { return [] }
    var sql = "SELECT name, resource, params, source_table, content_version, etag, cache_hash, row_count, loaded_at FROM _dray_tables"
    var values: [SQLValue] = []
    if let resource {
      sql += " WHERE resource = ?"
      values.append(.text(resource))
    }
    sql += " ORDER BY name"
    return try database.rows(sql, values).map { row in
      func text(_ i: Int) -> String? { if case .text(let s) = row[i].1 { s } else { nil } }
      func int(_ i: Int) -> Int { if case .integer(let n) = row[i].1 { Int(n) } else { 0 } }
      return TableRecord(
        name: text(0) ?? "", resource: text(1) ?? "", params: text(2) ?? "{}", sourceTable: text(3) ?? "",
        contentVersion: text(4), etag: text(5), cacheHash: text(6), rowCount: int(7), loadedAt: text(8))
    }
  }

  /// RFC 3339 UTC time, seconds precision.
  static func timestamp(_ date: Date = Date()) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.string(from: date)
  }

  // MARK: Scheme persistence

  public static func encodeScheme(_ scheme: ResourceScheme) -> String {
    var object: [(key: String, value: JSONValue)] = [("name", .string(scheme.name)), ("type", .string(scheme.type))]
    if let lifetime = scheme.lifetime { object.append(("lifetime", .integer(Int64(lifetime)))) }
    object.append(
      (
        "output",
        .array(
          scheme.outputs.map { table in
            .object([
              ("name", .string(table.name)),
              ("columns", .array(table.columns.map { .object([("name", .string($0.name)), ("type", .string($0.type))]) })),
            ])
          })
      ))
    return JSONValue.object(object).json
  }

  public static func decodeScheme(_ json: String) throws -> ResourceScheme {
    let value = try JSONValue(parsing: json)
    let outputs = (value["output"]?.arrayValue ?? []).map { table in
      ResourceScheme.Table(
        name: table["name"]?.stringValue ?? "",
        columns: (table["columns"]?.arrayValue ?? []).map {
          ResourceScheme.Column(name: $0["name"]?.stringValue ?? "", type: $0["type"]?.stringValue ?? "TEXT")
        })
    }
    return ResourceScheme(
      name: value["name"]?.stringValue ?? "", type: value["type"]?.stringValue ?? "tabular",
      lifetime: value["lifetime"]?.intValue.map { Int($0) }, outputs: outputs, json: json)
  }
}

// Its connection has one owner at a time; each step thread opens its own store.
@available(*, unavailable)
extension Store: Sendable {}

/// Problems with what the store is asked to hold.
public enum StoreError: Error, Sendable, CustomStringConvertible, Equatable {
  case cannotCreateFolder(FolderError)
  case badScheme(resource: String, reason: String)
  case unknownResource(String)
  case nameClash(name: String, resource: String, table: String, otherResource: String, otherTable: String, otherParams: String)

  public var description: String {
    switch self {
    case .cannotCreateFolder(let error):
      "\(error), for the database; check the path and permissions"
    case .badScheme(let resource, let reason):
      "resource '\(resource)': \(reason); nothing was created"
    case .unknownResource(let resource):
      "resource '\(resource)' has no scheme in the database; add a 'schemes' step before loading it"
    case .nameClash(let name, let resource, let table, let otherResource, let otherTable, let otherParams):
      "resource '\(resource)': output table '\(table)' would be stored as \(Database.quote(name)), which already holds output table '\(otherTable)' of resource '\(otherResource)' (params \(otherParams)); SQLite table names ignore ASCII case, so the two cannot share the database; nothing was created"
    }
  }
}
