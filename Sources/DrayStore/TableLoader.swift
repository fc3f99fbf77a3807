internal import CSQLite
internal import CYAJL
internal import DrayModel
internal import Foundation

#if canImport(Glibc)
  internal import Glibc
#endif

/// Applies a table answer (platform-api.md §3) from a file to the store, streaming.
///
/// yajl parses the file in 1 MiB chunks and each value is bound straight into a prepared
/// INSERT, so memory stays bounded whatever the answer's size. Both shapes are read:
///
///     [{"name": "output_table", "data": [[1, "apple", 0.52], ...]}, ...]            (full)
///     [{"name": "output_table", "insert_rows": [...], "delete_ids": [3, 7]}, ...]  (delta)
///
/// JSON objects are unordered, so the keys of a table object may come in any order. The
/// loader applies what it can in one pass over the file and reads the file again for what
/// had to wait (at most three passes, each streaming):
/// - full answer: `data` whose table `name` comes later is loaded in a second pass;
/// - delta answer: every `delete_ids` is applied before any `insert_rows` (else an update,
///   a delete and an insert of the same row id, would lose the new row), so the inserts
///   come from a second pass, and `delete_ids` before their table's `name` from a pass of
///   their own. A table that holds `data` in a delta answer (the server sent full data for
///   it) is emptied with the deletes and refilled with the inserts.
///
/// An insert for a row id the table already holds replaces that row. Tables the scheme does
/// not list are skipped and reported. Values follow the rule in `docs/store.md`.
struct TableLoader {
  /// One output table of the resource, as the loader fills it.
  struct Target {
    var sourceName: String
    var physicalName: String
    /// Names and platform types of the row's values, the row id first for a cached resource.
    var columns: [ResourceScheme.Column]
    var kinds: [ColumnKind]
    var cached: Bool
  }

  /// What the answer did, per output table (source names).
  struct Outcome {
    var inserted: [String: Int] = [:]
    var deleted: [String: Int] = [:]
    /// Tables emptied and refilled because the answer held their `data`.
    var replaced: Set<String> = []
    /// Tables the answer named that the scheme does not list, in order of appearance.
    var skipped: [String] = []
    /// The first `mismatchDetailLimit` values that did not fit their column's type.
    var mismatches: [ValueMismatch] = []
    /// Every value that did not fit, counted.
    var mismatchCount = 0
  }

  /// How many mismatches are described one by one; the rest are only counted.
  static let mismatchDetailLimit = 100

  let database: Database
  let resource: String
  /// By source table name.
  let targets: [String: Target]
  /// The answer is a delta (its Content-Version says so).
  let isDelta: Bool
  /// Empties a table before a full answer refills it (recreating it when its columns are
  /// not the scheme's).
  let replaceTable: (Target) throws -> Void
  /// Throws when a delta cannot apply to the table (its columns are not the scheme's).
  let checkDeltaTarget: (Target) throws -> Void
  /// Checked between 1 MiB pieces of the file: a cancelled load stops there.
  let cancellation: Cancellation?

  /// Parses the answer in `file` and applies it inside the caller's transaction.
  /// - Throws: `LoadError` naming resource, table, row and column.
  func run(file: String) throws -> Outcome {
    let session = LoadSession(loader: self)
    defer { session.close() }
    var pass = LoadSession.Pass.main
    while true {
      try session.parse(file: file, pass: pass)
      guard let next = session.pass(after: pass) else { break }
      pass = next
    }
    session.outcome.replaced = session.replaced
    return session.outcome
  }
}

/// Where a load failed: resource, and when known table, row and column (1-based).
public struct LoadError: Error, Sendable, CustomStringConvertible {
  public var resource: String
  public var table: String?
  public var row: Int?
  public var column: Int?
  public var message: String

  init(resource: String, table: String? = nil, row: Int? = nil, column: Int? = nil, message: String) {
    self.resource = resource
    self.table = table
    self.row = row
    self.column = column
    self.message = message
  }

  public var description: String {
    var place = "resource \(resource)"
    if let table { place += ", table \(table)" }
    if let row { place += ", row \(row)" }
    if let column { place += ", column \(column)" }
    return "\(place): \(message)"
  }
}

// MARK: - The hot state

/// Where the parser is in the answer.
private enum Place: UInt8 {
  /// Before the top-level list.
  case start
  /// In the top-level list, between table objects.
  case tables
  /// In a table object, between keys.
  case object
  /// After a key of a table object, before its value.
  case value
  /// In a list of rows being loaded, between rows.
  case rows
  /// In a row being loaded.
  case row
  /// In a nested array or object inside a row (kept as JSON text).
  case nested
  /// In a `delete_ids` list being applied.
  case ids
  /// In a value being skipped.
  case skip
  /// After the top-level list.
  case done
}

/// The keys of a table object the loader knows.
private enum Key: UInt8 { case name, data, insertRows, deleteIDs, other }

/// The state yajl's callbacks update for every value. Only trivial fields, reached through
/// a raw pointer: the per-value path does no reference counting and no exclusivity checks.
private struct Cursor {
  var place = Place.start
  var key = Key.other
  /// Depth inside a skipped value, or inside a nested value of a row.
  var depth = 0
  /// The prepared INSERT of the rows being loaded.
  var insert: OpaquePointer?
  var kinds: UnsafeMutablePointer<ColumnKind>?
  /// Values per row.
  var width = 0
  /// Values bound so far in the current row.
  var column = 0
  /// 1-based number of the current row in its list.
  var row = 0
  /// Rows inserted from the current list.
  var inserted = 0
  /// The current row's text values, copied here and bound without a copy (`SQLITE_STATIC`)
  /// when the row is complete: SQLite then allocates nothing per value.
  var arena: UnsafeMutablePointer<UInt8>
  var arenaUsed = 0
  var arenaCapacity: Int
  /// Column, offset and length of each text value in `arena`, in the order met.
  var texts: UnsafeMutablePointer<PendingText>?
  var textCount = 0
  var session: Unmanaged<LoadSession>

  init(session: LoadSession, arena: UnsafeMutablePointer<UInt8>, capacity: Int) {
    self.session = Unmanaged.passUnretained(session)
    self.arena = arena
    self.arenaCapacity = capacity
  }
}

/// A text value of the current row, waiting in the cursor's arena.
private struct PendingText {
  var column: Int32
  var offset: Int
  var length: Int
}

/// Everything off the per-value path: passes, tables, statements, errors, reports.
private final class LoadSession {
  enum Pass { case main, removals, inserts }

  /// What one table object of the answer holds, learned on the first pass.
  struct Object {
    var name: String?
    var hasRows = false
    var hasData = false
    /// Rows that could not load on the pass that met them (full answer, `name` after `data`).
    var rowsDeferred = false
    /// `delete_ids` met before the table's name.
    var idsDeferred = false
  }

  /// Prepared statements of one table.
  struct Statements {
    var insert: Statement
    var deleteByID: Statement?
    var kinds: UnsafeMutablePointer<ColumnKind>
    var texts: UnsafeMutablePointer<PendingText>
  }

  let loader: TableLoader
  let cursor: UnsafeMutablePointer<Cursor>
  let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
  var pass = Pass.main
  var objects: [Object] = []
  var index = -1
  var nameSeen = false
  var statements: [String: Statements] = [:]
  var replaced: Set<String> = []
  var deltaChecked: Set<String> = []
  var outcome = TableLoader.Outcome()
  var failure: LoadError?
  var nested: [UInt8] = []
  var nestedNeedsComma: [Bool] = []
  var nestedIsArray = true

  init(loader: TableLoader) {
    self.loader = loader
    cursor = UnsafeMutablePointer<Cursor>.allocate(capacity: 1)
    let capacity = 64 * 1024
    cursor.initialize(to: Cursor(session: self, arena: UnsafeMutablePointer<UInt8>.allocate(capacity: capacity), capacity: capacity))
  }

  func close() {
    for s in statements.values {
      s.kinds.deallocate()
      s.texts.deallocate()
    }
    statements.removeAll()
    cursor.pointee.arena.deallocate()
    cursor.deinitialize(count: 1)
    cursor.deallocate()
    buffer.deallocate()
  }

  /// Makes room for `count` more bytes in the arena (between binds, so nothing bound moves).
  func growArena(_ count: Int) {
    let c = cursor.pointee
    var capacity = c.arenaCapacity * 2
    while capacity < c.arenaUsed + count { capacity *= 2 }
    let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    bigger.update(from: c.arena, count: c.arenaUsed)
    c.arena.deallocate()
    cursor.pointee.arena = bigger
    cursor.pointee.arenaCapacity = capacity
  }

  var current: Object {
    get { objects[index] }
    set { objects[index] = newValue }
  }

  var target: TableLoader.Target? { current.name.flatMap { loader.targets[$0] } }

  /// The pass that must follow `pass`, or nil when the answer is applied.
  func pass(after pass: Pass) -> Pass? {
    if loader.isDelta {
      if pass == .main && objects.contains(where: { $0.idsDeferred }) { return .removals }
      if pass != .inserts && objects.contains(where: { $0.hasRows && $0.name.flatMap { loader.targets[$0] } != nil }) {
        return .inserts
      }
      return nil
    }
    if pass == .main && objects.contains(where: { $0.rowsDeferred && $0.name.flatMap { loader.targets[$0] } != nil }) {
      return .inserts
    }
    return nil
  }

  // MARK: Reading the file

  func parse(file: String, pass: Pass) throws {
    self.pass = pass
    index = -1
    cursor.pointee.place = .start
    cursor.pointee.insert = nil
    cursor.pointee.arenaUsed = 0
    cursor.pointee.textCount = 0
    let fd = open(file, O_RDONLY)
    guard fd >= 0 else {
      throw LoadError(resource: loader.resource, message: "cannot read the downloaded answer at \(file)")
    }
    defer { Glibc.close(fd) }
    var callbacks = LoadSession.callbacks()
    guard let parser = yajl_alloc(&callbacks, nil, UnsafeMutableRawPointer(cursor)) else {
      throw LoadError(resource: loader.resource, message: "out of memory starting the JSON parser")
    }
    defer { yajl_free(parser) }
    var offset = 0
    var previousTail: [UInt8] = []
    while true {
      if loader.cancellation?.isCancelled == true {
        throw LoadError(resource: loader.resource, message: "the load was interrupted; nothing of it was kept")
      }
      let count = read(fd, buffer.baseAddress, buffer.count)
      guard count >= 0 else {
        throw LoadError(
          resource: loader.resource, message: "cannot read the downloaded answer at \(file): \(String(cString: strerror(errno)))")
      }
      let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
      let status =
        count == 0
        ? yajl_complete_parse(parser) : yajl_parse(parser, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count)
      if status == yajl_status_client_canceled {
        throw failure ?? LoadError(resource: loader.resource, message: "the load stopped")
      }
      if status == yajl_status_error {
        throw syntaxError(parser, file: file, bytes: bytes, previousTail: previousTail, offset: offset, atEnd: count == 0)
      }
      if count == 0 { break }
      offset += count
      previousTail = Array(bytes.suffix(16))
    }
    if pass == .main && cursor.pointee.place == .start {
      throw LoadError(resource: loader.resource, message: "the answer is empty; expected a JSON list of tables")
    }
  }

  /// The error for JSON yajl refuses, naming NaN and Infinity, which are not JSON.
  func syntaxError(
    _ parser: yajl_handle, file: String, bytes: UnsafeRawBufferPointer, previousTail: [UInt8], offset: Int, atEnd: Bool
  ) -> LoadError {
    let c = cursor.pointee
    let inRow = c.place == .row || c.place == .nested
    let row = inRow || c.place == .rows ? c.row + (c.place == .rows ? 1 : 0) : nil
    let column = inRow ? c.column + 1 : nil
    let table = index >= 0 && index < objects.count ? objects[index].name : nil
    if atEnd && c.place == .start, let blank = BlankAnswer.size(ofFile: file) {
      return LoadError(resource: loader.resource, message: BlankAnswer.describe(bytes: blank) + "; expected a JSON list of tables")
    }
    if atEnd {
      return LoadError(
        resource: loader.resource, table: table, row: row, column: column,
        message: "the answer ends before its JSON is complete (\(offset) bytes); the download was cut short")
    }
    let consumed = Int(yajl_get_bytes_consumed(parser))
    // The offending token starts at most a byte before the point yajl stopped at.
    let start = max(0, consumed - 1)
    var window = consumed - 1 < 0 ? previousTail : []
    window += bytes[min(start, bytes.count)..<min(bytes.count, start + 12)]
    let text = String(decoding: window, as: UTF8.self)
    let token = ["NaN", "-Infinity", "Infinity", "-NaN", "nan", "inf", "-inf"].first { text.hasPrefix($0) }
    if let token {
      return LoadError(
        resource: loader.resource, table: table, row: row, column: column,
        message: "\(token) is not a JSON number; the answer is refused (JSON has no NaN or Infinity)")
    }
    let detail = bytes.withMemoryRebound(to: UInt8.self) { b in
      let message = yajl_get_error(parser, 0, b.baseAddress, b.count)
      defer { yajl_free_error(parser, message) }
      return message.map { String(cString: $0) } ?? "invalid JSON"
    }
    return LoadError(
      resource: loader.resource, table: table, row: row, column: column,
      message: "the answer is not valid JSON (\(detail.trimmingCharacters(in: .whitespacesAndNewlines)), near byte \(offset + consumed))")
  }

  // MARK: Failing

  /// Records the error that stops the load, placed at the current table, row and value
  /// (`inRow`), or at the current row as a whole (`wholeRow`), and returns 0 to stop yajl.
  func fail(_ message: String, inRow: Bool = true, wholeRow: Bool = false) -> Int32 {
    let c = cursor.pointee
    let rowKnown = inRow && (c.place == .row || c.place == .nested || c.place == .rows)
    failure = LoadError(
      resource: loader.resource, table: index >= 0 ? current.name : nil, row: rowKnown ? c.row + (c.place == .rows ? 1 : 0) : nil,
      column: rowKnown && c.place != .rows && !wholeRow ? c.column + 1 : nil, message: message)
    return 0
  }

  /// Stops the load with `error`, kept as it is when it already names its place.
  func fail(_ error: any Error) -> Int32 {
    if let error = error as? LoadError {
      failure = error
      return 0
    }
    return fail("\(error)", inRow: false)
  }

  func stepFailed(_ rc: Int32) -> Int32 {
    let message = String(cString: sqlite3_errmsg(loader.database.handle))
    // SQLITE_CONSTRAINT_PRIMARYKEY, a macro Swift does not import (https://sqlite.org/rescode.html).
    if rc == SQLITE_CONSTRAINT | (6 << 8), target?.cached == true {
      return fail("the row's id (\(Store.rowIDColumn)) is already in the table's data; row ids must be unique", wholeRow: true)
    }
    return fail("SQLite refused the row: \(message)", wholeRow: true)
  }

  func tooManyValues() -> Int32 {
    let c = cursor.pointee
    return fail("the row has more than \(c.width) values; the table has \(LoadSession.describeWidth(target, c.width))")
  }

  static func describeWidth(_ target: TableLoader.Target?, _ width: Int) -> String {
    let cached = target?.cached == true
    return "\(width) column\(width == 1 ? "" : "s")\(cached ? " (a row id, then the scheme's columns)" : "")"
  }

  func badRowID(_ found: String) -> Int32 {
    fail("the row id (\(Store.rowIDColumn)) must be an integer of at most 64 bits; found \(found)")
  }

  // MARK: Structure

  func startTopList() -> Int32 {
    cursor.pointee.place = .tables
    return 1
  }

  func startObject() -> Int32 {
    index += 1
    if pass == .main { objects.append(Object()) }
    guard index < objects.count else { return fail("the answer changed while it was being read", inRow: false) }
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
      if let old = statements.removeValue(forKey: target.sourceName) {
        old.kinds.deallocate()
        old.texts.deallocate()
      }
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

  func statements(for target: TableLoader.Target, upsert: Bool) throws -> Statements {
    if let s = statements[target.sourceName] { return s }
    let quoted = Database.quote(target.physicalName)
    let placeholders = Array(repeating: "?", count: target.columns.count).joined(separator: ",")
    let verb = upsert ? "INSERT OR REPLACE INTO" : "INSERT INTO"
    let insert = try loader.database.prepare("\(verb) \(quoted) VALUES (\(placeholders))")
    let delete =
      target.cached ? try loader.database.prepare("DELETE FROM \(quoted) WHERE \(Database.quote(Store.rowIDColumn)) = ?") : nil
    let kinds = UnsafeMutablePointer<ColumnKind>.allocate(capacity: max(1, target.kinds.count))
    kinds.initialize(from: target.kinds, count: target.kinds.count)
    let texts = UnsafeMutablePointer<PendingText>.allocate(capacity: max(1, target.kinds.count))
    let s = Statements(insert: insert, deleteByID: delete, kinds: kinds, texts: texts)
    statements[target.sourceName] = s
    return s
  }

  func startRows(_ target: TableLoader.Target, upsert: Bool) -> Int32 {
    do {
      if upsert && !deltaChecked.contains(target.sourceName) && !replaced.contains(target.sourceName) {
        try loader.checkDeltaTarget(target)
        deltaChecked.insert(target.sourceName)
      }
      let s = try statements(for: target, upsert: upsert)
      cursor.pointee.insert = s.insert.handle
      cursor.pointee.kinds = s.kinds
      cursor.pointee.texts = s.texts
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
      _ = try statements(for: target, upsert: true)
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
    guard let name = current.name, let delete = statements[name]?.deleteByID else { return 0 }
    sqlite3_bind_int64(delete.handle, 1, id)
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

  // MARK: Nested values inside a row, kept as JSON text

  func startNested(isArray: Bool) -> Int32 {
    nested.removeAll(keepingCapacity: true)
    nestedNeedsComma.removeAll(keepingCapacity: true)
    nestedIsArray = isArray
    nested.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    nestedNeedsComma.append(false)
    cursor.pointee.place = .nested
    cursor.pointee.depth = 1
    return 1
  }

  private func separator() {
    if nestedNeedsComma[nestedNeedsComma.count - 1] { nested.append(UInt8(ascii: ",")) }
    nestedNeedsComma[nestedNeedsComma.count - 1] = true
  }

  func nestedOpen(isArray: Bool) -> Int32 {
    separator()
    nested.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    nestedNeedsComma.append(false)
    cursor.pointee.depth += 1
    return 1
  }

  func nestedClose(isArray: Bool) -> Int32 {
    nested.append(isArray ? UInt8(ascii: "]") : UInt8(ascii: "}"))
    nestedNeedsComma.removeLast()
    cursor.pointee.depth -= 1
    guard cursor.pointee.depth == 0 else { return 1 }
    cursor.pointee.place = .row
    let found = nestedIsArray ? "an array" : "an object"
    return nested.withUnsafeBufferPointer { LoadSession.bindText(cursor, $0.baseAddress!, $0.count, found: found, textColumnAccepts: true) }
  }

  func nestedKey(_ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    separator()
    appendString(text, length)
    nested.append(UInt8(ascii: ":"))
    nestedNeedsComma[nestedNeedsComma.count - 1] = false
    return 1
  }

  func nestedScalar(_ bytes: String) -> Int32 {
    separator()
    nested.append(contentsOf: bytes.utf8)
    return 1
  }

  func nestedNumber(_ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    separator()
    nested.append(contentsOf: UnsafeBufferPointer(start: text, count: length))
    return 1
  }

  func nestedString(_ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    separator()
    appendString(text, length)
    return 1
  }

  private func appendString(_ text: UnsafePointer<UInt8>, _ length: Int) {
    var out = ""
    JSONValue.writeString(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self), to: &out)
    nested.append(contentsOf: out.utf8)
  }

  // MARK: Mismatches

  func mismatch(found: String, value: @autoclosure () -> String, storedAs: String) {
    outcome.mismatchCount += 1
    guard outcome.mismatches.count < TableLoader.mismatchDetailLimit, let target else { return }
    let c = cursor.pointee
    var text = value()
    if text.count > 64 { text = String(text.prefix(63)) + "…" }
    let column = target.columns[c.column]
    outcome.mismatches.append(
      ValueMismatch(
        table: target.sourceName, row: c.row, column: c.column + 1, columnName: column.name, declaredType: column.type,
        found: found, value: text, storedAs: storedAs))
  }

  static func text(_ p: UnsafePointer<UInt8>, _ n: Int) -> String {
    String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
  }

  // MARK: Binding (the per-value path)

  @inline(__always)
  static func session(_ c: UnsafeMutablePointer<Cursor>) -> LoadSession { c.pointee.session.takeUnretainedValue() }

  @inline(__always)
  static func bindText(
    _ c: UnsafeMutablePointer<Cursor>, _ p: UnsafePointer<UInt8>, _ n: Int, found: String, textColumnAccepts: Bool
  ) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    if kind == .rowID { return session(c).badRowID(found) }
    stage(c, column, p, n)
    let fits = kind == .any || (kind == .text && textColumnAccepts)
    if !fits { session(c).mismatch(found: found, value: text(p, n), storedAs: "text") }
    c.pointee.column = column + 1
    return 1
  }

  /// Copies a text value into the row's arena, to be bound when the row is complete.
  @inline(__always)
  static func stage(_ c: UnsafeMutablePointer<Cursor>, _ column: Int, _ p: UnsafePointer<UInt8>, _ n: Int) {
    if c.pointee.arenaUsed + n > c.pointee.arenaCapacity { session(c).growArena(n) }
    let offset = c.pointee.arenaUsed
    (c.pointee.arena + offset).update(from: p, count: n)
    c.pointee.arenaUsed = offset + n
    c.pointee.texts![c.pointee.textCount] = PendingText(column: Int32(column + 1), offset: offset, length: n)
    c.pointee.textCount += 1
  }

  @inline(__always)
  static func bindString(_ c: UnsafeMutablePointer<Cursor>, _ p: UnsafePointer<UInt8>?, _ n: Int) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    if kind == .rowID { return session(c).badRowID("a string") }
    // A NULL pointer would bind SQL NULL; "" must stay an empty string.
    let pointer = p ?? emptyText
    stage(c, column, pointer, n)
    if kind == .integer || kind == .real {
      session(c).mismatch(found: "a string", value: JSONValue.quoted(text(pointer, n)), storedAs: "text")
    }
    c.pointee.column = column + 1
    return 1
  }

  // nonisolated(unsafe): one byte, written once here and only read afterwards.
  nonisolated(unsafe) static let emptyText: UnsafePointer<UInt8> = {
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    p.initialize(to: 0)
    return UnsafePointer(p)
  }()

  @inline(__always)
  static func bindNumber(_ c: UnsafeMutablePointer<Cursor>, _ p: UnsafePointer<UInt8>, _ n: Int) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    let statement = c.pointee.insert
    let index = Int32(column + 1)
    if NumberText.isInteger(p, n) {
      if let value = NumberText.int64(p, n) {
        if kind == .real {
          let real = Double(value)
          if Int64(exactly: real) == value {
            sqlite3_bind_double(statement, index, real)
          } else {
            sqlite3_bind_int64(statement, index, value)
            session(c).mismatch(found: "an integer a double cannot hold exactly", value: text(p, n), storedAs: "integer")
          }
        } else {
          sqlite3_bind_int64(statement, index, value)
          if kind == .text { session(c).mismatch(found: "an integer", value: text(p, n), storedAs: "integer") }
        }
        c.pointee.column = column + 1
        return 1
      }
      // Beyond 64 bits: exact digits as text, unless a DOUBLE column's double holds them exactly.
      if kind == .rowID { return session(c).badRowID(text(p, n)) }
      if kind == .real {
        let real = NumberText.strtodCopy(p, n)
        if NumberText.isExact(real, integerText: p, n) {
          sqlite3_bind_double(statement, index, real)
          c.pointee.column = column + 1
          return 1
        }
      }
      return bindText(c, p, n, found: "an integer beyond 64 bits", textColumnAccepts: false)
    }
    if kind == .rowID { return session(c).badRowID(text(p, n)) }
    let real = NumberText.double(p, n)
    guard real.isFinite else { return bindText(c, p, n, found: "a number beyond the range of a double", textColumnAccepts: false) }
    sqlite3_bind_double(statement, index, real)
    if kind == .integer || kind == .text { session(c).mismatch(found: "a real number", value: text(p, n), storedAs: "real") }
    c.pointee.column = column + 1
    return 1
  }

  @inline(__always)
  static func bindBool(_ c: UnsafeMutablePointer<Cursor>, _ value: Bool) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    if kind == .rowID { return session(c).badRowID("a boolean") }
    sqlite3_bind_int64(c.pointee.insert, Int32(column + 1), value ? 1 : 0)
    if kind == .real || kind == .text { session(c).mismatch(found: "a boolean", value: value ? "true" : "false", storedAs: "integer") }
    c.pointee.column = column + 1
    return 1
  }

  @inline(__always)
  static func bindNull(_ c: UnsafeMutablePointer<Cursor>) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    if c.pointee.kinds![column] == .rowID { return session(c).badRowID("null") }
    sqlite3_bind_null(c.pointee.insert, Int32(column + 1))
    c.pointee.column = column + 1
    return 1
  }

  @inline(__always)
  static func endRow(_ c: UnsafeMutablePointer<Cursor>) -> Int32 {
    guard c.pointee.column == c.pointee.width else { return session(c).shortRow() }
    let statement = c.pointee.insert
    let arena = c.pointee.arena
    for i in 0..<c.pointee.textCount {
      let text = c.pointee.texts![i]
      // A NULL destructor is SQLITE_STATIC: the arena outlives the step. The 64-bit length
      // takes a value of any size; past SQLite's limit the bind fails with SQLITE_TOOBIG.
      let rc = sqlite3_bind_text64(
        statement, text.column, UnsafeRawPointer(arena + text.offset).assumingMemoryBound(to: CChar.self), UInt64(text.length), nil,
        UInt8(SQLITE_UTF8))
      guard rc == SQLITE_OK else { return session(c).stepFailed(rc) }
    }
    c.pointee.textCount = 0
    c.pointee.arenaUsed = 0
    let rc = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard rc == SQLITE_DONE else { return session(c).stepFailed(rc) }
    c.pointee.inserted += 1
    c.pointee.place = .rows
    return 1
  }

  func shortRow() -> Int32 {
    let c = cursor.pointee
    // Report the first missing value's column.
    return fail(
      "the row has \(c.column) value\(c.column == 1 ? "" : "s"); the table has \(LoadSession.describeWidth(target, c.width)); a missing value is not null, so the row is refused"
    )
  }

  // MARK: yajl callbacks

  static func callbacks() -> yajl_callbacks {
    yajl_callbacks(
      yajl_null: { ctx in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .row: return LoadSession.bindNull(c)
        case .skip: return 1
        case .nested: return LoadSession.session(c).nestedScalar("null")
        case .value: return LoadSession.session(c).scalarValue(isString: false, nil, 0)
        default: return LoadSession.session(c).unexpected("null")
        }
      },
      yajl_boolean: { ctx, value in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .row: return LoadSession.bindBool(c, value != 0)
        case .skip: return 1
        case .nested: return LoadSession.session(c).nestedScalar(value != 0 ? "true" : "false")
        case .value: return LoadSession.session(c).scalarValue(isString: false, nil, 0)
        default: return LoadSession.session(c).unexpected("a boolean")
        }
      },
      yajl_integer: nil,
      yajl_double: nil,
      yajl_number: { ctx, text, length in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        let p = UnsafeRawPointer(text!).assumingMemoryBound(to: UInt8.self)
        switch c.pointee.place {
        case .row: return LoadSession.bindNumber(c, p, length)
        case .skip: return 1
        case .ids: return LoadSession.session(c).deleteID(p, length)
        case .nested: return LoadSession.session(c).nestedNumber(p, length)
        case .value: return LoadSession.session(c).scalarValue(isString: false, p, length)
        default: return LoadSession.session(c).unexpected("a number")
        }
      },
      yajl_string: { ctx, text, length in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .row: return LoadSession.bindString(c, text, length)
        case .skip: return 1
        case .nested: return LoadSession.session(c).nestedString(text ?? LoadSession.emptyText, length)
        case .value: return LoadSession.session(c).scalarValue(isString: true, text ?? LoadSession.emptyText, length)
        case .ids: return LoadSession.session(c).deleteID(nil, 0)
        default: return LoadSession.session(c).unexpected("a string")
        }
      },
      yajl_start_map: { ctx in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .skip:
          c.pointee.depth += 1
          return 1
        case .row: return LoadSession.session(c).startNested(isArray: false)
        case .nested: return LoadSession.session(c).nestedOpen(isArray: false)
        case .tables: return LoadSession.session(c).startObject()
        case .value: return LoadSession.session(c).startObjectValue()
        default: return LoadSession.session(c).unexpected("an object")
        }
      },
      yajl_map_key: { ctx, text, length in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .skip: return 1
        case .nested: return LoadSession.session(c).nestedKey(text ?? LoadSession.emptyText, length)
        case .object: return LoadSession.session(c).key(text ?? LoadSession.emptyText, length)
        default: return LoadSession.session(c).unexpected("a key")
        }
      },
      yajl_end_map: { ctx in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .skip:
          c.pointee.depth -= 1
          if c.pointee.depth == 0 { c.pointee.place = .object }
          return 1
        case .nested: return LoadSession.session(c).nestedClose(isArray: false)
        case .object: return LoadSession.session(c).endObject()
        default: return LoadSession.session(c).unexpected("the end of an object")
        }
      },
      yajl_start_array: { ctx in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .rows:
          c.pointee.place = .row
          c.pointee.column = 0
          c.pointee.textCount = 0
          c.pointee.arenaUsed = 0
          c.pointee.row += 1
          return 1
        case .skip:
          c.pointee.depth += 1
          return 1
        case .row: return LoadSession.session(c).startNested(isArray: true)
        case .nested: return LoadSession.session(c).nestedOpen(isArray: true)
        case .value: return LoadSession.session(c).startList()
        case .start: return LoadSession.session(c).startTopList()
        default: return LoadSession.session(c).unexpected("a list")
        }
      },
      yajl_end_array: { ctx in
        let c = ctx!.assumingMemoryBound(to: Cursor.self)
        switch c.pointee.place {
        case .row: return LoadSession.endRow(c)
        case .skip:
          c.pointee.depth -= 1
          if c.pointee.depth == 0 { c.pointee.place = .object }
          return 1
        case .rows: return LoadSession.session(c).endRows()
        case .nested: return LoadSession.session(c).nestedClose(isArray: true)
        case .ids:
          c.pointee.place = .object
          return 1
        case .tables:
          c.pointee.place = .done
          return 1
        default: return LoadSession.session(c).unexpected("the end of a list")
        }
      })
  }
}
