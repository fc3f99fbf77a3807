public import DrayJSON
internal import DrayModel
internal import Foundation

/// The value rule for PostgreSQL: what each JSON value becomes in a column of each
/// `PostgresColumnType`, the counterpart of docs/store.md's rule for SQLite.
///
/// Every value is stored exactly or refused; none is converted silently:
///
/// | value | `bigint` | `double precision` | `numeric` | `text` | `boolean` | `jsonb` |
/// |---|---|---|---|---|---|---|
/// | `null` | NULL | NULL | NULL | NULL | NULL | NULL |
/// | `true`/`false` | 1/0 | refused | refused | refused | true/false | `true`/`false` |
/// | integer within 64 bits | exact | if a double holds it exactly | exact | refused | refused | exact |
/// | integer beyond 64 bits | refused | if a double holds it exactly | exact | refused | refused | exact |
/// | real (`0.52`, `1e-3`) | refused | nearest double | exact | refused | refused | exact |
/// | beyond a double's range (`1e999`) | refused | refused | exact | refused | refused | exact |
/// | string (`""` included) | refused | refused | refused | as is | refused | a JSON string |
/// | array or object | refused | refused | refused | its JSON text | refused | as is |
///
/// `null` and `""` stay distinct (NULL and empty text). A string holding NUL (`\u0000`) is
/// refused in every column: PostgreSQL's `text` and `jsonb` cannot store it (documentation,
/// §8.3 "Character Types", §8.14 "JSON Types"). A real whose nearest double is subnormal or
/// zero is sent as that double's shortest text, which PostgreSQL reads back exactly.
public enum PostgresValueRule {
  /// Appends `value` to the current row of `writer` as its column's type takes it.
  ///
  /// - Parameters:
  ///   - value: the JSON value.
  ///   - column: the column's type.
  ///   - writer: the COPY in progress.
  /// - Throws: `PostgresValueRefusal` when the column's type cannot hold the value exactly;
  ///   nothing is appended then. The caller names resource, table, row and column with
  ///   `PostgresValueError`.
  public static func append(
    _ value: JSONToken, as column: PostgresColumnType, to writer: PostgresCopyWriter
  ) throws(PostgresValueRefusal) {
    switch value {
    case .null:
      writer.appendNull()
    case .bool(let b):
      switch column {
      case .bigint: writer.appendBigint(b)
      case .boolean: writer.appendBoolean(b)
      case .jsonb: writer.appendJSON(b ? "true" : "false")
      case .doublePrecision, .numeric, .text: throw refusal("a boolean", b ? "true" : "false", column)
      }
    case .number(let text):
      try appendNumber(text, column, writer)
    case .string(let bytes):
      if let base = bytes.baseAddress, memchr(base, 0, bytes.count) != nil {
        throw PostgresValueRefusal(found: "a string with a NUL character (\\u0000)", value: nil, column: column)
      }
      switch column {
      case .text:
        writer.appendText(bytes)
      case .jsonb:
        appendJSONString(bytes, writer)
      case .bigint, .doublePrecision, .numeric, .boolean:
        throw refusal("a string", "\"" + String(decoding: bytes, as: UTF8.self) + "\"", column)
      }
    case .nested(let json):
      guard column == .text || column == .jsonb else {
        throw refusal(json.first == UInt8(ascii: "[") ? "an array" : "an object", String(decoding: json, as: UTF8.self), column)
      }
      if containsEscapedNUL(json) {
        throw PostgresValueRefusal(found: "a nested string with a NUL character (\\u0000)", value: nil, column: column)
      }
      if column == .text { writer.appendText(json) } else { writer.appendJSON(json) }
    }
  }

  private static func appendNumber(
    _ text: UnsafeBufferPointer<UInt8>, _ column: PostgresColumnType, _ writer: PostgresCopyWriter
  ) throws(PostgresValueRefusal) {
    // The common case in one pass: an integer of at most 18 digits (it always fits 64 bits)
    // into a `bigint` column in binary, as `appendBigint(_:)` of its digits would write it.
    if column == .bigint, writer.isBinary, let value = shortInteger(text) {
      writer.appendBigint(value)
      return
    }
    guard let kind = NumberKind(text) else {
      throw PostgresValueRefusal(found: "not a JSON number", value: String(decoding: text, as: UTF8.self), column: column)
    }
    switch (column, kind) {
    case (.numeric, _): writer.appendNumeric(text)
    case (.jsonb, _): writer.appendJSON(text)
    case (.bigint, .integer): writer.appendBigint(text)
    case (.doublePrecision, .integer), (.doublePrecision, .wideInteger):
      let string = String(decoding: text, as: UTF8.self)
      guard let d = Double(string), d.isFinite, String(format: "%.0f", d) == string else {
        throw refusal("an integer a double cannot hold exactly", string, column)
      }
      writer.appendDouble(text)
    case (.doublePrecision, .real) where writer.isBinary:
      // The double PostgreSQL's text input would read (correctly rounded, as `strtod`); an
      // underflow reads as the zero or subnormal the text path sends in its shortest form.
      guard let base = text.baseAddress, case let d = NumberText.double(base, text.count), d.isFinite else {
        throw refusal("a number beyond a double's range", String(decoding: text, as: UTF8.self), column)
      }
      writer.appendDouble(d)
    case (.doublePrecision, .real):
      // A decimal without an exponent shorter than 300 characters is finite, and normal
      // when not zero (its magnitude is between 1e-300 and 1e300): PostgreSQL reads it
      // exactly as written, so the common case needs no conversion here.
      if text.count < 300, !text.contains(where: { $0 | 0x20 == UInt8(ascii: "e") }),
        text.contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") })
      {
        writer.appendDouble(text)
        return
      }
      let string = String(decoding: text, as: UTF8.self)
      guard let d = Double(string), d.isFinite else { throw refusal("a number beyond a double's range", string, column) }
      // PostgreSQL refuses text whose value underflows (strtod's ERANGE), e.g. 1e-400.
      if d == 0 || abs(d) < Double.leastNormalMagnitude {
        var shortest = "\(d)"
        shortest.withUTF8 { writer.appendDouble($0) }
      } else {
        writer.appendDouble(text)
      }
    case (.bigint, .wideInteger): throw refusal("an integer beyond 64 bits", String(decoding: text, as: UTF8.self), column)
    case (.bigint, .real): throw refusal("a number with a fraction or exponent", String(decoding: text, as: UTF8.self), column)
    case (.text, _), (.boolean, _): throw refusal("a number", String(decoding: text, as: UTF8.self), column)
    }
  }

  /// The value of `text` when it is `-?[0-9]{1,18}`, nil otherwise.
  @inline(__always)
  private static func shortInteger(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
    guard let p = text.baseAddress else { return nil }
    let negative = text.count > 0 && p[0] == UInt8(ascii: "-")
    var i = negative ? 1 : 0
    guard text.count > i, text.count - i <= 18 else { return nil }
    var value: Int64 = 0
    while i < text.count {
      let digit = p[i] &- 0x30
      guard digit < 10 else { return nil }
      value = value &* 10 &+ Int64(digit)
      i += 1
    }
    return negative ? -value : value
  }

  /// What kind of JSON number a token is.
  private enum NumberKind {
    case integer, wideInteger, real

    /// nil unless `text` is made of JSON number characters (`-+0-9.eE`) and starts with a
    /// digit or `-`.
    init?(_ text: UnsafeBufferPointer<UInt8>) {
      guard let first = text.first, first == UInt8(ascii: "-") || (first >= 0x30 && first <= 0x39) else { return nil }
      var isInteger = true
      var digits = 0
      for c in text {
        switch c {
        case 0x30...0x39: digits += 1
        case UInt8(ascii: "-"), UInt8(ascii: "+"): break
        case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): isInteger = false
        default: return nil
        }
      }
      guard digits > 0 else { return nil }
      if !isInteger {
        self = .real
      } else if digits <= 18 {
        self = .integer
      } else {
        self = Int64(String(decoding: text, as: UTF8.self)) == nil ? .wideInteger : .integer
      }
    }
  }

  /// Appends `bytes` as a JSON string (RFC 8259 §7: `"` and `\` escaped, control
  /// characters as `\n`, `\t`, ... or `\u00XX`) into a `jsonb` column.
  private static func appendJSONString(_ bytes: UnsafeBufferPointer<UInt8>, _ writer: PostgresCopyWriter) {
    var json: [UInt8] = [UInt8(ascii: "\"")]
    json.reserveCapacity(bytes.count + 2)
    let hex = Array("0123456789abcdef".utf8)
    for c in bytes {
      switch c {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"): json += [UInt8(ascii: "\\"), c]
      case UInt8(ascii: "\n"): json += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
      case UInt8(ascii: "\t"): json += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
      case UInt8(ascii: "\r"): json += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
      case 0..<0x20: json += Array("\\u00".utf8) + [hex[Int(c >> 4)], hex[Int(c & 0xf)]]
      default: json.append(c)
      }
    }
    json.append(UInt8(ascii: "\""))
    json.withUnsafeBufferPointer { writer.appendJSON($0) }
  }

  /// True when JSON text holds the escape `\u0000`, which `jsonb` refuses.
  private static func containsEscapedNUL(_ json: UnsafeBufferPointer<UInt8>) -> Bool {
    let pattern = Array("\\u0000".utf8)
    guard json.count >= pattern.count, let base = json.baseAddress else { return false }
    var i = 0
    while i + pattern.count <= json.count {
      if json[i] == UInt8(ascii: "\\") {
        // An escaped backslash (`\\u0000`) is text, not an escape: skip both characters.
        if json[i + 1] != UInt8(ascii: "u") {
          i += 2
          continue
        }
        if memcmp(base + i, pattern, pattern.count) == 0 { return true }
      }
      i += 1
    }
    return false
  }

  private static func refusal(_ found: String, _ value: String, _ column: PostgresColumnType) -> PostgresValueRefusal {
    PostgresValueRefusal(found: found, value: value, column: column)
  }
}

/// Why a value was refused, before its place is known.
public struct PostgresValueRefusal: Error, Sendable, Equatable {
  /// What the value is, e.g. `a string`, `an integer beyond 64 bits`.
  public var found: String
  /// The value as JSON text, at most 64 characters (longer ones end with `…`); nil when it
  /// is not shown.
  public var value: String?
  /// The column's type; nil when the refusal is the writer's (a NUL in text).
  public var column: PostgresColumnType?

  public init(found: String, value: String?, column: PostgresColumnType? = nil) {
    self.found = found
    self.value = value.map { PrintableText.excerpt($0) }
    self.column = column
  }
}

/// A value a PostgreSQL column cannot hold exactly, by resource, table, row and column: the
/// load is refused rather than the value converted.
///
/// ```
/// resource FRUITS, table output_table, row 3, column 2 'n' (BIGINT, a bigint column): "two" is a string; a bigint column takes integers within 64 bits and booleans (as 1 and 0)
/// ```
public struct PostgresValueError: Error, Sendable, Equatable, CustomStringConvertible {
  public var resource: String
  /// The output table as the answer names it.
  public var table: String
  /// 1-based position of the row in its list (`data` or `insert_rows`) of the answer.
  public var row: Int
  /// 1-based position of the value in its row (the row id of a cached resource is column 1).
  public var column: Int
  public var columnName: String
  /// The platform type the scheme declares, e.g. `BIGINT`.
  public var declaredType: String
  public var refusal: PostgresValueRefusal

  public init(
    resource: String, table: String, row: Int, column: Int, columnName: String, declaredType: String,
    refusal: PostgresValueRefusal
  ) {
    self.resource = resource
    self.table = table
    self.row = row
    self.column = column
    self.columnName = columnName
    self.declaredType = declaredType
    self.refusal = refusal
  }

  public var description: String {
    let type = refusal.column ?? PostgresColumnType(schemeType: declaredType)
    var text =
      "resource \(resource), table \(table), row \(row), column \(column) '\(columnName)' (\(declaredType), a \(type.sqlName) column): "
    if let value = refusal.value { text += "\(value) is \(refusal.found)" } else { text += "the value is \(refusal.found)" }
    if refusal.found.contains("NUL") {
      text += "; PostgreSQL cannot store NUL in text or jsonb"
    } else {
      text += "; a \(type.sqlName) column takes \(type.accepts)"
    }
    return text
  }
}
