public import DrayModel

/// The physical table naming rule, the one place it lives, with the identifier limit of
/// the database that holds the tables (`TargetStore.naming`).
public struct TableNaming: Sendable, Equatable {
  /// The longest identifier the database keeps, in UTF-8 bytes; nil when it keeps any
  /// length (SQLite). PostgreSQL keeps 63 (NAMEDATALEN - 1) and cuts longer names without
  /// a word, so two long names could meet: the rule below shortens them first.
  public var maxIdentifierBytes: Int?

  public init(maxIdentifierBytes: Int?) {
    self.maxIdentifierBytes = maxIdentifierBytes
  }

  /// The physical table name for a resource's output table and parameters (platform-api.md
  /// §7): `<resource>__<table>` for the default (empty) parameters, otherwise
  /// `<resource>__<table>__<first 8 hex digits of SHA-256 of the canonical parameters JSON>`
  /// (canonical JSON: keys sorted, no spaces).
  ///
  /// A name longer than `maxIdentifierBytes` keeps its longest prefix, cut between
  /// characters, that leaves room for `__` and the first 8 hex digits of SHA-256 of the
  /// whole name: `<prefix>__<hash>` is exactly as long as the limit or shorter, and names
  /// that differ anywhere end differently. The store still refuses two tables of one name
  /// (`StoreError.nameClash`).
  public func physicalName(resource: String, table: String, params: JSONValue) -> String {
    var name = "\(resource)__\(table)"
    if !(params.isEmptyObject || params == .null) { name += "__" + SHA256.hex(params.canonicalJSON).prefix(8) }
    guard let limit = maxIdentifierBytes, name.utf8.count > limit else { return name }
    let suffix = "__" + SHA256.hex(name).prefix(8)
    var prefix = ""
    for character in name {
      guard prefix.utf8.count + character.utf8.count + suffix.utf8.count <= limit else { break }
      prefix.append(character)
    }
    return prefix + suffix
  }
}
