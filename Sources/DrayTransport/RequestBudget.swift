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
  /// When each request kept was (or will be) sent, or its answer came, oldest first, with
  /// its number.
  private var sent: [(at: Duration, number: Int)] = []
  /// The number of the next request.
  private var next = 0

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
    for limit in limits where sent.count >= limit.requests {
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
    let keep = limits.map(\.requests).max() ?? 0
    if sent.count > keep { sent.removeFirst(sent.count - keep) }
    return (wait, number)
  }

  /// Counts request `number` from `now`, when its answer came (or its attempt ended); one
  /// no longer kept is past every window already.
  public mutating func settle(_ number: Int, now: Duration) {
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
  ///   - sleeper: waits; by default `RetryRunner.sleep` (wakes to honour cancellation).
  public init(
    now: (@Sendable () -> Duration)? = nil,
    sleeper: @escaping @Sendable (Duration, Cancellation) throws -> Void = RetryRunner.sleep
  ) {
    let start = ContinuousClock.now
    self.now = now ?? { ContinuousClock.now - start }
    self.sleeper = sleeper
  }

  /// Waits until a request to `url` fits its host's budgets, after adding `limit` (when
  /// given: `requests` in any window of `per`) to them, then sends it with `send`, and counts
  /// it from when `send` returned or threw (`RequestWindow.settle`). A request to a host
  /// without a budget, or to a URL without an origin, is neither paced nor counted.
  /// - Returns: what `send` returned, and how long the request waited.
  /// - Throws: `TransportError.cancelled` when cancelled during the wait; what `send` throws.
  public func send<T>(
    url: String, limit: (requests: Int, per: Duration)?, cancellation: Cancellation, _ send: () throws -> T
  ) throws -> (T, waited: Duration) {
    guard let origin = Origin(url) else { return (try send(), .zero) }
    let reserved = windows.withLock { windows -> (wait: Duration, number: Int)? in
      guard limit != nil || windows[origin] != nil else { return nil }
      var window = windows[origin] ?? RequestWindow()
      if let limit { window.add(requests: limit.requests, per: limit.per) }
      let reserved = window.reserve(now: now())
      windows[origin] = window
      return reserved
    }
    guard let reserved else { return (try send(), .zero) }
    defer { windows.withLock { $0[origin]?.settle(reserved.number, now: now()) } }
    if reserved.wait > .zero { try sleeper(reserved.wait, cancellation) }
    return (try send(), reserved.wait)
  }
}
