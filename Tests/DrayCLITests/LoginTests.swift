import DrayTestSupport
import Foundation
import Testing

/// `auth.login` against `Emulator/oauth_server.py`'s `/login`: a session token for a user and
/// password, living 2 s, sent in a header of every request, renewed before it expires and once
/// after a 401, and masked everywhere with the password.
@Suite struct LoginTests {
  static let user = "ana"
  static let password = "pw-Login-7Qz!x"

  /// A job of one paginated `http` step (or `members` parallel ones) signing in with
  /// `auth.login`; `login` replaces the login's keys after `url`.
  static func manifest(
    _ server: OAuthServer, body: String = "json", password: String = LoginTests.password, login: String? = nil,
    members: Int = 0, reports: Bool = false
  ) -> String {
    let keys =
      login ?? """
        body: { \(body): { username: \(user), password: "\(password)" } }
        token: /data/session
        expires_in: /data/expires
        """
    func step(_ id: String, indent: String) -> String {
      let lines =
        ["- id: \(id)", "  http:", "    base_url: \"\(server.url)\"", "    path: items", "    auth:", "      login:"]
        + ["        url: \"\(server.url)login\""] + keys.split(separator: "\n").map { "        " + $0 }
        + ["    load: { table: \(id), records: /data }", "    paginate: { next: /next }"]
      return lines.map { indent + $0 + "\n" }.joined()
    }
    let steps =
      members > 0
      ? "  - id: group\n    parallel:\n      steps:\n" + (1...members).map { step("m\($0)", indent: "        ") }.joined()
      : step("items", indent: "  ")
    let report = reports ? "report: { formats: [json, junit, prometheus, html] }\n" : ""
    return "version: 1\njob: login\ndatabase: { path: data/db.sqlite }\n\(report)steps:\n" + steps
  }

  static func write(_ text: String, in folder: TemporaryDirectory) throws -> String {
    let path = folder.path + "/job.yaml"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  /// Fails when the password or a session token the server issued is in one of `texts` or
  /// in a file under `folder` but the manifest: the database and journal (which hold no
  /// login secret: only a rotated OAuth2 refresh token is ever kept) are scanned too.
  static func expectNoSecret(_ server: OAuthServer, password: String = LoginTests.password, in texts: [String], folder: String) throws {
    let secrets = [password] + (try server.stats().accessTokens)
    var scanned = texts
    for file in FileManager.default.enumerator(atPath: folder)?.compactMap({ $0 as? String }) ?? []
    where !file.hasSuffix(".yaml") {
      var isFolder: ObjCBool = false
      guard FileManager.default.fileExists(atPath: folder + "/" + file, isDirectory: &isFolder), !isFolder.boolValue else { continue }
      scanned.append(String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: folder + "/" + file))) ?? Data(), as: UTF8.self))
    }
    for secret in secrets {
      for text in scanned { #expect(!text.contains(secret), "a secret was printed or written: \(text.prefix(300))") }
    }
  }

  @Test func aJobLongerThanTheSessionTokensLifeSucceedsAndNoSecretIsPrintedOrWritten() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)", "--pages", "4", "--page-delay", "0.8"])
    let path = try Self.write(Self.manifest(server, reports: true), in: folder)
    let plan = try Command.dray(["plan", path])
    #expect(plan.status == 0, "\(plan.output)")
    let result = try Command.dray(["run", path, "--verbose"])
    #expect(result.status == 0, "\(result.output)")
    let stats = try server.stats()
    // 4 pages of 0.8 s outlive a 2 s token: it was renewed before it expired, never after a 401.
    #expect(stats.loginRequests.count >= 2, "\(stats.loginRequests)")
    #expect(stats.api401 == 0)
    #expect(stats.apiRequests == 4)
    #expect(result.output.contains("login: session token from"), "\(result.output)")
    #expect(result.output.contains("login: new session token (it expires soon (expires_in)) for 2s"), "\(result.output)")
    let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
    // The report holds the login's attempts as sign-in calls, and passes its schema.
    let reports = files.filter { $0.hasSuffix(".json") }.map { folder.path + "/" + $0 }
    #expect(reports.count == 1)
    let report = try String(contentsOfFile: reports.first ?? "", encoding: .utf8)
    #expect(report.contains(#""call":"sign-in""#), "\(report)")
    #expect(try ReportCheck.problems(reports) == "")
    let page = try Command.dray(["report", path, "-o", folder.path + "/page.html"])
    #expect(page.status == 0, "\(page.output)")
    #expect(files.contains { $0.hasSuffix(".html") } && files.contains { $0.hasSuffix(".json") } && files.contains { $0.hasSuffix(".xml") })
    try Self.expectNoSecret(server, in: [plan.output, result.output, page.output], folder: folder.path)
  }

  @Test(arguments: [("json", "application/json"), ("form", "application/x-www-form-urlencoded")])
  func theBodyIsSentAsJSONOrAsAForm(body: String, contentType: String) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)", "--lifetime", "60"])
    let path = try Self.write(Self.manifest(server, body: body), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    #expect(try server.stats().loginRequests.map { $0["content_type"] } == [contentType])
    try Self.expectNoSecret(server, in: [result.output], folder: folder.path)
  }

  @Test func parallelMembersShareOneLogin() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)", "--lifetime", "60", "--token-delay", "0.3"])
    let path = try Self.write(Self.manifest(server, members: 4), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    let stats = try server.stats()
    #expect(stats.loginRequests.count == 1, "\(stats.loginRequests)")
    #expect(stats.apiRequests == 12)
  }

  /// A token in a header of the API's own name, without a prefix; no `expires_in`: used
  /// until a 401, renewed once then, and a fresh token refused again fails with the server's
  /// words, never a loop.
  @Test func aTokenWithoutExpiresInIsRenewedOnceAfterA401AndAFreshOneRefusedFails() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)", "--lifetime", "60"])
    let login = """
      body: { form: { username: \(Self.user), password: "\(Self.password)" } }
      token: /data/session
      header: X-Session
      prefix: ""
      """
    let path = try Self.write(Self.manifest(server, login: login), in: folder)
    try server.setMode("normal", rejectNext: 1)
    let renewed = try Command.dray(["run", path, "--verbose"])
    #expect(renewed.status == 0, "\(renewed.output)")
    #expect(renewed.output.contains("without expires_in: renewed only after a 401"), "\(renewed.output)")
    #expect(try server.stats().loginRequests.count == 2)
    try server.setMode("normal", rejectNext: 2)
    let refused = try Command.dray(["run", path])
    #expect(refused.status != 0)
    let line = refused.output.split(separator: "\n").first { $0.contains("refused a fresh session token") }
    #expect(line?.contains("items") == true, "\(refused.output)")
    #expect(line?.contains("The access token expired or is unknown.") == true)
    #expect(try server.stats().loginRequests.count == 4)
    try Self.expectNoSecret(server, in: [renewed.output, refused.output], folder: folder.path)
  }

  /// Each bad answer of the login endpoint is one line naming the step and what to do, with
  /// no secret in it.
  @Test(arguments: [
    ("html", "the login answer is an HTML page", "check login.url"),
    ("no_access_token", "the login answer has nothing at /data/session (its keys: data)", "check login.token"),
    ("absurd_expires_in", "expires_in at /data/expires is the number -5, a negative number of seconds", "check login.expires_in"),
    ("bad_request", "answered HTTP 400 (", "check the user and password in login.body"),
    ("wrong_password", "answered HTTP 401 (", "check the user and password in login.body"),
    // D-inject-1: a session token holding CR LF would add header fields to every API request.
    ("header_injection", "token at /data/session holds a space, a line break or another character", "check login.token"),
  ])
  func aBadLoginAnswerIsOneClearLine(mode: String, words: String, advice: String) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)"])
    let password = mode == "wrong_password" ? "pw-Wrong-4411" : Self.password
    let path = try Self.write(Self.manifest(server, password: password), in: folder)
    if mode != "wrong_password" { try server.setMode(mode) }
    let result = try Command.dray(["run", path])
    #expect(result.status != 0)
    let lines = result.output.split(separator: "\n").filter { $0.contains(words) }
    #expect(lines.count >= 1, "\(result.output)")
    #expect(lines.allSatisfy { $0.contains("items") && $0.contains(advice) }, "\(lines)")
    // The server echoed the wrong password: masked in the line.
    if mode == "wrong_password" { #expect(lines.allSatisfy { $0.contains("(you sent ***)") }, "\(lines)") }
    // A refusal is not retried: one login request.
    #expect(try server.stats().loginRequests.count == 1)
    #expect(try server.stats().apiRequests == 0)
    try Self.expectNoSecret(server, password: password, in: [result.output], folder: folder.path)
  }

  /// A login answered with a 307 or 308 to another origin: the credentials are never sent
  /// there; the step fails with one line naming login.url, the other origin and what to do.
  @Test(arguments: [307, 308]) func aLoginRedirectedToAnotherOriginSendsItNothing(status: Int) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)", "--lifetime", "60"])
    let other = try OAuthServer()
    let otherOrigin = String(other.url.dropLast())
    try server.redirect(status, to: other.url + "steal")
    let path = try Self.write(Self.manifest(server, body: "form"), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status != 0)
    let sent = try other.stats().otherPosts
    #expect(sent.isEmpty, "\(sent)")
    let lines = result.output.split(separator: "\n").filter { $0.contains("refused to follow the \(status) redirect") }
    #expect(lines.count >= 1, "\(result.output)")
    #expect(
      lines.allSatisfy { $0.contains("items") && $0.contains(otherOrigin) && $0.contains("point login.url at the final address") },
      "\(lines)")
    #expect(!result.output.contains("has nothing at"), "\(result.output)")
    #expect(try server.stats().apiRequests == 0)
    try Self.expectNoSecret(server, in: [result.output], folder: folder.path)
  }

  /// A login answered with a 301, 302 or 303 was once sent again as a GET (no body), and the
  /// step failed naming login.url for the other server's 404. It is refused, on any origin,
  /// naming the redirect's target: a login must not turn into a GET.
  @Test(arguments: [301, 302, 303]) func aLoginRedirectedAsAGetIsRefusedNamingTheTarget(status: Int) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)", "--lifetime", "60"])
    let other = try OAuthServer()
    try server.redirect(status, to: other.url + "items?x=1")
    let path = try Self.write(Self.manifest(server, body: "form"), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status != 0)
    #expect(try other.stats().apiRequests == 0)
    #expect(try other.stats().otherPosts.isEmpty)
    let lines = result.output.split(separator: "\n").filter { $0.contains("refused to follow the \(status) redirect") }
    #expect(lines.count >= 1, "\(result.output)")
    #expect(
      lines.allSatisfy {
        $0.contains("to \(other.url)items?x=1: a \(status) would send the request again as a GET")
          && $0.contains("point login.url at the final address")
      }, "\(lines)")
    #expect(try server.stats().apiRequests == 0)
    try Self.expectNoSecret(server, in: [result.output], folder: folder.path)
  }

  /// The partitions of a step and a second step that name the same login url and user share
  /// one login; a second user is a second session.
  @Test func partitionsAndStepsNamingOneLoginAndUserShareOneSessionToken() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(["--user", "\(Self.user):\(Self.password)", "--lifetime", "60", "--token-delay", "0.2"])
    let login = """
      { url: "\(server.url)login", body: { json: { username: \(Self.user), password: "\(Self.password)" } }, token: /data/session }
      """
    let path = try Self.write(
      """
      version: 1
      job: parts
      database: { path: data/db.sqlite }
      steps:
        - id: pages
          partitions: { list: [{ p: "1" }, { p: "2" }, { p: "3" }], concurrency: 3 }
          http:
            base_url: "\(server.url)"
            path: items
            query: { page: "{p}" }
            auth: { login: \(login) }
            load: { table: pages, records: /data, write: append }
        - id: again
          http:
            base_url: "\(server.url)"
            path: items
            auth: { login: \(login) }
            load: { table: again, records: /data }

      """, in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    let stats = try server.stats()
    #expect(stats.loginRequests.count == 1, "\(stats.loginRequests)")
    #expect(stats.apiRequests == 4)
    #expect(stats.api401 == 0)
    try Self.expectNoSecret(server, in: [result.output], folder: folder.path)
  }
}
