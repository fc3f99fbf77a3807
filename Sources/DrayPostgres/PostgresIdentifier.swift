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

  /// The name dray gives PostgreSQL for `name`: `name` itself when it has at most 63 bytes
  /// of UTF-8; otherwise its longest prefix, cut between characters, that leaves room for
  /// `__` and the first 8 hex digits of the SHA-256 of the whole name (63 bytes at most in
  /// all). The same rule as `TableNaming` in DrayStore applies to physical table names.
  ///
  /// ```
  /// fitted(String(repeating: "a", count: 70))   // 53 × "a" + "__" + 8 hex digits
  /// ```
  ///
  /// Two different long names share a fitted name only when their SHA-256 digests share
  /// their first 32 bits (about one chance in 4 billion for a pair). A name of 63 bytes or
  /// fewer is kept as it is, so it meets a fitted name only by being spelled exactly like
  /// one, hash digits included.
  public static func fitted(_ name: String) -> String {
    guard name.utf8.count > maxBytes else { return name }
    let suffix = "__" + SHA256.hex(name).prefix(8)
    var prefix = ""
    for character in name {
      guard prefix.utf8.count + character.utf8.count + suffix.utf8.count <= maxBytes else { break }
      prefix.append(character)
    }
    return prefix + suffix
  }

  /// `quoted(fitted(name))`: how SQL names a table or column dray creates.
  public static func sql(_ name: String) -> String { quoted(fitted(name)) }
}
