internal import DrayJSON
internal import DrayModel
internal import DrayRecords
internal import DraySQLite
internal import DrayTarget
internal import DrayTransport
internal import Foundation
internal import Synchronization

extension StepRunner {
  /// `http`: calls any HTTP API, page by page when it paginates; saves each answer as is
  /// (`output`) and/or loads its records into a table (`load`). docs/http.md.
  ///
  /// Each page streams to a resumable download (`Range`/`If-Range`), retried under the
  /// step's policy and `on_status`. With `load`, the page's records go into a staging table
  /// in one transaction with the page's entry in `_dray_http_pages` (see `PageLedger`), read
  /// from the part as it arrives when one pass reads them (`loadWhileDownloading`;
  /// `RecordReader.readsInOnePass`) and committed once the download is verified, so a
  /// killed run resumes at the page after the last committed one; when the last page is in,
  /// one transaction replaces the table's rows with the staging table's, checks
  /// `load.expect` (`Expectations.audit`) and records the step's checkpoint, so readers
  /// never see a half-loaded table, nor one that fails its expectations (whose staged pages
  /// are then dropped). With a PostgreSQL target the pages are staged in a local SQLite
  /// file (`openStagingStore`) and that last transaction is PostgreSQL's: it copies the
  /// staged records in (`StoreTransaction.stage`) and writes them, the kept cursor and the
  /// checkpoint together.
  func runHTTP(_ options: HTTPStep, _ report: inout StepReport) throws {
    let client = HTTPClient(cancellation: context.cancellation)
    if !options.tls.verify && options.baseURL.lowercased().hasPrefix("https://") {
      console.warn(
        "TLS certificate verification is OFF for \(options.baseURL) (steps.\(step.id).http.tls.verify: false); anyone on the path can read and change this step's traffic",
        step: step.id)
    }
    // Page files stay inside the job folder (`JobFolder`).
    let folder = try options.output.map { _ in try jobFolder() }
    var attempts: [Attempt] = []
    defer { report.attempts = attempts }

    let store = options.load != nil ? try openStagingStore() : nil
    // The database the records are published into, when it is not the staging one.
    let target = try store.flatMap { _ in manifest.database?.postgres == nil ? nil : try openStore() }
    let ledger: PageLedger? = try {
      guard options.load != nil || options.paginate != nil else { return nil }
      // The manifest's secrets and those learnt since (tokens): no stored link holds one.
      var secrets = manifest.redactor
      secrets.add(contentsOf: console.redactor.current)
      let database = try store?.database ?? Database(path: localJournalPath)
      let ledger = PageLedger(
        database: database, job: manifest.job, stepID: step.id, lineage: context.lineage, fingerprint: step.fingerprint(in: manifest),
        redactor: secrets, query: options.query)
      try ledger.createTable()
      return ledger
    }()
    let staging = RecordTableNames.staging(job: manifest.job, step: step.id)

    let cursors = try store.flatMap { store in
      try options.incremental.map { incremental in
        var kept = try store.cursor(job: manifest.job, stepID: step.id)
        // The published value is the target's; what is staged stays with the staged pages.
        if let target { kept.value = try target.cursor(job: manifest.job, stepID: step.id).value }
        return IncrementalRun(options: incremental, kept: kept, job: manifest.job, stepID: step.id, fresh: context.fresh)
      }
    }
    let since = cursors?.sent.text
    var progress = PageLedger.Progress(next: PageLedger.Next(url: firstURL(options, since: since), since: since))
    if let ledger, let saved = try ledger.resumable() {
      progress = saved
      report.notes.append("resumed after page \(saved.pages) (\(HumanUnits.counted(saved.rows, "row")) already in)")
      console.info("resuming after page \(saved.pages)", step: step.id)
    } else if let ledger {
      try ledgerTransaction(ledger, store) { transaction in
        if options.load != nil { try RecordTable(database: ledger.database, name: staging).drop() }
        try ledger.clear()
        if let cursors, let transaction { try cursors.start(in: transaction) }
      }
    }
    if let cursors {
      console.info("incremental: sending \(cursors.options.param)=\(cursors.sent.text)", step: step.id)
      report.notes.append("sent \(cursors.options.param)=\(cursors.sent.text)")
    }

    // Preconditions from the answer the step last published (`AnswerValidators`), kept by
    // the database it publishes into.
    let publishing: (any TargetStore)? = target ?? store
    let validators = publishing.flatMap { publishing in
      AnswerValidators.apply(to: options)
        ? AnswerValidators.Ledger(store: publishing, job: manifest.job, stepID: step.id, fingerprint: step.fingerprint(in: manifest))
        : nil
    }
    let firstURL = progress.next?.url ?? ""
    var sentValidators: AnswerValidators? = try {
      // `--fresh` sends none, and keeps those of the answer it loads; nor does a table
      // changed since it was loaded (a 304 would keep the change).
      guard let validators, let load = options.load, !context.fresh, progress.pages == 0,
        try validators.store.isIntact(table: load.table)
      else { return nil }
      return try validators.read(url: firstURL)
    }()
    var unchanged = false
    var lastHeaders = HTTPHeaders()

    var stoppedEarly = false
    var fetchedURLs: Set<String> = []
    /// The status that made this run's first page empty (a 204, or one `on_status` names
    /// `empty`), for the message of a load without records.
    var emptyStatus: Int?
    /// The declared columns whose `from` matched no record of this run's pages (nil before a
    /// page with records), for a note: a misspelt one would have failed its page
    /// (docs/http.md, "A misspelt selector"). Not told after a resume, whose earlier pages
    /// this run did not read.
    var unmatchedColumns: [HTTPStep.Column]?
    let resumed = progress.pages > 0
    while let next = progress.next {
      if let maxPages = options.maxPages, progress.pages >= maxPages {
        stoppedEarly = true
        break
      }
      // A cursor sent in the body asks for another page at the same URL.
      let pageKey = next.url + (next.cursor.map { "\u{0}" + $0 } ?? "")
      guard fetchedURLs.insert(pageKey).inserted else {
        throw HTTPStepError.paginationLoop("the server led back to \(next.url), a page fetched earlier in this run")
      }
      let page = progress.pages + 1
      // The page's file is checked before its request is sent: a path refused after a POST
      // would have sent it for nothing, again on every rerun.
      var pagePath: String?
      if let output = options.output, let folder {
        pagePath = try folder.output(output.replacing("{page}", with: String(page)), role: "output")
      }
      let answerPath = downloadPath("page-\(page)")
      /// The page's answer once its download ended, for its commit (on the load's thread when
      /// the page loads while it downloads).
      let answer = Mutex<FetchedPage?>(nil)
      /// The progress once this page commits: its bytes and records, and the next page.
      let current = progress
      var committed = progress
      /// `unmatchedColumns` once this page commits.
      var pageUnmatched: [HTTPStep.Column]?
      func advance(_ records: Int, _ next: PageLedger.Next?) -> PageLedger.Progress {
        committed = current
        committed.pages = page
        committed.bytes += answer.withLock { $0!.bytes }
        committed.rows += records
        committed.next = next
        return committed
      }
      /// Narrows the columns no record of this run matched to those this page's records did
      /// not match either (a page without records says nothing).
      func sight(_ summary: AnswerSummary) {
        guard summary.records > 0 else { return }
        let names = Set(summary.unmatchedColumns.map(\.name))
        pageUnmatched = unmatchedColumns.map { $0.filter { names.contains($0.name) } } ?? summary.unmatchedColumns
      }
      /// Reads the page's answer at `file` (as it arrives, with `growing`) and commits it
      /// with the ledger's new entry.
      func commit(_ file: String?, status: Int?, growing: GrowingFile?) throws -> Int {
        try commitPage(
          options, file: file, growing: growing, status: status, headers: { answer.withLock { $0!.headers } }, current: next,
          ledger: ledger, staging: staging, store: store, cursors: cursors, sighted: sight, advance: advance)
      }
      // A page whose records are read in one pass loads while it downloads (docs/network.md,
      // "Loading while downloading"), except in a parallel group (whose loads, one at a time,
      // never hold a transaction open over a download) and when its answer is saved too (a
      // kept file is flushed to disk before its page commits).
      let growing =
        options.load != nil && pageReader(options).readsInOnePass && options.output == nil && !inGroup ? GrowingFile() : nil
      var fetched: FetchedPage
      var streamed: Result<Int, any Error>?
      if let growing {
        var arrived: FetchedPage?
        let loaded = try loadWhileDownloading(
          growing,
          load: {
            // A page that never begins (an error, a 304) opens no transaction.
            _ = try growing.waitForBytes(after: 0)
            return try commit(answerPath, status: nil, growing: growing)
          }
        ) {
          let got = try fetchPage(
            options, next: next, page: page, path: answerPath, growing: growing, client: client,
            conditions: sentValidators?.preconditions ?? []
          ) { attempts.append($0) }
          answer.withLock { $0 = got }
          arrived = got
          return got.status == nil && got.file != nil
        }
        fetched = arrived!
        streamed = loaded.result
        if loaded.restarted {
          report.notes.append(
            (options.paginate == nil ? "" : "page \(page): ")
              + "the download started the answer again from byte 0; it was loaded once finished")
        }
      } else {
        fetched = try fetchPage(
          options, next: next, page: page, path: answerPath, growing: nil, client: client, conditions: sentValidators?.preconditions ?? []
        ) { attempts.append($0) }
        answer.withLock { [fetched] in $0 = fetched }
      }
      report.wireBytes += fetched.wireBytes
      if fetched.status == 304 {
        progress.bytes += fetched.bytes
        if let load = options.load, let validators, try !validators.store.isIntact(table: load.table) {
          // The table changed while the request was out: the body is needed after all.
          report.notes.append("table \(load.table) changed during the conditional request; asked again without validators")
          sentValidators = nil
          fetchedURLs.remove(pageKey)
          continue
        }
        unchanged = true
        break
      }
      if fetched.status == 204, page > 1, let promise = StepRunner.promise(options, page: page - 1) {
        throw HTTPStepError.badAnswer(
          page: page, url: next.url,
          message:
            "HTTP 204 No Content, though \(promise); a 204 cannot say whether more pages follow, so nothing was published and the next run asks for this page again"
        )
      }
      if page == 1 { emptyStatus = fetched.status }
      lastHeaders = fetched.headers

      // Save the answer first: a kill before the page's commit fetches it again and
      // overwrites the same file.
      var file = fetched.file
      if let path = pagePath, let folder, let answer = fetched.file {
        try folder.place(answer, at: path)
        file = path
      }

      let found = try withPageContext(page: page, url: next.url, options: options, contentType: fetched.contentType) {
        try streamed?.get() ?? commit(file, status: fetched.status, growing: nil)
      }
      // The answer (unless placed at `output`) and its sidecar are no longer needed.
      if let answer = fetched.file { Download.removeFinished(at: answer) }
      progress = committed
      if let pageUnmatched { unmatchedColumns = pageUnmatched }
      if options.paginate != nil {
        console.info(
          "page \(page): \(HumanUnits.counted(found, "record"))\(fetched.status.map { " (HTTP \($0): empty)" } ?? "")", step: step.id)
      }
    }

    report.bytes = progress.bytes
    if unchanged, let load = options.load, let validators {
      // The table already holds this answer: no row is rewritten. (No page was staged: the
      // ledger was cleared when the step started from its first page.)
      report.unchanged = true
      let sent = sentValidators?.preconditions.map { "\($0.name): \($0.value)" }.joined(separator: ", ") ?? ""
      report.notes.append("unchanged: the server answered 304 Not Modified to \(sent); table \(load.table) kept as it is")
      var done = report
      done.attempts = attempts
      try context.databaseWrites.withLock { _ in
        try validators.store.write { transaction in
          // The rows the kept table holds, as a step that loads reports them.
          done.rows = [load.table: try transaction.rowCount(ofTable: load.table)]
          try transaction.record(checkpoint(done, status: .succeeded))
        }
      }
      report.rows = done.rows
      return
    }
    if let output = options.output, let folder, progress.pages > 0 {
      // Every page's file, those of a run this one resumes included (a page answered with an
      // `empty` status has none).
      report.outputs = try (1...progress.pages).map { try folder.check(output.replacing("{page}", with: String($0)), role: "output") }
        .filter { FileManager.default.fileExists(atPath: folder.root + "/" + $0) }
    }
    if options.paginate != nil { report.notes.append("\(progress.pages) page\(progress.pages == 1 ? "" : "s")") }
    for column in resumed ? [] : unmatchedColumns ?? [] {
      let note =
        "load.columns.\(column.name).from '\(column.from!)' matched no record of the \(progress.rows) loaded; the column holds only NULL"
      console.warn(note, step: step.id)
      report.notes.append(note)
    }
    if stoppedEarly {
      report.notes.append("stopped after paginate.max_pages (\(options.maxPages!)) pages; the server offers more")
    }
    if let load = options.load, let store, let target {
      var done = report
      done.attempts = attempts
      let published = try context.databaseWrites.withLock { _ in
        do {
          return try target.write { transaction in
            try refuseEmptying(
              load, records: progress.rows, cursors: cursors, url: firstURL, status: emptyStatus, pages: progress.pages,
              in: transaction)
            let staged = try RecordTable(database: store.database, name: staging)
            let published = try publish(load, staged: staged, fresh: cursors?.entry.fresh ?? false, in: transaction)
            if !published.created { done.notes.append(StepRunner.noTableNote(load.table)) }
            done.notes += published.notes
            try cursors?.publish(&done.notes, in: transaction)
            try validators?.save(AnswerValidators(lastHeaders), url: firstURL, table: load.table, in: transaction)
            if let failed = try Expectations.audit(load.expect, tables: [load.table], in: transaction) { throw failed }
            done.rows = [load.table: published.rows]
            done.tables = published.created ? [load.table] : []
            try transaction.record(checkpoint(done, status: .succeeded))
            return published
          }
        } catch let failed where failed is StepError || failed is HTTPStepError {
          // Pages that failed `expect`, or hold no records for a table that must keep its
          // rows, are never published: the next run fetches them again.
          try store.database.transaction {
            try RecordTable(database: store.database, name: staging).drop()
            try ledger?.clear()
          }
          throw failed
        }
      }
      // Published: the staged pages are done with. A kill before this leaves them behind,
      // and the next run, finding the step's checkpoint, does not resume them.
      CrashPoint.reach("published:\(step.id)")
      try store.database.transaction {
        try RecordTable(database: store.database, name: staging).drop()
        try ledger?.clear()
      }
      report.rows = [load.table: published.rows]
      report.tables = published.created ? [load.table] : []
      report.notes = done.notes
    } else if let load = options.load, let store {
      var done = report
      done.attempts = attempts
      let (rows, created) = try context.databaseWrites.withLock { _ in
        do {
          return try store.write { transaction in
            try refuseEmptying(
              load, records: progress.rows, cursors: cursors, url: firstURL, status: emptyStatus, pages: progress.pages,
              in: transaction)
            let staged = try RecordTable(database: store.database, name: staging)
            let created = try staged.exists || RecordTable(database: store.database, name: load.table).exists
            if !created { done.notes.append(StepRunner.noTableNote(load.table)) }
            try TableGuard.disarm(load.table, in: store.database)
            let rows: Int
            if load.write == .replace {
              rows = try staged.publish(into: load.table)
            } else {
              let written = try write(load, staged: staged, fresh: cursors?.entry.fresh ?? false, in: transaction)
              done.notes += written.notes
              rows = written.rows
            }
            try cursors?.publish(&done.notes, in: transaction)
            try validators?.save(AnswerValidators(lastHeaders), url: firstURL, table: load.table, in: transaction)
            if let failed = try Expectations.audit(load.expect, tables: [load.table], in: transaction) { throw failed }
            try ledger?.clear()
            done.rows = [load.table: rows]
            done.tables = created ? [load.table] : []
            try transaction.record(checkpoint(done, status: .succeeded))
            return (rows, created)
          }
        } catch let failed where failed is StepError || failed is HTTPStepError {
          // Pages that failed `expect`, or hold no records for a table that must keep its
          // rows, are never published: the next run fetches them again.
          try store.database.transaction {
            try RecordTable(database: store.database, name: staging).drop()
            try ledger?.clear()
          }
          throw failed
        }
      }
      report.rows = [load.table: rows]
      report.tables = created ? [load.table] : []
      report.notes = done.notes
    } else {
      try ledger?.clear()
      var done = report
      done.attempts = attempts
      try recordCheckpoint(done, status: .succeeded)
    }
  }

  /// Refuses a load without records that would empty `load.table` while it holds rows
  /// (docs/http.md, "No records never empties a table unasked"), unless `load.allow_empty`.
  /// Only a load that replaces the table's rows with a full answer can empty it: `replace`,
  /// or an incremental step's fresh start (`--fresh`) in any mode. `append` and `merge` add
  /// and delete nothing for no records, and an incremental pull from a kept cursor that finds
  /// nothing changed gives no records as its normal answer.
  /// - Parameters:
  ///   - records: the records of every page the load staged.
  ///   - cursors: the incremental step's cursor, nil for a step that is not incremental.
  ///   - status: the status that made the first page empty (204, or one `on_status` names
  ///     `empty`), for the message.
  /// - Throws: `HTTPStepError.emptyAnswer`.
  private func refuseEmptying(
    _ load: HTTPStep.Load, records: Int, cursors: IncrementalRun?, url: String, status: Int?, pages: Int,
    in transaction: any StoreTransaction
  ) throws {
    let replaces = cursors.map(\.entry.fresh) ?? (load.write == .replace)
    guard records == 0, replaces, !load.allowEmpty, try !transaction.columns(ofTable: load.table).isEmpty else { return }
    let rows = try transaction.rowCount(ofTable: load.table)
    guard rows > 0 else { return }
    let why =
      switch status {
      case 204?: " (HTTP 204 No Content)"
      case let status?: " (HTTP \(status), which on_status names empty)"
      case nil: pages > 1 ? " (\(pages) pages)" : ""
      }
    throw HTTPStepError.emptyAnswer(
      "table \(load.table) holds \(HumanUnits.counted(rows, "row")), and the answer of \(url) held no records\(why): "
        + "\(load.write == .replace ? "a replace load" : "a load after --fresh") would leave the table empty, so nothing was loaded "
        + "and the table keeps its rows; if no records is a valid answer of this API, set load.allow_empty: true")
  }

  /// What made page `page` promise the page after it, for a `204 No Content` that
  /// contradicts it (docs/http.md, "A 204 on a later page"); nil where the pagination only
  /// guessed that the next page exists (`page`, `offset`, `cursor.from_last_record`, without
  /// `more`), where an empty page ends the pull.
  static func promise(_ options: HTTPStep, page: Int) -> String? {
    if options.more != nil { return "page \(page) said more pages follow (paginate.more)" }
    return switch options.paginate {
    case .next?: "page \(page) linked to this page (paginate.next)"
    case .linkHeader?: "page \(page) linked to this page (paginate.link_header)"
    case .cursor?, .bodyCursor?: "page \(page) gave the cursor of this page (paginate.cursor.from)"
    case .offset?, .page?, .lastRecord?, nil: nil
    }
  }

  static func noTableNote(_ table: String) -> String {
    "no records; table \(table) was not created (declare load.columns to create it empty)"
  }

  /// The first page's URL: the step's URL, with the first offset or none.
  private func firstURL(_ options: HTTPStep, since: String?) -> String {
    if case .offset(let param, let limitParam, let limit, let start)? = options.paginate {
      return pageURL(options, since: since, [QueryItem(param, String(start)), QueryItem(limitParam, String(limit))])
    }
    if case .page(let param, let start)? = options.paginate { return pageURL(options, since: since, [QueryItem(param, String(start))]) }
    return pageURL(options, since: since, [])
  }

  /// The step's URL with the incremental cursor (when sent) and `extra`, the pagination's
  /// parameters of the page.
  ///
  /// One parameter is sent once, by the most specific key that sets it (docs/http.md,
  /// "Which key sets a query parameter"): a pagination parameter over `incremental.param`
  /// over `query`. So a Stripe-style pull whose page cursor and incremental cursor are both
  /// `starting_after` sends the kept value on its first page and each page's cursor in its
  /// place after it (`?starting_after=40`, never `?starting_after=0&starting_after=40`).
  private func pageURL(_ options: HTTPStep, since: String?, _ extra: [QueryItem]) -> String {
    let paged = Set(extra.map(\.name))
    let cursor = zip(options.incremental.map { [$0.param] } ?? [], since.map { [$0] } ?? []).map { QueryItem($0, $1) }
    return options.url(adding: cursor.filter { !paged.contains($0.name) } + extra)
  }

  /// One page's answer: its file (nil for a status treated as empty), the empty status,
  /// and its head.
  struct FetchedPage {
    var file: String?
    /// The status that made an empty page: one `on_status` names `empty`, or a 204 to a
    /// step that reads its answers.
    var status: Int?
    var headers: HTTPHeaders
    var contentType: String?
    var bytes: Int64
    /// `bytes` as they came over the network, before content decoding.
    var wireBytes: Int64
  }

  /// Sends the request for one page under the retry policy and `on_status`.
  /// - Throws: `TransportError`; `HTTPStepError.badAnswer` for a 2xx answer with a blank
  ///   body (`BlankAnswer`) that the step would read (`load`, `paginate`), not retried.
  /// - Parameter conditions: preconditions to send (`AnswerValidators`); with them, a
  ///   `304 Not Modified` is an answer (status 304, no file), not an error.
  /// - Parameters:
  ///   - path: where the answer goes (its part beside it).
  ///   - growing: told of the part as it grows, for a load that reads it as it arrives.
  private func fetchPage(
    _ options: HTTPStep, next: PageLedger.Next, page: Int, path: String, growing: GrowingFile?, client: HTTPClient,
    conditions: [HTTPHeader], record: (Attempt) -> Void
  ) throws -> FetchedPage {
    let url = next.url
    let download = Download(path: path, style: .standard, resume: manifest.download.resume)
    download.growing = growing
    var request = makeRequest(options, url: url, cursor: next.cursor)
    for field in conditions { request.headers.set(field.name, field.value) }
    let runner = RetryRunner(policy: step.retry, cancellation: context.cancellation, budget: context.retryBudget)
    download.endsWhole = options.format == .json ? { JSONEvents.endsWhole(path: $0) } : { XMLRecordReader.endsWhole(path: $0) }
    let response = try runner.run(
      { _ in
        let response = try download.attempt(request, client: client, transactionID: nil)
        if (200..<300).contains(response.status) || options.outcome(for: response.status) == .empty
          || (response.status == 304 && !conditions.isEmpty)
        {
          return response
        }
        throw TransportError.httpStatus(StepRunner.statusError(response, url: url))
      },
      classify: { error in
        guard let transport = error as? TransportError else { return .fail(reason: nil) }
        var status: Int?
        if case .httpStatus(let e) = transport.underlying { status = e.status }
        // on_status decides for statuses; the transport's classes for everything else.
        let transient = status.map { options.outcome(for: $0) == .retry } ?? transport.isTransient
        guard transient else { return .fail(reason: nil) }
        // A POST or PATCH is sent again only when the server cannot have acted on it.
        if request.repeatable || client.bytesSent == 0 { return .retry }
        guard let status else {
          // A timeout or a broken connection has no status for on_status to name.
          return .fail(
            reason: "not retried: a \(request.method.rawValue) may change data on the server and part of it was sent; "
              + "make the request safe to repeat (an idempotency key the server honours) and use a method such as PUT")
        }
        if options.declaresRetry(status) || [429, 503].contains(status) { return .retry }
        return .fail(
          reason: "not retried: a \(request.method.rawValue) may change data on the server and part of it was sent; "
            + "name the status with retry in on_status to retry it")
      },
      record: { attempt in
        var entry = attempt
        if entry.status == nil { entry.status = client.lastStatus }
        if options.paginate != nil { entry.message = entry.message.map { "page \(page): \($0)" } }
        record(entry)
        logAttempt(entry)
      })
    // An answer the step reads must be a document: a blank one is not "no records" (a
    // server with none says so with a document, `204 No Content`, or a status `on_status`
    // names empty). One only saved is kept as is: a DELETE may well answer 204 with nothing.
    let reads = options.load != nil || options.paginate != nil
    guard (200..<300).contains(response.status) && !(reads && response.status == 204) else {
      download.discard()
      return FetchedPage(
        file: nil, status: response.status, headers: response.headers, contentType: nil, bytes: download.bytesReceived,
        wireBytes: download.wireBytesReceived)
    }
    try download.complete()
    if reads, let blank = BlankAnswer.size(ofFile: download.path) {
      download.removeFinished()
      throw HTTPStepError.badAnswer(
        page: options.paginate == nil ? nil : page, url: url,
        message:
          "\(BlankAnswer.describe(bytes: blank)) (HTTP \(response.status), Content-Type: \(response.headers["Content-Type"] ?? "none")); "
          + "an empty body is not \(options.format == .json ? "a JSON" : "an XML") document, so it was refused and nothing was loaded or saved; "
          + "a server with no records answers with a document (such as [] or {\"data\": []}), 204 No Content, or a status that on_status names empty"
      )
    }
    if download.bytesResumed > 0 { console.info("resumed page \(page) at byte \(download.bytesResumed)", step: step.id) }
    return FetchedPage(
      file: download.path, status: nil, headers: response.headers, contentType: response.headers["Content-Type"],
      bytes: download.bytesReceived, wireBytes: download.wireBytesReceived)
  }

  /// The request for `url`: method, headers (Accept by format, Content-Type by body, the
  /// Authorization of `auth`), body, time limits and TLS.
  /// With `paginate.cursor.body`, `cursor` goes into the JSON body at that pointer.
  private func makeRequest(_ options: HTTPStep, url: String, cursor: String?) -> HTTPRequest {
    var headers = HTTPHeaders(options.headers)
    if headers["Accept"] == nil {
      headers.set("Accept", options.format == .json ? "application/json" : "application/xml, text/xml;q=0.9")
    }
    var body = HTTPBody.none
    switch options.body {
    case .json(let value)?:
      var sent = value
      if case .bodyCursor(_, let pointer)? = options.paginate, let cursor { sent = value.setting(pointer.tokens[...], to: .string(cursor)) }
      body = .bytes(Array(sent.json.utf8))
      if headers["Content-Type"] == nil { headers.set("Content-Type", "application/json") }
    case .form(let fields)?:
      body = .bytes(Array(QueryItem.encode(fields).utf8))
      if headers["Content-Type"] == nil { headers.set("Content-Type", "application/x-www-form-urlencoded") }
    case nil:
      break
    }
    if let auth = options.auth { headers.set("Authorization", auth.authorization) }
    var tls = options.tls
    tls.caFile = tls.caFile.map { manifest.resolve($0) }
    return HTTPRequest(
      method: HTTPMethod(rawValue: options.method.rawValue) ?? .get, url: url, headers: headers, body: body,
      timeouts: step.timeouts, tls: tls, acceptEncoding: headers["Accept-Encoding"] ?? StepRunner.defaultAcceptEncoding)
  }

  /// What an `http` step asks for without an `Accept-Encoding` of its own: `gzip`. A
  /// compressed answer is decoded as it arrives and is not resumed (a standard `Range`
  /// counts the compressed bytes, which the part does not hold; `Download`): a page broken
  /// mid-answer is asked again from byte 0, and a resume of an uncompressed one asks for
  /// `identity`.
  static let defaultAcceptEncoding = "gzip"

  /// A non-2xx answer as an error whose message ends with the answer's body.
  static func statusError(_ response: HTTPResponse, url: String) -> HTTPStatusError {
    // One line without control characters: the server's text must not pass for log lines.
    var error = HTTPStatusError(status: response.status, url: url, bodyExcerpt: HTTPStatusError.excerpt(of: response, limit: 4000))
    error.readRetryAfter(response.headers["Retry-After"])
    return error
  }

  /// The reader of the step's answers: its records (with `load`) and the values pagination
  /// reads from the body.
  private func pageReader(_ options: HTTPStep) -> RecordReader {
    var probes: [RecordSelector] = []
    switch options.paginate {
    case .next(let selector)?: probes.append(selector)
    case .cursor(_, let from)?, .bodyCursor(let from, _)?: probes.append(from)
    default: break
    }
    if let more = options.more { probes.append(more) }
    return RecordReader(
      format: options.format, records: options.load?.records, columns: options.load?.columns, probes: probes,
      refusingExtra: options.load?.extra == .refuse)
  }

  /// Reads one page and commits what it holds with the ledger's new entry: the page's records
  /// into the staging table (with `load`), in one transaction. `advance` receives the records
  /// read and the next page's request, and returns the progress to record.
  /// - Parameters:
  ///   - sighted: receives the summary of a page whose records were loaded (before its
  ///     commit), for the columns no record matched (`AnswerSummary.unmatchedColumns`).
  ///   - growing: the page's part as its download writes it, read as it arrives (with
  ///     `load`, when `pageReader(options).readsInOnePass`); the transaction commits only
  ///     after the download finished and was verified (`GrowingFile`).
  ///   - headers: the answer's head, asked once the records are read (for a page read as it
  ///     arrives, the download has finished by then).
  /// - Returns: the records read.
  /// - Throws: `RecordError`, `GrowingFile.Stop`, SQLite's and the pagination's errors.
  private func commitPage(
    _ options: HTTPStep, file: String?, growing: GrowingFile?, status: Int?, headers: () -> HTTPHeaders, current: PageLedger.Next,
    ledger: PageLedger?, staging: String, store: Store?, cursors: IncrementalRun?, sighted: (AnswerSummary) -> Void,
    advance: (Int, PageLedger.Next?) -> PageLedger.Progress
  ) throws -> Int {
    let reader = pageReader(options)

    func readAndAdvance(_ table: RecordTable?, _ transaction: (any StoreTransaction)?) throws -> Int {
      var summary = AnswerSummary()
      var lastRecord: Record?
      if let file {
        if let table {
          var checks = RecordChecks(load: options.load!, cursors: cursors)
          summary = try reader.load(
            file: file, growing: growing, prepare: { try table.prepare($0 + checks.extraColumns, widen: options.load?.columns == nil) },
            each: {
              lastRecord = $0
              try table.insert(try checks.check($0))
            })
          try checks.finish()
          sighted(summary)
          if let cursors, let transaction { try cursors.stage(checks.highest, in: transaction) }
        } else if !reader.probes.isEmpty {
          summary = try reader.read(file: file) { _ in }
        }
      } else if let table, let load = options.load, let columns = load.columns {
        try table.prepare(columns.map { ($0.name, $0.type) } + RecordChecks(load: load, cursors: nil).extraColumns, widen: false)
      }
      let next =
        status == nil ? try nextPage(options, current: current, summary: summary, lastRecord: lastRecord, headers: headers()) : nil
      // `advance` must run even without a ledger: it carries the next page to the loop.
      let progress = advance(summary.records, next)
      try ledger?.save(progress)
      return summary.records
    }

    guard let ledger else { return try readAndAdvance(nil, nil) }
    return try ledgerTransaction(ledger, store) { transaction in
      try readAndAdvance(options.load == nil ? nil : RecordTable(database: ledger.database, name: staging), transaction)
    }
  }

  /// Runs `body` in one transaction of the ledger's database: the target store's write
  /// transaction when the step loads (the ledger lives in the target database then),
  /// otherwise one of the journal's database.
  private func ledgerTransaction<T: Sendable>(_ ledger: PageLedger, _ store: Store?, _ body: ((any StoreTransaction)?) throws -> T) throws
    -> T
  {
    try context.databaseWrites.withLock { _ in
      if let store { return try store.write { try body($0) } }
      return try ledger.database.transaction { try body(nil) }
    }
  }

  /// The next page's request, or nil after the last page.
  /// - Throws: `HTTPStepError` when the answer's next link or cursor cannot be followed.
  private func nextPage(
    _ options: HTTPStep, current: PageLedger.Next, summary: AnswerSummary, lastRecord: Record?, headers: HTTPHeaders
  ) throws -> PageLedger.Next? {
    if let more = options.more, try !morePages(summary, more) { return nil }
    switch options.paginate {
    case nil:
      return nil
    case .next(let selector):
      guard let link = try value(summary, selector, as: .nextLink) else { return nil }
      return PageLedger.Next(url: try follow(link, from: current.url, options: options))
    case .linkHeader:
      guard let link = LinkHeader(headers).target("next"), !link.isEmpty else { return nil }
      return PageLedger.Next(url: try follow(link, from: current.url, options: options))
    case .offset(let param, let limitParam, let limit, let start):
      guard summary.records >= limit else { return nil }
      let offset = (current.offset ?? start) + limit
      return PageLedger.Next(
        url: pageURL(options, since: current.since, [QueryItem(param, String(offset)), QueryItem(limitParam, String(limit))]),
        offset: offset, since: current.since)
    case .cursor(let param, let from):
      guard let cursor = try value(summary, from, as: .cursor) else { return nil }
      if cursor == current.cursor {
        throw HTTPStepError.paginationLoop("the server sent cursor '\(PrintableText.oneLine(cursor))' again")
      }
      return PageLedger.Next(url: pageURL(options, since: current.since, [QueryItem(param, cursor)]), cursor: cursor, since: current.since)
    case .lastRecord(let param, let field):
      guard let lastRecord else { return nil }
      let cursor: String
      switch RecordChecks.resolve(field, in: lastRecord) {
      case .string(let text)? where !text.isEmpty: cursor = text
      case .integer(let number)?: cursor = String(number)
      case .number(let number)?: cursor = number
      case let other:
        let near = other == nil ? RecordChecks.nearSpelling(field, in: lastRecord).map { "; did you mean '\($0)'?" } ?? "" : ""
        throw HTTPStepError.badPagination(
          "paginate.cursor.from_last_record '\(field)' is \(other.map { $0.json } ?? "missing") in record \(summary.records), "
            + "the last of the page; it must be a string or a number\(near)")
      }
      if cursor == current.cursor {
        throw HTTPStepError.paginationLoop("the last record gave cursor '\(PrintableText.oneLine(cursor))' again")
      }
      return PageLedger.Next(url: pageURL(options, since: current.since, [QueryItem(param, cursor)]), cursor: cursor, since: current.since)
    case .bodyCursor(let from, _):
      guard let cursor = try value(summary, from, as: .cursor) else { return nil }
      if cursor == current.cursor {
        throw HTTPStepError.paginationLoop("the server sent cursor '\(PrintableText.oneLine(cursor))' again")
      }
      return PageLedger.Next(url: current.url, cursor: cursor, since: current.since)
    case .page(let param, let start):
      guard summary.records > 0 else { return nil }
      let number = (current.offset ?? start) + 1
      return PageLedger.Next(
        url: pageURL(options, since: current.since, [QueryItem(param, String(number))]), offset: number, since: current.since)
    }
  }

  /// What `paginate.more` says: true for more pages; false for a false, null or absent
  /// value.
  /// - Throws: `HTTPStepError.badPagination` for a value that is not a boolean.
  private func morePages(_ summary: AnswerSummary, _ selector: RecordSelector) throws -> Bool {
    switch summary.values[selector] ?? .absent {
    case .absent:
      try refuseMisspelt(selector, key: "paginate.more", in: summary)
      return false
    case .null: return false
    case .scalar("true"), .text("true"): return true
    case .scalar("false"), .text("false"): return false
    case .scalar(let json):
      throw HTTPStepError.badPagination("paginate.more '\(selector)' is \(json) in the answer; it must be true or false")
    case .text(let text):
      throw HTTPStepError.badPagination(
        "paginate.more '\(selector)' is the text '\(PrintableText.oneLine(text))' in the answer; it must be true or false")
    case .structure(let kind):
      throw HTTPStepError.badPagination("paginate.more '\(selector)' is \(kind) in the answer; point it at the boolean itself")
    }
  }

  /// What a pagination selector points at in an answer.
  private enum PageValue {
    /// The next page's URL (`paginate.next`): a string.
    case nextLink
    /// The next page's cursor (`paginate.cursor.from`): a string or a number.
    case cursor

    /// The selector's manifest key, for messages.
    var key: String {
      switch self {
      case .nextLink: "paginate.next"
      case .cursor: "paginate.cursor.from"
      }
    }
  }

  /// The text a pagination selector found; nil when absent, null or empty.
  /// - Throws: `RecordError` for a selector that is absent where a near spelling is not
  ///   (`refuseMisspelt`), or a value a next link cannot be; `HTTPStepError.badPagination`
  ///   for a list or an object.
  private func value(_ summary: AnswerSummary, _ selector: RecordSelector, as role: PageValue) throws -> String? {
    switch summary.values[selector] ?? .absent {
    case .absent:
      try refuseMisspelt(selector, key: role.key, in: summary)
      return nil
    case .null: return nil
    case .text(let text): return text.isEmpty ? nil : text
    case .scalar(let json):
      switch role {
      case .cursor:
        return json
      case .nextLink:
        let kind = json == "true" || json == "false" ? "a boolean" : "a number"
        throw RecordError(
          "\(role.key) '\(selector)' is \(kind) (\(json)) in the answer; a next link must be a string holding a URL, or null or absent on the last page"
        )
      }
    case .structure(let kind):
      throw HTTPStepError.badPagination("\(role.key) '\(selector)' is \(kind) in the answer; point it at the value itself")
    }
  }

  /// Refuses a pagination selector that matched nothing where the object it looks in holds
  /// a member a small edit away (docs/http.md, "A misspelt selector"): read as absent, it
  /// would end the pull after this page, and an incremental step would keep a cursor past
  /// records it never fetched. A true last page (the member null, or absent with no near
  /// name) passes.
  /// - Throws: `RecordError` naming the near spelling.
  private func refuseMisspelt(_ selector: RecordSelector, key: String, in summary: AnswerSummary) throws {
    guard let near = summary.nearSpellings[selector] else { return }
    throw RecordError(
      "\(key) '\(selector)' matches nothing in the answer; did you mean '\(near)'? "
        + "A misspelt selector would end the pull early, so nothing was published")
  }

  /// `link` resolved against the current page's URL (RFC 3986 §5), on the step's origin.
  private func follow(_ link: String, from current: String, options: HTTPStep) throws -> String {
    guard let base = URL(string: current), let resolved = URL(string: link, relativeTo: base)?.absoluteURL,
      let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https"
    else {
      throw HTTPStepError.badPagination("the next page's link '\(PrintableText.oneLine(link))' is not an http:// or https:// address")
    }
    let url = resolved.absoluteString
    guard StepRunner.origin(url) == StepRunner.origin(options.baseURL) else {
      throw HTTPStepError.badPagination(
        "the next page's link \(url) leaves \(StepRunner.origin(options.baseURL) ?? options.baseURL); dray follows links on the base_url's origin only, so the step's credentials never go elsewhere"
      )
    }
    if url == current { throw HTTPStepError.paginationLoop("the next page's link is the page itself (\(url))") }
    return url
  }

  /// `scheme://host:port` of a URL, lower-cased, with the scheme's default port.
  static func origin(_ url: String) -> String? {
    Origin(url)?.description
  }

  /// Runs `body`, naming the page (`page 2 (URL): `) in any error reading its answer or
  /// following its next link or cursor.
  private func withPageContext<T>(page: Int, url: String, options: HTTPStep, contentType: String?, _ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as RecordError {
      var message = error.message
      let type = contentType?.lowercased() ?? ""
      if options.format == .json && type.contains("xml") {
        message += "; the server says it is \(contentType!): set format: xml"
      } else if options.format == .xml && type.contains("json") {
        message += "; the server says it is \(contentType!): set format: json"
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
  /// A load without records that would empty a table holding rows (`load.allow_empty`).
  case emptyAnswer(String)

  var code: String {
    switch self {
    case .badAnswer: "bad_answer"
    case .badPagination: "bad_pagination"
    case .paginationLoop: "pagination_loop"
    case .emptyAnswer: "empty_answer"
    }
  }

  var description: String {
    switch self {
    case .badAnswer(let page?, let url, let message): "page \(page) (\(url)): \(message)"
    case .badAnswer(nil, let url, let message): "the answer of \(url): \(message)"
    case .badPagination(let message), .emptyAnswer(let message): message
    case .paginationLoop(let message): "\(message); stopping so as not to fetch pages forever"
    }
  }
}
