internal import DrayModel
internal import DrayPostgres
internal import DrayStore
internal import DrayTransport

/// Retries work on a PostgreSQL target (`database.url`) after a connection failure, under a
/// retry policy, as HTTP failures are retried.
///
/// A failure is retried when it is a `PostgresError` whose `isTransient` holds: SQLSTATE
/// class `08` (refused, unreachable, reset, lost), `57P01`-`57P03` (the server shutting
/// down, crashing, starting up), and the others that table lists. Before each retry the
/// run journal connects again if its connection was lost
/// (`PostgresJournal.reconnectIfLost`, which takes the run lock again), then the work runs
/// again from the start: a step's rows commit with its checkpoint in one transaction, so
/// running it again resumes from the last commit and never doubles a row. A run on SQLite
/// runs the work once.
struct ConnectionRetry {
  let manifest: Manifest
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
  ///     was lost (`PostgresJournal.reconnectIfLost`).
  ///   - body: the work; it receives the attempt number (1-based).
  /// - Throws: the last attempt's error.
  func run<T>(reconnect: () throws -> Void = {}, _ body: (Int) throws -> T) throws -> T {
    guard manifest.database?.postgres != nil else { return try body(1) }
    let runner = RetryRunner(policy: policy, cancellation: cancellation, budget: budget)
    return try runner.run(
      call: ConnectionRetry.call,
      { number in
        if number > 1 { try reconnect() }
        return try body(number)
      },
      classify: { ($0 as? PostgresError)?.isTransient == true ? .retry : .fail(reason: nil) },
      record: { attempt in
        // The successful first attempt is the ordinary case: not worth a record.
        guard attempt.number > 1 || attempt.outcome != .ok else { return }
        record(attempt)
      })
  }
}
