public import DrayModel
internal import Foundation

/// What a load changed.
public struct LoadResult: Sendable, Equatable {
  /// Rows in each physical table after the load, by source table name.
  public var rowCounts: [String: Int]
  /// Rows inserted, by source table name.
  public var inserted: [String: Int]
  /// Rows deleted by a delta, by source table name.
  public var deleted: [String: Int]
  /// Physical table names, by source table name.
  public var tables: [String: String]
  /// The first 100 values that did not fit their column's declared type, in the order met.
  /// Each was stored exactly by the value rule (docs/store.md) and is reported here.
  public var mismatches: [ValueMismatch] = []
  /// How many values did not fit, all told.
  public var mismatchCount = 0
  /// Tables the answer held that the resource's scheme does not list; their rows were
  /// skipped. A fresh `schemes` step picks them up.
  public var skippedTables = SkippedTables()

  public init(
    rowCounts: [String: Int], inserted: [String: Int], deleted: [String: Int], tables: [String: String],
    mismatches: [ValueMismatch] = [], mismatchCount: Int = 0, skippedTables: SkippedTables = SkippedTables()
  ) {
    self.rowCounts = rowCounts
    self.inserted = inserted
    self.deleted = deleted
    self.tables = tables
    self.mismatches = mismatches
    self.mismatchCount = mismatchCount
    self.skippedTables = skippedTables
  }
}

/// Version and validators of an answer, recorded in the bookkeeping.
public struct AnswerInfo: Sendable, Equatable {
  public var contentVersion: String?
  public var etag: String?
  public var cacheHash: String?
  public init(contentVersion: String? = nil, etag: String? = nil, cacheHash: String? = nil) {
    self.contentVersion = contentVersion
    self.etag = etag
    self.cacheHash = cacheHash
  }

  /// `TargetStore.holdsAnswer`'s rule, for every store. *(ours)* The platform documents
  /// `Cache-Hash-Value` and `ETag` but not what they are computed over (platform-api.md §3),
  /// so both must say the same: each output table is kept (`kept`: it exists with the
  /// scheme's shape and nothing changed it since dray loaded it) and `recorded` gives, for
  /// it, the answer's hash for that table (which every table must have), the same strong
  /// `ETag` and the same content version.
  /// - Parameters:
  ///   - kept: whether the physical table still holds what dray loaded.
  ///   - recorded: the physical table's `cache_hash`, `etag` and `content_version`, or nil.
  public func isHeld(
    by scheme: ResourceScheme, params: JSONValue, naming: TableNaming, kept: (_ name: String, ResourceScheme.Table) throws -> Bool,
    recorded: (_ name: String) throws -> [String?]?
  ) throws -> Bool {
    guard let cacheHash, let etag, !etag.hasPrefix("W/"), !scheme.outputs.isEmpty else { return false }
    for table in scheme.outputs {
      let name = naming.physicalName(resource: scheme.name, table: table.name, params: params)
      guard let hash = Self.cacheHash(for: table.name, in: cacheHash), try kept(name, table),
        try recorded(name) == [hash, etag, contentVersion]
      else { return false }
    }
    return true
  }

  /// The hash for `table` from a `Cache-Hash-Value` header: comma-separated, URL-encoded
  /// `<table>-Hash:<hash>` entries (platform-api.md §3).
  public static func cacheHash(for table: String, in header: String) -> String? {
    for entry in header.split(separator: ",") {
      let decoded = entry.trimmingCharacters(in: .whitespaces).removingPercentEncoding ?? String(entry)
      let prefix = "\(table)-Hash:"
      if decoded.hasPrefix(prefix) { return String(decoded.dropFirst(prefix.count)) }
    }
    return nil
  }
}

/// A value that did not fit its column's declared type: stored exactly by the value rule
/// (docs/store.md) and reported by table, row and column.
public struct ValueMismatch: Sendable, Equatable, CustomStringConvertible {
  /// The output table as the answer names it.
  public var table: String
  /// 1-based position of the row in its list (`data` or `insert_rows`) in the answer.
  public var row: Int
  /// 1-based position of the value in its row (the row id of a cached resource is column 1).
  public var column: Int
  public var columnName: String
  /// The platform type the scheme declares for the column, e.g. `BIGINT`.
  public var declaredType: String
  /// What the answer held, e.g. `a string`.
  public var found: String
  /// The value as JSON text, at most 64 characters (longer ones end with `…`).
  public var value: String
  /// The SQLite storage class it was stored as: `integer`, `real` or `text`.
  public var storedAs: String

  public init(
    table: String, row: Int, column: Int, columnName: String, declaredType: String, found: String, value: String, storedAs: String
  ) {
    self.table = table
    self.row = row
    self.column = column
    self.columnName = columnName
    self.declaredType = declaredType
    self.found = found
    self.value = value
    self.storedAs = storedAs
  }

  public var description: String {
    "table \(table), row \(row), column \(column) '\(columnName)' (\(declaredType)): \(value) is \(found); stored as \(storedAs)"
  }
}
