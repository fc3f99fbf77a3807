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
    let client = try platformClient()
    let store = try openStore()
    var attempts: [Attempt] = []
    defer { report.attempts = attempts }
    let record: (Attempt) -> Void = {
      attempts.append($0); logAttempt($0)
    }

    let scheme = try scheme(of: options.resource, in: store, client: client, record: record)

    // A write without a transaction id is sent at most once: never resumed (a resume would
    // send it again), nor asked again as full data after a delta.
    let reads = !mayChangeData(writes: options.writes, scheme: scheme)
    let writesOnce = !options.transaction && !reads
    // A delta starts from the version the tables hold; without one (first load, a table
    // recreated, versions that disagree) the server is asked for full data.
    var deltaFrom = options.delta && !writesOnce ? try store.deltaBase(scheme: scheme, params: options.params) : nil
    var download = Download(path: downloadPath(), style: .platform, resume: manifest.download.resume && !writesOnce)
    let url = client.session.url("rpc/\(options.resource)/")
    let transactionID = options.transaction ? (download.existingSidecar(for: url)?.transactionID ?? UUID().uuidString.lowercased()) : nil
    /// Asks again for full data, as a new transaction.
    func fullData(_ download: Download) throws -> PlatformClient.AnswerHead {
      try client.rpc(
        resource: options.resource, params: options.params, delta: nil,
        transactionID: options.transaction ? UUID().uuidString.lowercased() : nil, reads: reads, download: download,
        policy: step.retry, record: record)
    }
    /// Fetches the answer into `download`: a delta from `deltaFrom` when there is one, else
    /// full data. A delta the server refuses (400), or one that does not start at `deltaFrom`
    /// and move forward, is replaced by full data (docs/store.md); a delta sent for full
    /// data is refused. `report.bytes` counts every byte received.
    func fetch(_ download: inout Download) throws -> PlatformClient.AnswerHead {
      var head: PlatformClient.AnswerHead
      do {
        head = try client.rpc(
          resource: options.resource, params: options.params, delta: deltaFrom, transactionID: transactionID, reads: reads,
          download: download, policy: step.retry, record: record,
          beforeSending: { if writesOnce { try recordCheckpoint(report, status: .sent) } })
      } catch let error as TransportError {
        guard case .httpStatus(let e) = error, e.status == 400, let refused = deltaFrom else { throw error }
        // The server does not know the version held (its history was reset, or the database
        // came from another server).
        report.notes.append("the server refused a delta from \(refused) (\(e)); asked for full data instead")
        deltaFrom = nil
        head = try fullData(download)
      }
      if head.isDelta, let held = deltaFrom, let problem = head.deltaProblem(held: held) {
        report.notes.append("asked for a delta from \(held); the server sent \(problem); asked for full data instead")
        report.count(download)
        download.removeFinished()
        download = Download(path: downloadPath(), style: .platform, resume: manifest.download.resume)
        deltaFrom = nil
        head = try fullData(download)
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
    // Full data is loaded while it downloads (docs/network.md, "Loading while downloading"):
    // a second thread reads the part as it grows, in a transaction that commits only once
    // the download is finished and verified. Members of a parallel group load after their
    // download, so that their loads, one at a time, never hold a transaction open over one;
    // so do loads into a store that does not load while downloading (`loadsWhileDownloading`).
    let growing = deltaFrom == nil && !inGroup && store.loadsWhileDownloading ? GrowingFile() : nil
    let answer = Mutex<(head: PlatformClient.AnswerHead, report: StepReport)?>(nil)
    let loading = showLoadProgress(store)
    defer { loading?.stop() }
    /// Loads the answer in `download` in one transaction with the step's checkpoint; from its
    /// part as it arrives with `growing`. The answer's head and the step's report so far are
    /// read from `answer` once the rows are read (the download has finished by then).
    func load(_ download: Download, delta: Bool, growing: GrowingFile?) throws -> LoadResult {
      try loadAnswer(options, scheme, into: store, download, delta: delta, growing: growing) {
        guard let kept = answer.withLock({ $0 }) else {
          // `downloaded` keeps it before the download finishes, and the load reaches the
          // answer's end only after that (`GrowingFile.finish()`).
          preconditionFailure("the answer's head was read before its download ended")
        }
        return kept
      }
    }
    /// Keeps the answer's head and the step's report for `load`, once the download is done.
    func downloaded(_ head: PlatformClient.AnswerHead) {
      var finished = report
      finished.attempts = attempts
      answer.withLock { $0 = (head, finished) }
    }

    /// Whether the tables already hold the answer `head` describes, as `reader` sees them:
    /// loading it would rewrite every row as it is.
    func holds(_ head: PlatformClient.AnswerHead, in reader: any TargetStore) throws -> Bool {
      try !head.isDelta && !context.fresh
        && reader.holdsAnswer(
          AnswerInfo(contentVersion: head.contentVersion, etag: head.etag, cacheHash: head.cacheHash), scheme: scheme,
          params: options.params)
    }

    var head: PlatformClient.AnswerHead
    var streamed: Result<LoadResult, any Error>?
    let unchanged: Bool
    if let growing {
      download.growing = growing
      var fetched: (head: PlatformClient.AnswerHead, unchanged: Bool)?
      let loaded = try loadWhileDownloading(growing, load: { [download] in try load(download, delta: false, growing: growing) }) {
        let head = try fetch(&download)
        downloaded(head)
        CrashPoint.reach("downloaded:\(step.id)")
        // The load's thread holds `store`: another connection reads what the tables hold.
        // An answer the tables hold already is not loaded: what was read of it rolls back.
        let unchanged = try holds(head, in: openStore())
        fetched = (head, unchanged)
        return !unchanged
      }
      guard let fetched else { throw HandOverError(description: "the download ended without the answer's head") }
      (head, unchanged) = fetched
      streamed = loaded.result
      if loaded.restarted {
        // What was read may belong to another answer: the finished one loads from its start.
        report.notes.append("the download started the answer again from byte 0; it was loaded once finished")
      }
    } else {
      head = try fetch(&download)
      downloaded(head)
      CrashPoint.reach("downloaded:\(step.id)")
      unchanged = try holds(head, in: store)
    }
    if download.bytesResumed > 0 && download.bytesReceived == 0 {
      report.notes.append("the answer an earlier run downloaded (\(download.bytesResumed) bytes) is unchanged; not downloaded again")
    } else {
      if download.bytesResumed > 0 { report.notes.append("resumed a partial download at byte \(download.bytesResumed)") }
      report.notes += download.notes
    }
    // Kept only when the tables are still as dray loaded them (asked again in the write
    // transaction that keeps them); otherwise the finished answer loads.
    if unchanged, try keepUnchanged(scheme, options, head, store, attempts, &report) {
      download.removeFinished()
      return
    }

    let result: LoadResult
    do {
      result = try streamed?.get() ?? load(download, delta: head.isDelta, growing: nil)
    } catch var error as LoadError where !context.cancellation.isCancelled {
      // The answer on disk cannot be loaded: never keep it to be reused. One that an earlier
      // run or attempt left (only its size was confirmed) may have been damaged on disk, so
      // it is fetched once more from byte 0; a fresh answer that fails is the server's.
      download.removeFinished()
      guard download.bytesResumed > 0 else {
        error.message +=
          (head.unexpectedKind.map { " (the server sent it as \($0))" } ?? "")
          + "; the answer was discarded, so the next run downloads it again"
        throw error
      }
      report.notes = report.notes.filter { !$0.hasPrefix("the answer an earlier run downloaded") }
      report.notes.append(
        "the answer an earlier run downloaded (\(download.bytesResumed) bytes) could not be loaded (\(error)); it was discarded and downloaded again"
      )
      download = Download(path: downloadPath(), style: .platform, resume: false)
      head = try fetch(&download)
      downloaded(head)
      report.notes += download.notes
      do {
        result = try load(download, delta: head.isDelta, growing: nil)
      } catch var again as LoadError where !context.cancellation.isCancelled {
        download.removeFinished()
        again.message +=
          (head.unexpectedKind.map { " (the server sent it as \($0))" } ?? "")
          + "; the answer was discarded, so the next run downloads it again"
        throw again
      }
    }
    if let deltaFrom, !head.isDelta {
      report.notes.append("asked for a delta from \(deltaFrom); the server sent full data")
    }
    download.removeFinished()
    noteLoaded(result, head: head, deltaFrom: deltaFrom, &report)
  }

  /// The resource's scheme: the one the store keeps, else the platform's (`client.schemes`).
  /// - Throws: `StepError.resourceNotFound` for a resource the platform does not list.
  private func scheme(
    of resource: String, in store: any TargetStore, client: PlatformClient, record: @escaping (Attempt) -> Void
  ) throws -> ResourceScheme {
    if let kept = try store.scheme(for: resource) { return kept }
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
  private func loadAnswer(
    _ options: TableStreamStep, _ scheme: ResourceScheme, into store: any TargetStore, _ download: Download, delta: Bool,
    growing: GrowingFile?, answer: () -> (head: PlatformClient.AnswerHead, report: StepReport)
  ) throws -> LoadResult {
    // A part that is still empty opens no transaction until its first bytes come.
    if let growing { _ = try growing.waitForBytes(after: 0) }
    return try context.databaseWrites.withLock { _ in
      try store.write { transaction in
        let result = try transaction.load(
          file: download.path, growing: growing, scheme: scheme, params: options.params, delta: delta,
          cancellation: context.cancellation
        ) {
          let head = answer().head
          return AnswerInfo(contentVersion: head.contentVersion, etag: head.etag, cacheHash: head.cacheHash)
        }
        var done = answer().report
        for table in scheme.outputs {
          let name = store.naming.physicalName(resource: scheme.name, table: table.name, params: options.params)
          done.rows[name] = try transaction.rowCount(ofTable: name)
          done.tables.append(name)
        }
        if let failed = try Expectations.audit(options.expect, tables: done.tables, in: transaction) {
          // Rolled back with the load; the answer is never reused: the next run asks again.
          download.removeFinished()
          throw failed
        }
        try transaction.record(checkpoint(done, status: .succeeded))
        CrashPoint.reach("before-commit:\(step.id)")
        return result
      }
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
