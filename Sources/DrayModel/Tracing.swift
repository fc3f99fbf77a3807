public import Foundation
internal import Synchronization

/// The spans a run records for its trace (`report.otlp`, docs/report.md, "OpenTelemetry
/// traces"): one per HTTP request (`HTTPClient.perform`) and per database commit, each
/// tagged with the step running on the thread that made it.
///
/// Off unless a run turns it on (`start()`): then `isOn` is one atomic load, and nothing is
/// recorded or allocated.
public enum Tracing {
  /// One request or commit, as it happened.
  public struct Span: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
      /// An HTTP request; `url` with its credentials left out.
      case request(method: String, url: String, status: Int?, bytesReceived: Int64, bytesSent: Int64, attempt: Int)
      /// A database transaction committed (or rolled back: `error` says why); `system` is
      /// `sqlite` or `postgresql`.
      case commit(system: String)
    }

    public var kind: Kind
    /// The step (its id; a group's member or a partition: the member's id) running on the
    /// thread, nil outside every step.
    public var step: String?
    public var start: Date
    public var end: Date
    /// Why it failed, nil when it succeeded.
    public var error: String?

    public init(kind: Kind, step: String?, start: Date, end: Date, error: String?) {
      self.kind = kind
      self.step = step
      self.start = start
      self.end = end
      self.error = error
    }
  }

  private static let on = Atomic<Bool>(false)
  private static let spans = Mutex<(kept: [Span], dropped: Int)>(([], 0))

  /// The most spans a run keeps (about 5 MB of OTLP JSON, some 600 bytes a span): the first ones; those after are
  /// counted (`stop().dropped`), so that a run of millions of requests neither grows without
  /// bound nor sends a trace a collector refuses.
  public static let limit = 8000

  /// Whether spans are being recorded.
  public static var isOn: Bool { on.load(ordering: .relaxed) }

  /// Starts recording, dropping what an earlier start left.
  public static func start() {
    spans.withLock { $0 = ([], 0) }
    on.store(true, ordering: .relaxed)
  }

  /// Stops recording.
  /// - Returns: the spans recorded since `start()`, in the order they ended (at most
  ///   `limit`), and how many more there were.
  public static func stop() -> (spans: [Span], dropped: Int) {
    on.store(false, ordering: .relaxed)
    return spans.withLock {
      let all = $0
      $0 = ([], 0)
      return (all.kept, all.dropped)
    }
  }

  /// Records `span` when recording is on (counts it when `limit` spans are kept already).
  public static func record(_ span: Span) {
    guard isOn else { return }
    spans.withLock {
      if $0.kept.count < limit { $0.kept.append(span) } else { $0.dropped += 1 }
    }
  }

  private static let stepKey = "dray.tracing.step"
  private static let attemptKey = "dray.tracing.attempt"

  /// The step running on this thread (set by `withStep`).
  public static var currentStep: String? { Thread.current.threadDictionary[stepKey] as? String }

  /// The attempt number of the call running on this thread (set by `withAttempt`); 1 when
  /// none is set.
  public static var currentAttempt: Int { Thread.current.threadDictionary[attemptKey] as? Int ?? 1 }

  /// Runs `body` with `step` as this thread's step (the one before is restored after).
  public static func withStep<T>(_ step: String, _ body: () throws -> T) rethrows -> T {
    guard isOn else { return try body() }
    let dictionary = Thread.current.threadDictionary
    let before = dictionary[stepKey]
    dictionary[stepKey] = step
    defer { dictionary[stepKey] = before }
    return try body()
  }

  /// Runs `body` with `number` as this thread's attempt number.
  public static func withAttempt<T>(_ number: Int, _ body: () throws -> T) rethrows -> T {
    guard isOn else { return try body() }
    let dictionary = Thread.current.threadDictionary
    let before = dictionary[attemptKey]
    dictionary[attemptKey] = number
    defer { dictionary[attemptKey] = before }
    return try body()
  }

  /// Runs `body` as a database commit of `system`, recorded as a span with the thread's step.
  public static func commit<T>(system: String, _ body: () throws -> T) rethrows -> T {
    guard isOn else { return try body() }
    let start = Date()
    do {
      let value = try body()
      record(Span(kind: .commit(system: system), step: currentStep, start: start, end: Date(), error: nil))
      return value
    } catch {
      record(Span(kind: .commit(system: system), step: currentStep, start: start, end: Date(), error: "\(error)"))
      throw error
    }
  }
}
