import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// An `http` step's `auth.login` (docs/auth.md, "Login flows").
@Suite struct LoginManifestTests {
  static let head = "version: 1\njob: j\ndatabase: { path: db.sqlite }\nsteps:\n"
  static let environment = ["PASSWORD": "pw-Sentinel-0044", "PIN": "pin-Sentinel-0045"]

  func errors(_ steps: String) -> [String] {
    ManifestText.errors(Self.head + steps, environment: Self.environment)
  }

  @Test func readsEveryKeyWithItsDefaultsAndMasksThePassword() throws {
    let manifest = try ManifestText.load(
      Self.head + """
        - id: a
          http:
            base_url: https://api.example.com/
            auth:
              login:
                url: https://api.example.com/login
                body: { json: { auth: { username: ana, password: "${PASSWORD}" } } }
                token: /data/token
                expires_in: /data/expires
        - id: b
          http:
            base_url: https://api.example.com/
            auth:
              login:
                url: https://other.example.com/session
                body: { form: { user: ana, passwd: "${PIN}" } }
                token: /token
                header: X-Session
                prefix: ""
        """, environment: Self.environment)
    let a = try #require(manifest.steps[0].kind.http?.auth?.login)
    #expect(a.url == "https://api.example.com/login")
    #expect(a.token.description == "/data/token")
    #expect(a.expiresIn?.description == "/data/expires")
    #expect(a.header == "Authorization" && a.prefix == "Bearer ")
    #expect(a.body == .json(.object([("auth", .object([("username", .string("ana")), ("password", .string("pw-Sentinel-0044"))]))])))
    let b = try #require(manifest.steps[1].kind.http?.auth?.login)
    #expect(b.header == "X-Session" && b.prefix == "" && b.expiresIn == nil)
    #expect(b.body == .form([QueryItem("user", "ana"), QueryItem("passwd", "pin-Sentinel-0045")]))
    // Both passwords are secrets, nested in a JSON body or named passwd in a form; the user is not.
    let masked = manifest.redactor.redact("json pw-Sentinel-0044, form pin-Sentinel-0045, user ana")
    #expect(!masked.contains("Sentinel"))
    #expect(masked.contains("user ana"))
    #expect(a.secrets == ["pw-Sentinel-0044"] && b.secrets == ["pin-Sentinel-0045"])
    #expect(manifest.steps[0].kind.http?.auth?.authorization == nil)
  }

  /// Steps that name one login url and user share one session token: the key holds the
  /// user, not the password; two users are two sessions.
  @Test func theSessionKeyIsTheURLAndTheUserNotThePassword() throws {
    func login(_ user: String, _ password: String, url: String = "https://a.example.com/login") -> Login {
      Login(
        url: url, body: .json(.object([("username", .string(user)), ("password", .string(password))])),
        token: JSONPointer.wholeDocument)
    }
    #expect(login("ana", "one").key == login("ana", "two").key)
    #expect(login("ana", "one").key != login("bo", "one").key)
    #expect(login("ana", "one").key != login("ana", "one", url: "https://b.example.com/login").key)
    #expect(!login("ana", "pw-Sentinel-0046").maskedBody.json.contains("Sentinel"))
  }

  @Test func everyMistakeIsReportedWhereItIsWritten() {
    let found = errors(
      """
      - http:
          base_url: https://a.example.com/
          auth: { login: { url: "ftp://x/", body: { json: { u: a }, form: { u: a } }, token: data, header: "X Y", expires_in: exp } }
      - http:
          base_url: https://a.example.com/
          auth: { login: { url: "https://a.example.com/login", token: /t } }
      - http:
          base_url: https://a.example.com/
          headers: { X-Session: abc }
          auth: { login: { url: "https://a.example.com/login", body: { form: { u: a, password: p } }, token: /t, header: X-Session } }
      """)
    let expected = [
      "job.yaml:7:27: error: 'steps.http-1.http.auth.login.url' must be an http:// or https:// address such as https://api.example.com/v1/, found 'ftp://x/'",
      "job.yaml:7:69: error: 'steps.http-1.http.auth.login.body' takes 'json' or 'form', not both",
      "job.yaml:7:88: error: 'steps.http-1.http.auth.login.token': a JSON Pointer starts with '/' (RFC 6901), such as /data/items; found 'data'",
    ]
    for line in expected { #expect(found.contains(line), "\(found)") }
    #expect(
      found.contains(
        "job.yaml:7:102: error: 'X Y' is not an HTTP header name; a name holds ASCII letters, digits and !#$%&'*+-.^_`|~ only"), "\(found)")
    #expect(found.contains { $0.contains("'steps.http-1.http.auth.login.expires_in': a JSON Pointer starts with '/'") }, "\(found)")
    #expect(found.contains { $0.contains("missing required key 'body' in steps.http-2.http.auth.login") }, "\(found)")
    #expect(
      found.contains {
        $0.contains("'steps.http-3.http.headers.X-Session' and 'steps.http-3.http.auth.login' both set X-Session; keep one")
      },
      "\(found)")
  }

  /// A header of the step's own that the login does not set is no conflict.
  @Test func anAuthorizationHeaderBesideALoginInAnotherHeaderIsTaken() throws {
    let manifest = try ManifestText.load(
      Self.head + """
        - http:
            base_url: https://a.example.com/
            headers: { Authorization: "Basic abc" }
            auth: { login: { url: "https://a.example.com/login", body: { form: { u: a, password: p } }, token: /t, header: X-Session } }
        """)
    #expect(manifest.steps[0].kind.http?.auth?.login?.header == "X-Session")
  }

  @Test func stepsNamingOneLoginAndUserMustAgree() {
    let found = errors(
      """
      - http:
          base_url: https://a.example.com/
          auth: { login: { url: "https://a.example.com/login", body: { json: { username: ana, password: p1 } }, token: /t } }
      - http:
          base_url: https://a.example.com/
          auth: { login: { url: "https://a.example.com/login", body: { json: { username: ana, password: p2 } }, token: /t } }
      - http:
          base_url: https://a.example.com/
          auth: { login: { url: "https://a.example.com/login", body: { json: { username: bo, password: p2 } }, token: /t } }
      """)
    #expect(found.count == 1, "\(found)")
    #expect(found.first?.contains("names the url and user of 'steps.http-1.http.auth.login' with other settings") == true, "\(found)")
  }
}
