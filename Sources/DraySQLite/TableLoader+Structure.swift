internal import CSQLite
internal import DrayJSON
internal import DrayModel
internal import DrayTarget

/// The loader's walk through the structure of an answer, as the scanner's sink: the table
/// objects, their names, and which lists each pass loads, skips or leaves for a later pass
/// (`LoadPlan`). Each event first waits for the rows bound so far to be inserted (`drain()`),
/// as what it does may use the connection.
extension LoadSession: TableAnswerSink {

  func beginTable() throws {
    try drain()
    index += 1
    inObject = true
    if pass == .main { plan.objects.append(LoadPlan.Object()) }
    guard index < plan.objects.count else { throw TableAnswerRefusal("the answer changed while it was being read") }
  }

  func tableName(_ name: String) throws {
    guard pass == .main else { return }
    try drain()
    current.name = name
    guard loader.applier.target(named: name) != nil else { return }
    // `data` met before the name: the table is replaced now; its rows load on a later pass.
    if current.hasData { _ = try loader.applier.list(.data, of: name) }
  }

  func endTable() throws { inObject = false }

  /// A list of a table object: load it, or skip it for a later pass (`LoadPlan`). What it
  /// does is `TableAnswerApplier`'s to say.
  func beginList(_ key: TableAnswerKey) throws -> TableAnswerList {
    try drain()
    try loader.applier.admit(key)
    if pass == .main { plan.note(key, at: index) }
    guard let target else { return .skip }
    guard plan.loads(key, of: current, on: pass) else {
      // A delta's `data` replaces its table when met; its rows load with the other inserts.
      if pass == .main && key == .data { _ = try loader.applier.list(key, of: target.sourceName) }
      return .skip
    }
    switch try loader.applier.list(key, of: target.sourceName) {
    case .rows(let upsert): return .rows(try binding(for: target, upsert: upsert))
    case .ids:
      _ = try binding(for: target, upsert: true)
      return .ids
    case nil: return .skip
    }
  }

  func endList(_ key: TableAnswerKey, items: Int) throws {
    if key != .deleteIDs, let name = current.name { outcome.inserted[name, default: 0] += items }
  }

  func binding(for target: TableLoader.Target, upsert: Bool) throws -> RowBinder {
    if let binding = bindings[target.sourceName] { return binding }
    let binding = try RowBinder(session: self, target: target, upsert: upsert)
    bindings[target.sourceName] = binding
    return binding
  }

  func deleteID(_ token: JSONToken, item: Int) throws {
    guard case .number(let text) = token, let p = text.baseAddress, NumberText.isInteger(p, text.count),
      let id = NumberText.int64(p, text.count)
    else { throw TableAnswerApplier.badRowID(token, item: item) }
    // The writer is idle: `beginList` drained it before this list of ids, and no row is
    // handed over while one is read.
    guard let name = current.name, let binding = bindings[name], let delete = binding.deleteByID else { return }
    let bound = sqlite3_bind_int64(delete.handle, 1, id)
    guard bound == SQLITE_OK else { throw binding.stepFailed(bound) }
    let rc = sqlite3_step(delete.handle)
    sqlite3_reset(delete.handle)
    guard rc == SQLITE_DONE else { throw binding.stepFailed(rc) }
    outcome.deleted[name, default: 0] += Int(sqlite3_changes(loader.database.handle))
  }
}
