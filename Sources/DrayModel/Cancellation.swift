internal import Synchronization

/// A flag that asks running work to stop at its next safe point.
///
/// Set from a signal handler (an atomic store is async-signal-safe) or by the engine; read
/// by transfers (libcurl's progress callback) and loads between rows.
public final class Cancellation: Sendable {
  private let flag = Atomic<Int>(0)

  public init() {}

  /// Asks work to stop, recording which signal asked (0 when none).
  public func cancel(signal: Int32 = 0) {
    flag.store(Int(signal == 0 ? -1 : signal), ordering: .sequentiallyConsistent)
  }

  public var isCancelled: Bool { flag.load(ordering: .relaxed) != 0 }

  /// The signal that cancelled, or nil when cancelled otherwise or not at all.
  public var signal: Int32? {
    let value = flag.load(ordering: .relaxed)
    return value > 0 ? Int32(value) : nil
  }
}
