public import DrayModel
internal import Foundation
internal import Glibc
internal import Synchronization

/// Where a run's messages go: log lines to standard error, the summary to standard output,
/// every line passed through the job's `Redactor` first.
///
/// On a terminal lines are plain; off a terminal (cron, CI) each log line starts with an
/// RFC 3339 timestamp so that mailed output stays readable.
public final class Console: Sendable {
  public enum Level: Int, Sendable, Comparable {
    case quiet, normal, verbose
    public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
  }

  private let redactor: Mutex<Redactor>
  public let level: Level
  public let isTerminal: Bool
  /// Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org).
  public let useColor: Bool
  private let output = Mutex<Void>(())

  /// A console reading `NO_COLOR` from the process environment.
  public convenience init(level: Level = .normal, redactor: Redactor = Redactor()) {
    self.init(level: level, redactor: redactor, environment: ProcessInfo.processInfo.environment)
  }

  public init(level: Level, redactor: Redactor, environment: [String: String]) {
    self.level = level
    self.redactor = Mutex(redactor)
    self.isTerminal = isatty(STDERR_FILENO) == 1
    self.useColor = isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
  }

  /// Replaces the redactor (once the manifest's secrets are known).
  public func setRedactor(_ redactor: Redactor) {
    self.redactor.withLock { $0 = redactor }
  }

  public func redact(_ text: String) -> String { redactor.withLock { $0.redact(text) } }

  /// Registers a secret learnt during the run (a platform token) with the redactor.
  public func addSecret(_ secret: String) {
    redactor.withLock { $0.add(secret) }
  }

  /// A progress or log line (shown unless quiet).
  public func info(_ message: String) {
    guard level >= .normal else { return }
    log(message)
  }

  /// Detail shown with `--verbose`.
  public func debug(_ message: String) {
    guard level >= .verbose else { return }
    log(message)
  }

  /// A warning, always shown.
  public func warn(_ message: String) {
    log((useColor ? "\u{1B}[33mwarning:\u{1B}[0m " : "warning: ") + message)
  }

  /// An error, always shown.
  public func error(_ message: String) {
    log((useColor ? "\u{1B}[31merror:\u{1B}[0m " : "error: ") + message)
  }

  private func log(_ message: String) {
    var line = redact(message)
    if !isTerminal { line = RunReport.rfc3339(Date()) + " " + line }
    write(line + "\n", to: FileHandle.standardError)
  }

  /// Prints text to standard output as is (after redaction).
  public func print(_ text: String) {
    write(redact(text) + "\n", to: FileHandle.standardOutput)
  }

  private func write(_ text: String, to stream: FileHandle) {
    output.withLock { _ in stream.write(Data(text.utf8)) }
  }
}
