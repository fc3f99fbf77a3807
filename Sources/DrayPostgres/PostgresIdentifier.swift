internal import DrayModel
internal import Foundation

/// Names of tables, columns and schemas as PostgreSQL takes them.
///
/// PostgreSQL keeps at most `NAMEDATALEN - 1` = 63 bytes of an identifier and cuts a longer
/// one without an error, only a notice (documentation, §4.1.1 "Identifiers and Key Words"),
/// so two long names that share their first 63 bytes would name one table. dray never lets
/// the server cut: `fitted(_:)` shortens a long name by a rule of its own that keeps
/// different names different.
public enum PostgresIdentifier {
  /// The most bytes PostgreSQL keeps of a name (`NAMEDATALEN - 1`).
  public static let maxBytes = 63

  /// `name` quoted for SQL: in double quotes, each embedded double quote doubled
  /// (§4.1.1): `a"b` → `"a""b"`. Quoted names keep their case.
  public static func quoted(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// The name dray gives PostgreSQL for `name`: `IdentifierLimit.fitted` to 63 bytes, the
  /// rule `TableNaming` applies to physical table names.
  public static func fitted(_ name: String) -> String { IdentifierLimit.fitted(name, maxBytes: maxBytes) }

  /// `quoted(fitted(name))`: how SQL names a table or column dray creates.
  public static func sql(_ name: String) -> String { quoted(fitted(name)) }
}
