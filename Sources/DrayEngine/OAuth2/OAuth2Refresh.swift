internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation

/// One token request to an OAuth 2.0 token endpoint (RFC 6749 §4.4.2, §6) and its answer
/// (§5.1, §5.2), and, for `grant: refresh_token`, the kept refresh token around it.
struct OAuth2Refresh {
  let settings: OAuth2
  let onSecret: @Sendable (String) -> Void

  /// A token answer (RFC 6749 §5.1).
  struct Answer {
    var accessToken: String
    /// A rotated refresh token; nil when the server kept the one sent.
    var refreshToken: String?
    /// Seconds the access token lives; nil when the answer did not say, or said more than
    /// `TokenSession.longestLifetime`.
    var expiresIn: Double?
    /// `expires_in` as the answer wrote it when it was over `TokenSession.longestLifetime`
    /// (taken as not expiring in practice); nil otherwise.
    var statedLifetime: String? = nil
  }

  /// A refresh under the database's lock: the refresh token presented is the one kept
  /// there (unless the manifest's changed since, `OAuth2.refreshTokenHash`), read inside
  /// the lock; a rotated one is committed before this returns, so before the access token
  /// is used. The only window left is between the server's answer and that commit.
  /// - Throws: `OAuth2Error`, `TransportError`, the database's errors.
  func refreshing(keeper: any TokenKeeper, _ caller: OAuth2Session.Caller) throws -> Answer {
    let manifestToken = settings.refreshToken ?? ""
    let manifestHash = settings.refreshTokenHash ?? ""
    return try keeper.locked(key: settings.key) { kept, keepToken in
      // A replay hands out the recording's fake tokens: it keeps none (docs/recordings.md).
      let replaying = Traffic.isReplaying
      func keep(_ token: KeptToken) throws { if !replaying { try keepToken(token) } }
      let usable = kept.flatMap { $0.manifestHash == manifestHash ? $0 : nil }
      if kept != nil && usable == nil {
        caller.log("oauth2: the manifest's refresh_token changed since one was kept; it replaces the kept one")
      }
      let presented = usable?.refreshToken ?? manifestToken
      onSecret(presented)
      let reply: Reply
      do {
        reply = try request(refreshToken: presented, caller)
      } catch let error as OAuth2Error {
        throw error.presenting(kept: usable)
      }
      // Kept even when the rest of the answer is refused (no access_token, a bad
      // expires_in): the server has rotated the token, and the one presented is spent.
      if let rotated = reply.rotated, rotated != presented {
        try keep(KeptToken(key: settings.key, refreshToken: rotated, manifestHash: manifestHash, keptAt: OAuth2Refresh.now()))
        CrashPoint.reach("token-kept")
        caller.log("oauth2: kept the rotated refresh token")
      } else if kept != nil && usable == nil {
        // The manifest's new token, not rotated: it replaces the kept one, which is stale.
        try keep(KeptToken(key: settings.key, refreshToken: presented, manifestHash: manifestHash, keptAt: OAuth2Refresh.now()))
      }
      return try reply.answer.get()
    }
  }

  /// A 2xx token answer: the rotated refresh token it holds, read first, and the answer
  /// as a whole, or why it is refused.
  struct Reply {
    var rotated: String?
    var answer: Result<Answer, any Error>
  }

  static func now() -> String { RunReport.rfc3339(Date()) }

  /// Sends one token request (`refreshToken` for `grant: refresh_token`) under the step's
  /// retry policy and reads its answer. A refresh whose request reached the server is not
  /// sent again: the server may have rotated the token already, and a second use of the
  /// old one would revoke it.
  /// - Throws: `OAuth2Error`, `TransportError`.
  func request(refreshToken: String?, _ caller: OAuth2Session.Caller) throws -> Reply {
    var fields = [QueryItem("grant_type", settings.grant.rawValue)]
    if let refreshToken { fields.append(QueryItem("refresh_token", refreshToken)) }
    if let scope = settings.scope { fields.append(QueryItem("scope", scope)) }
    var headers = HTTPHeaders()
    headers.set("Content-Type", "application/x-www-form-urlencoded")
    headers.set("Accept", "application/json")
    if settings.clientAuth == .basic, settings.clientSecret != nil {
      headers.set("Authorization", settings.basicCredentials)
    } else {
      // `client_auth: body`, or a public client (RFC 6749 §2.1, §3.2.1): its id in the body.
      fields.append(QueryItem("client_id", settings.clientID))
      if let secret = settings.clientSecret { fields.append(QueryItem("client_secret", secret)) }
    }
    let rotating = refreshToken != nil
    var request = HTTPRequest(
      method: .post, url: settings.tokenURL, headers: headers, body: .bytes(Array(QueryItem.encode(fields).utf8)),
      timeouts: caller.timeouts, tls: caller.tls, repeatable: !rotating)
    // A refresh token or a client secret is in the body: never sent on to another origin.
    request.secretBody = "oauth2.token_url"
    // A token request turned into a GET would reach another endpoint without its fields.
    request.keepsMethod = true
    let client = HTTPClient(cancellation: caller.cancellation)
    let runner = RetryRunner(policy: caller.retry, cancellation: caller.cancellation, budget: caller.budget)
    let sink = MemorySink(limit: 1 << 20)
    let response = try runner.run(
      call: "sign-in",
      { _ in
        let response = try client.perform(request, sink: sink)
        guard (200..<300).contains(response.status) else {
          if let error = OAuth2Error.endpoint(response, settings: settings) { throw error }
          throw TransportError.httpStatus(StepRunner.statusError(response, url: HTTPClient.displayURL(request.url)))
        }
        return response
      },
      classify: { error in
        guard let transport = error as? TransportError, transport.isTransient else { return .fail(reason: nil) }
        if !rotating || client.bytesSent == 0 { return .retry }
        if case .httpStatus(let status) = transport.underlying, [429, 503].contains(status.status) { return .retry }
        return .fail(
          reason: "not retried: the refresh may have reached the server, which may have rotated the refresh token already, "
            + "and sending the old one again would be refused")
      }, record: caller.record)
    let rotated = OAuth2Refresh.rotated(in: sink.bytes)
    if let rotated { onSecret(rotated) }
    let bytes = sink.bytes
    return Reply(
      rotated: rotated, answer: Result { try OAuth2Refresh.answer(response, bytes, url: settings.tokenURL, onSecret: onSecret) })
  }

  /// A JSON value's kind, as a message names a field of the wrong type: never the value,
  /// which may be the token.
  static func kind(of value: JSONValue) -> String {
    switch value {
    case .integer, .number: "a number"
    case .bool: "a boolean"
    case .array: "a list"
    case .object: "an object"
    case .null: "null"
    case .string: "a string"
    }
  }

  /// The non-empty `refresh_token` of a JSON object answer, or nil.
  static func rotated(in body: [UInt8]) -> String? {
    guard let json = try? JSONValue(parsing: body), let token = json["refresh_token"]?.stringValue, !token.isEmpty else { return nil }
    return token
  }

  /// Reads a 2xx token answer (RFC 6749 §5.1), passing each token to `onSecret` first.
  /// - Throws: `OAuth2Error.badAnswer` for a body that is not a JSON object, one without
  ///   `access_token` or with an empty one, an `access_token`, `token_type` or
  ///   `refresh_token` that is not a string (RFC 6749 §5.1; the message names its kind,
  ///   never its value), a `token_type` other than Bearer, or an `expires_in` that is not a
  ///   number of seconds of at least 1.
  static func answer(_ response: HTTPResponse, _ body: [UInt8], url: String, onSecret: (String) -> Void) throws -> Answer {
    let place = "(HTTP \(response.status), Content-Type: \(response.headers["Content-Type"] ?? "none"))"
    guard let json = try? JSONValue(parsing: body), case .object = json else {
      let html = String(decoding: body.prefix(200), as: UTF8.self).lowercased().contains("<html")
      throw OAuth2Error.badAnswer(
        url: url,
        detail: "the token answer is \(html ? "an HTML page" : "not a JSON object") \(place); "
          + "check token_url: it must be the token endpoint, not a sign-in page or another service")
    }
    // Learnt before anything else, so that no message below can print them: a token of the
    // wrong type too (`123456789`), as the text it would show as.
    for field in ["refresh_token", "access_token"] {
      switch json[field] {
      case .string(let text)?: onSecret(text)
      case .integer?, .number?, .bool?: json[field].map { onSecret($0.json) }
      default: break
      }
    }
    // An OpenID Connect ID token (a JWT many APIs take as a bearer credential).
    if let id = json["id_token"]?.stringValue, !id.isEmpty { onSecret(id) }
    for field in ["access_token", "token_type", "refresh_token"] {
      guard let value = json[field], value != .null, value.stringValue == nil else { continue }
      throw OAuth2Error.badAnswer(
        url: url,
        detail: "the token answer's \(field) is \(OAuth2Refresh.kind(of: value)); RFC 6749 §5.1 makes it a string \(place); "
          + "check token_url and grant, and the server's documentation")
    }
    guard let token = json["access_token"]?.stringValue, !token.isEmpty else {
      throw OAuth2Error.badAnswer(
        url: url,
        detail:
          "the token answer \(json["access_token"] == nil || json["access_token"] == .null ? "has no access_token" : "has an empty access_token") "
          + "\(place); check token_url and grant, and the server's documentation")
    }
    onSecret(token)
    // The token goes into the Authorization header as it is: a line break in it would add
    // header fields to every request of the step (header injection).
    guard HTTPHeader.isTokenText(token) else {
      throw OAuth2Error.badAnswer(
        url: url,
        detail: "the token answer's access_token holds a space, a line break or another character a header cannot carry "
          + "(a Bearer token is visible ASCII, RFC 6750 §2.1) \(place); check token_url and the server's documentation")
    }
    if let type = json["token_type"]?.stringValue, type.lowercased() != "bearer" {
      throw OAuth2Error.badAnswer(
        url: url, detail: "the token answer's token_type is '\(type)'; dray sends only Bearer tokens (RFC 6750)")
    }
    var expiresIn: Double?
    var statedLifetime: String?
    if let value = json["expires_in"], value != .null {
      // Some servers send it as text ("3599").
      let seconds: Double? =
        switch value {
        case .integer(let i): Double(i)
        case .number(let n): Double(n)
        case .string(let s): Double(s)
        default: nil
        }
      let shown = PrintableText.excerpt(value.json)
      guard let seconds, !seconds.isNaN else {
        throw OAuth2Error.badAnswer(
          url: url,
          detail: "the token answer's expires_in is \(shown), not a number of seconds (RFC 6749 §5.1: the token's lifetime in "
            + "seconds); check the token endpoint's settings")
      }
      guard seconds >= 0 else {
        throw OAuth2Error.badAnswer(
          url: url,
          detail: "the token answer's expires_in is \(shown), a negative number of seconds: a token's lifetime cannot be below 0 "
            + "(RFC 6749 §5.1); check the token endpoint's settings")
      }
      guard seconds >= 1 else {
        throw OAuth2Error.badAnswer(
          url: url,
          detail: "the token answer's expires_in is \(shown): a token that lives less than a second cannot be used; "
            + "check the token endpoint's settings")
      }
      // Over ten years (`1e100`, or past a Double: infinite) does not expire in practice.
      if seconds > TokenSession.longestLifetime { statedLifetime = shown } else { expiresIn = seconds }
    }
    let rotated = json["refresh_token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
    return Answer(accessToken: token, refreshToken: rotated, expiresIn: expiresIn, statedLifetime: statedLifetime)
  }
}
