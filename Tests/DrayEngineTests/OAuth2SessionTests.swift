import DrayManifest
import DrayModel
import DrayPostgres
import DrayPostgresStore
import DraySQLite
import DrayTarget
import DrayTestSupport
import DrayTransport
import Foundation
import Synchronization
import Testing

@testable import DrayEngine

/// `OAuth2Session`: when a token is renewed (by an injected clock, no sleeps), that
/// concurrent callers share one token request, and that refreshes under the database's lock
/// never present a refresh token twice, against `Emulator/oauth_server.py`.
@Suite struct OAuth2SessionTests {
  static let secret = "cs-Session-5150"

  static func caller() -> OAuth2Session.Caller {
    OAuth2Session.Caller(
      tls: TLSSettings(), timeouts: Timeouts(), retry: RetryPolicy(count: 0), cancellation: Cancellation(), budget: RetryBudget(),
      record: { _ in }, log: { _ in })
  }

  static func settings(_ server: OAuthServer, grant: OAuth2.Grant = .clientCredentials, refreshToken: String? = nil) -> OAuth2 {
    OAuth2(
      tokenURL: server.url + "token", grant: grant, clientID: "app", clientSecret: secret, refreshToken: refreshToken,
      clientAuth: .basic)
  }

  @Test func aTokenIsRenewedWhenATenthOfItsLifeOrAMinuteIsLeft() {
    let start = ContinuousClock.now
    #expect(OAuth2Session.renewalTime(expiresIn: 2, receivedAt: start) == start + .milliseconds(1800))
    #expect(OAuth2Session.renewalTime(expiresIn: 100, receivedAt: start) == start + .seconds(90))
    #expect(OAuth2Session.renewalTime(expiresIn: 600, receivedAt: start) == start + .seconds(540))
    #expect(OAuth2Session.renewalTime(expiresIn: 3600, receivedAt: start) == start + .seconds(3540))
  }

  @Test func theTokenIsKeptUntilItIsDueThenRenewedOnce() throws {
    // The server's tokens live an hour; only our clock, moved by hand, makes them due.
    let server = try OAuthServer(["--client", "app:" + Self.secret, "--lifetime", "3600"])
    let clock = TestClock()
    let session = OAuth2Session(
      settings: Self.settings(server), database: nil, onSecret: { _ in }, now: { clock.now })
    let first = try session.token(Self.caller())
    #expect(try session.token(Self.caller()) == first)
    clock.advance(by: .seconds(3539))
    #expect(try session.token(Self.caller()) == first)
    #expect(try server.stats().tokenRequests.count == 1)
    clock.advance(by: .seconds(2))
    let second = try session.token(Self.caller())
    #expect(second != first)
    #expect(try session.token(Self.caller()) == second)
    #expect(try server.stats().tokenRequests.count == 2)
    #expect(session.tokenCount == 2)
  }

  @Test func concurrentRequestsShareOneTokenRequestAndOneRenewal() throws {
    let server = try OAuthServer(["--client", "app:" + Self.secret, "--lifetime", "3600", "--token-delay", "0.3"])
    let session = OAuth2Session(settings: Self.settings(server), database: nil, onSecret: { _ in })
    let tokens = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      if let token = try? session.token(Self.caller()) { tokens.withLock { $0.append(token) } }
    }
    #expect(Set(tokens.withLock { $0 }).count == 1)
    #expect(tokens.withLock { $0 }.count == 8)
    // Eight requests refused with the same stale token: one renewal.
    let stale = try #require(tokens.withLock { $0.first })
    let renewed = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 8) { _ in
      if let token = try? session.renew(stale: stale, because: "401", Self.caller()) { renewed.withLock { $0.append(token) } }
    }
    #expect(Set(renewed.withLock { $0 }).count == 1)
    #expect(try server.stats().tokenRequests.count == 2)
  }

  /// Two runners of one job (two sessions, as two processes or machines would have) refresh
  /// at once through one database: each refresh re-reads the kept token inside the lock,
  /// so no refresh token is presented twice and the family is never revoked.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func runnersSharingADatabaseNeverPresentARefreshTokenTwice(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let database: any JobDatabase
    if kind == .postgres {
      let target = try TargetDatabase(kind, folder: folder.path)
      database = PostgresDatabase(target: PostgresTarget(url: try PostgresURL(try #require(target.url))))
    } else {
      database = SQLiteDatabase(path: folder.path + "/db.sqlite", journalPath: folder.path + "/db.sqlite")
    }
    let server = try OAuthServer(["--client", "app:" + Self.secret, "--refresh-token", "rt-first-77", "--token-delay", "0.05"])
    let settings = Self.settings(server, grant: .refreshToken, refreshToken: "rt-first-77")
    let sessions = (0..<4).map { _ in OAuth2Session(settings: settings, database: database, onSecret: { _ in }) }
    let failures = Mutex<[String]>([])
    DispatchQueue.concurrentPerform(iterations: 4) { index in
      do {
        let token = try sessions[index].token(Self.caller())
        _ = try sessions[index].renew(stale: token, because: "test", Self.caller())
      } catch {
        failures.withLock { $0.append("\(error)") }
      }
    }
    #expect(failures.withLock { $0 } == [])
    let stats = try server.stats()
    #expect(!stats.revoked)
    #expect(stats.tokenRequests.count == 8)
    let presented = stats.tokenRequests.compactMap { $0["presented"] }
    #expect(Set(presented).count == presented.count, "a refresh token was presented twice")
    let reader = try #require(try database.openReadOnly())
    #expect(try reader.keptToken(key: settings.key)?.refreshToken == stats.newestRefreshToken)
    #expect(try reader.keptToken(key: settings.key)?.manifestHash == settings.refreshTokenHash)
  }

  @Test func everyTokenIsLearntAsASecretBeforeItIsUsed() throws {
    let server = try OAuthServer(["--client", "app:" + Self.secret, "--refresh-token", "rt-first-78"])
    let folder = TemporaryDirectory()
    let database = SQLiteDatabase(path: nil, journalPath: folder.path + "/journal.sqlite")
    let learnt = Mutex<[String]>([])
    let session = OAuth2Session(
      settings: Self.settings(server, grant: .refreshToken, refreshToken: "rt-first-78"), database: database,
      onSecret: { secret in learnt.withLock { $0.append(secret) } })
    let token = try session.token(Self.caller())
    let stats = try server.stats()
    #expect(learnt.withLock { $0 }.contains(token))
    #expect(learnt.withLock { $0 }.contains(try #require(stats.newestRefreshToken)))
    #expect(learnt.withLock { $0 }.contains("rt-first-78"))
  }

  /// Rotating a token (or changing the secret) does not redo a finished step: no secret is
  /// in the fingerprint; the token endpoint, client and scope are.
  @Test func noSecretEntersTheFingerprint() throws {
    func fingerprint(secret: String, token: String, key: String, scope: String = "read") throws -> [String] {
      let manifest = try ManifestText.load(
        """
        version: 1
        job: j
        steps:
          - id: a
            http:
              base_url: https://a.example.com/
              auth: { oauth2: { token_url: "https://x/t", grant: refresh_token, client_id: c, client_secret: \(secret), refresh_token: \(token), scope: \(scope) } }
          - id: b
            http:
              base_url: https://b.example.com/
              auth: { api_key: { header: X-Key, value: \(key) } }
        """)
      return manifest.steps.map { $0.fingerprint(in: manifest) }
    }
    let first = try fingerprint(secret: "cs-1111", token: "rt-1111", key: "k-1111")
    #expect(try fingerprint(secret: "cs-2222", token: "rt-2222", key: "k-2222") == first)
    #expect(try fingerprint(secret: "cs-1111", token: "rt-1111", key: "k-1111", scope: "write")[0] != first[0])
  }
}
