import DrayJSON
import DrayTestSupport
import Foundation
import Testing

@testable import DrayPostgres

/// Binary COPY (`PostgresCopyWriter+Binary.swift`) stores exactly what text COPY stores:
/// the same values, through the same rule, copied both ways into tables of the same types,
/// give the same table digest.
@Suite struct PostgresBinaryCopyTests {
  let server: PostgresServer
  let database: String

  init() throws {
    server = try PostgresServer.shared()
    database = try server.createDatabase()
  }

  static let types = PostgresColumnType.allCases

  /// Edge values, one row per entry, in the columns bigint, double precision, numeric,
  /// text, boolean, jsonb (JSON tokens as text: `"..."` is a string of the bytes inside).
  static let rows: [[String]] = [
    ["null", "null", "null", "null", "null", "null"],
    ["9223372036854775807", "9007199254740992", "123456789012345678901234567890.123456789", #""""#, "true", #""""#],
    ["-9223372036854775808", "-9007199254740992", "-0", #""Ünïcødé ж 😀""#, "false", "-0"],
    ["true", "-0", "-0.00", "\"tab\there\\ \\N new\nline\"", "null", "\"a\"b\\c\td\""],
    ["false", "-0.0", "0.000", #"["a",{"b":null}]"#, "true", "12345678901234567890.5"],
    ["0", "0.1", "1e999", #"{"k":[1,2.50,true]}"#, "true", #"{"k":[1,2.50,true]}"#],
    ["-0", "1e-400", "1e-1000", #""2024-02-29T23:59:59.123456789Z""#, "false", "1e999"],
    ["1", "-1e-400", "1.50e1", #""2024-02-29""#, "true", "true"],
    ["-1", "5e-324", "1.5e-3", #""x""#, "false", "[]"],
    ["42", "1.7976931348623157e308", "-12.3400", #""""#, "true", #""2024-02-29T23:59:59.123456789Z""#],
    ["1000", "2.5E3", "0.0001", #""null""#, "true", "null"],
    ["-1000", "123456.7891", "9999.9999", #""\""#, "true", #""""#],
    ["7", "1e300", "10000", #""😀""#, "false", "-1.5e-7"],
    ["8", "-2.2250738585072014e-308", "100000000", #""a""#, "false", "0.1"],
    ["9", "4503599627370497.5", "-99999999999999999999999999999999999999.00000000000000000001", #""b""#, "true", "-0.0"],
    ["10", "0.30000000000000004", "1E-10", #""c""#, "true", "[1,\"x\"]"],
  ]

  /// Copies `rows` into a new table `name`, by text or binary COPY, the value rule choosing
  /// each value's form; returns the writer's reason for going on in text, if it did.
  @discardableResult
  func copy(_ rows: [[String]], into name: String, binary: Bool, on connection: PostgresConnection) throws -> String? {
    let columns = Self.types.enumerated().map { "c\($0.offset) \($0.element.sqlName)" }.joined(separator: ", ")
    try connection.execute("CREATE TABLE \(name) (row_number bigint, \(columns))")
    let statement = "COPY \(name) FROM STDIN"
    let writer = try binary ? connection.copyInBinary(statement, width: Self.types.count + 1) : connection.copyIn(statement)
    for (number, row) in rows.enumerated() {
      try append(String(number), .bigint, writer)
      for (value, type) in zip(row, Self.types) { try append(value, type, writer) }
      try writer.endRow()
    }
    #expect(try writer.finish() == rows.count)
    return writer.textReason
  }

  /// The table's digest: md5 of its rows as PostgreSQL prints them, in order, and the rows.
  func digest(_ name: String, on connection: PostgresConnection) throws -> [[String?]] {
    let all = (0...Self.types.count).map { $0 == 0 ? "row_number::text" : "c\($0 - 1)::text" }.joined(separator: ", ")
    let md5 = try connection.execute("SELECT md5(string_agg(t::text, E'\\n' ORDER BY row_number)) FROM \(name) t").rows.map {
      $0.map(\.text)
    }
    return md5 + (try connection.execute("SELECT \(all) FROM \(name) t ORDER BY t.row_number").rows.map { $0.map(\.text) })
  }

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

  @Test func binaryAndTextCopiesOfEdgeValuesHaveTheSameDigest() throws {
    let connection = try server.connect(database: database)
    try copy(Self.rows, into: "by_text", binary: false, on: connection)
    #expect(try copy(Self.rows, into: "by_binary", binary: true, on: connection) == nil)
    let text = try digest("by_text", on: connection)
    #expect(try digest("by_binary", on: connection) == text)
    // The edges are what the text path always stored.
    #expect(text[1 + 5][3] == "1" + String(repeating: "0", count: 999))
    #expect(text[1 + 3][3] == "0.00")
    #expect(text[1 + 8][2] == "5e-324")
  }

  @Test func aNumberBinaryCannotCarryMakesTheRestOfTheTableGoByText() throws {
    // numeric_recv takes at most 3,000 base-10000 digits; numeric_in takes this one.
    let long = "-" + String(repeating: "123456789", count: 1_500) + ".5"
    var rows = Self.rows
    rows.insert(["5", "2.5", long, #""after the switch""#, "true", #"{"a":1}"#], at: 4)
    rows[6][0] = "null"
    let connection = try server.connect(database: database)
    try copy(rows, into: "by_text", binary: false, on: connection)
    let reason = try copy(rows, into: "by_binary", binary: true, on: connection)
    #expect(reason == "a numeric value beyond what numeric_recv takes")
    #expect(try digest("by_binary", on: connection) == (try digest("by_text", on: connection)))
  }

  @Test func aValueRefusedInBinaryIsRefusedAsInText() throws {
    let connection = try server.connect(database: database)
    try connection.execute("CREATE TABLE t (c bigint)")
    let writer = try connection.copyInBinary("COPY t FROM STDIN", width: 1)
    let refusal = #expect(throws: PostgresValueRefusal.self) { try append("9223372036854775808", .bigint, writer) }
    #expect(refusal?.found == "an integer beyond 64 bits")
    // Nothing was appended: the row can still be completed and copied.
    writer.appendNull()
    try writer.endRow()
    #expect(try writer.finish() == 1)
    #expect(try connection.execute("SELECT count(*) FROM t WHERE c IS NULL").rows == [[.integer(1)]])
  }

  @Test func theCatalogGivesEachColumnsTypeAsFormatTypeWritesIt() throws {
    let connection = try server.connect(database: database)
    try connection.execute(#"CREATE TABLE "a b" (x bigint, "Y" numeric(20,2), z date)"#)
    #expect(try connection.columnTypes(of: #""a b""#, ["x", "Y", "z", "w"]) == ["bigint", "numeric(20,2)", "date", nil])
  }
}
