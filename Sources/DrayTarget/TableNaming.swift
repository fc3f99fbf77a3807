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
  /// A name longer than `maxIdentifierBytes` is shortened by `IdentifierLimit.fitted`. The
  /// store still refuses two tables of one name (`StoreError.nameClash`).
  public func physicalName(resource: String, table: String, params: JSONValue) -> String {
    var name = "\(resource)__\(table)"
    if !(params.isEmptyObject || params == .null) { name += "__" + SHA256.hex(params.canonicalJSON).prefix(8) }
    guard let limit = maxIdentifierBytes else { return name }
    return IdentifierLimit.fitted(name, maxBytes: limit)
  }

  /// The physical name of the quarantine of an `http` load into `table` (docs/http.md,
  /// "Contract"): `named` (`load.quarantine.table`) or `<table>_rejected`, shortened past
  /// `maxIdentifierBytes` by `IdentifierLimit.fitted`, as every table name is.
  public func quarantine(of table: String, named: String?) -> String {
    let name = named ?? HTTPStep.Quarantine.defaultName(for: table)
    guard let limit = maxIdentifierBytes else { return name }
    return IdentifierLimit.fitted(name, maxBytes: limit)
  }
}
