internal import Foundation

/// A thread of its own that works through items one producer hands over, so that the
/// producer (parsing an answer) and the work (SQLite's inserts, PostgreSQL's COPY sends) use
/// two cores. At most `limit` items wait, so memory stays bounded whatever the answer's
/// size: `take()` waits while that many do. Items the thread is done with come back as
/// spares (`take()`), so a load reuses its few buffers.
///
/// What the work uses (a database connection) is never used by both threads at once: the
/// producer uses it again only after `drain()`, which returns once every item handed over
/// is done. The condition's lock (`NSCondition.withLockAndBroadcast`) orders the two.
///
/// The first failure `work` returns stops the work: later items are dropped (kept as
/// spares), and the failure is thrown by the next `submit(_:)` and returned by `drain()`.
/// `stop()` ends the thread; call it before the last reference goes.
public final class HandoffThread<Item>: @unchecked Sendable {
  // @unchecked: every stored property below is read and written only while `condition`'s
  // lock is held; each item belongs to one thread at a time (the queue hands it over).
  private let condition = NSCondition()
  private let limit: Int
  private let work: (Item) -> (any Error)?
  private var queue: [Item] = []
  private var spare: [Item] = []
  /// The thread is working on an item it took from `queue`.
  private var working = false
  private var failure: (any Error)?
  private var started = false
  private var stopping = false
  private let stopped = DispatchSemaphore(value: 0)

  /// - Parameters:
  ///   - limit: items handed over and not yet done, at most.
  ///   - work: does one item on the thread; returns the failure that stops the work.
  public init(limit: Int, work: @escaping (Item) -> (any Error)?) {
    self.limit = limit
    self.work = work
  }

  /// A spare item, or nil when there is none (the caller makes one); waits while `limit`
  /// items wait.
  public func take() -> Item? {
    condition.withLockAndBroadcast {
      while queue.count >= limit && failure == nil { condition.wait() }
      return spare.popLast()
    }
  }

  /// Gives back an item taken and not handed over.
  public func giveBack(_ item: Item) {
    condition.withLockAndBroadcast { spare.append(item) }
  }

  /// Hands `item` to the thread (started on the first).
  /// - Throws: the failure that stopped the work, once it did (the item is kept as a spare).
  public func submit(_ item: Item) throws {
    try condition.withLockAndBroadcast { () throws in
      if let failure {
        spare.append(item)
        throw failure
      }
      queue.append(item)
      if !started {
        started = true
        let thread = Thread { [self] in run() }
        thread.stackSize = 1 << 20
        thread.start()
      }
    }
  }

  /// Waits until every item handed over is done (or dropped, after a failure); then what the
  /// work uses is the caller's until the next `submit(_:)`.
  /// - Returns: the failure that stopped the work, if one did.
  public func drain() -> (any Error)? {
    condition.withLockAndBroadcast {
      while !queue.isEmpty || working { condition.wait() }
      return failure
    }
  }

  /// Ends the thread once what was handed over is done.
  public func stop() {
    let wait = condition.withLockAndBroadcast { () -> Bool in
      stopping = true
      return started
    }
    if wait { stopped.wait() }
  }

  private func run() {
    while let item = next() {
      let failed = work(item)
      condition.withLockAndBroadcast {
        working = false
        if let failed, failure == nil { failure = failed }
        spare.append(item)
      }
    }
    stopped.signal()
  }

  /// The next item to work on; nil once stopping.
  private func next() -> Item? {
    condition.withLockAndBroadcast {
      while true {
        if failure != nil && !queue.isEmpty {
          spare += queue
          queue.removeAll()
          // `drain()` and `take()` wait for this; `wait()` below would not tell them.
          condition.broadcast()
        }
        if !queue.isEmpty {
          working = true
          return queue.removeFirst()
        }
        if stopping { return nil }
        condition.wait()
      }
    }
  }
}
