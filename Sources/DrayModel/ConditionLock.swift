public import Foundation

extension NSCondition {
  /// Runs `body` holding the lock, then wakes every thread waiting on the condition (what
  /// `body` changed may be what they wait for) and unlocks: the one way `GrowingFile` and the
  /// store's insert writer change what their threads wait on.
  /// - Throws: what `body` throws.
  public func withLockAndBroadcast<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
    lock()
    defer {
      broadcast()
      unlock()
    }
    return try body()
  }
}
