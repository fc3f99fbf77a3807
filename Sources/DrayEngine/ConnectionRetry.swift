internal import DrayModel
internal import DrayTarget
internal import DrayTransport

/// Retries work on a database that reconnects (`DatabaseCapabilities.reconnects`: a
/// PostgreSQL target) after a connection failure, under a retry policy, as HTTP failures are
/// retried.
///
/// A failure is retried when the database calls it transient (`DatabaseFailure.isTransient`;
/// PostgreSQL: SQLSTATE class `08` (refused, unreachable, reset, lost), `57P01`-`57P03` (the
/// server shutting down, crashing, starting up), and the others `PostgresError.isTransient`
/// lists). Before each retry the run journal connects again if its connection was lost
/// (`RunJournal.reconnectIfLost`, which takes the run lock again), then the work runs
/// again from the start: a step's rows commit with its checkpoint in one transaction, so
/// running it again resumes from the last commit and never doubles a row. A run on SQLite
/// runs the work once.
struct ConnectionRetry {
  let database: any JobDatabase
  let policy: RetryPolicy
  let cancellation: Cancellation
  let budget: RetryBudget
  /// Receives each failed or successful attempt (for the log and the step's report).
  let record: (Attempt) -> Void

  /// The name of these attempts in logs and reports.
  static let call = "database"

  /// Runs `body` until it succeeds, fails for good, or the policy's retries run out.
  ///
  /// - Parameters:
  ///   - reconnect: runs before each retry: connects the run journal again if its connection
  ///     was lost (`RunJournal.reconnectIfLost`).
  ///   - body: the work; it receives the attempt number (1-based).
  /// - Throws: the last attempt's error.
  func run<T>(reconnect: () throws -> Void = {}, _ body: (Int) throws -> T) throws -> T {
    guard database.capabilities.reconnects else { return try body(1) }
    var runner = RetryRunner(policy: policy, cancellation: cancellation, budget: budget)
    // The database is the job's own at a replay too: its waits are waited.
    runner.sleeper = RetryRunner.sleep
    // Whether the last failure was the database's: a step's own failure (an HTTP status, a
    // refused value) ends the work without a database attempt to record.
    var lostConnection = false
    return try runner.run(
      call: ConnectionRetry.call,
      { number in
        if number > 1 { try reconnect() }
        return try body(number)
      },
      classify: { error in
        lostConnection = database.isTransient(error)
        return lostConnection ? .retry : .fail(reason: nil)
      },
      record: { attempt in
        // The successful first attempt is the ordinary case, and a first attempt that failed
        // for a reason of its own is the step's failure, reported as such: neither is worth a
        // record.
        guard attempt.number > 1 || (attempt.outcome != .ok && lostConnection) else { return }
        record(attempt)
      })
  }
}
