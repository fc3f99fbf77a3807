internal import DrayModel

/// A refresh token an OAuth 2.0 token endpoint rotated to, kept in the run journal's
/// database (`_dray_oauth2_tokens`) so that the next refresh, in this run or the next,
/// presents it (docs/auth.md, "Rotated refresh tokens").
public struct KeptToken: Sendable, Equatable {
  /// `OAuth2.key`: the token endpoint and client it belongs to.
  public var key: String
  public var refreshToken: String
  /// `OAuth2.refreshTokenHash` of the manifest's token when this one was kept: a manifest
  /// token with another hash was authorised again since, and replaces this one.
  public var manifestHash: String
  /// When it was kept: RFC 3339, UTC.
  public var keptAt: String

  public init(key: String, refreshToken: String, manifestHash: String, keptAt: String) {
    self.key = key
    self.refreshToken = refreshToken
    self.manifestHash = manifestHash
    self.keptAt = keptAt
  }
}

/// The kept refresh tokens of a job's database, opened for one refresh
/// (`JobDatabase.openTokenKeeper`) on a connection of its own.
public protocol TokenKeeper: AnyObject {
  /// Takes the database's lock of `key` (SQLite: a write transaction, `BEGIN IMMEDIATE`;
  /// PostgreSQL: a transaction advisory lock, so that runners on other machines wait too),
  /// reads the token kept under it, and calls `body` with it and `keep`. `keep` writes a
  /// token and commits at once, durably (which ends the lock); when `body` returns or
  /// throws without keeping, the lock ends and nothing changes.
  /// - Throws: what `body` throws; the database's errors.
  func locked<T>(key: String, _ body: (_ kept: KeptToken?, _ keep: (KeptToken) throws -> Void) throws -> T) throws -> T

  /// Ends the connection.
  func close()
}

extension Bookkeeping {
  /// `_dray_oauth2_tokens`: the refresh token each token endpoint and client (`key`) last
  /// rotated to (`KeptToken`), in the run journal's database. Anyone who can read that
  /// database can read them (docs/auth.md).
  public static let oauth2Tokens = Table(
    "_dray_oauth2_tokens", key: ["key"],
    [("key", .text, true), ("refresh_token", .text, true), ("manifest_hash", .text, true), ("kept_at", .text, true)])
}
