internal import CSQLite
internal import CYAJL
internal import DrayModel
internal import Foundation

/// The loader's walk through the structure of an answer: the list of tables, each table
/// object's keys, and which lists each pass loads, skips or leaves for a later pass
/// (`LoadPlan`).
extension LoadSession {

  func startTopList() -> Int32 {
    cursor.pointee.place = .tables
    return 1
  }

  func startObject() -> Int32 {
    index += 1
    if pass == .main { plan.objects.append(LoadPlan.Object()) }
    guard index < plan.objects.count else { return fail("the answer changed while it was being read", inRow: false) }
    nameSeen = false
    cursor.pointee.place = .object
    return 1
  }

  func endObject() -> Int32 {
    if current.name == nil { return fail("an element of the answer has no 'name'", inRow: false) }
    cursor.pointee.place = .tables
    return 1
  }

  func key(_ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    let key: Key
    switch String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self) {
    case "name": key = .name
    case "data": key = .data
    case "insert_rows": key = .insertRows
    case "delete_ids": key = .deleteIDs
    default: key = .other
    }
    cursor.pointee.key = key
    cursor.pointee.place = .value
    return 1
  }

  /// A scalar as the value of a table object's key.
  func scalarValue(isString: Bool, _ text: UnsafePointer<UInt8>?, _ length: Int) -> Int32 {
    let key = cursor.pointee.key
    cursor.pointee.place = .object
    switch key {
    case .name:
      guard isString, let text else { return fail("a table's 'name' must be a string", inRow: false) }
      return setName(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
    case .data, .insertRows, .deleteIDs:
      let name = key == .data ? "data" : key == .insertRows ? "insert_rows" : "delete_ids"
      return fail("a table's '\(name)' must be a list", inRow: false)
    case .other:
      return 1
    }
  }

  func setName(_ name: String) -> Int32 {
    if nameSeen { return fail("a table object has 'name' twice", inRow: false) }
    nameSeen = true
    guard pass == .main else { return 1 }
    current.name = name
    guard let target = loader.targets[name] else {
      if !outcome.skipped.contains(name) { outcome.skipped.append(name) }
      return 1
    }
    // `data` met before the name: empty the table now; its rows load on a later pass.
    if current.hasData { return replace(target) }
    return 1
  }

  func replace(_ target: TableLoader.Target) -> Int32 {
    guard !replaced.contains(target.sourceName) else { return 1 }
    replaced.insert(target.sourceName)
    do {
      bindings[target.sourceName] = nil
      try loader.replaceTable(target)
    } catch {
      return fail(error)
    }
    return 1
  }

  /// A list as the value of a table object's key: load it, or skip it for a later pass.
  func startList() -> Int32 {
    let key = cursor.pointee.key
    let target = self.target
    switch (key, loader.isDelta) {
    case (.insertRows, false), (.deleteIDs, false):
      return fail(
        "the answer holds a delta ('\(key == .insertRows ? "insert_rows" : "delete_ids")') but its Content-Version does not say so; refusing to apply it",
        inRow: false)
    case (.data, false):
      if pass == .main {
        current.hasData = true
        guard let target else {
          if current.name == nil { current.rowsDeferred = true }
          return skip()
        }
        if replace(target) == 0 { return 0 }
        return startRows(target, upsert: false)
      }
      return current.rowsDeferred && target != nil ? startRows(target!, upsert: false) : skip()
    case (.data, true), (.insertRows, true):
      if pass == .main {
        current.hasRows = true
        if key == .data {
          current.hasData = true
          if let target, replace(target) == 0 { return 0 }
        }
      }
      guard pass == .inserts, let target else { return skip() }
      return startRows(target, upsert: true)
    case (.deleteIDs, true):
      switch pass {
      case .main:
        guard current.name != nil else {
          current.idsDeferred = true
          return skip()
        }
      case .removals:
        guard current.idsDeferred else { return skip() }
      case .inserts:
        return skip()
      }
      guard let target else { return skip() }
      return startIDs(target)
    case (.name, _):
      return fail("a table's 'name' must be a string", inRow: false)
    case (.other, _):
      return skip()
    }
  }

  /// An object as the value of a table object's key: skipped when the key is not dray's.
  func startObjectValue() -> Int32 {
    switch cursor.pointee.key {
    case .other: return skip()
    case .name: return fail("a table's 'name' must be a string", inRow: false)
    case .data: return fail("a table's 'data' must be a list", inRow: false)
    case .insertRows: return fail("a table's 'insert_rows' must be a list", inRow: false)
    case .deleteIDs: return fail("a table's 'delete_ids' must be a list", inRow: false)
    }
  }

  func skip() -> Int32 {
    cursor.pointee.place = .skip
    cursor.pointee.depth = 1
    return 1
  }

  func binding(for target: TableLoader.Target, upsert: Bool) throws -> TableBinding {
    if let binding = bindings[target.sourceName] { return binding }
    let binding = try TableBinding(database: loader.database, target: target, upsert: upsert)
    bindings[target.sourceName] = binding
    return binding
  }

  func startRows(_ target: TableLoader.Target, upsert: Bool) -> Int32 {
    do {
      if upsert && !deltaChecked.contains(target.sourceName) && !replaced.contains(target.sourceName) {
        try loader.checkDeltaTarget(target)
        deltaChecked.insert(target.sourceName)
      }
      let binding = try binding(for: target, upsert: upsert)
      cursor.pointee.insert = binding.insert.handle
      cursor.pointee.kinds = binding.kinds
      cursor.pointee.texts = binding.texts
      cursor.pointee.width = target.columns.count
    } catch {
      return fail(error)
    }
    cursor.pointee.place = .rows
    cursor.pointee.row = 0
    cursor.pointee.inserted = 0
    return 1
  }

  func endRows() -> Int32 {
    let c = cursor.pointee
    if let name = current.name { outcome.inserted[name, default: 0] += c.inserted }
    cursor.pointee.insert = nil
    cursor.pointee.place = .object
    return 1
  }

  func startIDs(_ target: TableLoader.Target) -> Int32 {
    guard target.cached else {
      return fail(
        "the answer deletes rows by id from table \(target.sourceName), whose resource has no row ids (it is not cached)", inRow: false)
    }
    do {
      if !deltaChecked.contains(target.sourceName) && !replaced.contains(target.sourceName) {
        try loader.checkDeltaTarget(target)
        deltaChecked.insert(target.sourceName)
      }
      _ = try binding(for: target, upsert: true)
    } catch {
      return fail(error)
    }
    cursor.pointee.place = .ids
    cursor.pointee.row = 0
    return 1
  }

  func deleteID(_ text: UnsafePointer<UInt8>?, _ length: Int) -> Int32 {
    cursor.pointee.row += 1
    guard let text, NumberText.isInteger(text, length), let id = NumberText.int64(text, length) else {
      let shown = text.map { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) } ?? "a non-number"
      return fail("delete_ids holds row ids (integers of at most 64 bits); item \(cursor.pointee.row) is \(shown)", inRow: false)
    }
    guard let name = current.name, let delete = bindings[name]?.deleteByID else { return 0 }
    let bound = sqlite3_bind_int64(delete.handle, 1, id)
    guard bound == SQLITE_OK else { return stepFailed(bound) }
    let rc = sqlite3_step(delete.handle)
    sqlite3_reset(delete.handle)
    guard rc == SQLITE_DONE else { return stepFailed(rc) }
    outcome.deleted[name, default: 0] += Int(sqlite3_changes(loader.database.handle))
    return 1
  }

  func unexpected(_ what: String) -> Int32 {
    switch cursor.pointee.place {
    case .start: fail("the answer must be a JSON list of tables, found \(what)", inRow: false)
    case .tables: fail("each element of the answer must be an object with 'name' and 'data', found \(what)", inRow: false)
    case .rows: fail("each row must be a JSON list of values, found \(what)")
    case .ids: fail("delete_ids holds row ids (integers), found \(what)", inRow: false)
    default: fail("unexpected \(what) in the answer", inRow: false)
    }
  }
}
