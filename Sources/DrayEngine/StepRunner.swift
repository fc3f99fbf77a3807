internal import DrayModel
internal import DrayPlatform
internal import DrayStore
internal import DrayTransport
internal import Foundation

/// Runs one step: dispatches on its kind, times it, records its checkpoint, and turns any
/// error into the step's report.
struct StepRunner {
  let context: RunContext
  let step: Step
  /// Run every member of a group, ignoring checkpoints (`--fresh`, `--from`, `--only`).
  let forceRun: Bool

  var manifest: Manifest { context.manifest }
  var console: Console { context.console }

  func run() -> StepReport {
    var report = StepReport(id: step.id, kind: step.kindName, status: .succeeded)
    report.startedAt = Date()
    let start = ContinuousClock.now
    console.info("step \(step.id): \(step.kindName) \(summary)")
    do {
      try execute(&report)
      report.status = .succeeded
    } catch {
      report.status = context.cancellation.isCancelled ? .interrupted : .failed
      report.errorCode = context.cancellation.isCancelled ? "interrupted" : StepRunner.code(of: error)
      report.errorMessage = context.cancellation.isCancelled ? "interrupted by signal \(context.cancellation.signal ?? 0)" : "\(error)"
      if report.status == .failed {
        try? recordCheckpoint(report, status: .failed)
      }
    }
    report.duration = (ContinuousClock.now - start).seconds
    let took = String(format: "%.2fs", report.duration)
    switch report.status {
    case .succeeded:
      console.info("step \(step.id): ok in \(took)\(resultSummary(report))")
    case .interrupted:
      console.warn("step \(step.id): interrupted after \(took)")
    default:
      console.error("step \(step.id) (\(step.kindName)) failed after \(took): \(report.errorMessage ?? "")")
    }
    return report
  }

  /// A few words on what the step works on, for the log.
  private var summary: String {
    switch step.kind {
    case .tableStream(let t): t.resource + (t.params.isEmptyObject ? "" : " \(t.params.json)")
    case .table(let t): t.resource
    case .request(let r): r.resource
    case .files(let f): "\(f.action.rawValue) \(f.connection):\(f.path)"
    case .parallel(let p): "\(p.steps.count) steps, at most \(p.max) at once"
    case .http(let h): "\(h.method.rawValue) \(h.url)"
    default: ""
    }
  }

  private func resultSummary(_ report: StepReport) -> String {
    var parts: [String] = []
    if !report.rows.isEmpty { parts.append("\(report.totalRows) rows") }
    if report.bytes > 0 { parts.append("\(report.bytes) bytes") }
    if report.attempts.count > 1 { parts.append("\(report.attempts.count) attempts") }
    return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
  }

  private func execute(_ report: inout StepReport) throws {
    switch step.kind {
    case .schemes(let s): try runSchemes(s, &report)
    case .tableStream(let t): try runTableStream(t, &report)
    case .sql(let s): try runSQL(s, &report)
    case .parallel(let p): try runParallel(p, &report)
    case .http(let h): try runHTTP(h, &report)
    default:
      throw StepError.unsupported("step kind '\(step.kindName)' cannot run yet in this version of dray")
    }
  }

  // MARK: Shared helpers

  /// A platform client for this step's thread.
  func platformClient() throws -> PlatformClient {
    guard let session = context.session else { throw StepError.unsupported("step '\(step.id)' needs 'platform' and 'auth'") }
    return PlatformClient(session: session, cancellation: context.cancellation)
  }

  /// The target database, opened for this step's thread.
  func openStore() throws -> Store {
    guard let database = manifest.database else { throw StepError.unsupported("step '\(step.id)' needs a 'database'") }
    let store = try Store(path: manifest.resolve(database.path))
    return store
  }

  /// The answer file of a download step: `<download.path>/<job>/<step>-<fingerprint>.answer`,
  /// so that a changed step never resumes another definition's part.
  func downloadPath(_ suffix: String = "answer") -> String {
    let fingerprint = step.fingerprint(in: manifest).prefix(8)
    return manifest.resolve(manifest.download.path) + "/\(manifest.job)/\(step.id)-\(fingerprint).\(suffix)"
  }

  func checkpoint(_ report: StepReport, status: RunStatus) -> Journal.Checkpoint {
    let outputs = JSONValue.object([
      ("tables", .array(report.tables.map { .string($0) })), ("files", .array(report.outputs.map { .string($0) })),
    ]).json
    return Journal.Checkpoint(
      job: manifest.job, stepID: step.id, runID: context.runID, lineage: context.lineage,
      fingerprint: step.fingerprint(in: manifest), status: status.rawValue, attempts: report.attempts.count,
      rows: report.totalRows, bytes: report.bytes, outputs: outputs, finishedAt: RunReport.rfc3339(Date()))
  }

  /// Records the step's checkpoint through the journal's own connection (for steps that do
  /// not write the target database).
  func recordCheckpoint(_ report: StepReport, status: RunStatus) throws {
    try context.journalWrites.withLock { _ in try context.journal.record(checkpoint(report, status: status)) }
  }

  static func code(of error: any Error) -> String {
    switch error {
    case let e as TransportError: e.code
    case let e as PlatformError: e.code
    case is LoadError: "load_error"
    case is SQLiteError: "sqlite_error"
    case is StoreError: "store_error"
    case let e as StepError: e.code
    case let e as HTTPStepError: e.code
    default: "error"
    }
  }
}

/// Step failures that are not transport, platform or store errors.
enum StepError: Error, CustomStringConvertible {
  case unsupported(String)
  case resourceNotFound(resource: String, available: [String])
  case tableNotLoaded(resource: String, table: String, physical: String)
  case expectation(String)

  var code: String {
    switch self {
    case .unsupported: "unsupported"
    case .resourceNotFound: "resource_not_found"
    case .tableNotLoaded: "table_not_loaded"
    case .expectation: "expectation_failed"
    }
  }

  var description: String {
    switch self {
    case .unsupported(let m): m
    case .resourceNotFound(let resource, let available):
      "resource '\(resource)' is not in the server's schema for this user; it offers: \(available.joined(separator: ", "))"
    case .tableNotLoaded(let resource, let table, let physical):
      "{{ table \"\(resource)\" \"\(table)\" }}: table \(physical) does not exist; run the step that loads \(resource) first"
    case .expectation(let m): m
    }
  }
}
