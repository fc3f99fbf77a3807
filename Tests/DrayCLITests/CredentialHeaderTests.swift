import DrayTestSupport
import Foundation
import Testing

/// Header fields named as credentials by the one rule for names (`CredentialName`), not only
/// the few of `HTTPHeader.secretNames`: GitLab's `PRIVATE-TOKEN`, Google's `X-Goog-Api-Key`,
/// an `X-Password`, a `X-Hub-Signature-256`. Their values, not listed under `secrets:`, are
/// held back from another origin on a redirect, masked by `dray plan` and in a recording.
@Suite struct CredentialHeaderTests {
  static let headers = [
    ("PRIVATE-TOKEN", "glpat-Sentinel-1"), ("X-Goog-Api-Key", "goog-Sentinel-2"), ("X-Password", "pw-Sentinel-3"),
    ("X-Hub-Signature-256", "sha256=hub-Sentinel-4"), ("X-Amz-Security-Token", "amz-Sentinel-5"),
  ]

  @Test func aHeaderNamedAsACredentialIsASecretOnARedirectInThePlanAndInARecording() throws {
    let server = try RestServer()
    let port = try #require(URLComponents(string: server.url)?.port)
    try server.setRules(
      #"[{"path": "/items", "status": 302, "headers": {"Location": "http://localhost:\#(port)/steal"}}, "#
        + #"{"path": "/steal", "status": 200, "body": "[]"}]"#)
    let folder = TemporaryDirectory("dray-credential-headers")
    let fields = Self.headers.map { "\($0.0): \"${\($0.0.replacing("-", with: "_"))}\"" }.joined(separator: ", ")
    let environment = Dictionary(uniqueKeysWithValues: Self.headers.map { ($0.0.replacing("-", with: "_"), $0.1) })
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: headers
      steps:
        - id: items
          http:
            base_url: "\(server.url)"
            path: items
            headers: { \(fields), X-Trace: trace-1 }
            output: out/items.json
      """)
    let plan = try Command.dray(["plan", manifest], environment: environment)
    #expect(plan.status == 0, "\(plan.output)")
    #expect(!plan.output.contains("Sentinel"), "\(plan.output)")
    #expect(plan.output.contains("trace-1"), "\(plan.output)")

    let run = try Command.dray(
      ["run", manifest, "--record", folder.path + "/rec", "--verbose"], environment: environment, directory: folder.path)
    #expect(run.status == 0, "\(run.output)")
    #expect(!run.output.contains("Sentinel"), "\(run.output)")
    let requests = try server.requests()
    #expect(requests.map(\.path) == ["/items", "/steal"])
    for (name, value) in Self.headers { #expect(requests[0].headers[name] == value, "\(name)") }
    #expect(requests[1].headers.filter { $0.value.contains("Sentinel") } == [:])
    #expect(requests[1].headers["X-Trace"] == "trace-1")
    let recording = try String(contentsOfFile: folder.path + "/rec/recording.json", encoding: .utf8)
    #expect(recording.contains("trace-1"))
    #expect(!recording.contains("Sentinel"), "\(recording)")
  }

  /// A credential the server hands out in `Set-Cookie` is kept in a recording by its
  /// cookie's name and attributes only.
  @Test func aSetCookieAnswerIsMaskedInARecording() throws {
    let server = try RestServer()
    try server.setRules(
      #"[{"path": "/items", "status": 200, "body": "[]", "headers": {"Set-Cookie": "session=COOKIE-Sentinel-6; HttpOnly"}}]"#)
    let folder = TemporaryDirectory("dray-set-cookie")
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: cookies
      steps:
        - id: items
          http: { base_url: "\(server.url)", path: items, output: out/items.json }
      """)
    let run = try Command.dray(["run", manifest, "--record", folder.path + "/rec"], directory: folder.path)
    #expect(run.status == 0, "\(run.output)")
    let recording = try String(contentsOfFile: folder.path + "/rec/recording.json", encoding: .utf8)
    #expect(!recording.contains("Sentinel"), "\(recording)")
    #expect(recording.contains("session={{secret:1}}; HttpOnly"), "\(recording)")
  }

  /// An OAuth 2.0 token answer's `id_token` (OpenID Connect) is a secret as its
  /// `access_token` and `refresh_token` are: masked in a recording.
  @Test func anIDTokenOfATokenAnswerIsMaskedInARecording() throws {
    let server = try RestServer()
    let answer =
      #"{\"access_token\": \"AT-Sentinel-7\", \"id_token\": \"eyJ.eyJ.ID-Sentinel-8\", \"token_type\": \"Bearer\", \"expires_in\": 3600}"#
    try server.setRules(#"[{"path": "/token", "status": 200, "body": "\#(answer)"}, {"path": "/items", "status": 200, "body": "[]"}]"#)
    let folder = TemporaryDirectory("dray-id-token")
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: idt
      steps:
        - id: items
          http:
            base_url: "\(server.url)"
            path: items
            auth: { oauth2: { token_url: "\(server.url)token", grant: client_credentials, client_id: app, client_secret: "${CS}" } }
            output: out/items.json
      """)
    let run = try Command.dray(
      ["run", manifest, "--record", folder.path + "/rec"], environment: ["CS": "client-secret-1"], directory: folder.path)
    #expect(run.status == 0, "\(run.output)")
    let bodies = folder.path + "/rec/bodies"
    let texts = try FileManager.default.contentsOfDirectory(atPath: bodies).map {
      try String(contentsOfFile: bodies + "/" + $0, encoding: .utf8)
    }
    #expect(texts.contains { $0.contains("id_token") }, "\(texts)")
    #expect(!texts.contains { $0.contains("Sentinel") }, "\(texts)")
  }
}
