/// An `http` step's `auth.login`: an API that hands out a session token for a user and
/// password (docs/auth.md, "Login flows").
///
/// ```yaml
/// auth:
///   login:
///     url: https://api.example.com/v1/login
///     body: { json: { username: "${API_USER}", password: "${API_PASSWORD}" } }   # or form: {...}
///     token: /data/token          # where the session token is in the answer
///     header: Authorization       # the header that carries it (the default)
///     prefix: "Bearer "           # written before it (the default)
///     expires_in: /data/expires   # where its life in seconds is; none: renewed after a 401
/// ```
///
/// The body is sent as a `POST` to `url`; the answer is a JSON document holding the token.
/// Every step, parallel member and partition whose settings have the same `key` (the same
/// `url` and user, the body's fields that hold no secret) shares one session token in a run.
public struct Login: Sendable, Hashable {
  /// The login endpoint: an `http://` or `https://` address, sent a `POST`.
  public var url: String
  /// The credentials: `json` (`application/json`) or `form` (`application/x-www-form-urlencoded`).
  public var body: HTTPStep.Body
  /// Where the session token is in the JSON answer: a JSON Pointer (RFC 6901) to a string.
  public var token: JSONPointer
  /// The request header that carries the token on every request of the step.
  public var header: String
  /// Written before the token in `header` (`Bearer `; empty for the bare token).
  public var prefix: String
  /// Where the token's life in seconds is in the answer; nil: it is used until the API
  /// answers 401.
  public var expiresIn: JSONPointer?

  /// `header`'s default.
  public static let defaultHeader = "Authorization"
  /// `prefix`'s default: RFC 6750's `Bearer `.
  public static let defaultPrefix = "Bearer "

  public init(
    url: String, body: HTTPStep.Body, token: JSONPointer, header: String = Login.defaultHeader, prefix: String = Login.defaultPrefix,
    expiresIn: JSONPointer? = nil
  ) {
    self.url = url
    self.body = body
    self.token = token
    self.header = header
    self.prefix = prefix
    self.expiresIn = expiresIn
  }

  /// Whether a body field's value is a secret, by its name: the rule every credential name
  /// follows (`CredentialName.isCredential`: `password`, `passwd`, `passphrase`,
  /// `user_pass`, `pwd`, `client_secret`, `api_token`, `access_key`, ...). Such values are
  /// masked in every output and left out of the fingerprint and of `key`.
  public static func isSecretField(_ name: String) -> Bool { CredentialName.isCredential(name) }

  /// The body as JSON with the values of secret fields (`isSecretField`, at any depth of a
  /// JSON body) as `***`: what identifies the user, for `key` and the step's fingerprint.
  public var maskedBody: JSONValue {
    func masking(_ value: JSONValue) -> JSONValue {
      switch value {
      case .object(let pairs): .object(pairs.map { ($0.key, Login.isSecretField($0.key) ? .string(Redactor.mask) : masking($0.value)) })
      case .array(let items): .array(items.map(masking))
      default: value
      }
    }
    switch body {
    case .json(let value):
      return .object([("json", masking(value))])
    case .form(let fields):
      let items = fields.map { JSONValue.array([.string($0.name), .string(Login.isSecretField($0.name) ? Redactor.mask : $0.value)]) }
      return .object([("form", .array(items))])
    }
  }

  /// The secret values of the body (`isSecretField`), to be masked.
  public var secrets: [String] {
    func collect(_ value: JSONValue, secret: Bool) -> [String] {
      switch value {
      case .object(let pairs): pairs.flatMap { collect($0.value, secret: secret || Login.isSecretField($0.key)) }
      case .array(let items): items.flatMap { collect($0, secret: secret) }
      case .string(let text): secret ? [text] : []
      case .integer(let i): secret ? [String(i)] : []
      case .number(let n): secret ? [n] : []
      default: []
      }
    }
    switch body {
    case .json(let value): return collect(value, secret: false)
    case .form(let fields): return fields.filter { Login.isSecretField($0.name) }.map(\.value)
    }
  }

  /// What the steps that share one session token have in common: `url` and the user (the
  /// body without its secrets), as a hex SHA-256.
  public var key: String { SHA256.hex("login\n" + url + "\n" + maskedBody.canonicalJSON) }
}
