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
  /// Body bytes this attempt received, for downloads.
  public var bytes: Int64?
  /// The byte offset this attempt asked to resume from (`X-Range`/`Range`), for downloads
  /// that resumed.
  public var resumedFrom: Int64?

  public init(
    number: Int, call: String? = nil, startOffset: Double, duration: Double, outcome: String, status: Int? = nil,
    message: String? = nil, wait: Double? = nil, waitFromRetryAfter: Bool = false, bytes: Int64? = nil, resumedFrom: Int64? = nil
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
    self.bytes = bytes
    self.resumedFrom = resumedFrom
  }
}

/// What to do after an attempt failed.
public enum RetryDecision: Sendable, Equatable {
  /// Try again after the policy's wait (or the server's `Retry-After`); uses one of the
  /// policy's `count` retries.
  case retry
  /// Try again at once without using a retry (after a new token, platform-api.md §1).
  case repeatNow
  /// Stop. `reason`, when given, is added to the error (for example why a transient error
  /// is not retried).
  case fail(reason: String?)
}

/// Runs a call under a `RetryPolicy`.
///
/// After each failed attempt `classify` decides (by default: retry a transient
/// `TransportError`, see `TransportError.isTransient`, and fail on anything else). A retry
/// waits the policy's delay (`RetryPolicy.delay(beforeRetry:random:)`), or the server's
/// `Retry-After` when that is longer; a `Retry-After` beyond `maxInterval` fails the call
/// with `.retryAfterTooLong`. When retries run out, or the next wait would pass
/// `maxElapsed`, the call fails with `.gaveUp` saying so. Every attempt is recorded with its
/// outcome and the wait after it. Waits stop early when the call is cancelled.
public struct RetryRunner {
  public var policy: RetryPolicy
  public var cancellation: Cancellation
  /// Uniform in [0, 1), for full jitter; injectable for tests.
  public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }

  public init(policy: RetryPolicy, cancellation: Cancellation) {
    self.policy = policy
    self.cancellation = cancellation
  }

  /// Retry a transient `TransportError`; fail on anything else.
  public static func defaultDecision(_ error: any Error) -> RetryDecision {
    (error as? TransportError)?.isTransient == true ? .retry : .fail(reason: nil)
  }

  /// Calls `attempt` until it succeeds, fails for good, or retries run out.
  /// - Parameters:
  ///   - call: names the call in records (`sign-in`); nil for the step's own call.
  ///   - attempt: receives the attempt number (1-based).
  ///   - classify: what to do after a failed attempt.
  ///   - record: receives each attempt's record as it ends.
  /// - Throws: the last attempt's error; a `TransportError` that stopped for the policy's
  ///   sake is wrapped in `.gaveUp` or `.retryAfterTooLong`.
  public func run<T>(
    call: String? = nil,
    _ attempt: (Int) throws -> T,
    classify: (any Error) -> RetryDecision = RetryRunner.defaultDecision,
    record: (Attempt) -> Void
  ) throws -> T {
    let start = ContinuousClock.now
    var number = 1
    var retries = 0
    while true {
      let attemptStart = ContinuousClock.now
      do {
        let value = try attempt(number)
        record(
          Attempt(
            number: number, call: call, startOffset: (attemptStart - start).seconds,
            duration: (ContinuousClock.now - attemptStart).seconds, outcome: "ok", status: (value as? HTTPResponse)?.status))
        return value
      } catch {
        var entry = Attempt(
          number: number, call: call, startOffset: (attemptStart - start).seconds,
          duration: (ContinuousClock.now - attemptStart).seconds, outcome: RetryRunner.code(of: error),
          status: (error as? any ReportableError)?.httpStatus, message: "\(error)")
        if cancellation.isCancelled {
          record(entry)
          throw error
        }
        let attempts = number == 1 ? "1 attempt" : "\(number) attempts"
        switch classify(error) {
        case .fail(let reason):
          record(entry)
          if let reason, let transport = error as? TransportError { throw TransportError.gaveUp(last: transport, reason: reason) }
          throw error
        case .repeatNow:
          entry.wait = 0
          record(entry)
          number += 1
          continue
        case .retry:
          break
        }
        // Transient: wait and try again, if the policy allows.
        let transport = error as? TransportError
        guard retries < policy.count else {
          record(entry)
          let reason = "gave up after \(attempts) (retry.count: \(policy.count))"
          if let transport { throw TransportError.gaveUp(last: transport, reason: reason) }
          throw error
        }
        var wait = policy.delay(beforeRetry: retries + 1, random: random)
        if let statusError = RetryRunner.statusError(transport), let retryAfter = statusError.retryAfter {
          if retryAfter > policy.maxInterval.seconds {
            record(entry)
            throw TransportError.retryAfterTooLong(statusError, seconds: retryAfter, limit: policy.maxInterval)
          }
          if retryAfter > wait.seconds {
            wait = .milliseconds(Int64((retryAfter * 1000).rounded(.up)))
            entry.waitFromRetryAfter = true
          }
        }
        if let limit = policy.maxElapsed, (ContinuousClock.now - start) + wait > limit {
          record(entry)
          let reason = "gave up after \(attempts): waiting \(wait.formatted) more would pass retry.max_elapsed (\(limit.formatted))"
          if let transport { throw TransportError.gaveUp(last: transport, reason: reason) }
          throw error
        }
        entry.wait = wait.seconds
        record(entry)
        try sleep(wait)
        retries += 1
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
    (error as? any ReportableError)?.code ?? "error"
  }

  static func statusError(_ error: TransportError?) -> HTTPStatusError? {
    if case .httpStatus(let e)? = error { return e }
    return nil
  }

  /// Seconds to wait from a `Retry-After` value: delay-seconds or an HTTP-date
  /// (RFC 9110 §10.2.3, dates in IMF-fixdate form, §5.6.7). Nil when unreadable.
  /// delay-seconds is `1*DIGIT` of any length: a value past `Int.max` (2^63 - 1) is read as
  /// a Double (past 10^308 as `Double.greatestFiniteMagnitude`), so that it stays a wait too
  /// long to honour instead of an unreadable value retried at once.
  public static func retryAfterSeconds(_ value: String, now: Date = Date()) -> Double? {
    let trimmed = value.trimmingCharacters(in: .whitespaces)
    if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
      let seconds = Double(trimmed)
    {
      return min(seconds, .greatestFiniteMagnitude)
    }
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
