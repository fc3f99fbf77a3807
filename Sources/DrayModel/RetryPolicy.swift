/// How a step retries a call that failed transiently (docs/network.md, "Retries").
///
/// The wait before retry `n` (1-based) is
///
///     base(n)  = interval                                   (backoff: fixed)
///     base(n)  = min(max_interval, interval × 2^(n-1))      (backoff: exponential)
///     wait(n)  = uniform random in [0, base(n)]             (jitter: true, the default: "full jitter")
///     wait(n)  = base(n)                                    (jitter: false)
///
/// For `interval: 1s, backoff: exponential, max_interval: 30s`:
///
/// | retry | base | wait with jitter (the default) |
/// |---|---|---|
/// | 1 | 1 s | 0 – 1 s |
/// | 2 | 2 s | 0 – 2 s |
/// | 3 | 4 s | 0 – 4 s |
/// | 4 | 8 s | 0 – 8 s |
/// | 5 | 16 s | 0 – 16 s |
/// | 6+ | 30 s | 0 – 30 s |
///
/// Full jitter is the scheme of "Exponential Backoff And Jitter" (AWS Architecture Blog,
/// 2015): calls that failed together (the members of a `parallel` group) spread their
/// retries instead of meeting the server again at the same instants. A server's
/// `Retry-After` (RFC 9110 §10.2.3) replaces the computed wait when it is longer, up to
/// `maxRetryAfter`; a longer demand fails the call. `maxElapsed`, when set, bounds the time
/// from the first attempt to the start of the last; `waitBudget` bounds the waits of the
/// whole job, over every step.
public struct RetryPolicy: Sendable, Hashable {
  public enum Backoff: String, Sendable, Hashable, CaseIterable {
    case fixed, exponential
  }

  /// Retries after the first attempt (the SDK's `retryCount`); 0 means one attempt only.
  public var count: Int
  /// Base wait between attempts (the SDK's `retryIntervalSec`).
  public var interval: Duration
  public var backoff: Backoff
  /// Longest computed wait.
  public var maxInterval: Duration
  /// Full jitter on the computed wait; on by default.
  public var jitter: Bool
  /// Longest time from the first attempt to the start of the last one; nil for no bound.
  public var maxElapsed: Duration?
  /// Longest `Retry-After` honoured (default 15 min, for unattended jobs); a server that
  /// asks for longer fails the call with `retry_after_too_long`.
  public var maxRetryAfter: Duration
  /// Longest total of retry waits in one run of the job, over every step and call (default
  /// 30 min); a wait that would pass it ends the call. The job's value only: a step cannot
  /// set it.
  public var waitBudget: Duration

  public init(
    count: Int = 3, interval: Duration = .seconds(1), backoff: Backoff = .exponential,
    maxInterval: Duration = .seconds(30), jitter: Bool = true, maxElapsed: Duration? = nil,
    maxRetryAfter: Duration = .seconds(15 * 60), waitBudget: Duration = .seconds(30 * 60)
  ) {
    self.count = count
    self.interval = interval
    self.backoff = backoff
    self.maxInterval = maxInterval
    self.jitter = jitter
    self.maxElapsed = maxElapsed
    self.maxRetryAfter = maxRetryAfter
    self.waitBudget = waitBudget
  }

  /// The default policy: 3 retries, 1 s apart, doubling, at most 30 s, with full jitter.
  public static let `default` = RetryPolicy()

  /// The wait before retry `retry` (1-based), before any `Retry-After`.
  /// - Parameters:
  ///   - retry: 1 for the first retry.
  ///   - random: returns a value uniformly in [0, 1); used only with `jitter`.
  public func delay(beforeRetry retry: Int, random: () -> Double = { Double.random(in: 0..<1) })
    -> Duration
  {
    var base: Duration
    switch backoff {
    case .fixed:
      base = interval
    case .exponential:
      let exponent = min(max(retry - 1, 0), 62)
      let factor = Double(UInt64(1) << UInt64(exponent))
      let seconds = interval.seconds * factor
      base = seconds >= maxInterval.seconds ? maxInterval : .seconds(seconds)
    }
    if base > maxInterval { base = maxInterval }
    if jitter { base = .seconds(base.seconds * random()) }
    return base
  }
}

extension Duration {
  /// This duration in seconds, as a Double.
  public var seconds: Double {
    let (s, attoseconds) = components
    return Double(s) + Double(attoseconds) / 1e18
  }

  /// Human form, in the largest unit that writes it whole: `500ms`, `1.5s`, `2m`, `1h`,
  /// `7d` (`7d`, not `1w`: the manifest reads both; days are what logs and messages count).
  public var formatted: String { formatted(days: true) }

  /// `formatted`, with hours as the largest unit when `days` is false (`168h`): the form
  /// fingerprints hold, written before durations took days.
  public func formatted(days: Bool) -> String {
    let s = seconds
    if s < 1 && s > 0 { return "\(Int((s * 1000).rounded()))ms" }
    if days && s >= 86400 && s.truncatingRemainder(dividingBy: 86400) == 0 { return "\(Int(s / 86400))d" }
    if s >= 3600 && s.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(s / 3600))h" }
    if s >= 60 && s.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(s / 60))m" }
    if s == s.rounded() { return "\(Int(s))s" }
    return "\((s * 1000).rounded() / 1000)s"
  }
}
