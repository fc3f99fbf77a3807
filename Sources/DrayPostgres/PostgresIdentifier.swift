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
  /// of UTF-8; otherwise its longest prefix of at most 54 bytes that ends on a character
  /// boundary, then `_` and the first 8 hex digits of the SHA-256 of the whole name (63
  /// bytes at most in all).
  ///
  /// ```
  /// fitted(String(repeating: "a", count: 70))   // 54 × "a" + "_" + 8 hex digits
  /// ```
  ///
  /// Two different long names share a fitted name only when their SHA-256 digests share
  /// their first 32 bits (about one chance in 4 billion for a pair). A name of 63 bytes or
  /// fewer is kept as it is, so it meets a fitted name only by being spelled exactly like
  /// one, hash digits included.
  public static func fitted(_ name: String) -> String {
    let utf8 = Array(name.utf8)
    guard utf8.count > maxBytes else { return name }
    var cut = maxBytes - 9
    // A UTF-8 continuation byte is 10xxxxxx: back up to the first byte of its character.
    while cut > 0 && utf8[cut] & 0xC0 == 0x80 { cut -= 1 }
    let hash = SHA256.hex(utf8).prefix(8)
    return String(decoding: utf8[..<cut], as: UTF8.self) + "_" + hash
  }

  /// `quoted(fitted(name))`: how SQL names a table or column dray creates.
  public static func sql(_ name: String) -> String { quoted(fitted(name)) }
}
