internal import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Synchronization

/// The tokens of a run's sign-ins (`auth.oauth2`, `auth.login`), one `TokenSession` per
/// token endpoint and client or login endpoint and user (`OAuth2.key`, `Login.key`), shared
/// by every step, parallel member and partition that names them.
final class TokenSessions: Sendable {
  private let sessions = Mutex<[String: TokenSession]>([:])

  init() {}

  /// The session kept under `key`, made by `make` on first use.
  func session(key: String, make: () -> TokenSession) -> TokenSession {
    sessions.withLock { sessions in
      if let session = sessions[key] { return session }
      let session = make()
      sessions[key] = session
      return session
    }
  }
}

/// One sign-in's token (an OAuth 2.0 access token, a login's session token), shared across
/// threads. The renewal rule lives here and only here (docs/auth.md):
///
/// - The token is fetched when a request first needs it, and kept for the run.
/// - It is renewed before use once less than a tenth of its life (`expires_in`), or a
///   minute, whichever is less, is left (`renewalTime`); a token without `expires_in` is
///   renewed only by a 401.
/// - A 401 renews it once (`renew(stale:)`); every request that met the same stale token
///   waits for that one renewal, then repeats once. A fresh token refused again fails the
///   step with the server's words. Never a loop.
///
/// How a token is fetched is the sign-in's own (`fetch`): `OAuth2Refresh` under the job's
/// database lock for a rotating refresh token, `LoginRequest` for a login. The fetcher
/// passes every token to the run's redactor before it returns it.
final class TokenSession: Sendable {
  /// What one token request gave: the token, and its life in seconds when the answer said.
  struct Fetched {
    var token: String
    /// Seconds the token lives; nil when the answer did not say or said more than
    /// `longestLifetime`.
    var expiresIn: Double?
    /// The answer's `expires_in` as written, when it said more than `longestLifetime`.
    var statedLifetime: String? = nil
  }

  /// What a token request needs from the step that makes it.
  struct Caller {
    var tls: TLSSettings
    var timeouts: Timeouts
    var retry: RetryPolicy
    var cancellation: Cancellation
    var budget: RetryBudget
    /// Each attempt of a token request (call `sign-in`), for the step's report.
    var record: (Attempt) -> Void
    /// A line for the step's log.
    var log: (String) -> Void
  }

  /// The log lines' words: `oauth2` and `access token`, or `login` and `session token`.
  let kind: String
  let noun: String
  /// Where tokens come from, for the log (a display URL).
  let source: String
  private let fetch: @Sendable (Caller) throws -> Fetched
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

  /// - Parameters:
  ///   - now: the monotonic clock that decides when a token is due; tests move one by hand.
  ///   - fetch: one token request; it must not call back into the session.
  init(
    kind: String, noun: String, source: String, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
    fetch: @escaping @Sendable (Caller) throws -> Fetched
  ) {
    self.kind = kind
    self.noun = noun
    self.source = source
    self.now = now
    self.fetch = fetch
  }

  /// Token requests that gave a token so far (the first, plus renewals).
  var tokenCount: Int { state.withLock { $0.tokens } }

  /// The current token, fetched first when there is none or when it is due.
  /// - Throws: what `fetch` throws.
  func token(_ caller: Caller) throws -> String {
    let (token, renewAt) = state.withLock { ($0.token, $0.renewAt) }
    if let token {
      guard let renewAt, now() >= renewAt else { return token }
      return try renew(stale: token, because: "it expires soon (expires_in)", caller)
    }
    return try renew(stale: nil, because: nil, caller)
  }

  /// A new token, unless another request already replaced `stale`.
  /// - Throws: what `fetch` throws.
  func renew(stale: String?, because: String?, _ caller: Caller) throws -> String {
    try renewal.withLock { _ in
      if let current = state.withLock({ $0.token }), current != stale { return current }
      // Its life is counted from before the request, by this session's clock: never late.
      let sentAt = now()
      let fetched = try fetch(caller)
      let renewAt = fetched.expiresIn.map { TokenSession.renewalTime(expiresIn: $0, receivedAt: sentAt) }
      state.withLock {
        $0.token = fetched.token
        $0.renewAt = renewAt
        $0.tokens += 1
      }
      let life = TokenSession.lifeWords(fetched)
      caller.log((stale == nil ? "\(kind): \(noun) from \(source)" : "\(kind): new \(noun) (\(because ?? "renewed"))") + life)
      return fetched.token
    }
  }

  /// When to renew a token that lives `expiresIn` seconds from `receivedAt`: once less
  /// than a tenth of its life or a minute, whichever is less, is left.
  static func renewalTime(expiresIn: Double, receivedAt: ContinuousClock.Instant) -> ContinuousClock.Instant {
    let margin = min(expiresIn / 10, 60)
    return receivedAt + .milliseconds(Int64((expiresIn - margin) * 1000))
  }

  /// How the log line of a new token states its life: ` for 3600s` (`3599.5s` with its
  /// fraction), `, expires_in 1e100 is over ten years: taken as not expiring, renewed only
  /// after a 401`, or `, without expires_in: renewed only after a 401`.
  static func lifeWords(_ fetched: Fetched) -> String {
    if let seconds = fetched.expiresIn {
      return " for " + (seconds == seconds.rounded() ? String(Int64(seconds)) : String(seconds)) + "s"
    }
    if let stated = fetched.statedLifetime {
      return ", expires_in \(stated) is over ten years: taken as not expiring in practice, renewed only after a 401"
    }
    return ", without expires_in: renewed only after a 401"
  }

  /// Longest `expires_in` renewed by time: ten years. A longer one is renewed only by a 401.
  static let longestLifetime: Double = 10 * 365 * 24 * 3600
}

/// An OAuth 2.0 token endpoint and client's session (`auth.oauth2`).
typealias OAuth2Session = TokenSession

extension TokenSession {
  /// The session of an `auth.oauth2`. With `grant: refresh_token`, each refresh runs under
  /// the lock of the job's database (`TokenKeeper`), re-reading the kept token inside it,
  /// and a rotated refresh token is committed there before the new access token is used
  /// (`OAuth2Refresh`).
  /// - Parameters:
  ///   - database: the job's database, where `grant: refresh_token` keeps rotated tokens.
  ///   - onSecret: called with every token (access and refresh) as it arrives, before it
  ///     is used or kept; it must not call back into the session.
  convenience init(
    settings: OAuth2, database: (any JobDatabase)?, onSecret: @escaping @Sendable (String) -> Void,
    now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
  ) {
    let database = settings.grant == .refreshToken ? database : nil
    self.init(kind: "oauth2", noun: "access token", source: settings.tokenURL, now: now) { caller in
      let refresh = OAuth2Refresh(settings: settings, onSecret: onSecret)
      let answer: OAuth2Refresh.Answer
      if let database {
        let keeper = try database.openTokenKeeper(cancellation: caller.cancellation)
        defer { keeper.close() }
        answer = try refresh.refreshing(keeper: keeper, caller)
      } else {
        answer = try refresh.request(refreshToken: nil, caller).answer.get()
      }
      return Fetched(token: answer.accessToken, expiresIn: answer.expiresIn, statedLifetime: answer.statedLifetime)
    }
  }
}
