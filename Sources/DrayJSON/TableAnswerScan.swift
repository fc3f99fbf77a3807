internal import DrayModel

/// Where a `TableAnswerScanner` is in the answer, and what each of the lexer's tokens means
/// there: the scan's state, updated by the lexer's events in place (the scanner lends it to
/// the lexer `inout` for each chunk). A throw stops the scan: a `TableAnswerRefusal`, which the
/// scanner places (`placed(_:)`), or a sink's own error.
struct TableAnswerScan {
  /// Where the scan is.
  enum Place: UInt8 {
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

  /// The keys of a table object the scan knows.
  enum Key: UInt8 { case name, data, insertRows, deleteIDs, other }

  var place = Place.start
  var key = Key.other
  /// The list being read.
  var list = TableAnswerKey.data
  /// Depth inside a skipped value, or inside a nested value of a row.
  var depth = 0
  /// 1-based number of the current row (or id) in its list.
  var row = 0
  /// Values read so far in the current row.
  var column = 0
  /// The name of the table object being read, once its `name` came.
  private(set) var table: String?
  var nameSeen = false
  /// Kept alive by the scanner (`TableAnswerScanner.sink`).
  unowned(unsafe) let sink: any TableAnswerSink
  /// The current row sink, reached without reference counting (a class-bound existential
  /// would be retained and released at every value); `rowsOwner` keeps it alive.
  var rows: Unmanaged<RowSinkBox>?
  var rowsOwner: RowSinkBox?
  /// A nested value of a row, as compact JSON text (`TableAnswerScan+Nested.swift`).
  var nested = NestedText()

  init(sink: any TableAnswerSink) { self.sink = sink }

  // MARK: Placing a refusal

  /// `refusal` placed at the current place: the table object being read (none before,
  /// between or after them); the row being read and its current value (not the value for
  /// `wholeRow`); the next row between rows.
  func placed(_ refusal: TableAnswerRefusal) -> TableAnswerError {
    let table: String? =
      switch place {
      case .start, .tables, .done: nil
      default: self.table
      }
    let (row, column): (Int?, Int?) =
      switch place {
      case .row, .nested: (row, refusal.wholeRow ? nil : column + 1)
      case .rows: (row + 1, nil)
      default: (nil, nil)
      }
    return TableAnswerError(table: table, row: row, column: column, message: refusal.message)
  }

  /// The refusal of `what` where it stands.
  func unexpected(_ what: String) -> TableAnswerRefusal {
    switch place {
    case .start: TableAnswerRefusal("the answer must be a JSON list of tables, found \(what)")
    case .tables: TableAnswerRefusal("each element of the answer must be an object with 'name' and 'data', found \(what)")
    case .rows: TableAnswerRefusal("each row must be a JSON list of values, found \(what)")
    case .ids: TableAnswerRefusal("delete_ids holds row ids (integers), found \(what)")
    default: TableAnswerRefusal("unexpected \(what) in the answer")
    }
  }

  // MARK: Values of a row: the per-value path

  @inline(__always)
  mutating func value(_ token: JSONToken) throws {
    let (row, column) = (self.row, self.column)
    try rows.unsafelyUnwrapped._withUnsafeGuaranteedRef { try $0.sink.value(token, row: row, column: column) }
    self.column += 1
  }

  mutating func startRow() {
    place = .row
    column = 0
    row += 1
  }

  @inline(__always)
  mutating func endRow() throws {
    let (row, column) = (self.row, self.column)
    try rows.unsafelyUnwrapped._withUnsafeGuaranteedRef { try $0.sink.endRow(row, values: column) }
    place = .rows
  }

  // MARK: The structure

  mutating func startTable() throws {
    place = .object
    table = nil
    nameSeen = false
    try sink.beginTable()
  }

  mutating func endTable() throws {
    guard nameSeen else { throw TableAnswerRefusal("an element of the answer has no 'name'") }
    place = .tables
    try sink.endTable()
  }

  mutating func tableKey(_ text: UnsafeBufferPointer<UInt8>) {
    key =
      switch String(decoding: text, as: UTF8.self) {
      case "name": .name
      case "data": .data
      case "insert_rows": .insertRows
      case "delete_ids": .deleteIDs
      default: .other
      }
    place = .value
  }

  /// The list `key` names; nil for `name` and keys read past.
  static func listKey(_ key: Key) -> TableAnswerKey? {
    switch key {
    case .data: .data
    case .insertRows: .insertRows
    case .deleteIDs: .deleteIDs
    case .name, .other: nil
    }
  }

  /// The refusal of a value of the wrong kind for the key being read.
  private var wrongKind: TableAnswerRefusal {
    guard let list = Self.listKey(key) else { return TableAnswerRefusal("a table's 'name' must be a string") }
    return TableAnswerRefusal("a table's '\(list.name)' must be a list")
  }

  /// A scalar as the value of a table object's key (`text` for a string).
  mutating func scalarValue(string text: UnsafeBufferPointer<UInt8>?) throws {
    place = .object
    switch key {
    case .name:
      guard let text else { throw wrongKind }
      if nameSeen { throw TableAnswerRefusal("a table object has 'name' twice") }
      nameSeen = true
      let name = String(decoding: text, as: UTF8.self)
      table = name
      try sink.tableName(name)
    case .data, .insertRows, .deleteIDs:
      throw wrongKind
    case .other:
      break
    }
  }

  /// An object as the value of a table object's key: read past when the key is not one of the
  /// answer's.
  mutating func objectValue() throws {
    guard key == .other else { throw wrongKind }
    skip()
  }

  /// A list as the value of a table object's key: as the sink says.
  mutating func startList() throws {
    guard let listKey = Self.listKey(key) else {
      guard key == .other else { throw wrongKind }
      return skip()
    }
    let list = try sink.beginList(listKey)
    self.list = listKey
    row = 0
    switch list {
    case .rows(let sink):
      let box = RowSinkBox(sink)
      rowsOwner = box
      rows = Unmanaged.passUnretained(box)
      place = .rows
    case .ids:
      place = .ids
    case .skip:
      skip()
    }
  }

  mutating func endList() throws {
    rows = nil
    rowsOwner = nil
    place = .object
    try sink.endList(list, items: row)
  }

  mutating func deleteID(_ token: JSONToken) throws {
    row += 1
    try sink.deleteID(token, item: row)
  }

  mutating func skip() {
    place = .skip
    depth = 1
  }

  mutating func skipEnd() {
    depth -= 1
    if depth == 0 { place = .object }
  }
}

/// A row sink behind a class reference, so that `TableAnswerScan` can hold it `Unmanaged`.
final class RowSinkBox {
  let sink: any TableAnswerRowSink
  init(_ sink: any TableAnswerRowSink) { self.sink = sink }
}

// MARK: - The lexer's events

/// What each token means depends on where the scan is (`Place`).
extension TableAnswerScan: JSONLexerEvents {
  mutating func null() throws {
    switch place {
    case .row: try value(.null)
    case .skip: break
    case .nested: nested.scalar("null")
    case .value: try scalarValue(string: nil)
    default: throw unexpected("null")
    }
  }

  mutating func bool(_ flag: Bool) throws {
    switch place {
    case .row: try value(.bool(flag))
    case .skip: break
    case .nested: nested.scalar(flag ? "true" : "false")
    case .value: try scalarValue(string: nil)
    default: throw unexpected("a boolean")
    }
  }

  @inline(__always)
  mutating func number(_ text: UnsafeBufferPointer<UInt8>) throws {
    switch place {
    case .row: try value(.number(text))
    case .skip: break
    case .ids: try deleteID(.number(text))
    case .nested: nested.number(text)
    case .value: try scalarValue(string: nil)
    default: throw unexpected("a number")
    }
  }

  @inline(__always)
  mutating func string(_ text: UnsafeBufferPointer<UInt8>) throws {
    switch place {
    case .row: try value(.string(text))
    case .skip: break
    case .nested: nested.string(text)
    case .value: try scalarValue(string: text)
    case .ids: try deleteID(.string(text))
    default: throw unexpected("a string")
    }
  }

  mutating func key(_ text: UnsafeBufferPointer<UInt8>) throws {
    switch place {
    case .skip: break
    case .nested: nested.key(text)
    case .object: tableKey(text)
    default: throw unexpected("a key")
    }
  }

  mutating func startObject() throws {
    switch place {
    case .skip: depth += 1
    case .row: startNested(isArray: false)
    case .nested: openNested(isArray: false)
    case .tables: try startTable()
    case .value: try objectValue()
    default: throw unexpected("an object")
    }
  }

  mutating func endObject() throws {
    switch place {
    case .skip: skipEnd()
    case .nested: try endNested(isArray: false)
    case .object: try endTable()
    default: throw unexpected("the end of an object")
    }
  }

  @inline(__always)
  mutating func startArray() throws {
    switch place {
    case .rows: startRow()
    case .skip: depth += 1
    case .row: startNested(isArray: true)
    case .nested: openNested(isArray: true)
    case .value: try startList()
    case .start: place = .tables
    default: throw unexpected("a list")
    }
  }

  @inline(__always)
  mutating func endArray() throws {
    switch place {
    case .row: try endRow()
    case .skip: skipEnd()
    case .rows, .ids: try endList()
    case .nested: try endNested(isArray: true)
    case .tables: place = .done
    default: throw unexpected("the end of a list")
    }
  }
}
