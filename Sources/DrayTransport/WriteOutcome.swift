/// What a failed attempt of a call that may change data on the server did there, for a call
/// that carries no transaction id for the server to recognise a repeat by (docs/network.md,
/// "Writes"). *(ours)*: the platform's documentation says what a transaction id does
/// (platform-api.md §3, "Transactions"), not what an attempt without one did; the rule lives
/// here and only here.
///
/// | the attempt | outcome | sent again |
/// |---|---|---|
/// | no byte of it reached the server (a refused connection, a name that did not resolve, a failed sign-in) | `notSent` | yes |
/// | a whole answer `408`, `429` or `503`: the server says it did not act on it (RFC 9110 §15.5.9, RFC 6585 §4, RFC 9110 §15.6.4) | `refused` | yes, as retries allow |
/// | another whole error answer from the platform, a data source's failure among them (platform-api.md §6) | `failed` | a `5xx` as retries allow; any other status never |
/// | a whole `502` or `504`: a gateway answered, and the server behind it may have acted | `unknown` | no |
/// | the request (or part of it) was sent and no whole answer came (cut, reset, timed out, cancelled), or a `2xx` whose body could not be kept | `unknown` | no |
public enum WriteOutcome: Sendable, Equatable, CustomStringConvertible {
  case notSent
  case refused(status: Int)
  case failed(status: Int)
  case unknown

  /// The outcome of an attempt that ended with `error` after `bytesSent` bytes of its
  /// request reached the socket (`HTTPClient.bytesSent`).
  public init(error: any Error, bytesSent: Int64) {
    if bytesSent == 0 {
      self = .notSent
      return
    }
    // The status of a whole answer: a transfer error after an answer's head (a cut body)
    // has none, and neither has a 2xx answer the call could not use.
    let status: Int? =
      switch (error as? TransportError)?.underlying {
      case .httpStatus(let e)?, .retryAfterTooLong(let e, _, _)?: e.status
      case nil: (error as? any ReportableError)?.httpStatus.flatMap { (200..<300).contains($0) ? nil : $0 }
      default: nil
      }
    switch status {
    case let s? where [408, 429, 503].contains(s): self = .refused(status: s)
    case let s? where ![502, 504].contains(s): self = .failed(status: s)
    default: self = .unknown
    }
  }

  /// Whether the server may have applied the call: only `unknown`.
  public var mayBeApplied: Bool { self == .unknown }

  /// For messages: `none of it reached the server`, `the server refused it with 503`.
  public var description: String {
    switch self {
    case .notSent: "none of it reached the server"
    case .refused(let status): "the server refused it with \(status)"
    case .failed(let status): "the server answered that it failed (\(status))"
    case .unknown: "it reached the server and no whole answer came back, so whether the server applied it is unknown"
    }
  }
}

/// The failure of a call that may change data on the server and carries no transaction id,
/// with what its last attempt did there (`WriteOutcome`). `code` is the call's error's,
/// or `outcome_unknown` when the server may have applied it.
public struct WriteFailure: ReportableError {
  /// The call's error (a `TransportError`, a platform error, a local file's).
  public var error: any Error
  public var outcome: WriteOutcome

  public init(_ error: any Error, outcome: WriteOutcome) {
    self.error = error
    self.outcome = outcome
  }

  public var code: String {
    outcome.mayBeApplied ? "outcome_unknown" : (error as? any ReportableError)?.code ?? "error"
  }

  public var httpStatus: Int? { (error as? any ReportableError)?.httpStatus }

  public var description: String {
    outcome.mayBeApplied
      ? "\(error); not sent again: the call may change data on the server and carries no X-Transaction-ID "
        + "for the server to recognise a repeat by, and \(outcome)"
      : "\(error); \(outcome), so it changed nothing there"
  }
}
