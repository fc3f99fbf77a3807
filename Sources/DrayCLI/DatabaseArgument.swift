internal import DrayModel
internal import DrayPostgres

/// The database named on the command line of `dray tables` and `dray query`: an SQLite
/// file's path, or a PostgreSQL URL (`postgresql://` or `postgres://`, libpq's connection
/// URI; docs/postgres.md) with the schema of `--schema` (default `public`).
///
/// A URL's password is the first of: the one written in it, `PGPASSWORD`, the file named by
/// `PGPASSFILE`, `~/.pgpass` (libpq reads the last three itself). The URL is shown only
/// redacted (`PostgresURL.redacted`).
enum DatabaseArgument {
  case sqlite(path: String)
  case postgres(PostgresTarget)

  /// - Parameters:
  ///   - text: the path or the URL.
  ///   - schema: `--schema`, or nil.
  /// - Throws: `UsageError` for a URL that does not parse (shown with its password masked),
  ///   or `--schema` with an SQLite path.
  init(_ text: String, schema: String?) throws(UsageError) {
    guard text.hasPrefix("postgresql:") || text.hasPrefix("postgres:") else {
      if schema != nil { throw UsageError("--schema goes with a PostgreSQL URL (postgresql://...); an SQLite file has none") }
      self = .sqlite(path: text)
      return
    }
    let url: PostgresURL
    do {
      url = try PostgresURL(text)
    } catch {
      throw UsageError("the database URL \(PostgresURL.masked(text)) is malformed: \(error.message)")
    }
    if let schema, schema.isEmpty || schema.utf8.count > PostgresIdentifier.maxBytes {
      throw UsageError("--schema takes a schema name of 1 to \(PostgresIdentifier.maxBytes) bytes")
    }
    self = .postgres(PostgresTarget(url: url, schema: schema ?? PostgresTarget.defaultSchema))
  }
}
