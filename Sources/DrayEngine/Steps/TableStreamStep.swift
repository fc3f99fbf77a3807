internal import DrayModel
internal import DrayPlatform
internal import DrayStore
internal import DrayTransport
internal import Foundation

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

    var scheme = try store.scheme(for: options.resource)
    if scheme == nil {
      let schemes = try client.schemes(policy: step.retry, record: recording("schema", record))
      guard let found = schemes.first(where: { $0.name == options.resource }) else {
        throw StepError.resourceNotFound(resource: options.resource, available: schemes.map(\.name))
      }
      scheme = found
    }
    guard let scheme else { return }

    // A delta starts from the version the tables hold; without one (first load, a table
    // recreated, versions that disagree) the server is asked for full data.
    var deltaFrom = options.delta ? try store.deltaBase(scheme: scheme, params: options.params) : nil
    var download = Download(path: downloadPath(), style: .platform, resume: manifest.download.resume)
    let url = client.session.url("rpc/\(options.resource)/")
    let transactionID = options.transaction ? (download.existingSidecar(for: url)?.transactionID ?? UUID().uuidString.lowercased()) : nil
    /// Asks again for full data, as a new transaction.
    func fullData(_ download: Download) throws -> PlatformClient.AnswerHead {
      try client.rpc(
        resource: options.resource, params: options.params, delta: nil,
        transactionID: options.transaction ? UUID().uuidString.lowercased() : nil, reads: true, download: download, policy: step.retry,
        record: record)
    }
    /// Fetches the answer into `download`: a delta from `deltaFrom` when there is one, else
    /// full data. A delta the server refuses (400), or one that does not start at `deltaFrom`
    /// and move forward, is replaced by full data (docs/store.md); a delta sent for full
    /// data is refused. `report.bytes` counts every byte received.
    func fetch(_ download: inout Download) throws -> PlatformClient.AnswerHead {
      var head: PlatformClient.AnswerHead
      do {
        head = try client.rpc(
          resource: options.resource, params: options.params, delta: deltaFrom, transactionID: transactionID, reads: true,
          download: download, policy: step.retry, record: record)
      } catch TransportError.httpStatus(let e) where e.status == 400 && deltaFrom != nil {
        // The server does not know the version held (its history was reset, or the database
        // came from another server).
        report.notes.append("the server refused a delta from \(deltaFrom!) (\(e)); asked for full data instead")
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
    var head = try fetch(&download)
    CrashPoint.reach("downloaded:\(step.id)")
    if download.bytesResumed > 0 && download.bytesReceived == 0 {
      report.notes.append("the answer an earlier run downloaded (\(download.bytesResumed) bytes) is unchanged; not downloaded again")
    } else {
      if download.bytesResumed > 0 { report.notes.append("resumed a partial download at byte \(download.bytesResumed)") }
      report.notes += download.notes
    }

    if !head.isDelta, !context.fresh,
      try store.holdsAnswer(
        AnswerInfo(contentVersion: head.contentVersion, etag: head.etag, cacheHash: head.cacheHash), scheme: scheme,
        params: options.params)
    {
      // Loading it would rewrite every row as it is.
      try keepUnchanged(scheme, options, head, store, attempts, &report)
      download.removeFinished()
      return
    }

    let loading = showLoadProgress(store)
    defer { loading?.stop() }
    func load(_ download: Download, _ head: PlatformClient.AnswerHead, _ finished: StepReport) throws -> LoadResult {
      let stepAttempts = attempts
      return try context.databaseWrites.withLock { _ in
        try store.write { transaction in
          let result = try transaction.load(
            file: download.path, scheme: scheme, params: options.params, delta: head.isDelta,
            info: AnswerInfo(contentVersion: head.contentVersion, etag: head.etag, cacheHash: head.cacheHash),
            cancellation: context.cancellation)
          var done = finished
          done.attempts = stepAttempts
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
    let result: LoadResult
    do {
      result = try load(download, head, report)
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
      report.notes += download.notes
      do {
        result = try load(download, head, report)
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
    report.rows = result.rowCounts.reduce(into: [:]) { $0[result.tables[$1.key] ?? $1.key] = $1.value }
    report.tables = result.tables.values.sorted()
    if head.isDelta {
      let inserted = result.inserted.values.reduce(0, +)
      let deleted = result.deleted.values.reduce(0, +)
      report.notes.append(
        "delta \(deltaFrom ?? "?")→\(head.contentVersion ?? "?"): \(HumanUnits.counted(inserted, "row")) inserted, \(deleted) deleted")
    }
    for table in result.skippedTables {
      report.notes.append(
        "the answer holds table '\(table)', which the stored scheme does not list; its rows were skipped (run a schemes step to pick it up)"
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
  /// none is rewritten; the checkpoint commits alone.
  private func keepUnchanged(
    _ scheme: ResourceScheme, _ options: TableStreamStep, _ head: PlatformClient.AnswerHead, _ store: any TargetStore,
    _ attempts: [Attempt], _ report: inout StepReport
  ) throws {
    report.unchanged = true
    report.notes.append(
      "unchanged: every table already holds this answer (ETag \(head.etag ?? ""), Cache-Hash-Value \(head.cacheHash ?? "")); no row rewritten"
    )
    var done = report
    done.attempts = attempts
    try context.databaseWrites.withLock { _ in
      try store.write { transaction in
        for table in scheme.outputs {
          let name = store.naming.physicalName(resource: scheme.name, table: table.name, params: options.params)
          done.rows[name] = try transaction.rowCount(ofTable: name)
        }
        try transaction.record(checkpoint(done, status: .succeeded))
      }
    }
    report.rows = done.rows
  }
}
