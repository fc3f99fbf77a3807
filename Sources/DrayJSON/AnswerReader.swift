public import DrayModel
internal import Foundation

/// Reads a table answer file (platform-api.md §3) row by row, without holding it in memory.
///
/// The answer is a JSON list of tables, each `{"name": "output_table", "data": [[...], ...]}`;
/// `TableAnswerScanner` reads the file in 1 MiB chunks and each row reaches `row` as soon as
/// its closing bracket is read, its values as `JSONValue`s. Keys other than `name` and `data`
/// are skipped; a table's `name` must come before its `data`, as the platform sends it.
///
/// ```swift
/// try AnswerReader(path: "fruits.answer").read(
///   table: { name in print("table", name) },
///   row: { values in print(values.map(\.json)) })
/// ```
public struct AnswerReader {
  /// The answer file.
  public let path: String

  public init(path: String) { self.path = path }

  /// Parses the whole file, calling `table` at the start of each table's rows and `row` for
  /// each row, in order.
  /// - Throws: `AnswerReadError` when the file cannot be read or is not a table answer;
  ///   any error thrown by `table` or `row`, unchanged.
  public func read(table: (String) throws -> Void, row: ([JSONValue]) throws -> Void) throws {
    try withoutActuallyEscaping(table) { table in
      try withoutActuallyEscaping(row) { row in
        do {
          try TableAnswerScanner(sink: RowCollector(onTable: table, onRow: row)).scan(file: path)
        } catch let error as TableAnswerError {
          throw AnswerReadError(message: error.description)
        }
      }
    }
  }
}

/// A table answer that could not be read.
public struct AnswerReadError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public var description: String { message }
}

/// The scanner's sink: each table's name, then its rows as `JSONValue`s.
private final class RowCollector: TableAnswerSink, TableAnswerRowSink {
  let onTable: (String) throws -> Void
  let onRow: ([JSONValue]) throws -> Void
  var name: String?
  var values: [JSONValue] = []

  init(onTable: @escaping (String) throws -> Void, onRow: @escaping ([JSONValue]) throws -> Void) {
    self.onTable = onTable
    self.onRow = onRow
  }

  func beginTable() throws { name = nil }
  func tableName(_ name: String) throws { self.name = name }
  func endTable() throws {}
  func endList(_ key: TableAnswerKey, items: Int) throws {}
  func deleteID(_ token: JSONToken, item: Int) throws {}

  func beginList(_ key: TableAnswerKey) throws -> TableAnswerList {
    guard key == .data else { return .skip }
    guard let name else { throw TableAnswerRefusal("a table's rows come before its name") }
    try onTable(name)
    return .rows(self)
  }

  func value(_ token: JSONToken, row: Int, column: Int) throws {
    switch token {
    case .null: values.append(.null)
    case .bool(let flag): values.append(.bool(flag))
    case .number(let text):
      let raw = String(decoding: text, as: UTF8.self)
      values.append(Int64(raw).map { .integer($0) } ?? .number(raw))
    case .string(let text): values.append(.string(String(decoding: text, as: UTF8.self)))
    case .nested(let text):
      do throws(JSONParseError) {
        values.append(try JSONValue(parsing: Array(text)))
      } catch {
        throw TableAnswerRefusal(error.message)
      }
    }
  }

  func endRow(_ row: Int, values count: Int) throws {
    defer { values.removeAll(keepingCapacity: true) }
    try onRow(values)
  }
}
