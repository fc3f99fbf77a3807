internal import DrayModel
internal import DrayTransport

/// A sign-in whose token goes in a request header (`auth.oauth2`, `auth.login`): its
/// session, shared by the run's steps, the header and what is written before the token.
struct SignIn {
  var session: TokenSession
  /// The header's name (`Authorization`, or a login's own).
  var header: String
  /// Written before the token (`Bearer `).
  var prefix: String
  /// The error of a request refused with 401 again right after a fresh token.
  var refused: (HTTPStatusError) -> any Error

  /// The header field that carries `token`: marked as holding a secret, so that it is never
  /// sent after a redirect to another origin, whatever its name.
  func field(_ token: String) -> HTTPHeader { HTTPHeader(header, prefix + token, secret: true) }
}

extension RunContext {
  /// The sign-in of `auth`, its session made on first use and shared by every step,
  /// parallel member and partition that names the same token endpoint and client
  /// (`OAuth2.key`) or login endpoint and user (`Login.key`); nil for another `auth`. Every
  /// token is a secret: masked wherever the console and the report print.
  func signIn(_ auth: HTTPStep.Auth?) -> SignIn? {
    switch auth {
    case .oauth2(let settings)?:
      let session = sessions.session(key: "oauth2 " + settings.key) { [console, database] in
        OAuth2Session(settings: settings, database: database, onSecret: { console.addSecret($0) })
      }
      return SignIn(session: session, header: "Authorization", prefix: "Bearer ", refused: { OAuth2Error.refused($0) })
    case .login(let settings)?:
      let session = sessions.session(key: "login " + settings.key) { [console] in
        let request = LoginRequest(settings: settings, onSecret: { console.addSecret($0) })
        return TokenSession(kind: "login", noun: "session token", source: HTTPClient.displayURL(settings.url)) { caller in
          try request.fetch(caller)
        }
      }
      return SignIn(session: session, header: settings.header, prefix: settings.prefix, refused: { LoginError.freshRefused($0) })
    case .bearer?, .basic?, .apiKey?, nil:
      return nil
    }
  }
}
