internal import DrayModel

// How an `http` step reaches an API: its sign-ins (`auth.oauth2`, `auth.api_key`,
// `auth.login`) and its request budget (`rate_limit`).
extension ManifestSchema {
  /// An `http` step's `auth.oauth2` (docs/auth.md).
  public static let httpOAuth2: [Key] = [
    Key("token_url", .string(nonEmpty: true), required: true, "The token endpoint: an http:// or https:// address."),
    Key(
      "grant", .choice(OAuth2.Grant.allCases.map(\.rawValue)), required: true,
      "client_credentials (the client's own credentials) or refresh_token (a person's authorisation)."),
    Key("client_id", .string(nonEmpty: true), required: true, "The client's id."),
    Key("client_secret", .string(nonEmpty: true), "The client's secret; masked in every output. Required by client_credentials."),
    Key(
      "refresh_token", .string(nonEmpty: true),
      "The first refresh token (grant: refresh_token); a rotated one is kept in the job's database and used instead."),
    Key("scope", .string(nonEmpty: true), "Space-separated scopes to ask for."),
    Key(
      "client_auth", .choice(OAuth2.ClientAuth.allCases.map(\.rawValue)), default: .string(OAuth2.ClientAuth.basic.rawValue),
      "How the client proves who it is: basic (Authorization header) or body (form fields)."),
  ]

  /// An `http` step's `auth.api_key` (docs/auth.md).
  public static let httpAPIKey: [Key] = [
    Key("header", .string(nonEmpty: true), "The request header that carries the key (X-API-Key); give this or 'query'."),
    Key("query", .string(nonEmpty: true), "The query parameter that carries the key (api_key); give this or 'header'."),
    Key("value", .string(nonEmpty: true), required: true, "The key; masked in every output."),
  ]

  /// An `http` step's `auth.login` (docs/auth.md, "Login flows").
  public static let httpLogin: [Key] = [
    Key("url", .string(nonEmpty: true), required: true, "The login endpoint, sent a POST: an http:// or https:// address."),
    Key(
      "body", .mapping(httpBody, rules: [.exactlyOne(["json", "form"])]), required: true,
      "The user and password, sent as json or form; fields named like a password or secret are masked in every output."),
    Key("token", .string(nonEmpty: false), required: true, "JSON Pointer to the session token in the login's answer, such as /token."),
    Key("header", .string(nonEmpty: true), default: .string(Login.defaultHeader), "The request header that carries the token."),
    Key(
      "prefix", .string(nonEmpty: false), default: .string(Login.defaultPrefix),
      "Written before the token in the header; \"\" for the bare token."),
    Key(
      "expires_in", .string(nonEmpty: true),
      "JSON Pointer to the token's life in seconds in the answer; without it, the token is renewed after a 401."),
  ]

  /// An `http` step's `rate_limit` (docs/http.md, "Request budget").
  public static let httpRateLimit: [Key] = [
    Key("requests", .integer(1...1_000_000), required: true, "At most this many requests to the host in any window of 'per'."),
    Key("per", .duration(minimum: .milliseconds(1)), required: true, "The window's length, such as 1s or 1m."),
  ]
}
