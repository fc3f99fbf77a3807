internal import DrayModel

/// What `dray run` does when it finds another run of the job holding its lock
/// (`--when-locked`; README, "Exit codes"; docs/deploy.md).
public enum WhenLocked: String, Sendable, Equatable, CaseIterable {
  /// Exit 75 (EX_TEMPFAIL) with an error line: the default, for a scheduler that tries again.
  case exit
  /// Exit 0 with an info line naming the run that holds the lock: for a scheduled start
  /// (a CronJob tick) whose work the holder does, so that a collision is no failure.
  case succeed
  /// Take part in the run that holds the lock: the fan-out issue's `dray run --join`, which
  /// this option will name once it exists; refused for now (`WhenLocked.parse`).
  case join

  /// The option's value as given.
  /// - Throws: a message for a usage error (exit 2): an unknown value, with the known ones;
  ///   `join`, which arrives with `--join`.
  public static func parse(_ value: String) throws(WhenLockedError) -> WhenLocked {
    guard let chosen = WhenLocked(rawValue: value) else {
      throw WhenLockedError(
        message: "--when-locked \(PrintableText.excerpt(value)): unknown value; values: \(allCases.map(\.rawValue).joined(separator: ", "))"
      )
    }
    guard chosen != .join else {
      throw WhenLockedError(
        message:
          "--when-locked join is not available yet: it arrives with 'dray run --join' (runners sharing one run, the fan-out issue); use --when-locked exit or succeed"
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
