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
/// had to wait (`LoadPlan`: at most three passes, each streaming). A table that holds
/// `data` in a delta answer (the server sent full data for it) is emptied with the deletes
/// and refilled with the inserts.
///
/// The parts: this file reads the file and drives yajl; `TableLoader+Structure.swift` walks
/// the answer's tables and keys; `RowBinder.swift` binds each value (the per-value path);
/// `LoadPlan` decides the passes.
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
    /// Tables of the scheme the answer named (full data or a delta).
    var named: Set<String> = []
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
  /// The part a download is still writing, read by the first pass as it grows (`GrowingFile`);
  /// nil when `file` is whole.
  var growing: GrowingFile? = nil

  /// Parses the answer in `file` and applies it inside the caller's transaction.
  /// - Throws: `LoadError` naming resource, table, row and column.
  func run(file: String) throws -> Outcome {
    let session = LoadSession(loader: self)
    var pass = LoadPlan.Pass.main
    while true {
      try session.parse(file: file, pass: pass)
      guard let next = session.plan.pass(after: pass) else { break }
      pass = next
    }
    session.outcome.replaced = session.replaced
    return session.outcome
  }
}

// MARK: - The hot state (the row binder's, RowBinder.swift)

/// Where the parser is in the answer.
enum Place: UInt8 {
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
enum Key: UInt8 { case name, data, insertRows, deleteIDs, other }

/// Everything off the per-value path: passes, tables, statements, errors, reports.
final class LoadSession {
  let loader: TableLoader
  let cursor: UnsafeMutablePointer<Cursor>
  let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
  var pass = LoadPlan.Pass.main
  var plan: LoadPlan
  var index = -1
  var nameSeen = false
  var bindings: [String: TableBinding] = [:]
  var replaced: Set<String> = []
  var deltaChecked: Set<String> = []
  var outcome = TableLoader.Outcome()
  var failure: LoadError?
  var nested: [UInt8] = []
  var nestedNeedsComma: [Bool] = []
  var nestedIsArray = true

  init(loader: TableLoader) {
    self.loader = loader
    plan = LoadPlan(isDelta: loader.isDelta, targets: Set(loader.targets.keys))
    cursor = UnsafeMutablePointer<Cursor>.allocate(capacity: 1)
    let capacity = 64 * 1024
    cursor.initialize(to: Cursor(session: self, arena: UnsafeMutablePointer<UInt8>.allocate(capacity: capacity), capacity: capacity))
  }

  deinit {
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

  var current: LoadPlan.Object {
    get { plan.objects[index] }
    set { plan.objects[index] = newValue }
  }

  var target: TableLoader.Target? { current.name.flatMap { loader.targets[$0] } }

  // MARK: Reading the file

  func parse(file: String, pass: LoadPlan.Pass) throws {
    self.pass = pass
    index = -1
    cursor.pointee.place = .start
    cursor.pointee.insert = nil
    cursor.pointee.arenaUsed = 0
    cursor.pointee.textCount = 0
    let fd = try (pass == .main ? loader.growing?.takeReader() : nil) ?? open(file, O_RDONLY)
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
      var count = read(fd, buffer.baseAddress, buffer.count)
      // At the end of a part that is still growing: wait for its next bytes, or its end.
      while count == 0, pass == .main, let growing = loader.growing, try growing.waitForBytes(after: Int64(offset)) {
        count = read(fd, buffer.baseAddress, buffer.count)
      }
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
    let table = index >= 0 && index < plan.objects.count ? plan.objects[index].name : nil
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
