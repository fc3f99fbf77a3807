internal import DrayModel
internal import DrayPostgres
internal import DrayTarget

/// The kept refresh tokens in the job's PostgreSQL schema, beside the run journal
/// (`TokenKeeper`), on a connection of its own.
///
/// The lock is a transaction advisory lock (`pg_advisory_xact_lock`) whose key is the
/// SHA-256 of the schema and the token's `key` (`PostgresRunLock.key`): every runner of the
/// job, on any machine, waits for it, and the server releases it when the transaction ends,
/// a killed runner's included. A token is kept by committing that transaction.
final class PostgresTokenKeeper: TokenKeeper {
  private let connection: PostgresConnection
  private let schema: String

  /// - Throws: `PostgresError`.
  init(target: PostgresTarget, cancellation: Cancellation) throws {
    schema = target.schema
    connection = try PostgresConnection(
      url: target.url, password: target.password, timeouts: target.timeouts, answers: .idle, cancellation: cancellation)
    connection.finishStatements(when: cancellation)
    try PostgresStore.prepare(connection, schema: schema, tables: PostgresStore.createStatement(Bookkeeping.oauth2Tokens))
  }

  func locked<T>(key: String, _ body: (KeptToken?, (KeptToken) throws -> Void) throws -> T) throws -> T {
    try connection.execute("BEGIN")
    var open = true
    defer { if open { _ = try? connection.execute("ROLLBACK") } }
    try connection.execute(
      "SELECT pg_advisory_xact_lock($1)", [.integer(PostgresRunLock.key(job: "oauth2 token " + key, schema: schema))])
    let kept = try PostgresTokenKeeper.read(connection, schema: schema, key: key)
    return try body(kept) { token in
      guard open else { preconditionFailure("a token is kept once per lock") }
      try connection.execute(
        """
        INSERT INTO \(PostgresIdentifier.quoted(schema))._dray_oauth2_tokens(key, refresh_token, manifest_hash, kept_at)
        VALUES ($1, $2, $3, $4)
        ON CONFLICT (key) DO UPDATE SET refresh_token = EXCLUDED.refresh_token, manifest_hash = EXCLUDED.manifest_hash,
          kept_at = EXCLUDED.kept_at
        """, [.text(token.key), .text(token.refreshToken), .text(token.manifestHash), .text(token.keptAt)])
      try connection.execute("COMMIT")
      open = false
    }
  }

  /// The token kept under `key`; nil when none is, or the table is missing.
  static func read(_ connection: PostgresConnection, schema: String, key: String) throws -> KeptToken? {
    guard try PostgresStore.hasOwnTables([Bookkeeping.oauth2Tokens.name], schema: schema, on: connection) else { return nil }
    let rows = try connection.execute(
      "SELECT refresh_token, manifest_hash, kept_at FROM \(PostgresIdentifier.quoted(schema))._dray_oauth2_tokens WHERE key = $1",
      [.text(key)]
    ).named
    guard let row = rows.first, case .text(let token) = try row["refresh_token"], case .text(let hash) = try row["manifest_hash"],
      case .text(let keptAt) = try row["kept_at"]
    else { return nil }
    return KeptToken(key: key, refreshToken: token, manifestHash: hash, keptAt: keptAt)
  }

  func close() { connection.close() }
}
