import DrayJSON
import DrayModel
import DrayTestSupport
import Foundation
import Testing

@testable import DrayPostgres

/// `PostgresCopyWriter` and `PostgresValueRule` against a real server: what is sent is what
/// is stored, exactly, or the value is refused by resource, table, row and column.
@Suite struct PostgresCopyTests {
  let server: PostgresServer
  let database: String

  init() throws {
    server = try PostgresServer.shared()
    database = try server.createDatabase()
  }

  /// Copies `rows` of JSON tokens (as text) into a table with a column of each type and
  /// reads them back as text (`jsonb` as its text, `NULL` as nil).
  func roundTrip(_ rows: [[String]]) throws -> [[String?]] {
    let connection = try server.connect(database: database)
    let types = PostgresColumnType.allCases
    let columns = types.enumerated().map { "c\($0.offset) \($0.element.sqlName)" }.joined(separator: ", ")
    try connection.execute("CREATE TABLE t (row_number bigint, \(columns))")
    let copy = try connection.copyIn("COPY t FROM STDIN")
    for (number, row) in rows.enumerated() {
      try append(String(number), .bigint, copy)
      for (value, type) in zip(row, types) { try append(value, type, copy) }
      try copy.endRow()
    }
    #expect(try copy.finish() == rows.count)
    let all = types.indices.map { "c\($0)::text" }.joined(separator: ", ")
    return try connection.execute("SELECT \(all) FROM t ORDER BY row_number").rows.map { $0.map(\.text) }
  }

  /// Appends one JSON token given as text: `null`, `true`, a number, `"string"`, `[...]`.
  func append(_ token: String, _ type: PostgresColumnType, _ copy: PostgresCopyWriter) throws(PostgresValueRefusal) {
    var bytes = Array(token.utf8)
    let refusal = bytes.withUnsafeMutableBufferPointer { buffer -> PostgresValueRefusal? in
      let b = UnsafeBufferPointer(buffer)
      let value: JSONToken
      switch token.first {
      case "n": value = .null
      case "t": value = .bool(true)
      case "f": value = .bool(false)
      case "\"": value = .string(UnsafeBufferPointer(rebasing: b.dropFirst().dropLast()))
      case "[", "{": value = .nested(b)
      default: value = .number(b)
      }
      do throws(PostgresValueRefusal) {
        try PostgresValueRule.append(value, as: type, to: copy)
        return nil
      } catch { return error }
    }
    bytes.removeAll()
    if let refusal { throw refusal }
  }

  /// Copies `texts` (and a row of NULLs after them when `thenNull`) into a text column and
  /// reads them back in order.
  func storeTexts(_ texts: [String], thenNull: Bool = false) throws -> [PostgresValue] {
    let connection = try server.connect(database: database)
    try connection.execute("CREATE TABLE t (n bigint, s text)")
    let copy = try connection.copyIn("COPY t (n, s) FROM STDIN")
    for (i, text) in texts.enumerated() {
      try copy.append(String(i))
      try copy.append(text)
      try copy.endRow()
    }
    if thenNull {
      copy.appendNull()
      copy.appendNull()
      try copy.endRow()
    }
    #expect(try copy.finish() == texts.count + (thenNull ? 1 : 0))
    return try connection.execute("SELECT s FROM t ORDER BY n NULLS LAST").rows.map { $0[0] }
  }

  @Test func trickyTextRoundTripsExactly() throws {
    let texts = ["tab\there", "new\nline", "cr\r\n", "back\\slash \\N", "", "Ünïcødé ж 😀", "\\.", "quote\"d"]
    #expect(try storeTexts(texts, thenNull: true) == texts.map { .text($0) } + [.null])
  }

  @Test func aCharacterToEscapeAtAnyPlaceOfALongTextRoundTrips() throws {
    // The writer copies eight bytes at a time until one needs escaping: every place of such
    // a byte, and every byte below 0x0E, against that boundary.
    var texts: [String] = []
    for special in ["\\", "\t", "\n", "\r", "\u{01}", "\u{0D}", "\u{0E}", "\\N", "ж"] {
      for place in 0..<20 { texts.append(String(repeating: "a", count: place) + special + String(repeating: "b", count: 19 - place)) }
    }
    #expect(try storeTexts(texts) == texts.map { .text($0) })
  }

  @Test func aValueLongerThanAChunkGrowsTheBufferAndRoundTrips() throws {
    // Past the 64 KiB chunk (and the buffer's first capacity) in one value, with escapes.
    let long = String(repeating: "ab\tc\\d", count: 40_000)
    #expect(try storeTexts(["short", long, "after"]) == [.text("short"), .text(long), .text("after")])
  }

  @Test func aRealIsStoredAsTheDoubleNearestItsDigits() throws {
    let rows = try roundTrip([
      ["null", "123456.7891", "null", "null", "null", "null"],
      ["null", "-0.000001", "null", "null", "null", "null"],
      ["null", "0.000", "null", "null", "null", "null"],
      ["null", "2.5E3", "null", "null", "null", "null"],
    ])
    #expect(rows.map { $0[1] } == ["123456.7891", "-1e-06", "0", "2500"])
  }

  @Test func everyColumnTypeStoresWhatItTakesExactly() throws {
    // bigint, double precision, numeric, text, boolean, jsonb
    let rows = try roundTrip([
      ["null", "null", "null", "null", "null", "null"],
      ["9223372036854775807", "5", "123456789012345678901234567890", #""""#, "true", "\"a\"b\\c\td\""],
      ["-9223372036854775808", "0.1", "1e999", #""x""#, "false", "12345678901234567890.5"],
      ["true", "1e-400", "-0.5", #"["a",{"b":null}]"#, "null", #"{"k":[1,2.50,true]}"#],
    ])
    #expect(
      rows == [
        [nil, nil, nil, nil, nil, nil],
        ["9223372036854775807", "5", "123456789012345678901234567890", "", "true", #""a\"b\\c\td""#],
        ["-9223372036854775808", "0.1", "1" + String(repeating: "0", count: 999), "x", "false", "12345678901234567890.5"],
        ["1", "0", "-0.5", #"["a",{"b":null}]"#, nil, #"{"k": [1, 2.50, true]}"#],
      ])
  }

  @Test(arguments: [
    (
      PostgresColumnType.bigint, #""two""#,
      #"resource R, table output_table, row 3, column 2 'n' (BIGINT, a bigint column): "two" is a string; a bigint column takes integers within 64 bits and booleans (as 1 and 0)"#
    ),
    (
      .bigint, "9223372036854775808",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a bigint column): 9223372036854775808 is an integer beyond 64 bits; a bigint column takes integers within 64 bits and booleans (as 1 and 0)"
    ),
    (
      .bigint, "5.0",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a bigint column): 5.0 is a number with a fraction or exponent; a bigint column takes integers within 64 bits and booleans (as 1 and 0)"
    ),
    (
      .doublePrecision, "9007199254740993",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a double precision column): 9007199254740993 is an integer a double cannot hold exactly; a double precision column takes numbers a double holds: reals, and integers a double holds exactly"
    ),
    (
      .doublePrecision, "1e999",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a double precision column): 1e999 is a number beyond a double's range; a double precision column takes numbers a double holds: reals, and integers a double holds exactly"
    ),
    (
      .text, "12",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a text column): 12 is a number; a text column takes strings, and arrays and objects as their JSON text"
    ),
    (
      .boolean, "1",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a boolean column): 1 is a number; a boolean column takes true and false"
    ),
    (
      .numeric, "[1]",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a numeric column): [1] is an array; a numeric column takes numbers, with every digit"
    ),
    (
      .text, "\"a\u{0}b\"",
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a text column): the value is a string with a NUL character (\\u0000); PostgreSQL cannot store NUL in text or jsonb"
    ),
    (
      .jsonb, #"{"k":"a\u0000b"}"#,
      "resource R, table output_table, row 3, column 2 'n' (BIGINT, a jsonb column): the value is a nested string with a NUL character (\\u0000); PostgreSQL cannot store NUL in text or jsonb"
    ),
  ])
  func aValueItsColumnCannotHoldIsRefusedByPlace(type: PostgresColumnType, token: String, message: String) throws {
    let connection = try server.connect(database: database)
    try connection.execute("CREATE TABLE t (c \(type.sqlName))")
    let copy = try connection.copyIn("COPY t FROM STDIN")
    let refusal = #expect(throws: PostgresValueRefusal.self) { try append(token, type, copy) }
    let error = refusal.map {
      PostgresValueError(resource: "R", table: "output_table", row: 3, column: 2, columnName: "n", declaredType: "BIGINT", refusal: $0)
    }
    #expect(error?.description == message)
    // Nothing was appended: the row can still be completed and copied.
    copy.appendNull()
    try copy.endRow()
    #expect(try copy.finish() == 1)
  }

  @Test func aCancelledCopyStoresNothing() throws {
    let connection = try server.connect(database: database)
    try connection.execute("CREATE TABLE t (s text)")
    let copy = try connection.copyIn("COPY t FROM STDIN")
    for i in 0..<20_000 {
      try copy.append("row \(i)")
      try copy.endRow()
    }
    copy.cancel("resource R, table t, row 20001: refused")
    #expect(try connection.execute("SELECT count(*) FROM t").rows == [[.integer(0)]])
  }

  @Test func aRefusalByTheServerNamesTheLine() throws {
    let connection = try server.connect(database: database)
    try connection.execute("CREATE TABLE t (n bigint NOT NULL)")
    let copy = try connection.copyIn("COPY t FROM STDIN")
    try copy.append("1")
    try copy.endRow()
    copy.appendNull()
    try copy.endRow()
    let error = #expect(throws: PostgresError.self) { try copy.finish() }
    #expect(error?.sqlState == "23502")
    #expect(error?.detail?.contains("COPY t, line 2") == true)
    #expect(try connection.execute("SELECT count(*) FROM t").rows == [[.integer(0)]])
  }

  @Test func aServerRestartInTheMiddleOfACopyIsTransient() throws {
    let own = try PostgresServer()
    let name = try own.createDatabase()
    let connection = try own.connect(database: name)
    try connection.execute("CREATE TABLE t (s text)")
    let copy = try connection.copyIn("COPY t FROM STDIN")
    for i in 0..<10_000 {
      try copy.append("row \(i)")
      try copy.endRow()
    }
    try own.restart()
    let error = #expect(throws: PostgresError.self) {
      for i in 0..<1_000_000 {
        try copy.append("row \(i)")
        try copy.endRow()
      }
      try copy.finish()
    }
    #expect(error?.isTransient == true)
    #expect(try own.connect(database: name).execute("SELECT count(*) FROM t").rows == [[.integer(0)]])
  }
}
