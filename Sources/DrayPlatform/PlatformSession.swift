internal import DrayJSON
public import DrayModel
public import DrayTransport
internal import Foundation
internal import Synchronization

/// The sign-in state shared by every call of a run, across threads.
///
/// Holds the platform settings, the credentials and the current token. The re-auth rule of
/// platform-api.md §1 (ours) lives here and only here:
///
/// - A token is obtained on the first call and kept for every later one.
/// - When the token's JWT payload has `exp`, the token is renewed before use once less than
///   a tenth of its lifetime (at most 30 s) is left. The lifetime is `exp - iat` counted
///   from when the token arrived, so a server clock that differs from ours does not matter;
///   without `iat`, `exp` is compared with our clock. A lifetime over ten years (an `exp`
///   of `1e300`) counts as no `exp`.
/// - A 401 from any call renews the token once; every call that met the same stale token
///   shares that one sign-in (`renew(stale:)`), then repeats once. Never a loop.
///
/// Every token obtained is passed to `onToken`, so that the run can mask it in logs and
/// reports like any other secret.
public final class PlatformSession: Sendable {
  public let settings: PlatformSettings
  let credentials: Credentials
  private let onToken: (@Sendable (String) -> Void)?
  private let state = Mutex<State>(State())
  /// Serialises sign-ins so that concurrent renewals share one.
  private let signIn = Mutex<Void>(())
  /// The time a token arrives and is checked against its renewal time.
  private let now: @Sendable () -> ContinuousClock.Instant

  struct State {
    var token: String?
    /// When to renew before use, from the token's `exp`.
    var renewAt: ContinuousClock.Instant?
    var signIns = 0
  }

  /// - Parameters:
  ///   - onToken: called with every new token (for example to register it with the run's
  ///     `Redactor`), during the sign-in; it must not call back into the session.
  ///   - now: the monotonic clock that decides when a token is due for renewal; tests pass
  ///     one they move by hand.
  public init(
    settings: PlatformSettings, credentials: Credentials, onToken: (@Sendable (String) -> Void)? = nil,
    now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
  ) {
    self.settings = settings
    self.credentials = credentials
    self.onToken = onToken
    self.now = now
  }

  /// Sign-ins so far (the first, plus re-authentications).
  public var signInCount: Int { state.withLock { $0.signIns } }

  /// The URL of an API path: `<host>api/<api_version>/<path>`.
  public func url(_ path: String) -> String {
    settings.host + "api/\(settings.apiVersion)/" + path
  }

  /// The current token, signing in first when there is none or when it is about to expire.
  /// - Throws: `PlatformError.signInFailed`, `TransportError`.
  func token(client: HTTPClient, runner: RetryRunner, record: (Attempt) -> Void) throws -> String {
    let (token, renewAt) = state.withLock { ($0.token, $0.renewAt) }
    if let token {
      guard let renewAt, now() >= renewAt else { return token }
      return try renew(stale: token, because: "the token expires soon (exp)", client: client, runner: runner, record: record)
    }
    return try renew(stale: nil, because: nil, client: client, runner: runner, record: record)
  }

  /// A new token, unless another call already replaced `stale`.
  ///
  /// Records every attempt of the sign-in (each is a request the server received), a
  /// renewal's successful one with `because` in its message.
  /// - Throws: `PlatformError.signInFailed`, `TransportError`.
  func renew(stale: String?, because: String?, client: HTTPClient, runner: RetryRunner, record: (Attempt) -> Void) throws -> String {
    try signIn.withLock { _ in
      if let current = state.withLock({ $0.token }), current != stale { return current }
      let token = try obtainToken(client: client, runner: runner) { attempt in
        guard attempt.outcome == .ok, stale != nil else { return record(attempt) }
        var renewal = attempt
        renewal.message = "signed in again: \(because ?? "the token was replaced")"
        record(renewal)
      }
      let renewAt = PlatformSession.renewalTime(token: token, receivedAt: now(), wallClock: Date())
      onToken?(token)
      state.withLock {
        $0.token = token
        $0.renewAt = renewAt
        $0.signIns += 1
      }
      return token
    }
  }

  /// Longest token lifetime renewed by its `exp`: ten years. A longer one (`exp` of `1e19`,
  /// `1e300`, `9223372036854775807`) is renewed only by a 401, like a token without `exp`.
  static let longestRenewedLifetime: Double = 10 * 365 * 24 * 3600

  /// When to renew `token` before use, from its JWT payload's `exp` (and `iat`), or nil
  /// when it has no readable `exp`, is already past it, or lives longer than
  /// `longestRenewedLifetime` (then only a 401 renews it).
  static func renewalTime(token: String, receivedAt: ContinuousClock.Instant, wallClock: Date) -> ContinuousClock.Instant? {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3 else { return nil }
    var base64 = String(parts[1]).replacing("-", with: "+").replacing("_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    guard let data = Data(base64Encoded: base64), let payload = try? JSONValue(parsing: Array(data)),
      let exp = payload["exp"].flatMap(PlatformSession.seconds)
    else { return nil }
    let lifetime = payload["iat"].flatMap(PlatformSession.seconds).map { exp - $0 } ?? (exp - wallClock.timeIntervalSince1970)
    // `lifetime` may be anything a server writes: huge, infinite (`1e400`), NaN (`inf - inf`).
    guard lifetime > 0, lifetime <= longestRenewedLifetime else { return nil }
    let margin: Double = min(30, lifetime / 10)
    return receivedAt + Duration.milliseconds(Int64((lifetime - margin) * 1000))
  }

  private static func seconds(_ value: JSONValue) -> Double? {
    switch value {
    case .integer(let i): Double(i)
    case .number(let n): Double(n)
    default: nil
    }
  }

  /// `POST auth/jwt/obtain/` with the form fields of platform-api.md §1. Retried like any
  /// call (it changes nothing on the server but the device registration, which repeats
  /// harmlessly); a 400, 401 or 403 fails at once.
  private func obtainToken(client: HTTPClient, runner: RetryRunner, record: (Attempt) -> Void) throws -> String {
    var fields = [
      ("environment", settings.environment), ("project", settings.project),
      ("username", credentials.username), ("password", credentials.password), ("device_id", settings.device),
    ]
    if let application = settings.application { fields.append(("application", application)) }
    let body = fields.map { "\($0.0)=\(Redactor.percentEncoded($0.1))" }.joined(separator: "&")
    var headers = HTTPHeaders(settings.headers)
    headers.set("Content-Type", "application/x-www-form-urlencoded")
    headers.set("X-Device-Id", settings.device)
    var request = HTTPRequest(
      method: .post, url: url("auth/jwt/obtain/"), headers: headers, body: .bytes(Array(body.utf8)),
      timeouts: settings.timeouts, tls: settings.tls, repeatable: true)
    // The body is the user name and password: never sent on to another origin.
    request.secretBody = "platform.host"
    let sink = MemorySink(limit: 1 << 20)
    let response: HTTPResponse
    do {
      response = try runner.run(
        call: "sign-in",
        { _ in
          let response = try client.perform(request, sink: sink)
          try PlatformClient.requireWholeJSON(response, sink.bytes)
          guard (200..<300).contains(response.status) else {
            let error = PlatformError.statusError(response, url: request.url)
            throw TransportError.httpStatus(error.redacted(by: Redactor([credentials.password])))
          }
          return response
        }, record: record)
    } catch TransportError.httpStatus(let status) where status.status == 401 || status.status == 400 || status.status == 403 {
      throw PlatformError.signInFailed(status)
    }
    let json: JSONValue
    do {
      json = try JSONValue(parsing: sink.bytes)
    } catch {
      // The parser's own message is left out: it quotes the text, which may hold a token.
      throw PlatformError.badAnswer(
        url: HTTPClient.displayURL(request.url),
        detail: "the token answer is not valid JSON\(error.isTooDeep ? " (\(error.message))" : "") "
          + "(HTTP \(response.status), Content-Type: \(response.headers["Content-Type"] ?? "none")); "
          + "check platform.host: it must be the platform's address, not a web page or another service"
      )
    }
    guard let token = json["token"]?.stringValue, !token.isEmpty else {
      // A token of the wrong type is named by its kind, never shown (it is the secret).
      let kind: String? =
        switch json["token"] {
        case .integer?, .number?: "a number"
        case .bool?: "a boolean"
        case .array?: "a list"
        case .object?: "an object"
        case .string?: "an empty string"
        default: nil
        }
      throw PlatformError.badAnswer(
        url: HTTPClient.displayURL(request.url),
        detail: kind.map { "the token answer's 'token' is \($0); the platform sends it as a string (a JWT, docs/platform-api.md §1)" }
          ?? "the token answer has no 'token'")
    }
    // The token goes into the Authorization header as it is (header injection otherwise).
    guard HTTPHeader.isTokenText(token) else {
      throw PlatformError.badAnswer(
        url: HTTPClient.displayURL(request.url),
        detail: "the token answer's 'token' holds a space, a line break or another character a header cannot carry")
    }
    return token
  }
}

/// Errors of the platform protocol, above HTTP.
public enum PlatformError: ReportableError, Sendable {
  /// The token request was refused.
  case signInFailed(HTTPStatusError)
  /// A call was refused with 401; a new token was obtained and the call is repeated once.
  /// Seen only in attempt records, never thrown out of a call.
  case reauthenticated(HTTPStatusError)
  /// A call was refused with 401 again right after a new token.
  case unauthorized(HTTPStatusError)
  /// An answer did not have the documented shape.
  case badAnswer(url: String, detail: String)

  public var code: String {
    switch self {
    case .signInFailed: "auth_failed"
    case .reauthenticated: "http_401"
    case .unauthorized: "auth_failed"
    case .badAnswer: "bad_answer"
    }
  }

  public var httpStatus: Int? {
    switch self {
    case .signInFailed(let e), .reauthenticated(let e), .unauthorized(let e): e.status
    case .badAnswer: nil
    }
  }

  public var description: String {
    switch self {
    case .signInFailed(let e):
      "sign-in failed: \(e); check auth.username, auth.password, platform.environment and platform.project"
    case .reauthenticated(let e):
      "\(e); the token was refused, so dray signs in again and repeats the call once"
    case .unauthorized(let e):
      "the server refused a fresh token: \(e); check that the user may read this resource"
    case .badAnswer(let url, let detail):
      "unexpected answer from \(url): \(detail)"
    }
  }

  /// The error for a non-2xx answer, reading the platform's error body:
  /// `{"code", "description", "original_descriptions"}` (or `original_description`).
  public static func statusError(_ response: HTTPResponse, url: String) -> HTTPStatusError {
    var error = HTTPStatusError(status: response.status, url: HTTPClient.displayURL(url))
    if let json = try? JSONValue(parsing: response.errorBody), case .object = json {
      error.serverDescription = json["description"]?.stringValue
      let originals = json["original_descriptions"] ?? json["original_description"]
      switch originals {
      case .array(let items)?: error.originalDescriptions = items.compactMap(\.stringValue)
      case .string(let s)?: error.originalDescriptions = [s]
      default: break
      }
    }
    if error.serverDescription == nil { error.bodyExcerpt = HTTPStatusError.excerpt(of: response, limit: 300) }
    error.readRetryAfter(response.headers["Retry-After"])
    return error
  }
}
