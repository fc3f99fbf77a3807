internal import CLibPQ
internal import DrayJSON
internal import DrayModel

/// A value bound to a statement parameter or read from a result row.
///
/// Read from a row by the column's type (`PQftype`): `smallint`, `integer`, `bigint` and
/// `oid` as `.integer`; `real` and `double precision` as `.real` (`NaN` and infinities
/// included); `boolean` as `.bool`; every other type (`numeric`, `text`, `jsonb`, dates) as
/// the server's text, so `numeric` keeps every digit.
public enum PostgresValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
  ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
  case null
  case integer(Int64)
  case real(Double)
  case bool(Bool)
  case text(String)

  public init(stringLiteral value: String) { self = .text(value) }
  public init(integerLiteral value: Int64) { self = .integer(value) }
  public init(floatLiteral value: Double) { self = .real(value) }
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  public init(nilLiteral: ()) { self = .null }

  /// The integer, or nil for any other case.
  public var integer: Int64? { if case .integer(let i) = self { i } else { nil } }
  /// The text, or nil for any other case.
  public var text: String? { if case .text(let t) = self { t } else { nil } }
  /// The boolean, or nil for any other case.
  public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
  /// The real, or nil for any other case.
  public var real: Double? { if case .real(let d) = self { d } else { nil } }

  /// The text format of the value as a parameter; nil for NULL.
  var parameterText: String? {
    switch self {
    case .null: nil
    case .integer(let i): String(i)
    case .real(let d): d.isNaN ? "NaN" : d.isInfinite ? (d < 0 ? "-Infinity" : "Infinity") : "\(d)"
    case .bool(let b): b ? "t" : "f"
    case .text(let t): t
    }
  }

  /// The parameter's type OID (`pg_type`): int8 20, float8 701, bool 16; 0 lets the server
  /// infer text's and NULL's type from the statement.
  var parameterType: Oid {
    switch self {
    case .integer: 20
    case .real: 701
    case .bool: 16
    case .null, .text: 0
    }
  }
}

/// The rows a statement returned, copied out of libpq's result.
public struct PostgresResult: Sendable, Hashable {
  /// Column names, in order.
  public var columns: [String]
  /// Each row's values, in column order.
  public var rows: [[PostgresValue]]
  /// Rows the statement inserted, updated, deleted or merged (`PQcmdTuples` of an INSERT,
  /// UPDATE, DELETE or MERGE command tag); 0 for any other statement, a SELECT's rows
  /// returned included.
  public var affectedRows: Int

  init(_ result: OpaquePointer) {
    columns = Self.columns(of: result)
    let types = Self.types(of: result)
    rows = (0..<PQntuples(result)).map { Self.values(of: result, row: $0, types: types) }
    let tag = String(cString: PQcmdStatus(result))
    let writes = ["INSERT ", "UPDATE ", "DELETE ", "MERGE "].contains { tag.hasPrefix($0) }
    affectedRows = writes ? Int(String(cString: PQcmdTuples(result))) ?? 0 : 0
  }

  /// Each row, read by column name (`PostgresRow`); the rows share `columns`.
  public var named: [PostgresRow] { rows.map { PostgresRow(columns: columns, values: $0) } }

  /// The column names of `result`, in order.
  static func columns(of result: OpaquePointer) -> [String] {
    (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
  }

  /// The type OIDs of `result`'s columns, in order (`PQftype`).
  static func types(of result: OpaquePointer) -> [Oid] {
    (0..<PQnfields(result)).map { PQftype(result, $0) }
  }

  /// Row `row` of `result` as values, read by their columns' `types`: bigint, smallint,
  /// integer and oid as integers, real and double precision as reals, boolean as a boolean,
  /// the rest as text.
  ///
  /// With `portable`, the text of a few types is the one a user's SQL sees on SQLite too
  /// (`portableText(_:type:)`).
  static func values(of result: OpaquePointer, row: Int32, types: [Oid], portable: Bool = false) -> [PostgresValue] {
    (0..<Int32(types.count)).map { column in
      if PQgetisnull(result, row, column) == 1 { return .null }
      let text = String(cString: PQgetvalue(result, row, column))
      switch types[Int(column)] {
      case 20, 21, 23, 26: return Int64(text).map(PostgresValue.integer) ?? .text(text)
      case 700, 701: return Double(text).map(PostgresValue.real) ?? .text(text)
      case 16: return .bool(text == "t")
      case let type where portable: return .text(portableText(text, type: type))
      default: return .text(text)
      }
    }
  }

  /// `text`, a value of type OID `type` as the server wrote it, in the form dray gives a
  /// user's SQL on either database (docs/partitions.md, "Placeholders"; docs/postgres.md):
  ///
  /// - `timestamptz` (1184) in RFC 3339 (§5.6): `2024-01-01 08:00:00+00` (ISO DateStyle,
  ///   the default) becomes `2024-01-01T08:00:00Z`, `...+05:30` keeps its offset
  ///   (`2024-01-01T08:00:00+05:30`), `+05` becomes `+05:00`; the session's time zone
  ///   decides the offset. An offset with seconds, a BC year, `infinity` and other
  ///   DateStyles are left as the server wrote them;
  /// - `timestamp` (1114): the date and time joined by `T` (RFC 3339 without an offset);
  /// - `json` (114) and `jsonb` (3802) holding a string: the string itself, as SQLite's
  ///   columns hold a loaded string (`"abc"` becomes `abc`); other JSON as written.
  static func portableText(_ text: String, type: Oid) -> String {
    switch type {
    case 1114, 1184:
      // YYYY-MM-DD HH:MM:SS[.ffffff][±HH[:MM]]
      let bytes = Array(text.utf8)
      guard bytes.count >= 19, bytes[10] == UInt8(ascii: " "), bytes[4] == UInt8(ascii: "-"), !text.hasSuffix(" BC") else {
        return text
      }
      let joined = String(decoding: bytes[..<10], as: UTF8.self) + "T" + String(decoding: bytes[11...], as: UTF8.self)
      guard type == 1184 else { return joined }
      guard let sign = joined.lastIndex(where: { $0 == "+" || $0 == "-" }), sign >= joined.index(joined.startIndex, offsetBy: 19)
      else { return text }
      let offset = joined[joined.index(after: sign)...]
      let local = joined[..<sign]
      switch offset.count {
      case 2 where offset == "00" && joined[sign] == "+": return local + "Z"
      case 2: return local + String(joined[sign]) + offset + ":00"
      case 5: return offset == "00:00" && joined[sign] == "+" ? local + "Z" : joined
      default: return text
      }
    case 114, 3802:
      guard text.hasPrefix("\""), case .string(let string)? = try? JSONValue(parsing: text) else { return text }
      return string
    default:
      return text
    }
  }
}

/// One row of a `PostgresResult`, read by column name.
public struct PostgresRow: Sendable {
  /// The result's column names, in order.
  public let columns: [String]
  /// The row's values, in the order of `columns`.
  public let values: [PostgresValue]

  /// The value of `column` (its name as the statement returns it: the alias after `AS`).
  /// - Throws: `MissingColumn` naming `column` and the columns the result has.
  public subscript(_ column: String) -> PostgresValue {
    get throws(MissingColumn) {
      guard let index = columns.firstIndex(of: column) else { throw MissingColumn(column: column, columns: columns) }
      return values[index]
    }
  }
}

/// A row was read by a column name its statement does not return: a defect of dray's SQL.
public struct MissingColumn: Error, Sendable, Equatable, CustomStringConvertible {
  public var column: String
  /// The columns the result has, in order.
  public var columns: [String]

  public var description: String {
    "no column named \(column) in the result; its columns are \(columns.joined(separator: ", "))"
  }
}
