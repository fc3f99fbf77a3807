/// An `http` step's `auth.oauth2`: where and how dray obtains the access tokens it sends
/// (RFC 6749; docs/auth.md).
///
/// ```yaml
/// auth:
///   oauth2:
///     token_url: https://login.example.com/oauth/token
///     grant: refresh_token             # or client_credentials
///     client_id: ${CLIENT_ID}
///     client_secret: ${CLIENT_SECRET}
///     refresh_token: ${REFRESH_TOKEN}  # refresh_token grant: the first one only
///     scope: read
///     client_auth: basic               # basic (RFC 6749 §2.3.1) or body
/// ```
///
/// Every step, parallel member and partition whose settings have the same `key` (the same
/// `token_url` and `client_id`) shares one access token in a run.
public struct OAuth2: Sendable, Hashable {
  /// How the client asks for an access token.
  public enum Grant: String, Sendable, Hashable, CaseIterable {
    /// The client's own credentials (RFC 6749 §4.4).
    case clientCredentials = "client_credentials"
    /// A refresh token a person's authorisation gave (RFC 6749 §6); a server that rotates it
    /// answers each refresh with a new one, which dray keeps in the job's database.
    case refreshToken = "refresh_token"
  }

  /// How the client proves who it is to the token endpoint.
  public enum ClientAuth: String, Sendable, Hashable, CaseIterable {
    /// `Authorization: Basic` of the form-encoded id and secret (RFC 6749 §2.3.1).
    case basic
    /// `client_id` and `client_secret` among the form fields (RFC 6749 §2.3.1, allowed
    /// but not recommended).
    case body
  }

  /// The token endpoint: an `http://` or `https://` address.
  public var tokenURL: String
  public var grant: Grant
  public var clientID: String
  /// Nil for a public client (RFC 6749 §2.1), which sends only its `client_id`.
  public var clientSecret: String?
  /// The manifest's refresh token (`refresh_token` grant): the first one only; once the
  /// server rotates it, the one kept in the job's database is used instead, until the
  /// manifest's changes.
  public var refreshToken: String?
  /// Space-separated scopes asked for (RFC 6749 §3.3); nil to ask for none.
  public var scope: String?
  public var clientAuth: ClientAuth

  public init(
    tokenURL: String, grant: Grant, clientID: String, clientSecret: String? = nil, refreshToken: String? = nil,
    scope: String? = nil, clientAuth: ClientAuth = .basic
  ) {
    self.tokenURL = tokenURL
    self.grant = grant
    self.clientID = clientID
    self.clientSecret = clientSecret
    self.refreshToken = refreshToken
    self.scope = scope
    self.clientAuth = clientAuth
  }

  /// What the steps that share one token have in common: `token_url` and `client_id`, as
  /// a hex SHA-256 (also the key of the refresh token kept in the job's database).
  public var key: String { SHA256.hex(tokenURL + "\n" + clientID) }

  /// The hex SHA-256 of the manifest's refresh token, kept beside a rotated one: a
  /// manifest token whose hash differs from the one kept was authorised again, and
  /// replaces the kept token.
  public var refreshTokenHash: String? { refreshToken.map { SHA256.hex($0) } }

  /// The `Authorization: Basic` credentials of `client_auth: basic`: id and secret each
  /// form-encoded, then joined by `:` (RFC 6749 §2.3.1).
  public var basicCredentials: String {
    "Basic " + Base64.encode(Array((Redactor.percentEncoded(clientID) + ":" + Redactor.percentEncoded(clientSecret ?? "")).utf8))
  }
}
