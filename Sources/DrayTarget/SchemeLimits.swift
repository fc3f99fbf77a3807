public import DrayModel

/// What a database can hold as a resource's tables, for `check(_:)`: the limits a store
/// declares (`Store.schemeLimits`, `PostgresStore.schemeLimits`).
public struct SchemeLimits: Sendable {
  /// The database's name in messages: `SQLite`.
  public var database: String
  /// Most columns a table may have.
  public var maxColumns: Int
  /// A prefix of table names the database reserves for itself (`sqlite_`), refused for a
  /// resource name; nil for none.
  public var reservedPrefix: String?
  /// The database itself compares names without regard to ASCII letter case (SQLite), and
  /// cannot create a table without columns: its refusals name it. Elsewhere dray refuses
  /// the same schemes, so that a job loads the same tables wherever it runs.
  public var isOwnRule: Bool

  public init(database: String, maxColumns: Int, reservedPrefix: String?, isOwnRule: Bool) {
    self.database = database
    self.maxColumns = maxColumns
    self.reservedPrefix = reservedPrefix
    self.isOwnRule = isOwnRule
  }

  /// Why two names that differ only in ASCII letter case are refused.
  var caseReason: String {
    isOwnRule
      ? "which \(database) cannot tell apart (names differ only in letter case)"
      : "which differ only in letter case; dray refuses such names on every database, so that a job loads the same tables wherever it runs"
  }

  /// Why a table without columns is refused.
  var emptyTableReason: String {
    isOwnRule ? "\(database) cannot create a table without columns" : "dray creates no table without columns, on any database"
  }

  /// Refuses names the database cannot hold as distinct columns, before anything is
  /// created: an empty resource, table or column name; a name holding a NUL character
  /// (U+0000, where SQLite's and libpq's C interfaces would cut it short); two output tables
  /// of one name; a table without columns (of a resource that is not cached: a cached one
  /// has its row id); two columns whose names differ only in ASCII letter case (SQLite
  /// compares identifiers that way, `IdentifierKey`, and dray refuses them everywhere, so a
  /// job's tables are the same on every database: `é` and `e` + U+0301 are two columns); two
  /// output tables whose names differ only in Unicode normalization (answer tables are
  /// routed by name); a column named like the row id column of a cached resource; more
  /// columns than `maxColumns`; a resource named with `reservedPrefix`. Every other name,
  /// quotes, spaces, reserved words and any script included, is quoted and kept exactly.
  ///
  /// - Throws: `StoreError.badScheme`, its reason naming `database` where the rule is the
  ///   database's.
  public func check(_ scheme: ResourceScheme) throws(StoreError) {
    let rowIDColumn = ResourceScheme.rowIDColumn
    if scheme.name.isEmpty { throw .badScheme(resource: scheme.name, reason: "the resource name is empty") }
    if scheme.name.utf8.contains(0) {
      throw .badScheme(resource: Self.shown(scheme.name), reason: "the resource name holds a NUL character (U+0000)")
    }
    if let reservedPrefix, "\(scheme.name)__".lowercased().hasPrefix(reservedPrefix) {
      throw .badScheme(resource: scheme.name, reason: "\(database) reserves table names that start with '\(reservedPrefix)'")
    }
    var tables: [IdentifierKey: String] = [:]
    var equivalent: [String: String] = [:]
    for table in scheme.outputs {
      if table.name.isEmpty { throw .badScheme(resource: scheme.name, reason: "an output table has an empty name") }
      if table.name.utf8.contains(0) {
        throw .badScheme(
          resource: scheme.name, reason: "output table '\(Self.shown(table.name))' has a name holding a NUL character (U+0000)")
      }
      // Physical names compare without regard to ASCII case, as SQLite compares them.
      if let other = tables[IdentifierKey(table.name)] {
        let reason =
          IdentifierKey.sameBytes(other, table.name)
          ? "the scheme lists two output tables named '\(table.name)'; each output table needs its own name"
          : "the scheme lists output tables '\(other)' and '\(table.name)', \(caseReason)"
        throw .badScheme(resource: scheme.name, reason: reason)
      }
      tables[IdentifierKey(table.name)] = table.name
      // SQLite keeps `é` (U+00E9) and `e` + U+0301 apart, but the load routes answer tables
      // by Swift string, which would merge them: refuse such a pair by its real reason.
      if let other = equivalent.updateValue(table.name, forKey: table.name) {
        throw .badScheme(
          resource: scheme.name,
          reason:
            "the scheme lists output tables '\(other)' and '\(table.name)', which differ only in Unicode normalization (composed and decomposed accents); "
            + "dray cannot load both: rename one, or spell both alike on the platform")
      }
      if table.columns.isEmpty && !scheme.isCached {
        throw .badScheme(resource: scheme.name, reason: "output table '\(table.name)' has no columns; \(emptyTableReason)")
      }
      let limit = maxColumns - (scheme.isCached ? 1 : 0)
      if table.columns.count > limit {
        throw .badScheme(
          resource: scheme.name,
          reason: "output table '\(table.name)' has \(table.columns.count) columns; \(database) allows at most \(limit)")
      }
      var seen: [IdentifierKey: String] = [:]
      if scheme.isCached { seen[IdentifierKey(rowIDColumn)] = rowIDColumn }
      for (index, column) in table.columns.enumerated() {
        if column.name.isEmpty {
          throw .badScheme(
            resource: scheme.name, reason: "output table '\(table.name)' has a column with an empty name (column \(index + 1))")
        }
        if column.name.utf8.contains(0) {
          throw .badScheme(
            resource: scheme.name,
            reason: "output table '\(table.name)' has a column named '\(Self.shown(column.name))', which holds a NUL character (U+0000)")
        }
        // SQLite compares identifiers without regard to ASCII case.
        let folded = IdentifierKey(column.name)
        if let other = seen[folded] {
          let reason =
            IdentifierKey.sameBytes(other, rowIDColumn)
            ? "output table '\(table.name)' has a column '\(column.name)', which clashes with the row id column '\(rowIDColumn)' of a cached resource"
            : "output table '\(table.name)' has columns '\(other)' and '\(column.name)', \(caseReason)"
          throw .badScheme(resource: scheme.name, reason: reason)
        }
        seen[folded] = column.name
      }
    }
  }

  /// A server-supplied name for a message: a NUL (or another control character) as `\0`,
  /// `\u{1b}`, so that the message stays one readable line.
  static func shown(_ name: String) -> String {
    name.unicodeScalars.map { scalar in
      if scalar.value == 0 { return "\\0" }
      if scalar.value < 32 || scalar.value == 127 { return "\\u{\(String(scalar.value, radix: 16))}" }
      return String(scalar)
    }.joined()
  }
}
