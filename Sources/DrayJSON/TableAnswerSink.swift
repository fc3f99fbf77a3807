internal import DrayModel

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
