internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import DrayTransport

/// Why an OAuth 2.0 token could not be obtained or was refused, each with what to do
/// (docs/auth.md, "Errors").
enum OAuth2Error: ReportableError, Sendable {
  /// The token endpoint answered an error (RFC 6749 §5.2): `error`, `error_description`.
  case endpoint(status: Int, url: String, error: String, description: String?, grant: OAuth2.Grant, kept: String?)
  /// A 2xx answer without the shape of RFC 6749 §5.1.
  case badAnswer(url: String, detail: String)
  /// A request was refused with 401 again right after a fresh token.
  case refused(HTTPStatusError)

  var code: String {
    switch self {
    case .endpoint(_, _, let error, _, _, _): "oauth2_\(error.filter { $0.isLetter || $0 == "_" }.prefix(40))"
    case .badAnswer: "oauth2_bad_answer"
    case .refused: "auth_failed"
    }
  }

  var httpStatus: Int? {
    switch self {
    case .endpoint(let status, _, _, _, _, _): status
    case .badAnswer: nil
    case .refused(let e): e.status
    }
  }

  var description: String {
    switch self {
    case .endpoint(let status, let url, let error, let text, let grant, let kept):
      let said = "the token endpoint \(url) answered HTTP \(status) \(error)" + (text.map { " (\($0))" } ?? "")
      return said + "; " + OAuth2Error.advice(error, grant: grant, kept: kept)
    case .badAnswer(let url, let detail):
      return "unexpected answer from the token endpoint \(url): \(detail)"
    case .refused(let e):
      return "the server refused a fresh OAuth2 access token: \(e); check the client's permissions and scope"
    }
  }

  /// What to do about each error code of RFC 6749 §5.2.
  static func advice(_ error: String, grant: OAuth2.Grant, kept: String?) -> String {
    switch error {
    case "invalid_client":
      return
        "the client was not recognised: check client_id and client_secret, and client_auth (basic or body: the server may accept only one)"
    case "invalid_grant" where grant == .refreshToken:
      let which = kept.map { "the refresh token dray kept on \($0)" } ?? "the manifest's refresh_token"
      return "\(which) was refused (expired, revoked, or already used); authorise dray again and put the new refresh token "
        + "in refresh_token (it replaces the kept one)"
    case "invalid_grant":
      return "the grant was refused; check grant and the client's settings at the server"
    case "unauthorized_client":
      return "this client may not use grant: \(grant.rawValue); check grant, or allow it in the client's settings at the server"
    case "unsupported_grant_type":
      return "the server does not support grant: \(grant.rawValue); check grant"
    case "invalid_scope":
      return "check scope: the server refused the scopes asked for"
    case "invalid_request":
      return "the server found the token request malformed; check grant, scope and client_auth"
    default:
      return "check the step's auth.oauth2 settings and the server's documentation"
    }
  }

  /// The error of a non-2xx token answer whose body is an RFC 6749 §5.2 error; nil for
  /// another (a 5xx page), which stays a status error and may be retried.
  static func endpoint(_ response: HTTPResponse, settings: OAuth2) -> OAuth2Error? {
    guard [400, 401, 403].contains(response.status), let json = try? JSONValue(parsing: response.errorBody),
      let error = json["error"]?.stringValue
    else { return nil }
    // One line of the server's words: no control characters.
    let description = json["error_description"]?.stringValue.map { text in
      String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) }.prefix(300))
    }
    return .endpoint(
      status: response.status, url: HTTPClient.displayURL(settings.tokenURL), error: String(error.prefix(60)),
      description: description, grant: settings.grant, kept: nil)
  }

  /// The same error, naming the kept token that was presented.
  func presenting(kept: KeptToken?) -> OAuth2Error {
    guard case .endpoint(let status, let url, let error, let text, let grant, _) = self, let kept else { return self }
    return .endpoint(status: status, url: url, error: error, description: text, grant: grant, kept: "\(kept.keptAt)")
  }
}
