internal import Synchronization

/// A monotonic clock for tests that stands still until `advance(by:)` moves it, so that a
/// test of "after two seconds" takes no time and cannot be late on a busy machine.
public final class TestClock: Sendable {
  private let instant: Mutex<ContinuousClock.Instant>

  public init(start: ContinuousClock.Instant = .now) {
    instant = Mutex(start)
  }

  /// The clock's time.
  public var now: ContinuousClock.Instant { instant.withLock { $0 } }

  /// Moves the clock forward by `duration`.
  public func advance(by duration: Duration) {
    instant.withLock { $0 += duration }
  }
}
