internal import DrayJSON
public import DrayModel
public import DrayTransport
internal import Foundation
internal import Synchronization

/// The sign-in state shared by every call of a run, across threads.
///
/// Holds the platform settings, the credentials and the current token. A 401 from any call
/// leads to one new token, shared by every call that met the same stale token
/// (platform-api.md §1, our rule).
///
/// Every token obtained is passed to `onToken`, so that the run can mask it in logs and
/// reports like any other secret.
public final class PlatformSession: Sendable {
  public let settings: PlatformSettings
  let credentials: Credentials
  private let onToken: (@Sendable (String) -> Void)?
  private let state = Mutex<State>(State())
  /// Serialises sign-ins so that concurrent 401s share one.
  private let signIn = Mutex<Void>(())

  struct State {
    var token: String?
    var signIns = 0
  }

  /// - Parameters:
  ///   - onToken: called with every new token (for example to register it with the run's
  ///     `Redactor`), during the sign-in; it must not call back into the session.
  public init(settings: PlatformSettings, credentials: Credentials, onToken: (@Sendable (String) -> Void)? = nil) {
    self.settings = settings
    self.credentials = credentials
    self.onToken = onToken
  }

  /// Sign-ins so far (the first, plus re-authentications).
  public var signInCount: Int { state.withLock { $0.signIns } }

  /// The URL of an API path: `<host>api/<api_version>/<path>`.
  public func url(_ path: String) -> String {
    settings.host + "api/\(settings.apiVersion)/" + path
  }

  /// The current token, signing in first when there is none.
  func token(client: HTTPClient, runner: RetryRunner, record: (Attempt) -> Void) throws -> String {
    if let token = state.withLock({ $0.token }) { return token }
    return try renew(stale: nil, client: client, runner: runner, record: record)
  }

  /// A new token, unless another call already replaced `stale`.
  func renew(stale: String?, client: HTTPClient, runner: RetryRunner, record: (Attempt) -> Void) throws -> String {
    try signIn.withLock { _ in
      if let current = state.withLock({ $0.token }), current != stale { return current }
      let token = try obtainToken(client: client, runner: runner, record: record)
      onToken?(token)
      state.withLock {
        $0.token = token
        $0.signIns += 1
      }
      return token
    }
  }

  /// `POST auth/jwt/obtain/` with the form fields of platform-api.md §1.
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
    let request = HTTPRequest(
      method: .post, url: url("auth/jwt/obtain/"), headers: headers, body: .bytes(Array(body.utf8)),
      timeouts: settings.timeouts, tls: settings.tls)
    let sink = MemorySink(limit: 1 << 20)
    do {
      let response = try runner.run(
        { _ in
          let response = try client.perform(request, sink: sink)
          guard (200..<300).contains(response.status) else {
            throw TransportError.httpStatus(PlatformError.statusError(response, url: request.url))
          }
          return response
        }, record: record)
      _ = response
    } catch TransportError.httpStatus(let status) where status.status == 401 || status.status == 400 || status.status == 403 {
      throw PlatformError.signInFailed(status)
    }
    guard let json = try? JSONValue(parsing: sink.bytes), let token = json["token"]?.stringValue, !token.isEmpty else {
      throw PlatformError.badAnswer(url: request.url, detail: "the token answer has no 'token'")
    }
    return token
  }
}

/// Errors of the platform protocol, above HTTP.
public enum PlatformError: Error, Sendable, CustomStringConvertible {
  /// The token request was refused.
  case signInFailed(HTTPStatusError)
  /// A call was refused with 401 again right after a new token.
  case unauthorized(HTTPStatusError)
  /// An answer did not have the documented shape.
  case badAnswer(url: String, detail: String)

  public var code: String {
    switch self {
    case .signInFailed: "auth_failed"
    case .unauthorized: "auth_failed"
    case .badAnswer: "bad_answer"
    }
  }

  public var description: String {
    switch self {
    case .signInFailed(let e):
      "sign-in failed: \(e); check auth.username, auth.password, platform.environment and platform.project"
    case .unauthorized(let e):
      "the server refused a fresh token: \(e); check that the user may read this resource"
    case .badAnswer(let url, let detail):
      "unexpected answer from \(url): \(detail)"
    }
  }

  /// The error for a non-2xx answer, reading the platform's error body:
  /// `{"code", "description", "original_descriptions"}` (or `original_description`).
  public static func statusError(_ response: HTTPResponse, url: String) -> HTTPStatusError {
    var error = HTTPStatusError(status: response.status, url: url)
    if let json = try? JSONValue(parsing: response.errorBody), case .object = json {
      error.serverDescription = json["description"]?.stringValue
      let originals = json["original_descriptions"] ?? json["original_description"]
      switch originals {
      case .array(let items)?: error.originalDescriptions = items.compactMap(\.stringValue)
      case .string(let s)?: error.originalDescriptions = [s]
      default: break
      }
    }
    if error.serverDescription == nil {
      let text = String(decoding: response.errorBody.prefix(300), as: UTF8.self)
      error.bodyExcerpt = text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    if let value = response.headers["Retry-After"] { error.retryAfter = RetryRunner.retryAfterSeconds(value) }
    return error
  }
}
