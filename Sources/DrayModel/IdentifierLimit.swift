/// dray's one rule for a name longer than a database keeps (PostgreSQL: 63 bytes,
/// `NAMEDATALEN - 1`, past which the server cuts a name without an error; documentation
/// §4.1.1 "Identifiers and Key Words"), used for physical table names (`TableNaming`) and
/// every identifier dray gives PostgreSQL (`PostgresIdentifier.fitted`).
public enum IdentifierLimit {
  /// `name` itself when it has at most `maxBytes` bytes of UTF-8; otherwise its longest
  /// prefix, cut between characters, that leaves room for `__` and the first 8 hex digits
  /// of the SHA-256 of the whole name: `<prefix>__<hash>` is at most `maxBytes` long, and
  /// names that differ anywhere end differently.
  ///
  /// ```
  /// fitted(String(repeating: "a", count: 70), maxBytes: 63)   // 53 × "a" + "__" + 8 hex digits
  /// ```
  ///
  /// Two different long names share a fitted name only when their SHA-256 digests share
  /// their first 32 bits (about one chance in 4 billion for a pair). A short name is kept as
  /// it is, so it meets a fitted name only by being spelled exactly like one, hash digits
  /// included.
  public static func fitted(_ name: String, maxBytes: Int) -> String {
    guard name.utf8.count > maxBytes else { return name }
    let suffix = "__" + SHA256.hex(name).prefix(8)
    var prefix = ""
    for character in name {
      guard prefix.utf8.count + character.utf8.count + suffix.utf8.count <= maxBytes else { break }
      prefix.append(character)
    }
    return prefix + suffix
  }
}
