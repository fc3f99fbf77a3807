public import DrayModel
internal import Foundation
internal import Glibc
internal import Synchronization

/// Where a run's messages go: log lines to standard error, the summary to standard output,
/// every message passed through the run's `SharedRedactor` first (before a JSON log line
/// encodes it); the step id of a line is a name dray writes and is never altered.
///
/// Log lines come in two formats (`--log-format`):
///
/// - `text`: on a terminal, `step countries: ok in 0.21s (249 rows)`; off a terminal (cron,
///   CI, a pipe) each line starts with an RFC 3339 UTC timestamp,
///   `2026-11-30T12:03:11.204Z step countries: ok in 0.21s (249 rows)`, so that mailed output
///   stays readable. Warnings and errors start with `warning:` and `error:`.
/// - `json`: one JSON object per line, `{"time":"2026-11-30T12:03:11.204Z","level":"info",
///   "step":"countries","message":"ok in 0.21s (249 rows)"}`; `level` is `debug`, `info`,
///   `warning` or `error`; `step` is null for lines about the whole run.
///
/// On a terminal, in the text format and unless quiet, steps that move bytes or rows show a
/// live progress line each, redrawn in place at most 10 times a second (`ProgressBoard`).
/// Colour is used only on a terminal and never when `NO_COLOR` is set (https://no-color.org).
public final class Console: Sendable {
  public enum Level: Int, Sendable, Comparable {
    /// Warnings and errors only; the summary only when the run did not succeed.
    case quiet
    /// Progress, a line per step event, the summary.
    case normal
    /// Also every attempt of every call, checkpoints, SQL statements.
    case verbose
    public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
  }

  /// How log lines are written.
  public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
  }

  /// The secrets of the run; every line passes through it.
  public let redactor: SharedRedactor
  public let level: Level
  public let format: LogFormat
  /// Standard error is a terminal.
  public let isTerminal: Bool
  /// Colour in log lines (standard error).
  public let useColor: Bool
  /// Colour in the summary (standard output).
  public let useColorOnOutput: Bool
  /// Live progress lines are drawn (standard error is a terminal that can redraw, text
  /// format, not quiet).
  public let showsProgress: Bool
  private let screen = Mutex<ProgressBoard>(ProgressBoard())

  /// A console on the process's standard streams, reading `NO_COLOR` and `TERM` from the
  /// process environment.
  public convenience init(level: Level = .normal, redactor: Redactor = Redactor()) {
    self.init(level: level, redactor: SharedRedactor(redactor))
  }

  /// - Parameters:
  ///   - environment: where `NO_COLOR` and `TERM` are read; nil for the process's.
  ///   - terminal: whether standard error (and output) count as terminals; nil asks
  ///     `isatty(3)`.
  public init(
    level: Level, format: LogFormat = .text, redactor: SharedRedactor, environment: [String: String]? = nil, terminal: Bool? = nil
  ) {
    let environment = environment ?? ProcessInfo.processInfo.environment
    self.level = level
    self.format = format
    self.redactor = redactor
    let errorIsTerminal = terminal ?? (isatty(STDERR_FILENO) == 1)
    let outputIsTerminal = terminal ?? (isatty(STDOUT_FILENO) == 1)
    let colorAllowed = (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    self.isTerminal = errorIsTerminal
    self.useColor = errorIsTerminal && colorAllowed && format == .text
    self.useColorOnOutput = outputIsTerminal && colorAllowed
    self.showsProgress = errorIsTerminal && environment["TERM"] != "dumb" && format == .text && level >= .normal
  }

  /// Adds every secret of `redactor` (once the manifest's secrets are known).
  public func setRedactor(_ redactor: Redactor) {
    self.redactor.add(contentsOf: redactor)
  }

  /// Registers a secret learnt during the run (a platform token).
  public func addSecret(_ secret: String) {
    redactor.add(secret)
  }

  public func redact(_ text: String) -> String { redactor.redact(text) }

  /// A line about the run's progress (shown unless quiet).
  public func info(_ message: String, step: String? = nil) {
    guard level >= .normal else { return }
    log(.info, message, step: step)
  }

  /// Detail shown with `--verbose`.
  public func debug(_ message: String, step: String? = nil) {
    guard level >= .verbose else { return }
    log(.debug, message, step: step)
  }

  /// A warning, always shown.
  public func warn(_ message: String, step: String? = nil) {
    log(.warning, message, step: step)
  }

  /// An error, always shown.
  public func error(_ message: String, step: String? = nil) {
    log(.error, message, step: step)
  }

  enum Severity: String {
    case debug, info, warning, error
  }

  /// Writes one log line. The message is made one line without control characters
  /// (`PrintableText.oneLine`) after masking, whatever it quotes: a line of dray's is one
  /// line, and only dray's own codes (colour, progress) ever reach a terminal.
  private func log(_ severity: Severity, _ message: String, step: String?) {
    let text = PrintableText.oneLine(redact(message))
    let step = step.map { PrintableText.oneLine($0) }
    let line: String
    switch format {
    case .json:
      let object = JSONValue.object([
        ("time", .string(RunReport.rfc3339(Date()))), ("level", .string(severity.rawValue)),
        ("step", step.map { .string($0) } ?? .null), ("message", .string(text)),
      ])
      line = object.json
    case .text:
      var prefix = ""
      switch severity {
      case .warning: prefix = useColor ? "\u{1B}[33mwarning:\u{1B}[0m " : "warning: "
      case .error: prefix = useColor ? "\u{1B}[31merror:\u{1B}[0m " : "error: "
      default: break
      }
      if let step { prefix += "step \(step): " }
      line = (isTerminal ? "" : RunReport.rfc3339(Date()) + " ") + prefix + text
    }
    screen.withLock { board in
      var out = board.erase()
      out += line + "\n"
      out += board.draw(now: .now, width: terminalWidth)
      Console.write(out, to: STDERR_FILENO)
    }
  }

  /// Prints text to standard output after masking, clearing progress lines first. Without
  /// colour, every control character but `\n` is escaped (`PrintableText.escaped`); with
  /// colour (a terminal), the caller has made what it quotes printable and adds only its
  /// own colour codes.
  public func print(_ text: String) {
    var shown = redact(text)
    if !useColorOnOutput { shown = PrintableText.escaped(shown, keepingNewlines: true) }
    let line = shown + "\n"
    screen.withLock { board in
      let erase = board.erase()
      if !erase.isEmpty { Console.write(erase, to: STDERR_FILENO) }
      Console.write(line, to: STDOUT_FILENO)
      let redraw = board.draw(now: .now, width: terminalWidth)
      if !redraw.isEmpty { Console.write(redraw, to: STDERR_FILENO) }
    }
  }

  // MARK: Progress

  /// Records that `step` has received `bytes` of a download (`total` when known), and
  /// redraws the progress lines when the last drawing is 0.1 s old.
  public func progress(step: String, kind: String, bytes: Int64, total: Int64?) {
    guard showsProgress else { return }
    update(step: step, kind: kind) { $0.download(bytes: bytes, total: total, at: $1) }
  }

  /// Records that `step` has loaded `rows` rows so far.
  public func progress(step: String, kind: String, rows: Int) {
    guard showsProgress else { return }
    update(step: step, kind: kind) { entry, _ in entry.rows = rows }
  }

  /// Removes `step`'s progress line.
  public func endProgress(step: String) {
    guard showsProgress else { return }
    screen.withLock { board in
      guard board.entries.contains(where: { $0.step == step }) else { return }
      var out = board.erase()
      board.entries.removeAll { $0.step == step }
      out += board.draw(now: .now, width: terminalWidth)
      Console.write(out, to: STDERR_FILENO)
    }
  }

  private func update(step: String, kind: String, _ change: (inout ProgressBoard.Entry, ContinuousClock.Instant) -> Void) {
    let now = ContinuousClock.now
    screen.withLock { board in
      let index: Int
      if let found = board.entries.firstIndex(where: { $0.step == step }) {
        index = found
      } else {
        board.entries.append(ProgressBoard.Entry(step: step, kind: kind, startedAt: now))
        index = board.entries.count - 1
      }
      change(&board.entries[index], now)
      guard board.isDue(now) else { return }
      let out = board.erase() + board.draw(now: now, width: terminalWidth)
      Console.write(out, to: STDERR_FILENO)
    }
  }

  /// Columns of the terminal on standard error (`TIOCGWINSZ`), 80 when unknown.
  private var terminalWidth: Int {
    var size = winsize()
    if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
    return 80
  }

  private static func write(_ text: String, to fd: Int32) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { return }
      bytes = bytes.dropFirst(n)
    }
  }
}
