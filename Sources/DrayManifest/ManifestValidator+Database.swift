internal import DrayModel

/// Reading the `database` block: an SQLite file or a PostgreSQL schema (docs/postgres.md).
extension ManifestValidator {
  /// `database:`: `path` (SQLite) or `url` (PostgreSQL, with `password` and `schema`).
  mutating func readDatabase(_ node: YAMLNode) -> DatabaseSettings? {
    guard let f = reader.fields(node, "database", keys: ManifestSchema.database) else { return nil }
    switch (f["path"], f["url"]) {
    case (let pathNode?, nil):
      for key in ["password", "schema", "timeouts"] {
        if let extra = f[key] {
          reader.error(extra.location, "'database.\(key)' goes with 'url' (PostgreSQL); an SQLite database (database.path) has none")
        }
      }
      guard let path = reader.nonEmptyString(pathNode, "database.path"),
        fileShaped(pathNode, "database.path", path, what: "SQLite file", example: "job.sqlite")
      else { return nil }
      return DatabaseSettings(path: path)
    case (nil, let urlNode?):
      return readPostgres(f, urlNode).map { DatabaseSettings(postgres: $0) }
    case (_?, let urlNode?):
      reader.error(urlNode.location, "'database' takes 'path' (an SQLite file) or 'url' (PostgreSQL), not both")
    case (nil, nil):
      reader.error(node.location, "missing required key 'path' (an SQLite file) or 'url' (PostgreSQL) in database")
    }
    return nil
  }

  /// `database.url`, checked with `PostgresURL`, with `password` and `schema`; the URL's
  /// password and `database.password` are secrets. Every problem is reported.
  private mutating func readPostgres(_ f: Fields, _ urlNode: YAMLNode) -> PostgresTarget? {
    var url: PostgresURL?
    if let text = reader.nonEmptyString(urlNode, "database.url") {
      do {
        url = try PostgresURL(text)
      } catch {
        // The source line is shown with the error: mask what looks like a password first.
        for password in PostgresURL.passwordTexts(in: text) { reader.redactor.add(password) }
        reader.error(urlNode.location, "'database.url': \(error.message)")
      }
    }
    if let password = url?.password { reader.redactor.add(password) }
    var password: String?
    if let node = f["password"] {
      password = reader.string(node, "database.password", secret: true)
      if url?.password != nil {
        reader.error(node.location, "'database.password' and a password in 'database.url' both given; give it once, in database.password")
      }
    }
    var schema: String? = PostgresTarget.defaultSchema
    if let node = f["schema"] {
      schema = reader.nonEmptyString(node, "database.schema")
      if let name = schema, name.utf8.count > 63 {
        reader.error(node.location, "'database.schema' has \(name.utf8.count) bytes; PostgreSQL names have at most 63")
        schema = nil
      } else if let name = schema, Self.isSystemSchema(name) {
        reader.error(
          node.location,
          "'database.schema': \(name) is a PostgreSQL system schema (information_schema, and every name starting with pg_); give the job's tables a schema of their own, such as public or staging"
        )
        schema = nil
      }
    }
    let timeouts = f["timeouts"].map { readDatabaseTimeouts($0) } ?? DatabaseTimeouts()
    guard let url, let schema, let timeouts else { return nil }
    return PostgresTarget(url: url, password: password, schema: schema, timeouts: timeouts)
  }

  /// `database.timeouts`.
  private mutating func readDatabaseTimeouts(_ node: YAMLNode) -> DatabaseTimeouts? {
    guard let f = reader.fields(node, "database.timeouts", keys: ManifestSchema.databaseTimeouts) else { return nil }
    var t = DatabaseTimeouts()
    if let d = reader.duration(f, "connect") { t.connect = d }
    if let d = reader.duration(f, "idle") { t.idle = d }
    if let d = reader.duration(f, "statement") { t.statement = d }
    return t
  }

  /// PostgreSQL's own schemas: `information_schema` and every name starting with `pg_`
  /// (`pg_catalog`, `pg_toast`, `pg_temp`, `pg_temp_3`, ...), a prefix PostgreSQL reserves
  /// ("unacceptable schema name": CREATE SCHEMA refuses it). Compared as written: dray
  /// quotes the schema, so `PG_DATA` is a user's schema.
  static func isSystemSchema(_ name: String) -> Bool {
    name == "information_schema" || name.hasPrefix("pg_")
  }
}
