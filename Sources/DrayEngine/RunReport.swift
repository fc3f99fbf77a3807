public import DrayModel
internal import DrayTarget
public import DrayTransport
public import Foundation

/// How a run or a step ended.
public enum RunStatus: String, Sendable, Equatable, CaseIterable {
  case succeeded, failed, skipped, interrupted
  /// A step the run never reached.
  case notRun = "not_run"

  /// The status a run that ended so has in the journal (a run ends succeeded, failed or
  /// interrupted; the others count as failed).
  var journalStatus: RunRecord.Status {
    switch self {
    case .succeeded: .succeeded
    case .interrupted: .interrupted
    case .failed, .skipped, .notRun: .failed
    }
  }
}

/// A step's checkpoint in the run journal, as the report shows it before and after the step.
public struct CheckpointState: Sendable, Equatable {
  /// The run that recorded it.
  public var runID: String
  /// `succeeded` or `failed`.
  public var status: String
  /// SHA-256 of the step's resolved definition when it was recorded.
  public var fingerprint: String
  /// RFC 3339.
  public var finishedAt: String

  public init(runID: String, status: String, fingerprint: String, finishedAt: String) {
    self.runID = runID
    self.status = status
    self.fingerprint = fingerprint
    self.finishedAt = finishedAt
  }

  init(_ checkpoint: CheckpointRecord) {
    self.init(
      runID: checkpoint.runID, status: checkpoint.status.rawValue, fingerprint: checkpoint.fingerprint, finishedAt: checkpoint.finishedAt)
  }
}

/// What one step did, for the run report.
public struct StepReport: Sendable {
  public var id: String
  public var kind: String
  public var status: RunStatus
  public var startedAt: Date?
  /// Seconds.
  public var duration: Double = 0
  /// Seconds its requests waited for their host's request budget (`rate_limit`).
  public var budgetWait: Double = 0
  public var attempts: [Attempt] = []
  /// Body bytes received (and sent, for uploads), decoded: what the step's files hold.
  public var bytes: Int64 = 0
  /// The same bodies as they crossed the network, before content decoding (gzip); equal to
  /// `bytes` when nothing came compressed.
  public var wireBytes: Int64 = 0
  /// The server answered `304 Not Modified` to the preconditions of the answer the step last
  /// published: its table was kept as it is (an `http` step, docs/http.md).
  public var unchanged = false
  /// Adds what `download` received to `bytes` and `wireBytes`.
  mutating func count(_ download: Download) {
    bytes += download.bytesReceived
    wireBytes += download.wireBytesReceived
  }

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
  /// Why a failed step failed, by class (`FailureCause.of`; a group: its failed members').
  public var failure: FailureCause?
  /// Why a step was skipped.
  public var skipReason: String?
  /// The members of a `parallel` group, in file order; of a partitioned step
  /// (`partitioned`), one per partition, in the order of its partitions.
  public var members: [StepReport] = []
  /// The step runs over partitions (`partitions:`): `members` are its partitions, written
  /// as the step's `partitions` in the JSON report (docs/report.md).
  public var partitioned = false
  /// The placeholder values of a partition's entry (nil for any other step).
  public var partition: Partition?
  /// The pages an `http` step committed (those of a run it resumed included); nil for other
  /// steps.
  public var pages: Int?
  /// The records an `http` step loaded from its pages (those of a run it resumed
  /// included): a partition's own rows, where `rows` counts the table's.
  public var records: Int?
  /// What an `http` load's contract did with its records (`load.contract`); nil for other
  /// steps.
  public var contract: ContractReport?
  /// The rows an `http` load with `load.delete_missing` deleted because its full pull did not
  /// see their key (0 when it deleted none, or a partial pull deleted nothing); nil for other
  /// steps.
  public var rowsDeleted: Int?
  /// The step's checkpoint when the run started (nil: none recorded).
  public var checkpointBefore: CheckpointState?
  /// The step's checkpoint when the run ended (nil: none recorded).
  public var checkpointAfter: CheckpointState?

  public init(id: String, kind: String, status: RunStatus) {
    self.id = id
    self.kind = kind
    self.status = status
  }

  /// All rows written, summed over tables.
  public var totalRows: Int { rows.values.reduce(0, +) }

  /// Attempts that were tried again (those followed by a wait and another attempt), in this
  /// step and its members.
  public var retries: Int {
    attempts.filter { $0.wait != nil }.count + members.reduce(0) { $0 + $1.retries }
  }

  /// Attempts of the step's own calls (not the sign-in or scheme fetch made on their way),
  /// and how many calls they were.
  public var ownAttempts: (attempts: Int, calls: Int) {
    let own = attempts.filter { $0.call == nil }
    return (own.count, own.filter { $0.number == 1 }.count)
  }

  /// How many answers came with each HTTP status, over every attempt of the step.
  public var httpStatuses: [Int: Int] {
    attempts.reduce(into: [:]) { counts, attempt in
      if let status = attempt.status { counts[status, default: 0] += 1 }
    }
  }
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
  /// Why a failed run failed (`addFailure`): unavailable (exit 69) only when every failure
  /// was; nil unless the status is `failed`.
  public var failure: FailureCause?
  /// Another runner held the job's lock, and `dray run --when-locked succeed` asked for this
  /// start to end as a success: nothing ran, no report was written.
  public var lockedOut = false
  public var steps: [StepReport]
  /// Set when the run failed before its first step (lock, journal, database), when the
  /// journal could not record its end, or when a report file could not be written (set
  /// after the reports were written).
  public var errorMessage: String?
  /// The absolute paths of the report files that could not be written (not in the JSON
  /// report itself, which is written first): the summary names only the files written.
  public var unwrittenReports: [String] = []

  /// The report with every secret of `redactor` masked in its free text: error messages,
  /// attempt messages, notes, skip reasons and SQL. The names dray writes itself (job, run
  /// id, step ids and kinds, tables, file paths, the host) are left as they are, in their
  /// own fields and inside that text. Every report
  /// format is written from this one value, so each masks the same text the same way before
  /// its own encoding (JSON, XML) escapes it, and so is the summary before it makes each
  /// line printable.
  public func redacted(by redactor: Redactor) -> RunReport {
    // The names this report holds are kept in its free text too: physical tables and file
    // paths are known only once the steps ran (a scheme's tables come from the server).
    func names(_ step: StepReport) -> [String] {
      [step.id] + step.tables + step.outputs + step.rows.keys + step.members.flatMap(names)
    }
    var redactor = redactor
    redactor.keep([job, runID] + steps.flatMap(names))
    func redacted(_ step: StepReport) -> StepReport {
      var step = step
      step.errorMessage = step.errorMessage.map(redactor.redact)
      step.skipReason = step.skipReason.map(redactor.redact)
      step.notes = step.notes.map(redactor.redact)
      step.statements = step.statements.map { (redactor.redact($0.sql), $0.changes) }
      step.attempts = step.attempts.map { attempt in
        var attempt = attempt
        attempt.message = attempt.message.map(redactor.redact)
        return attempt
      }
      step.partition = step.partition.map { Partition($0.values.map { ($0.name, redactor.redact($0.value)) }) }
      step.members = step.members.map(redacted)
      return step
    }
    var report = self
    report.errorMessage = errorMessage.map(redactor.redact)
    report.steps = steps.map(redacted)
    return report
  }

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
    if s.budgetWait > 0 { o.append(("budget_wait_seconds", .number(RunReport.seconds(s.budgetWait)))) }
    o.append(("attempts", .array(s.attempts.map(RunReport.attemptJSON))))
    o.append(("bytes", .integer(s.bytes)))
    o.append(("wire_bytes", .integer(s.wireBytes)))
    if s.unchanged { o.append(("unchanged", .bool(true))) }
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
    o.append(
      ("http_statuses", .object(s.httpStatuses.sorted { $0.key < $1.key }.map { (String($0.key), .integer(Int64($0.value))) })))
    o.append(
      ("checkpoint", .object([("before", checkpointJSON(s.checkpointBefore)), ("after", checkpointJSON(s.checkpointAfter))])))
    if let partition = s.partition {
      o.insert(("partition", .object(partition.values.map { ($0.name, .string($0.value)) })), at: 1)
    }
    if let pages = s.pages { o.append(("pages", .integer(Int64(pages)))) }
    if let deleted = s.rowsDeleted { o.append(("rows_deleted", .integer(Int64(deleted)))) }
    if let c = s.contract {
      o.append(
        (
          "contract",
          .object(
            [
              ("loaded", .integer(Int64(c.loaded))), ("set_aside", .integer(Int64(c.setAside))), ("trimmed", .integer(Int64(c.trimmed))),
              ("by_reason", .object(c.byKind.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) })),
              ("quarantine", .string(c.quarantine)),
            ] + (c.changes.isEmpty ? [] : [("changes", .array(c.changes.map { .string($0) }))]))
        ))
    }
    if s.partitioned {
      o.append(("partitions", .array(s.members.map(stepJSON))))
    } else if !s.members.isEmpty {
      o.append(("steps", .array(s.members.map(stepJSON))))
    }
    return .object(o)
  }

  static func checkpointJSON(_ c: CheckpointState?) -> JSONValue {
    guard let c else { return .null }
    return .object([
      ("run_id", .string(c.runID)), ("status", .string(c.status)), ("fingerprint", .string(c.fingerprint)),
      ("finished_at", .string(c.finishedAt)),
    ])
  }

  /// Rows, bytes, attempts and retries over every step (a group counts its members once).
  public var totals: (rows: Int, bytes: Int64, wireBytes: Int64, attempts: Int, retries: Int) {
    var totals = (rows: 0, bytes: Int64(0), wireBytes: Int64(0), attempts: 0, retries: 0)
    for step in steps {
      totals.rows += step.totalRows
      totals.bytes += step.bytes
      totals.wireBytes += step.wireBytes
      totals.attempts += step.attempts.count + step.members.reduce(0) { $0 + $1.attempts.count }
      totals.retries += step.retries
    }
    return totals
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
    if let failure {
      top += [("failure_class", .string(failure.failureClass.rawValue)), ("failure_reason", .string(failure.reason))]
    }
    if let errorMessage { top.append(("error", .string(errorMessage))) }
    let t = totals
    top.append(
      (
        "totals",
        .object([
          ("rows", .integer(Int64(t.rows))), ("bytes", .integer(t.bytes)), ("wire_bytes", .integer(t.wireBytes)),
          ("attempts", .integer(Int64(t.attempts))),
          ("retries", .integer(Int64(t.retries))),
        ])
      ))
    return top
  }

  static func attemptJSON(_ a: Attempt) -> JSONValue {
    var o: [(key: String, value: JSONValue)] = [("number", .integer(Int64(a.number)))]
    if let call = a.call { o.append(("call", .string(call))) }
    o += [
      ("outcome", .string(a.outcome.code)),
      ("start_offset_seconds", .number(seconds(a.startOffset))), ("duration_seconds", .number(seconds(a.duration))),
    ]
    if let status = a.status { o.append(("http_status", .integer(Int64(status)))) }
    if let message = a.message { o.append(("message", .string(message))) }
    if let bytes = a.bytes { o.append(("bytes", .integer(bytes))) }
    if let wire = a.wireBytes { o.append(("wire_bytes", .integer(wire))) }
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
    Bookkeeping.rfc3339(date, milliseconds: true)
  }
}

/// What an `http` load's contract did with the records of its pages (`load.contract`,
/// docs/http.md "Contract"), those of a run it resumed included.
public struct ContractReport: Sendable, Equatable {
  /// The quarantine table's name (`load.quarantine`).
  public var quarantine: String
  /// Records loaded (trimmed ones included).
  public var loaded: Int
  /// Records set aside in the quarantine, not loaded.
  public var setAside: Int
  /// Records loaded without some of their fields, noted in the quarantine.
  public var trimmed: Int
  /// Records set aside or trimmed, by the kind of their first reason: `new_column`, `type`,
  /// `primary_key`.
  public var byKind: [String: Int]
  /// The changes of a `table_stream` step's scheme since its tables were made, one line each
  /// with what the contract did (`scheme 'ORDERS' table 'output_table': new column 'priority'
  /// (DOUBLE) → evolve`; docs/steps.md "Scheme drift"); empty for `http` loads.
  public var changes: [String]

  public init(
    quarantine: String, loaded: Int, setAside: Int, trimmed: Int, byKind: [String: Int], changes: [String] = []
  ) {
    self.quarantine = quarantine
    self.loaded = loaded
    self.setAside = setAside
    self.trimmed = trimmed
    self.byKind = byKind
    self.changes = changes
  }
}
