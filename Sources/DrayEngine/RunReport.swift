internal import DrayModel
public import DrayTransport
public import Foundation

/// How a run or a step ended.
public enum RunStatus: String, Sendable, Equatable {
  case succeeded, failed, skipped, interrupted
  /// A step the run never reached.
  case notRun = "not_run"
}

/// What one step did, for the run report.
public struct StepReport: Sendable {
  public var id: String
  public var kind: String
  public var status: RunStatus
  public var startedAt: Date?
  /// Seconds.
  public var duration: Double = 0
  public var attempts: [Attempt] = []
  /// Body bytes received (and sent, for uploads).
  public var bytes: Int64 = 0
  /// Rows per table written (after a load: rows the table holds).
  public var rows: [String: Int] = [:]
  /// Physical tables written.
  public var tables: [String] = []
  /// Files written.
  public var outputs: [String] = []
  /// SQL statements run, with rows changed.
  public var statements: [(sql: String, changes: Int)] = []
  /// Lines worth keeping (warnings, notes).
  public var notes: [String] = []
  public var errorCode: String?
  public var errorMessage: String?
  /// Why a step was skipped.
  public var skipReason: String?
  /// The members of a `parallel` group, in file order.
  public var members: [StepReport] = []

  public init(id: String, kind: String, status: RunStatus) {
    self.id = id
    self.kind = kind
    self.status = status
  }

  /// All rows written, summed over tables.
  public var totalRows: Int { rows.values.reduce(0, +) }
}

/// The report of one run (format version 1; see docs/report.md).
public struct RunReport: Sendable {
  public static let formatVersion = 1
  public var job: String
  public var runID: String
  /// The run this one resumes, when it resumes one.
  public var resumes: String?
  public var manifestPath: String
  public var manifestFingerprint: String
  public var host: String
  public var startedAt: Date
  public var endedAt: Date
  public var status: RunStatus
  public var exitCode: Int32
  public var steps: [StepReport]
  /// Set when the run failed before its first step (lock, journal, database).
  public var errorMessage: String?

  /// The report as JSON text (keys in a fixed order).
  public func json() -> String {
    var top = topJSON()
    top.append(("steps", .array(steps.map(RunReport.stepJSON))))
    return JSONValue.object(top).json
  }

  static func stepJSON(_ s: StepReport) -> JSONValue {
    var o: [(key: String, value: JSONValue)] = [
      ("id", .string(s.id)), ("kind", .string(s.kind)), ("status", .string(s.status.rawValue)),
    ]
    if let started = s.startedAt { o.append(("started_at", .string(RunReport.rfc3339(started)))) }
    o.append(("duration_seconds", .number(RunReport.seconds(s.duration))))
    o.append(("attempts", .array(s.attempts.map(RunReport.attemptJSON))))
    o.append(("bytes", .integer(s.bytes)))
    o.append(("rows", .object(s.rows.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) })))
    o.append(("tables", .array(s.tables.map { .string($0) })))
    o.append(("outputs", .array(s.outputs.map { .string($0) })))
    if !s.statements.isEmpty {
      o.append(("statements", .array(s.statements.map { .object([("sql", .string($0.sql)), ("changes", .integer(Int64($0.changes)))]) })))
    }
    if !s.notes.isEmpty { o.append(("notes", .array(s.notes.map { .string($0) }))) }
    if let reason = s.skipReason { o.append(("skip_reason", .string(reason))) }
    if s.errorCode != nil || s.errorMessage != nil {
      o.append(("error", .object([("code", .string(s.errorCode ?? "error")), ("message", .string(s.errorMessage ?? ""))])))
    }
    if !s.members.isEmpty { o.append(("steps", .array(s.members.map(stepJSON)))) }
    return .object(o)
  }

  func topJSON() -> [(key: String, value: JSONValue)] {
    var top: [(key: String, value: JSONValue)] = [
      ("format_version", .integer(Int64(RunReport.formatVersion))),
      ("job", .string(job)), ("run_id", .string(runID)),
    ]
    if let resumes { top.append(("resumes", .string(resumes))) }
    top += [
      ("manifest", .object([("path", .string(manifestPath)), ("fingerprint", .string(manifestFingerprint))])),
      ("dray_version", .string(DrayVersion.current)), ("host", .string(host)),
      ("started_at", .string(RunReport.rfc3339(startedAt))), ("ended_at", .string(RunReport.rfc3339(endedAt))),
      ("duration_seconds", .number(RunReport.seconds(endedAt.timeIntervalSince(startedAt)))),
      ("status", .string(status.rawValue)), ("exit_code", .integer(Int64(exitCode))),
    ]
    if let errorMessage { top.append(("error", .string(errorMessage))) }
    return top
  }

  static func attemptJSON(_ a: Attempt) -> JSONValue {
    var o: [(key: String, value: JSONValue)] = [("number", .integer(Int64(a.number)))]
    if let call = a.call { o.append(("call", .string(call))) }
    o += [
      ("outcome", .string(a.outcome)),
      ("start_offset_seconds", .number(seconds(a.startOffset))), ("duration_seconds", .number(seconds(a.duration))),
    ]
    if let status = a.status { o.append(("http_status", .integer(Int64(status)))) }
    if let message = a.message { o.append(("message", .string(message))) }
    if let bytes = a.bytes { o.append(("bytes", .integer(bytes))) }
    if let offset = a.resumedFrom { o.append(("resumed_from", .integer(offset))) }
    if let wait = a.wait {
      o.append(("wait_seconds", .number(seconds(wait))))
      o.append(("wait_from_retry_after", .bool(a.waitFromRetryAfter)))
    }
    return .object(o)
  }

  static func seconds(_ value: Double) -> String {
    let rounded = (value * 1000).rounded() / 1000
    return String(format: "%.3f", rounded)
  }

  /// RFC 3339 time in UTC with milliseconds.
  static func rfc3339(_ date: Date) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.string(from: date)
  }
}
