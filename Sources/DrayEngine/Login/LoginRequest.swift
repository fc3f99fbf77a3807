internal import DrayJSON
internal import DrayModel
internal import DrayTransport
internal import Foundation

/// One request to an `auth.login` endpoint (docs/auth.md, "Login flows"): the body `POST`ed
/// as JSON or a form, and the session token (and its life) read from the JSON answer.
struct LoginRequest {
  let settings: Login
  let onSecret: @Sendable (String) -> Void

  /// Sends the login under the step's retry policy (a 5xx, a 429 or a lost connection is
  /// retried; a refusal is not) and reads its answer.
  /// - Throws: `LoginError`, `TransportError`.
  func fetch(_ caller: TokenSession.Caller) throws -> TokenSession.Fetched {
    var headers = HTTPHeaders()
    headers.set("Accept", "application/json")
    let body: [UInt8]
    switch settings.body {
    case .json(let value):
      headers.set("Content-Type", "application/json")
      body = Array(value.json.utf8)
    case .form(let fields):
      headers.set("Content-Type", "application/x-www-form-urlencoded")
      body = Array(QueryItem.encode(fields).utf8)
    }
    // A login changes nothing on the server but its sessions: safe to send again.
    var request = HTTPRequest(
      method: .post, url: settings.url, headers: headers, body: .bytes(body), timeouts: caller.timeouts, tls: caller.tls,
      repeatable: true)
    // The body is the user's credentials: never sent on to another origin.
    request.secretBody = "login.url"
    // A login turned into a GET would reach another endpoint without the credentials.
    request.keepsMethod = true
    let client = HTTPClient(cancellation: caller.cancellation)
    let runner = RetryRunner(policy: caller.retry, cancellation: caller.cancellation, budget: caller.budget)
    let sink = MemorySink(limit: 1 << 20)
    let url = HTTPClient.displayURL(settings.url)
    let response = try runner.run(
      call: "sign-in",
      { _ in
        let response = try client.perform(request, sink: sink)
        guard (200..<300).contains(response.status) else {
          if LoginError.refusals.contains(response.status) {
            throw LoginError.refused(status: response.status, url: url, said: HTTPStatusError.excerpt(of: response, limit: 300) ?? "")
          }
          throw TransportError.httpStatus(StepRunner.statusError(response, url: url))
        }
        return response
      },
      classify: { error in
        guard let transport = error as? TransportError, transport.isTransient else { return .fail(reason: nil) }
        return .retry
      }, record: caller.record)
    return try LoginRequest.read(response, sink.bytes, settings: settings, onSecret: onSecret, log: caller.log)
  }

  /// Reads a 2xx login answer: the token at `settings.token`, passed to `onSecret` before
  /// anything else, and the seconds at `settings.expiresIn`.
  /// - Throws: `LoginError.badAnswer` for a body that is not JSON (an HTML page), no text
  ///   token at the pointer, or an `expires_in` that is not a number of seconds of at least 1.
  static func read(
    _ response: HTTPResponse, _ body: [UInt8], settings: Login, onSecret: (String) -> Void, log: (String) -> Void
  ) throws -> TokenSession.Fetched {
    let url = HTTPClient.displayURL(settings.url)
    let place = "(HTTP \(response.status), Content-Type: \(response.headers["Content-Type"] ?? "none"))"
    guard let json = try? JSONValue(parsing: body) else {
      let html = String(decoding: body.prefix(200), as: UTF8.self).lowercased().contains("<html")
      throw LoginError.badAnswer(
        url: url,
        detail: "the login answer is \(html ? "an HTML page" : "not JSON") \(place); check login.url: it must be the API's "
          + "login endpoint, which answers JSON, not a sign-in page for people")
    }
    guard let found = settings.token.resolve(in: json), found != .null else {
      var keys = ""
      if case .object(let pairs) = json { keys = " (its keys: " + pairs.prefix(12).map(\.key).joined(separator: ", ") + ")" }
      throw LoginError.badAnswer(
        url: url,
        detail: "the login answer has nothing at \(settings.token.description)\(keys) \(place); check login.token: "
          + "a JSON Pointer (RFC 6901) to the session token in the answer")
    }
    // A number is taken as its text: some APIs hand out numeric session ids.
    let text: String? =
      switch found {
      case .string(let s): s
      case .integer, .number: found.json
      default: nil
      }
    guard let token = text, !token.isEmpty else {
      throw LoginError.badAnswer(
        url: url,
        detail: "the login answer's value at \(settings.token.description) is \(describe(found)), not a token's text; "
          + "check login.token: a JSON Pointer to the session token in the answer")
    }
    onSecret(token)
    // The token goes into a header as it is: a line break in it would add header fields
    // to every request of the step (header injection).
    guard HTTPHeader.isTokenText(token) else {
      throw LoginError.badAnswer(
        url: url,
        detail: "the login answer's token at \(settings.token.description) holds a space, a line break or another character "
          + "a header cannot carry as it is (a token is visible ASCII, RFC 6750 §2.1) \(place); check login.token and the login endpoint")
    }
    guard let pointer = settings.expiresIn else { return TokenSession.Fetched(token: token, expiresIn: nil) }
    guard let value = pointer.resolve(in: json), value != .null else {
      log("login: the answer has no expires_in at \(pointer.description); the session token is used until the API answers 401")
      return TokenSession.Fetched(token: token, expiresIn: nil)
    }
    let seconds: Double? =
      switch value {
      case .integer(let i): Double(i)
      case .number(let n): Double(n)
      case .string(let s): Double(s.trimmingCharacters(in: .whitespaces))
      default: nil
      }
    guard let seconds else {
      throw LoginError.badAnswer(
        url: url,
        detail: "the login answer's expires_in at \(pointer.description) is \(describe(value)), not a number of seconds; "
          + "check login.expires_in: it points at the token's life in seconds (drop it to renew the token after a 401)")
    }
    guard !seconds.isNaN, seconds >= 0 else {
      throw LoginError.badAnswer(
        url: url,
        detail: "the login answer's expires_in at \(pointer.description) is \(describe(value)), "
          + "\(seconds.isNaN ? "not a number of seconds" : "a negative number of seconds: a token's life cannot be below 0"); "
          + "check login.expires_in: it points at the token's life in seconds")
    }
    guard seconds >= 1 else {
      throw LoginError.badAnswer(
        url: url,
        detail: "the login answer's expires_in at \(pointer.description) is \(PrintableText.oneLine(value.json)): a token that "
          + "lives less than a second cannot be used; check login.expires_in: it points at the token's life in seconds")
    }
    guard seconds <= TokenSession.longestLifetime else {
      return TokenSession.Fetched(token: token, expiresIn: nil, statedLifetime: PrintableText.excerpt(value.json))
    }
    return TokenSession.Fetched(token: token, expiresIn: seconds)
  }

  /// A JSON value named by its kind, with a short scalar quoted (never a long text, which
  /// may be the token itself; a number or a text at the token's place is taken as the token,
  /// and never shown).
  static func describe(_ value: JSONValue) -> String {
    switch value {
    case .object: "an object"
    case .array: "a list"
    case .bool(let b): "\(b)"
    case .null: "null"
    case .integer, .number: "the number \(value.json)"
    case .string(let s): s.isEmpty ? "an empty text" : s.count <= 32 ? "the text \(PrintableText.oneLine(value.json))" : "a text"
    }
  }
}

/// Why a login's session token could not be had or was refused, each with what to do
/// (docs/auth.md, "Login flows").
enum LoginError: ReportableError, Sendable {
  /// The login endpoint refused the login (`refusals`): the server's words.
  case refused(status: Int, url: String, said: String)
  /// A 2xx answer without a usable token.
  case badAnswer(url: String, detail: String)
  /// A request was refused with 401 again right after a fresh session token.
  case freshRefused(HTTPStatusError)

  /// The statuses of a login that sending again cannot change: wrong credentials (400,
  /// 401, 403, 422) or a wrong address (404, 405).
  static let refusals: Set<Int> = [400, 401, 403, 404, 405, 422]

  var code: String {
    switch self {
    case .refused: "login_refused"
    case .badAnswer: "login_bad_answer"
    case .freshRefused: "auth_failed"
    }
  }

  var httpStatus: Int? {
    switch self {
    case .refused(let status, _, _): status
    case .badAnswer: nil
    case .freshRefused(let e): e.status
    }
  }

  var description: String {
    switch self {
    case .refused(let status, let url, let said):
      let advice =
        [404, 405].contains(status)
        ? "check login.url: it must be the API's login endpoint, which takes a POST"
        : "check the user and password in login.body, and that its field names and form (json or form) are those the API expects"
      return "the login endpoint \(url) answered HTTP \(status)" + (said.isEmpty ? "" : " (\(said))") + "; " + advice
    case .badAnswer(let url, let detail):
      return "unexpected answer from the login endpoint \(url): \(detail)"
    case .freshRefused(let e):
      return "the server refused a fresh session token from login: \(e); check that the user may read this API"
    }
  }
}
