import DrayTestSupport
import Foundation
import Glibc
import Testing

/// `auth.oauth2` against `Emulator/oauth_server.py`: access tokens that live 2 s, refresh
/// tokens rotated on every use, an old one refused with invalid_grant (revoking its family).
@Suite struct OAuth2Tests {
  static let clientSecret = "s3cret-Q7vX"
  static let firstRefreshToken = "rt0-first-W2kP"
  static let client = ["--client", "app:" + clientSecret]

  /// A job of one paginated `http` step (or `members` parallel ones) with `auth.oauth2`.
  static func manifest(
    _ server: OAuthServer, database: String, grant: String = "refresh_token", clientAuth: String = "basic",
    refreshToken: String = firstRefreshToken, members: Int = 0
  ) -> String {
    var auth = [
      "auth:", "  oauth2:", "    token_url: \"\(server.url)token\"", "    grant: \(grant)", "    client_id: app",
      "    client_secret: \"\(clientSecret)\"", "    scope: read", "    client_auth: \(clientAuth)",
    ]
    if grant == "refresh_token" { auth.append("    refresh_token: \"\(refreshToken)\"") }
    func step(_ id: String, indent: String) -> String {
      let lines =
        ["- id: \(id)", "  http:", "    base_url: \"\(server.url)\"", "    path: items"] + auth.map { "    " + $0 }
        + ["    load: { table: \(id), records: /data }", "    paginate: { next: /next }"]
      return lines.map { indent + $0 + "\n" }.joined()
    }
    var steps = ""
    if members > 0 {
      steps = "  - id: group\n    parallel:\n      steps:\n" + (1...members).map { step("m\($0)", indent: "        ") }.joined()
    } else {
      steps = step("items", indent: "  ")
    }
    return "version: 1\njob: oauth\n\(database)steps:\n" + steps
  }

  static func write(_ text: String, in folder: TemporaryDirectory) throws -> String {
    let path = folder.path + "/job.yaml"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  /// Every secret the run met: the client secret and every token the server issued.
  static func secrets(_ server: OAuthServer) throws -> [String] {
    let stats = try server.stats()
    return [clientSecret, firstRefreshToken] + stats.accessTokens + stats.tokenRequests.compactMap { $0["presented"] }
      + (stats.newestRefreshToken.map { [$0] } ?? [])
  }

  /// Fails when a secret is in `text`, or in a file under `folder` other than the job's
  /// database and journal (where the kept refresh token belongs).
  static func expectNoSecret(_ secrets: [String], in texts: [String], folder: String) throws {
    var scanned = texts
    let files = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String } ?? []
    for file in files where !file.contains(".sqlite") && !file.hasSuffix(".yaml") {
      var isFolder: ObjCBool = false
      guard FileManager.default.fileExists(atPath: folder + "/" + file, isDirectory: &isFolder), !isFolder.boolValue else { continue }
      scanned.append(String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: folder + "/" + file))) ?? Data(), as: UTF8.self))
    }
    for secret in Set(secrets) where !secret.isEmpty {
      for text in scanned { #expect(!text.contains(secret), "a secret was printed or written") }
      // The Basic credentials of the client, too.
      let basic = Data("app:\(clientSecret)".utf8).base64EncodedString()
      for text in scanned { #expect(!text.contains(basic)) }
    }
  }

  /// A token request answered with a 307 or 308 to another origin: neither the client
  /// secret (in the body or in Basic) nor the refresh token is sent there; the step fails
  /// with one line naming oauth2.token_url, the other origin and what to do.
  @Test(arguments: [("basic", 307), ("body", 307), ("basic", 308), ("body", 308)])
  func aTokenRequestRedirectedToAnotherOriginSendsItNothing(clientAuth: String, status: Int) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--refresh-token", Self.firstRefreshToken])
    let other = try OAuthServer()
    let otherOrigin = String(other.url.dropLast())
    try server.redirect(status, to: other.url + "steal")
    let path = try Self.write(Self.manifest(server, database: "database: { path: data/db.sqlite }\n", clientAuth: clientAuth), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status != 0)
    let sent = try other.stats().otherPosts
    #expect(sent.isEmpty, "\(sent)")
    let lines = result.output.split(separator: "\n").filter { $0.contains("refused to follow the \(status) redirect") }
    #expect(lines.count >= 1, "\(result.output)")
    #expect(
      lines.allSatisfy {
        $0.contains("items") && $0.contains(otherOrigin) && $0.contains("point oauth2.token_url at the final address")
      }, "\(lines)")
    #expect(try server.stats().apiRequests == 0)
    try Self.expectNoSecret(try Self.secrets(server), in: [result.output], folder: folder.path)
  }

  /// A token request answered with a 301, 302 or 303 is refused, naming the target: sent
  /// again as a GET it would lose its fields.
  @Test(arguments: [301, 302, 303])
  func aTokenRequestRedirectedAsAGetIsRefusedNamingTheTarget(status: Int) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--refresh-token", Self.firstRefreshToken])
    let other = try OAuthServer()
    try server.redirect(status, to: other.url + "items")
    let path = try Self.write(Self.manifest(server, database: "database: { path: data/db.sqlite }\n", clientAuth: "body"), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status != 0)
    #expect(try other.stats().apiRequests == 0)
    let lines = result.output.split(separator: "\n").filter { $0.contains("refused to follow the \(status) redirect") }
    #expect(lines.count >= 1, "\(result.output)")
    #expect(
      lines.allSatisfy {
        $0.contains("to \(other.url)items: a \(status) would send the request again as a GET") && $0.contains("oauth2.token_url")
      },
      "\(lines)")
    try Self.expectNoSecret(try Self.secrets(server), in: [result.output], folder: folder.path)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func threeRunsLongerThanATokenEachRefreshWithTheTokenTheOneBeforeKept(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try OAuthServer(Self.client + ["--refresh-token", Self.firstRefreshToken, "--pages", "4", "--page-delay", "0.8"])
    let path = try Self.write(
      Self.manifest(server, database: target.manifestBlock + "report: { formats: [json, junit, prometheus, html] }\n"), in: folder)
    var outputs: [String] = []
    let before = try Command.dray(["plan", path])
    #expect(before.stdout.contains("refresh_token") && before.stdout.contains("the manifest's (none kept yet)"), "\(before.output)")
    outputs.append(before.output)
    var lastNewest: String?
    for run in 1...3 {
      // The second and third runs use --fresh: it does not forget the kept token.
      let result = try Command.dray(["run", path] + (run > 1 ? ["--fresh"] : []))
      outputs.append(result.output)
      #expect(result.status == 0, "run \(run): \(result.output)")
      let stats = try server.stats()
      #expect(!stats.revoked)
      #expect(!stats.tokenRequests.contains { $0["outcome"] != "ok" }, "\(stats.tokenRequests)")
      // Each run's first refresh presents the token the run before kept.
      if let lastNewest {
        let first = stats.tokenRequests.first { $0["presented"] != nil && $0["presented"] != Self.firstRefreshToken }
        #expect(stats.tokenRequests.contains { $0["presented"] == lastNewest }, "run \(run) did not present the kept token")
        _ = first
      }
      lastNewest = stats.newestRefreshToken
      #expect(try target.rows("SELECT refresh_token FROM _dray_oauth2_tokens") == [[stats.newestRefreshToken]])
      #expect(try target.rows("SELECT count(*) FROM items") == [["8"]])
    }
    // The reports list the token requests as sign-in calls, as their schema says.
    let reports = (FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? [])
      .filter { $0.hasSuffix(".json") }.map { folder.path + "/" + $0 }
    #expect(reports.count == 3)
    #expect(try reports.allSatisfy { try String(contentsOfFile: $0, encoding: .utf8).contains(#""call":"sign-in""#) })
    #expect(try ReportCheck.problems(reports) == "")
    // The job outlived its tokens: each run renewed before expiry, so no request met a 401.
    let stats = try server.stats()
    #expect(stats.tokenRequests.count >= 6, "\(stats.tokenRequests.count) token requests")
    #expect(stats.api401 == 0)
    let after = try Command.dray(["plan", path])
    #expect(after.stdout.contains("the one kept"), "\(after.output)")
    let json = try Command.dray(["plan", path, "--json"])
    #expect(json.stdout.contains("\"refresh_token\": \"the one kept"), "\(json.output)")
    outputs.append(json.output)
    outputs.append(after.output)
    try Self.expectNoSecret(try Self.secrets(server), in: outputs, folder: folder.path)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKillBetweenTheTokenAnswerAndTheFirstRequestLosesNoToken(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try OAuthServer(Self.client + ["--refresh-token", Self.firstRefreshToken])
    let path = try Self.write(Self.manifest(server, database: target.manifestBlock), in: folder)
    let killed = try ChildProcess.dray(
      ["run", path], environment: ["DRAY_TEST_CRASH_AT": "token-kept"], logPrefix: folder.path + "/killed"
    ).wait()
    #expect(killed == .signaled(SIGKILL))
    #expect(try server.stats().apiRequests == 0)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    let stats = try server.stats()
    #expect(!stats.revoked)
    #expect(!stats.tokenRequests.contains { $0["outcome"] == "invalid_grant" })
    #expect(try target.rows("SELECT count(*) FROM items") == [["6"]])
  }

  @Test func parallelMembersShareOneTokenRequest() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--refresh-token", Self.firstRefreshToken, "--lifetime", "60", "--token-delay", "0.3"])
    let path = try Self.write(
      Self.manifest(server, database: "database: { path: data/db.sqlite }\n", members: 4), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    let stats = try server.stats()
    #expect(stats.tokenRequests.count == 1, "\(stats.tokenRequests)")
    #expect(stats.apiRequests == 12)
  }

  @Test(arguments: ["basic", "body"])
  func clientAuthIsSentAsAsked(clientAuth: String) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--client-auth", clientAuth, "--lifetime", "60"])
    let path = try Self.write(
      Self.manifest(server, database: "database: { path: data/db.sqlite }\n", grant: "client_credentials", clientAuth: clientAuth),
      in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    #expect(try server.stats().tokenRequests.map { $0["client_auth"] } == [clientAuth])
    // The other way is refused by this server: invalid_client, named with what to do.
    let other = clientAuth == "basic" ? "body" : "basic"
    _ = try Self.write(
      Self.manifest(server, database: "database: { path: data/db.sqlite }\n", grant: "client_credentials", clientAuth: other),
      in: folder)
    let refused = try Command.dray(["run", path])
    #expect(refused.status != 0)
    #expect(refused.output.contains("invalid_client") && refused.output.contains("check client_id and client_secret"), "\(refused.output)")
    try Self.expectNoSecret(try Self.secrets(server), in: [result.output, refused.output], folder: folder.path)
  }

  @Test func a401RenewsOnceAndASecondFails() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--lifetime", "60"])
    let path = try Self.write(
      Self.manifest(server, database: "database: { path: data/db.sqlite }\n", grant: "client_credentials"), in: folder)
    try server.setMode("normal", rejectNext: 1)
    let renewed = try Command.dray(["run", path])
    #expect(renewed.status == 0, "\(renewed.output)")
    #expect(try server.stats().tokenRequests.count == 2)
    try server.setMode("normal", rejectNext: 2)
    let refused = try Command.dray(["run", path])
    #expect(refused.status != 0)
    #expect(refused.output.contains("refused a fresh OAuth2 access token"), "\(refused.output)")
    #expect(refused.output.contains("The access token expired or is unknown."))
    // One renewal per refusal, never a loop.
    #expect(try server.stats().tokenRequests.count == 4)
  }

  @Test(arguments: [
    ("html", "an HTML page"), ("no_access_token", "has no access_token"),
    ("absurd_expires_in", "expires_in is -5, a negative number of seconds"), ("invalid_client", "invalid_client"),
    // A field of the wrong type is named by its type, never shown (D-minor).
    ("numeric_access_token", "the token answer's access_token is a number; RFC 6749 §5.1 makes it a string"),
    ("numeric_token_type", "the token answer's token_type is a number; RFC 6749 §5.1 makes it a string"),
    ("text_expires_in", #"the token answer's expires_in is "soon", not a number of seconds"#),
    // D-inject-1: an access token holding CR LF would add header fields to every API request.
    ("header_injection", "access_token holds a space, a line break or another character a header cannot carry"),
  ])
  func aBadTokenAnswerIsOneClearLine(mode: String, words: String) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--refresh-token", Self.firstRefreshToken])
    let path = try Self.write(Self.manifest(server, database: "database: { path: data/db.sqlite }\n"), in: folder)
    try server.setMode(mode)
    let result = try Command.dray(["run", path])
    #expect(result.status != 0)
    let lines = result.output.split(separator: "\n").filter { $0.contains(words) }
    #expect(!lines.isEmpty, "\(result.output)")
    #expect(result.output.contains("token_url") || result.output.contains("client_id") || result.output.contains("check"))
    #expect(!result.output.contains("987654321012"), "\(result.output)")
    // A refused answer that rotated the refresh token (no access_token, a bad expires_in)
    // left it kept: the next run, with the server mended, is not refused.
    try server.setMode("normal")
    let next = try Command.dray(["run", path])
    #expect(next.status == 0, "\(next.output)")
    #expect(try !server.stats().revoked)
    try Self.expectNoSecret(try Self.secrets(server), in: [result.output, next.output], folder: folder.path)
  }

  @Test func anAnswerWithoutExpiresInIsUsedUntilA401() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--lifetime", "60"])
    try server.setMode("no_expires_in")
    let path = try Self.write(
      Self.manifest(server, database: "database: { path: data/db.sqlite }\n", grant: "client_credentials"), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.output.contains("without expires_in"))
  }

  /// `expires_in: 1e100` is no missing `expires_in`: the log says it was over ten years and
  /// taken as not expiring (renewed after a 401); a fractional one is used with its fraction.
  @Test(arguments: [
    ("huge_expires_in", "expires_in 1e+100 is over ten years: taken as not expiring in practice, renewed only after a 401"),
    ("fractional_expires_in", "for 60.5s"),
  ])
  func aHugeOrFractionalExpiresInIsSaidAsItIs(mode: String, words: String) throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--lifetime", "60"])
    try server.setMode(mode)
    let path = try Self.write(
      Self.manifest(server, database: "database: { path: data/db.sqlite }\n", grant: "client_credentials"), in: folder)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.output.contains(words), "\(result.output)")
    #expect(!result.output.contains("without expires_in"), "\(result.output)")
  }

  @Test func aReusedRefreshTokenIsNamedWithWhatToDoAndANewOneInTheManifestReplacesTheKeptOne() throws {
    let folder = TemporaryDirectory()
    let server = try OAuthServer(Self.client + ["--refresh-token", Self.firstRefreshToken])
    let path = try Self.write(Self.manifest(server, database: "database: { path: data/db.sqlite }\n"), in: folder)
    #expect(try Command.dray(["run", path]).status == 0)
    // Another client spent the kept token's family: the next refresh is refused.
    let stolen = try #require(try server.stats().newestRefreshToken)
    _ = try Curl.send(
      "POST", server.url + "token", headers: ["Content-Type": "application/x-www-form-urlencoded"],
      body: "grant_type=refresh_token&refresh_token=\(stolen)&client_id=app&client_secret=\(Self.clientSecret)")
    let refused = try Command.dray(["run", path])
    #expect(refused.status != 0)
    #expect(refused.output.contains("invalid_grant") && refused.output.contains("authorise dray again"), "\(refused.output)")
    #expect(refused.output.contains("the refresh token dray kept on"))
    // A person authorised again and put the new token in the manifest.
    try server.newFamily("rt-again-M4z")
    _ = try Self.write(Self.manifest(server, database: "database: { path: data/db.sqlite }\n", refreshToken: "rt-again-M4z"), in: folder)
    #expect(try Command.dray(["plan", path]).stdout.contains("it replaces the kept one"))
    let again = try Command.dray(["run", path])
    #expect(again.status == 0, "\(again.output)")
    try Self.expectNoSecret(try Self.secrets(server) + ["rt-again-M4z"], in: [refused.output, again.output], folder: folder.path)
  }

  /// `kill -9` at random instants of runs whose tokens live 1 s (so that a run refreshes
  /// several times): in the middle of a page, right after a token request, between the
  /// rotated token's commit and the first request. Every next run presents a token the
  /// server still honours, and the last one finishes the job.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func killsAtRandomInstantsNeverLoseTheRefreshToken(kind: TargetDatabase.Kind) throws {
    let seed = SeededRandom.seed(fromEnvironment: "DRAY_TEST_SEED")
    var random = SeededRandom(seed: seed)
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try OAuthServer(
      Self.client + ["--refresh-token", Self.firstRefreshToken, "--pages", "6", "--page-delay", "0.25", "--lifetime", "1"])
    let path = try Self.write(Self.manifest(server, database: target.manifestBlock), in: folder)
    var killed = 0
    for round in 0..<4 {
      let stats = try server.stats()
      let child = try ChildProcess.dray(
        ["run", path], environment: round == 0 ? ["DRAY_TEST_CRASH_AT": "token-kept"] : [:],
        logPrefix: folder.path + "/run\(round)")
      if round > 0 {
        // After the n-th API request or the n-th token request of this run, n random.
        let byTokens = random.below(2) == 0
        let n = 1 + random.below(2)
        _ = child.waitUntil(timeout: 30) {
          guard let now = try? server.stats() else { return false }
          return byTokens ? now.tokenRequests.count >= stats.tokenRequests.count + n : now.apiRequests >= stats.apiRequests + n
        }
        kill(child.pid, SIGKILL)
      }
      if child.wait() == .signaled(SIGKILL) { killed += 1 }
      #expect(try !server.stats().revoked, "seed \(seed), round \(round)")
    }
    #expect(killed >= 2, "seed \(seed): only \(killed) of 4 runs were killed mid-run")
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "seed \(seed): \(result.output)")
    let stats = try server.stats()
    #expect(!stats.revoked, "seed \(seed)")
    #expect(!stats.tokenRequests.contains { $0["outcome"] == "invalid_grant" }, "seed \(seed): \(stats.tokenRequests)")
    #expect(try target.rows("SELECT count(*) FROM items") == [["12"]])
  }
}
