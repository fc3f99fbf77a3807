public import DrayModel
public import Foundation
internal import Synchronization

/// How an attempt ended, as the run report's `outcome` says it.
public enum AttemptOutcome: Sendable, Equatable {
  /// An answer the call accepts: a 2xx, or a `416` that showed a resumed part complete.
  case ok
  /// The attempt failed; `code` is the error's stable code (`connection_refused`,
  /// `http_503`, `timeout_idle`, `resume_restart`, ...; docs/network.md, "Errors").
  case failed(code: String)

  /// `ok`, or the error's code: the report's text.
  public var code: String {
    switch self {
    case .ok: "ok"
    case .failed(let code): code
    }
  }
}

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
  public var outcome: AttemptOutcome
  /// The HTTP status the server sent, when an answer came (the successful attempt's too,
  /// when the call returns an `HTTPResponse`).
  public var status: Int?
  /// What went wrong, for people.
  public var message: String?
  /// Seconds waited after this attempt before the next one.
  public var wait: Double?
  /// True when the wait came from the server's `Retry-After`.
  public var waitFromRetryAfter: Bool
  /// Body bytes this attempt received, for downloads, decoded.
  public var bytes: Int64?
  /// The same body as it came over the connection, before content decoding (gzip).
  public var wireBytes: Int64?
  /// The byte offset this attempt asked to resume from (`X-Range`/`Range`), for downloads
  /// that resumed.
  public var resumedFrom: Int64?

  public init(
    number: Int, call: String? = nil, startOffset: Double, duration: Double, outcome: AttemptOutcome, status: Int? = nil,
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
  /// Stop. `reason`, when given, is added to the error, as `TransportError.notRepeated` (for
  /// example why a transient error is not retried).
  case fail(reason: String?)
}

/// The retry waits of one run of a job, shared by every step and thread of the run and
/// bounded by `retry.wait_budget` (`RetryPolicy.waitBudget`).
public final class RetryBudget: Sendable {
  private let spent = Mutex<Duration>(.zero)

  public init() {}

  /// The waits taken so far.
  public var used: Duration { spent.withLock { $0 } }

  /// Takes `wait` when the total stays within `limit`.
  /// - Returns: false (nothing taken) when it would pass `limit`.
  func take(_ wait: Duration, limit: Duration) -> Bool {
    spent.withLock {
      guard $0 + wait <= limit else { return false }
      $0 += wait
      return true
    }
  }
}

/// Thrown by an attempt that failed before its request was sent (the sign-in it needed
/// failed, and was recorded as the sign-in's own attempts): the runner records no attempt of
/// the call for it and rethrows `error` without retrying.
public struct UnsentAttempt: Error {
  public var error: any Error
  public init(_ error: any Error) { self.error = error }
}

/// Runs a call under a `RetryPolicy`.
///
/// After each failed attempt `classify` decides (by default: retry a transient
/// `TransportError`, see `TransportError.isTransient`, and fail on anything else). A retry
/// waits the policy's delay (`RetryPolicy.delay(beforeRetry:random:)`), or the server's
/// `Retry-After` when that is longer; a `Retry-After` beyond `maxRetryAfter` fails the call
/// with `.retryAfterTooLong`. When retries run out, or the next wait would pass
/// `maxElapsed` or the job's `waitBudget`, the call fails with `.gaveUp` saying so. A
/// resume the server refused (`.resumeRestart`: the part was discarded) is asked again at
/// once without using a retry. Every attempt is recorded once, with its outcome and the
/// wait after it; an attempt that sent nothing (`UnsentAttempt`) is not. Waits stop early
/// when the call is cancelled.
public struct RetryRunner {
  public var policy: RetryPolicy
  public var cancellation: Cancellation
  /// The run's retry waits so far, against `policy.waitBudget`.
  public var budget: RetryBudget
  /// Uniform in [0, 1), for full jitter; injectable for tests.
  public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
  /// Waits between attempts; injectable for tests. By default `RetryRunner.serverWait`
  /// (no wait in a replay); a database's reconnection waits with `RetryRunner.sleep`.
  public var sleeper: (@Sendable (Duration, Cancellation) throws -> Void) = RetryRunner.serverWait

  public init(policy: RetryPolicy, cancellation: Cancellation, budget: RetryBudget = RetryBudget()) {
    self.policy = policy
    self.cancellation = cancellation
    self.budget = budget
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
        let value = try Tracing.withAttempt(number) { try attempt(number) }
        let response = value as? HTTPResponse
        record(
          Attempt(
            number: number, call: call, startOffset: (attemptStart - start).seconds,
            duration: (ContinuousClock.now - attemptStart).seconds, outcome: .ok, status: response.map { $0.statusSent ?? $0.status }))
        return value
      } catch let unsent as UnsentAttempt {
        throw unsent.error
      } catch {
        var entry = Attempt(
          number: number, call: call, startOffset: (attemptStart - start).seconds,
          duration: (ContinuousClock.now - attemptStart).seconds, outcome: .failed(code: RetryRunner.code(of: error)),
          status: (error as? any ReportableError)?.httpStatus, message: "\(error)")
        if cancellation.isCancelled {
          record(entry)
          throw error
        }
        let attempts = number == 1 ? "1 attempt" : "\(number) attempts"
        let decision: RetryDecision =
          if case .resumeRestart? = error as? TransportError { .repeatNow } else { classify(error) }
        switch decision {
        case .fail(let reason):
          record(entry)
          if let reason, let transport = error as? TransportError { throw TransportError.notRepeated(last: transport, reason: reason) }
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
          if retryAfter > policy.maxRetryAfter.seconds {
            record(entry)
            throw TransportError.retryAfterTooLong(statusError, seconds: retryAfter, limit: policy.maxRetryAfter)
          }
          if retryAfter > wait.seconds {
            wait = .milliseconds(Int64((retryAfter * 1000).rounded(.up)))
            entry.waitFromRetryAfter = true
          }
        }
        var stop: String?
        if let limit = policy.maxElapsed, (ContinuousClock.now - start) + wait > limit {
          stop = "gave up after \(attempts): waiting \(wait.formatted) more would pass retry.max_elapsed (\(limit.formatted))"
        } else if !budget.take(wait, limit: policy.waitBudget) {
          stop =
            "gave up after \(attempts): waiting \(wait.formatted) more would pass retry.wait_budget "
            + "(\(policy.waitBudget.formatted) of retry waits per run; \(budget.used.formatted) waited so far)"
        }
        if let stop {
          record(entry)
          if let transport { throw TransportError.gaveUp(last: transport, reason: stop) }
          throw error
        }
        entry.wait = wait.seconds
        record(entry)
        try sleeper(wait, cancellation)
        retries += 1
        number += 1
      }
    }
  }

  /// Waits before asking a server again (a retry's wait, a request budget's pace): `sleep`,
  /// except in a replay (`Traffic.isReplaying`), which asks no server and does not wait the
  /// recorded run's waits again (docs/recordings.md): it returns at once, after a look at
  /// `cancellation`. The attempts keep their recorded waits in the report.
  /// - Throws: `TransportError.cancelled` when cancelled.
  @Sendable public static func serverWait(_ duration: Duration, cancellation: Cancellation) throws {
    guard Traffic.isReplaying else { return try sleep(duration, cancellation: cancellation) }
    if cancellation.isCancelled { throw TransportError.cancelled }
  }

  /// Where each wait of `sleep` is noted, one line of seconds each, when the variable
  /// `DRAY_TEST_SLEEP_LOG` names a file: how the tests see that a replay waits nothing
  /// without timing it.
  private static let sleepLog = ProcessInfo.processInfo.environment["DRAY_TEST_SLEEP_LOG"].flatMap { $0.isEmpty ? nil : $0 }

  /// Sleeps for `duration`, waking every 50 ms to honour cancellation.
  /// - Throws: `TransportError.cancelled` when cancelled during the wait.
  @Sendable public static func sleep(_ duration: Duration, cancellation: Cancellation) throws {
    if let sleepLog,
      let file = FileHandle(forWritingAtPath: sleepLog)
        ?? {
          FileManager.default.createFile(atPath: sleepLog, contents: nil)
          return FileHandle(forWritingAtPath: sleepLog)
        }()
    {
      _ = try? file.seekToEnd()
      try? file.write(contentsOf: Data("\(duration.seconds)\n".utf8))
      try? file.close()
    }
    try sleep(duration, cancellation: cancellation, now: { ContinuousClock.now }, pause: { Thread.sleep(forTimeInterval: $0.seconds) })
  }

  /// The wait behind `sleep`, on the clock `now` reads and `pause` lets pass: pauses of at
  /// most `step` (50 ms), each followed by a look at `cancellation`. Tests give a clock of
  /// their own, so that no test waits on the system's.
  /// - Throws: `TransportError.cancelled` when cancelled during the wait.
  public static func sleep(
    _ duration: Duration, cancellation: Cancellation, step: Duration = .milliseconds(50), now: () -> ContinuousClock.Instant,
    pause: (Duration) -> Void
  ) throws {
    let deadline = now() + duration
    while now() < deadline {
      if cancellation.isCancelled { throw TransportError.cancelled }
      pause(max(.zero, min(step, deadline - now())))
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
