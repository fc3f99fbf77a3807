/// The PostgreSQL type of a loaded column, chosen from the platform's (scheme) type name.
///
/// Unlike SQLite's columns (docs/store.md, "Why the columns have no declared type"),
/// PostgreSQL's are typed and never convert a value on their own: each value is checked
/// against its column's type by `PostgresValueRule` before it is sent. The choice, by the
/// scheme's type name (case-insensitive, first rule that matches; the same substrings as
/// SQLite's affinity rules, https://sqlite.org/datatype3.html §3.1, plus three of ours):
///
/// | scheme type contains | column type | e.g. |
/// |---|---|---|
/// | `INT` | `bigint` | `BIGINT` (the platform's booleans arrive as `BIGINT` too) |
/// | `CHAR`, `CLOB`, `TEXT` | `text` | `TEXT`, `VARCHAR` |
/// | `REAL`, `FLOA`, `DOUB` | `double precision` | `DOUBLE` |
/// | `BOOL` | `boolean` | `BOOLEAN` |
/// | `NUMERIC`, `DECIMAL` | `numeric` | `NUMERIC(20,2)` |
/// | anything else | `jsonb` | `JSON`, `DATE`, `BLOB`, an empty name |
///
/// `jsonb` for every other name keeps the platform's promise that a load never fails on an
/// unknown type name and never loses digits (platform-api.md §2): it holds every JSON
/// value exactly, numbers with all their digits.
public enum PostgresColumnType: String, Sendable, Hashable, CaseIterable {
  case bigint
  case doublePrecision = "double precision"
  case numeric
  case text
  case boolean
  case jsonb

  /// The column type for a scheme's type name, by the table above.
  public init(schemeType: String) {
    let name = schemeType.uppercased()
    func has(_ parts: String...) -> Bool { parts.contains { name.contains($0) } }
    if has("INT") {
      self = .bigint
    } else if has("CHAR", "CLOB", "TEXT") {
      self = .text
    } else if has("REAL", "FLOA", "DOUB") {
      self = .doublePrecision
    } else if has("BOOL") {
      self = .boolean
    } else if has("NUMERIC", "DECIMAL") {
      self = .numeric
    } else {
      self = .jsonb
    }
  }

  /// The type as written in `CREATE TABLE`.
  public var sqlName: String { rawValue }

  /// What the column takes, for messages: `integers within 64 bits and booleans (as 1 and 0)`.
  public var accepts: String {
    switch self {
    case .bigint: "integers within 64 bits and booleans (as 1 and 0)"
    case .doublePrecision: "numbers a double holds: reals, and integers a double holds exactly"
    case .numeric: "numbers, with every digit"
    case .text: "strings, and arrays and objects as their JSON text"
    case .boolean: "true and false"
    case .jsonb: "every JSON value"
    }
  }
}
