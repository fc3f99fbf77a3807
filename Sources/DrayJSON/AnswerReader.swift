public import DrayModel
internal import Foundation

/// Reads a table answer file (platform-api.md §3) row by row, without holding it in memory.
///
/// The answer is a JSON list of tables, each `{"name": "output_table", "data": [[...], ...]}`;
/// `TableAnswerScanner` reads the file in 1 MiB chunks and each row reaches `row` as soon as
/// its closing bracket is read, its values as `JSONValue`s. A delta's `insert_rows` and
/// `delete_ids` are read when asked for; other keys are skipped. JSON objects are unordered:
/// rows met before their table's `name` are read on a second pass over the file
/// (`NamedLists`), which knows the name by then.
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

  /// The list of a table object that `read` reports (platform-api.md §3).
  public enum Section: String, Sendable, CaseIterable {
    /// `data`: a full answer's rows (a delta's too, for a table it replaces).
    case data
    /// `insert_rows`: a delta's rows to insert, each replacing the row of its row id.
    case insertRows = "insert_rows"
    /// `delete_ids`: a delta's row ids to delete; each reaches `row` as a list of one value.
    case deleteIDs = "delete_ids"

    init(_ key: TableAnswerKey) {
      switch key {
      case .data: self = .data
      case .insertRows: self = .insertRows
      case .deleteIDs: self = .deleteIDs
      }
    }
  }

  /// Parses the whole file, calling `table` at the start of each table's rows and `row` for
  /// each row, in order; the rows of a table whose `name` comes after them arrive on a
  /// second pass, after every other table's.
  /// - Throws: `AnswerReadError` when the file cannot be read or is not a table answer;
  ///   any error thrown by `table` or `row`, unchanged.
  public func read(table: (String) throws -> Void, row: ([JSONValue]) throws -> Void) throws {
    try read(sections: [.data], table: { name, _ in try table(name) }, row: row)
  }

  /// Parses the whole file, calling `table` at the start of each list of `sections` (with
  /// the table's name and the list's key) and `row` for each of its items, in order; lists
  /// met before their table's `name` arrive on a second pass. Lists of other keys are
  /// skipped.
  /// - Throws: `AnswerReadError` when the file cannot be read or is not a table answer;
  ///   any error thrown by `table` or `row`, unchanged.
  public func read(
    sections: Set<Section>, table: (String, Section) throws -> Void, row: ([JSONValue]) throws -> Void
  ) throws {
    try withoutActuallyEscaping(table) { table in
      try withoutActuallyEscaping(row) { row in
        do {
          try NamedLists.read(file: path, into: RowCollector(sections: sections, onTable: table, onRow: row))
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

/// The sink of `AnswerReader`: each list's table and section, then its rows as `JSONValue`s.
private final class RowCollector: NamedListSink, TableAnswerRowSink {
  let sections: Set<AnswerReader.Section>
  let onTable: (String, AnswerReader.Section) throws -> Void
  let onRow: ([JSONValue]) throws -> Void
  var values: [JSONValue] = []

  init(
    sections: Set<AnswerReader.Section>, onTable: @escaping (String, AnswerReader.Section) throws -> Void,
    onRow: @escaping ([JSONValue]) throws -> Void
  ) {
    self.sections = sections
    self.onTable = onTable
    self.onRow = onRow
  }

  func beginList(_ key: TableAnswerKey, of table: String) throws -> TableAnswerList {
    let section = AnswerReader.Section(key)
    guard sections.contains(section) else { return .skip }
    try onTable(table, section)
    return section == .deleteIDs ? .ids : .rows(self)
  }

  func endList(_ key: TableAnswerKey, of table: String, items: Int) throws {}

  func deleteID(_ token: JSONToken, item: Int) throws { try onRow([try Self.value(token)]) }

  func value(_ token: JSONToken, row: Int, column: Int) throws { values.append(try Self.value(token)) }

  func endRow(_ row: Int, values count: Int) throws {
    defer { values.removeAll(keepingCapacity: true) }
    try onRow(values)
  }

  static func value(_ token: JSONToken) throws -> JSONValue {
    switch token {
    case .null: return .null
    case .bool(let flag): return .bool(flag)
    case .number(let text): return JSONValue(number: text)
    case .string(let text): return .string(String(decoding: text, as: UTF8.self))
    case .nested(let text):
      do throws(JSONParseError) {
        return try JSONValue(parsing: Array(text))
      } catch {
        throw TableAnswerRefusal(error.message)
      }
    }
  }
}
