public import DrayJSON
internal import DrayModel

/// PostgreSQL's row sink: each value of an answer's rows appended to a COPY under
/// `PostgresValueRule`, straight from the scanner's bytes (no `JSONValue` per row).
///
/// Made for one table's list of rows (`TableAnswerScanner`); `finish()` ends its COPY. A
/// value the rule refuses, or a row of the wrong width, stops the scan with a
/// `TableAnswerRefusal` the scanner places by table, row and column.
public final class PostgresRowSink: TableAnswerRowSink {
  /// The COPY the rows go to.
  public let writer: PostgresCopyWriter
  private let resource: String
  private let table: String
  /// Names and platform types of the row's values, the row id first for a cached resource.
  private let columns: [(name: String, type: String)]
  private let types: [PostgresColumnType]
  private let rowIDFirst: Bool

  /// - Parameters:
  ///   - writer: the COPY, its column list in `columns`' order.
  ///   - resource, table: the names refusals give.
  ///   - columns: each value's column name and declared (platform) type.
  ///   - rowIDFirst: the first value is a cached resource's row id (`hhive_id`), which must be
  ///     an integer within 64 bits.
  public init(
    writer: PostgresCopyWriter, resource: String, table: String, columns: [(name: String, type: String)], rowIDFirst: Bool
  ) {
    self.writer = writer
    self.resource = resource
    self.table = table
    self.columns = columns
    self.types = columns.map { PostgresColumnType(schemeType: $0.type) }
    self.rowIDFirst = rowIDFirst
  }

  public func value(_ token: JSONToken, row: Int, column: Int) throws {
    // A row with too many values is refused whole at its end (`endRow`).
    guard column < types.count else { return }
    do throws(PostgresValueRefusal) {
      if rowIDFirst && column == 0 { try Self.checkRowID(token) }
      try PostgresValueRule.append(token, as: types[column], to: writer)
    } catch {
      let refused = PostgresValueError(
        resource: resource, table: table, row: row, column: column + 1, columnName: columns[column].name,
        declaredType: columns[column].type, refusal: error)
      let place = "resource \(resource), table \(table), row \(row), column \(column + 1) "
      throw TableAnswerRefusal(String(refused.description.dropFirst(place.count)))
    }
  }

  public func endRow(_ row: Int, values: Int) throws {
    guard values == types.count else {
      let width = types.count
      throw TableAnswerRefusal(
        "the row has \(values) value\(values == 1 ? "" : "s"); the table has \(width) column\(width == 1 ? "" : "s")\(rowIDFirst ? " (a row id, then the scheme's columns)" : ""); the row is refused",
        wholeRow: true)
    }
    try writer.endRow()
  }

  /// Ends the COPY.
  /// - Returns: the rows the server copied.
  /// - Throws: `PostgresError`, as `PostgresCopyWriter.finish()`.
  public func finish() throws -> Int { try writer.finish() }

  /// A row id is an integer within 64 bits.
  private static func checkRowID(_ token: JSONToken) throws(PostgresValueRefusal) {
    if case .number(let text) = token, Int64(String(decoding: text, as: UTF8.self)) != nil { return }
    let shown: String =
      switch token {
      case .null: "null"
      case .bool(let flag): flag ? "true" : "false"
      case .number(let text), .nested(let text): String(decoding: text, as: UTF8.self)
      case .string(let text): JSONValue.quoted(String(decoding: text, as: UTF8.self))
      }
    throw PostgresValueRefusal(found: "not an integer of at most 64 bits", value: shown, column: .bigint)
  }
}

@available(*, unavailable)
extension PostgresRowSink: Sendable {}
