public import DrayModel

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
    if let table { place.append("table '\(PrintableText.excerpt(table))'") }
    if let row { place.append("row \(row)") }
    if let column { place.append("column \(column)") }
    return place.isEmpty ? message : place.joined(separator: ", ") + ": " + message
  }
}

/// Reads a table answer (platform-api.md §3), fed by chunks of bytes, and hands its
/// structure to a `TableAnswerSink` and its rows to the row sinks the sink chooses: the one
/// reader of the answer shape for every load and for the `table` step. The JSON is read by
/// `JSONLexer` (RFC 8259, strictly), the loader's own: a load's time goes mostly here.
///
///     [{"name": "output_table", "data": [[1, "apple", 0.52], ...]}, ...]            (full)
///     [{"name": "output_table", "insert_rows": [...], "delete_ids": [3, 7]}, ...]  (delta)
///
/// Keys other than `name`, `data`, `insert_rows` and `delete_ids` are read past, whatever
/// they hold. A value nested inside a row (an array or object) reaches the row sink as its
/// compact JSON text. Nothing is held beyond the current row, so memory stays bounded
/// whatever the answer's size; chunks may come as the answer arrives (`feed(_:)`), cut
/// anywhere, and `finish()` says it is whole.
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
  private let lexer = JSONLexer()
  /// Keeps the sink alive: the state refers to it without counting.
  private let sink: any TableAnswerSink

  /// Bytes `scan(file:between:)` reads at a time: 1 MiB.
  public static let chunkSize = 1 << 20

  public init(sink: any TableAnswerSink) {
    self.sink = sink
    state = UnsafeMutablePointer<ScanState>.allocate(capacity: 1)
    state.initialize(to: ScanState(sink: sink))
  }

  deinit {
    state.deinitialize(count: 1)
    state.deallocate()
  }

  /// The name of the table object being read, once its `name` came.
  public var table: String? { state.pointee.table }

  /// Reads the next bytes of the answer.
  /// - Throws: `TableAnswerError`, or a sink's error unchanged.
  public func feed(_ bytes: UnsafeRawBufferPointer) throws {
    do {
      try lexer.feed(bytes, ScanEvents(s: state))
    } catch let failure as JSONLexer.Failure {
      throw placed(failure)
    }
  }

  /// Says the answer is whole: an answer that stops before its JSON ends is refused.
  /// - Throws: `TableAnswerError`, or a sink's error unchanged.
  public func finish() throws {
    do {
      try lexer.finish(ScanEvents(s: state))
    } catch let failure as JSONLexer.Failure {
      throw placed(failure)
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

  /// The error for what stopped the lexer, placed at the table, row and column being read.
  private func placed(_ failure: JSONLexer.Failure) -> any Error {
    let s = state.pointee
    let (row, column) = s.position(wholeRow: false)
    func error(_ message: String) -> TableAnswerError {
      TableAnswerError(table: s.placedTable, row: row, column: column, message: message)
    }
    switch failure {
    case .stopped:
      return s.failure ?? TableAnswerError(message: "the load stopped")
    case .invalid, .nonNumber, .tooDeep, .truncated:
      return error(failure.answerProblem)
    case .empty(let bytes):
      return TableAnswerError(message: BlankAnswer.describe(bytes: bytes) + "; expected a JSON list of tables")
    }
  }
}

@available(*, unavailable)
extension TableAnswerScanner: Sendable {}

// MARK: - The scan's state, reached by the lexer's events through a raw pointer

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

/// Everything the lexer's events update. Reached through a raw pointer, so that the per-value
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

  /// The table of an error at the current place: the name of the table object being read;
  /// none before, between or after them.
  var placedTable: String? {
    switch place {
    case .start, .tables, .done: nil
    default: table
    }
  }

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

  // MARK: Stopping

  /// Keeps the error that stops the scan, placed when it is a refusal, and returns false to the lexer.
  static func stop(_ s: Pointer, _ error: any Error) -> Bool {
    if let refusal = error as? TableAnswerRefusal {
      let (row, column) = s.pointee.position(wholeRow: refusal.wholeRow)
      s.pointee.failure = TableAnswerError(table: s.pointee.placedTable, row: row, column: column, message: refusal.message)
    } else {
      s.pointee.failure = error
    }
    return false
  }

  static func stop(_ s: Pointer, _ message: String) -> Bool { stop(s, TableAnswerRefusal(message)) }

  @inline(__always)
  static func attempt(_ s: Pointer, _ body: () throws -> Void) -> Bool {
    do {
      try body()
      return true
    } catch {
      return stop(s, error)
    }
  }

  static func unexpected(_ s: Pointer, _ what: String) -> Bool {
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
  static func value(_ s: Pointer, _ token: JSONToken) -> Bool {
    do {
      try s.pointee.rows!._withUnsafeGuaranteedRef { try $0.sink.value(token, row: s.pointee.row, column: s.pointee.column) }
    } catch {
      return stop(s, error)
    }
    s.pointee.column += 1
    return true
  }

  static func startRow(_ s: Pointer) -> Bool {
    s.pointee.place = .row
    s.pointee.column = 0
    s.pointee.row += 1
    return true
  }

  @inline(__always)
  static func endRow(_ s: Pointer) -> Bool {
    do {
      try s.pointee.rows!._withUnsafeGuaranteedRef { try $0.sink.endRow(s.pointee.row, values: s.pointee.column) }
    } catch {
      return stop(s, error)
    }
    s.pointee.place = .rows
    return true
  }

  // MARK: The structure

  static func startObject(_ s: Pointer) -> Bool {
    s.pointee.place = .object
    s.pointee.table = nil
    s.pointee.nameSeen = false
    return attempt(s) { try s.pointee.sink.beginTable() }
  }

  static func endObject(_ s: Pointer) -> Bool {
    guard s.pointee.nameSeen else { return stop(s, "an element of the answer has no 'name'") }
    s.pointee.place = .tables
    return attempt(s) { try s.pointee.sink.endTable() }
  }

  static func key(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Bool {
    s.pointee.key =
      switch String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self) {
      case "name": .name
      case "data": .data
      case "insert_rows": .insertRows
      case "delete_ids": .deleteIDs
      default: .other
      }
    s.pointee.place = .value
    return true
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
  static func scalarValue(_ s: Pointer, isString: Bool, _ text: UnsafePointer<UInt8>?, _ length: Int) -> Bool {
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
      return true
    }
  }

  /// An object as the value of a table object's key: read past when the key is not one of the
  /// answer's.
  static func objectValue(_ s: Pointer) -> Bool {
    switch s.pointee.key {
    case .other: return skip(s)
    case .name: return stop(s, "a table's 'name' must be a string")
    case .data, .insertRows, .deleteIDs: return stop(s, "a table's '\(listKey(s.pointee.key)!.name)' must be a list")
    }
  }

  /// A list as the value of a table object's key: as the sink says.
  static func startList(_ s: Pointer) -> Bool {
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
    return true
  }

  static func endList(_ s: Pointer) -> Bool {
    s.pointee.rows = nil
    s.pointee.rowsOwner = nil
    s.pointee.place = .object
    let items = s.pointee.row
    return attempt(s) { try s.pointee.sink.endList(s.pointee.list, items: items) }
  }

  static func deleteID(_ s: Pointer, _ token: JSONToken) -> Bool {
    s.pointee.row += 1
    return attempt(s) { try s.pointee.sink.deleteID(token, item: s.pointee.row) }
  }

  static func skip(_ s: Pointer) -> Bool {
    s.pointee.place = .skip
    s.pointee.depth = 1
    return true
  }

  static func skipEnd(_ s: Pointer) -> Bool {
    s.pointee.depth -= 1
    if s.pointee.depth == 0 { s.pointee.place = .object }
    return true
  }

  // MARK: Nested values inside a row, kept as JSON text

  static func startNested(_ s: Pointer, isArray: Bool) -> Bool {
    s.pointee.nested.removeAll(keepingCapacity: true)
    s.pointee.nestedNeedsComma.removeAll(keepingCapacity: true)
    s.pointee.nestedIsArray = isArray
    s.pointee.nested.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    s.pointee.nestedNeedsComma.append(false)
    s.pointee.place = .nested
    s.pointee.depth = 1
    return true
  }

  private static func separator(_ s: Pointer) {
    let last = s.pointee.nestedNeedsComma.count - 1
    if s.pointee.nestedNeedsComma[last] { s.pointee.nested.append(UInt8(ascii: ",")) }
    s.pointee.nestedNeedsComma[last] = true
  }

  static func nestedOpen(_ s: Pointer, isArray: Bool) -> Bool {
    separator(s)
    s.pointee.nested.append(isArray ? UInt8(ascii: "[") : UInt8(ascii: "{"))
    s.pointee.nestedNeedsComma.append(false)
    s.pointee.depth += 1
    return true
  }

  static func nestedClose(_ s: Pointer, isArray: Bool) -> Bool {
    s.pointee.nested.append(isArray ? UInt8(ascii: "]") : UInt8(ascii: "}"))
    s.pointee.nestedNeedsComma.removeLast()
    s.pointee.depth -= 1
    guard s.pointee.depth == 0 else { return true }
    s.pointee.place = .row
    // The row sink borrows the text for the call only; the array is not touched meanwhile.
    let nested = s.pointee.nested
    return nested.withUnsafeBufferPointer { value(s, .nested($0)) }
  }

  static func nestedKey(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Bool {
    separator(s)
    appendString(s, text, length)
    s.pointee.nested.append(UInt8(ascii: ":"))
    s.pointee.nestedNeedsComma[s.pointee.nestedNeedsComma.count - 1] = false
    return true
  }

  static func nestedScalar(_ s: Pointer, _ text: StaticString) -> Bool {
    separator(s)
    s.pointee.nested.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    return true
  }

  static func nestedNumber(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Bool {
    separator(s)
    s.pointee.nested.append(contentsOf: UnsafeBufferPointer(start: text, count: length))
    return true
  }

  static func nestedString(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) -> Bool {
    separator(s)
    appendString(s, text, length)
    return true
  }

  private static func appendString(_ s: Pointer, _ text: UnsafePointer<UInt8>, _ length: Int) {
    var out = ""
    JSONValue.writeString(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self), to: &out)
    s.pointee.nested.append(contentsOf: out.utf8)
  }
}

/// The lexer's events, as the scan's state takes them: what each token means depends on
/// where the scanner is (`ScanPlace`).
struct ScanEvents: JSONLexerEvents {
  let s: ScanState.Pointer

  func null() -> Bool {
    switch s.pointee.place {
    case .row: ScanState.value(s, .null)
    case .skip: true
    case .nested: ScanState.nestedScalar(s, "null")
    case .value: ScanState.scalarValue(s, isString: false, nil, 0)
    default: ScanState.unexpected(s, "null")
    }
  }

  func bool(_ flag: Bool) -> Bool {
    switch s.pointee.place {
    case .row: ScanState.value(s, .bool(flag))
    case .skip: true
    case .nested: ScanState.nestedScalar(s, flag ? "true" : "false")
    case .value: ScanState.scalarValue(s, isString: false, nil, 0)
    default: ScanState.unexpected(s, "a boolean")
    }
  }

  @inline(__always)
  func number(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    switch s.pointee.place {
    case .row: ScanState.value(s, .number(text))
    case .skip: true
    case .ids: ScanState.deleteID(s, .number(text))
    case .nested: ScanState.nestedNumber(s, text.baseAddress!, text.count)
    case .value: ScanState.scalarValue(s, isString: false, text.baseAddress, text.count)
    default: ScanState.unexpected(s, "a number")
    }
  }

  @inline(__always)
  func string(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    switch s.pointee.place {
    case .row: ScanState.value(s, .string(text))
    case .skip: true
    case .nested: ScanState.nestedString(s, text.baseAddress!, text.count)
    case .value: ScanState.scalarValue(s, isString: true, text.baseAddress!, text.count)
    case .ids: ScanState.deleteID(s, .string(text))
    default: ScanState.unexpected(s, "a string")
    }
  }

  func key(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    switch s.pointee.place {
    case .skip: true
    case .nested: ScanState.nestedKey(s, text.baseAddress!, text.count)
    case .object: ScanState.key(s, text.baseAddress!, text.count)
    default: ScanState.unexpected(s, "a key")
    }
  }

  func startObject() -> Bool {
    switch s.pointee.place {
    case .skip:
      s.pointee.depth += 1
      return true
    case .row: return ScanState.startNested(s, isArray: false)
    case .nested: return ScanState.nestedOpen(s, isArray: false)
    case .tables: return ScanState.startObject(s)
    case .value: return ScanState.objectValue(s)
    default: return ScanState.unexpected(s, "an object")
    }
  }

  func endObject() -> Bool {
    switch s.pointee.place {
    case .skip: ScanState.skipEnd(s)
    case .nested: ScanState.nestedClose(s, isArray: false)
    case .object: ScanState.endObject(s)
    default: ScanState.unexpected(s, "the end of an object")
    }
  }

  @inline(__always)
  func startArray() -> Bool {
    switch s.pointee.place {
    case .rows: return ScanState.startRow(s)
    case .skip:
      s.pointee.depth += 1
      return true
    case .row: return ScanState.startNested(s, isArray: true)
    case .nested: return ScanState.nestedOpen(s, isArray: true)
    case .value: return ScanState.startList(s)
    case .start:
      s.pointee.place = .tables
      return true
    default: return ScanState.unexpected(s, "a list")
    }
  }

  @inline(__always)
  func endArray() -> Bool {
    switch s.pointee.place {
    case .row: return ScanState.endRow(s)
    case .skip: return ScanState.skipEnd(s)
    case .rows, .ids: return ScanState.endList(s)
    case .nested: return ScanState.nestedClose(s, isArray: true)
    case .tables:
      s.pointee.place = .done
      return true
    default: return ScanState.unexpected(s, "the end of a list")
    }
  }
}
