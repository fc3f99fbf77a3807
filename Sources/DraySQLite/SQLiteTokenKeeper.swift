internal import DrayModel
internal import DrayTarget

/// The kept refresh tokens in the run journal's SQLite file (`TokenKeeper`), on a
/// connection of its own whose commits reach the disk before they return
/// (`synchronous=FULL`): a rotated token survives a power cut as well as a `kill -9`.
///
/// The lock is a write transaction (`BEGIN IMMEDIATE`), held while the token endpoint
/// answers a refresh: other writers of the file wait for it (up to their busy timeout, 10 s),
/// and it waits for them up to `busyTimeoutSeconds`.
final class SQLiteTokenKeeper: TokenKeeper {
  private let database: Database

  /// - Throws: `SQLiteError`.
  init(path: String, cancellation: Cancellation) throws {
    database = try Database(path: path)
    database.stopWhen(cancellation)
    _ = try database.execute("PRAGMA synchronous=FULL")
    // A load of another step may hold the write lock while its page arrives: wait longer for
    // it than a load waits for this lock, which lasts one token request.
    _ = try database.execute("PRAGMA busy_timeout=\(SQLiteTokenKeeper.busyTimeoutSeconds * 1000)")
    _ = try database.execute(Store.createStatement(Bookkeeping.oauth2Tokens))
  }

  /// How long a refresh waits for the write lock: 60 s.
  static let busyTimeoutSeconds = 60

  func locked<T>(key: String, _ body: (KeptToken?, (KeptToken) throws -> Void) throws -> T) throws -> T {
    _ = try database.execute("BEGIN IMMEDIATE")
    var open = true
    defer { if open { _ = try? database.execute("ROLLBACK") } }
    let kept = try SQLiteTokenKeeper.read(database, key: key)
    let value = try body(kept) { token in
      guard open else { preconditionFailure("a token is kept once per lock") }
      _ = try database.rows(
        "INSERT OR REPLACE INTO _dray_oauth2_tokens(key, refresh_token, manifest_hash, kept_at) VALUES (?, ?, ?, ?)",
        [.text(token.key), .text(token.refreshToken), .text(token.manifestHash), .text(token.keptAt)])
      _ = try database.execute("COMMIT")
      open = false
    }
    return value
  }

  /// The token kept under `key` in `database`; nil when none is, or the table is missing.
  static func read(_ database: Database, key: String) throws -> KeptToken? {
    guard try database.tableExists(Bookkeeping.oauth2Tokens.name) else { return nil }
    let rows = try database.rows(
      "SELECT refresh_token, manifest_hash, kept_at FROM _dray_oauth2_tokens WHERE key = ?", [.text(key)])
    guard let row = rows.first, case .text(let token) = try row["refresh_token"], case .text(let hash) = try row["manifest_hash"],
      case .text(let keptAt) = try row["kept_at"]
    else { return nil }
    return KeptToken(key: key, refreshToken: token, manifestHash: hash, keptAt: keptAt)
  }

  func close() { try? database.close() }
}
