internal import CSQLite
public import DrayTarget

/// One row of a query's result, read by column name.
///
/// The rows of one statement share its column names, built once (`Database.rows`); a value is
/// found by comparing the name with each column's, so a row costs its values only.
public struct Row: Sendable {
  /// The result's column names, in the statement's order.
  public let columns: [String]
  /// The row's values, in the order of `columns`.
  public let values: [SQLValue]
  /// The statement the row came from and its database file, named by the error for a
  /// column the row does not have.
  let sql: String
  let path: String

  /// The value of `column` (its name as the statement returns it: the alias after `AS`).
  /// - Throws: `SQLiteError` with code `SQLITE_MISUSE` naming `column` and the columns the
  ///   statement has, when it has no column of that name.
  public subscript(_ column: String) -> SQLValue {
    get throws(SQLiteError) {
      guard let index = columns.firstIndex(of: column) else {
        throw SQLiteError(
          code: SQLITE_MISUSE,
          message: "no column named \(column) in the result; its columns are \(columns.joined(separator: ", "))",
          sql: sql, path: path)
      }
      return values[index]
    }
  }

  /// The text of `column`: "" for NULL, a number's digits.
  public func text(_ column: String) throws(SQLiteError) -> String { try self[column].text }

  /// The text of `column`, nil for NULL.
  public func optionalText(_ column: String) throws(SQLiteError) -> String? { try self[column].optionalText }

  /// The integer of `column`: 0 for NULL or a text that is no integer.
  public func integer(_ column: String) throws(SQLiteError) -> Int64 { try self[column].integer }
}

extension Database {
  /// Runs a query and returns its rows, each read by column name (`Row`).
  /// - Throws: `SQLiteError`.
  public func rows(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> [Row] {
    let statement = try prepare(sql)
    try statement.bind(values)
    let columns = (0..<statement.columnCount).map { statement.columnName($0) }
    var out: [Row] = []
    while try statement.step() {
      out.append(Row(columns: columns, values: (0..<statement.columnCount).map { statement.value($0) }, sql: sql, path: path))
    }
    return out
  }
}

extension SQLValue {
  /// The text of a TEXT value, nil for NULL.
  var optionalText: String? { self == .null ? nil : text }

  /// The text of a TEXT value, "" for NULL, a number's digits.
  var text: String {
    switch self {
    case .text(let s): s
    case .null: ""
    default: description
    }
  }

  /// The integer of an INTEGER value, 0 for NULL or what holds no integer.
  var integer: Int64 {
    switch self {
    case .integer(let i): i
    // A damaged journal may hold any REAL; Int64(d) would trap on NaN or past 2^63.
    case .real(let d): Int64(exactly: d.rounded(.towardZero)) ?? 0
    case .text(let s): Int64(s) ?? 0
    default: 0
    }
  }
}
