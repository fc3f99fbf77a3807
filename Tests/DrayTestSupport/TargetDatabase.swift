internal import DrayModel
public import DrayPostgres
internal import DraySQLite
internal import DrayTarget
public import Foundation

/// A job's target database for a test that runs on both: an SQLite file in the job folder,
/// or a fresh database on the shared `PostgresServer` (one suite, two databases).
public struct TargetDatabase: Sendable, CustomStringConvertible {
  /// Which database a test runs on (the argument of `@Test(arguments: TargetDatabase.Kind.allCases)`).
  public enum Kind: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite, postgres
    public var description: String { rawValue }
  }

  public let kind: Kind
  /// The SQLite file, relative to the job folder.
  public static let sqlitePath = "data/db.sqlite"
  /// The job folder (where the SQLite file lives).
  public let folder: String
  /// The PostgreSQL database's URL, its password in it; nil for SQLite.
  public let url: String?

  /// An empty target of `kind` for the job folder `folder`.
  public init(_ kind: Kind, folder: String) throws {
    self.kind = kind
    self.folder = folder
    if kind == .postgres {
      let server = try PostgresServer.shared()
      url = server.urlText(database: try server.createDatabase("target"))
    } else {
      url = nil
    }
  }

  /// The PostgreSQL database `database` of the shared `PostgresServer` as it is (made by
  /// `createDatabase()`, emptied by the caller), for the job folder `folder`: a test that
  /// runs thousands of jobs reuses one database instead of creating one each time.
  public init(postgresDatabase database: String, folder: String) throws {
    kind = .postgres
    self.folder = folder
    url = try PostgresServer.shared().urlText(database: database)
  }

  public var description: String { kind.rawValue }

  /// The manifest's `database:` line.
  public var manifestBlock: String {
    if let url { "database: { url: \"\(url)\" }\n" } else { "database: { path: \(TargetDatabase.sqlitePath) }\n" }
  }

  /// The SQLite file where an `http` step of job `job` stages its pages: the target itself,
  /// or the local file `.dray/<job>.staging.sqlite` beside a PostgreSQL target (the default
  /// `state.path`; docs/http.md, "On PostgreSQL").
  public func stagingPath(job: String) -> String {
    folder + "/" + (url == nil ? TargetDatabase.sqlitePath : ".dray/\(job).staging.sqlite")
  }

  /// The column names of table `name` (in the default schema), in order; empty when there
  /// is no such table.
  public func columnNames(_ name: String) throws -> [String] {
    let sql =
      url == nil
      ? "SELECT name FROM pragma_table_info('\(name)')"
      : "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = '\(name)' ORDER BY ordinal_position"
    return try rows(sql).map { $0.first.flatMap { $0 } ?? "" }
  }

  /// The column names and declared types of table `name` (in the default schema), in
  /// order: SQLite's declarations (`INTEGER`), PostgreSQL's `data_type` (`bigint`).
  public func columnTypes(_ name: String) throws -> [[String?]] {
    try rows(
      url == nil
        ? "SELECT name, type FROM pragma_table_info('\(name)')"
        : "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name = '\(name)' ORDER BY ordinal_position"
    )
  }

  /// What the target holds, table by table (`DatabaseDigest`), the run journal left out.
  public func digest(ignoringColumns: [String: Set<String>] = DatabaseDigest.timeColumns) throws -> DatabaseDigest {
    guard let url else { return try DatabaseDigest(path: folder + "/" + TargetDatabase.sqlitePath, ignoringColumns: ignoringColumns) }
    return try DatabaseDigest(postgres: PostgresConnection(url: PostgresURL(url)), ignoringColumns: ignoringColumns)
  }

  /// Runs `sql` from another connection, as another program would.
  public func execute(_ sql: String) throws {
    guard let url else { return try SQLiteFile.execute(folder + "/" + TargetDatabase.sqlitePath, sql) }
    try PostgresConnection(url: PostgresURL(url)).execute(sql)
  }

  /// Records every later write to table `name` (each `INSERT`, `UPDATE`, `DELETE`, and
  /// `TRUNCATE` on PostgreSQL) in the table `audit(event)`, through triggers of the test's
  /// own named `audit...`, as another program watching the table would.
  public func auditWrites(on name: String) throws {
    try execute("CREATE TABLE audit(event text)")
    guard url != nil else {
      for event in ["INSERT", "UPDATE", "DELETE"] {
        try execute("CREATE TRIGGER audit_\(event) AFTER \(event) ON \(name) BEGIN INSERT INTO audit VALUES ('\(event)'); END")
      }
      return
    }
    try execute(
      "CREATE FUNCTION audit_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (TG_OP); RETURN NULL; END $$")
    try execute(
      "CREATE TRIGGER audit AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON \(name) FOR EACH STATEMENT EXECUTE FUNCTION audit_write()")
  }

  /// The writes `auditWrites(on:)` recorded on table `name`, oldest first, and whether its
  /// triggers are all still on the table (a table dropped and made again has lost them).
  public func auditedWrites(on name: String) throws -> (events: [String], watching: Bool) {
    let events = try rows("SELECT event FROM audit").map { $0.first.flatMap { $0 } ?? "" }
    let triggers =
      url == nil
      ? "SELECT count(*) = 3 FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = '\(name)' AND name LIKE 'audit%'"
      : "SELECT count(*) = 1 FROM pg_catalog.pg_trigger WHERE tgrelid = '\(name)'::regclass AND tgname = 'audit'"
    return (events, try rows(triggers) == [["1"]])
  }

  /// Everything the target holds, as bytes to search (for a secret, say): the SQLite file
  /// and its write-ahead log as stored; on PostgreSQL, every row of every table outside the
  /// system schemas (the run journal included) as its text form, one a line.
  public func storedBytes() throws -> Data {
    guard url != nil else {
      let path = folder + "/" + TargetDatabase.sqlitePath
      return [path, path + "-wal"].compactMap { FileManager.default.contents(atPath: $0) }.reduce(Data(), +)
    }
    let tables = try rows(
      "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables "
        + "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'")
    var text = ""
    for table in tables.compactMap({ $0.first ?? nil }) {
      for row in try rows("SELECT r::text FROM \(table) AS r") { text += (row.first.flatMap { $0 } ?? "") + "\n" }
    }
    return Data(text.utf8)
  }

  /// The rows of `sql`, read from another connection, each value as text (nil for NULL):
  /// integers as digits, reals as Swift prints a `Double`, booleans as 1 and 0.
  public func rows(_ sql: String) throws -> [[String?]] {
    guard let url else { return try SQLiteFile.rows(folder + "/" + TargetDatabase.sqlitePath, sql) }
    return try PostgresConnection(url: PostgresURL(url)).textRows(sql)
  }
}

extension PostgresConnection {
  /// The rows of `sql`, each value as text (nil for NULL): integers as digits, reals as
  /// Swift prints a `Double`, booleans as 1 and 0.
  public func textRows(_ sql: String) throws -> [[String?]] {
    try execute(sql).rows.map { row in
      row.map { value in
        switch value {
        case .null: nil
        case .integer(let i): String(i)
        case .real(let d): String(d)
        case .bool(let b): b ? "1" : "0"
        case .text(let t): t
        }
      }
    }
  }
}
