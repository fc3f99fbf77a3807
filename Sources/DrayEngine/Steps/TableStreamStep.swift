internal import DrayModel
internal import DrayPlatform
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Synchronization

extension StepRunner {
  /// `table_stream`: posts the parameters to `rpc/<resource>/`, streams the answer to a
  /// resumable download, and loads it into the resource's table in one transaction with
  /// the step's checkpoint (the SDK's `tableStream`). `expect` is checked on each table in
  /// that transaction before it commits (`Expectations.audit`); a failure rolls it back.
  func runTableStream(_ options: TableStreamStep, _ report: inout StepReport) throws {
    let run = try TableStreamRun(self, options, report)
    defer { report = run.finalReport }
    let loading = showLoadProgress(run.store)
    defer { loading?.stop() }
    let (head, unchanged, streamed) = try run.fetchAnswer()
    // Kept only when the tables are still as dray loaded them (asked again in the write
    // transaction that keeps them); otherwise the finished answer loads.
    if unchanged, try keepUnchanged(run.scheme, options, head, run.store, run.attempts, &run.report) {
      run.download.removeFinished()
      // Nothing loaded, nothing set aside; a change the tables never took is named again.
      if let drift = run.drift {
        run.report.contract = ContractReport(
          quarantine: quarantineName(options, run.scheme, store: run.store), loaded: 0, setAside: 0, trimmed: 0, byKind: [:],
          changes: drift.changes)
        run.report.notes += drift.changes
      }
      return
    }
    let (result, loaded) = try run.loadFinished(head, streamed: streamed)
    if let deltaFrom = run.deltaFrom, !loaded.isDelta {
      run.report.notes.append("asked for a delta from \(deltaFrom); the server sent full data")
    }
    run.download.removeFinished()
    noteLoaded(result, head: loaded, deltaFrom: run.deltaFrom, &run.report)
    if let drift = run.drift {
      run.report.contract = drift.report
      run.report.notes += drift.changes
      // What the contract set aside or trimmed, as an `http` load says it.
      if let contract = drift.report, contract.setAside + contract.trimmed > 0 {
        var counts = Quarantine.Counts()
        counts.setAside = contract.setAside
        counts.trimmed = contract.trimmed
        counts.byKind = contract.byKind
        run.report.notes.append("\(counts.summary) into table \(contract.quarantine)")
      }
    }
  }

  /// The resource's scheme: the one the store keeps, else the platform's (`client.schemes`).
  /// - Throws: `StepError.resourceNotFound` for a resource the platform does not list.
  fileprivate func scheme(
    of resource: String, in store: any TargetStore, client: PlatformClient, fresh: Bool = false,
    record: @escaping (Attempt) -> Void
  ) throws -> ResourceScheme {
    if !fresh, let kept = try store.scheme(for: resource) { return kept }
    let schemes = try client.schemes(policy: step.retry, record: recording("schema", record))
    guard let found = schemes.first(where: { $0.name == resource }) else {
      throw StepError.resourceNotFound(resource: resource, available: schemes.map(\.name))
    }
    return found
  }

  /// Loads the answer in `download` in one transaction of `store` with the step's
  /// checkpoint; from its part as it arrives with `growing`. `answer` gives the answer's head
  /// and the step's report so far once the rows are read (the download has finished by then).
  /// - Throws: `LoadError`, `StepError` for a failed `expect` (the answer is then removed:
  ///   the next run asks again), `GrowingFile.Stop`, the store's errors.
  fileprivate func loadAnswer(
    _ options: TableStreamStep, _ scheme: ResourceScheme, into store: any TargetStore, _ download: Download, delta: Bool,
    growing: GrowingFile?, drift: SchemeDrift?, answer: () -> (head: PlatformClient.AnswerHead, report: StepReport)?
  ) throws -> LoadResult {
    // A part that is still empty opens no transaction until its first bytes come.
    if let growing { _ = try growing.waitForBytes(after: 0) }
    // A drifted scheme's rows are reshaped to the tables' columns first (never while the
    // answer still grows: `fetchAnswer` loads such an answer after its download).
    var file = download.path
    if let drift, !drift.shapes.isEmpty, growing == nil {
      file = download.path + ".reshaped"
      try drift.reshape(file: download.path, into: file, resource: options.resource)
    }
    defer { if file != download.path { try? FileManager.default.removeItem(atPath: file) } }
    return try context.databaseWrites.withLock { _ in
      let result = try store.write { transaction in
        let result = try transaction.load(
          file: file, growing: growing, scheme: scheme, params: options.params, delta: delta,
          cancellation: context.cancellation
        ) {
          let head = answer()?.head
          return AnswerInfo(contentVersion: head?.contentVersion, etag: head?.etag, cacheHash: head?.cacheHash)
        }
        // The download has finished by the time the rows are read, and handed its head over.
        guard var done = answer()?.report else {
          throw HandOverError(description: "\(options.resource): the answer's rows were read before its download ended; nothing was loaded")
        }
        for table in scheme.outputs {
          let name = store.naming.physicalName(resource: scheme.name, table: table.name, params: options.params)
          done.rows[name] = try transaction.rowCount(ofTable: name)
          done.tables.append(name)
        }
        if let drift {
          do {
            done.contract = try quarantine(drift, options, scheme, result, in: transaction, store: store)
          } catch {
            // Rolled back with the load; the answer is never reused: the next run asks again.
            download.removeFinished()
            throw error
          }
        }
        if let failed = try Expectations.audit(options.expect, tables: done.tables, in: transaction) {
          // Rolled back with the load; the answer is never reused: the next run asks again.
          download.removeFinished()
          throw failed
        }
        try transaction.record(checkpoint(done, status: .succeeded))
        CrashPoint.reach("before-commit:\(step.id)")
        drift?.report = done.contract
        return result
      }
      // Committed: a partition's quarantine counts toward its step's bounds.
      if let id = partitionedStepID, let contract = drift?.report {
        context.quarantined.withLock { tally in
          let prior = tally[id] ?? (0, 0)
          tally[id] = (prior.total + contract.setAside + contract.trimmed, prior.records + contract.loaded + contract.setAside)
        }
      }
      return result
    }
  }

  /// Reports what a load came to: the rows of each table, and notes for a delta, tables
  /// the scheme does not list, and values that did not fit their column's type.
  private func noteLoaded(
    _ result: LoadResult, head: PlatformClient.AnswerHead, deltaFrom: String?, _ report: inout StepReport
  ) {
    report.rows = result.rowCounts.reduce(into: [:]) { $0[result.tables[$1.key] ?? $1.key] = $1.value }
    report.tables = result.tables.values.sorted()
    if head.isDelta {
      let inserted = result.inserted.values.reduce(0, +)
      let deleted = result.deleted.values.reduce(0, +)
      report.notes.append(
        "delta \(deltaFrom ?? "?")→\(head.contentVersion ?? "?"): \(HumanUnits.counted(inserted, "row")) inserted, \(deleted) deleted")
    }
    for table in result.skippedTables.names {
      report.notes.append(
        "the answer holds table '\(PrintableText.excerpt(table))', which the stored scheme does not list; its rows were skipped (run a schemes step to pick it up)"
      )
    }
    if result.skippedTables.more > 0 {
      report.notes.append(
        "the answer holds \(HumanUnits.counted(result.skippedTables.more, "more table object")) the stored scheme does not list; their rows were skipped too"
      )
    }
    if result.mismatchCount > 0 {
      let shown = result.mismatches.prefix(10).map { "  \($0)" }
      let more = result.mismatchCount - shown.count
      report.notes.append(
        ([
          "\(result.mismatchCount) value\(result.mismatchCount == 1 ? "" : "s") did not fit the column's declared type; each was stored exactly as the answer gave it (docs/store.md):"
        ]
          + shown + (more > 0 ? ["  … and \(more) more"] : [])).joined(separator: "\n"))
    }

  }

  /// Records the step as `unchanged`: its tables already hold the answer (`holdsAnswer`), so
  /// none is rewritten; the checkpoint commits alone. Asks `holdsAnswer` again inside the
  /// write transaction, where nothing else can write the tables.
  /// - Returns: false, recording nothing, when the tables changed since the first asking.
  private func keepUnchanged(
    _ scheme: ResourceScheme, _ options: TableStreamStep, _ head: PlatformClient.AnswerHead, _ store: any TargetStore,
    _ attempts: [Attempt], _ report: inout StepReport
  ) throws -> Bool {
    var done = report
    done.unchanged = true
    done.notes.append(
      "unchanged: every table already holds this answer (ETag \(head.etag ?? ""), Cache-Hash-Value \(head.cacheHash ?? "")); no row rewritten"
    )
    done.attempts = attempts
    let info = AnswerInfo(contentVersion: head.contentVersion, etag: head.etag, cacheHash: head.cacheHash)
    let kept = try context.databaseWrites.withLock { _ in
      try store.write { transaction in
        guard try store.holdsAnswer(info, scheme: scheme, params: options.params) else { return false }
        for table in scheme.outputs {
          let name = store.naming.physicalName(resource: scheme.name, table: table.name, params: options.params)
          done.rows[name] = try transaction.rowCount(ofTable: name)
        }
        try transaction.record(checkpoint(done, status: .succeeded))
        return true
      }
    }
    guard kept else { return false }
    report.unchanged = true
    report.notes = done.notes
    report.rows = done.rows
    return true
  }
}

/// One run of a `table_stream` step, in parts: `fetchAnswer` (a delta or full data, asked
/// again as full data where a delta cannot apply; loaded while it downloads where the store
/// can) and `loadFinished` (the load after the download, asked once more from byte 0 when an
/// answer an earlier run left cannot be loaded). `runTableStream` keeps an unchanged answer
/// between them.
private final class TableStreamRun {
  let runner: StepRunner
  let options: TableStreamStep
  let client: PlatformClient
  let store: any TargetStore
  let scheme: ResourceScheme
  /// The call only reads: it may be resumed and asked again.
  let reads: Bool
  /// A write without a transaction id, sent at most once: never resumed (a resume would send
  /// it again), nor asked again as full data after a delta.
  let writesOnce: Bool
  let url: String
  let transactionID: String?
  /// What `load.contract` made of the server's scheme; nil without a contract.
  let drift: SchemeDrift?
  /// The version a delta starts from; nil once full data is asked for.
  var deltaFrom: String?
  var download: Download
  var report: StepReport
  /// Every call's attempts, the scheme's included.
  private let log = AttemptLog()
  var attempts: [Attempt] { log.attempts }
  /// The answer's head and the step's report so far, for the load's thread once the
  /// download is done.
  let answer = Mutex<(head: PlatformClient.AnswerHead, report: StepReport)?>(nil)

  init(_ runner: StepRunner, _ options: TableStreamStep, _ report: StepReport) throws {
    self.runner = runner
    self.options = options
    self.report = report
    client = try runner.platformClient()
    let store = try runner.openStore()
    self.store = store
    url = client.session.url("rpc/\(options.resource)/")
    // With a contract the server's scheme is asked for each run, to be compared with the
    // tables (`SchemeDrift`); without one the kept scheme serves.
    let given = try runner.scheme(of: options.resource, in: store, client: client, fresh: options.contract != nil) { [log] in
      log.attempts.append($0)
      runner.logAttempt($0)
    }
    if let contract = options.contract {
      let drift = try SchemeDrift(
        server: given, kept: try store.scheme(for: options.resource), contract: contract, url: HTTPClient.displayURL(url)
      ) { table in
        let name = store.naming.physicalName(resource: given.name, table: table, params: options.params)
        return try runner.context.databaseWrites.withLock { _ in
          try store.write { (try $0.columnTypes(ofTable: name).map(\.name), try $0.recordedColumns(ofTable: name)) }
        }
      }
      self.drift = drift
      scheme = drift.scheme
    } else {
      drift = nil
      scheme = given
    }
    reads = !runner.mayChangeData(writes: options.writes, scheme: scheme)
    writesOnce = !options.transaction && !reads
    // A delta starts from the version the tables hold; without one (first load, a table
    // recreated, versions that disagree, tables whose columns the contract changes) the
    // server is asked for full data.
    deltaFrom =
      options.delta && !writesOnce && drift?.reshapes != true ? try store.deltaBase(scheme: scheme, params: options.params) : nil
    download = Self.answerDownload(runner, resume: runner.manifest.download.resume && !writesOnce)
    transactionID =
      options.transaction ? (download.existingSidecar(for: url)?.transactionID ?? UUID().uuidString.lowercased()) : nil
  }

  /// The answer's download. A finished answer is not flushed to disk (`Download.flushesFinished`):
  /// this step loads it right away, then removes it, as it does an answer loaded as it arrives.
  static func answerDownload(_ runner: StepRunner, resume: Bool) -> Download {
    let download = Download(path: runner.downloadPath(), style: .platform, resume: resume)
    download.flushesFinished = false
    return download
  }

  /// The step's report with its attempts.
  var finalReport: StepReport {
    var final = report
    final.attempts = attempts
    return final
  }

  func record(_ attempt: Attempt) {
    log.attempts.append(attempt)
    runner.logAttempt(attempt)
  }

  /// Fetches the answer and, where the store loads while downloading (full data, not in a
  /// parallel group), loads it on a second thread as it arrives, in a transaction that
  /// commits only once the download is finished and verified (docs/network.md, "Loading
  /// while downloading"). Members of a parallel group load after their download, so that
  /// their loads, one at a time, never hold a transaction open over one.
  /// - Returns: the answer's head; whether the tables already hold it; the streamed load's
  ///   outcome, nil when the answer loads after its download.
  func fetchAnswer() throws -> (PlatformClient.AnswerHead, unchanged: Bool, streamed: Result<LoadResult, any Error>?) {
    var outcome: (PlatformClient.AnswerHead, unchanged: Bool, streamed: Result<LoadResult, any Error>?)
    if deltaFrom == nil && !runner.inGroup && store.loadsWhileDownloading && drift?.shapes.isEmpty != false {
      let growing = GrowingFile()
      download.growing = growing
      var answered: (head: PlatformClient.AnswerHead, unchanged: Bool)?
      let part = download
      let loaded = try loadWhileDownloading(growing, load: { try self.load(part, delta: false, growing: growing) }) {
        // The load's thread holds `store`: another connection reads what the tables hold.
        let fetched = try fetched(reader: runner.openStore())
        answered = fetched
        return !fetched.unchanged
      }
      guard let answered else {
        throw HandOverError(description: "\(options.resource): the download ended without an answer; nothing was loaded")
      }
      outcome = (answered.head, answered.unchanged, loaded.result)
      if loaded.restarted {
        // What was read may belong to another answer: the finished one loads from its start.
        report.notes.append("the download started the answer again from byte 0; it was loaded once finished")
      }
    } else {
      let head = try fetched(reader: store)
      outcome = (head.head, head.unchanged, nil)
    }
    if download.bytesResumed > 0 && download.bytesReceived == 0 {
      report.notes.append("the answer an earlier run downloaded (\(download.bytesResumed) bytes) is unchanged; not downloaded again")
    } else {
      if download.bytesResumed > 0 { report.notes.append("resumed a partial download at byte \(download.bytesResumed)") }
      report.notes += download.notes
    }
    return outcome
  }

  /// Fetches the answer, hands its head to the load, and asks `reader` whether the tables
  /// hold it already (on a load's thread, `reader` is another connection than the load's).
  private func fetched(reader: @autoclosure () throws -> any TargetStore) throws -> (head: PlatformClient.AnswerHead, unchanged: Bool) {
    let head = try fetch()
    downloaded(head)
    CrashPoint.reach("downloaded:\(runner.step.id)")
    // An answer the tables hold already is not loaded: what was read of it rolls back.
    return (head, try holds(head, in: reader()))
  }

  /// The load after the download (or the streamed load's outcome). An answer on disk that
  /// cannot be loaded is never kept to be reused: one an earlier run or attempt left (only
  /// its size was confirmed) may have been damaged on disk, so it is fetched once more from
  /// byte 0; a fresh answer that fails is the server's.
  /// - Returns: the load's result and the head of the answer loaded.
  func loadFinished(
    _ head: PlatformClient.AnswerHead, streamed: Result<LoadResult, any Error>?
  ) throws -> (LoadResult, PlatformClient.AnswerHead) {
    do {
      return (try streamed?.get() ?? load(download, delta: head.isDelta, growing: nil), head)
    } catch let error as LoadError where !runner.context.cancellation.isCancelled {
      download.removeFinished()
      guard download.bytesResumed > 0 else { throw discarded(error, head) }
      report.notes = report.notes.filter { !$0.hasPrefix("the answer an earlier run downloaded") }
      report.notes.append(
        "the answer an earlier run downloaded (\(download.bytesResumed) bytes) could not be loaded (\(error)); it was discarded and downloaded again"
      )
      download = Self.answerDownload(runner, resume: false)
      let again = try fetch()
      downloaded(again)
      report.notes += download.notes
      do {
        return (try load(download, delta: again.isDelta, growing: nil), again)
      } catch let error as LoadError where !runner.context.cancellation.isCancelled {
        download.removeFinished()
        throw discarded(error, again)
      }
    }
  }

  /// `error` of an answer that was discarded, saying so.
  private func discarded(_ error: LoadError, _ head: PlatformClient.AnswerHead) -> LoadError {
    var error = error
    error.message +=
      (head.unexpectedKind.map { " (the server sent it as \($0))" } ?? "")
      + "; the answer was discarded, so the next run downloads it again"
    return error
  }

  /// Asks again for full data, as a new transaction.
  private func fullData() throws -> PlatformClient.AnswerHead {
    try client.rpc(
      resource: options.resource, params: options.params, delta: nil,
      transactionID: options.transaction ? UUID().uuidString.lowercased() : nil, reads: reads, download: download,
      policy: runner.step.retry, record: record)
  }

  /// Fetches the answer into `download`: a delta from `deltaFrom` when there is one, else
  /// full data. A delta the server refuses (400), or one that does not start at `deltaFrom`
  /// and move forward, is replaced by full data (docs/store.md); a delta sent for full data
  /// is refused. `report.bytes` counts every byte received.
  private func fetch() throws -> PlatformClient.AnswerHead {
    var head: PlatformClient.AnswerHead
    do {
      head = try client.rpc(
        resource: options.resource, params: options.params, delta: deltaFrom, transactionID: transactionID, reads: reads,
        download: download, policy: runner.step.retry, record: record,
        beforeSending: { if self.writesOnce { try self.runner.recordCheckpoint(self.report, status: .sent) } })
    } catch TransportError.httpStatus(let e) where e.status == 400 && deltaFrom != nil {
      // The server does not know the version held (its history was reset, or the database
      // came from another server).
      report.notes.append("the server refused a delta from \(deltaFrom ?? "") (\(e)); asked for full data instead")
      deltaFrom = nil
      head = try fullData()
    }
    if head.isDelta, let held = deltaFrom, let problem = head.deltaProblem(held: held) {
      report.notes.append("asked for a delta from \(held); the server sent \(problem); asked for full data instead")
      report.count(download)
      download.removeFinished()
      download = Self.answerDownload(runner, resume: runner.manifest.download.resume)
      deltaFrom = nil
      head = try fullData()
    }
    if head.isDelta && deltaFrom == nil {
      download.removeFinished()
      throw PlatformError.badAnswer(
        url: HTTPClient.displayURL(url),
        detail:
          "asked for full data, the server sent a delta (Content-Version: \"delta \(head.deltaFrom ?? "?")-\(head.contentVersion ?? "?")\"); "
          + "a delta cannot apply to tables of unknown version, so nothing was loaded")
    }
    report.count(download)
    return head
  }

  /// Loads the answer in `download` in one transaction with the step's checkpoint; from its
  /// part as it arrives with `growing`. The answer's head and the step's report so far are
  /// read from `answer` once the rows are read (the download has finished by then).
  private func load(_ download: Download, delta: Bool, growing: GrowingFile?) throws -> LoadResult {
    try runner.loadAnswer(options, scheme, into: store, download, delta: delta, growing: growing, drift: drift) {
      answer.withLock { $0 }
    }
  }

  /// Keeps the answer's head and the step's report for `load`, once the download is done.
  private func downloaded(_ head: PlatformClient.AnswerHead) {
    answer.withLock { $0 = (head, finalReport) }
  }

  /// Whether the tables already hold the answer `head` describes, as `reader` sees them:
  /// loading it would rewrite every row as it is.
  private func holds(_ head: PlatformClient.AnswerHead, in reader: any TargetStore) throws -> Bool {
    try !head.isDelta && !runner.context.fresh
      && reader.holdsAnswer(
        AnswerInfo(contentVersion: head.contentVersion, etag: head.etag, cacheHash: head.cacheHash), scheme: scheme,
        params: options.params)
  }
}

/// The attempts of a step's calls, shared by the closures that record them.
private final class AttemptLog {
  var attempts: [Attempt] = []
}
