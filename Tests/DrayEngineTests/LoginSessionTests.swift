import DrayManifest
import DrayModel
import DrayTestSupport
import DrayTransport
import Foundation
import Synchronization
import Testing

@testable import DrayEngine

/// `auth.login`'s session (`LoginRequest` in a `TokenSession`) against
/// `Emulator/oauth_server.py`'s `/login`: renewed when due by an injected clock (no sleeps),
/// every token learnt as a secret before it is used, and no secret in the fingerprint.
@Suite struct LoginSessionTests {
  static let password = "pw-Session-6262"

  static func settings(_ server: OAuthServer, expiresIn: Bool = true) throws -> Login {
    Login(
      url: server.url + "login", body: .json(.object([("username", .string("ana")), ("password", .string(password))])),
      token: try JSONPointer(parsing: "/data/session"), expiresIn: expiresIn ? try JSONPointer(parsing: "/data/expires") : nil)
  }

  static func session(_ settings: Login, clock: TestClock, onSecret: @escaping @Sendable (String) -> Void = { _ in }) -> TokenSession {
    let request = LoginRequest(settings: settings, onSecret: onSecret)
    return TokenSession(kind: "login", noun: "session token", source: settings.url, now: { clock.now }) { caller in
      try request.fetch(caller)
    }
  }

  @Test func theSessionTokenIsKeptUntilItIsDueThenRenewedOnceAndEachIsLearntAsASecret() throws {
    // The server's tokens live an hour; only our clock, moved by hand, makes them due.
    let server = try OAuthServer(["--user", "ana:" + Self.password, "--lifetime", "3600"])
    let clock = TestClock()
    let learnt = Mutex<[String]>([])
    let session = Self.session(try Self.settings(server), clock: clock) { secret in learnt.withLock { $0.append(secret) } }
    let first = try session.token(OAuth2SessionTests.caller())
    #expect(learnt.withLock { $0 } == [first])
    clock.advance(by: .seconds(3539))
    #expect(try session.token(OAuth2SessionTests.caller()) == first)
    #expect(try server.stats().loginRequests.count == 1)
    clock.advance(by: .seconds(2))
    let second = try session.token(OAuth2SessionTests.caller())
    #expect(second != first)
    #expect(learnt.withLock { $0 } == [first, second])
    #expect(try server.stats().loginRequests.count == 2)
    // Concurrent requests refused with the same stale token share one renewal.
    let renewed = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 6) { _ in
      if let token = try? session.renew(stale: second, because: "401", OAuth2SessionTests.caller()) {
        renewed.withLock { $0.append(token) }
      }
    }
    #expect(Set(renewed.withLock { $0 }).count == 1)
    #expect(renewed.withLock { $0 }.count == 6)
    #expect(try server.stats().loginRequests.count == 3)
  }

  @Test func withoutExpiresInTheTokenIsKeptWhateverTheClockSays() throws {
    let server = try OAuthServer(["--user", "ana:" + Self.password, "--lifetime", "1"])
    let clock = TestClock()
    let session = Self.session(try Self.settings(server, expiresIn: false), clock: clock)
    let first = try session.token(OAuth2SessionTests.caller())
    clock.advance(by: .seconds(86400))
    #expect(try session.token(OAuth2SessionTests.caller()) == first)
    #expect(try server.stats().loginRequests.count == 1)
  }

  /// Changing the password does not redo a finished step: it is not in the fingerprint; the
  /// login's url, user, pointers and header are.
  @Test func noSecretEntersTheFingerprint() throws {
    func fingerprint(password: String, user: String = "ana", header: String = "Authorization") throws -> String {
      let manifest = try ManifestText.load(
        """
        version: 1
        job: j
        steps:
          - id: a
            http:
              base_url: https://a.example.com/
              auth: { login: { url: "https://a.example.com/login", body: { form: { user: \(user), passwd: \(password) } }, token: /t, header: \(header) } }
        """)
      return manifest.steps[0].fingerprint(in: manifest)
    }
    let first = try fingerprint(password: "pw-1111")
    #expect(try fingerprint(password: "pw-2222") == first)
    #expect(try fingerprint(password: "pw-1111", user: "bo") != first)
    #expect(try fingerprint(password: "pw-1111", header: "X-Session") != first)
  }

  /// What a 2xx login answer gives: a token at the pointer (a number taken as its text), its
  /// life, or one error saying what was found there, never the token itself.
  @Test func aLoginAnswerIsReadOrRefusedWithWhatWasFound() throws {
    func read(_ body: String, expiresIn: String? = "/expires") throws -> TokenSession.Fetched {
      let settings = Login(
        url: "https://a.example.com/login", body: .form([]), token: try JSONPointer(parsing: "/session"),
        expiresIn: try expiresIn.map { try JSONPointer(parsing: $0) })
      let response = HTTPResponse(status: 200, headers: HTTPHeaders([HTTPHeader("Content-Type", "application/json")]))
      return try LoginRequest.read(response, Array(body.utf8), settings: settings, onSecret: { _ in }, log: { _ in })
    }
    func refusal(_ body: String) -> String {
      do {
        _ = try read(body)
        return "read"
      } catch {
        return "\(error)"
      }
    }
    #expect(try read(#"{"session": "st-1", "expires": 300}"#).token == "st-1")
    #expect(try read(#"{"session": "st-1", "expires": "300"}"#).expiresIn == 300)
    #expect(try read(#"{"session": 48213, "expires": 60}"#).token == "48213")
    #expect(try read(#"{"session": "st-1"}"#).expiresIn == nil)
    #expect(try read(#"{"session": "st-1", "expires": 1e12}"#).expiresIn == nil)
    #expect(try read(#"{"session": "st-1", "expires": 1e12}"#).statedLifetime != nil)
    // Past a Double (infinite): over ten years too, not "less than a second".
    #expect(try read(#"{"session": "st-1", "expires": 1e400}"#).statedLifetime != nil)
    #expect(TokenSession.lifeWords(try read(#"{"session": "st-1", "expires": 1e12}"#)).contains("is over ten years: taken as not expiring"))
    #expect(TokenSession.lifeWords(try read(#"{"session": "st-1", "expires": 90.5}"#)) == " for 90.5s")
    #expect(TokenSession.lifeWords(try read(#"{"session": "st-1"}"#)) == ", without expires_in: renewed only after a 401")
    #expect(try read(#"{"session": "st-1", "expires": 5}"#, expiresIn: nil).expiresIn == nil)
    #expect(refusal(#"{"session": {"id": "st-Sentinel-1"}}"#).contains("value at /session is an object, not a token's text"))
    #expect(refusal(#"{"session": ""}"#).contains("value at /session is an empty text"))
    #expect(refusal(#"{"data": {"session": "st-1"}}"#).contains("has nothing at /session (its keys: data)"))
    #expect(refusal(#"{"session": "st-1", "expires": "soon"}"#).contains("expires_in at /expires is the text \"soon\", not a number"))
    #expect(refusal(#"{"session": "st-1", "expires": 0}"#).contains("expires_in at /expires is 0: a token that lives less than a second"))
    // D-minor: a negative life is said as such, and a huge one is no missing one.
    #expect(
      refusal(#"{"session": "st-1", "expires": -5}"#).contains(
        "expires_in at /expires is the number -5, a negative number of seconds: a token's life cannot be below 0"))
    #expect(refusal("<html><body>Sign in</body></html>").contains("the login answer is an HTML page"))
    #expect(refusal("plain words").contains("the login answer is not JSON"))
  }

  /// The header that carries a sign-in's token holds a secret whatever its name, so that it
  /// is never sent after a redirect to another origin (`Redirects`), like `Authorization`.
  @Test func theTokensHeaderIsASecretWhateverItsName() {
    let session = TokenSession(kind: "login", noun: "session token", source: "https://a.example.com/login") { _ in
      TokenSession.Fetched(token: "st-1", expiresIn: nil)
    }
    let custom = SignIn(session: session, header: "X-Session", prefix: "", refused: { LoginError.freshRefused($0) }).field("st-1")
    #expect(custom.name == "X-Session" && custom.value == "st-1" && custom.isSecret)
    let bearer = SignIn(session: session, header: "Authorization", prefix: "Bearer ", refused: { LoginError.freshRefused($0) })
    #expect(bearer.field("st-1").value == "Bearer st-1" && bearer.field("st-1").isSecret)
  }
}
