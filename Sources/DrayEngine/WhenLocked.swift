internal import DrayModel

/// What `dray run` does when it finds another run of the job holding its lock
/// (`--when-locked`; README, "Exit codes"; docs/deploy.md).
public enum WhenLocked: String, Sendable, Equatable, CaseIterable {
  /// Exit 75 (EX_TEMPFAIL) with an error line: the default, for a scheduler that tries again.
  case exit
  /// Exit 0 with an info line naming the run that holds the lock: for a scheduled start
  /// (a CronJob tick) whose work the holder does, so that a collision is no failure.
  case succeed
  /// Take part in the run that holds the lock: the same as `dray run --join` (one
  /// mechanism; `Runner.join`, docs/partitions.md "Many runners"), PostgreSQL only.
  case join

  /// The option's value as given.
  /// - Throws: a message for a usage error (exit 2): an unknown value, with the known ones.
  public static func parse(_ value: String) throws(WhenLockedError) -> WhenLocked {
    guard let chosen = WhenLocked(rawValue: value) else {
      throw WhenLockedError(
        message: "--when-locked \(PrintableText.excerpt(value)): unknown value; values: \(allCases.map(\.rawValue).joined(separator: ", "))"
      )
    }
    return chosen
  }
}

/// A `--when-locked` value `dray run` does not take (`WhenLocked.parse`).
public struct WhenLockedError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public var description: String { message }
}
