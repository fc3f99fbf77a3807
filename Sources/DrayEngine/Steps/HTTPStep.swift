internal import DrayJSON
internal import DrayModel
internal import DrayRecords
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Synchronization

extension StepRunner {
  /// `http`: calls any HTTP API, page by page when it paginates; saves each answer as is
  /// (`output`) and/or loads its records into a table (`load`). docs/http.md.
  ///
  /// Each page streams to a resumable download (`Range`/`If-Range`), retried under the
  /// step's policy and `on_status` (`fetchPages`). With `load`, the page's records go into a
  /// staging table (`RecordStaging`: the job's SQLite database, or beside a server database a
  /// local SQLite file, `openStagingStore`) in one transaction with the page's entry in the
  /// page ledger (see `PageLedger`), read from the part as it arrives when one pass reads
  /// them (`loadWhileDownloading`; `RecordReader.readsInOnePass`) and committed once the
  /// download is verified, so a killed run resumes at the page after the last committed
  /// one. When the last page is in, one transaction of the target database copies the
  /// staged records in (`StoreTransaction.stage`), writes them by `load.write`, checks
  /// `load.expect` (`Expectations.audit`) and records the step's checkpoint and kept cursor
  /// (`publishStaged`), so readers never see a half-loaded table, nor one that fails its
  /// expectations (whose staged pages are then dropped). A `304 Not Modified` keeps the
  /// table as it is (`keepNotModified`).
  func runHTTP(_ options: HTTPStep, _ report: inout StepReport) throws {
    if !options.tls.verify && options.baseURL.lowercased().hasPrefix("https://") {
      console.warn(
        "TLS certificate verification is OFF for \(options.baseURL) (steps.\(step.id).http.tls.verify: false); anyone on the path can read and change this step's traffic",
        step: step.id)
    }
    let run = try startHTTP(options, &report)
    let pages: FetchedPages
    do {
      pages = try fetchPages(options, run, &report)
    } catch {
      // A `freeze` fails the same records again: the next run fetches every page anew.
      if run.contract?.froze == true, let staging = run.staging {
        try context.databaseWrites.withLock { _ in try dropStaged(run, staging) }
      }
      throw error
    }
    report.bytes = pages.progress.bytes
    report.pages = pages.progress.pages
    report.records = pages.progress.rows
    if pages.unchanged, let load = options.load, let validators = run.validators {
      return try keepNotModified(load, validators, sent: pages.sentValidators, &report)
    }
    try noteFetched(options, run, pages, &report)
    if let load = options.load, let staging = run.staging, let target = run.target {
      try publishStaged(load, run, staging: staging, target: target, pages, &report)
    } else {
      if let ledger = run.ledger { try ledgerTransaction(ledger) { try ledger.clear(in: $0) } }
      try recordCheckpoint(report, status: .succeeded)
    }
  }

  /// What a run of an `http` step works with, from its first page to its publishing
  /// (`startHTTP`).
  struct HTTPRun {
    /// Where the pages' files go (with `output`).
    let folder: JobFolder?
    /// Where the records are staged (with `load`).
    let staging: (any RecordStaging)?
    /// The database the records are published into (with `load`).
    let target: (any TargetStore)?
    /// Where the pages committed are kept (with `load` or `paginate`).
    let ledger: PageLedger?
    /// The name of the step's staging table (`RecordTableNames.staging`).
    let stagingTable: String
    let cursors: IncrementalRun?
    /// Where the validators of the answer the step last published are kept
    /// (`AnswerValidators.apply`).
    let validators: AnswerValidators.Ledger?
    /// Where the pages start: the progress a resumed run saved, or the first page.
    let start: PageLedger.Progress
    /// The load's data contract, judging each record before it is staged (with `load`).
    let contract: RecordContract?
    /// The name of the step's staging table of quarantined records (`Quarantine.staging`).
    let quarantineStaging: String
  }

  /// What the pages of a run came to (`fetchPages`).
  struct FetchedPages {
    var progress: PageLedger.Progress
    /// The URL of the first page this run fetched.
    let firstURL: String
    /// The preconditions sent (`AnswerValidators`), nil when none were.
    var sentValidators: AnswerValidators?
    /// The server answered `304 Not Modified`.
    var unchanged = false
    /// The head of the last page's answer.
    var lastHeaders = HTTPHeaders()
    /// `paginate.max_pages` stopped the pull while the server offered more.
    var stoppedEarly = false
    /// The status that made this run's first page empty (a 204, or one `on_status` names
    /// `empty`), for the message of a load without records.
    var emptyStatus: Int?
    /// The declared columns whose `from` matched no record of this run's pages (nil before a
    /// page with records), for a note: a misspelt one would have failed its page
    /// (docs/http.md, "A misspelt selector").
    var unmatchedColumns: [HTTPStep.Column]?
    /// The run resumed pages an earlier run committed (whose records it did not read).
    let resumed: Bool
    /// The digest of the last page's records (`PageCommit.digest`).
    var lastDigest: [UInt8]?
  }

  /// What one page's commit came to (`commitPage`).
  struct PageCommit: Sendable {
    var records: Int
    /// The progress once the page committed: its bytes and records, and the next page.
    var progress: PageLedger.Progress
    /// The run's unmatched columns narrowed by this page's records; nil for a page without
    /// records, which says nothing.
    var unmatched: [HTTPStep.Column]?
    /// The SHA-256 of the page's records as read, for `offset` and `page` pagination (nil for
    /// other pagination and for a page without records): the same records on the next
    /// page mean the server ignores the page's parameter.
    var digest: [UInt8]?
  }

  /// Opens what the step's run works with, and resumes the pages an earlier run of the same
  /// lineage committed (`PageLedger.resumable`) or clears them.
  private func startHTTP(_ options: HTTPStep, _ report: inout StepReport) throws -> HTTPRun {
    // Page files stay inside the job folder (`JobFolder`).
    let folder = try options.output.map { _ in try jobFolder() }
    let staging = options.load != nil ? try openStagingStore(records: true) : nil
    let target = options.load != nil ? try openStore() : nil
    let ledger: PageLedger? = try {
      guard options.load != nil || options.paginate != nil else { return nil }
      // The manifest's secrets and those learnt since (tokens): no stored link holds one.
      return PageLedger(
        staging: try staging ?? openStagingStore(records: false), job: manifest.job, stepID: stagingName, lineage: context.lineage,
        fingerprint: step.fingerprint(in: manifest), redactor: urlRedactor, query: options.query)
    }()
    let stagingTable = RecordTableNames.staging(job: manifest.job, step: stagingName)
    let quarantineStaging = Quarantine.staging(job: manifest.job, step: stagingName)
    // The table as it stands when the step starts is what the contract checks records against:
    // for a partition, the partitioned step's table (not the table its records gather in).
    let contract = try target.flatMap { target in
      try options.load.map { load in
        let table = partitionedStepID.flatMap { id in manifest.steps.first { $0.id == id }?.kind.httpLoad?.table } ?? load.table
        return RecordContract(
          load: load, table: try context.databaseWrites.withLock { _ in try target.write { try $0.columnTypes(ofTable: table) } })
      }
    }
    let cursors = try staging.flatMap { staging in
      try options.incremental.map { incremental in
        var kept = try staging.cursor(job: manifest.job, stepID: step.id)
        // The published value and its records' digests are the target's; what is staged stays
        // with the staged pages.
        if let target {
          let published = try target.cursor(job: manifest.job, stepID: step.id)
          kept.value = published.value
          kept.boundary = published.boundary
        }
        let run = try IncrementalRun(options: incremental, kept: kept, job: manifest.job, stepID: step.id, fresh: context.fresh)
        if let target, let load = options.load, load.write == .append {
          let columns = try context.databaseWrites.withLock { _ in try target.write { try $0.columnTypes(ofTable: load.table) } }
          try run.readKeptRows(from: target, table: load.table, columns: columns.map(\.name))
        }
        return run
      }
    }
    let since = cursors?.sent.text
    var start = PageLedger.Progress(next: PageLedger.Next(url: firstURL(options, since: since), since: since))
    if let ledger, let saved = try ledger.resumable() {
      start = saved
      report.notes.append("resumed after page \(saved.pages) (\(HumanUnits.counted(saved.rows, "row")) already in)")
      console.info("resuming after page \(saved.pages)", step: step.id)
    } else if let ledger {
      try ledgerTransaction(ledger) { transaction in
        if options.load != nil {
          try ledger.staging.table(stagingTable).drop()
          try ledger.staging.table(quarantineStaging).drop()
        }
        try ledger.clear(in: transaction)
        try cursors?.start(in: transaction)
      }
    }
    if let cursors {
      console.info("incremental: sending \(cursors.options.param)=\(cursors.sent.text)", step: step.id)
      report.notes.append("sent \(cursors.options.param)=\(cursors.sent.text)")
    }
    // Preconditions from the answer the step last published (`AnswerValidators`), kept by
    // the database it publishes into.
    let validators = target.flatMap { target in
      AnswerValidators.apply(to: options) && partition == nil
        ? AnswerValidators.Ledger(store: target, job: manifest.job, stepID: step.id, fingerprint: step.fingerprint(in: manifest))
        : nil
    }
    return HTTPRun(
      folder: folder, staging: staging, target: target, ledger: ledger, stagingTable: stagingTable, cursors: cursors,
      validators: validators, start: start, contract: contract, quarantineStaging: quarantineStaging)
  }

  /// Fetches the step's pages from where `run` starts, committing each (`commitPage`), until
  /// the last one, `paginate.max_pages`, or a `304 Not Modified`. Sets `report`'s attempts
  /// and wire bytes, and notes.
  /// - Throws: `HTTPStepError`, `TransportError`, `RecordError` and the databases' errors.
  private func fetchPages(_ options: HTTPStep, _ run: HTTPRun, _ report: inout StepReport) throws -> FetchedPages {
    let client = HTTPClient(cancellation: context.cancellation)
    var attempts: [Attempt] = []
    defer { report.attempts = attempts }
    var pages = FetchedPages(progress: run.start, firstURL: run.start.next?.url ?? "", resumed: run.start.pages > 0)
    pages.sentValidators = try {
      // `--fresh` sends none, and keeps those of the answer it loads; nor does a table
      // changed since it was loaded (a 304 would keep the change).
      guard let validators = run.validators, let load = options.load, !context.fresh, run.start.pages == 0,
        try validators.store.isIntact(table: load.table)
      else { return nil }
      return try validators.read(url: pages.firstURL)
    }()
    var fetchedURLs: Set<String> = []
    while let next = pages.progress.next {
      if let maxPages = options.maxPages, pages.progress.pages >= maxPages {
        pages.stoppedEarly = true
        break
      }
      // A cursor sent in the body asks for another page at the same URL.
      let pageKey = next.url + (next.cursor.map { "\u{0}" + $0 } ?? "")
      guard fetchedURLs.insert(pageKey).inserted else {
        throw HTTPStepError.paginationLoop("the server led back to \(next.url), a page fetched earlier in this run")
      }
      let page = pages.progress.pages + 1
      // The page's file is checked before its request is sent: a path refused after a POST
      // would have sent it for nothing, again on every rerun.
      var pagePath: String?
      if let output = options.output, let folder = run.folder {
        pagePath = try folder.output(output.replacing("{page}", with: String(page)), role: "output")
      }
      let (fetched, streamed) = try fetchAnswer(options, run, page: page, next: next, pages, client, &report) { attempts.append($0) }
      report.wireBytes += fetched.wireBytes
      if fetched.status == 304 {
        pages.progress.bytes += fetched.bytes
        if let load = options.load, let validators = run.validators, try !validators.store.isIntact(table: load.table) {
          // The table changed while the request was out: the body is needed after all.
          report.notes.append("table \(load.table) changed during the conditional request; asked again without validators")
          pages.sentValidators = nil
          fetchedURLs.remove(pageKey)
          continue
        }
        pages.unchanged = true
        break
      }
      if page == 1 { pages.emptyStatus = fetched.status }
      pages.lastHeaders = fetched.headers
      let commit = try finishPage(options, run, page: page, next: next, pages, fetched, savedAt: pagePath, streamed: streamed)
      CrashPoint.reach("page-committed:\(step.id):\(page)")
      pages.progress = commit.progress
      if let unmatched = commit.unmatched { pages.unmatchedColumns = unmatched }
      pages.lastDigest = commit.digest
      if options.paginate != nil {
        console.info(
          "page \(page): \(HumanUnits.counted(commit.records, "record"))\(fetched.status.map { " (HTTP \($0): empty)" } ?? "")",
          step: step.id)
      }
    }
    return pages
  }

  /// Fetches page `page`. A page whose records are read in one pass loads while it
  /// downloads (docs/network.md, "Loading while downloading"), except in a parallel group
  /// (whose loads, one at a time, never hold a transaction open over a download) and when
  /// its answer is saved too (a kept file is flushed to disk before its page commits).
  /// - Returns: the page's answer, and the result of its commit when it loaded while it
  ///   downloaded (nil when it did not, or started again from byte 0).
  private func fetchAnswer(
    _ options: HTTPStep, _ run: HTTPRun, page: Int, next: PageLedger.Next, _ pages: FetchedPages, _ client: HTTPClient,
    _ report: inout StepReport, record: (Attempt) -> Void
  ) throws -> (FetchedPage, Result<PageCommit, any Error>?) {
    let path = downloadPath((claim.map { Joining.tag($0) + "." } ?? "") + "page-\(page)")
    let conditions = pages.sentValidators?.preconditions ?? []
    guard options.load != nil && pageReader(options, run).readsInOnePass && options.output == nil && !inGroup else {
      let fetched = try fetchPage(
        options, next: next, page: page, path: path, growing: nil, client: client, conditions: conditions, record: record)
      return (fetched, nil)
    }
    let growing = GrowingFile()
    /// The page's answer once its download ended, for its commit on the load's thread.
    let answer = Mutex<FetchedPage?>(nil)
    var arrived: FetchedPage?
    let loaded = try loadWhileDownloading(
      growing,
      load: {
        // A page that never begins (an error, a 304) opens no transaction.
        _ = try growing.waitForBytes(after: 0)
        return try commitPage(options, run, file: path, growing: growing, status: nil, page: page, next: next, after: pages) {
          guard let fetched = answer.withLock({ $0 }) else {
            throw HandOverError(description: "page \(page): the answer was read before its download ended")
          }
          return fetched
        }
      }
    ) {
      let got = try fetchPage(options, next: next, page: page, path: path, growing: growing, client: client, conditions: conditions) {
        record($0)
      }
      answer.withLock { $0 = got }
      arrived = got
      return got.status == nil && got.file != nil
    }
    if loaded.restarted {
      report.notes.append(
        (options.paginate == nil ? "" : "page \(page): ") + "the download started the answer again from byte 0; it was loaded once finished"
      )
    }
    guard let arrived else { throw HandOverError(description: "page \(page): the download ended without an answer") }
    return (arrived, loaded.result)
  }

  /// Saves and commits page `page` once fetched (a `304` aside): refuses a `204`, or a status
  /// `on_status` names `empty`, on a page the page before promised (`StepRunner.promise`), places the answer at `savedAt` (`output`), and commits its records unless
  /// they were `streamed` while it downloaded.
  private func finishPage(
    _ options: HTTPStep, _ run: HTTPRun, page: Int, next: PageLedger.Next, _ pages: FetchedPages, _ fetched: FetchedPage,
    savedAt pagePath: String?, streamed: Result<PageCommit, any Error>?
  ) throws -> PageCommit {
    // An empty status (a 204, or one `on_status` names `empty`) on a promised page.
    if let status = fetched.status, page > 1, let promise = StepRunner.promise(options, page: page - 1) {
      let (said, what) =
        status == 204 ? ("HTTP 204 No Content", "a 204") : ("HTTP \(status), which on_status names empty", "an empty status")
      throw HTTPStepError.badAnswer(
        page: page, url: next.url,
        message:
          "\(said), though \(promise); \(what) cannot say whether more pages follow, so nothing was published and the next run asks for this page again"
      )
    }
    // Save the answer first: a kill before the page's commit fetches it again and
    // overwrites the same file.
    var file = fetched.file
    if let path = pagePath, let folder = run.folder, let answer = fetched.file {
      try folder.place(answer, at: path)
      file = path
    }
    let commit = try withPageContext(page: page, url: next.url, options: options, contentType: fetched.contentType) {
      try streamed?.get()
        ?? commitPage(options, run, file: file, growing: nil, status: fetched.status, page: page, next: next, after: pages) { fetched }
    }
    // The answer (unless placed at `output`) and its sidecar are no longer needed.
    if let answer = fetched.file { Download.removeFinished(at: answer) }
    return commit
  }

  /// The reader of the step's answers: its records (with `load`) and the values pagination
  /// reads from the body.
  private func pageReader(_ options: HTTPStep, _ run: HTTPRun) -> RecordReader {
    var probes: [RecordSelector] = []
    switch options.paginate {
    case .next(let selector)?: probes.append(selector)
    case .cursor(_, let from)?, .bodyCursor(let from, _)?: probes.append(from)
    default: break
    }
    if let more = options.more { probes.append(more) }
    var reader = RecordReader(
      format: options.format, records: options.load?.records, columns: options.load?.columns, probes: probes,
      keepingExtra: run.contract?.keepsExtraFields ?? false)
    reader.cursorColumn = options.incremental?.cursor.tokens.first
    return reader
  }

  /// Reads page `page` and commits what it holds with the ledger's new entry: its records
  /// into the staging table (with `load`) and the cursor they raise, in one transaction.
  /// - Parameters:
  ///   - growing: the page's part as its download writes it, read as it arrives (with
  ///     `load`, when `pageReader(options, run).readsInOnePass`); the transaction commits only
  ///     after the download finished and was verified (`GrowingFile`).
  ///   - status: the status that made the page empty (no file), nil for a page with an answer.
  ///   - pages: the pages before this one.
  ///   - fetched: the page's answer, asked once the records are read (for a page read as it
  ///     arrives, the download has finished by then).
  /// - Throws: `RecordError`, `GrowingFile.Stop`, the staging database's and the
  ///   pagination's errors.
  private func commitPage(
    _ options: HTTPStep, _ run: HTTPRun, file: String?, growing: GrowingFile?, status: Int?, page: Int, next current: PageLedger.Next,
    after pages: FetchedPages, fetched: () throws -> FetchedPage
  ) throws -> PageCommit {
    let reader = pageReader(options, run)
    // The first pass over a finished page (its columns, when none are declared) needs no
    // database: read before waiting for `databaseWrites`, so partitions do it side by side.
    let inferred = try file.flatMap { file in
      growing == nil && options.load != nil && run.contract != nil && run.ledger != nil ? try reader.inferredColumns(file: file) : nil
    }

    func readAndAdvance(_ table: (any StagedTable)?, _ transaction: (any StagingTransaction)?) throws -> PageCommit {
      var summary = AnswerSummary()
      var lastRecord: Record?
      var unmatched: [HTTPStep.Column]?
      let hasher = StepRunner.guessesPages(options) ? SHA256.Hasher() : nil
      if let file, let table, let load = options.load, let contract = run.contract, let ledger = run.ledger {
        var checks = RecordChecks(load: load, cursors: run.cursors)
        var number = 0
        let quarantine = Quarantined(
          table: try ledger.staging.table(run.quarantineStaging), runID: context.runID, step: partitionedStepID ?? step.id,
          partition: partition == nil ? nil : step.id, url: storedURL(current.url))
        summary = try reader.load(
          file: file, growing: growing, inferred: inferred,
          prepare: { columns in
            try staging { try table.prepare(contract.staged(columns) + checks.extraColumns, widen: options.load?.columns == nil) }
          },
          each: {
            lastRecord = $0
            number += 1
            hasher?.update(RecordContract.json($0) + "\n")
            let record = $0
            let digest = RecordDigest(record)
            checks.noteBoundary(record, digest: digest.value)
            // A record at the kept cursor that an earlier run handled (docs/http.md, "Cursor
            // boundaries"): not appended, nor quarantined, again.
            let verdict = try contract.apply(record, number: number)
            if let cursors = run.cursors, cursors.isRemembered(record, digest: digest.value) {
              if !cursors.passOver(verdict, appending: load.write == .append) { return checks.notice(record) }
            } else if !verdict.findings.isEmpty {
              try quarantine.add(record, verdict)
            }
            guard let kept = verdict.record else { return checks.notice(record) }
            if !verdict.widened.isEmpty { try staging { try table.prepare(verdict.widened.map { ($0.name, $0.type) }, widen: true) } }
            let checked = try checks.check(kept)
            if options.load?.write == .append, run.cursors?.isRepeat(checked) == true { return }
            try staging { try table.insert(checked.map { ($0.name, $0.value.sqlValue) }) }
          })
        try checks.finish()
        if summary.records > 0 {
          // The columns no record of this run matched, narrowed to those this page's did not.
          let names = Set(summary.unmatchedColumns.map(\.name))
          unmatched = pages.unmatchedColumns.map { $0.filter { names.contains($0.name) } } ?? summary.unmatchedColumns
        }
        if let cursors = run.cursors, let transaction {
          try cursors.stage(checks.highest, boundary: checks.boundary, seen: checks.keys, in: transaction)
        }
      } else if let file, !reader.probes.isEmpty {
        summary = try reader.read(file: file) { _ in }
      } else if file == nil, let table, let load = options.load, let columns = load.columns {
        try table.prepare(columns.map { ($0.name, $0.type) } + RecordChecks(load: load, cursors: nil).extraColumns, widen: false)
      }
      let digest = summary.records > 0 ? hasher?.finish() : nil
      if let digest, digest == pages.lastDigest {
        throw HTTPStepError.paginationLoop(
          "page \(page) (\(current.url)) holds the same \(HumanUnits.counted(summary.records, "record")) as page \(page - 1): "
            + "the server ignores \(StepRunner.pageParameter(options)); check the parameter's name against the API's documentation")
      }
      let next =
        status == nil
        ? try nextPage(options, current: current, summary: summary, lastRecord: lastRecord, headers: try fetched().headers) : nil
      var progress = pages.progress
      progress.pages = page
      progress.bytes += try fetched().bytes
      progress.rows += summary.records
      progress.next = next
      if let transaction { try run.ledger?.save(progress, in: transaction) }
      return PageCommit(records: summary.records, progress: progress, unmatched: unmatched, digest: digest)
    }

    guard let ledger = run.ledger else { return try readAndAdvance(nil, nil) }
    return try ledgerTransaction(ledger) { transaction in
      try readAndAdvance(options.load == nil ? nil : ledger.staging.table(run.stagingTable), transaction)
    }
  }

  /// Runs `body`, turning a refusal of the staging table (`StagingRefusal`) into the
  /// `RecordError` of the page's records.
  private func staging<T>(_ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let refusal as StagingRefusal {
      throw RecordError(refusal.message)
    }
  }

  /// Runs `body` in one transaction of the ledger's staging database, one writer at a time
  /// (`context.databaseWrites`).
  func ledgerTransaction<T: Sendable>(_ ledger: PageLedger, _ body: (any StagingTransaction) throws -> T) throws -> T {
    try context.databaseWrites.withLock { _ in try ledger.staging.write { try body($0) } }
  }

  /// Runs `body`, naming the page (`page 2 (URL): `) in any error reading its answer or
  /// following its next link or cursor.
  private func withPageContext<T>(page: Int, url: String, options: HTTPStep, contentType: String?, _ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as RecordError {
      var message = error.message
      if let contentType {
        let type = contentType.lowercased()
        if options.format == .json && type.contains("xml") {
          message += "; the server says it is \(contentType): set format: xml"
        } else if options.format == .xml && type.contains("json") {
          message += "; the server says it is \(contentType): set format: json"
        }
      }
      throw HTTPStepError.badAnswer(page: options.paginate == nil ? nil : page, url: url, message: message)
    } catch HTTPStepError.badPagination(let message) {
      throw HTTPStepError.badPagination("page \(page) (\(url)): \(message)")
    }
  }
}

/// Names of the tables an `http` step works with.
enum RecordTableNames {
  /// The staging table of a loading step: `_dray_http__<job>__<step>`.
  static func staging(job: String, step: String) -> String { "_dray_http__\(job)__\(step)" }
}

/// Failures of the `http` step that are not transport or SQLite errors.
enum HTTPStepError: Error, CustomStringConvertible {
  /// An answer that cannot be read as the step says (not JSON, a records selector that
  /// selects nothing, ...).
  case badAnswer(page: Int?, url: String, message: String)
  /// A next link or cursor that cannot be followed; once out of the page's reading, its
  /// message starts `page 2 (URL): ` (`withPageContext`).
  case badPagination(String)
  /// The server sent the same page again.
  case paginationLoop(String)
  /// An `exclusive` step whose kept cursor has no value just below it to send
  /// (`HTTPStep.Incremental.sent(kept:)`); nothing was sent.
  case cursorBoundary(String)
  /// A load without records that would empty a table holding rows (`load.allow_empty`).
  case emptyAnswer(String)
  /// More records set aside or trimmed than `load.quarantine` allows.
  case quarantineFull(String)
  /// The database refused a staged value for the data's sake (`DatabaseFailure.refusesData`):
  /// its column's type does not take it. The staged pages were dropped.
  case refusedData(String)

  var code: String {
    switch self {
    case .badAnswer: "bad_answer"
    case .badPagination: "bad_pagination"
    case .paginationLoop: "pagination_loop"
    case .cursorBoundary: "cursor_boundary"
    case .emptyAnswer: "empty_answer"
    case .quarantineFull: "quarantine_full"
    case .refusedData: "load_error"
    }
  }

  var description: String {
    switch self {
    case .badAnswer(let page?, let url, let message): "page \(page) (\(url)): \(message)"
    case .badAnswer(nil, let url, let message): "the answer of \(url): \(message)"
    case .badPagination(let message), .emptyAnswer(let message), .quarantineFull(let message), .refusedData(let message),
      .cursorBoundary(let message):
      message
    case .paginationLoop(let message): "\(message); stopping so as not to fetch pages forever"
    }
  }
}

extension StepKind {
  /// The `load` of an `http` step; nil for other kinds.
  var httpLoad: HTTPStep.Load? { if case .http(let http) = self { http.load } else { nil } }
}

extension RecordValue {
  /// The value as a staging table takes it (`StagedTable.insert`).
  var sqlValue: SQLValue {
    switch self {
    case .null: .null
    case .integer(let value): .integer(value)
    case .boolean(let value): .integer(value ? 1 : 0)
    case .real(let value): .real(value)
    case .decimal(let text): .real(Double(text) ?? 0)
    case .text(let value), .bigInteger(let value): .text(value)
    }
  }
}
