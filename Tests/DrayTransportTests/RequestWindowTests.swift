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
    // A host no step gave a budget is neither paced nor counted.
    for _ in 0..<5 {
      #expect(try send("https://c.test/", nil) == .zero)
    }
    #expect(slept.withLock { $0 } == [.milliseconds(750), .milliseconds(750)])
    // What the request's closure returns comes back.
    #expect(try budgets.send(url: "https://c.test/", limit: nil, cancellation: cancellation) { 42 }.0 == 42)
  }
}
