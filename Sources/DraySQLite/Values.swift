internal import Foundation

/// What a column's declared (scheme) type accepts without a report.
///
/// Decided with the rules SQLite uses to give a declared type its affinity
/// (https://sqlite.org/datatype3.html §3.1), applied to the platform's type name: a name
/// containing `INT` expects integers (`BIGINT`); `CHAR`, `CLOB` or `TEXT` expects text;
/// `REAL`, `FLOA` or `DOUB` expects reals (`DOUBLE`); any other name (`BLOB`, `NUMERIC`,
/// `DATE`, an empty name) accepts every value. The column itself is created without a type
/// (see `Store.createTableSQL`), so this decides only what gets reported, never what is stored.
enum ColumnKind: UInt8, Sendable {
  /// The leading row id of a cached resource (`hhive_id`): an integer that fits 64 bits, or
  /// the load fails.
  case rowID
  case integer
  case real
  case text
  case any

  init(schemeType type: String) {
    let name = type.uppercased()
    if name.contains("INT") {
      self = .integer
    } else if name.contains("CHAR") || name.contains("CLOB") || name.contains("TEXT") {
      self = .text
    } else if name.contains("REAL") || name.contains("FLOA") || name.contains("DOUB") {
      self = .real
    } else {
      self = .any
    }
  }
}
