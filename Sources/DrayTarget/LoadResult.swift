internal import DrayModel
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
