public import DrayModel

/// A value of a record, as it is bound into SQLite.
public enum RecordValue: Sendable, Equatable {
  case null
  case integer(Int64)
  case real(Double)
  /// A JSON number with a fraction or an exponent, as the API wrote it (`1701600000.25`,
  /// `1e3`), where that text matters: at an incremental cursor's column
  /// (`JSONRecordReader.cursorColumn`), whose kept value is sent back as written. Typed and
  /// stored as REAL, its nearest double (`real`); always finite.
  case decimal(String)
  case text(String)
  /// A JSON integer beyond 64 bits, by its digits (`-` first when negative): bound and
  /// typed as TEXT, and given back as the JSON number it was (the quarantine's record).
  case bigInteger(String)
  /// A JSON `true` or `false`: stored as 1 or 0 in an INTEGER column (`inferredType`), but
  /// never taken for the integer at a primary key (`RecordContract`, `RecordChecks`).
  case boolean(Bool)

  /// The column type this value asks for; nil for null (nulls take no part in inference).
  public var inferredType: ColumnType? {
    switch self {
    case .null: nil
    case .integer, .boolean: .integer
    case .real, .decimal: .real
    case .text, .bigInteger: .text
    }
  }

  /// False for an integer a double cannot hold exactly (|n| > 2^53, `ColumnType.doubleHolds`),
  /// which a REAL column would round; true for every other value.
  public var fitsADouble: Bool {
    if case .integer(let n) = self { return ColumnType.doubleHolds(n) }
    return true
  }

  /// A JSON value as a record value: integers that fit Int64 as INTEGER; larger integers as
  /// `bigInteger`, TEXT with their exact digits (never rounded through a Double); other
  /// numbers as REAL; booleans as booleans (stored as 0 and 1); strings as TEXT; arrays and objects as their
  /// JSON text.
  public init(json: JSONValue) {
    switch json {
    case .null: self = .null
    case .bool(let b): self = .boolean(b)
    case .integer(let i): self = .integer(i)
    case .number(let text):
      if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
        self = .bigInteger(text)
      } else if let d = Double(text), d.isFinite {
        self = .real(d)
      } else {
        self = .text(text)
      }
    case .string(let s): self = .text(s)
    case .array, .object: self = .text(json.json)
    }
  }

  /// `json` as a record value (`init(json:)`), but a number with a fraction or an exponent
  /// keeps the text the API wrote (`decimal`) when it is finite as a double.
  public init(writtenJSON json: JSONValue) {
    if case .number(let text) = json, text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let d = Double(text), d.isFinite {
      self = .decimal(text)
    } else {
      self.init(json: json)
    }
  }

  /// The double of `real` and `decimal`; nil for other values.
  public var real: Double? {
    switch self {
    case .real(let d): d
    case .decimal(let text): Double(text)
    default: nil
    }
  }

  /// XML text as a record value, read by its form: an empty (or blank) text is null; `-?[0-9]+` without
  /// a leading zero that fits Int64 is INTEGER; a decimal number (`1.5`, `-0.25`, `2e3`) is
  /// REAL; anything else (`007`, `+1`, `1,5`, `N/A`) stays TEXT as written. Spaces around a
  /// number are ignored.
  public init(xmlText text: String) {
    let trimmed = text.trimmingXMLSpace
    if trimmed.isEmpty {
      self = .null
      return
    }
    switch RecordValue.numberForm(trimmed) {
    case .integer:
      if let i = Int64(trimmed) {
        self = .integer(i)
      } else {
        self = .text(trimmed)
      }
    case .real:
      if let d = Double(trimmed), d.isFinite { self = .real(d) } else { self = .text(text) }
    case nil:
      self = .text(text)
    }
  }

  enum NumberForm { case integer, real }

  /// The JSON number grammar (RFC 8259 §6) applied to text.
  static func numberForm(_ s: String) -> NumberForm? {
    var bytes = Array(s.utf8)[...]
    if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
    func digits() -> Int {
      let n = bytes.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }.count
      bytes = bytes.dropFirst(n)
      return n
    }
    let first = bytes.first
    let whole = digits()
    guard whole > 0, !(first == UInt8(ascii: "0") && whole > 1) else { return nil }
    var form = NumberForm.integer
    if bytes.first == UInt8(ascii: ".") {
      bytes = bytes.dropFirst()
      guard digits() > 0 else { return nil }
      form = .real
    }
    if bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
      bytes = bytes.dropFirst()
      if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
      guard digits() > 0 else { return nil }
      form = .real
    }
    return bytes.isEmpty ? form : nil
  }
}

/// One record: column names and values, in the order the answer gives them.
public typealias Record = [(name: String, value: RecordValue)]

/// Column names and types inferred from records, in order of first appearance.
///
/// Names are matched as SQLite matches identifiers (`IdentifierKey`), byte for byte without
/// regard to ASCII case: `Name` and `name` are one column, spelled as first seen; `é`
/// (U+00E9) and `e` with a combining accent (U+0301) are two.
public struct ColumnInference: Sendable {
  public private(set) var columns: [(name: String, type: ColumnType?)] = []
  private var positions: [IdentifierKey: Int] = [:]
  /// The columns holding an integer a double cannot hold exactly: with a real they are
  /// NUMERIC, not REAL (`ColumnType.join`).
  private var inexact: Set<Int> = []

  public init() {}

  public mutating func add(_ record: Record) {
    for (name, value) in record {
      let key = IdentifierKey(name)
      let i: Int
      if let known = positions[key] {
        i = known
      } else {
        i = columns.count
        positions[key] = i
        columns.append((name, nil))
      }
      if !value.fitsADouble { inexact.insert(i) }
      columns[i].type = ColumnType.join(columns[i].type, value.inferredType, integersFitADouble: !inexact.contains(i))
    }
  }

}

/// The names of one record's values, checked before they become columns.
///
/// SQLite compares column names without regard to ASCII case, so `Name` and `name` in one
/// record would be one column and one of the two values would be lost; so would a key
/// written twice, or an XML attribute and a child element of one name. Such a record is
/// refused, naming it and both names (docs/http.md). Names that differ only in case in
/// *different* records are one column, as before.
enum RecordNames {
  /// - Parameters:
  ///   - names: each value's name and what it is (`key`, `attribute`, `child element`).
  ///   - record: the record's number in its answer, from 1.
  /// - Throws: `RecordError` for a name holding a NUL character, or for the first two names
  ///   that would be one column.
  static func check(_ names: [(name: String, what: String)], record: Int) throws {
    if let bad = names.first(where: { $0.name.utf8.contains(0) }) {
      let shown = bad.name.unicodeScalars.map { $0 == "\0" ? "\\0" : String($0) }.joined()
      throw RecordError(
        "record \(record) has the \(bad.what) '\(shown)', which holds a NUL character (U+0000, shown as \\0); "
          + "SQLite cannot hold it in a column name; declare 'columns' to load the record's other values")
    }
    guard names.count > 1 else { return }
    var seen: [IdentifierKey: (name: String, what: String)] = [:]
    seen.reserveCapacity(names.count)
    for entry in names {
      let key = IdentifierKey(entry.name)
      guard let other = seen[key] else {
        seen[key] = entry
        continue
      }
      let both: String
      if other.what == entry.what && IdentifierKey.sameBytes(other.name, entry.name) {
        throw RecordError("record \(record) has the \(entry.what) '\(entry.name)' twice; one of its values would be lost")
      } else if other.what == entry.what {
        both = "the \(entry.what)s '\(other.name)' and '\(entry.name)', which differ only in letter case"
      } else {
        both = "the \(other.what) '\(other.name)' and the \(entry.what) '\(entry.name)'"
      }
      throw RecordError(
        "record \(record) has \(both): SQLite column names ignore letter case, so they would be one column and a value would be lost; "
          + "declare 'columns' with 'from' to load each under its own name")
    }
  }
}

/// A record or an answer that cannot be read.
public struct RecordError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

/// What a selector found in an answer (a next link, a cursor).
public enum AnswerValue: Sendable, Equatable {
  /// Not in the answer.
  case absent
  case null
  /// A string (JSON), or an attribute's or element's text (XML).
  case text(String)
  /// A JSON number or boolean, as its JSON text (`42`, `true`): a cursor may be one, a next
  /// link may not.
  case scalar(String)
  /// An object, array or element with children: not a single value. Holds what it was.
  case structure(String)
}

/// What reading one answer found.
public struct AnswerSummary: Sendable {
  /// Records handed to the caller.
  public var records = 0
  /// The value each probe selector found.
  public var values: [RecordSelector: AnswerValue] = [:]
  /// For a probe that found nothing: its near spelling, the member a small edit away that
  /// the object it looks in holds (`JSONPointer.nearSpelling(members:)`; JSON answers).
  public var nearSpellings: [RecordSelector: String] = [:]
  /// The declared columns whose `from` matched no record of the answer, with no near
  /// spelling in them (a misspelt one fails the read); empty when it held no record.
  public var unmatchedColumns: [HTTPStep.Column] = []
  public init() {}
}

extension String {
  /// Without leading and trailing XML white space (space, tab, CR, LF; XML 1.0 §2.3).
  var trimmingXMLSpace: String {
    let space: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
    guard let start = firstIndex(where: { !space($0) }), let end = lastIndex(where: { !space($0) }) else { return "" }
    return String(self[start...end])
  }
}
