internal import CSQLite
public import DrayTarget
internal import Foundation

/// A prepared statement. Owned by one thread at a time.
public final class Statement {
  let handle: OpaquePointer
  unowned let database: Database
  public let sql: String

  init(_ handle: OpaquePointer, database: Database, sql: String) {
    self.handle = handle
    self.database = database
    self.sql = sql
  }

  deinit { sqlite3_finalize(handle) }

  /// Advances to the next row.
  /// - Returns: true when a row is available, false when done.
  @inline(__always)
  public func step() throws(SQLiteError) -> Bool {
    let rc = sqlite3_step(handle)
    if rc == SQLITE_ROW { return true }
    if rc == SQLITE_DONE { return false }
    let error = database.error(rc, sql: sql)
    sqlite3_reset(handle)
    throw error
  }

  public func reset() {
    sqlite3_reset(handle)
    sqlite3_clear_bindings(handle)
  }

  public func bind(_ values: [SQLValue]) throws(SQLiteError) {
    for (i, value) in values.enumerated() { try bind(value, at: Int32(i + 1)) }
  }

  public func bind(_ value: SQLValue, at index: Int32) throws(SQLiteError) {
    let rc: Int32
    switch value {
    case .null: rc = sqlite3_bind_null(handle, index)
    case .integer(let i): rc = sqlite3_bind_int64(handle, index, i)
    case .real(let d): rc = sqlite3_bind_double(handle, index, d)
    case .text(let s):
      rc = s.withCString { dray_sqlite3_bind_text_transient(handle, index, $0, UInt64(s.utf8.count)) }
    case .blob(let b):
      rc = b.withUnsafeBytes { bytes in
        // A null pointer would bind NULL: an empty blob without an address is a zero-length blob.
        guard let base = bytes.baseAddress else { return sqlite3_bind_zeroblob(handle, index, 0) }
        return dray_sqlite3_bind_blob_transient(handle, index, base, UInt64(bytes.count))
      }
    }
    try check(rc)
  }

  /// The one checked path for this statement's C results: `SQLITE_OK`, or the error with
  /// SQLite's message and this statement's SQL.
  @inline(__always)
  func check(_ rc: Int32) throws(SQLiteError) {
    guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
  }

  /// Binds UTF-8 text straight from a buffer (copied by SQLite).
  @inline(__always)
  public func bindText(_ pointer: UnsafePointer<UInt8>, count: Int, at index: Int32) throws(SQLiteError) {
    try check(
      pointer.withMemoryRebound(to: CChar.self, capacity: max(count, 1)) {
        dray_sqlite3_bind_text_transient(handle, index, $0, UInt64(count))
      })
  }

  @inline(__always)
  public func bindInteger(_ value: Int64, at index: Int32) throws(SQLiteError) {
    try check(sqlite3_bind_int64(handle, index, value))
  }

  @inline(__always)
  public func bindReal(_ value: Double, at index: Int32) throws(SQLiteError) {
    try check(sqlite3_bind_double(handle, index, value))
  }

  @inline(__always)
  public func bindNull(at index: Int32) throws(SQLiteError) {
    try check(sqlite3_bind_null(handle, index))
  }

  /// Resets the statement after a step, keeping its bindings.
  @inline(__always)
  public func rewind() { sqlite3_reset(handle) }

  public var columnCount: Int { Int(sqlite3_column_count(handle)) }

  /// True when running the statement makes no direct change to the database file
  /// (`sqlite3_stmt_readonly`, https://sqlite.org/c3ref/stmt_readonly.html). `VACUUM INTO`,
  /// `PRAGMA journal_mode=...` and writes are not read-only; `ATTACH`, `DETACH` and
  /// transaction control are, as SQLite defines it.
  public var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

  public func columnName(_ index: Int) -> String {
    sqlite3_column_name(handle, Int32(index)).map { String(cString: $0) } ?? ""
  }

  /// The value of column `index` of the current row.
  public func value(_ index: Int) -> SQLValue {
    let i = Int32(index)
    switch sqlite3_column_type(handle, i) {
    case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, i))
    case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, i))
    case SQLITE_TEXT:
      let count = Int(sqlite3_column_bytes(handle, i))
      guard let text = sqlite3_column_text(handle, i) else { return .text("") }
      return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
    case SQLITE_BLOB:
      let count = Int(sqlite3_column_bytes(handle, i))
      guard let blob = sqlite3_column_blob(handle, i) else { return .blob([]) }
      return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
    default: return .null
    }
  }
}

@available(*, unavailable)
extension Statement: Sendable {}
