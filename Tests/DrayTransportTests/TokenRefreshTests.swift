import DrayModel
import DrayPlatform
import DrayTestSupport
import DrayTransport
import Foundation
import Synchronization
import Testing

/// The re-auth rule of platform-api.md §1: renew before `exp`, or once on a 401, shared by
/// concurrent calls; never a loop.
@Suite struct TokenRefreshTests {
  func schemes(_ client: PlatformClient) -> (Result<[ResourceScheme], any Error>, [Attempt]) {
    var attempts: [Attempt] = []
    let result = Result { try client.schemes(policy: NetworkFixture.policy(), record: { attempts.append($0) }) }
    return (result, attempts)
  }

  func signIns(_ net: NetworkFixture) throws -> Int { try net.requests("/api/v1/auth/jwt/obtain/").count }

  @Test func aTokenNearItsExpIsRenewedBeforeUseWithoutA401() throws {
    let clock = TestClock()
    let net = try NetworkFixture(["--token-lifetime", "2"], clock: clock)
    #expect(schemes(net.client).0.errorText == nil)
    // Within the last tenth of the token's two seconds, it is renewed before use.
    clock.advance(by: .milliseconds(1799))
    #expect(schemes(net.client).1.map(\.call) == [nil])
    clock.advance(by: .milliseconds(1))
    let (result, attempts) = schemes(net.client)
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["ok", "ok"])
    #expect(attempts.map(\.call) == ["sign-in", nil])
    #expect(attempts[0].message == "signed in again: the token expires soon (exp)")
    #expect(net.session.signInCount == 2)
    #expect(try signIns(net) == 2)
    #expect(try net.allRequests().allSatisfy { $0.status != 401 })
  }

  /// An `exp` too far ahead for any clock (`1e19`, `1e300`, 2^63-1 seconds) is no reason to
  /// renew: the token is kept until a 401, as one without `exp`.
  @Test func aTokenWhoseExpIsFarBeyondAnyClockIsKeptUntilA401() throws {
    let now = Int64(Date().timeIntervalSince1970)
    for lifetime in ["1e19", "1e300", "\(Int64.max - now)"] {
      let net = try NetworkFixture(rows: 10)
      try net.config(#"{"token_lifetime": \#(lifetime)}"#)
      #expect(schemes(net.client).0.errorText == nil)
      let (result, attempts) = schemes(net.client)
      #expect(result.errorText == nil)
      #expect(attempts.map(\.call) == [nil])
      #expect(net.session.signInCount == 1)
      try net.config(#"{"revoke_tokens": true}"#)
      #expect(schemes(net.client).0.errorText == nil)
      #expect(net.session.signInCount == 2)
    }
  }

  @Test func aRefusedTokenIsRenewedOnceAndTheCallRepeated() throws {
    let net = try NetworkFixture()
    #expect(schemes(net.client).0.errorText == nil)
    try net.config(#"{"revoke_tokens": true}"#)
    let (result, attempts) = schemes(net.client)
    #expect(result.errorText == nil)
    #expect(attempts.map(\.outcome.code) == ["http_401", "ok", "ok"])
    #expect(attempts.map(\.call) == [nil, "sign-in", nil])
    #expect(
      attempts[0].message
        == "HTTP 401 Unauthorized from \(net.emulator.url)api/v1/schema/: Unauthorized; the token was refused, so dray signs in again and repeats the call once"
    )
    #expect(attempts[0].wait == 0)
    #expect(attempts[1].message == "signed in again: the token was refused (401)")
    #expect(net.session.signInCount == 2)
    let schema = try net.requests("/api/v1/schema/")
    #expect(schema.map(\.status) == [200, 401, 200])
    #expect(schema[1]["Authorization"] != schema[2]["Authorization"])
  }

  @Test func aSecond401AfterANewTokenFailsWithoutLooping() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/schema/", "status": 401, "description": "no access to the schema"}]"#)
    let (result, attempts) = schemes(net.client)
    #expect(
      result.errorText
        == "the server refused a fresh token: HTTP 401 Unauthorized from \(net.emulator.url)api/v1/schema/: no access to the schema; "
        + "check that the user may read this resource")
    #expect((result.error as? PlatformError)?.code == "auth_failed")
    #expect(attempts.map(\.outcome.code) == ["ok", "http_401", "ok", "auth_failed"])
    #expect(attempts.map(\.call) == ["sign-in", nil, "sign-in", nil])
    #expect(try net.requests("/api/v1/schema/").count == 2)
    #expect(try signIns(net) == 2)
  }

  @Test func concurrentCallsMeetingTheSameStaleTokenShareOneSignIn() throws {
    let net = try NetworkFixture()
    #expect(schemes(net.client).0.errorText == nil)
    try net.config(#"{"revoke_tokens": true}"#)
    let callers = 8
    let session = net.session
    let outcomes = Mutex<[[String]]>([])
    let renewals = Mutex(0)
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for _ in 0..<callers {
      done.enter()
      Thread.detachNewThread {
        let client = PlatformClient(session: session, cancellation: Cancellation())
        start.wait()
        let (result, attempts) = schemes(client)
        let own = attempts.filter { $0.call == nil }.map(\.outcome.code)
        outcomes.withLock { $0.append(own + (result.errorText.map { [$0] } ?? [])) }
        renewals.withLock { $0 += attempts.filter { $0.call == "sign-in" }.count }
        done.leave()
      }
    }
    for _ in 0..<callers { start.signal() }
    done.wait()
    let all = outcomes.withLock { $0 }
    #expect(all.count == callers)
    #expect(all.allSatisfy { $0 == ["ok"] || $0 == ["http_401", "ok"] }, "\(all)")
    #expect(all.contains(["http_401", "ok"]))
    // The one renewal is recorded by the call that made it.
    #expect(renewals.withLock { $0 } == 1)
    #expect(net.session.signInCount == 2)
    #expect(try signIns(net) == 2)
  }

  @Test func aServerEchoingTheTokenNeverPutsItInTheError() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/schema/", "status": 400, "description": "bad", "echo_authorization": true}]"#)
    let (result, _) = schemes(net.client)
    let sent = try #require(try net.requests("/api/v1/schema/").first?["Authorization"])
    #expect(result.errorText == "HTTP 400 Bad Request from \(net.emulator.url)api/v1/schema/: bad; you sent Authorization: Bearer ***")
    #expect(result.errorText?.contains(sent.dropFirst(7)) == false)
  }

  @Test func aSignInThatKeepsFailingIsNotRetriedAgainByTheCall() throws {
    let net = try NetworkFixture()
    try net.faults(#"[{"path": "/api/v1/auth/jwt/obtain/", "status": 503}]"#)
    let (result, attempts) = schemes(net.client)
    #expect(
      result.errorText
        == "HTTP 503 Service Unavailable from \(net.emulator.url)api/v1/auth/jwt/obtain/: injected fault; gave up after 4 attempts (retry.count: 3)"
    )
    // Four sign-in attempts, and no attempt of the call, which was never sent: not 4 × 4.
    #expect(attempts.map(\.call) == ["sign-in", "sign-in", "sign-in", "sign-in"])
    #expect(try signIns(net) == 4)
    #expect(try net.requests("/api/v1/schema/").isEmpty)
  }
}
