internal import DrayModel
public import DrayPostgres
internal import DrayStore

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

  public var description: String { kind.rawValue }

  /// The manifest's `database:` line.
  public var manifestBlock: String {
    if let url { "database: { url: \"\(url)\" }\n" } else { "database: { path: \(TargetDatabase.sqlitePath) }\n" }
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

  /// Runs `sql` from another connection, as another program would.
  public func execute(_ sql: String) throws {
    guard let url else { return try SQLiteFile.execute(folder + "/" + TargetDatabase.sqlitePath, sql) }
    try PostgresConnection(url: PostgresURL(url)).execute(sql)
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
