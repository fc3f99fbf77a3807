import DrayModel
import DrayPlatform
import DrayTestSupport
import DrayTransport
import Foundation
import Testing

/// The HTTP client below the platform: which limit fired, connection errors, what every
/// request carries, redirects and TLS. Loopback only.
@Suite struct HTTPClientTests {
  func perform(_ request: HTTPRequest, client: HTTPClient = HTTPClient()) -> Result<HTTPResponse, any Error> {
    Result { try client.perform(request, sink: MemorySink()) }
  }

  @Test func aListenerThatNeverAcceptsHitsTheConnectTimeout() throws {
    let listener = try StalledListener()
    let start = ContinuousClock.now
    let result = perform(
      HTTPRequest(url: "http://127.0.0.1:\(listener.port)/api/v1/schema/", timeouts: Timeouts(connect: .milliseconds(300))))
    #expect(
      result.errorText
        == "could not connect to 127.0.0.1:\(listener.port) within 300ms (connect timeout); check the address and firewalls, or raise timeouts.connect"
    )
    #expect((result.error as? TransportError)?.code == "timeout_connect")
    #expect((ContinuousClock.now - start) < .seconds(3))
  }

  @Test func beforeTheConnectionTheIdleLimitDoesNotCount() throws {
    let listener = try StalledListener()
    let url = "http://127.0.0.1:\(listener.port)/"
    let connect = perform(HTTPRequest(url: url, timeouts: Timeouts(connect: .milliseconds(1200), idle: .milliseconds(300))))
    #expect((connect.error as? TransportError)?.code == "timeout_connect")
    // A whole-request limit shorter than the connect limit is the one that fires.
    let whole = perform(HTTPRequest(url: url, timeouts: Timeouts(connect: .seconds(10), request: .milliseconds(400))))
    #expect(whole.errorText == "\(url) took longer than 400ms (request timeout); raise timeouts.request, or check why the server is slow")
  }

  @Test func aClosedPortIsConnectionRefusedAndNothingWasSent() throws {
    let port = try closedPort()
    let client = HTTPClient()
    let result = perform(HTTPRequest(method: .post, url: "http://127.0.0.1:\(port)/x", body: .bytes(Array("{}".utf8))), client: client)
    #expect(
      result.errorText
        == "cannot connect to 127.0.0.1:\(port): connection refused; check that the server is running and the port is right")
    #expect((result.error as? TransportError)?.isTransient == true)
    #expect(client.bytesSent == 0)
  }

  /// A client whose request failed to resolve its host serves the next request: libcurl
  /// 7.88 refuses a new receive buffer size on a handle whose DNS failure left its buffer
  /// allocated, which made every retry after a DNS blip fail as "libcurl refused option 98".
  @Test func aDNSFailureDoesNotSpoilTheClientsNextRequest() throws {
    let server = try RestServer(["--items", "3"])
    let client = HTTPClient()
    let failed = perform(HTTPRequest(url: "http://host.that-does-not-exist.invalid/items"), client: client)
    #expect((failed.error as? TransportError)?.code == "dns_failure", "\(failed)")
    for _ in 1...2 {
      let next = perform(HTTPRequest(url: server.url + "items"), client: client)
      #expect((try? next.get())?.status == 200, "\(next)")
    }
  }

  @Test func everyRequestSaysWhoItIsAndAsksForUncompressedBytes() throws {
    let net = try NetworkFixture()
    var attempts: [Attempt] = []
    _ = try net.client.schemes(policy: NetworkFixture.policy(), record: { attempts.append($0) })
    let requests = try net.allRequests()
    #expect(requests.map(\.path) == ["/api/v1/auth/jwt/obtain/", "/api/v1/schema/"])
    #expect(requests.allSatisfy { $0["User-Agent"] == "dray/\(DrayVersion.current)" })
    #expect(requests.allSatisfy { $0["Accept-Encoding"] == "identity" })
    #expect(requests[0]["Authorization"] == nil)
    #expect(requests[1]["Authorization"]?.hasPrefix("Bearer ") == true)
    // Each request is an attempt in the report: the sign-in's too.
    #expect(attempts.map(\.outcome.code) == ["ok", "ok"])
    #expect(attempts.map(\.call) == ["sign-in", nil])
  }

  @Test func whatAServerSaysIsShownAsOneLineWithoutControlCharacters() {
    let error = HTTPStatusError(
      status: 500, url: "http://127.0.0.1:9/api/v1/rpc/X/", serverDescription: "oops\r\n  job x: succeeded\n",
      originalDescriptions: ["ORA-01555:\tsnapshot\u{1B}[2J too old\u{2028}retry", "ok"])
    #expect(
      error.description
        == #"HTTP 500 Internal Server Error from http://127.0.0.1:9/api/v1/rpc/X/: oops ⏎ job x: succeeded (data source: ORA-01555: snapshot\u{1B}[2J too old ⏎ retry; ok)"#
    )
    let body = HTTPStatusError(status: 502, url: "http://h/", bodyExcerpt: "<html>\n<body>\u{9B}31m bad \u{7F}</body>\n</html>")
    #expect(body.description == #"HTTP 502 Bad Gateway from http://h/: <html> ⏎ <body>\u{9B}31m bad \u{7F}</body> ⏎ </html>"#)
    #expect(PrintableText.oneLine(body.description) == body.description)
    #expect(PrintableText.escaped("a\u{0}b\nc\td", keepingNewlines: true) == "a\\u{0}b\nc d")
    // Bidi formatting characters (UAX #9) are escaped too; other non-ASCII text stays.
    #expect(
      PrintableText.oneLine(
        "é \u{202E}gnp.exe\u{202C} \u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{61C}\u{202A}\u{202B}\u{202D} שלום")
        == #"é \u{202E}gnp.exe\u{202C} \u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{61C}\u{202A}\u{202B}\u{202D} שלום"#)
  }

  @Test func urlsInMessagesNeverCarryCredentials() {
    #expect(HTTPClient.displayURL("https://user:secret@example.test:8443/api/v1/x/?a=1#frag") == "https://example.test:8443/api/v1/x/?a=1")
    #expect(HTTPClient.hostAndPort("http://u:p@127.0.0.1:8765/") == "127.0.0.1:8765")
    #expect(HTTPClient.hostName("http://[::1]:8765/") == "[::1]")
  }

  // MARK: Redirects

  @Test func aRedirectToAnotherOriginDoesNotCarryTheToken() throws {
    let net = try NetworkFixture()
    let other = try Emulator()
    try net.faults(#"[{"path": "/api/v1/schema/", "times": 1, "redirect": "\#(other.url)api/v1/schema/"}]"#)
    var attempts: [Attempt] = []
    let schemes = try net.client.schemes(policy: NetworkFixture.policy(), record: { attempts.append($0) })
    #expect(schemes.contains { $0.name == "BIG" })
    let elsewhere = try other.requests().map(LoggedRequest.init)
    #expect(elsewhere.map(\.path) == ["/api/v1/schema/"])
    #expect(elsewhere[0]["Authorization"] == nil)
    #expect(elsewhere[0]["User-Agent"] == "dray/\(DrayVersion.current)")
    // The other origin answered 401 (no token): one new token, one repeat, at home.
    #expect(attempts.map(\.outcome.code) == ["ok", "http_401", "ok", "ok"])
    #expect(attempts[1].message?.hasPrefix("HTTP 401 Unauthorized from \(other.url)api/v1/schema/: Unauthorized;") == true)
    #expect(try net.requests("/api/v1/schema/").map(\.status) == [307, 200])
  }

  @Test func aRedirectWithinTheOriginKeepsTheToken() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/schema/", "times": 1, "redirect": "/api/v1/schema/?again=1", "redirect_status": 302}]"#)
    _ = try net.client.schemes(policy: NetworkFixture.policy(), record: { _ in })
    let requests = try net.allRequests().filter { $0.path.hasPrefix("/api/v1/schema/") }
    #expect(requests.map(\.path) == ["/api/v1/schema/", "/api/v1/schema/?again=1"])
    #expect(requests.map(\.status) == [302, 200])
    #expect(requests[1]["Authorization"] == requests[0]["Authorization"])
  }

  /// D-minor: a redirect whose target cannot be reached says it followed that redirect,
  /// from where to where, before the refused connection; the code stays the connection's.
  @Test func aRedirectTargetThatCannotBeReachedIsNamedAsTheRedirects() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/schema/", "redirect": "http://127.0.0.1:1/elsewhere/?a=1", "redirect_status": 302}]"#)
    let result = Result { try net.client.schemes(policy: NetworkFixture.policy(), record: { _ in }) }
    let expected =
      "after following the 302 redirect from \(net.emulator.url)api/v1/schema/ to http://127.0.0.1:1/elsewhere/?a=1: "
      + "cannot connect to 127.0.0.1:1: connection refused; check that the server is running and the port is right "
      + "(the address that failed is the redirect's target, not the one in the manifest"
    #expect(result.errorText?.contains(expected) == true, "\(result.errorText ?? "")")
    #expect((result.error as? TransportError)?.code == "connection_refused")
    #expect((result.error as? TransportError)?.underlying == .connectionRefused(host: "127.0.0.1:1"))
  }

  @Test func aRedirectLoopFailsAtOnce() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/schema/", "redirect": "/api/v1/schema/"}]"#)
    let result = Result { try net.client.schemes(policy: NetworkFixture.policy(), record: { _ in }) }
    #expect(
      result.errorText
        == "cannot follow the redirect from \(net.emulator.url)api/v1/schema/: a redirect loop back to \(net.emulator.url)api/v1/schema/; check the address in the manifest (platform.host or base_url)"
    )
    #expect((result.error as? TransportError)?.code == "redirect_failed")
    #expect(try net.requests("/api/v1/schema/").count == 1)
  }

  @Test func redirectRulesMethodsLimitAndCredentials() throws {
    let post = HTTPRequest(
      method: .post, url: "http://a.test/api/v1/rpc/X/",
      headers: HTTPHeaders([HTTPHeader("Authorization", "Bearer t"), HTTPHeader("Content-Type", "application/json")]),
      body: .bytes(Array("{}".utf8)))
    var state = RedirectState(url: post.url, method: .post)
    let kept = try state.follow(post, status: 307, location: "/api/v1/rpc/Y/")
    #expect(kept.method == .post && kept.body == post.body && kept.url == "http://a.test/api/v1/rpc/Y/")
    #expect(kept.headers["Authorization"] == "Bearer t")
    let away = try state.follow(kept, status: 308, location: "https://b.test/z")
    #expect(away.method == .post && away.headers["Authorization"] == nil)
    let home = try state.follow(away, status: 303, location: "http://a.test:80/done")
    #expect(home.method == .get && home.body == .none && home.headers["Content-Type"] == nil)
    #expect(home.headers["Authorization"] == "Bearer t")
    #expect(state.count == 3)

    var found = RedirectState(url: post.url, method: .post)
    #expect(try found.follow(post, status: 302, location: "/elsewhere").method == .get)

    var chain = RedirectState(url: "http://a.test/0", limit: 2)
    var request = HTTPRequest(url: "http://a.test/0")
    request = try chain.follow(request, status: 301, location: "/1")
    request = try chain.follow(request, status: 301, location: "/2")
    #expect(throws: TransportError.redirect(url: "http://a.test/2", detail: "more than 2 redirects")) {
      try chain.follow(request, status: 301, location: "/3")
    }
    var ftp = RedirectState(url: "http://a.test/")
    #expect(
      throws: TransportError.redirect(url: "http://a.test/", detail: "it points to ftp://a.test/f, which is not http or https")
    ) {
      try ftp.follow(HTTPRequest(url: "http://a.test/"), status: 302, location: "ftp://a.test/f")
    }
  }

  /// A body that holds credentials follows a 307 or 308 on its own origin only; to another
  /// origin it is refused, naming the setting to change; a 303 (which drops the body) and a
  /// body without secrets still follow.
  @Test(arguments: [307, 308]) func aBodyWithSecretsIsNeverSentToAnotherOrigin(status: Int) throws {
    var login = HTTPRequest(method: .post, url: "http://127.0.0.1:18803/login", body: .bytes(Array("user=bob&password=pw".utf8)))
    login.secretBody = "login.url"
    var home = RedirectState(url: login.url, method: .post)
    #expect(try home.follow(login, status: status, location: "/v2/login").body == login.body)
    var away = RedirectState(url: login.url, method: .post)
    let refused = TransportError.secretRedirect(
      url: "http://127.0.0.1:18803/login", status: status, target: "http://localhost:18809", setting: "login.url")
    #expect(throws: refused) { try away.follow(login, status: status, location: "http://localhost:18809/steal") }
    #expect(refused.code == "redirect_failed")
    #expect(
      refused.description.contains("to another origin, http://localhost:18809")
        && refused.description.contains("point login.url at the final address"), "\(refused.description)")
    var seeOther = RedirectState(url: login.url, method: .post)
    #expect(try seeOther.follow(login, status: 303, location: "http://localhost:18809/done").body == .none)
    var plain = login
    plain.secretBody = nil
    var open = RedirectState(url: plain.url, method: .post)
    #expect(try open.follow(plain, status: status, location: "http://localhost:18809/steal").body == plain.body)
  }

  @Test func aRedirectToAnotherOriginDropsEverySecretHeader() throws {
    // Two origins on one server: 127.0.0.1:PORT and localhost:PORT.
    let server = try RestServer()
    let port = try #require(URLComponents(string: server.url)?.port)
    let away = "http://localhost:\(port)/steal"
    try server.setRules(
      #"[{"path": "/items", "status": 302, "headers": {"Location": "\#(away)"}}, {"path": "/steal", "status": 200, "body": "[]"}, "#
        + #"{"path": "/home", "status": 302, "headers": {"Location": "\#(server.url)steal"}}]"#)
    let headers = HTTPHeaders([
      HTTPHeader("X-Api-Key", "key-1"), HTTPHeader("X-Auth-Token", "token-1"), HTTPHeader("Authorization", "Bearer b-1"),
      HTTPHeader("Cookie", "session=c-1"), HTTPHeader("X-Signed", "sig=s-1", secret: true), HTTPHeader("X-Trace", "trace-1"),
    ])
    let response = try HTTPClient().perform(HTTPRequest(url: server.url + "items", headers: headers), sink: MemorySink())
    #expect(response.status == 200)
    let requests = try server.requests()
    #expect(requests.map(\.path) == ["/items", "/steal"])
    #expect(requests[0].headers["X-Api-Key"] == "key-1" && requests[0].headers["X-Signed"] == "sig=s-1")
    let sent = requests[1].headers
    #expect(sent["Host"] == "localhost:\(port)")
    for name in ["X-Api-Key", "X-Auth-Token", "Authorization", "Cookie", "X-Signed"] {
      #expect(sent[name] == nil, "\(name) reached the other origin")
    }
    #expect(sent["X-Trace"] == "trace-1")

    // Within the origin, every header goes along.
    try server.reset()
    _ = try HTTPClient().perform(HTTPRequest(url: server.url + "home", headers: headers), sink: MemorySink())
    let home = try server.requests()
    #expect(home.map(\.path) == ["/home", "/steal"])
    #expect(home[1].headers["X-Signed"] == "sig=s-1" && home[1].headers["X-Auth-Token"] == "token-1")
  }

  /// D-inject-1: the one place every request's header fields are handed to libcurl refuses
  /// a field holding CR, LF, NUL or another control character, whatever built it (a token
  /// from an answer), so nothing reaches the server; the message names the field, never
  /// its value. A tab inside a value is allowed (RFC 9110 §5.5).
  @Test func aHeaderHoldingALineBreakIsNeverSent() throws {
    let server = try RestServer()
    for value in ["Bearer abc\r\nX-Evil: 1", "abc\nX-Evil: 1", "abc\rX-Evil: 1", "abc\u{0}d", "abc\u{1B}[31m"] {
      let headers = HTTPHeaders([HTTPHeader("X-Trace", "t-1"), HTTPHeader("Authorization", value)])
      let result = perform(HTTPRequest(url: server.url + "items", headers: headers))
      #expect((result.error as? TransportError)?.code == "header_refused", "\(result)")
      let text = result.errorText ?? ""
      #expect(text.contains("the header field 'Authorization' holds ") && text.contains("nothing was sent"), "\(text)")
      #expect(!text.contains("abc") && !text.contains("Evil"))
    }
    #expect(try server.requests().isEmpty)
    let tab = try HTTPClient().perform(
      HTTPRequest(url: server.url + "items", headers: HTTPHeaders([HTTPHeader("X-Trace", "a\tb")])), sink: MemorySink())
    #expect(tab.status == 200)
    #expect(try server.requests().map { $0.headers["X-Trace"] } == ["a\tb"])
  }

  // MARK: TLS

  @Test func tlsIsVerifiedAgainstTheCAFileOrFailsClearly() throws {
    let folder = TemporaryDirectory()
    let (cert, key) = try TestCertificate.make(in: folder)
    let emulator = try Emulator(["--tls-cert", cert, "--tls-key", key])
    #expect(emulator.url.hasPrefix("https://127.0.0.1:"))
    func schemes(_ tls: TLSSettings) -> Result<[ResourceScheme], any Error> {
      let client = PlatformClient(session: NetworkFixture.session(emulator.url, tls: tls), cancellation: Cancellation())
      return Result { try client.schemes(policy: NetworkFixture.policy(1), record: { _ in }) }
    }
    let refused = schemes(TLSSettings())
    #expect(
      refused.errorText
        == "TLS with \(HTTPClient.hostAndPort(emulator.url)) failed (SSL certificate problem: self-signed certificate); "
        + "check the server's certificate, or set tls.ca_file to the CA that signed it")
    #expect((refused.error as? TransportError)?.code == "tls_failure")
    #expect(try schemes(TLSSettings(caFile: cert)).get().contains { $0.name == "FRUITS" })
    #expect(try schemes(TLSSettings(verify: false)).get().contains { $0.name == "FRUITS" })
  }
}
