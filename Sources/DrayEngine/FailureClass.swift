public import DrayModel
internal import DrayPlatform
public import DrayTarget
internal import DrayTransport

/// Which of the two kinds of failure a failed run had, as a scheduler acts on them (README,
/// "Exit codes"; docs/report.md, `failure_class`).
public enum FailureClass: String, Sendable, Equatable, CaseIterable {
  /// Services stayed unavailable after the retry policy: connections refused, reset or
  /// not made, host names that did not resolve, time limits, `5xx`, `408` and `429` answers
  /// (and a `Retry-After` longer than `retry.max_retry_after`), a database connection lost
  /// (and with it the run lock). Trying again later may succeed: exit 69 (`EX_UNAVAILABLE`,
  /// sysexits.h).
  case unavailable
  /// Everything else: a refused credential, another `4xx`, TLS, bad data, a failed
  /// expectation, an SQL error, a local file, a write whose outcome is unknown. Trying
  /// again without a change will not help: exit 1.
  case permanent

  /// The exit code of a failed run of this class: 69 or 1.
  public var exitCode: Int32 { self == .unavailable ? ExitCode.unavailable : ExitCode.stepFailed }

  /// What a scheduler should make of it, for the summary line.
  public var advice: String {
    self == .unavailable ? "trying again later may succeed" : "trying again without a change will not help"
  }
}

/// Why a run (or one step of it) failed: its class, and a few words saying which failure
/// decided it (`step fruits: the server answered HTTP 503 Service Unavailable (http_503)`).
///
/// Built from the typed errors the transport, platform and database layers throw
/// (`FailureCause.of(_:in:)`), never from their messages; this file is the one place the
/// classes are decided.
public struct FailureCause: Sendable, Equatable {
  public var failureClass: FailureClass
  /// Which failure decided the class, and where: `step STEP: ...`, or `the database: ...`
  /// for a run that could not start or end. No secret: the words are dray's own, with the
  /// error's stable code.
  public var reason: String

  public init(_ failureClass: FailureClass, _ reason: String) {
    self.failureClass = failureClass
    self.reason = reason
  }

  /// The cause of a run with both failures: unavailable only when both are; otherwise
  /// the permanent one (or both permanent ones) name the reason.
  func combined(with other: FailureCause) -> FailureCause {
    if failureClass == other.failureClass {
      return reason == other.reason ? self : FailureCause(failureClass, "\(reason); \(other.reason)")
    }
    return failureClass == .permanent ? self : other
  }

  /// The cause of `causes` together (`combined(with:)`); nil for none.
  static func combined(_ causes: [FailureCause]) -> FailureCause? {
    guard var out = causes.first else { return nil }
    for cause in causes.dropFirst() { out = out.combined(with: cause) }
    return out
  }

  /// The same cause said of `place` (`step fruits`, `the database`).
  func at(_ place: String) -> FailureCause {
    FailureCause(failureClass, "\(place): \(reason)")
  }

  /// The class of `error`, the error a step or the run ended with after its retry policy,
  /// and what it was, with its stable code:
  ///
  /// | error | class |
  /// |---|---|
  /// | `DatabaseFailure` (`database.failure`): transient (a lost or refused connection), a time limit, the run lock lost | unavailable |
  /// | other database errors (SQL, constraints, privileges, a bad password) | permanent |
  /// | `TransportError` (below any `gaveUp`): `isTransient` (DNS, connections, time limits, broken transfers, 408, 429, 5xx), `retryAfterTooLong` | unavailable |
  /// | other `TransportError`s (TLS, other 4xx, redirects, files, unreadable answers), `notRepeated` (a write not sent again) | permanent |
  /// | `PlatformError` (refused credentials, answers not of the documented shape) | permanent |
  /// | `WriteFailure`: a write that may have been applied | permanent (it is not sent again unasked) |
  /// | `WriteFailure` that changed nothing | its call's error's class |
  /// | anything else (expectations, loads, steps' own errors) | permanent |
  ///
  /// `statusRule` is an `http` step's `on_status` (`HTTPStep.outcome(for:)`): a status it
  /// retries is unavailable, one it fails permanent (docs/http.md, "Status handling").
  public static func of(_ error: any Error, in database: any JobDatabase, statusRule: ((Int) -> HTTPStep.StatusOutcome)? = nil)
    -> FailureCause
  {
    if let failure = database.failure(error) {
      let code = failure.code ?? "database_error"
      if failure.isLockLost { return FailureCause(.unavailable, "the run lost the job's lock on the database (\(code))") }
      if failure.isTimeout { return FailureCause(.unavailable, "a database time limit passed (\(code))") }
      if failure.isTransient { return FailureCause(.unavailable, "the database connection failed or was lost (\(code))") }
      return FailureCause(.permanent, "the database refused the work (\(code))")
    }
    switch error {
    case let e as TransportError: return transport(e, statusRule: statusRule)
    case let e as PlatformError:
      switch e {
      case .signInFailed(let status), .unauthorized(let status), .reauthenticated(let status):
        return FailureCause(.permanent, "the server refused the credentials (\(statusWords(status.status)), \(e.code))")
      case .badAnswer: return FailureCause(.permanent, "the server's answer is not of the documented shape (\(e.code))")
      }
    case let e as WriteFailure:
      guard !e.outcome.mayBeApplied else {
        return FailureCause(.permanent, "a write may have been applied and is not sent again unasked (\(e.code))")
      }
      return of(e.error, in: database, statusRule: statusRule)
    default:
      let what =
        switch error {
        case StepError.expectation: "an expectation failed"
        case is StepError.Unresolved: "a write's outcome is unknown"
        case is LoadError: "the data could not be loaded"
        case is StoreError: "the database refused the work"
        case is LocalFileError: "a local file could not be used"
        case is HTTPStepError: "the answer could not be used"
        case is StepError: "the step could not do its work"
        default: "the step failed"
        }
      return FailureCause(.permanent, "\(what) (\(StepRunner.code(of: error, in: database)))")
    }
  }

  static func transport(_ error: TransportError, statusRule: ((Int) -> HTTPStep.StatusOutcome)?) -> FailureCause {
    let code = error.code
    if case .notRepeated = error {
      return FailureCause(.permanent, "a call that may change data was not sent again (\(code)); make it safe to repeat")
    }
    if case .httpStatus(let status) = error.underlying, let statusRule {
      return statusRule(status.status) == .retry
        ? FailureCause(.unavailable, "the server answered \(statusWords(status.status)) (\(code))")
        : FailureCause(.permanent, "the server refused the call with \(statusWords(status.status)) (\(code), on_status)")
    }
    switch error.underlying {
    case .dnsFailure, .proxyDNSFailure: return FailureCause(.unavailable, "a host name did not resolve (\(code))")
    case .connectionRefused: return FailureCause(.unavailable, "the server refused connections (\(code))")
    case .connectionReset, .truncated: return FailureCause(.unavailable, "the connection broke (\(code))")
    case .timeout(let kind, _, _): return FailureCause(.unavailable, "a time limit passed (timeouts.\(kind.rawValue), \(code))")
    case .retryAfterTooLong(let status, _, _):
      return FailureCause(
        .unavailable, "the server answered \(statusWords(status.status)) and asked to wait longer than retry.max_retry_after (\(code))")
    case .httpStatus(let status) where error.underlying.isTransient:
      return FailureCause(.unavailable, "the server answered \(statusWords(status.status)) (\(code))")
    case .httpStatus(let status):
      return FailureCause(.permanent, "the server refused the call with \(statusWords(status.status)) (\(code))")
    case let other where other.isTransient: return FailureCause(.unavailable, "the transfer failed (\(code))")
    case .tlsFailure: return FailureCause(.permanent, "TLS failed (\(code))")
    default: return FailureCause(.permanent, "the call failed (\(code))")
    }
  }

  /// `HTTP 503 Service Unavailable`.
  static func statusWords(_ status: Int) -> String {
    let reason = HTTPStatusError.reason(status)
    return "HTTP \(status)" + (reason.isEmpty ? "" : " \(reason)")
  }
}

extension RunReport {
  /// Records `cause` as a failure of the run: `failure` becomes the cause of every failure
  /// so far, and a run that has not ended otherwise (interrupted: 130) exits by its class,
  /// 69 or 1. The status is the caller's to set.
  mutating func addFailure(_ cause: FailureCause) {
    failure = failure.map { $0.combined(with: cause) } ?? cause
    if exitCode == ExitCode.success || exitCode == ExitCode.stepFailed || exitCode == ExitCode.unavailable {
      exitCode = failure?.failureClass.exitCode ?? ExitCode.stepFailed
    }
  }

  /// The causes of the failed steps (a group's members in its place), each at its step.
  var stepFailures: [FailureCause] {
    steps.filter { $0.status == .failed }.compactMap { step in step.failure?.at("step \(step.id)") }
  }
}
