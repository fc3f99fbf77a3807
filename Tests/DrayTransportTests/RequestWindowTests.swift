import DrayModel
import DrayTransport
import Synchronization
import Testing

/// The request budget (`rate_limit`) on an injected clock: no test waits.
@Suite struct RequestWindowTests {
  @Test func theRequestsOfAWindowPassAndTheNextWaitsUntilTheOldestLeavesIt() {
    var window = RequestWindow()
    window.add(requests: 3, per: .seconds(1))
    #expect(window.reserve(now: .zero).wait == .zero)
    #expect(window.reserve(now: .milliseconds(100)).wait == .zero)
    #expect(window.reserve(now: .milliseconds(200)).wait == .zero)
    // The fourth, at 300 ms, waits until the first (at 0) is 1 s old.
    #expect(window.delay(now: .milliseconds(300)) == .milliseconds(700))
    #expect(window.reserve(now: .milliseconds(300)).wait == .milliseconds(700))
    // It counts as sent at 1 s: the fifth, asked at once, waits for the second (100 ms).
    #expect(window.reserve(now: .milliseconds(300)).wait == .milliseconds(800))
    // Once the window has passed, nothing waits.
    #expect(window.delay(now: .seconds(5)) == .zero)
  }

  @Test func aRequestCountsFromWhenItsAnswerCame() {
    var window = RequestWindow()
    window.add(requests: 2, per: .seconds(1))
    let first = window.reserve(now: .zero)
    let second = window.reserve(now: .zero)
    #expect(first.number != second.number)
    // The first answer took 300 ms: the server may have counted it as late as that.
    window.settle(first.number, now: .milliseconds(300))
    window.settle(second.number, now: .milliseconds(10))
    // The third waits until the second's answer (10 ms) is 1 s old.
    #expect(window.delay(now: .milliseconds(500)) == .milliseconds(510))
    #expect(window.reserve(now: .milliseconds(500)).wait == .milliseconds(510))
    // The next waits for the first, counted from 300 ms.
    #expect(window.delay(now: .milliseconds(500)) == .milliseconds(800))
    // Settling never moves a request earlier.
    window.settle(first.number, now: .zero)
    #expect(window.delay(now: .milliseconds(500)) == .milliseconds(800))
  }

  @Test func whatTheServerSaysIsLeftLessTheRequestsInFlightIsSentBeforeItsReset() {
    var window = RequestWindow()
    let inFlight = window.reserve(now: .zero)
    let answered = window.reserve(now: .zero)
    window.settle(answered.number, now: .milliseconds(10))
    // 2 left says the answer; one request has no answer yet, so 1 more goes before 1 s.
    window.allow(2, until: .seconds(1), now: .milliseconds(10))
    #expect(window.reserve(now: .milliseconds(20)).wait == .zero)
    #expect(window.delay(now: .milliseconds(30)) == .milliseconds(970))
    // An older answer that says more is left does not raise the count while it holds.
    window.settle(inFlight.number, now: .milliseconds(40))
    window.allow(3, until: .seconds(1), now: .milliseconds(40))
    #expect(window.delay(now: .milliseconds(50)) == .milliseconds(950))
    #expect(window.reserve(now: .milliseconds(50)).wait == .milliseconds(950))
    // Past the reset, nothing is known: nothing waits.
    #expect(window.delay(now: .seconds(2)) == .zero)
  }

  @Test func whereTwoBudgetsHoldForOneHostTheLowestPaces() {
    var window = RequestWindow()
    window.add(requests: 10, per: .seconds(1))
    window.add(requests: 2, per: .seconds(1))
    window.add(requests: 2, per: .seconds(1))
    #expect(window.limits.count == 2)
    #expect(window.reserve(now: .zero).wait == .zero)
    #expect(window.reserve(now: .zero).wait == .zero)
    #expect(window.reserve(now: .zero).wait == .seconds(1))
  }

  @Test func hostsAreCountedApartAndHostsWithoutABudgetAreNotPaced() throws {
    let clock = Mutex<Duration>(.zero)
    let slept = Mutex<[Duration]>([])
    let budgets = RequestBudgets(now: { clock.withLock { $0 } }, sleeper: { wait, _ in slept.withLock { $0.append(wait) } })
    let cancellation = Cancellation()
    let limit = (requests: 2, per: Duration.seconds(1))
    func send(_ url: String, _ limit: (requests: Int, per: Duration)?) throws -> Duration {
      try budgets.send(url: url, limit: limit, cancellation: cancellation) { url }.waited
    }
    for _ in 0..<2 {
      #expect(try send("https://a.test/x", limit) == .zero)
      #expect(try send("https://B.test:443/y?page=2", limit) == .zero)
    }
    clock.withLock { $0 = .milliseconds(250) }
    // The third to a.test waits 750 ms; one to b.test from a step without its own budget is
    // counted against b.test's.
    #expect(try send("https://a.test/z", limit) == .milliseconds(750))
    #expect(try send("https://b.test/", nil) == .milliseconds(750))
    // A host no step gave a budget is not paced.
    for _ in 0..<5 {
      #expect(try send("https://c.test/", nil) == .zero)
    }
    #expect(slept.withLock { $0 } == [.milliseconds(750), .milliseconds(750)])
    // What the request's closure returns comes back.
    #expect(try budgets.send(url: "https://c.test/", limit: nil, cancellation: cancellation) { 42 }.0 == 42)
  }
}

/// The server's own rate limit fields (`RateLimitSignal`), and the pause they give a host.
@Suite struct RateLimitSignalTests {
  static let epoch = 1_800_000_000.0

  func pause(_ fields: [(String, String)]) -> Duration? {
    RateLimitSignal.pause(HTTPHeaders(fields.map { HTTPHeader($0.0, $0.1) }), epochNow: Self.epoch)
  }

  @Test func aSpentBudgetPausesUntilItsResetGivenAsSecondsOrAsAnEpochTime() {
    #expect(pause([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "3")]) == .seconds(3))
    #expect(pause([("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1800000002.5")]) == .milliseconds(2500))
    #expect(pause([("RateLimit-Remaining", "0"), ("RateLimit-Reset", "0.25")]) == .milliseconds(250))
    #expect(pause([("RateLimit", "limit=5, remaining=0, reset=2")]) == .seconds(2))
    #expect(pause([("RateLimit", "\"default\";r=0;t=4"), ("RateLimit-Policy", "\"default\";q=5;w=1")]) == .seconds(4))
  }

  @Test func aBudgetNotSpentOrFieldsMissingOrAbsurdPauseNothing() {
    #expect(pause([("X-RateLimit-Remaining", "3"), ("X-RateLimit-Reset", "3")]) == nil)
    #expect(pause([("X-RateLimit-Remaining", "0")]) == nil)
    #expect(pause([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "soon")]) == nil)
    // An epoch time in the past, and a wait past an hour.
    #expect(pause([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000000")]) == nil)
    #expect(pause([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "86400")]) == nil)
    #expect(pause([]) == nil)
  }

  @Test func aPauseHoldsEveryRequestToItsHostAndNoOther() throws {
    let clock = Mutex<Duration>(.zero)
    let slept = Mutex<[Duration]>([])
    let budgets = RequestBudgets(now: { clock.withLock { $0 } }, sleeper: { wait, _ in slept.withLock { $0.append(wait) } })
    let spent = HTTPHeaders([HTTPHeader("X-RateLimit-Remaining", "0"), HTTPHeader("X-RateLimit-Reset", "2")])
    #expect(budgets.observe(url: "https://a.test/items", headers: spent, epochNow: Self.epoch) == .seconds(2))
    clock.withLock { $0 = .milliseconds(500) }
    let cancellation = Cancellation()
    // Without any rate_limit, the host waits out the pause; another host does not.
    #expect(try budgets.send(url: "https://a.test/other", limit: nil, cancellation: cancellation) { 1 }.waited == .milliseconds(1500))
    #expect(try budgets.send(url: "https://b.test/", limit: nil, cancellation: cancellation) { 1 }.waited == .zero)
    #expect(slept.withLock { $0 } == [.milliseconds(1500)])
  }

  func policies(_ value: String) -> [(requests: Int, per: Duration)] {
    RateLimitSignal.policies(HTTPHeaders([HTTPHeader("RateLimit-Policy", value)]))
  }

  @Test func aPolicyIsReadInTheCurrentAndOlderDraftsForms() {
    #expect(policies(#""default";q=100;w=60"#).map(\.requests) == [100])
    #expect(policies(#""default";q=100;w=60"#).map(\.per) == [.seconds(60)])
    #expect(policies("100;w=60").map(\.requests) == [100])
    #expect(policies("100;w=60").map(\.per) == [.seconds(60)])
    let two = policies(#""burst";q=10;w=1, "hour";q=1000;w=3600"#)
    #expect(two.map(\.requests) == [10, 1000])
    #expect(two.map(\.per) == [.seconds(1), .seconds(3600)])
    #expect(policies(#""default";q=5;w=0.5;qu="requests""#).map(\.per) == [.milliseconds(500)])
  }

  @Test func aPolicyWithoutAWindowOrInAnotherUnitOrAbsurdIsSkipped() {
    #expect(policies(#""default";q=100"#).isEmpty)
    #expect(policies(#""bytes";q=100000;w=1;qu="content-bytes""#).isEmpty)
    #expect(policies(#""default";q=0;w=1"#).isEmpty)
    #expect(policies(#""default";q=-3;w=1"#).isEmpty)
    #expect(policies(#""default";q=2.5;w=1"#).isEmpty)
    #expect(policies(#""default";q=10;w=0"#).isEmpty)
    // A day's window is past an hour, the longest pause honoured: a 429 meets the retry policy.
    #expect(policies(#""day";q=1000;w=86400"#).isEmpty)
    #expect(policies("soon").isEmpty)
    // The one that makes sense among others is kept.
    #expect(policies(#""day";q=1000;w=86400, "second";q=5;w=1"#).map(\.requests) == [5])
  }

  /// A server that states only its policy (no `RateLimit` field): its quota in its window
  /// paces the host, counting the requests sent before the policy came, with no rate_limit.
  @Test func aPolicyWithoutARateLimitFieldPacesTheHostFromItsQuotaAndWindow() throws {
    let clock = Mutex<Duration>(.zero)
    let slept = Mutex<[Duration]>([])
    let budgets = RequestBudgets(now: { clock.withLock { $0 } }, sleeper: { wait, _ in slept.withLock { $0.append(wait) } })
    let cancellation = Cancellation()
    func send(_ url: String) throws -> Duration {
      try budgets.send(url: url, limit: nil, cancellation: cancellation) { 1 }.waited
    }
    for _ in 0..<3 { #expect(try send("https://a.test/items") == .zero) }
    let policy = HTTPHeaders([HTTPHeader("RateLimit-Policy", #""default";q=3;w=1"#)])
    #expect(budgets.observe(url: "https://a.test/items", headers: policy, epochNow: Self.epoch) == nil)
    clock.withLock { $0 = .milliseconds(200) }
    // Three went at 0 ms: the fourth waits until the first is 1 s old; another host does not.
    #expect(try send("https://a.test/items?page=2") == .milliseconds(800))
    #expect(try send("https://b.test/") == .zero)
    // The older drafts' form, a smaller quota: it replaces the one stated before.
    budgets.observe(url: "https://a.test/items", headers: HTTPHeaders([HTTPHeader("RateLimit-Policy", "1;w=2")]), epochNow: Self.epoch)
    clock.withLock { $0 = .seconds(2) }
    // The last request counted at 1 s: the next waits until it is 2 s old.
    #expect(try send("https://a.test/items?page=3") == .seconds(1))
    #expect(slept.withLock { $0 } == [.milliseconds(800), .seconds(1)])
  }
}
