public import DrayModel
internal import Foundation
internal import Synchronization

/// The requests sent to one host, against one or more budgets of `requests` in any window of
/// `per` (an `http` step's `rate_limit`, docs/http.md, "Request budget"): a sliding window
/// log, pure, on a clock the caller gives (a `Duration` since any fixed instant).
///
/// A request counts from when it is sent; once its answer came (`settle`), from then: the
/// server counted it at some instant between the two, so that a slow first answer (a new
/// connection) does not let the next window's requests arrive within the server's.
///
/// ```swift
/// var window = RequestWindow()
/// window.add(requests: 2, per: .seconds(1))
/// window.reserve(now: .zero)  // .zero
/// window.reserve(now: .zero)  // .zero
/// window.reserve(now: .milliseconds(300))  // .milliseconds(700): until the first leaves
/// ```
public struct RequestWindow: Sendable {
  /// The budgets that hold, each at once: the lowest wins.
  public private(set) var limits: [(requests: Int, per: Duration)] = []
  /// The budgets the server last stated (`RateLimit-Policy`, `follow(_:)`), held beside
  /// `limits`: the lowest of all wins.
  public private(set) var policies: [(requests: Int, per: Duration)] = []
  /// How many requests are remembered at least, with no budget or a smaller one: a budget
  /// the server states later (`follow(_:)`) counts the requests sent before it came.
  static let remembered = 1000
  /// When each request kept was (or will be) sent, or its answer came, oldest first, with
  /// its number.
  private var sent: [(at: Duration, number: Int)] = []
  /// The number of the next request.
  private var next = 0
  /// What the server said is left (`allow(_:until:)`): this many more requests before
  /// `until`; nil when it said nothing, or that instant has passed.
  public private(set) var allowance: (count: Int, until: Duration)?
  /// The requests reserved whose answers have not come (`settle`).
  private var inFlight: Set<Int> = []

  public init() {}

  /// Adds a budget of `requests` (at least 1) in any window of `per` (longer than zero); one
  /// already held is not added twice.
  public mutating func add(requests: Int, per: Duration) {
    guard !limits.contains(where: { $0.requests == requests && $0.per == per }) else { return }
    limits.append((max(1, requests), per))
  }

  /// How long a request at `now` must wait so that no window of any budget holds more than
  /// its `requests`: zero when fewer are in the last `per`; otherwise until the oldest of the
  /// last `requests` leaves the window.
  public func delay(now: Duration) -> Duration {
    var wait = Duration.zero
    if let allowance, allowance.count <= 0 { wait = max(.zero, allowance.until - now) }
    for limit in limits + policies where sent.count >= limit.requests {
      // The request `requests` back from the newest: once it is `per` old, one more fits.
      let oldest = sent[sent.count - limit.requests].at
      wait = max(wait, oldest + limit.per - now)
    }
    return wait
  }

  /// Takes the next place for a request at `now`: the wait (`delay(now:)`), and counts the
  /// request as sent when that wait ends, so that callers who ask at once queue one behind
  /// the other.
  /// - Returns: the wait, and the request's number for `settle`.
  public mutating func reserve(now: Duration) -> (wait: Duration, number: Int) {
    let wait = delay(now: now)
    let number = next
    next += 1
    sent.append((now + wait, number))
    inFlight.insert(number)
    if let left = allowance { allowance = now + wait >= left.until ? nil : (left.count - 1, left.until) }
    let keep = max(Self.remembered, (limits + policies).map(\.requests).max() ?? 0)
    if sent.count > keep { sent.removeFirst(sent.count - keep) }
    return (wait, number)
  }

  /// The server stated its budgets (`RateLimit-Policy`: `requests` in any window of `per`),
  /// which replace those it stated before; the requests already sent count against them.
  public mutating func follow(_ stated: [(requests: Int, per: Duration)]) {
    policies = stated.map { (max(1, $0.requests), $0.per) }
  }

  /// The server said `remaining` requests are left until `instant`, after the request
  /// whose answer said so (settled already): the requests still waiting for their answers
  /// may not have been counted yet, so they are taken off; at 0, no request is sent before
  /// `instant`. While an allowance holds (`now` before its end), a new one never raises its
  /// count: answers may arrive out of order, and an older one says more is left.
  public mutating func allow(_ remaining: Int, until instant: Duration, now: Duration) {
    let count = remaining - inFlight.count
    if let held = allowance, now < held.until {
      allowance = (min(held.count, count), max(held.until, instant))
    } else {
      allowance = (count, instant)
    }
  }

  /// Counts request `number` from `now`, when its answer came (or its attempt ended); one
  /// no longer kept is past every window already.
  public mutating func settle(_ number: Int, now: Duration) {
    inFlight.remove(number)
    guard let index = sent.firstIndex(where: { $0.number == number }), sent[index].at < now else { return }
    sent[index].at = now
    sent.sort { $0.at < $1.at }
  }
}

/// The request budgets of a run, one `RequestWindow` per origin (`Origin`), shared by every
/// step, parallel member and partition. Waits happen on `sleeper`, after the registry's lock
/// is let go; tests inject `now` and `sleeper` so that no test waits on the system's clock.
public final class RequestBudgets: Sendable {
  private let windows = Mutex<[Origin: RequestWindow]>([:])
  private let now: @Sendable () -> Duration
  private let sleeper: @Sendable (Duration, Cancellation) throws -> Void

  /// - Parameters:
  ///   - now: the time since any fixed instant; by default the continuous clock's since
  ///     the budgets were made.
  ///   - sleeper: waits; by default `RetryRunner.serverWait` (wakes to honour cancellation;
  ///     no wait in a replay, which asks no server).
  public init(
    now: (@Sendable () -> Duration)? = nil,
    sleeper: @escaping @Sendable (Duration, Cancellation) throws -> Void = RetryRunner.serverWait
  ) {
    let start = ContinuousClock.now
    self.now = now ?? { ContinuousClock.now - start }
    self.sleeper = sleeper
  }

  /// Waits until a request to `url` fits its host's budgets, after adding `limit` (when
  /// given: `requests` in any window of `per`) to them, then sends it with `send`, and counts
  /// it from when `send` returned or threw (`RequestWindow.settle`). A request to a host
  /// without a budget is not paced, but counted: a budget its server states later
  /// (`RateLimit-Policy`) counts it. A URL without an origin is neither.
  /// - Returns: what `send` returned, and how long the request waited.
  /// - Throws: `TransportError.cancelled` when cancelled during the wait; what `send` throws.
  public func send<T>(
    url: String, limit: (requests: Int, per: Duration)?, cancellation: Cancellation, _ send: () throws -> T
  ) throws -> (T, waited: Duration) {
    guard let origin = Origin(url) else { return (try send(), .zero) }
    let reserved = windows.withLock { windows -> (wait: Duration, number: Int) in
      var window = windows[origin] ?? RequestWindow()
      if let limit { window.add(requests: limit.requests, per: limit.per) }
      let reserved = window.reserve(now: now())
      windows[origin] = window
      return reserved
    }
    defer { windows.withLock { $0[origin]?.settle(reserved.number, now: now()) } }
    if reserved.wait > .zero { try sleeper(reserved.wait, cancellation) }
    return (try send(), reserved.wait)
  }

  /// Reads the server's own budget signals of an answer from `url` (`RateLimitSignal`): no
  /// more requests go to that host than they say are left before their reset (none when
  /// none is left), and, where it states its quota and window (`RateLimit-Policy`), no more
  /// than that quota in any such window; with or without a `rate_limit`.
  /// - Parameter maxPause: the longest reset or window honoured (the step's
  ///   `retry.max_retry_after`); fields asking for a longer one are ignored, and a 429 then
  ///   meets the retry policy.
  /// - Returns: the pause they asked for when none is left; nil otherwise.
  @discardableResult
  public func observe(
    url: String, headers: HTTPHeaders, maxPause: Duration = RateLimitSignal.maxPause, epochNow: Double? = nil
  ) -> Duration? {
    guard let origin = Origin(url) else { return nil }
    let signal = RateLimitSignal.read(headers, epochNow: epochNow ?? Date().timeIntervalSince1970, maxPause: maxPause)
    let policies = RateLimitSignal.policies(headers, maxWindow: maxPause)
    guard signal != nil || !policies.isEmpty else { return nil }
    let now = now()
    windows.withLock { windows in
      var window = windows[origin] ?? RequestWindow()
      if let signal { window.allow(signal.remaining, until: now + signal.reset, now: now) }
      if !policies.isEmpty { window.follow(policies) }
      windows[origin] = window
    }
    guard let signal, signal.remaining <= 0 else { return nil }
    return signal.reset
  }
}

/// The rate limit fields a server sends: `RateLimit-Remaining` and `RateLimit-Reset`, their
/// common `X-RateLimit-Remaining` and `X-RateLimit-Reset` forms, and the IETF draft's
/// `RateLimit` field (draft-ietf-httpapi-ratelimit-headers: `limit=10, remaining=0,
/// reset=5`, or `"default";r=0;t=5`) and `RateLimit-Policy` field (`policies`). A reset is seconds to wait, or a Unix time (a value
/// past 10^9, as GitHub's and others' `X-RateLimit-Reset`): both occur.
public enum RateLimitSignal {
  /// The longest pause honoured: a reset further away is taken as a mistake and ignored.
  public static let maxPause = Duration.seconds(3600)

  /// How long to send nothing: the reset's wait when the remaining count is 0; nil when a
  /// count remains, or `read` finds nothing.
  public static func pause(_ headers: HTTPHeaders, epochNow: Double) -> Duration? {
    read(headers, epochNow: epochNow).flatMap { $0.remaining <= 0 ? $0.reset : nil }
  }

  /// The requests left and the wait until the budget resets; nil when a field is missing or
  /// unreadable, the count is negative, or the wait is not above zero or past `maxPause`.
  public static func read(
    _ headers: HTTPHeaders, epochNow: Double, maxPause: Duration = maxPause
  ) -> (remaining: Int, reset: Duration)? {
    var remaining = (headers["RateLimit-Remaining"] ?? headers["X-RateLimit-Remaining"]).flatMap(number)
    var reset = (headers["RateLimit-Reset"] ?? headers["X-RateLimit-Reset"]).flatMap(number)
    if let field = headers["RateLimit"] {
      for part in field.split(whereSeparator: { $0 == "," || $0 == ";" }) {
        let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard pair.count == 2, let value = number(pair[1]) else { continue }
        switch pair[0].lowercased() {
        case "remaining", "r": remaining = remaining ?? value
        case "reset", "t": reset = reset ?? value
        default: break
        }
      }
    }
    guard let remaining, remaining >= 0, remaining < 1e9, let reset, reset >= 0 else { return nil }
    let seconds = reset > 1e9 ? reset - epochNow : reset
    guard seconds > 0, seconds <= Double(maxPause.components.seconds) else { return nil }
    return (Int(remaining), .milliseconds(Int64((seconds * 1000).rounded(.up))))
  }

  /// The quotas a server states in `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers):
  /// `"default";q=100;w=60` in the current draft, `100;w=60` in older ones, several
  /// separated by commas (`"burst";q=10;w=1, "day";q=1000;w=86400`): each `q` requests
  /// (the bare number in older drafts) in any window of `w` seconds. A policy without `w`,
  /// with a quota unit (`qu`) other than `requests`, a quota not from 1 to 10^9, or a window
  /// not above zero or longer than `maxWindow` is skipped.
  public static func policies(_ headers: HTTPHeaders, maxWindow: Duration = maxPause) -> [(requests: Int, per: Duration)] {
    guard let field = headers["RateLimit-Policy"] else { return [] }
    var out: [(requests: Int, per: Duration)] = []
    for item in field.split(separator: ",") {
      let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
      guard let first = parts.first else { continue }
      var quota = first.hasPrefix("\"") ? nil : number(first)
      var window: Double?
      var unit = "requests"
      for part in parts.dropFirst() {
        let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard pair.count == 2 else { continue }
        switch pair[0].lowercased() {
        case "q": quota = number(pair[1])
        case "w": window = number(pair[1])
        case "qu": unit = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
        default: break
        }
      }
      guard unit == "requests", let quota, quota >= 1, quota <= 1e9, quota == quota.rounded(), let window, window > 0,
        window <= Double(maxWindow.components.seconds)
      else { continue }
      out.append((Int(quota), .milliseconds(Int64((window * 1000).rounded(.up)))))
    }
    return out
  }

  private static func number(_ text: String) -> Double? {
    Double(text.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite ? $0 : nil }
  }
}
