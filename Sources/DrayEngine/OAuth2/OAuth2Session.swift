internal import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Synchronization

/// The OAuth 2.0 access tokens of a run, one `OAuth2Session` per token endpoint and client
/// (`OAuth2.key`), shared by every step, parallel member and partition that names them.
final class OAuth2Sessions: Sendable {
  private let sessions = Mutex<[String: OAuth2Session]>([:])
  private let make: @Sendable (OAuth2) -> OAuth2Session

  init(make: @escaping @Sendable (OAuth2) -> OAuth2Session) { self.make = make }

  /// The session of `settings`' token endpoint and client, made on first use.
  func session(for settings: OAuth2) -> OAuth2Session {
    sessions.withLock { sessions in
      if let session = sessions[settings.key] { return session }
      let session = make(settings)
      sessions[settings.key] = session
      return session
    }
  }
}

/// One token endpoint and client's access token, shared across threads. The renewal rule
/// lives here and only here (docs/auth.md):
///
/// - The token is fetched when a request first needs it, and kept for the run.
/// - It is renewed before use once less than a tenth of its life (`expires_in`), or a
///   minute, whichever is less, is left (`renewalTime`); a token without `expires_in` is
///   renewed only by a 401.
/// - A 401 renews it once (`renew(stale:)`); every request that met the same stale token
///   waits for that one renewal, then repeats once. A fresh token refused again fails the
///   step with the server's words. Never a loop.
/// - With `grant: refresh_token`, each refresh runs under the lock of the job's database
///   (`TokenKeeper`), re-reading the kept token inside it, and a rotated refresh token is
///   committed there before the new access token is used (`OAuth2Refresh`).
///
/// Every token obtained is passed to `onSecret` so that the run masks it.
final class OAuth2Session: Sendable {
  let settings: OAuth2
  /// Where a rotated refresh token is kept; nil for `client_credentials`.
  private let database: (any JobDatabase)?
  private let onSecret: @Sendable (String) -> Void
  private let now: @Sendable () -> ContinuousClock.Instant
  private let state = Mutex<State>(State())
  /// Serialises renewals so that concurrent requests share one.
  private let renewal = Mutex<Void>(())

  struct State {
    var token: String?
    var renewAt: ContinuousClock.Instant?
    /// Token requests answered with a token so far.
    var tokens = 0
  }

  /// What a token request needs from the step that makes it.
  struct Caller {
    var tls: TLSSettings
    var timeouts: Timeouts
    var retry: RetryPolicy
    var cancellation: Cancellation
    var budget: RetryBudget
    /// Each attempt of a token request (call `token`), for the step's report.
    var record: (Attempt) -> Void
    /// A line for the step's log.
    var log: (String) -> Void
  }

  /// - Parameters:
  ///   - database: the job's database, where `grant: refresh_token` keeps rotated tokens.
  ///   - onSecret: called with every token (access and refresh) as it arrives, before it
  ///     is used or kept; it must not call back into the session.
  ///   - now: the monotonic clock that decides when a token is due; tests move one by hand.
  init(
    settings: OAuth2, database: (any JobDatabase)?, onSecret: @escaping @Sendable (String) -> Void,
    now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
  ) {
    self.settings = settings
    self.database = settings.grant == .refreshToken ? database : nil
    self.onSecret = onSecret
    self.now = now
  }

  /// Token requests that gave a token so far (the first, plus renewals).
  var tokenCount: Int { state.withLock { $0.tokens } }

  /// The current access token, fetched first when there is none or when it is due.
  /// - Throws: `OAuth2Error`, `TransportError`, the database's errors.
  func token(_ caller: Caller) throws -> String {
    let (token, renewAt) = state.withLock { ($0.token, $0.renewAt) }
    if let token {
      guard let renewAt, now() >= renewAt else { return token }
      return try renew(stale: token, because: "it expires soon (expires_in)", caller)
    }
    return try renew(stale: nil, because: nil, caller)
  }

  /// A new access token, unless another request already replaced `stale`.
  /// - Throws: `OAuth2Error`, `TransportError`, the database's errors.
  func renew(stale: String?, because: String?, _ caller: Caller) throws -> String {
    try renewal.withLock { _ in
      if let current = state.withLock({ $0.token }), current != stale { return current }
      // Its life is counted from before the request, by this session's clock: never late.
      let sentAt = now()
      let refresh = OAuth2Refresh(settings: settings, onSecret: onSecret)
      let answer: OAuth2Refresh.Answer
      if let database {
        let keeper = try database.openTokenKeeper(cancellation: caller.cancellation)
        defer { keeper.close() }
        answer = try refresh.refreshing(keeper: keeper, caller)
      } else {
        answer = try refresh.request(refreshToken: nil, caller).answer.get()
      }
      let renewAt = answer.expiresIn.map { OAuth2Session.renewalTime(expiresIn: $0, receivedAt: sentAt) }
      state.withLock {
        $0.token = answer.accessToken
        $0.renewAt = renewAt
        $0.tokens += 1
      }
      let life = answer.expiresIn.map { " for \(Int($0))s" } ?? ", without expires_in: renewed only after a 401"
      caller.log(
        (stale == nil ? "oauth2: access token from \(settings.tokenURL)" : "oauth2: new access token (\(because ?? "renewed"))")
          + life)
      return answer.accessToken
    }
  }

  /// When to renew a token that lives `expiresIn` seconds from `receivedAt`: once less
  /// than a tenth of its life or a minute, whichever is less, is left.
  static func renewalTime(expiresIn: Double, receivedAt: ContinuousClock.Instant) -> ContinuousClock.Instant {
    let margin = min(expiresIn / 10, 60)
    return receivedAt + .milliseconds(Int64((expiresIn - margin) * 1000))
  }
}
