import DrayModel
import DrayTestSupport
import DrayTransport
import Foundation
import Synchronization
import Testing

/// The retry policy as a value, and the runner's decisions, without a network.
@Suite struct RetryPolicyTests {
  let refused = TransportError.connectionRefused(host: "127.0.0.1:9")

  @Test func exponentialWaitsDoubleUpToMaxInterval() {
    let policy = RetryPolicy(count: 7, interval: .seconds(1), backoff: .exponential, maxInterval: .seconds(30), jitter: false)
    #expect((1...7).map { policy.delay(beforeRetry: $0).seconds } == [1, 2, 4, 8, 16, 30, 30])
    let fixed = RetryPolicy(interval: .milliseconds(1500), backoff: .fixed, jitter: false)
    #expect((1...3).map { fixed.delay(beforeRetry: $0).seconds } == [1.5, 1.5, 1.5])
    let huge = RetryPolicy(interval: .seconds(1), backoff: .exponential, maxInterval: .seconds(30), jitter: false)
    #expect(huge.delay(beforeRetry: 500) == .seconds(30))
  }

  @Test func fullJitterScalesTheWaitByTheRandomSource() {
    let policy = RetryPolicy(interval: .seconds(1), backoff: .exponential, maxInterval: .seconds(30), jitter: true)
    #expect((1...3).map { policy.delay(beforeRetry: $0, random: { 0.25 }).seconds } == [0.25, 0.5, 1])
    #expect(policy.delay(beforeRetry: 9, random: { 0 }) == .zero)
  }

  @Test func retryAfterReadsSecondsAndHTTPDates() throws {
    #expect(RetryRunner.retryAfterSeconds("120") == 120)
    #expect(RetryRunner.retryAfterSeconds(" 3 ") == 3)
    #expect(RetryRunner.retryAfterSeconds("-1") == nil)
    #expect(RetryRunner.retryAfterSeconds("soon") == nil)
    // delay-seconds is 1*DIGIT of any length (RFC 9110 §10.2.3), nothing else.
    #expect(RetryRunner.retryAfterSeconds("9223372036854775808") == 9_223_372_036_854_775_808)
    #expect(RetryRunner.retryAfterSeconds(String(repeating: "9", count: 400)) == .greatestFiniteMagnitude)
    #expect(RetryRunner.retryAfterSeconds("+5") == nil)
    #expect(RetryRunner.retryAfterSeconds("1.5") == nil)
    let now = try #require(ISO8601DateFormatter().date(from: "2015-10-21T07:27:50Z"))
    #expect(RetryRunner.retryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT", now: now) == 10)
    #expect(RetryRunner.retryAfterSeconds("Wednesday, 21-Oct-15 07:28:00 GMT", now: now) == 10)
    #expect(RetryRunner.retryAfterSeconds("Wed Oct 21 07:28:00 2015", now: now) == 10)
    #expect(RetryRunner.retryAfterSeconds("Wed, 21 Oct 2015 07:27:00 GMT", now: now) == 0)
  }

  @Test func retriesRunOutAfterCountAndSaySo() {
    let runner = RetryRunner(
      policy: RetryPolicy(count: 2, interval: .milliseconds(10), backoff: .fixed, jitter: false), cancellation: Cancellation())
    var attempts: [Attempt] = []
    #expect(
      throws: TransportError.gaveUp(last: refused, reason: "gave up after 3 attempts (retry.count: 2)")
    ) {
      try runner.run({ _ in throw refused }, record: { attempts.append($0) })
    }
    #expect(attempts.map(\.number) == [1, 2, 3])
    #expect(attempts.map(\.outcome.code) == ["connection_refused", "connection_refused", "connection_refused"])
    #expect(attempts.map(\.wait) == [0.01, 0.01, nil])
    #expect(
      "\(TransportError.gaveUp(last: refused, reason: "gave up after 3 attempts (retry.count: 2)"))"
        == "cannot connect to 127.0.0.1:9: connection refused; check that the server is running and the port is right; "
        + "gave up after 3 attempts (retry.count: 2)")
  }

  @Test func maxElapsedBoundsTheWholeCall() {
    let policy = RetryPolicy(count: 10, interval: .milliseconds(100), backoff: .fixed, jitter: false, maxElapsed: .milliseconds(190))
    let runner = RetryRunner(policy: policy, cancellation: Cancellation())
    var attempts: [Attempt] = []
    #expect(
      throws: TransportError.gaveUp(
        last: refused, reason: "gave up after 2 attempts: waiting 100ms more would pass retry.max_elapsed (190ms)")
    ) {
      try runner.run({ _ in throw refused }, record: { attempts.append($0) })
    }
    #expect(attempts.map(\.wait) == [0.1, nil])
  }

  @Test func otherErrorsFailAtOnceUnchanged() {
    let runner = RetryRunner(policy: RetryPolicy(count: 5), cancellation: Cancellation())
    let notFound = TransportError.httpStatus(HTTPStatusError(status: 404, url: "http://127.0.0.1:9/x"))
    var attempts: [Attempt] = []
    #expect(throws: notFound) { try runner.run({ _ in throw notFound }, record: { attempts.append($0) }) }
    #expect(attempts.map(\.outcome.code) == ["http_404"])
    #expect(attempts.map(\.status) == [404])
  }

  @Test func aRepeatDoesNotUseARetryAndAFailureCanSayWhy() throws {
    let runner = RetryRunner(policy: RetryPolicy(count: 0), cancellation: Cancellation())
    var attempts: [Attempt] = []
    let value = try runner.run(
      { number in
        if number == 1 { throw refused }
        return number
      }, classify: { _ in .repeatNow }, record: { attempts.append($0) })
    #expect(value == 2)
    #expect(attempts.map(\.outcome.code) == ["connection_refused", "ok"])
    #expect(attempts.map(\.wait) == [0, nil])
    #expect(throws: TransportError.notRepeated(last: refused, reason: "not retried: because")) {
      try runner.run({ _ in throw refused }, classify: { _ in .fail(reason: "not retried: because") }, record: { _ in })
    }
  }

  @Test func aCancelledWaitStopsAtOnce() {
    let cancellation = Cancellation()
    let clock = TestClock()
    let start = clock.now
    var runner = RetryRunner(
      policy: RetryPolicy(count: 3, interval: .seconds(20), backoff: .fixed, jitter: false), cancellation: cancellation)
    // `RetryRunner.sleep` on a clock that moves only as the wait pauses: "at once" is at its
    // first look at the cancellation, one pause (50 ms) in, not 20 s of pauses later.
    runner.sleeper = { duration, cancellation in
      try RetryRunner.sleep(duration, cancellation: cancellation, now: { clock.now }, pause: { clock.advance(by: $0) })
    }
    var attempts: [Attempt] = []
    // An attempt is recorded just before its wait: the cancel lands in that wait.
    #expect(throws: TransportError.cancelled) {
      try runner.run(
        { _ in throw refused },
        record: {
          attempts.append($0)
          cancellation.cancel()
        })
    }
    #expect(attempts.map(\.wait) == [20])
    #expect(clock.now - start <= .milliseconds(50))
  }

  @Test func anUncancelledWaitLastsItsDurationInPausesOf50ms() throws {
    let clock = TestClock()
    let start = clock.now
    var pauses: [Duration] = []
    try RetryRunner.sleep(
      .milliseconds(120), cancellation: Cancellation(), now: { clock.now },
      pause: {
        pauses.append($0)
        clock.advance(by: $0)
      })
    #expect(pauses == [.milliseconds(50), .milliseconds(50), .milliseconds(20)])
    #expect(clock.now - start == .milliseconds(120))
  }

  // MARK: Retry-After, the wait budget, jitter

  /// A runner for `policy` whose waits are recorded instead of slept.
  func recordingRunner(_ policy: RetryPolicy, budget: RetryBudget = RetryBudget()) -> (RetryRunner, WaitLog) {
    var runner = RetryRunner(policy: policy, cancellation: Cancellation(), budget: budget)
    let waits = WaitLog()
    runner.sleeper = { duration, _ in waits.list.withLock { $0.append(duration) } }
    return (runner, waits)
  }

  /// The waits a runner asked for.
  final class WaitLog: Sendable {
    let list = Mutex<[Duration]>([])
    var all: [Duration] { list.withLock { $0 } }
  }

  func busyStatus(retryAfter: Double?) -> HTTPStatusError {
    HTTPStatusError(status: 503, url: "http://127.0.0.1:9/x", retryAfter: retryAfter)
  }

  func busy(retryAfter: Double?) -> TransportError { .httpStatus(busyStatus(retryAfter: retryAfter)) }

  @Test func aRetryAfterLongerThanMaxIntervalIsHonoured() throws {
    let (runner, waits) = recordingRunner(RetryPolicy(count: 1, interval: .seconds(1), maxInterval: .seconds(30)))
    var attempts: [Attempt] = []
    let value = try runner.run(
      { number in
        if number == 1 { throw busy(retryAfter: 120) }
        return number
      }, record: { attempts.append($0) })
    #expect(value == 2)
    #expect(waits.all == [.seconds(120)])
    #expect(attempts.map(\.waitFromRetryAfter) == [true, false])
  }

  @Test func aRetryAfterPastMaxRetryAfterFailsNamingIt() {
    let (runner, waits) = recordingRunner(RetryPolicy(count: 3, maxRetryAfter: .seconds(600)))
    let status = busyStatus(retryAfter: 601)
    let error = TransportError.httpStatus(status)
    #expect(throws: TransportError.retryAfterTooLong(status, seconds: 601, limit: .seconds(600))) {
      try runner.run({ _ in throw error }, record: { _ in })
    }
    #expect(waits.all.isEmpty)
    #expect(
      "\(TransportError.retryAfterTooLong(status, seconds: 601, limit: .seconds(600)))"
        == "HTTP 503 Service Unavailable from http://127.0.0.1:9/x; the server asked to wait 601 s before retrying (Retry-After), "
        + "longer than retry.max_retry_after (10m); giving up. Raise retry.max_retry_after to wait that long")
  }

  /// The message repeats the server's digits, even past `Int.max`, not a rounded Double.
  @Test(arguments: [
    ("9223372036854775808", "9223372036854775808"), (" 601 ", "601"),
    (String(repeating: "9", count: 400), "99999999999999999999… (a number of 400 digits)"),
  ])
  func aRetryAfterTooLongIsShownInTheServersOwnDigits(header: String, shown: String) {
    var status = HTTPStatusError(status: 503, url: "http://127.0.0.1:9/x")
    status.readRetryAfter(header)
    #expect(status.retryAfter != nil)
    #expect(
      "\(TransportError.retryAfterTooLong(status, seconds: status.retryAfter ?? 0, limit: .seconds(600)))"
        == "HTTP 503 Service Unavailable from http://127.0.0.1:9/x; the server asked to wait \(shown) s before retrying (Retry-After), "
        + "longer than retry.max_retry_after (10m); giving up. Raise retry.max_retry_after to wait that long")
  }

  @Test func aRetryAfterDateIsShownAsTheSecondsUntilIt() {
    var status = HTTPStatusError(status: 503, url: "http://127.0.0.1:9/x")
    status.readRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT")
    #expect(status.retryAfterDigits == nil)
    #expect(status.retryAfter ?? 0 > 2.5e11)
  }

  @Test func theWaitBudgetIsSharedByEveryCallOfTheRun() {
    let policy = RetryPolicy(
      count: 10, interval: .seconds(40), backoff: .fixed, maxInterval: .seconds(40), jitter: false, waitBudget: .seconds(100))
    let budget = RetryBudget()
    let (first, _) = recordingRunner(policy, budget: budget)
    let (second, waits) = recordingRunner(policy, budget: budget)
    // The first call waits 40 s twice; the second may wait only 20 s more in all.
    #expect(throws: TransportError.self) { try first.run({ _ in throw refused }, record: { _ in }) }
    #expect(budget.used == .seconds(80))
    var attempts: [Attempt] = []
    #expect(
      throws: TransportError.gaveUp(
        last: refused,
        reason: "gave up after 1 attempt: waiting 40s more would pass retry.wait_budget (100s of retry waits per run; 80s waited so far)")
    ) {
      try second.run({ _ in throw refused }, record: { attempts.append($0) })
    }
    #expect(waits.all.isEmpty)
    #expect(attempts.map(\.wait) == [nil])
  }

  /// Four parallel members that fail together, under the default policy and its random
  /// source: their retries do not meet the server at the same instants.
  @Test func theDefaultPolicySpreadsTheRetriesOfCallsThatFailedTogether() throws {
    #expect(RetryPolicy.default.jitter)
    var schedules: [[Duration]] = []
    for _ in 0..<4 {
      let (runner, waits) = recordingRunner(.default)
      #expect(throws: TransportError.self) { try runner.run({ _ in throw refused }, record: { _ in }) }
      let taken = waits.all
      #expect(taken.count == RetryPolicy.default.count)
      for (index, wait) in taken.enumerated() { #expect(wait <= RetryPolicy.default.delay(beforeRetry: index + 1, random: { 1 })) }
      // The instants of the retries, from the common failure.
      schedules.append(taken.indices.map { taken[...$0].reduce(.zero, +) })
    }
    for retry in 0..<RetryPolicy.default.count {
      #expect(Set(schedules.map { $0[retry] }).count == 4)
    }
  }

  @Test func aRefusedResumeIsAskedAgainAtOnceWithoutARetry() throws {
    let (runner, waits) = recordingRunner(RetryPolicy(count: 0))
    var attempts: [Attempt] = []
    let value = try runner.run(
      { number in
        if number == 1 { throw TransportError.resumeRestart(url: "http://127.0.0.1:9/x", status: 412, detail: "changed") }
        return number
      }, record: { attempts.append($0) })
    #expect(value == 2)
    #expect(attempts.map(\.outcome) == [.failed(code: "resume_restart"), .ok])
    #expect(attempts.map(\.status) == [412, nil])
    #expect(waits.all.isEmpty)
  }

  @Test func anAttemptThatSentNothingIsNotRecorded() {
    let (runner, _) = recordingRunner(RetryPolicy(count: 3))
    var attempts: [Attempt] = []
    #expect(throws: TransportError.cancelled) {
      try runner.run({ _ in throw UnsentAttempt(TransportError.cancelled) }, record: { attempts.append($0) })
    }
    #expect(attempts.isEmpty)
  }
}
