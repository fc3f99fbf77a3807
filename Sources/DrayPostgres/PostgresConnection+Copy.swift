internal import CLibPQ
internal import Foundation

/// COPY's start on a connection: text (`copyIn(_:)`) or binary (`copyInBinary(_:width:)`).
extension PostgresConnection {
  /// Starts `COPY ... FROM STDIN` (text format) and returns the writer of its rows.
  ///
  /// - Parameter sql: a `COPY table (columns) FROM STDIN` statement (text format, the
  ///   default).
  /// - Throws: `PostgresError` when the server refuses the statement.
  public func copyIn(_ sql: String) throws(PostgresError) -> PostgresCopyWriter {
    try startCopy(sql)
    return PostgresCopyWriter(connection: self, statement: sql)
  }

  /// Starts `COPY ... FROM STDIN (FORMAT binary)` and returns the writer of its rows
  /// (`PostgresCopyWriter+Binary.swift`). Each column's type must be one the writer encodes,
  /// by the catalog (`columnTypes(of:_:)`): the server casts nothing.
  ///
  /// - Parameters:
  ///   - sql: a `COPY table (columns) FROM STDIN` statement, without options; the writer
  ///     goes on with it in text when a value cannot go in binary.
  ///   - width: the values of a row.
  /// - Throws: `PostgresError` when the server refuses the statement.
  public func copyInBinary(_ sql: String, width: Int) throws(PostgresError) -> PostgresCopyWriter {
    try startCopy(sql + " (FORMAT binary)")
    return PostgresCopyWriter(connection: self, statement: sql, binaryWidth: width)
  }

  /// Runs a `COPY ... FROM STDIN` statement; the connection is then in COPY mode.
  func startCopy(_ sql: String) throws(PostgresError) {
    let result = try run(sql)
    let status = PQresultStatus(result)
    PQclear(result)
    guard status == PGRES_COPY_IN else {
      throw PostgresError(sqlState: nil, message: "the statement did not start COPY FROM STDIN", statement: sql, url: url.redacted)
    }
  }

  /// The catalog's type of each of `columns` of `table` (a qualified, quoted name), as
  /// `format_type` writes it (`bigint`, `double precision`, `numeric(20,2)`...); nil for a
  /// column the table does not have.
  ///
  /// - Throws: `PostgresError` when the table does not exist.
  public func columnTypes(of table: String, _ columns: [String]) throws(PostgresError) -> [String?] {
    let rows = try execute(
      "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped",
      [.text(table)]
    ).rows
    var types: [String: String] = [:]
    for row in rows { if let name = row[0].text, let type = row[1].text { types[name] = type } }
    return columns.map { types[$0] }
  }
}
