internal import CSQLite
internal import CYAJL
public import DrayModel
internal import Foundation

/// Loads a table answer (platform-api.md §3) from a file into the store, streaming.
///
/// The answer is parsed by yajl in 256 KiB chunks and each value is bound straight into a
/// prepared INSERT, so memory stays bounded whatever the answer's size. Both shapes are read:
///
///     [{"name": "output_table", "data": [[1, "apple", 0.52], ...]}, ...]            (full)
///     [{"name": "output_table", "insert_rows": [...], "delete_ids": [3, 7]}, ...]  (delta)
///
/// A full answer replaces each named table's rows; a delta deletes `delete_ids` (by the row
/// id `hhive_id`), then inserts `insert_rows`. Everything happens inside the caller's
/// transaction (see `Store.load`), so readers never see a half-loaded table.
///
/// Values: an integer that fits Int64 binds as INTEGER, never through a Double; a larger
/// integer binds as TEXT with its exact digits; other numbers bind as REAL; strings as
/// TEXT; booleans as 0/1; null as NULL; a nested array or object as its JSON text.
struct TableLoader {
  enum Mode { case full, delta }

  struct Target {
    var physicalName: String
    var columns: Int
    var cached: Bool
  }

  /// Rows inserted and deleted per source table.
  struct Counts: Equatable {
    var inserted = 0
    var deleted = 0
  }

  let database: Database
  let resource: String
  let mode: Mode
  /// Physical tables by source table name.
  let targets: [String: Target]

  /// Parses the answer in `file` and applies it.
  /// - Returns: counts per source table named in the answer.
  /// - Throws: `LoadError` naming resource, table, row and column.
  func run(file: String) throws -> [String: Counts] {
    guard let input = FileHandle(forReadingAtPath: file) else {
      throw LoadError(resource: resource, message: "cannot read the downloaded answer at \(file)")
    }
    defer { try? input.close() }
    let state = ParseState(loader: self)
    let context = Unmanaged.passUnretained(state).toOpaque()
    var callbacks = yajl_callbacks(
      yajl_null: { ctx in ParseState.from(ctx).scalar(.null) },
      yajl_boolean: { ctx, value in ParseState.from(ctx).scalar(.bool(value != 0)) },
      yajl_integer: nil,
      yajl_double: nil,
      yajl_number: { ctx, text, length in
        ParseState.from(ctx).scalar(.number(UnsafeRawPointer(text!).assumingMemoryBound(to: UInt8.self), length))
      },
      yajl_string: { ctx, text, length in
        ParseState.from(ctx).scalar(.string(text ?? UnsafePointer(bitPattern: 1)!, length))
      },
      yajl_start_map: { ctx in ParseState.from(ctx).startContainer(isArray: false) },
      yajl_map_key: { ctx, text, length in
        ParseState.from(ctx).key(text ?? UnsafePointer(bitPattern: 1)!, length)
      },
      yajl_end_map: { ctx in ParseState.from(ctx).endContainer(isArray: false) },
      yajl_start_array: { ctx in ParseState.from(ctx).startContainer(isArray: true) },
      yajl_end_array: { ctx in ParseState.from(ctx).endContainer(isArray: true) })
    guard let parser = yajl_alloc(&callbacks, nil, context) else {
      throw LoadError(resource: resource, message: "out of memory starting the JSON parser")
    }
    defer { yajl_free(parser) }
    var offset = 0
    while true {
      let chunk = input.readData(ofLength: 256 * 1024)
      let status: yajl_status
      if chunk.isEmpty {
        status = yajl_complete_parse(parser)
      } else {
        status = chunk.withUnsafeBytes { yajl_parse(parser, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
      }
      if status == yajl_status_client_canceled {
        throw state.failure ?? LoadError(resource: resource, message: "load stopped")
      }
      if status == yajl_status_error {
        let detail = chunk.withUnsafeBytes { buffer in
          let message = yajl_get_error(parser, 0, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), buffer.count)
          defer { yajl_free_error(parser, message) }
          return message.map { String(cString: $0) } ?? "invalid JSON"
        }
        let consumed = chunk.isEmpty ? 0 : Int(yajl_get_bytes_consumed(parser))
        var message =
          "the answer is not valid JSON (\(detail.trimmingCharacters(in: .whitespacesAndNewlines)), near byte \(offset + consumed))"
        if chunk.isEmpty { message = "the answer ends before its JSON is complete (\(offset) bytes); the download was cut short" }
        throw LoadError(resource: resource, table: state.tableName, row: state.rowPosition, column: state.columnPosition, message: message)
      }
      offset += chunk.count
      if chunk.isEmpty { break }
    }
    if !state.sawTopArray {
      throw LoadError(resource: resource, message: "the answer is empty; expected a JSON list of tables")
    }
    return state.counts
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

/// The streaming state behind yajl's callbacks.
private final class ParseState {
  enum Value {
    case null
    case bool(Bool)
    case number(UnsafePointer<UInt8>, Int)
    case string(UnsafePointer<UInt8>, Int)
  }

  enum Place {
    case start, tables, table, tableValue, rows, row, deleteIDs, skip, done
  }

  let loader: TableLoader
  var place = Place.start
  var key = ""
  var skipDepth = 0
  /// Depth inside a nested array or object value of a row; 0 outside.
  var nestedDepth = 0
  var nested = ""
  var nestedNeedsComma: [Bool] = []
  var tableName: String?
  var target: TableLoader.Target?
  var insert: Statement?
  var deleteByID: Statement?
  var rowIndex = 0
  var columnIndex = 0
  var sawTopArray = false
  var counts: [String: TableLoader.Counts] = [:]
  var cleared: Set<String> = []
  var failure: LoadError?

  init(loader: TableLoader) { self.loader = loader }

  static func from(_ ctx: UnsafeMutableRawPointer?) -> ParseState {
    Unmanaged<ParseState>.fromOpaque(ctx!).takeUnretainedValue()
  }

  var rowPosition: Int? { place == .row || place == .rows ? rowIndex + 1 : nil }
  var columnPosition: Int? { place == .row ? columnIndex + 1 : nil }

  func fail(_ message: String, row: Bool = true) -> Int32 {
    failure = LoadError(
      resource: loader.resource, table: tableName, row: row ? rowPosition : nil, column: row ? columnPosition : nil,
      message: message)
    return 0
  }

  func key(_ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    if nestedDepth > 0 {
      appendNestedSeparator()
      JSONValue.writeString(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self), to: &nested)
      nested += ":"
      nestedNeedsComma[nestedNeedsComma.count - 1] = false
      return 1
    }
    if place == .skip { return 1 }
    guard place == .table else { return fail("unexpected key in the answer") }
    key = String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)
    place = .tableValue
    return 1
  }

  func startContainer(isArray: Bool) -> Int32 {
    if nestedDepth > 0 || place == .row {
      if nestedDepth == 0 {
        nested = ""
        nestedNeedsComma = []
      } else {
        appendNestedSeparator()
      }
      nestedDepth += 1
      nested += isArray ? "[" : "{"
      nestedNeedsComma.append(false)
      return 1
    }
    switch place {
    case .start:
      guard isArray else { return fail("the answer must be a JSON list of tables, found an object", row: false) }
      sawTopArray = true
      place = .tables
    case .tables:
      guard !isArray else { return fail("each element of the answer must be an object with 'name' and 'data'", row: false) }
      place = .table
      tableName = nil
      target = nil
    case .tableValue:
      let wantsRows = loader.mode == .full ? key == "data" : key == "insert_rows"
      if isArray && (wantsRows || (loader.mode == .full && key == "insert_rows")) {
        if key == "insert_rows" && loader.mode == .full {
          return fail("the answer is a delta (insert_rows) but a full answer was asked for", row: false)
        }
        guard target != nil else {
          return fail("the answer lists rows before the table's 'name'; dray needs 'name' first", row: false)
        }
        place = .rows
        rowIndex = counts[tableName!]?.inserted ?? 0
      } else if isArray && key == "delete_ids" && loader.mode == .delta {
        guard target != nil else {
          return fail("the answer lists delete_ids before the table's 'name'; dray needs 'name' first", row: false)
        }
        place = .deleteIDs
      } else if isArray && key == "data" && loader.mode == .delta {
        // A server may answer a delta request with full data: handled by the caller, who
        // checks Content-Version; here rows in 'data' replace the table.
        return fail("the answer holds full data ('data') where a delta was expected", row: false)
      } else {
        place = .skip
        skipDepth = 1
      }
    case .rows:
      guard isArray else { return fail("each row must be a JSON list of values, found an object") }
      place = .row
      columnIndex = 0
    case .skip:
      skipDepth += 1
    default:
      return fail("unexpected \(isArray ? "list" : "object") in the answer")
    }
    return 1
  }

  func endContainer(isArray: Bool) -> Int32 {
    if nestedDepth > 0 {
      nested += isArray ? "]" : "}"
      nestedDepth -= 1
      nestedNeedsComma.removeLast()
      if nestedDepth == 0 {
        return nested.withUTF8 { bindText($0.baseAddress!, $0.count) }
      }
      return 1
    }
    switch place {
    case .row:
      return finishRow()
    case .rows, .deleteIDs:
      place = .table
    case .table:
      guard tableName != nil else { return fail("an element of the answer has no 'name'", row: false) }
      place = .tables
    case .tables:
      place = .done
    case .skip:
      skipDepth -= 1
      if skipDepth == 0 { place = .table }
    default:
      return fail("unexpected end of \(isArray ? "list" : "object")")
    }
    return 1
  }

  private func appendNestedSeparator() {
    if nestedNeedsComma[nestedNeedsComma.count - 1] { nested += "," }
    nestedNeedsComma[nestedNeedsComma.count - 1] = true
  }

  func scalar(_ value: Value) -> Int32 {
    if nestedDepth > 0 {
      appendNestedSeparator()
      switch value {
      case .null: nested += "null"
      case .bool(let b): nested += b ? "true" : "false"
      case .number(let p, let n): nested += String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
      case .string(let p, let n):
        JSONValue.writeString(String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self), to: &nested)
      }
      return 1
    }
    switch place {
    case .row:
      return bind(value)
    case .deleteIDs:
      return deleteRow(value)
    case .tableValue:
      if key == "name" {
        guard case .string(let p, let n) = value else { return fail("a table's 'name' must be a string", row: false) }
        return selectTable(String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self))
      }
      place = .table
    case .skip:
      break
    default:
      return fail("unexpected value in the answer")
    }
    return 1
  }

  private func selectTable(_ name: String) -> Int32 {
    place = .table
    tableName = name
    guard let target = loader.targets[name] else {
      let known = loader.targets.keys.sorted().joined(separator: ", ")
      return fail("the answer has table '\(name)', which the resource's scheme does not list (it lists: \(known))", row: false)
    }
    self.target = target
    do {
      let quoted = Database.quote(target.physicalName)
      if loader.mode == .full && !cleared.contains(name) {
        try loader.database.execute("DELETE FROM \(quoted)")
        cleared.insert(name)
      }
      let placeholders = Array(repeating: "?", count: target.columns).joined(separator: ",")
      insert = try loader.database.prepare("INSERT INTO \(quoted) VALUES (\(placeholders))")
      if target.cached {
        deleteByID = try loader.database.prepare("DELETE FROM \(quoted) WHERE \(Database.quote(Store.rowIDColumn)) = ?")
      }
    } catch {
      return fail("\(error)", row: false)
    }
    if counts[name] == nil { counts[name] = TableLoader.Counts() }
    return 1
  }

  private func bind(_ value: Value) -> Int32 {
    guard let target, let insert else { return 0 }
    guard columnIndex < target.columns else {
      return fail("the row has more values than the table's \(target.columns) columns")
    }
    let index = Int32(columnIndex + 1)
    switch value {
    case .null:
      insert.bindNull(at: index)
    case .bool(let b):
      insert.bindInteger(b ? 1 : 0, at: index)
    case .number(let p, let n):
      if let integer = ParseState.parseInteger(p, n) {
        insert.bindInteger(integer, at: index)
      } else if ParseState.isInteger(p, n) {
        // Beyond Int64: keep every digit as text.
        if bindText(p, n) == 0 { return 0 }
        return 1
      } else {
        var buffer = [CChar](repeating: 0, count: n + 1)
        for i in 0..<n { buffer[i] = CChar(bitPattern: p[i]) }
        insert.bindReal(strtod(buffer, nil), at: index)
      }
    case .string(let p, let n):
      if bindText(p, n) == 0 { return 0 }
      return 1
    }
    columnIndex += 1
    return 1
  }

  private func bindText(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int32 {
    guard let insert, let target else { return 0 }
    guard columnIndex < target.columns else {
      return fail("the row has more values than the table's \(target.columns) columns")
    }
    do {
      try insert.bindText(p, count: n, at: Int32(columnIndex + 1))
    } catch {
      return fail("\(error)")
    }
    columnIndex += 1
    return 1
  }

  private func finishRow() -> Int32 {
    guard let target, let insert, let tableName else { return 0 }
    guard columnIndex == target.columns else {
      return fail(
        "the row has \(columnIndex) values; the table has \(target.columns) columns\(target.cached ? " (a row id, then the scheme's columns)" : "")"
      )
    }
    do {
      _ = try insert.step()
    } catch {
      return fail("\(error)")
    }
    insert.rewind()
    counts[tableName, default: TableLoader.Counts()].inserted += 1
    rowIndex += 1
    place = .rows
    return 1
  }

  private func deleteRow(_ value: Value) -> Int32 {
    guard case .number(let p, let n) = value, let id = ParseState.parseInteger(p, n) else {
      return fail("delete_ids holds row ids (integers)", row: false)
    }
    guard let deleteByID, let tableName else { return fail("delete_ids for a resource without row ids", row: false) }
    deleteByID.bindInteger(id, at: 1)
    do {
      _ = try deleteByID.step()
    } catch {
      return fail("\(error)", row: false)
    }
    counts[tableName, default: TableLoader.Counts()].deleted += loader.database.changes
    deleteByID.rewind()
    return 1
  }

  /// True when the number text has no fraction or exponent.
  static func isInteger(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
    for i in 0..<n where p[i] == UInt8(ascii: ".") || p[i] == UInt8(ascii: "e") || p[i] == UInt8(ascii: "E") {
      return false
    }
    return true
  }

  /// The number as Int64 when it is an integer that fits; nil otherwise.
  @inline(__always)
  static func parseInteger(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int64? {
    var i = 0
    let negative = n > 0 && p[0] == UInt8(ascii: "-")
    if negative { i = 1 }
    guard i < n else { return nil }
    var value: Int64 = 0
    while i < n {
      let digit = Int64(p[i]) - 48
      guard digit >= 0 && digit <= 9 else { return nil }
      let (m, o1) = value.multipliedReportingOverflow(by: 10)
      let (s, o2) = negative ? m.subtractingReportingOverflow(digit) : m.addingReportingOverflow(digit)
      if o1 || o2 { return nil }
      value = s
      i += 1
    }
    return value
  }
}

extension Store {
  /// What a load changed.
  public struct LoadResult: Sendable, Equatable {
    /// Rows in each physical table after the load, by source table name.
    public var rowCounts: [String: Int]
    /// Rows inserted, by source table name.
    public var inserted: [String: Int]
    /// Rows deleted by a delta, by source table name.
    public var deleted: [String: Int]
    /// Physical table names, by source table name.
    public var tables: [String: String]
  }

  /// Version and validators of an answer, recorded in the bookkeeping.
  public struct AnswerInfo: Sendable, Equatable {
    public var contentVersion: String?
    public var etag: String?
    public var cacheHash: String?
    public init(contentVersion: String? = nil, etag: String? = nil, cacheHash: String? = nil) {
      self.contentVersion = contentVersion
      self.etag = etag
      self.cacheHash = cacheHash
    }
  }

  /// Loads the answer in `file` for `scheme` and `params` in one transaction, creating
  /// missing tables. `inTransaction` runs before the commit, for the caller's checkpoint, so
  /// that rows and checkpoint commit together or not at all.
  /// - Parameters:
  ///   - delta: the answer is a delta (`insert_rows`, `delete_ids`) rather than full data.
  /// - Throws: `LoadError` (naming resource, table, row, column), `StoreError`, `SQLiteError`.
  public func load(
    file: String, scheme: ResourceScheme, params: JSONValue, delta: Bool, info: AnswerInfo,
    inTransaction: (Database) throws -> Void = { _ in }
  ) throws -> LoadResult {
    try Store.check(scheme)
    var targets: [String: TableLoader.Target] = [:]
    for table in scheme.outputs {
      targets[table.name] = TableLoader.Target(
        physicalName: Store.tableName(resource: scheme.name, table: table.name, params: params),
        columns: table.columns.count + (scheme.isCached ? 1 : 0), cached: scheme.isCached)
    }
    return try database.transaction {
      try saveScheme(scheme)
      for table in scheme.outputs {
        let name = targets[table.name]!.physicalName
        try database.execute(Store.createTableSQL(name: name, table: table, cached: scheme.isCached))
      }
      let loader = TableLoader(database: database, resource: scheme.name, mode: delta ? .delta : .full, targets: targets)
      let counts = try loader.run(file: file)
      var result = LoadResult(rowCounts: [:], inserted: [:], deleted: [:], tables: [:])
      let now = Store.timestamp()
      for table in scheme.outputs {
        let name = targets[table.name]!.physicalName
        let count = try database.rows("SELECT count(*) FROM \(Database.quote(name))").first?.first?.1
        let rows = if case .integer(let n)? = count { Int(n) } else { 0 }
        let record = try database.cached(
          """
          INSERT INTO _dray_tables(name, resource, params, source_table, content_version, etag, cache_hash, row_count, loaded_at)
          VALUES (?,?,?,?,?,?,?,?,?)
          ON CONFLICT(name) DO UPDATE SET content_version = excluded.content_version, etag = excluded.etag,
            cache_hash = excluded.cache_hash, row_count = excluded.row_count, loaded_at = excluded.loaded_at
          """)
        let hash = info.cacheHash.flatMap { Store.cacheHash(for: table.name, in: $0) }
        try record.bind([
          .text(name), .text(scheme.name), .text(params.canonicalJSON), .text(table.name),
          info.contentVersion.map { .text($0) } ?? .null, info.etag.map { .text($0) } ?? .null,
          hash.map { .text($0) } ?? .null, .integer(Int64(rows)), .text(now),
        ])
        _ = try record.step()
        result.rowCounts[table.name] = rows
        result.inserted[table.name] = counts[table.name]?.inserted ?? 0
        result.deleted[table.name] = counts[table.name]?.deleted ?? 0
        result.tables[table.name] = name
      }
      try inTransaction(database)
      return result
    }
  }

  /// The hash for `table` from a `Cache-Hash-Value` header: comma-separated, URL-encoded
  /// `<table>-Hash:<hash>` entries (platform-api.md §3).
  static func cacheHash(for table: String, in header: String) -> String? {
    for entry in header.split(separator: ",") {
      let decoded = entry.trimmingCharacters(in: .whitespaces).removingPercentEncoding ?? String(entry)
      let prefix = "\(table)-Hash:"
      if decoded.hasPrefix(prefix) { return String(decoded.dropFirst(prefix.count)) }
    }
    return nil
  }

  /// The content version recorded for a physical table, e.g. `v6`.
  public func contentVersion(of physicalName: String) throws -> String? {
    let rows = try database.rows("SELECT content_version FROM _dray_tables WHERE name = ?", [.text(physicalName)])
    if case .text(let v)? = rows.first?.first?.1 { return v }
    return nil
  }
}
