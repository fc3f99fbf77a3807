public import DrayModel
internal import DrayPostgres
internal import DrayPostgresStore
internal import DraySQLite
public import DrayTarget

/// The one place that opens a database: it knows every store behind the target seam and
/// picks one from a manifest's `database:` block or a command line's DATABASE argument.
/// Nothing else outside the stores imports them (docs/architecture.md, "The target seam"):
/// a third database implements `JobDatabase` and is chosen here.
public enum Databases {
  /// The SQLite library dray runs on, as `dray version` names it.
  public static var sqliteLibrary: LibraryVersion { Database.libraryVersion }
  /// The libpq library dray runs on, as `dray version` names it.
  public static var postgresLibrary: LibraryVersion { PostgresConnection.libraryVersion }

  /// The database of `manifest`'s job: PostgreSQL for `database.url`; else SQLite at
  /// `database.path`, whose run journal is the same file, or, for a job without a database,
  /// a journal at `<state.path>/<job>.journal.sqlite`.
  public static func open(_ manifest: Manifest) -> any JobDatabase {
    if let target = manifest.database?.postgres {
      // An `http` step stages in a local SQLite file and copies its records into PostgreSQL
      // when the last page is in; a step that only paginates keeps its ledger beside them.
      let state = manifest.resolve(manifest.state.path) + "/\(manifest.job)"
      return PostgresDatabase(target: target) { records, cancellation in
        try SQLiteStaging(path: state + (records ? ".staging.sqlite" : ".journal.sqlite"), cancellation: cancellation)
      }
    }
    let path = manifest.database?.path.map { manifest.resolve($0) }
    return SQLiteDatabase(path: path, journalPath: path ?? manifest.resolve(manifest.state.path) + "/\(manifest.job).journal.sqlite")
  }

  /// The database named on the command line of `dray tables` and `dray query`: an SQLite
  /// file's path, or a PostgreSQL URL (`postgresql://` or `postgres://`, libpq's connection
  /// URI; docs/postgres.md) with the schema `schema` (default `public`).
  ///
  /// A URL's password is the first of: the one written in it, `PGPASSWORD`, the file named by
  /// `PGPASSFILE`, `~/.pgpass` (libpq reads the last three itself). The URL is shown only
  /// redacted (`PostgresURL.redacted`).
  /// - Throws: `DatabaseArgumentError` for a URL that does not parse (shown with its password
  ///   masked), a schema name out of bounds, or `schema` with an SQLite path.
  public static func open(argument text: String, schema: String?) throws(DatabaseArgumentError) -> any JobDatabase {
    guard text.hasPrefix("postgresql:") || text.hasPrefix("postgres:") else {
      if schema != nil { throw DatabaseArgumentError("--schema goes with a PostgreSQL URL (postgresql://...); an SQLite file has none") }
      return SQLiteDatabase(path: text, journalPath: text)
    }
    let url: PostgresURL
    do {
      url = try PostgresURL(text)
    } catch {
      throw DatabaseArgumentError("the database URL \(PostgresURL.masked(text)) is malformed: \(error.message)")
    }
    if let schema, schema.isEmpty || schema.utf8.count > PostgresIdentifier.maxBytes {
      throw DatabaseArgumentError("--schema takes a schema name of 1 to \(PostgresIdentifier.maxBytes) bytes")
    }
    return PostgresDatabase(target: PostgresTarget(url: url, schema: schema ?? PostgresTarget.defaultSchema))
  }
}

/// A DATABASE argument that names no database (`Databases.open(argument:schema:)`): a wrong
/// command line.
public struct DatabaseArgumentError: Error, CustomStringConvertible {
  public var description: String
  init(_ description: String) { self.description = description }
}
