import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// An `http` step's `auth.oauth2` (docs/auth.md).
@Suite struct OAuth2ManifestTests {
  static let head = "version: 1\njob: j\ndatabase: { path: db.sqlite }\nsteps:\n"
  static let environment = ["CLIENT_SECRET": "cs-Sentinel-0042", "REFRESH_TOKEN": "rt-Sentinel-0043"]

  func errors(_ steps: String) -> [String] {
    ManifestText.errors(Self.head + steps, environment: Self.environment)
  }

  @Test func readsEveryKeyAndMasksEverySecret() throws {
    let manifest = try ManifestText.load(
      Self.head + """
        - id: crm
          http:
            base_url: https://crm.example.com/
            auth:
              oauth2:
                token_url: https://login.example.com/oauth/token
                grant: refresh_token
                client_id: app
                client_secret: ${CLIENT_SECRET}
                refresh_token: ${REFRESH_TOKEN}
                scope: read write
                client_auth: body
        """, environment: Self.environment)
    let auth = try #require(manifest.steps[0].kind.http?.auth?.oauth2)
    #expect(
      auth
        == OAuth2(
          tokenURL: "https://login.example.com/oauth/token", grant: .refreshToken, clientID: "app", clientSecret: "cs-Sentinel-0042",
          refreshToken: "rt-Sentinel-0043", scope: "read write", clientAuth: .body))
    let text = "secret cs-Sentinel-0042, token rt-Sentinel-0043, basic \(auth.basicCredentials)"
    let masked = manifest.redactor.redact(text)
    #expect(!masked.contains("Sentinel"))
    #expect(!masked.contains(String(auth.basicCredentials.dropFirst("Basic ".count))))
    #expect(manifest.steps[0].kind.http?.auth?.authorization == nil)
  }

  @Test func clientAuthIsBasicByDefault() throws {
    let manifest = try ManifestText.load(
      Self.head + """
        - http:
            base_url: https://crm.example.com/
            auth: { oauth2: { token_url: "https://login.example.com/t", grant: client_credentials, client_id: a, client_secret: s-1 } }
        """)
    #expect(manifest.steps[0].kind.http?.auth?.oauth2?.clientAuth == .basic)
  }

  @Test func everyMistakeIsReportedWhereItIsWritten() {
    let found = errors(
      """
      - http:
          base_url: https://a.example.com/
          auth: { oauth2: { token_url: "ftp://x/", grant: password, client_id: a, client_secret: cs-7 } }
      - http:
          base_url: https://a.example.com/
          auth: { oauth2: { token_url: "https://x/t", grant: refresh_token, client_id: a } }
      - http:
          base_url: https://a.example.com/
          auth: { oauth2: { token_url: "https://x/t", grant: client_credentials, client_id: a, refresh_token: rt-8 } }
      - http:
          base_url: https://a.example.com/
          auth: { oauth2: { token_url: "https://x/t", grant: refresh_token, client_id: a, refresh_token: rt-8, client_auth: basic } }
      - http:
          base_url: https://a.example.com/
          auth: { oauth2: { grant: client_credentials, client_id: a, client_secret: cs-7, client_auth: header } }
      """)
    #expect(
      found == [
        "job.yaml:7:34: error: 'steps.http-1.http.auth.oauth2.token_url' must be an http:// or https:// address such as https://api.example.com/v1/, found 'ftp://x/'",
        "job.yaml:7:53: error: 'steps.http-1.http.auth.oauth2.grant' must be one of client_credentials, refresh_token, found 'password'",
        "job.yaml:10:21: error: 'steps.http-2.http.auth.oauth2' with grant: refresh_token needs 'refresh_token': the first refresh token a person's authorisation gave (dray keeps each one the server rotates to)",
        "job.yaml:13:21: error: 'steps.http-3.http.auth.oauth2' with grant: client_credentials needs 'client_secret', the client's secret",
        "job.yaml:13:105: error: 'steps.http-3.http.auth.oauth2.refresh_token' is for grant: refresh_token; drop it, or set grant: refresh_token",
        "job.yaml:16:119: error: 'steps.http-4.http.auth.oauth2.client_auth' is basic but there is no 'client_secret'; a public client sends its id in the body: client_auth: body",
        "job.yaml:19:21: error: missing required key 'token_url' in steps.http-5.http.auth.oauth2",
        "job.yaml:19:98: error: 'steps.http-5.http.auth.oauth2.client_auth' must be one of basic, body, found 'header'",
      ], "\(found)")
  }

  @Test func stepsThatShareAClientMustAgreeOnItsSettings() throws {
    let same = "oauth2: { token_url: \"https://x/t\", grant: client_credentials, client_id: a, client_secret: cs-7"
    let manifest = try ManifestText.load(
      Self.head + """
        - http: { base_url: "https://a.example.com/", auth: { \(same) } } }
        - http: { base_url: "https://b.example.com/", auth: { \(same) } } }
        """)
    #expect(manifest.steps.count == 2)
    let found = errors(
      """
        - http: { base_url: "https://a.example.com/", auth: { \(same) } } }
        - http: { base_url: "https://b.example.com/", auth: { \(same), scope: admin } } }
      """)
    #expect(
      found == [
        "job.yaml:6:65: error: 'steps.http-2.http.auth.oauth2' names the token_url and client_id of 'steps.http-1.http.auth.oauth2' with other settings; steps that name one client share one token, so give them the same grant, client_secret, refresh_token, scope and client_auth (a YAML anchor keeps them equal)"
      ], "\(found)")
  }

  @Test func anAPIKeyGoesInAHeaderOrAQueryParameter() throws {
    let manifest = try ManifestText.load(
      Self.head + """
        - http: { base_url: "https://a.example.com/", auth: { api_key: { header: X-API-Key, value: "${CLIENT_SECRET}" } } }
        - http: { base_url: "https://b.example.com/", auth: { api_key: { query: api_key, value: "${CLIENT_SECRET}" } } }
        """, environment: Self.environment)
    #expect(manifest.steps[0].kind.http?.auth == .apiKey(HTTPStep.APIKey(place: .header("X-API-Key"), value: "cs-Sentinel-0042")))
    #expect(manifest.steps[1].kind.http?.auth == .apiKey(HTTPStep.APIKey(place: .query("api_key"), value: "cs-Sentinel-0042")))
    #expect(!manifest.redactor.redact("key cs-Sentinel-0042").contains("Sentinel"))
  }

  @Test func anAPIKeyMistakeIsReportedWhereItIsWritten() {
    let found = errors(
      """
        - http: { base_url: "https://a.example.com/", auth: { api_key: { header: X-Key, query: key, value: k-12345 } } }
        - http: { base_url: "https://a.example.com/", auth: { api_key: { value: k-12345 } } }
        - http: { base_url: "https://a.example.com/", auth: { api_key: { header: "X Key", value: k-12345 } } }
        - http: { base_url: "https://a.example.com/", headers: { x-key: a }, auth: { api_key: { header: X-Key, value: k-12345 } } }
        - http: { base_url: "https://a.example.com/", query: { key: a }, auth: { api_key: { query: key, value: k-12345 } } }
        - http: { base_url: "https://a.example.com/", auth: { api_key: { header: X-Key } } }
      """)
    #expect(found.count == 6, "\(found)")
    #expect(found[0].hasSuffix("'steps.http-1.http.auth.api_key' sends the key in 'header' or in 'query', not both"), "\(found)")
    #expect(
      found[1].hasSuffix(
        "'steps.http-2.http.auth.api_key' needs 'header' (such as X-API-Key) or 'query' (such as api_key): where the key goes"))
    #expect(found[2].hasPrefix("job.yaml:7:"))
    #expect(found[3].hasSuffix("'steps.http-4.http.headers.x-key' and 'steps.http-4.http.auth.api_key' both set X-Key; keep one"))
    #expect(found[4].hasSuffix("'steps.http-5.http.query' and 'steps.http-5.http.auth.api_key' both send key; keep one"))
    #expect(found[5].hasSuffix("missing required key 'value' in steps.http-6.http.auth.api_key"))
  }
}
