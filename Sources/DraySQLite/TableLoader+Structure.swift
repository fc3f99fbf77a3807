internal import CSQLite
internal import DrayJSON
internal import DrayModel
public import DrayTarget

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
    guard let target = loader.targets[name] else {
      outcome.skipped.add(name)
      return
    }
    outcome.named.insert(name)
    // `data` met before the name: empty the table now; its rows load on a later pass.
    if current.hasData { try replace(target) }
  }

  func endTable() throws { inObject = false }

  func replace(_ target: TableLoader.Target) throws {
    guard !replaced.contains(target.sourceName) else { return }
    replaced.insert(target.sourceName)
    bindings[target.sourceName] = nil
    try loader.replaceTable(target)
  }

  /// A list of a table object: load it, or skip it for a later pass.
  func beginList(_ key: TableAnswerKey) throws -> TableAnswerList {
    try drain()
    let target = self.target
    switch (key, loader.isDelta) {
    case (.insertRows, false), (.deleteIDs, false):
      throw TableAnswerRefusal(
        "the answer holds a delta ('\(key.name)') but its Content-Version does not say so; refusing to apply it")
    case (.data, false):
      if pass == .main {
        current.hasData = true
        guard let target else {
          if current.name == nil { current.rowsDeferred = true }
          return .skip
        }
        try replace(target)
        return try rows(target, upsert: false)
      }
      return current.rowsDeferred && target != nil ? try rows(target!, upsert: false) : .skip
    case (.data, true), (.insertRows, true):
      if pass == .main {
        current.hasRows = true
        if key == .data {
          current.hasData = true
          if let target { try replace(target) }
        }
      }
      guard pass == .inserts, let target else { return .skip }
      return try rows(target, upsert: true)
    case (.deleteIDs, true):
      switch pass {
      case .main:
        guard current.name != nil else {
          current.idsDeferred = true
          return .skip
        }
      case .removals:
        guard current.idsDeferred else { return .skip }
      case .inserts:
        return .skip
      }
      guard let target else { return .skip }
      return try ids(target)
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

  private func checkDelta(_ target: TableLoader.Target) throws {
    guard !deltaChecked.contains(target.sourceName) && !replaced.contains(target.sourceName) else { return }
    try loader.checkDeltaTarget(target)
    deltaChecked.insert(target.sourceName)
  }

  private func rows(_ target: TableLoader.Target, upsert: Bool) throws -> TableAnswerList {
    if upsert { try checkDelta(target) }
    return .rows(try binding(for: target, upsert: upsert))
  }

  private func ids(_ target: TableLoader.Target) throws -> TableAnswerList {
    guard target.cached else {
      throw TableAnswerRefusal(
        "the answer deletes rows by id from table \(target.sourceName), whose resource has no row ids (it is not cached)")
    }
    try checkDelta(target)
    _ = try binding(for: target, upsert: true)
    return .ids
  }

  func deleteID(_ token: JSONToken, item: Int) throws {
    guard case .number(let text) = token, let p = text.baseAddress, NumberText.isInteger(p, text.count),
      let id = NumberText.int64(p, text.count)
    else {
      let shown = if case .number(let text) = token { PrintableText.excerpt(String(decoding: text, as: UTF8.self)) } else { "a non-number" }
      throw TableAnswerRefusal("delete_ids holds row ids (integers of at most 64 bits); item \(item) is \(shown)")
    }
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
