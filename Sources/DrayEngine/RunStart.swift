internal import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation

/// The state a recorded run starts from (`RecordingStart`, docs/recordings.md, "The start
/// section"): taken by a run that records, once it holds the job's lock and before its first
/// request; seeded by a replay into a folder that holds nothing of the job, so that the
/// replay sends the recorded run's requests.
///
/// What shapes a run's requests, and what it reports, from the database: an `incremental`
/// step's kept cursor (the value it sends), a conditional step's validators (its
/// preconditions) and its table (a `304` reports the rows kept), the table a `merge` or an
/// `append` adds to (the rows it reports), a `table_stream` resource's kept scheme (not asked
/// for again) and its tables with the answer their bookkeeping records (an unchanged answer
/// is not loaded again; a delta starts from their version), and the journal's checkpoints
/// (each step's checkpoint `before`). Kept credentials (OAuth 2.0 refresh tokens, login
/// sessions) are never read. A `--fresh` run sends no kept cursor or validators: they are not
/// taken.
enum RunStart {
  /// A replay that cannot seed its folder: the message says why and what to do.
  struct Refusal: Error, CustomStringConvertible {
    var description: String
  }

  /// Every step of `manifest`, the members of parallel groups among them, without
  /// partitioned ones (each partition keeps state of its own, not taken).
  static func steps(_ manifest: Manifest) -> [Step] {
    manifest.steps.flatMap { step -> [Step] in
      if case .parallel(let group) = step.kind { return group.steps }
      return [step]
    }.filter { $0.partitions == nil }
  }

  /// A table to take: its physical name, and for a delta's table its resource and params.
  private struct Wanted {
    var name: String
    var resource: String?
    var params: JSONValue?
  }

  /// The state `store` (nil: the job has no database) and the journal's `checkpoints` hold
  /// for `manifest`'s steps, and each kept table's rows as a JSON
  /// array (`StartValue`), in the order of `tables`.
  /// - Throws: the database's errors.
  static func take(_ manifest: Manifest, store: (any TargetStore)?, checkpoints: [CheckpointRecord], fresh: Bool) throws -> (
    RecordingStart, [Data]
  ) {
    var start = RecordingStart()
    var wanted: [Wanted] = []
    for checkpoint in checkpoints {
      guard let step = manifest.allSteps.first(where: { $0.id == checkpoint.stepID }) else { continue }
      start.checkpoints[step.id] = RecordingStart.Checkpoint(
        run: checkpoint.runID, lineage: checkpoint.lineage, status: checkpoint.status.rawValue,
        sameDefinition: checkpoint.fingerprint == step.fingerprint(in: manifest), attempts: checkpoint.attempts, rows: checkpoint.rows,
        bytes: checkpoint.bytes, finishedAt: checkpoint.finishedAt)
    }
    guard let store else { return (start, []) }
    for step in steps(manifest) {
      switch step.kind {
      case .http(let options):
        guard !fresh else { continue }
        if options.incremental != nil, let value = try store.cursor(job: manifest.job, stepID: step.id).value {
          start.cursors[step.id] = value.json
        }
        if AnswerValidators.apply(to: options), let kept = try store.validators(job: manifest.job, stepID: step.id),
          kept.fingerprint == step.fingerprint(in: manifest)
        {
          start.validators[step.id] = RecordingStart.Validators(request: kept.request, etag: kept.etag, lastModified: kept.lastModified)
        }
        if let load = options.load, load.write != .replace || start.validators[step.id] != nil {
          wanted.append(Wanted(name: load.table))
        }
      case .tableStream(let options):
        // A kept scheme is used without asking the platform for it; kept tables that are
        // intact and record their answer may hold the answer (unchanged) or start a delta.
        guard let scheme = try store.scheme(for: options.resource) else { continue }
        start.schemes[scheme.name] = Bookkeeping.encodeScheme(scheme)
        for table in scheme.outputs {
          wanted.append(
            Wanted(
              name: store.naming.physicalName(resource: scheme.name, table: table.name, params: options.params),
              resource: scheme.name, params: options.params))
        }
      default: continue
      }
    }
    var rows: [Data] = []
    var seen: Set<String> = []
    for table in wanted where seen.insert(table.name).inserted {
      let columns = try store.write { try $0.columnTypes(ofTable: table.name) }
      // A platform table that is missing is still listed: its scheme is kept all the same.
      guard !columns.isEmpty || table.resource != nil else { continue }
      let intact = try store.isIntact(table: table.name)
      let answer = try table.resource == nil ? nil : (store as? any KeptTables)?.recordedAnswer(ofTable: table.name)
      // A platform table's rows matter only while they may hold the answer or start a delta:
      // otherwise the replay's load replaces them, as the recorded run's did.
      let copied = table.resource == nil || (intact && answer != nil)
      var values: [[StartValue]] = []
      if copied {
        try store.query("SELECT * FROM " + quoted(table.name), columns: { _ in }) { row in
          values.append(row.map(startValue))
        }
      }
      start.tables.append(
        RecordingStart.Table(
          name: table.name, columns: columns.map { [$0.name, $0.type?.rawValue ?? ""] }, rows: values.count, rowsFile: "",
          intact: intact && copied, resource: table.resource, params: table.params?.json, contentVersion: answer?.contentVersion,
          etag: answer?.etag, cacheHash: answer?.cacheHash))
      rows.append(try JSONEncoder().encode(values))
    }
    return (start, rows)
  }

  /// Seeds `store` with `replayer`'s start state, when it holds any: refuses a folder that
  /// holds state of the job already (a run in its journal, a kept cursor or validators, one
  /// of the tables; `earlierRun`, the journal's last run of the job), since the replay could then send neither the recorded requests nor
  /// keep that state.
  /// - Throws: `Refusal`; `RecordingError`; the database's errors.
  static func seed(_ replayer: TrafficReplayer, _ manifest: Manifest, store: any TargetStore, earlierRun: String?) throws {
    let start = replayer.start
    guard !start.holdsNoData else { return }
    let advice =
      "a replay of a recording made from kept state (its start section, docs/recordings.md) starts from that state, "
      + "so it runs into a folder that holds nothing of the job: give it a fresh state.path and database, or record the job from a fresh folder"
    if let run = earlierRun {
      throw Refusal(description: "the run journal already holds run \(run) of job '\(manifest.job)'; \(advice)")
    }
    for step in start.cursors.keys.sorted() where try store.cursor(job: manifest.job, stepID: step).value != nil {
      throw Refusal(description: "step \(step) already keeps a cursor; \(advice)")
    }
    for step in start.validators.keys.sorted() where try store.validators(job: manifest.job, stepID: step) != nil {
      throw Refusal(description: "step \(step) already keeps validators; \(advice)")
    }
    for table in start.tables where try !store.write({ try $0.columns(ofTable: table.name) }).isEmpty {
      throw Refusal(description: "table \(table.name) already exists; \(advice)")
    }
    let rows = try start.tables.map { try replayer.rows(of: $0) }
    try store.write { transaction in
      var created: Set<String> = []
      for table in start.tables {
        guard let resource = table.resource, let text = start.schemes[resource] else { continue }
        let params = try table.params.map { try JSONValue(parsing: $0) } ?? .object([])
        guard created.insert(resource + "\u{0}" + (table.params ?? "")).inserted else { continue }
        _ = try transaction.createTables(for: try Bookkeeping.decodeScheme(text), params: params)
      }
      var loaded: [LoadedTable] = []
      for (number, table) in start.tables.enumerated() {
        let columns = table.columns.filter { $0.count == 2 }.map { (name: $0[0], type: ColumnType(rawValue: $0[1])) }
        guard !columns.isEmpty else { continue }
        _ = try transaction.addMissingColumns(columns, toTable: table.name)
        let staging = "_dray_start_\(number + 1)"
        try transaction.stage(staging, columns: columns, for: table.name) { add in
          for row in rows[number] { try add(row.map(sqlValue)) }
        }
        _ = try transaction.append(from: staging, into: table.name, columns: columns.map(\.name))
        if table.resource != nil, table.intact {
          loaded.append(
            LoadedTable(
              name: table.name, rowCount: rows[number].count,
              answer: AnswerInfo(contentVersion: table.contentVersion, etag: table.etag, cacheHash: table.cacheHash)))
        } else if table.resource == nil, table.intact {
          try transaction.armGuard(ofTable: table.name)
        }
      }
      if !loaded.isEmpty {
        guard let tables = transaction as? any TableAnswerStore else {
          throw Refusal(description: "this database cannot record the versions of the tables a delta starts from")
        }
        try tables.recordLoads(loaded)
      }
      for (step, text) in start.cursors.sorted(by: { $0.key < $1.key }) {
        try transaction.saveCursor(CursorEntry(value: try JSONValue(parsing: text)), job: manifest.job, stepID: step)
      }
      for (id, kept) in start.validators.sorted(by: { $0.key < $1.key }) {
        guard let step = manifest.allSteps.first(where: { $0.id == id }) else { continue }
        try transaction.saveValidators(
          KeptValidators(
            fingerprint: step.fingerprint(in: manifest), request: kept.request, etag: kept.etag, lastModified: kept.lastModified),
          job: manifest.job, stepID: id)
      }
    }
  }

  /// The journal checkpoints `start` holds, for `manifest`'s steps: what the replay's
  /// journal records before it runs, so that each step's checkpoint `before` is the
  /// recorded run's. Recorded without their run, so that no run is continued from them.
  static func checkpoints(_ start: RecordingStart, _ manifest: Manifest) -> [CheckpointRecord] {
    start.checkpoints.sorted(by: { $0.key < $1.key }).compactMap { id, kept in
      guard let step = manifest.allSteps.first(where: { $0.id == id }), let status = CheckpointRecord.Status(rawValue: kept.status) else {
        return nil
      }
      return CheckpointRecord(
        job: manifest.job, stepID: id, runID: kept.run, lineage: kept.lineage,
        fingerprint: kept.sameDefinition ? step.fingerprint(in: manifest) : "", status: status, attempts: kept.attempts,
        rows: kept.rows, bytes: kept.bytes, outputs: "[]", finishedAt: kept.finishedAt)
    }
  }

  /// `name` quoted as SQL quotes identifiers (SQLite and PostgreSQL alike).
  static func quoted(_ name: String) -> String { "\"" + name.replacing("\"", with: "\"\"") + "\"" }

  static func startValue(_ value: SQLValue) -> StartValue {
    switch value {
    case .null: .null
    case .integer(let number): .integer(number)
    case .real(let number): .real(number)
    case .text(let text): .text(text)
    case .blob(let bytes): .bytes(bytes)
    }
  }

  static func sqlValue(_ value: StartValue) -> SQLValue {
    switch value {
    case .null: .null
    case .integer(let number): .integer(number)
    case .real(let number): .real(number)
    case .text(let text): .text(text)
    case .bytes(let bytes): .blob(bytes)
    }
  }
}

extension Runner {
  /// Takes the state the run starts from into the recording (`dray run --record`), or seeds
  /// the folder with the recording's (`--replay`); nothing in a live run. Runs once the job's
  /// lock is held and the journal is open, before the first request.
  /// - Throws: `RunStart.Refusal`; `RecordingError`; `TransportError.file`; the database's
  ///   errors.
  /// - Parameters:
  ///   - earlierRun: at a replay, the journal's last run of the job, if any.
  ///   - checkpoints: when recording, the journal's checkpoints of the job.
  /// - Returns: at a replay, the checkpoints the journal records before the run.
  func recordingStart(earlierRun: String?, checkpoints: [CheckpointRecord], connections: ConnectionRetry) throws -> [CheckpointRecord] {
    switch Traffic.mode {
    case .live: return []
    case .recording(let recorder):
      // A job without a database keeps only its journal.
      let (start, rows) = try connections.run { _ in
        try RunStart.take(
          manifest, store: manifest.database == nil ? nil : database.openStore(fence: nil, cancellation: cancellation),
          checkpoints: checkpoints, fresh: options.fresh)
      }
      try recorder.keepStart(start, rows: rows)
      return []
    case .replaying(let replayer):
      if manifest.database != nil || !replayer.start.holdsNoData {
        try connections.run { _ in
          try RunStart.seed(replayer, manifest, store: database.openStore(fence: nil, cancellation: cancellation), earlierRun: earlierRun)
        }
      }
      // A folder with runs of the job keeps its own checkpoints (a recording without data
      // of its start replays there, as any run).
      return earlierRun == nil ? RunStart.checkpoints(replayer.start, manifest) : []
    }
  }
}
