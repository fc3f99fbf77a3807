internal import DrayModel
internal import DrayRecords
internal import DrayTarget
internal import Foundation

extension StepRunner {
  /// Publishes the records staged in `run`'s staging table into `load.table` of the target
  /// database, in one of its transactions (`publish`), with the kept cursor, the answer's
  /// validators, `load.expect`'s check and the step's checkpoint, and drops the staged pages
  /// in that transaction when they stage in the same database (SQLite), after it otherwise.
  /// Pages that fail `expect`, hold no records for a table that must keep its rows, or hold
  /// a value the database's column type refuses (`DatabaseFailure.refusesData`, thrown as
  /// `HTTPStepError.refusedData`), are never published: they are dropped, and the next run
  /// fetches them again.
  func publishStaged(
    _ load: HTTPStep.Load, _ run: HTTPRun, staging: any RecordStaging, target: any TargetStore, _ pages: FetchedPages,
    _ report: inout StepReport
  ) throws {
    var done = report
    let quarantined = try staging.table(run.quarantineStaging)
    let counts = try Quarantine.Counts(quarantined)
    let deletes = deletesMissing(load, run, pages, counts, &done.notes)
    let (published, cleared) = try context.databaseWrites.withLock { _ in
      do {
        // A partition counts with those of its step this run published before it.
        let prior = partitionedStepID.flatMap { id in context.quarantined.withLock { $0[id] } } ?? (0, 0)
        try checkBounds(load, counts, records: pages.progress.rows, prior: prior)
        let written = try target.write { transaction in
          try refuseEmptying(
            load, records: pages.progress.rows, cursors: run.cursors, deletesMissing: deletes, url: pages.firstURL,
            status: pages.emptyStatus, pages: pages.progress.pages, in: transaction)
          let published = try publish(
            load, staged: staging.table(run.stagingTable), fresh: partition == nil && run.cursors?.entry.fresh == true,
            deletesMissing: deletes, widenings: run.contract?.widenings ?? [:], in: transaction)
          done.rowsDeleted = load.deleteMissing ? published.deleted : nil
          if !published.created { done.notes.append(StepRunner.noTableNote(load.table)) }
          done.notes += published.notes
          // Records at the kept cursor an earlier run appended or set aside are neither loaded nor
          // set aside by this one.
          done.contract = try publishQuarantine(
            load, quarantined, counts, records: pages.progress.rows - (run.cursors?.passedOver ?? 0),
            name: target.naming.quarantine(of: load.table, named: load.quarantine.table),
            &done.notes, in: transaction)
          try run.cursors?.publish(&done.notes, in: transaction)
          try run.validators?.save(AnswerValidators(pages.lastHeaders), url: pages.firstURL, table: load.table, in: transaction)
          if let failed = try Expectations.audit(load.expect, tables: [load.table], in: transaction) { throw failed }
          // A partition's checkpoint counts its own records, not the table's rows.
          done.rows = [load.table: partition == nil ? published.rows : pages.progress.rows]
          done.tables = published.created ? [load.table] : []
          try transaction.record(checkpoint(done, status: .succeeded))
          let sameDatabase = transaction.sameDatabaseStaging
          if let sameDatabase { try clearStaged(run, in: sameDatabase) }
          return (published, sameDatabase != nil)
        }
        if let id = partitionedStepID {
          context.quarantined.withLock { $0[id] = (prior.total + counts.total, prior.records + pages.progress.rows) }
        }
        return written
      } catch let failed where failed is StepError || failed is HTTPStepError {
        try dropStaged(run, staging)
        throw failed
      } catch let failed where context.database.failure(failed)?.refusesData == true {
        // Published again, the same records are refused again: the next run fetches anew.
        try dropStaged(run, staging)
        throw HTTPStepError.refusedData(
          "\(context.database.failure(failed)?.message ?? "\(failed)"); nothing was published, and the next run fetches the pages "
            + "again. Make the column's type hold the API's values, or set load.contract.types: evolve (widen the column) "
            + "or discard_row (set such records aside)")
      }
    }
    // Published: the staged pages are done with. Staged in another database, a kill before
    // this leaves them behind, and the next run, finding the step's checkpoint, does not
    // resume them (a later run's new lineage drops them).
    CrashPoint.reach("published:\(step.id)")
    if !cleared { try context.databaseWrites.withLock { _ in try dropStaged(run, staging) } }
    report.rows = done.rows
    report.tables = published.created ? [load.table] : []
    report.notes = done.notes
    report.contract = done.contract
    report.rowsDeleted = done.rowsDeleted
  }

  /// Whether this load deletes the rows its pull did not see (`load.delete_missing`): only a
  /// whole pull whose every record was loaded can say which keys the API no longer lists. A
  /// pull `paginate.max_pages` stopped, or one whose contract set records aside (their keys
  /// were not loaded), deletes nothing, and a note says why. A failed pull never publishes.
  private func deletesMissing(
    _ load: HTTPStep.Load, _ run: HTTPRun, _ pages: FetchedPages, _ counts: Quarantine.Counts, _ notes: inout [String]
  ) -> Bool {
    // Validation refuses delete_missing with incremental and partitions; checked again here.
    guard load.deleteMissing, load.write == .merge, partition == nil, run.cursors == nil else { return false }
    if pages.stoppedEarly {
      notes.append(
        "load.delete_missing deleted nothing: paginate.max_pages stopped the pull before its last page, so it did not see every record")
      return false
    }
    if counts.setAside > 0 {
      notes.append(
        "load.delete_missing deleted nothing: the contract set \(HumanUnits.counted(counts.setAside, "record")) aside, "
          + "whose keys the table did not get")
      return false
    }
    return true
  }

  /// Drops the staging table and forgets the staged pages, in one transaction.
  func dropStaged(_ run: HTTPRun, _ staging: any RecordStaging) throws {
    try staging.write { try clearStaged(run, in: $0) }
  }

  /// Drops the staging table and forgets the staged pages in `transaction`.
  private func clearStaged(_ run: HTTPRun, in transaction: any StagingTransaction) throws {
    try transaction.dropTable(run.stagingTable)
    try transaction.dropTable(run.quarantineStaging)
    try run.ledger?.clear(in: transaction)
  }

  /// Records the step as `unchanged` after a `304 Not Modified`: the table already holds
  /// this answer, so no row is rewritten. (No page was staged: the ledger was cleared when
  /// the step started from its first page.)
  func keepNotModified(
    _ load: HTTPStep.Load, _ validators: AnswerValidators.Ledger, sent: AnswerValidators?, _ report: inout StepReport
  ) throws {
    report.unchanged = true
    let sent = sent?.preconditions.map { "\($0.name): \($0.value)" }.joined(separator: ", ") ?? ""
    report.notes.append("unchanged: the server answered 304 Not Modified to \(sent); table \(load.table) kept as it is")
    var done = report
    try context.databaseWrites.withLock { _ in
      try validators.store.write { transaction in
        // The rows the kept table holds, as a step that loads reports them.
        done.rows = [load.table: try transaction.rowCount(ofTable: load.table)]
        try transaction.record(checkpoint(done, status: .succeeded))
      }
    }
    report.rows = done.rows
  }

  /// Notes what the pages came to: the files saved, the pages, the declared columns no
  /// record matched, a pull `paginate.max_pages` stopped.
  func noteFetched(_ options: HTTPStep, _ run: HTTPRun, _ pages: FetchedPages, _ report: inout StepReport) throws {
    let count = pages.progress.pages
    if let output = options.output, let folder = run.folder, count > 0 {
      // Every page's file, those of a run this one resumes included (a page answered with an
      // `empty` status has none).
      report.outputs = try (1...count).map { try folder.check(output.replacing("{page}", with: String($0)), role: "output") }
        .filter { FileManager.default.fileExists(atPath: folder.root + "/" + $0) }
    }
    if options.paginate != nil { report.notes.append("\(count) page\(count == 1 ? "" : "s")") }
    // Not told after a resume, whose earlier pages this run did not read.
    for column in pages.resumed ? [] : pages.unmatchedColumns ?? [] {
      // Only a column read `from` the records can match none.
      guard let from = column.from else { continue }
      let note =
        "load.columns.\(column.name).from '\(from)' matched no record of the \(pages.progress.rows) loaded; the column holds only NULL"
      console.warn(note, step: step.id)
      report.notes.append(note)
    }
    if pages.stoppedEarly, let maxPages = options.maxPages {
      report.notes.append("stopped after paginate.max_pages (\(maxPages)) pages; the server offers more")
    }
  }

  /// Publishes the records staged in `staged` into `load.table` of the target database, in
  /// `transaction`: copies them in (`StoreTransaction.stage`), then `replace` replaces the
  /// table's rows (`StoreTransaction.replaceRows`), and `append` and `merge` add the columns
  /// the table lacks and write them, after deleting its rows following a `--fresh` start.
  /// The deleted mark and `load.deleted` are not loaded by `append` and `merge`
  /// (`publishedColumns`). With `deletesMissing`, `merge` then deletes the rows whose key no
  /// staged record holds (`StoreTransaction.deleteMissing`, `load.delete_missing`).
  /// - Returns: the rows the table holds, whether it exists, notes for the report (columns
  ///   added, rows appended, merged and deleted), and the rows `deletesMissing` deleted.
  func publish(
    _ load: HTTPStep.Load, staged: any StagedTable, fresh: Bool, deletesMissing: Bool = false,
    widenings: [IdentifierKey: String] = [:], in transaction: any StoreTransaction
  ) throws -> (rows: Int, created: Bool, notes: [String], deleted: Int) {
    let existed = try !transaction.columns(ofTable: load.table).isEmpty
    let columns = load.write == .replace ? staged.columns.map { (name: $0.name, type: $0.type ?? .text) } : publishedColumns(load, staged)
    guard !columns.isEmpty else {
      // No records (the staging table holds at most the deleted mark).
      guard existed else { return (0, false, [], 0) }
      var deleted = 0
      if fresh || load.write == .replace || deletesMissing { deleted = try transaction.deleteRows(ofTable: load.table) }
      let notes = deletesMissing ? [Self.deletedMissingNote(deleted)] : []
      return (try transaction.rowCount(ofTable: load.table), true, notes, deletesMissing ? deleted : 0)
    }
    let widened =
      load.contract.types == .evolve && existed ? try widen(load, staged: columns, widenings: widenings, in: transaction) : []
    // Every staged column goes across: `merge` reads the deleted mark there.
    try transaction.stage(staged.name, columns: staged.columns, for: load.table) { add in try staged.forEachRow(add) }
    var notes = try widened + write(load, from: staged.name, columns: columns, existed: existed, fresh: fresh, in: transaction)
    var deleted = 0
    if deletesMissing && load.write == .merge {
      deleted = try transaction.deleteMissing(from: staged.name, in: load.table, key: load.primaryKey)
      notes.append(Self.deletedMissingNote(deleted))
    }
    return (try transaction.rowCount(ofTable: load.table), true, notes, deleted)
  }

  static func deletedMissingNote(_ deleted: Int) -> String {
    "deleted \(HumanUnits.counted(deleted, "row")) whose key the pull did not see (load.delete_missing)"
  }

  /// Widens the columns of `load.table` whose type does not hold their staged values
  /// (`load.contract.types: evolve`), in `transaction`: the staged type says what the
  /// records of the whole load held, those of a run this one resumed included.
  /// - Parameter widenings: the value that widened each column, where this run saw it
  ///   (`RecordContract.widenings`).
  /// - Returns: a note for each column widened: `widened column qty of table t from INTEGER
  ///   to REAL: record 2 holds 5.25`.
  private func widen(
    _ load: HTTPStep.Load, staged: [(name: String, type: ColumnType)], widenings: [IdentifierKey: String],
    in transaction: any StoreTransaction
  ) throws -> [String] {
    let types = Dictionary(
      try transaction.columnTypes(ofTable: load.table).map { (IdentifierKey($0.name), $0.type) }, uniquingKeysWith: { a, _ in a })
    var notes: [String] = []
    let wider = try staged.compactMap { column -> (name: String, type: ColumnType)? in
      guard let known = types[IdentifierKey(column.name)], let type = known, !type.holds(column.type) else { return nil }
      var widened = type.widened(for: column.type)
      // Rows holding integers beyond ±2^53 take NUMERIC, never REAL (which could round them).
      if type == .integer && widened == .real, try holdsInexactIntegers(load.table, column.name, in: transaction) {
        widened = type.widened(for: column.type, integersFitADouble: false)
      }
      notes.append(
        "widened column \(column.name) of table \(load.table) from \(type.rawValue) to \(widened.rawValue) "
          + "(load.contract.types: evolve): "
          + (widenings[IdentifierKey(column.name)] ?? "the staged records hold values of type \(column.type.rawValue)"))
      return (column.name, widened)
    }
    guard !wider.isEmpty else { return [] }
    try transaction.widenColumns(wider, ofTable: load.table)
    return notes
  }

  /// Whether column `column` of table `table` holds an integer beyond ±2^53
  /// (`ColumnType.doubleHolds`), from its smallest and largest value.
  private func holdsInexactIntegers(_ table: String, _ column: String, in transaction: any StoreTransaction) throws -> Bool {
    let bounds = try transaction.aggregates(ofTable: table, [TableAggregate(.min, of: column), TableAggregate(.max, of: column)])
    return bounds.contains { value in
      if case .integer(let n) = value { return !ColumnType.doubleHolds(n) }
      return false
    }
  }

  /// Fails the load when the records set aside or trimmed pass `load.quarantine`'s bounds,
  /// which count per step: for a partition, with `prior`, what the partitions of its step
  /// published before it in this run (set aside or trimmed, and records read).
  /// - Throws: `HTTPStepError.quarantineFull`.
  private func checkBounds(
    _ load: HTTPStep.Load, _ counts: Quarantine.Counts, records: Int, prior: (total: Int, records: Int)
  ) throws {
    let total = counts.total + prior.total
    let records = records + prior.records
    guard let passed = load.quarantine.passedBound(total: total, of: records, unit: "record") else { return }
    let across =
      partitionedStepID.map { id in
        " across the partitions of step \(id) (\(prior.total) of them from the \(HumanUnits.counted(prior.records, "record")) "
          + "of partitions published before this one)"
      } ?? ""
    throw HTTPStepError.quarantineFull(
      "\(total) of \(HumanUnits.counted(records, "record")) did not fit the table (\(counts.summary)), more than \(passed)\(across); "
        + "nothing was published, and the next run fetches the pages again. Fix the API or the table, or raise the bound")
  }

  /// Appends the records the contract set aside or trimmed to the quarantine table (created
  /// when missing), in `transaction`, and says what the load came to.
  private func publishQuarantine(
    _ load: HTTPStep.Load, _ staged: any StagedTable, _ counts: Quarantine.Counts, records: Int, name: String,
    _ notes: inout [String], in transaction: any StoreTransaction
  ) throws -> ContractReport {
    let report = ContractReport(
      quarantine: name, loaded: records - counts.setAside, setAside: counts.setAside, trimmed: counts.trimmed, byKind: counts.byKind)
    guard counts.total > 0 else { return report }
    let columns = Quarantine.columns.map { (name: $0, type: ColumnType?.some(.text)) }
    _ = try transaction.addMissingColumns(columns, toTable: name)
    try transaction.stage(staged.name, columns: columns, for: name) { add in try staged.forEachRow(add) }
    _ = try transaction.append(from: staged.name, into: name, columns: Quarantine.columns)
    notes.append("\(counts.summary) into table \(name)")
    return report
  }

  /// Writes the staged table `staging` into `load.table` by `load.write`, in `transaction`.
  /// - Returns: notes for the report (columns added, rows appended, merged and deleted).
  private func write(
    _ load: HTTPStep.Load, from staging: String, columns: [(name: String, type: ColumnType)], existed: Bool, fresh: Bool,
    in transaction: any StoreTransaction
  ) throws -> [String] {
    let added = { (name: String) in "added column \(name) to table \(load.table): the API's records hold it" }
    if load.write == .replace {
      return try transaction.replaceRows(ofTable: load.table, from: staging, columns: columns).map(added)
    }
    let notes = try transaction.addMissingColumns(columns.map { ($0.name, $0.type) }, toTable: load.table).map(added)
    if existed && fresh { _ = try transaction.deleteRows(ofTable: load.table) }
    let names = columns.map(\.name)
    if load.write == .append {
      let appended = try transaction.append(from: staging, into: load.table, columns: names)
      return notes + ["appended \(HumanUnits.counted(appended, "row"))"]
    }
    let merged = try transaction.merge(
      from: staging, into: load.table, columns: names, key: load.primaryKey,
      deletedColumn: load.deleted == nil ? nil : RecordChecks.deletedColumn)
    return notes + ["merged \(HumanUnits.counted(merged.written, "row"))" + (load.deleted == nil ? "" : ", deleted \(merged.deleted)")]
  }

  /// The staged columns `append` and `merge` write: all but the deleted mark (live rows
  /// would only ever hold false or NULL there), untyped ones as text.
  func publishedColumns(_ load: HTTPStep.Load, _ staged: any StagedTable) -> [(name: String, type: ColumnType)] {
    var marks: Set<IdentifierKey> = [IdentifierKey(RecordChecks.deletedColumn)]
    if let deleted = load.deleted, deleted.tokens.count == 1 { marks.insert(IdentifierKey(deleted.tokens[0])) }
    return staged.columns.filter { !marks.contains(IdentifierKey($0.name)) }.map { (name: $0.name, type: $0.type ?? .text) }
  }

  /// Refuses a load without records that would empty `load.table` while it holds rows
  /// (docs/http.md, "No records never empties a table unasked"), unless `load.allow_empty`.
  /// Only a load that replaces the table's rows with a full answer can empty it: `replace`,
  /// a `merge` with `load.delete_missing`, or an incremental step's fresh start (`--fresh`)
  /// in any mode. `append` and `merge` add
  /// and delete nothing for no records, and an incremental pull from a kept cursor that finds
  /// nothing changed gives no records as its normal answer.
  /// - Parameters:
  ///   - records: the records of every page the load staged.
  ///   - cursors: the incremental step's cursor, nil for a step that is not incremental.
  ///   - deletesMissing: the load deletes the rows its records do not hold (`load.delete_missing`).
  ///   - status: the status that made the first page empty (204, or one `on_status` names
  ///     `empty`), for the message.
  /// - Throws: `HTTPStepError.emptyAnswer`.
  private func refuseEmptying(
    _ load: HTTPStep.Load, records: Int, cursors: IncrementalRun?, deletesMissing: Bool, url: String, status: Int?, pages: Int,
    in transaction: any StoreTransaction
  ) throws {
    let replaces = cursors.map(\.entry.fresh) ?? (load.write == .replace || deletesMissing)
    // A partition's load is one part of the table: the partitioned step judges the whole.
    guard partition == nil, records == 0, replaces, !load.allowEmpty, try !transaction.columns(ofTable: load.table).isEmpty else { return }
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
        + "\(load.write == .replace ? "a replace load" : cursors == nil ? "a merge with load.delete_missing" : "a load after --fresh") would leave the table empty, so nothing was loaded "
        + "and the table keeps its rows; if no records is a valid answer of this API, set load.allow_empty: true")
  }

  /// What made page `page` promise the page after it, for a `204 No Content` or a status
  /// `on_status` names `empty` that contradicts it (docs/http.md, "A 204 on a later page"); nil where the pagination only
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
}
