import DrayModel
import DrayTransport
import Foundation
import Testing

/// The retry policy as a value, and the runner's decisions, without a network.
@Suite struct RetryPolicyTests {
  let refused = TransportError.connectionRefused(host: "127.0.0.1:9")

  @Test func exponentialWaitsDoubleUpToMaxInterval() {
    let policy = RetryPolicy(count: 7, interval: .seconds(1), backoff: .exponential, maxInterval: .seconds(30))
    #expect((1...7).map { policy.delay(beforeRetry: $0).seconds } == [1, 2, 4, 8, 16, 30, 30])
    let fixed = RetryPolicy(interval: .milliseconds(1500), backoff: .fixed)
    #expect((1...3).map { fixed.delay(beforeRetry: $0).seconds } == [1.5, 1.5, 1.5])
    let huge = RetryPolicy(interval: .seconds(1), backoff: .exponential, maxInterval: .seconds(30))
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
    let runner = RetryRunner(policy: RetryPolicy(count: 2, interval: .milliseconds(10), backoff: .fixed), cancellation: Cancellation())
    var attempts: [Attempt] = []
    #expect(
      throws: TransportError.gaveUp(last: refused, reason: "gave up after 3 attempts (retry.count: 2)")
    ) {
      try runner.run({ _ in throw refused }, record: { attempts.append($0) })
    }
    #expect(attempts.map(\.number) == [1, 2, 3])
    #expect(attempts.map(\.outcome) == ["connection_refused", "connection_refused", "connection_refused"])
    #expect(attempts.map(\.wait) == [0.01, 0.01, nil])
    #expect(
      "\(TransportError.gaveUp(last: refused, reason: "gave up after 3 attempts (retry.count: 2)"))"
        == "cannot connect to 127.0.0.1:9: connection refused; check that the server is running and the port is right; "
        + "gave up after 3 attempts (retry.count: 2)")
  }

  @Test func maxElapsedBoundsTheWholeCall() {
    let policy = RetryPolicy(count: 10, interval: .milliseconds(100), backoff: .fixed, maxElapsed: .milliseconds(190))
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
    #expect(attempts.map(\.outcome) == ["http_404"])
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
    #expect(attempts.map(\.outcome) == ["connection_refused", "ok"])
    #expect(attempts.map(\.wait) == [0, nil])
    #expect(throws: TransportError.gaveUp(last: refused, reason: "not retried: because")) {
      try runner.run({ _ in throw refused }, classify: { _ in .fail(reason: "not retried: because") }, record: { _ in })
    }
  }

  @Test func aCancelledWaitStopsAtOnce() {
    let cancellation = Cancellation()
    let runner = RetryRunner(policy: RetryPolicy(count: 3, interval: .seconds(20), backoff: .fixed), cancellation: cancellation)
    var attempts: [Attempt] = []
    let start = ContinuousClock.now
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
    // `RetryRunner` sleeps on the system's clock, so "at once" is measured on it.
    #expect(ContinuousClock.now - start < .seconds(2))
  }
}
