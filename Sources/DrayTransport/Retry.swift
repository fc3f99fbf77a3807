public import DrayModel
public import Foundation

/// One attempt of a call, as the run report records it.
public struct Attempt: Sendable, Equatable {
  /// 1 for the first attempt.
  public var number: Int
  /// Which call: nil for the step's own call, `sign-in` for a token request made on its way.
  public var call: String?
  /// Seconds from the start of the call to the start of this attempt.
  public var startOffset: Double
  /// Seconds the attempt took.
  public var duration: Double
  /// `ok`, or the error's stable code (`connection_refused`, `http_503`, ...).
  public var outcome: String
  /// The HTTP status, when an answer came (the successful attempt's too, when the call
  /// returns an `HTTPResponse`).
  public var status: Int?
  /// What went wrong, for people.
  public var message: String?
  /// Seconds waited after this attempt before the next one.
  public var wait: Double?
  /// True when the wait came from the server's `Retry-After`.
  public var waitFromRetryAfter: Bool

  public init(
    number: Int, call: String? = nil, startOffset: Double, duration: Double, outcome: String, status: Int? = nil,
    message: String? = nil, wait: Double? = nil, waitFromRetryAfter: Bool = false
  ) {
    self.number = number
    self.call = call
    self.startOffset = startOffset
    self.duration = duration
    self.outcome = outcome
    self.status = status
    self.message = message
    self.wait = wait
    self.waitFromRetryAfter = waitFromRetryAfter
  }
}

/// Runs a call under a `RetryPolicy`.
///
/// An attempt that throws a transient `TransportError` (see `TransportError.isTransient`) is
/// tried again after the policy's wait, or after the server's `Retry-After` when that is
/// longer; a `Retry-After` beyond `maxInterval` fails the call with `.retryAfterTooLong`.
/// Other errors fail at once. Waits stop early when the call is cancelled.
public struct RetryRunner {
  public var policy: RetryPolicy
  public var cancellation: Cancellation
  /// Uniform in [0, 1), for full jitter; injectable for tests.
  public var random: () -> Double = { Double.random(in: 0..<1) }

  public init(policy: RetryPolicy, cancellation: Cancellation) {
    self.policy = policy
    self.cancellation = cancellation
  }

  /// Calls `attempt` until it succeeds, fails permanently, or retries run out.
  /// - Parameters:
  ///   - attempt: receives the attempt number (1-based).
  ///   - isTransient: which errors may succeed on another attempt; `TransportError.isTransient`
  ///     by default (a step with its own status rules says otherwise).
  ///   - mayRetry: a last word on a transient error, e.g. "no byte of a POST was sent".
  ///   - record: receives each attempt's record as it ends.
  /// - Throws: the last attempt's error.
  public func run<T>(
    _ attempt: (Int) throws -> T,
    isTransient: (TransportError) -> Bool = { $0.isTransient },
    mayRetry: (any Error) -> Bool = { _ in true },
    record: (Attempt) -> Void
  ) throws -> T {
    let start = ContinuousClock.now
    var number = 1
    while true {
      let attemptStart = ContinuousClock.now
      do {
        let value = try attempt(number)
        record(
          Attempt(
            number: number, startOffset: (attemptStart - start).seconds, duration: (ContinuousClock.now - attemptStart).seconds,
            outcome: "ok", status: (value as? HTTPResponse)?.status))
        return value
      } catch {
        var entry = Attempt(
          number: number, startOffset: (attemptStart - start).seconds, duration: (ContinuousClock.now - attemptStart).seconds,
          outcome: RetryRunner.code(of: error), status: RetryRunner.status(of: error), message: "\(error)")
        guard let transport = error as? TransportError, isTransient(transport), number <= policy.count,
          !cancellation.isCancelled, mayRetry(error)
        else {
          record(entry)
          throw error
        }
        var wait = policy.delay(beforeRetry: number, random: random)
        if case .httpStatus(let status) = transport, let retryAfter = status.retryAfter {
          if retryAfter > policy.maxInterval.seconds {
            record(entry)
            throw TransportError.retryAfterTooLong(seconds: retryAfter, limit: policy.maxInterval)
          }
          if retryAfter > wait.seconds {
            wait = .milliseconds(Int64(retryAfter * 1000))
            entry.waitFromRetryAfter = true
          }
        }
        if let limit = policy.maxElapsed, (ContinuousClock.now - start) + wait > limit {
          record(entry)
          throw error
        }
        entry.wait = wait.seconds
        record(entry)
        try sleep(wait)
        number += 1
      }
    }
  }

  /// Sleeps for `duration`, waking every 50 ms to honour cancellation.
  /// - Throws: `TransportError.cancelled` when cancelled during the wait.
  public func sleep(_ duration: Duration) throws {
    let deadline = ContinuousClock.now + duration
    while ContinuousClock.now < deadline {
      if cancellation.isCancelled { throw TransportError.cancelled }
      let left = deadline - ContinuousClock.now
      Thread.sleep(forTimeInterval: min(0.05, max(0, left.seconds)))
    }
    if cancellation.isCancelled { throw TransportError.cancelled }
  }

  static func code(of error: any Error) -> String {
    if let t = error as? TransportError { return t.code }
    return "error"
  }

  static func status(of error: any Error) -> Int? {
    if case .httpStatus(let e)? = error as? TransportError { return e.status }
    return nil
  }

  /// Seconds to wait from a `Retry-After` value: delay-seconds or an HTTP-date
  /// (RFC 9110 §10.2.3, dates in IMF-fixdate form, §5.6.7). Nil when unreadable.
  public static func retryAfterSeconds(_ value: String, now: Date = Date()) -> Double? {
    let trimmed = value.trimmingCharacters(in: .whitespaces)
    if let seconds = Int(trimmed), seconds >= 0 { return Double(seconds) }
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
      formatter.dateFormat = format
      if let date = formatter.date(from: trimmed) { return max(0, date.timeIntervalSince(now)) }
    }
    return nil
  }
}
