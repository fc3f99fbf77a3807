internal import DrayModel
internal import DrayPlatform
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Synchronization

/// Runs one step: dispatches on its kind, times it, records its checkpoint, and turns any
/// error into the step's report.
struct StepRunner {
  let context: RunContext
  let step: Step
  /// The step is a member of a `parallel` group, or a partition of a partitioned step.
  var inGroup = false
  /// The partition the step runs for, when it is a member of a partitioned step
  /// (`runPartitioned`): its loads neither refuse to empty the table nor delete its rows
  /// after `--fresh` (the partitioned step decides both for the whole table), it sends no
  /// conditional request, and its checkpoint's rows are the partition's records.
  var partition: Partition?
  /// The partitioned step's id, for a member (`partition`): its quarantined records name it
  /// as their step, and the member's id as their partition (docs/http.md, "Contract").
  var partitionedStepID: String?
  /// This runner's claim on `partition`, in a run several runners share (`runClaimed`):
  /// every commit of the step's store checks it.
  var claim: PartitionClaim?
  /// The name of the step's local state (its staging tables, page ledger and page files):
  /// the step's id, or for a claimed partition (`claim`) its id and the claim's tag
  /// (`Joining.tag`: its runner and generation), so that runners sharing a job folder, and
  /// two claims of one runner on a partition, never stage into, resume or publish each
  /// other's pages (docs/partitions.md, "Many runners").
  var stagingName: String { claim.map { "\(step.id)~\(Joining.tag($0))" } ?? step.id }
  /// How long the step's requests waited for their host's budget (`rate_limit`).
  let budgetWaits = BudgetWaits()

  var manifest: Manifest { context.manifest }
  var console: Console { context.console }

  func run() -> StepReport {
    Tracing.withStep(step.id) { runTraced() }
  }

  private func runTraced() -> StepReport {
    var report = StepReport(id: step.id, kind: step.kindName, status: .succeeded)
    report.startedAt = Date()
    report.checkpointBefore = currentCheckpoint()
    let start = ContinuousClock.now
    console.info(summary.isEmpty ? step.kindName : "\(step.kindName) \(summary)", step: step.id)
    // On PostgreSQL a lost connection runs the step again from its last commit, under the
    // step's retry policy; those attempts join the step's report.
    let initial = report
    let reconnects = Mutex<[Attempt]>([])
    let connections = ConnectionRetry(
      database: context.database, policy: step.retry, cancellation: context.cancellation, budget: context.retryBudget,
      record: { [self] attempt in
        logAttempt(attempt)
        reconnects.withLock { $0.append(attempt) }
      })
    do {
      try connections.run(reconnect: context.reconnectJournal) { number in
        if number > 1 {
          report = initial
          // Run again from its last commit, the step must not send a call it sent already.
          if sentCall(failedWith: nil) {
            throw StepError.Unresolved(
              reason: "the connection to the database was lost after its call was sent without a transaction id, "
                + "and whether the server applied it is unknown, so it was not sent again")
          }
        }
        try execute(&report)
      }
      report.attempts += reconnects.withLock { $0 }
      CrashPoint.reach("committed:\(step.id)")
      report.status = .succeeded
    } catch {
      report.attempts += reconnects.withLock { $0 }
      // A step that failed because the run lost its lock says so first: another runner may
      // be running the job now.
      let lost =
        context.cancellation.isCancelled || context.database.failure(error)?.isLockLost == true
        ? nil : context.journal.withLock { $0.lostLock() }
      report.status = context.cancellation.isCancelled ? .interrupted : .failed
      report.errorCode = context.cancellation.isCancelled ? "interrupted" : StepRunner.code(of: lost ?? error, in: context.database)
      let message =
        context.cancellation.isCancelled
        ? "interrupted by \(Runner.signalName(context.cancellation))" : lost.map { "\($0); the step's own error: \(error)" } ?? "\(error)"
      report.errorMessage = message
      if report.status == .failed { report.failure = failure(of: lost ?? error, report) }
      if sentCall(failedWith: error) {
        // Its `sent` checkpoint stays, so that no run sends it again unless asked.
        report.errorMessage =
          message + "; the next run will not send it again: check on the server whether it was applied, then run "
          + "dray run \(manifest.path) --resend \(step.id) to send it again"
      } else if report.status == .failed && !(error is StepError.Unresolved) {
        try? recordCheckpoint(report, status: .failed)
      }
    }
    report.duration = (ContinuousClock.now - start).seconds
    report.budgetWait = budgetWaits.total.seconds
    report.checkpointAfter = currentCheckpoint()
    console.endProgress(step: step.id)
    let took = String(format: "%.2fs", report.duration)
    switch report.status {
    case .succeeded:
      console.info("ok in \(took)\(resultSummary(report))", step: step.id)
      if report.members.isEmpty {
        for note in report.notes { console.info(note, step: step.id) }
        for output in report.outputs { console.info("wrote \(output)", step: step.id) }
      }
    case .interrupted:
      console.warn("interrupted after \(took)", step: step.id)
    case .failed where claim != nil && report.errorCode == "claim_lost":
      // A claimed partition another runner took over: dropped by `runClaim`, not a failure.
      console.warn("\(step.kindName) stopped after \(took): \(report.errorMessage ?? "")", step: step.id)
    default:
      console.error("\(step.kindName) failed after \(took): \(report.errorMessage ?? "")", step: step.id)
    }
    for (sql, changes) in report.statements {
      console.debug(
        "\(HumanUnits.counted(changes, "row")) changed by: \(sql.trimmingCharacters(in: .whitespacesAndNewlines))", step: step.id)
    }
    console.debug("checkpoint before: \(describe(report.checkpointBefore)); after: \(describe(report.checkpointAfter))", step: step.id)
    return report
  }

  /// A few words on what the step works on, for the log.
  private var summary: String {
    switch step.kind {
    case .tableStream(let t): t.resource + (t.params.isEmptyObject ? "" : " \(t.params.json)")
    case .table(let t): t.resource
    case .request(let r): r.resource
    case .files(let f): "\(f.action.rawValue) \(f.connection):\(f.path)"
    case .parallel(let p): "\(HumanUnits.counted(p.steps.count, "step")), at most \(p.max) at once"
    case .schemes(let s): s.resources?.joined(separator: ", ") ?? ""
    case .http(let h) where step.partitions != nil:
      // The URL as written, its placeholders shown as braces rather than percent-encoded.
      "\(h.method.rawValue) \(h.url.replacingOccurrences(of: "%7B", with: "{").replacingOccurrences(of: "%7D", with: "}")), for each partition"
    case .http(let h): "\(h.method.rawValue) \(h.url)"
    case .sql, .query: ""
    }
  }

  private func resultSummary(_ report: StepReport) -> String {
    var parts: [String] = report.unchanged ? ["unchanged"] : []
    if !report.rows.isEmpty { parts.append(HumanUnits.counted(report.totalRows, "row")) }
    if report.bytes > 0 { parts.append(HumanUnits.bytes(report.bytes)) }
    if report.wireBytes != report.bytes { parts.append("\(HumanUnits.bytes(report.wireBytes)) on the wire") }
    if report.retries > 0 { parts.append("\(report.retries) \(report.retries == 1 ? "retry" : "retries")") }
    return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
  }

  /// Whether this run sent the step's call, which may change data and carries no transaction
  /// id (its checkpoint is `sent` in this run), and `error` (if any) leaves it possibly
  /// applied: every error but a `WriteFailure` whose last attempt changed nothing there.
  private func sentCall(failedWith error: (any Error)?) -> Bool {
    let found = context.journal.withLock { try? $0.checkpoint(job: manifest.job, stepID: step.id) }
    guard let found, found.status == .sent, found.runID == context.runID else { return false }
    return (error as? WriteFailure)?.outcome.mayBeApplied != false
  }

  /// The step's checkpoint in the journal now, or nil.
  private func currentCheckpoint() -> CheckpointState? {
    let found = context.journal.withLock { try? $0.checkpoint(job: manifest.job, stepID: step.id) }
    return found.map(CheckpointState.init)
  }

  private func describe(_ checkpoint: CheckpointState?) -> String {
    guard let c = checkpoint else { return "none" }
    return "\(c.status) in run \(c.runID), fingerprint \(c.fingerprint.prefix(12))"
  }

  /// Logs an attempt as it ends: a retry at the normal level, every attempt with
  /// `--verbose`. Steps call it from their `record` closures.
  func logAttempt(_ attempt: Attempt) {
    let call = attempt.call.map { "\($0) " } ?? ""
    let took = String(format: "%.2fs", attempt.duration)
    if attempt.outcome == .ok {
      console.debug("\(call)attempt \(attempt.number): ok" + (attempt.status.map { ", HTTP \($0)" } ?? "") + " in \(took)", step: step.id)
      return
    }
    let what = "\(call)attempt \(attempt.number) failed after \(took): \(attempt.message ?? attempt.outcome.code)"
    if let wait = attempt.wait {
      let source = attempt.waitFromRetryAfter ? " (Retry-After)" : ""
      console.info(what + "; trying again in \(String(format: "%.2fs", wait))\(source)", step: step.id)
    } else {
      console.debug(what, step: step.id)
    }
  }

  /// `record` with each attempt marked as made for `call` (a table step's scheme fetch), so
  /// that the report and the summary tell it from the step's own call.
  func recording(_ call: String, _ record: @escaping (Attempt) -> Void) -> (Attempt) -> Void {
    { attempt in
      var marked = attempt
      marked.call = marked.call ?? call
      record(marked)
    }
  }

  /// Shows rows as a load inserts them, on a terminal; nil when no progress is shown.
  func showLoadProgress(_ store: any TargetStore) -> (any InsertedRowsObservation)? {
    guard console.showsProgress else { return nil }
    let (console, id, kind) = (console, step.id, step.kindName)
    return store.observeInsertedRows(every: 500) { console.progress(step: id, kind: kind, rows: $0) }
  }

  private func execute(_ report: inout StepReport) throws {
    if let reason = context.unresolvedWrites[step.id] { throw StepError.Unresolved(reason: "not run: " + reason) }
    if let partitions = step.partitions { return try runPartitioned(partitions, &report) }
    switch step.kind {
    case .schemes(let s): try runSchemes(s, &report)
    case .tableStream(let t): try runTableStream(t, &report)
    case .table(let t): try runTable(t, &report)
    case .request(let r): try runRequest(r, &report)
    case .files(let f): try runFiles(f, &report)
    case .sql(let s): try runSQL(s, &report)
    case .query(let q): try runQuery(q, &report)
    case .parallel(let p): try runParallel(p, &report)
    case .http(let h): try runHTTP(h, &report)
    }
  }

  // MARK: Shared helpers

  /// A platform client for this step's thread.
  func platformClient() throws -> PlatformClient {
    guard let session = context.session else { throw StepError.settingMissing("step '\(step.id)' needs 'platform' and 'auth'") }
    let client = PlatformClient(session: session, cancellation: context.cancellation)
    client.timeouts = step.timeouts
    client.retryBudget = context.retryBudget
    if console.showsProgress {
      let (console, id, kind) = (console, step.id, step.kindName)
      client.http.progress = { console.progress(step: id, kind: kind, bytes: $0, total: $1) }
    }
    return client
  }

  /// The job folder, where the step's files are read and written (`JobFolder`), with the
  /// files dray keeps for the job out of reach.
  func jobFolder() throws -> JobFolder {
    try JobFolder(manifest.directory, keeping: context.kept)
  }

  /// The target database, opened for this step's thread (`JobDatabase.openStore`), its
  /// commits fenced by the run lock the journal took when the lock lives in the database.
  /// - Throws: `StepError.settingMissing` for a job without a database; the database's errors.
  func openStore() throws -> any TargetStore {
    guard manifest.database != nil else { throw StepError.settingMissing("step '\(step.id)' needs a 'database'") }
    let lock = context.journal.withLock { $0.fence }
    let fence: (any RunFence)? = claim.map { claim in RunFences((lock.map { [$0] } ?? []) + [claim]) } ?? lock
    return try context.database.openStore(fence: fence, cancellation: context.cancellation)
  }

  /// Where an `http` step stages its records and page ledger (`RecordStaging`, `PageLedger`;
  /// `JobDatabase.openStaging`): with `records`, beside or in the job's database, from which
  /// the step publishes its records when the last page is in; without (a step that only
  /// paginates), beside the run journal.
  /// - Throws: `StepError.settingMissing` for records of a job without a database.
  func openStagingStore(records: Bool) throws -> any RecordStaging {
    if records, manifest.database == nil { throw StepError.settingMissing("step '\(step.id)' needs a 'database'") }
    return try context.database.openStaging(records: records, cancellation: context.cancellation)
  }

  /// What masks a URL before dray stores it (docs/report.md, "Secrets"): the manifest's
  /// secrets and those learnt since (tokens), as the console masks them. Every URL that goes
  /// to disk or to a database (the page ledger, a quarantine's `page_url`, a download's
  /// sidecar) is `storedURL`'s; the request itself keeps the real one, in memory only.
  var urlRedactor: Redactor {
    var secrets = manifest.redactor
    secrets.add(contentsOf: console.redactor.current)
    return secrets
  }

  /// `url` with its password and every secret (query values, path parts) masked
  /// (`urlRedactor`): `http://h/recs/***?token=***`.
  func storedURL(_ url: String) -> String { urlRedactor.redact(Redactor.maskingURLPasswords(url)) }

  /// The answer file of a download step: `<download.path>/<job>/<step>-<fingerprint>.answer`,
  /// so that a changed step never resumes another definition's part.
  func downloadPath(_ suffix: String = "answer") -> String {
    let fingerprint = step.fingerprint(in: manifest).prefix(8)
    return manifest.resolve(manifest.download.path) + "/\(manifest.job)/\(step.id)-\(fingerprint).\(suffix)"
  }

  func checkpoint(_ report: StepReport, status: CheckpointRecord.Status) -> CheckpointRecord {
    let outputs = JSONValue.object([
      ("tables", .array(report.tables.map { .string($0) })), ("files", .array(report.outputs.map { .string($0) })),
    ]).json
    return CheckpointRecord(
      job: manifest.job, stepID: step.id, runID: context.runID, lineage: context.lineage,
      fingerprint: step.fingerprint(in: manifest), status: status, attempts: report.ownAttempts.attempts,
      rows: report.totalRows, bytes: report.bytes, outputs: outputs, finishedAt: RunReport.rfc3339(Date()))
  }

  /// Whether the step's call of `resource` may change data on the server (docs/steps.md,
  /// "Reads and writes"): what the manifest says (`writes`), else false only for a cached
  /// resource (its scheme has `lifetime`), whose answers the platform serves from its cache
  /// by version (platform-api.md §2, §3). What dray cannot tell (no scheme: the resource
  /// is not in the user's schema) is a write.
  func mayChangeData(writes: Bool?, scheme: ResourceScheme?) -> Bool {
    writes ?? (scheme?.lifetime == nil)
  }

  /// The scheme of `resource` from the server, or nil when the user's schema does not list it.
  func fetchScheme(_ client: PlatformClient, _ resource: String, record: @escaping (Attempt) -> Void) throws -> ResourceScheme? {
    try client.schemes(policy: step.retry, record: recording("schema", record)).first { $0.name == resource }
  }

  /// Records the step's checkpoint through the journal's own connection (for steps that do
  /// not write the target database).
  func recordCheckpoint(_ report: StepReport, status: CheckpointRecord.Status) throws {
    // A claimed partition's failure is recorded with its claim (`_dray_claims`): a runner
    // whose claim ran out must not overwrite the checkpoint of the runner that took it over.
    if claim != nil && status == .failed { return }
    let checkpoint = checkpoint(report, status: status)
    if claim != nil && manifest.database != nil {
      // A claimed partition's checkpoint (an `http` step without `load`) commits where its
      // claim is checked, as its rows would: a runner whose claim was lost records nothing.
      let store = try openStore()
      try context.databaseWrites.withLock { _ in try store.write { try $0.record(checkpoint) } }
      return
    }
    try context.journal.withLock { try $0.record(checkpoint) }
  }

  /// Why the step failed with `error`, by class (`FailureCause.of`): a group, or a step's
  /// partitions, by its failed members' causes.
  private func failure(of error: any Error, _ report: StepReport) -> FailureCause {
    let byMembers =
      switch error {
      case StepError.groupFailed, PartitionError.failed: true
      default: false
      }
    if byMembers {
      let members = report.members.filter { $0.status == .failed }.compactMap { member in member.failure?.at(member.id) }
      if let cause = FailureCause.combined(members) { return cause }
    }
    let statusRule: ((Int) -> HTTPStep.StatusOutcome)? = if case .http(let h) = step.kind { h.outcome(for:) } else { nil }
    return FailureCause.of(error, in: context.database, statusRule: statusRule)
  }

  /// The step report's `error_code` of `error`: the database's own code when `database`
  /// names one (`DatabaseFailure.code`), else the class of the error.
  static func code(of error: any Error, in database: any JobDatabase) -> String {
    if let code = database.failure(error)?.code { return code }
    return switch error {
    case let e as TransportError: e.code
    case let e as PlatformError: e.code
    case let e as WriteFailure: e.code
    case is StepError.Unresolved: "outcome_unknown"
    case is LoadError: "load_error"
    case is StoreError: "store_error"
    case let e as StepError: e.code
    case let e as LocalFileError: e.code
    case let e as FilesError: e.code
    case let e as HTTPStepError: e.code
    case let e as OAuth2Error: e.code
    case let e as LoginError: e.code
    case let e as PartitionError: e.code
    default: "error"
    }
  }
}

/// Step failures that are not transport, platform or store errors.
enum StepError: Error, CustomStringConvertible {
  /// A step not run because an earlier run sent its call, which may change data, and whether
  /// the server applied it is unknown (`ResumePlan.unresolvedWrites`).
  struct Unresolved: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
  }

  /// Members of a `parallel` group failed (their own errors are in their reports).
  case groupFailed(members: [String])
  /// A signal stopped a `parallel` group before all its members ran.
  case interrupted
  /// A resource's answer is not what the step reads (`expected`: a table answer, a JSON
  /// document; `JSONAnswerRule`); it was discarded. `sentAs` is what the server said it is
  /// when its Content-Type does not say JSON (`AnswerHead.unexpectedKind`).
  case unreadableAnswer(resource: String, expected: String, reason: String, sentAs: String?)
  /// A `table` step's answer does not fit a one-table file (`csv`, `ndjson`): the scheme or
  /// the answer holds another table, or a row another number of values than the scheme's
  /// columns.
  case notOneTable(String)
  /// A `query` step's SQL is not exactly one statement.
  case notOneStatement(String)
  /// The manifest lacks a block the step needs (validation refuses such manifests first).
  case settingMissing(String)
  case resourceNotFound(resource: String, available: [String])
  case tableNotLoaded(resource: String, table: String, physical: String)
  /// A `{{ table }}` naming a table the resource's stored scheme does not list.
  case unknownTable(resource: String, table: String, tables: [String])
  case expectation(String)
  /// An `sql` step's statement that would begin, commit or roll back a transaction.
  case transactionControl(statement: String)
  /// An `sql` or `query` step's statement that would create, alter, drop or write one of
  /// dray's own tables (`_dray_...`), itself or through the body of `trigger`.
  case ownTable(String, statement: String, trigger: String? = nil)
  /// A statement that would let the database's catalog be edited directly.
  case catalogEdit(statement: String)
  /// A statement that would turn off or change the trigger of dray's table guard.
  case tableGuard(statement: String)

  /// The step error for SQL the store refused to run.
  init(_ refusal: UserSQLError) {
    switch refusal {
    case .transactionControl(let statement): self = .transactionControl(statement: statement)
    case .ownTable(let table, let statement, let trigger): self = .ownTable(table, statement: statement, trigger: trigger)
    case .catalogEdit(let statement): self = .catalogEdit(statement: statement)
    case .tableGuard(let statement): self = .tableGuard(statement: statement)
    case .notOneStatement(let rest?):
      self = .notOneStatement("a query runs one statement; found another after the first: \(rest); use a sql step for it")
    case .notOneStatement(nil): self = .notOneStatement("the query holds no SQL statement")
    }
  }

  /// The stable code in the report's `error.code` (docs/report.md, "Error codes").
  var code: String {
    switch self {
    case .groupFailed: "group_failed"
    case .interrupted: "interrupted"
    case .unreadableAnswer: "answer_unreadable"
    case .notOneTable: "not_one_table"
    case .notOneStatement: "not_one_statement"
    case .settingMissing: "setting_missing"
    case .transactionControl: "transaction_statement"
    case .ownTable, .catalogEdit, .tableGuard: "dray_table"
    case .resourceNotFound: "resource_not_found"
    case .tableNotLoaded: "table_not_loaded"
    case .unknownTable: "unknown_table"
    case .expectation: "expectation_failed"
    }
  }

  var description: String {
    switch self {
    case .groupFailed(let members): "steps failed in the group: \(members.joined(separator: ", "))"
    case .interrupted: "interrupted"
    case .unreadableAnswer(let resource, let expected, let reason, let sentAs):
      "the answer of \(resource) is not \(expected): \(reason)\(sentAs.map { " (the server sent it as \($0))" } ?? ""); "
        + "the answer was discarded, so the next run downloads it again"
    case .notOneTable(let m), .notOneStatement(let m), .settingMissing(let m): m
    case .resourceNotFound(let resource, let available):
      "resource '\(resource)' is not in the server's schema for this user"
        + (EditDistance.closest(to: resource, among: available).map { "; did you mean '\($0)'? It offers: " } ?? "; it offers: ")
        + available.joined(separator: ", ")
    case .tableNotLoaded(let resource, let table, let physical):
      "{{ table \"\(resource)\" \"\(table)\" }}: table \(physical) does not exist; run the step that loads \(resource) first"
    case .unknownTable(let resource, let table, let tables):
      "{{ table \"\(resource)\" \"\(table)\" }}: \(resource)'s scheme has no table '\(PrintableText.excerpt(table))'"
        + (EditDistance.closest(to: table, among: tables).map { "; did you mean '\($0)'? Its tables: " } ?? "; its tables: ")
        + tables.joined(separator: ", ")
    case .expectation(let m): m
    case .catalogEdit(let statement):
      "'\(statement)' would let the schema table be edited directly, dray's own tables' definitions included; PRAGMA writable_schema is refused in sql and query steps"
    case .tableGuard(let statement):
      "'\(statement)' would turn off or change the trigger of dray's table guard (_dray_guard, which marks a loaded table changed so that its next load asks for full data; docs/postgres.md, \"The table guard\"); leave triggers on, and write an edit meant to last to a table of your own"
    case .ownTable(let table, let statement, let trigger):
      "\(trigger.map { "trigger \($0), fired by any write to its table (dray's loads included)," } ?? "'\(statement)'") would change dray's own table \(table); tables named _dray_... hold the run journal, checkpoints and bookkeeping, which dray alone writes. Reading them is fine; create and write only tables of your own, named without that prefix"
    case .transactionControl(let statement):
      "'\(statement)' would end the transaction dray runs the step in; remove it: dray commits the step's statements together with its checkpoint, so that a rerun never repeats them"
    }
  }
}

/// The waits of one step's requests for their host's budget (`RequestBudgets`), over its
/// threads.
final class BudgetWaits: Sendable {
  private let waited = Mutex<Duration>(.zero)

  var total: Duration { waited.withLock { $0 } }

  func add(_ wait: Duration) { waited.withLock { $0 += wait } }
}
