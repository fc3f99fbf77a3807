internal import DrayModel
internal import DrayTarget
internal import Foundation
internal import Synchronization

extension StepRunner {
  /// A step with `partitions:` (an `http` or `table_stream` step; docs/partitions.md, "How a
  /// partitioned step runs"): one member step per partition, its settings filled with the
  /// partition's values (`HTTPStep.filled(with:)`, `TableStreamStep.filled(with:)`), run on
  /// their own threads as a `parallel` group's members are, at most `concurrency` at once.
  ///
  /// Each member has its own id (`PartitionIDs.member`), so its own checkpoint, page ledger,
  /// staging table and incremental cursor: a run that continues the chain skips the
  /// partitions that finished (`RunContext.resumedPartitions`) and resumes the others from
  /// their last committed page. `append` and `merge` loads publish each partition into the
  /// step's table as it finishes; a `replace` load gathers the partitions' records in a table
  /// of the job's database (`PartitionIDs.gathered`) and replaces the step's table from it in
  /// one transaction, with the step's checkpoint, once every partition finished, so a reader
  /// sees the old rows or all the new ones. `load.expect` is checked in that last
  /// transaction, on the whole table.
  ///
  /// A partition that fails for good (after its retries) starts no more partitions; those
  /// running end; the step fails with `PartitionError.failed` (`partitions_failed`) and the
  /// others keep what they committed.
  func runPartitioned(_ partitions: Partitions, _ report: inout StepReport) throws {
    report.partitioned = true
    let store = manifest.database == nil ? nil : try openStore()
    let list = try partitionList(partitions, store: store)
    let load: HTTPStep.Load? = if case .http(let h) = step.kind { h.load } else { nil }
    let gathered = load?.write == .replace ? PartitionIDs.gathered(job: manifest.job, step: step.id) : nil
    let checkpoints = try context.journal.withLock { try $0.checkpoints(job: manifest.job) }
    // A `replace` step's gathered records are its partitions' only when its definition is
    // the one they gathered under (recorded when it started over): with another list or
    // query, a partition no longer listed would stay in the table.
    let gatheredUnchanged =
      gathered == nil || checkpoints.contains { $0.stepID == step.id && $0.fingerprint == step.fingerprint(in: manifest) }
    let resuming = context.resumedPartitions == step.id && gatheredUnchanged
    if context.resumedPartitions == step.id && !gatheredUnchanged {
      report.notes.append("the partitions changed since they were gathered: every partition is fetched again (write: replace)")
    }
    let members = try list.map { try memberStep(for: $0, gatheringInto: gathered) }
    var seen: [String: Partition] = [:]
    for (member, partition) in zip(members, list) {
      if let other = seen.updateValue(partition, forKey: member.id) {
        throw PartitionError.duplicate(step: step.id, first: other.label, second: partition.label)
      }
    }
    // The partitions that finished in the chain this run continues, or in this run itself
    // (the step run again after a lost connection): never fetched again.
    let finished = checkpoints.filter {
      $0.stepID.hasPrefix(step.id + "[") && $0.status == .succeeded
        && ($0.runID == context.runID || resuming && $0.lineage == context.lineage)
    }
    let startsOver = !resuming && !finished.contains { $0.runID == context.runID }
    // A `--fresh` incremental load into one table empties it once in its chain, here, not
    // once per partition: a run continuing the fresh run (itself fresh) empties it only
    // when the step never started in the chain (no checkpoint of it or its partitions).
    let startedInChain = checkpoints.contains {
      ($0.stepID == step.id || $0.stepID.hasPrefix(step.id + "[")) && $0.lineage == context.lineage
    }
    let emptiesTable =
      context.fresh && load != nil && load?.write != .replace && isIncremental && (startsOver || !startedInChain)
    if let store, (startsOver && gathered != nil) || emptiesTable {
      // A step that starts over gathers from nothing.
      try context.databaseWrites.withLock { _ in
        try store.write { transaction in
          if let gathered {
            try transaction.dropTable(gathered)
          }
          if emptiesTable, let load, try !transaction.columns(ofTable: load.table).isEmpty {
            _ = try transaction.deleteRows(ofTable: load.table)
          }
          // The definition the partitions gather under, and the mark that the table was
          // emptied, for a run that resumes them.
          try transaction.record(checkpoint(report, status: .failed))
        }
      }
    }
    if list.isEmpty {
      // Logged with the step's other notes, after its "ok" line.
      report.notes.append("no partitions: the rows query returned no rows, so nothing was fetched")
    }
    if let joining = context.joining {
      // Shared with the runners that joined the run: each partition is claimed by one.
      report.members = try runClaimed(members, list, partitions: partitions, gathered: gathered, finished: finished, joining: joining)
    } else {
      report.members = runMembers(members, list, concurrency: partitions.concurrency, finished: finished)
    }
    for index in report.members.indices {
      if let load, let records = report.members[index].records { report.members[index].rows = [load.table: records] }
      if gathered != nil { report.members[index].tables = [] }
      report.bytes += report.members[index].bytes
      report.wireBytes += report.members[index].wireBytes
      report.outputs += report.members[index].outputs
      if load == nil {
        report.rows.merge(report.members[index].rows) { $1 }
        report.tables += report.members[index].tables
      }
    }
    let failed = report.members.filter { $0.status == .failed }
    if let first = failed.first {
      throw PartitionError.failed(
        step: step.id, failed: failed.count, total: list.count, first: first.partition?.label ?? first.id,
        message: first.errorMessage ?? first.errorCode ?? "failed")
    }
    if context.cancellation.isCancelled { throw StepError.interrupted }
    try finishPartitioned(load, gathered: gathered, partitions: list.count, store: store, &report)
  }

  /// The report of `member` when it is not run again: its partition finished in the chain
  /// (`finished`) with the definition it has now, or, for `append` and `merge`, with any
  /// definition, since what it published is in the table already and fetching it again would
  /// append its rows twice (docs/partitions.md, "How a partitioned step runs"). Nil when the
  /// partition runs.
  func skippedReport(_ member: Step, _ partition: Partition, finished: CheckpointRecord?) -> StepReport? {
    guard let finished else { return nil }
    var skipped = StepReport(id: member.id, kind: member.kindName, status: .skipped)
    skipped.partition = partition
    skipped.records = finished.rows
    if finished.fingerprint == member.fingerprint(in: manifest) {
      skipped.skipReason = "finished in run \(finished.runID), unchanged"
      return skipped
    }
    guard case .http(let http) = step.kind, let write = http.load?.write, write == .append || write == .merge else { return nil }
    skipped.skipReason =
      "finished in run \(finished.runID) under the step's earlier definition; what it published stays in the table (write: \(write.rawValue)): run with --fresh to fetch every partition again"
    return skipped
  }

  /// Runs `members` (the partitions `list` gives, in order), at most `concurrency` at once,
  /// skipping those whose checkpoint is in `finished` with their definition unchanged.
  /// - Returns: one report per member, in order: a member never started is `not_run`.
  private func runMembers(_ members: [Step], _ list: [Partition], concurrency: Int, finished checkpoints: [CheckpointRecord])
    -> [StepReport]
  {
    let results = Mutex<[Int: StepReport]>([:])
    let failed = Atomic<Bool>(false)
    let slots = DispatchSemaphore(value: max(1, concurrency))
    let done = DispatchGroup()
    let progress = PartitionProgress(total: members.count, console: console, step: step.id)
    let finishedByID = Dictionary(checkpoints.map { ($0.stepID, $0) }) { first, _ in first }
    for (index, member) in members.enumerated() {
      if let skipped = skippedReport(member, list[index], finished: finishedByID[member.id]) {
        results.withLock { $0[index] = skipped }
        progress.finished(skipped)
        continue
      }
      slots.wait()
      if context.cancellation.isCancelled || failed.load(ordering: .relaxed) {
        slots.signal()
        break
      }
      done.enter()
      let runner = StepRunner(context: context, step: member, inGroup: true, partition: list[index], partitionedStepID: step.id)
      let thread = Thread {
        var memberReport = runner.run()
        memberReport.partition = list[index]
        if memberReport.status == .failed { failed.store(true, ordering: .relaxed) }
        results.withLock { $0[index] = memberReport }
        progress.finished(memberReport)
        slots.signal()
        done.leave()
      }
      thread.stackSize = 4 << 20
      thread.start()
    }
    done.wait()
    let reports = results.withLock { $0 }
    let stopped = failed.load(ordering: .relaxed) ? "a partition failed for good, so no more were started" : "the run was interrupted"
    return members.enumerated().map { index, member in
      reports[index]
        ?? {
          var notRun = StepReport(id: member.id, kind: member.kindName, status: .notRun)
          notRun.partition = list[index]
          notRun.skipReason = stopped
          return notRun
        }()
    }
  }

  /// Ends a partitioned step whose partitions all finished, in one transaction of the job's
  /// database with the step's checkpoint: a `replace` load replaces the table from the
  /// gathered records, and `load.expect` is checked on the table.
  private func finishPartitioned(
    _ load: HTTPStep.Load?, gathered: String?, partitions: Int, store: (any TargetStore)?, _ report: inout StepReport
  ) throws {
    guard let load, let store else {
      try recordCheckpoint(report, status: .succeeded)
      return
    }
    let records = report.members.reduce(0) { $0 + ($1.records ?? 0) }
    var done = report
    try context.databaseWrites.withLock { _ in
      try store.write { transaction in
        if let gathered, partitions > 0 {
          let rows = try transaction.columns(ofTable: load.table).isEmpty ? 0 : transaction.rowCount(ofTable: load.table)
          if records == 0 && rows > 0 && !load.allowEmpty {
            throw HTTPStepError.emptyAnswer(
              "table \(load.table) holds \(HumanUnits.counted(rows, "row")), and its \(HumanUnits.counted(partitions, "partition")) "
                + "held no records: a replace load would leave the table empty, so nothing was loaded and the table keeps its rows; "
                + "if no records is a valid answer of this API, set load.allow_empty: true")
          }
          let added = try transaction.replaceRows(ofTable: load.table, withTable: gathered)
          done.notes += added.map { "added column \($0) to table \(load.table): the API's records hold it" }
          done.notes.append("replaced table \(load.table) with the records of \(HumanUnits.counted(partitions, "partition"))")
        }
        let exists = try !transaction.columns(ofTable: load.table).isEmpty
        if exists, let failed = try Expectations.audit(load.expect, tables: [load.table], in: transaction) { throw failed }
        done.rows = exists ? [load.table: try transaction.rowCount(ofTable: load.table)] : [:]
        done.tables = exists ? [load.table] : []
        if !exists && partitions > 0 { done.notes.append(StepRunner.noTableNote(load.table)) }
        try transaction.record(checkpoint(done, status: .succeeded))
      }
    }
    report = done
  }

  /// Whether the step is an incremental `http` step.
  private var isIncremental: Bool {
    if case .http(let h) = step.kind { h.incremental != nil } else { false }
  }

  /// The member step of `partition`: the step's settings filled with its values, under its
  /// own id. With `gathering`, a load writes into that table by `append`; a member checks no
  /// `load.expect` (the step checks it on the whole table).
  /// - Throws: `PartitionError.placeholder` for a placeholder the partition does not define.
  func memberStep(for partition: Partition, gatheringInto gathering: String?) throws -> Step {
    let kind: StepKind
    do {
      switch step.kind {
      case .http(let options):
        var filled = try options.filled(with: partition)
        if options.output != nil, let named = PartitionIDs.withoutSecrets(partition, redactor: manifest.redactor) {
          filled.output = try options.filled(with: named).output
        }
        if var load = filled.load {
          load.expect = []
          if let gathering {
            // The quarantine stays the step's table's, not the gathering table's.
            load.quarantine.table = load.quarantine.table ?? HTTPStep.Quarantine.defaultName(for: load.table)
            load.table = gathering
            load.write = .append
          }
          filled.load = load
        }
        kind = .http(filled)
      case .tableStream(let options):
        kind = .tableStream(try options.filled(with: partition))
      default:
        throw PartitionError.kind(step: step.id, kind: step.kindName)
      }
    } catch let problem as Placeholders.Problem {
      throw PartitionError.placeholder(
        step: step.id, partition: partition.label, problem: problem.description, advised: problem.advised)
    }
    return Step(
      id: PartitionIDs.member(step.id, partition, redactor: manifest.redactor), kind: kind, retry: step.retry, timeouts: step.timeouts,
      location: step.location,
      description: step.description)
  }
}

/// The ids and tables of a partitioned step's members.
enum PartitionIDs {
  /// `STEP[name=value,...]` when every value is short and plain (letters, digits, `-`, `_`,
  /// `.`, `:`, `+`, at most 40 bytes), draws on no secret (`redactor` leaves it as it is) and
  /// the id is at most 120 bytes, so that the journal and the log read well; otherwise
  /// `STEP[#` and the first 16 hex digits of the SHA-256 of the values `]`, which a value's
  /// `/` or length cannot turn into a path or a name too long, and which shows no secret:
  /// a member's id is a name dray writes, left unmasked in the log, reports and journal.
  static func member(_ step: String, _ partition: Partition, redactor: Redactor) -> String {
    func plain(_ text: String) -> Bool {
      !text.isEmpty && text.utf8.count <= 40
        && text.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.:+".unicodeScalars.contains($0)) }
    }
    let id = step + "[" + partition.values.map { "\($0.name)=\($0.value)" }.joined(separator: ",") + "]"
    if partition.values.allSatisfy({ plain($0.value) && redactor.redact($0.value) == $0.value }) && id.utf8.count <= 120 {
      return id
    }
    let canonical = JSONValue.array(partition.values.map { .array([.string($0.name), .string($0.value)]) }).canonicalJSON
    return step + "[#" + SHA256.hex(canonical).prefix(16) + "]"
  }

  /// `partition` with each value that draws on a secret (`redactor` masks something in it)
  /// replaced by `secret-` and the first 16 hex digits of its SHA-256, for the file names of
  /// `output`; nil when no value does.
  static func withoutSecrets(_ partition: Partition, redactor: Redactor) -> Partition? {
    guard partition.values.contains(where: { redactor.redact($0.value) != $0.value }) else { return nil }
    return Partition(
      partition.values.map { value in
        redactor.redact(value.value) == value.value ? value : (value.name, "secret-" + SHA256.hex(value.value).prefix(16))
      })
  }

  /// The table of the job's database where a `write: replace` step's partitions gather
  /// their records until every one finished: `_dray_parts__<job>__<step>`.
  static func gathered(job: String, step: String) -> String { "_dray_parts__\(job)__\(step)" }
}

/// Counts the partitions that finished and tells the console: `partitions 3/24 done, 1,200
/// rows, 8.0 requests/s`, at most once a second and for the last.
final class PartitionProgress: Sendable {
  private struct Counts {
    var done = 0
    var rows = 0
    var requests = 0
    var lastShown: ContinuousClock.Instant?
  }
  private let counts = Mutex(Counts())
  private let total: Int
  private let console: Console
  private let step: String
  private let start = ContinuousClock.now

  init(total: Int, console: Console, step: String) {
    self.total = total
    self.console = console
    self.step = step
  }

  func finished(_ report: StepReport) {
    let now = ContinuousClock.now
    let line: String? = counts.withLock { counts in
      counts.done += 1
      counts.rows += report.records ?? report.totalRows
      if report.status != .skipped { counts.requests += report.ownAttempts.attempts }
      if counts.done < total, let last = counts.lastShown, now - last < .seconds(1) { return nil }
      counts.lastShown = now
      let seconds = max((now - start).seconds, 0.001)
      return "partitions \(counts.done)/\(total) done, \(HumanUnits.counted(counts.rows, "row")), "
        + String(format: "%.1f requests/s", Double(counts.requests) / seconds)
    }
    if let line { console.info(line, step: step) }
  }
}

/// Why a partitioned step failed, or could not list its partitions. A description does not
/// name the step: the step's report entry, its log line (`step issues: http failed after
/// ...: `) and the summary's row do.
enum PartitionError: Error, CustomStringConvertible {
  /// Partitions failed for good; `first` is the first one's values, `message` its error.
  case failed(step: String, failed: Int, total: Int, first: String, message: String)
  /// The `rows` query failed on the job's database.
  case rowsQuery(step: String, message: String)
  /// The `rows` query gave no column.
  case rowsNoColumn(step: String)
  /// Two columns of the `rows` query with one name.
  case rowsColumnTwice(step: String, column: String)
  /// A column of the `rows` query that no placeholder of the step uses.
  case rowsColumnUnused(step: String, column: String, columns: [String])
  /// A `rows` value that is NULL or a blob.
  case rowsValue(step: String, row: Int, column: String, value: String)
  /// A placeholder the partition does not define, or a brace that opens none.
  case placeholder(step: String, partition: String, problem: String, advised: Bool = false)
  /// Two partitions with the same values.
  case duplicate(step: String, first: String, second: String)
  /// A kind that has no partitions (validation refuses it first).
  case kind(step: String, kind: String)
  /// A `window` that gives no windows.
  case window(step: String, message: String)

  /// The stable code in the report's `error.code` (docs/report.md, "Error codes").
  var code: String {
    switch self {
    case .failed: "partitions_failed"
    case .rowsQuery, .rowsNoColumn, .rowsColumnTwice, .rowsColumnUnused, .rowsValue: "partitions_query"
    case .placeholder: "placeholder_undefined"
    case .duplicate: "partitions_duplicate"
    case .kind: "setting_missing"
    case .window: "partitions_window"
    }
  }

  var description: String {
    switch self {
    case .failed(_, let failed, let total, let first, let message):
      "\(failed) of \(HumanUnits.counted(total, "partition")) failed for good (the first, \(first): \(message)); "
        + "no more partitions were started, and those that finished keep what they committed: the next 'dray run' resumes the others"
    case .rowsQuery(_, let message):
      "the partitions' rows query failed: \(message); fix partitions.rows (a SELECT on the job's database, "
        + "whose column names are the placeholder names), or run the step that loads its table first"
    case .rowsNoColumn:
      "the partitions' rows query returned no column; write a SELECT whose columns are named as the placeholders "
        + "(SELECT id AS repo FROM ...)"
    case .rowsColumnTwice(_, let column):
      "the partitions' rows query returns two columns named \(column); each column is a placeholder's value: "
        + "name each column once (SELECT id AS repo, name AS repo_name FROM ...)"
    case .rowsColumnUnused(_, let column, let columns):
      "the partitions' rows query returns column \(column) (of \(columns.joined(separator: ", "))), which no "
        + "placeholder of the step uses: partitions differing only in it would send the same requests; leave it out of the "
        + "SELECT, or write {\(column)} in the step's settings"
    case .rowsValue(_, let row, let column, let value):
      "row \(row) of the partitions' rows query holds \(value) in column \(column); a partition's values are text: "
        + "leave such rows out (WHERE \(column) IS NOT NULL) or convert the column"
    case .placeholder(_, let partition, let problem, true):
      "partition \(partition): \(problem)"
    case .placeholder(_, let partition, let problem, false):
      "partition \(partition): \(problem); give the partitions that value (a column of the rows query, a key of "
        + "each list entry) or remove the placeholder"
    case .duplicate(_, let first, let second):
      "two partitions have the same values (\(first)\(first == second ? "" : " and \(second)")); each partition "
        + "must differ, or it would be fetched twice: make the rows query DISTINCT or remove the repeated entry"
    case .kind(_, let kind):
      "a \(kind) step cannot have partitions; only http and table_stream steps run over partitions"
    case .window(_, let message): "partitions.window: \(message)"
    }
  }
}
