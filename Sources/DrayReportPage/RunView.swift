internal import DrayJSON
internal import DrayModel
internal import Foundation

/// A JSON report (format version 1, docs/report.md) read for the page. Fields a reader does
/// not know are ignored, as the format's versioning asks; a missing field reads as empty.
struct RunView {
  var runID: String
  var job: String
  var resumes: String?
  var manifestPath: String
  var host: String
  var drayVersion: String
  var startedAt: String
  var endedAt: String
  var duration: Double
  var status: String
  var exitCode: Int64
  var error: String?
  var totals: [(key: String, value: Int64)]
  var steps: [StepView]

  /// Nil when `json` is not a report of format version 1.
  init?(_ json: JSONValue) {
    guard json["format_version"]?.intValue == 1, let runID = json["run_id"]?.stringValue else { return nil }
    self.runID = runID
    job = json["job"]?.stringValue ?? ""
    resumes = json["resumes"]?.stringValue
    manifestPath = json["manifest"]?["path"]?.stringValue ?? ""
    host = json["host"]?.stringValue ?? ""
    drayVersion = json["dray_version"]?.stringValue ?? ""
    startedAt = json["started_at"]?.stringValue ?? ""
    endedAt = json["ended_at"]?.stringValue ?? ""
    duration = json["duration_seconds"]?.doubleValue ?? 0
    status = json["status"]?.stringValue ?? "unknown"
    exitCode = json["exit_code"]?.intValue ?? 0
    error = json["error"]?.stringValue
    totals = (json["totals"]?.objectValue ?? []).compactMap { pair in pair.value.intValue.map { (pair.key, $0) } }
    steps = (json["steps"]?.arrayValue ?? []).map(StepView.init)
  }

  /// Rows per table over every step and group member: what the run left in each table.
  static func rowsPerTable(_ json: JSONValue) -> [String: Int64] {
    var rows: [String: Int64] = [:]
    func add(_ step: JSONValue) {
      for (table, count) in step["rows"]?.objectValue ?? [] {
        if let count = count.intValue { rows[table] = count }
      }
      for member in step["steps"]?.arrayValue ?? [] { add(member) }
    }
    for step in json["steps"]?.arrayValue ?? [] { add(step) }
    return rows
  }
}

/// A step of the report, or a member of a `parallel` group.
struct StepView {
  var id: String
  var kind: String
  var status: String
  var startedAt: String?
  var duration: Double
  var attempts: [AttemptView]
  var bytes: Int64
  /// Bytes on the wire (`wire_bytes`); `bytes` in reports written before it existed.
  var wireBytes: Int64
  var rows: [(key: String, value: Int64)]
  var tables: [String]
  var outputs: [String]
  var statements: [(sql: String, changes: Int64)]
  var notes: [String]
  var skipReason: String?
  var errorCode: String?
  var errorMessage: String?
  var httpStatuses: [(key: String, value: Int64)]
  var members: [StepView]

  init(_ json: JSONValue) {
    id = json["id"]?.stringValue ?? ""
    kind = json["kind"]?.stringValue ?? ""
    status = json["status"]?.stringValue ?? "unknown"
    startedAt = json["started_at"]?.stringValue
    duration = json["duration_seconds"]?.doubleValue ?? 0
    attempts = (json["attempts"]?.arrayValue ?? []).map(AttemptView.init)
    bytes = json["bytes"]?.intValue ?? 0
    wireBytes = json["wire_bytes"]?.intValue ?? bytes
    rows = (json["rows"]?.objectValue ?? []).compactMap { pair in pair.value.intValue.map { (pair.key, $0) } }
    tables = (json["tables"]?.arrayValue ?? []).compactMap(\.stringValue)
    outputs = (json["outputs"]?.arrayValue ?? []).compactMap(\.stringValue)
    statements = (json["statements"]?.arrayValue ?? []).map { ($0["sql"]?.stringValue ?? "", $0["changes"]?.intValue ?? 0) }
    notes = (json["notes"]?.arrayValue ?? []).compactMap(\.stringValue)
    skipReason = json["skip_reason"]?.stringValue
    errorCode = json["error"]?["code"]?.stringValue
    errorMessage = json["error"]?["message"]?.stringValue
    httpStatuses = (json["http_statuses"]?.objectValue ?? []).compactMap { pair in pair.value.intValue.map { (pair.key, $0) } }
    // A group's members are its `steps`; a partitioned step's, its `partitions` (docs/report.md).
    members = (json["steps"]?.arrayValue ?? json["partitions"]?.arrayValue ?? []).map(StepView.init)
  }
}

/// One attempt of a call.
struct AttemptView {
  var number: Int64
  /// `sign-in`, `schema`, or nil for the step's own call.
  var call: String?
  var outcome: String
  /// Seconds from the start of the call.
  var startOffset: Double
  var duration: Double
  var httpStatus: Int64?
  var message: String?
  var bytes: Int64?
  var resumedFrom: Int64?
  /// Seconds waited after this attempt before the next.
  var wait: Double?
  var waitFromRetryAfter: Bool

  init(_ json: JSONValue) {
    number = json["number"]?.intValue ?? 1
    call = json["call"]?.stringValue
    outcome = json["outcome"]?.stringValue ?? ""
    startOffset = json["start_offset_seconds"]?.doubleValue ?? 0
    duration = json["duration_seconds"]?.doubleValue ?? 0
    httpStatus = json["http_status"]?.intValue
    message = json["message"]?.stringValue
    bytes = json["bytes"]?.intValue
    resumedFrom = json["resumed_from"]?.intValue
    wait = json["wait_seconds"]?.doubleValue
    if case .bool(let fromServer) = json["wait_from_retry_after"] { waitFromRetryAfter = fromServer } else { waitFromRetryAfter = false }
  }
}

extension JSONValue {
  /// A JSON number as a `Double` (durations in seconds).
  var doubleValue: Double? {
    switch self {
    case .integer(let i): Double(i)
    case .number(let text): Double(text)
    default: nil
    }
  }
}

/// RFC 3339 times of the reports and the journal (`2026-11-30T12:03:11.204Z`).
enum Timestamp {
  /// Seconds since 1970, or nil for text that is not such a time.
  static func seconds(_ text: String) -> Double? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.date(from: text)?.timeIntervalSince1970
  }
}
