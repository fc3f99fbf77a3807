internal import CYAJL
public import DrayModel
internal import Foundation

/// One value of a table answer as the scanner hands it over, its bytes borrowed for the call
/// only.
public enum JSONToken {
  case null
  case bool(Bool)
  /// A JSON number exactly as written (`12`, `-0.5`, `1e999`, `9223372036854775808`).
  case number(UnsafeBufferPointer<UInt8>)
  /// A string's UTF-8 bytes, unescaped.
  case string(UnsafeBufferPointer<UInt8>)
  /// An array or object as its compact JSON text (key order kept, numbers as written).
  case nested(UnsafeBufferPointer<UInt8>)
}

/// The lists of a table object a scanner offers its sink (platform-api.md §3).
public enum TableAnswerKey: Sendable {
  /// `data`: a full answer's rows.
  case data
  /// `insert_rows`: a delta's rows.
  case insertRows
  /// `delete_ids`: a delta's row ids to delete.
  case deleteIDs

  /// The key as the answer spells it.
  public var name: String {
    switch self {
    case .data: "data"
    case .insertRows: "insert_rows"
    case .deleteIDs: "delete_ids"
    }
  }
}

/// What a sink does with a list of a table object.
public enum TableAnswerList {
  /// Each row's values go to this row sink (the scanner keeps it alive until the list ends).
  case rows(any TableAnswerRowSink)
  /// Each item goes to `TableAnswerSink.deleteID(_:item:)`.
  case ids
  /// The list is read past.
  case skip
}

/// Receives the structure of a table answer from a `TableAnswerScanner`: its table objects,
/// their names and lists. A throw stops the scan; a `TableAnswerRefusal` is placed by the
/// scanner (table, and row and column where a row is being read), any other error passes
/// through unchanged.
public protocol TableAnswerSink: AnyObject {
  /// A table object starts.
  func beginTable() throws
  /// The table object's `name`; a second `name` in one object is refused before this call.
  func tableName(_ name: String) throws
  /// The table object ends (one without a `name` is refused before this call).
  func endTable() throws
  /// A list of the table object starts: what to do with it.
  func beginList(_ key: TableAnswerKey) throws -> TableAnswerList
  /// A list of rows or ids ends (not called for a skipped list); `items` counts its rows or ids.
  func endList(_ key: TableAnswerKey, items: Int) throws
  /// An item of a `delete_ids` list, `item` counted from 1.
  func deleteID(_ token: JSONToken, item: Int) throws
}

/// Receives the rows of one list, value by value: the per-value path of a load.
public protocol TableAnswerRowSink: AnyObject {
  /// A value of row `row` (counted from 1 in its list), at `column` (counted from 0).
  func value(_ token: JSONToken, row: Int, column: Int) throws
  /// Row `row` ends after `values` values.
  func endRow(_ row: Int, values: Int) throws
}

/// The growth of a row sink's raw staging buffer (a row's text for SQLite, COPY data for
/// PostgreSQL), off the per-value path.
public enum RowStaging {
  /// Moves the `used` bytes of `buffer` (of `capacity` bytes) into a buffer at least
  /// `used + more` bytes large (the capacity doubled until it fits) and frees `buffer`.
  /// - Returns: the new buffer and its capacity.
  public static func grow(
    _ buffer: UnsafeMutablePointer<UInt8>, used: Int, capacity: Int, more: Int
  ) -> (buffer: UnsafeMutablePointer<UInt8>, capacity: Int) {
    var larger = max(1, capacity) * 2
    while larger < used + more { larger *= 2 }
    let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
    bigger.update(from: buffer, count: used)
    buffer.deallocate()
    return (bigger, larger)
  }
}

/// A refusal from a sink, which the scanner places: table, and row and column (the value
/// being read; `wholeRow` leaves the column out) while a row is read.
public struct TableAnswerRefusal: Error {
  public var message: String
  public var wholeRow: Bool

  public init(_ message: String, wholeRow: Bool = false) {
    self.message = message
    self.wholeRow = wholeRow
  }
}

/// A table answer that is not what platform-api.md §3 describes, or that a sink refused:
/// the table, row and column (1-based) where known.
public struct TableAnswerError: Error, Sendable, CustomStringConvertible {
  public var table: String?
  public var row: Int?
  public var column: Int?
  public var message: String

  public init(table: String? = nil, row: Int? = nil, column: Int? = nil, message: String) {
    self.table = table
    self.row = row
    self.column = column
    self.message = message
  }

  /// `table 'a', row 3, column 2: message`, or just the message when nothing is known.
  public var description: String {
    var place: [String] = []
    if let table { place.append("table '\(table)'") }
    if let row { place.append("row \(row)") }
    if let column { place.append("column \(column)") }
    return place.isEmpty ? message : place.joined(separator: ", ") + ": " + message
  }
}

/// Reads a table answer (platform-api.md §3) with yajl's event parser, fed by chunks of
/// bytes, and hands its structure to a `TableAnswerSink` and its rows to the row sinks the
/// sink chooses: the one reader of the answer shape for every load and for the `table` step.
///
///     [{"name": "output_table", "data": [[1, "apple", 0.52], ...]}, ...]            (full)
///     [{"name": "output_table", "insert_rows": [...], "delete_ids": [3, 7]}, ...]  (delta)
///
/// Keys other than `name`, `data`, `insert_rows` and `delete_ids` are read past, whatever
/// they hold. A value nested inside a row (an array or object) reaches the row sink as its
/// compact JSON text. Nothing is held beyond the current row, so memory stays bounded
/// whatever the answer's size; chunks may come as the answer arrives (`feed(_:)`), and
/// `finish()` says it is whole.
///
/// ```swift
/// let scanner = TableAnswerScanner(sink: sink)
/// try scanner.scan(file: "answer.json")   // or feed(_:) each chunk, then finish()
/// ```
///
/// A scanner reads one answer once; a load that reads an answer again (`LoadPlan`) uses a
/// new scanner.
public final class TableAnswerScanner {
  private let state: UnsafeMutablePointer<ScanState>
  private let parser: yajl_handle
  /// Keeps the sink alive: the state refers to it without counting.
  private let sink: any TableAnswerSink
  /// Bytes fed so far.
  private var offset = 0
  /// The last bytes of the previous chunk, for a token that starts there.
  private var previousTail: [UInt8] = []
  /// Whether a byte other than JSON whitespace came.
  private var sawText = false
  /// An error met at the end of a chunk, where the next chunk may show that the bad token
  /// is NaN or Infinity.
  private var pending: PendingError?

  /// Not JSON, met at `window`, which ends where the chunk did.
  private struct PendingError {
    var window: [UInt8]
    var error: TableAnswerError

    /// The error once `next` is known; nil while the bytes so far still start a token.
    mutating func resolved(with next: UnsafeRawBufferPointer) -> TableAnswerError? {
      window += next.prefix(12)
      let text = String(decoding: window, as: UTF8.self)
      if let token = TableAnswerScanner.nonNumber(text) { return TableAnswerScanner.nonNumberError(token, error) }
      return TableAnswerScanner.startsNonNumber(text) ? nil : error
    }
  }

  /// The tokens that are not JSON numbers (JSON has no NaN or Infinity) but that servers
  /// write for them.
  private static let nonNumbers = ["NaN", "-Infinity", "Infinity", "-NaN", "nan", "inf", "-inf"]

  private static func nonNumber(_ text: String) -> String? { nonNumbers.first { text.hasPrefix($0) } }

  /// Whether `text` is the start of one of `nonNumbers`, cut short.
  private static func startsNonNumber(_ text: String) -> Bool { !text.isEmpty && nonNumbers.contains { $0.hasPrefix(text) } }

  private static func nonNumberError(_ token: String, _ error: TableAnswerError) -> TableAnswerError {
    TableAnswerError(
      table: error.table, row: error.row, column: error.column,
      message: "\(token) is not a JSON number; the answer is refused (JSON has no NaN or Infinity)")
  }

  /// Bytes `scan(file:between:)` reads at a time: 1 MiB.
  public static let chunkSize = 1 << 20

  public init(sink: any TableAnswerSink) {
    self.sink = sink
    state = UnsafeMutablePointer<ScanState>.allocate(capacity: 1)
    state.initialize(to: ScanState(sink: sink))
    // yajl_alloc fails only when malloc does; nothing here could go on then.
    parser = yajl_alloc(ScanState.callbacks, nil, UnsafeMutableRawPointer(state))!
  }

  deinit {
    yajl_free(parser)
    state.deinitialize(count: 1)
    state.deallocate()
  }

  /// The name of the table object being read, once its `name` came.
  public var table: String? { state.pointee.table }

  /// Reads the next bytes of the answer.
  /// - Throws: `TableAnswerError`, or a sink's error unchanged.
  public func feed(_ bytes: UnsafeRawBufferPointer) throws {
    guard bytes.count > 0, let base = bytes.baseAddress else { return }
    if pending != nil {
      if let error = pending!.resolved(with: bytes) { throw error }
      return
    }
    if !sawText { sawText = bytes.contains { !BlankAnswer.isWhitespace($0) } }
    let status = yajl_parse(parser, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    try check(status, bytes: bytes, atEnd: false)
    offset += bytes.count
    previousTail = Array(bytes.suffix(16))
  }

  /// Says the answer is whole: an answer that stops before its JSON ends is refused.
  /// - Throws: `TableAnswerError`, or a sink's error unchanged.
  public func finish() throws {
    if let pending { throw pending.error }
    try check(yajl_complete_parse(parser), bytes: UnsafeRawBufferPointer(start: nil, count: 0), atEnd: true)
    if state.pointee.place == .start {
      throw TableAnswerError(message: "the answer is empty; expected a JSON list of tables")
    }
  }

  /// Reads the file at `path` in `chunkSize` pieces, calling `between` before each (a
  /// cancelled load throws there), then `finish()`. With `growing`, reads the part a download
  /// is still writing instead, waiting at its end for more bytes until the download finishes.
  /// - Throws: `TableAnswerError` (also when the file cannot be read), `GrowingFile.Stop`, or
  ///   an error of the sink or of `between` unchanged.
  public func scan(file path: String, growing: GrowingFile? = nil, between: () throws -> Void = {}) throws {
    do {
      let chunks = try FileChunks(path: path, growing: growing, chunkSize: Self.chunkSize)
      while true {
        try between()
        guard let chunk = try chunks.next() else { break }
        try feed(chunk)
      }
    } catch let unreadable as FileChunks.Unreadable {
      throw TableAnswerError(message: "cannot read the downloaded answer at \(path): \(unreadable.reason)")
    }
    try finish()
  }

  private func check(_ status: yajl_status, bytes: UnsafeRawBufferPointer, atEnd: Bool) throws {
    if status == yajl_status_client_canceled {
      throw state.pointee.failure ?? TableAnswerError(message: "the load stopped")
    }
    guard status == yajl_status_error else { return }
    let s = state.pointee
    if atEnd && s.place == .start && !sawText {
      throw TableAnswerError(message: BlankAnswer.describe(bytes: offset) + "; expected a JSON list of tables")
    }
    let (row, column) = s.position(wholeRow: false)
    if atEnd {
      throw TableAnswerError(
        table: s.table, row: row, column: column,
        message: "the answer ends before its JSON is complete (\(offset) bytes); the download was cut short")
    }
    let consumed = Int(yajl_get_bytes_consumed(parser))
    let detail = bytes.withMemoryRebound(to: UInt8.self) { b in
      let message = yajl_get_error(parser, 0, b.baseAddress, b.count)
      defer { yajl_free_error(parser, message) }
      return message.map { String(cString: $0) } ?? "invalid JSON"
    }
    let error = TableAnswerError(
      table: s.table, row: row, column: column,
      message: "the answer is not valid JSON (\(detail.trimmingCharacters(in: .whitespacesAndNewlines)), near byte \(offset + consumed))")
    // The offending token starts at most a byte before the point yajl stopped at.
    let start = max(0, consumed - 1)
    var window = consumed - 1 < 0 ? previousTail : []
    window += bytes[min(start, bytes.count)..<min(bytes.count, start + 12)]
    let text = String(decoding: window, as: UTF8.self)
    if let token = Self.nonNumber(text) { throw Self.nonNumberError(token, error) }
    // A token cut by the chunk's end: the next chunk decides.
    if start + 12 > bytes.count, Self.startsNonNumber(text) {
      pending = PendingError(window: window, error: error)
      return
    }
    throw error
  }
}

@available(*, unavailable)
extension TableAnswerScanner: Sendable {}

// MARK: - The scan's state, reached by yajl's callbacks through a raw pointer

/// Where the scanner is in the answer.
enum ScanPlace: UInt8 {
  /// Before the top-level list.
  case start
  /// In the top-level list, between table objects.
  case tables
  /// In a table object, between keys.
  case object
  /// After a key of a table object, before its value.
  case value
  /// In a list of rows being read, between rows.
  case rows
  /// In a row being read.
  case row
  /// In a nested array or object inside a row (kept as JSON text).
  case nested
  /// In a `delete_ids` list being read.
  case ids
  /// In a value being read past.
  case skip
  /// After the top-level list.
  case done
}

/// The keys of a table object the scanner knows.
enum ScanKey: UInt8 { case name, data, insertRows, deleteIDs, other }

/// Everything yajl's callbacks update. Reached through a raw pointer, so that the per-value
/// path does no reference counting or exclusivity checks on it; the sinks are kept alive by
/// the scanner (`TableAnswerScanner.sink`, and `rowsOwner` for the current row sink).
struct ScanState {
  var place = ScanPlace.start
  var key = ScanKey.other
  /// The list being read.
  var list = TableAnswerKey.data
  /// Depth inside a skipped value, or inside a nested value of a row.
  var depth = 0
  /// 1-based number of the current row (or id) in its list.
  var row = 0
  /// Values read so far in the current row.
  var column = 0
  var table: String?
  var nameSeen = false
  unowned(unsafe) let sink: any TableAnswerSink
  /// The current row sink, reached without reference counting (a class-bound existential
  /// read through a pointer would be retained and released at every value).
  var rows: Unmanaged<RowSinkBox>?
  var rowsOwner: RowSinkBox?
  var failure: (any Error)?
  /// A nested value of a row, as compact JSON text.
  var nested: [UInt8] = []
  /// Per open container of `nested`: whether the next item needs a comma before it.
  var nestedNeedsComma: [Bool] = []
  var nestedIsArray = true

  init(sink: any TableAnswerSink) { self.sink = sink }

  /// Row and column (1-based) of an error at the current place: the row being read and its
  /// current value (not the value for `wholeRow`); the next row between rows; none elsewhere.
  func position(wholeRow: Bool) -> (row: Int?, column: Int?) {
    switch place {
    case .row, .nested: (row, wholeRow ? nil : column + 1)
    case .rows: (row + 1, nil)
    default: (nil, nil)
    }
  }
}

/// A row sink behind a class reference, so that `ScanState` can hold it `Unmanaged`.
final class RowSinkBox {
  let sink: any TableAnswerRowSink
  init(_ sink: any TableAnswerRowSink) { self.sink = sink }
}

extension ScanState {
  typealias Pointer = UnsafeMutablePointer<ScanState>

  @inline(__always)
  static func state(_ ctx: UnsafeMutableRawPointer?) -> Pointer { ctx!.assumingMemoryBound(to: ScanState.self) }

  // nonisolated(unsafe): one byte, written once here and only read afterwards.
  nonisolated(unsafe) static let emptyText: UnsafePointer<UInt8> = {
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    p.initialize(to: 0)
    return UnsafePointer(p)
  }()

  // MARK: Stopping

  /// Keeps the error that stops the scan, placed when it is a refusal, and returns 0 to yajl.
  static func stop(_ s: Pointer, _ error: any Error) -> Int32 {
    if let refusal = error as? TableAnswerRefusal {
      let (row, column) = s.pointee.position(wholeRow: refusal.wholeRow)
      s.pointee.failure = TableAnswerError(table: s.pointee.table, row: row, column: column, message: refusal.message)
    } else {
      s.pointee.failure = error
    }
    return 0
  }

  static func stop(_ s: Pointer, _ message: String) -> Int32 { stop(s, TableAnswerRefusal(message)) }

  @inline(__always)
  static func attempt(_ s: Pointer, _ body: () throws -> Void) -> Int32 {
    do {
      try body()
      return 1
    } catch {
      return stop(s, error)
    }
  }

  static func unexpected(_ s: Pointer, _ what: String) -> Int32 {
    switch s.pointee.place {
    case .start: stop(s, "the answer must be a JSON list of tables, found \(what)")
    case .tables: stop(s, "each element of the answer must be an object with 'name' and 'data', found \(what)")
    case .rows: stop(s, "each row must be a JSON list of values, found \(what)")
    case .ids: stop(s, "delete_ids holds row ids (integers), found \(what)")
    default: stop(s, "unexpected \(what) in the answer")
    }
  }

  // MARK: Values of a row

  @inline(__always)
  static func value(_ s: Pointer, _ token: JSONToken) -> Int32 {
    do {
      try s.pointee.rows!._withUnsafeGuaranteedRef { try $0.sink.value(token, row: s.pointee.row, column: s.pointee.column) }
    } catch {
      return stop(s, error)
    }
    s.pointee.column += 1
    return 1
  }

  static func startRow(_ s: Pointer) -> Int32 {
    s.pointee.place = .row
    s.pointee.column = 0
    s.pointee.row += 1
    return 1
  }

  @inline(__always)
  static func endRow(_ s: Pointer) -> Int32 {
    do {
      try s.pointee.rows!._withUnsafeGuaranteedRef { try $0.sink.endRow(s.pointee.row, values: s.pointee.column) }
    } catch {
      return stop(s, error)
    }
    s.pointee.place = .rows
    return 1
  }

  // MARK: The structure

  static func startObject(_ s: Pointer) -> Int32 {
    s.pointee.place = .object
    s.pointee.table = nil
    s.pointee.nameSeen = false
    return attempt(s) { try s.pointee.sink.beginTable() }
  }

  static func endObject(_ s: Pointer) -> Int32 {
    guard s.pointee.nameSeen else { return stop(s, "an element of the answer has no 'name'") }
    s.pointee.place = .tables
    return attempt(s) { try s.pointee.sink.endTable() }
  }

  static func key(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    s.pointee.key =
      switch String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self) {
      case "name": .name
      case "data": .data
      case "insert_rows": .insertRows
      case "delete_ids": .deleteIDs
      default: .other
      }
    s.pointee.place = .value
    return 1
  }

  static func listKey(_ key: ScanKey) -> TableAnswerKey? {
    switch key {
    case .data: .data
    case .insertRows: .insertRows
    case .deleteIDs: .deleteIDs
    case .name, .other: nil
    }
  }

  /// A scalar as the value of a table object's key.
  static func scalarValue(_ s: Pointer, isString: Bool, _ text: UnsafePointer<UInt8>?, _ length: Int) -> Int32 {
    s.pointee.place = .object
    switch s.pointee.key {
    case .name:
      guard isString, let text else { return stop(s, "a table's 'name' must be a string") }
      if s.pointee.nameSeen { return stop(s, "a table object has 'name' twice") }
      s.pointee.nameSeen = true
      let name = String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)
      s.pointee.table = name
      return attempt(s) { try s.pointee.sink.tableName(name) }
    case .data, .insertRows, .deleteIDs:
      return stop(s, "a table's '\(listKey(s.pointee.key)!.name)' must be a list")
    case .other:
      return 1
    }
  }

  /// An object as the value of a table object's key: read past when the key is not one of the
  /// answer's.
  static func objectValue(_ s: Pointer) -> Int32 {
    switch s.pointee.key {
    case .other: return skip(s)
    case .name: return stop(s, "a table's 'name' must be a string")
    case .data, .insertRows, .deleteIDs: return stop(s, "a table's '\(listKey(s.pointee.key)!.name)' must be a list")
    }
  }

  /// A list as the value of a table object's key: as the sink says.
  static func startList(_ s: Pointer) -> Int32 {
    guard let key = listKey(s.pointee.key) else {
      return s.pointee.key == .name ? stop(s, "a table's 'name' must be a string") : skip(s)
    }
    let list: TableAnswerList
    do {
      list = try s.pointee.sink.beginList(key)
    } catch {
      return stop(s, error)
    }
    s.pointee.list = key
    s.pointee.row = 0
    switch list {
    case .rows(let sink):
      let box = RowSinkBox(sink)
      s.pointee.rowsOwner = box
      s.pointee.rows = Unmanaged.passUnretained(box)
      s.pointee.place = .rows
    case .ids:
      s.pointee.place = .ids
    case .skip:
      return skip(s)
    }
    return 1
  }

  static func endList(_ s: Pointer) -> Int32 {
    s.pointee.rows = nil
    s.pointee.rowsOwner = nil
    s.pointee.place = .object
    let items = s.pointee.row
    return attempt(s) { try s.pointee.sink.endList(s.pointee.list, items: items) }
  }

  static func deleteID(_ s: Pointer, _ token: JSONToken) -> Int32 {
    s.pointee.row += 1
    return attempt(s) { try s.pointee.sink.deleteID(token, item: s.pointee.row) }
  }

  static func skip(_ s: Pointer) -> Int32 {
    s.pointee.place = .skip
    s.pointee.depth = 1
    return 1
  }

  static func skipEnd(_ s: Pointer) -> Int32 {
    s.pointee.depth -= 1
    if s.pointee.depth == 0 { s.pointee.place = .object }
    return 1
  }

  // MARK: Nested values inside a row, kept as JSON text

  static func startNested(_ s: Pointer, isArray: Bool) -> Int32 {
    s.pointee.nested.removeAll(keepingCapacity: true)
    s.pointee.nestedNeedsComma.removeAll(keepingCapacity: true)
    s.pointee.nestedIsArray = isArray
    s.pointee.nested.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    s.pointee.nestedNeedsComma.append(false)
    s.pointee.place = .nested
    s.pointee.depth = 1
    return 1
  }

  private static func separator(_ s: Pointer) {
    let last = s.pointee.nestedNeedsComma.count - 1
    if s.pointee.nestedNeedsComma[last] { s.pointee.nested.append(UInt8(ascii: ",")) }
    s.pointee.nestedNeedsComma[last] = true
  }

  static func nestedOpen(_ s: Pointer, isArray: Bool) -> Int32 {
    separator(s)
    s.pointee.nested.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    s.pointee.nestedNeedsComma.append(false)
    s.pointee.depth += 1
    return 1
  }

  static func nestedClose(_ s: Pointer, isArray: Bool) -> Int32 {
    s.pointee.nested.append(isArray ? UInt8(ascii: "]") : UInt8(ascii: "}"))
    s.pointee.nestedNeedsComma.removeLast()
    s.pointee.depth -= 1
    guard s.pointee.depth == 0 else { return 1 }
    s.pointee.place = .row
    // The row sink borrows the text for the call only; the array is not touched meanwhile.
    let nested = s.pointee.nested
    return nested.withUnsafeBufferPointer { value(s, .nested($0)) }
  }

  static func nestedKey(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    separator(s)
    appendString(s, text, length)
    s.pointee.nested.append(UInt8(ascii: ":"))
    s.pointee.nestedNeedsComma[s.pointee.nestedNeedsComma.count - 1] = false
    return 1
  }

  static func nestedScalar(_ s: Pointer, _ text: StaticString) -> Int32 {
    separator(s)
    s.pointee.nested.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    return 1
  }

  static func nestedNumber(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    separator(s)
    s.pointee.nested.append(contentsOf: UnsafeBufferPointer(start: text, count: length))
    return 1
  }

  static func nestedString(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Int32 {
    separator(s)
    appendString(s, text, length)
    return 1
  }

  private static func appendString(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) {
    var out = ""
    JSONValue.writeString(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self), to: &out)
    s.pointee.nested.append(contentsOf: out.utf8)
  }

  // MARK: yajl's callbacks

  /// yajl keeps a pointer to its callbacks for the parser's life: one table, made once and
  /// never freed.
  // nonisolated(unsafe): written once here and only read afterwards.
  nonisolated(unsafe) static let callbacks: UnsafeMutablePointer<yajl_callbacks> = {
    let table = UnsafeMutablePointer<yajl_callbacks>.allocate(capacity: 1)
    table.initialize(to: callbackValues)
    return table
  }()

  private static var callbackValues: yajl_callbacks {
    yajl_callbacks(
      yajl_null: { ctx in
        let s = ScanState.state(ctx)
        switch s.pointee.place {
        case .row: return ScanState.value(s, .null)
        case .skip: return 1
        case .nested: return ScanState.nestedScalar(s, "null")
        case .value: return ScanState.scalarValue(s, isString: false, nil, 0)
        default: return ScanState.unexpected(s, "null")
        }
      },
      yajl_boolean: { ctx, flag in
        let s = ScanState.state(ctx)
        switch s.pointee.place {
        case .row: return ScanState.value(s, .bool(flag != 0))
        case .skip: return 1
        case .nested: return ScanState.nestedScalar(s, flag != 0 ? "true" : "false")
        case .value: return ScanState.scalarValue(s, isString: false, nil, 0)
        default: return ScanState.unexpected(s, "a boolean")
        }
      },
      yajl_integer: nil,
      yajl_double: nil,
      yajl_number: { ctx, text, length in
        let s = ScanState.state(ctx)
        let p = UnsafeRawPointer(text!).assumingMemoryBound(to: UInt8.self)
        switch s.pointee.place {
        case .row: return ScanState.value(s, .number(UnsafeBufferPointer(start: p, count: length)))
        case .skip: return 1
        case .ids: return ScanState.deleteID(s, .number(UnsafeBufferPointer(start: p, count: length)))
        case .nested: return ScanState.nestedNumber(s, p, length)
        case .value: return ScanState.scalarValue(s, isString: false, p, length)
        default: return ScanState.unexpected(s, "a number")
        }
      },
      yajl_string: { ctx, text, length in
        let s = ScanState.state(ctx)
        // A NULL pointer comes with an empty string; "" must stay an empty string.
        let p = text ?? ScanState.emptyText
        switch s.pointee.place {
        case .row: return ScanState.value(s, .string(UnsafeBufferPointer(start: p, count: length)))
        case .skip: return 1
        case .nested: return ScanState.nestedString(s, p, length)
        case .value: return ScanState.scalarValue(s, isString: true, p, length)
        case .ids: return ScanState.deleteID(s, .string(UnsafeBufferPointer(start: p, count: length)))
        default: return ScanState.unexpected(s, "a string")
        }
      },
      yajl_start_map: { ctx in
        let s = ScanState.state(ctx)
        switch s.pointee.place {
        case .skip:
          s.pointee.depth += 1
          return 1
        case .row: return ScanState.startNested(s, isArray: false)
        case .nested: return ScanState.nestedOpen(s, isArray: false)
        case .tables: return ScanState.startObject(s)
        case .value: return ScanState.objectValue(s)
        default: return ScanState.unexpected(s, "an object")
        }
      },
      yajl_map_key: { ctx, text, length in
        let s = ScanState.state(ctx)
        switch s.pointee.place {
        case .skip: return 1
        case .nested: return ScanState.nestedKey(s, text ?? ScanState.emptyText, length)
        case .object: return ScanState.key(s, text ?? ScanState.emptyText, length)
        default: return ScanState.unexpected(s, "a key")
        }
      },
      yajl_end_map: { ctx in
        let s = ScanState.state(ctx)
        switch s.pointee.place {
        case .skip: return ScanState.skipEnd(s)
        case .nested: return ScanState.nestedClose(s, isArray: false)
        case .object: return ScanState.endObject(s)
        default: return ScanState.unexpected(s, "the end of an object")
        }
      },
      yajl_start_array: { ctx in
        let s = ScanState.state(ctx)
        switch s.pointee.place {
        case .rows: return ScanState.startRow(s)
        case .skip:
          s.pointee.depth += 1
          return 1
        case .row: return ScanState.startNested(s, isArray: true)
        case .nested: return ScanState.nestedOpen(s, isArray: true)
        case .value: return ScanState.startList(s)
        case .start:
          s.pointee.place = .tables
          return 1
        default: return ScanState.unexpected(s, "a list")
        }
      },
      yajl_end_array: { ctx in
        let s = ScanState.state(ctx)
        switch s.pointee.place {
        case .row: return ScanState.endRow(s)
        case .skip: return ScanState.skipEnd(s)
        case .rows, .ids: return ScanState.endList(s)
        case .nested: return ScanState.nestedClose(s, isArray: true)
        case .tables:
          s.pointee.place = .done
          return 1
        default: return ScanState.unexpected(s, "the end of a list")
        }
      })
  }
}
