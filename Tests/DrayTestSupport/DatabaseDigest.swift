internal import DrayModel
public import DrayPostgres
internal import DraySQLite
internal import DrayTarget
public import Foundation

/// What an SQLite database holds, table by table, for comparing two databases: each table's
/// schema, row count, count of distinct rows, and SHA-256 of its rows sorted by every
/// column and rendered canonically (typed values, so `1`, `1.0` and `'1'` differ).
public struct DatabaseDigest: Equatable, Sendable, CustomStringConvertible {
  public struct Table: Equatable, Sendable {
    public var schema: String
    public var rows: Int
    public var distinctRows: Int
    public var sha256: String
  }

  /// Digests by table name.
  public var tables: [String: Table]

  /// Tables that differ between any two runs by design: the run journal.
  public static let journalTables: Set<String> = ["_dray_runs", "_dray_checkpoints"]
  /// Columns that hold the time of a load or fetch.
  public static let timeColumns: [String: Set<String>] = ["_dray_tables": ["loaded_at"], "_dray_resources": ["fetched_at"]]

  /// Reads the database at `path` (read-only).
  /// - Parameters:
  ///   - skipping: tables left out (and `sqlite_*` tables always).
  ///   - ignoringColumns: columns left out, by table.
  public init(
    path: String, skipping: Set<String> = DatabaseDigest.journalTables,
    ignoringColumns: [String: Set<String>] = DatabaseDigest.timeColumns
  ) throws {
    let database = try Database(path: path, create: false, readOnly: true)
    tables = [:]
    let names = try database.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
    for row in names {
      guard case .text(let name) = try row["name"], !name.hasPrefix("sqlite_"), !skipping.contains(name) else { continue }
      let schema = if case .text(let sql) = try row["sql"] { sql } else { "" }
      let ignored = ignoringColumns[name] ?? []
      let columns = try database.rows("SELECT name FROM pragma_table_info(?)", [.text(name)]).compactMap {
        if case .text(let column) = try $0["name"], !ignored.contains(column) { Database.quote(column) } else { nil }
      }
      let list = columns.joined(separator: ", ")
      // SQLite renders each row (typed, exact), so that large tables digest at C speed.
      let rendered = columns.map(DatabaseDigest.renderSQL).joined(separator: " || '|' || ")
      let statement = try database.prepare(
        "SELECT \(rendered.isEmpty ? "''" : rendered) FROM \(Database.quote(name)) ORDER BY \(list.isEmpty ? "1" : list)")
      var bytes: [UInt8] = []
      var count = 0
      while try statement.step() {
        count += 1
        if case .text(let line) = statement.value(0) { bytes.append(contentsOf: line.utf8) }
        bytes.append(0x0A)
      }
      let distinct = try database.rows("SELECT count(*) AS n FROM (SELECT DISTINCT \(list) FROM \(Database.quote(name)))")
      let distinctRows = if case .integer(let n)? = try distinct.first?["n"] { Int(n) } else { -1 }
      tables[name] = Table(schema: schema, rows: count, distinctRows: distinctRows, sha256: SHA256.hex(bytes))
    }
  }

  /// SQL rendering one column's value with its type: `n`, `i42`, `r` and the 17 significant
  /// digits that restore a double exactly, `t<bytes>:<text>`, `b<hex>`.
  static func renderSQL(_ column: String) -> String {
    """
    (CASE typeof(\(column)) WHEN 'null' THEN 'n' WHEN 'integer' THEN 'i' || \(column) \
    WHEN 'real' THEN 'r' || printf('%!.17g', \(column)) \
    WHEN 'text' THEN 't' || length(CAST(\(column) AS BLOB)) || ':' || \(column) ELSE 'b' || hex(\(column)) END)
    """
  }

  /// Lines naming each table that is missing on one side or differs, with how.
  public func differences(from expected: DatabaseDigest) -> [String] {
    var out: [String] = []
    for name in Set(tables.keys).union(expected.keys).sorted() {
      switch (tables[name], expected.tables[name]) {
      case (nil, _): out.append("\(name): missing")
      case (_, nil): out.append("\(name): not expected")
      case (let got?, let want?) where got != want:
        var what: [String] = []
        if got.schema != want.schema { what.append("schema differs") }
        if got.rows != want.rows { what.append("\(got.rows) rows, expected \(want.rows)") }
        if got.distinctRows != got.rows { what.append("\(got.rows - got.distinctRows) duplicate rows") }
        if got.sha256 != want.sha256 { what.append("checksum \(got.sha256.prefix(12)), expected \(want.sha256.prefix(12))") }
        out.append("\(name): " + what.joined(separator: "; "))
      default: break
      }
    }
    return out
  }

  public var description: String {
    tables.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.rows) rows, sha256 \($0.value.sha256.prefix(12))" }
      .joined(separator: "\n")
  }
}

extension DatabaseDigest {
  fileprivate var keys: Dictionary<String, Table>.Keys { tables.keys }
}

/// Reads an SQLite file in tests without importing the store.
public enum SQLiteFile {
  /// The rows of `sql` on the database at `path` (read-only), each value as text (nil for
  /// NULL).
  public static func rows(_ path: String, _ sql: String) throws -> [[String?]] {
    let database = try Database(path: path, create: false, readOnly: true)
    return try database.rows(sql).map { row in
      row.values.map { if case .null = $0 { nil } else { $0.description } }
    }
  }

  /// Runs `sql` on the database at `path` as another program would, from its own
  /// connection.
  public static func execute(_ path: String, _ sql: String) throws {
    try Database(path: path, create: false).execute(sql)
  }

  /// Whether a write transaction is open on the database at `path` (another connection
  /// cannot begin one at once); false when there is no database yet.
  public static func isWriteLocked(_ path: String) -> Bool {
    guard FileManager.default.fileExists(atPath: path), let database = try? Database(path: path, create: false) else {
      return false
    }
    do {
      try database.execute("PRAGMA busy_timeout = 0; BEGIN IMMEDIATE; ROLLBACK")
      return false
    } catch {
      return true
    }
  }
}

/// What a folder of files holds, for comparing two job folders.
public enum FolderDigest {
  /// SHA-256 of each regular file under `folder`, by relative path; empty when the folder
  /// does not exist.
  public static func sha256(ofFilesUnder folder: String) -> [String: String] {
    guard let names = FileManager.default.subpaths(atPath: folder) else { return [:] }
    var digests: [String: String] = [:]
    for name in names {
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: folder + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue,
        let data = FileManager.default.contents(atPath: folder + "/" + name)
      else { continue }
      digests[name] = SHA256.hex(Array(data))
    }
    return digests
  }
}

extension FolderDigest {
  /// SHA-256 of `data`, as 64 lower-case hex digits.
  public static func sha256(of data: Data) -> String { SHA256.hex(Array(data)) }
}

extension DatabaseDigest {
  /// Tables that differ between any two runs of a PostgreSQL target by design: the run
  /// journal and the run lock's generations.
  public static let postgresJournalTables: Set<String> = journalTables.union(["_dray_locks", "_dray_joins", "_dray_claims"])

  /// Reads the tables of `schema` in a PostgreSQL database through `connection`, as
  /// `init(path:)` reads an SQLite file: each table's columns and types, row count, count of
  /// distinct rows, and SHA-256 of its rows (each rendered as PostgreSQL's text of a row
  /// value, so that `1` and `'1'` in columns of different types differ through the schema)
  /// sorted, computed by the server.
  /// - Parameters:
  ///   - skipping: tables left out.
  ///   - ignoringColumns: columns left out, by table.
  public init(
    postgres connection: PostgresConnection, schema: String = "public",
    skipping: Set<String> = DatabaseDigest.postgresJournalTables,
    ignoringColumns: [String: Set<String>] = DatabaseDigest.timeColumns
  ) throws {
    tables = [:]
    let names = try connection.execute(
      "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1 ORDER BY tablename", [.text(schema)]
    ).rows.compactMap { $0.first?.text }
    for name in names where !skipping.contains(name) {
      let columns = try connection.execute(
        """
        SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
        ORDER BY ordinal_position
        """, [.text(schema), .text(name)]
      ).rows.map { ($0[0].text ?? "", $0[1].text ?? "") }
      let ignored = ignoringColumns[name] ?? []
      let list = columns.filter { !ignored.contains($0.0) }.map { PostgresIdentifier.quoted($0.0) }.joined(separator: ", ")
      let digest =
        try connection.execute(
          """
          SELECT count(*), count(DISTINCT r), encode(sha256(convert_to(coalesce(string_agg(r, E'\\n' ORDER BY r), ''), 'UTF8')), 'hex')
          FROM (SELECT ROW(\(list))::text AS r FROM \(PostgresIdentifier.quoted(schema)).\(PostgresIdentifier.quoted(name))) AS s
          """
        ).rows.first ?? []
      tables[name] = Table(
        schema: columns.map { "\($0.0) \($0.1)" }.joined(separator: ", "), rows: Int(digest[0].integer ?? -1),
        distinctRows: Int(digest[1].integer ?? -1), sha256: digest[2].text ?? "")
    }
  }
}
