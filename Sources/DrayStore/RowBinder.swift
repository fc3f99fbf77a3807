internal import CSQLite
internal import DrayJSON
internal import DrayModel

/// The row binder: SQLite's row sink, the per-value path of a load. Each value the scanner
/// hands over is classified by the value rule (docs/store.md) and bound into the table's
/// prepared INSERT; text is staged in an arena and bound without a copy when the row is
/// complete, so SQLite allocates nothing per value.
///
/// One per table of a load (`LoadSession.binding(for:upsert:)`): it owns its statements and
/// buffers and frees them in `deinit`.
final class RowBinder: TableAnswerRowSink {
  /// The row's text values and the arena they wait in. Only trivial fields, reached through
  /// a raw pointer: the per-value path does no reference counting and no exclusivity checks.
  struct Staged {
    var arena: UnsafeMutablePointer<UInt8>
    var arenaUsed = 0
    var arenaCapacity: Int
    /// Column, offset and length of each text value in `arena`, in the order met.
    var textCount = 0
  }

  /// A text value of the current row, waiting in the arena.
  struct PendingText {
    var column: Int32
    var offset: Int
    var length: Int
  }

  let insert: Statement
  /// `DELETE ... WHERE hhive_id = ?`, for a cached resource.
  let deleteByID: Statement?
  let target: TableLoader.Target
  /// The prepared INSERT's handle, bound value by value.
  private let statement: OpaquePointer
  /// The kind of each column, in order.
  private let kinds: UnsafeMutablePointer<ColumnKind>
  /// Values per row.
  private let width: Int
  /// Room for one row's text values.
  private let texts: UnsafeMutablePointer<PendingText>
  private let staged: UnsafeMutablePointer<Staged>
  /// Where mismatches and SQLite's refusals are reported; it owns this binder.
  private unowned(unsafe) let session: LoadSession

  /// Prepares `INSERT` (`INSERT OR REPLACE` for a delta's `upsert`) into `target`, and its
  /// delete by row id when the resource is cached.
  /// - Throws: `SQLiteError`.
  init(session: LoadSession, target: TableLoader.Target, upsert: Bool) throws {
    let database = session.loader.database
    let quoted = Database.quote(target.physicalName)
    let placeholders = Array(repeating: "?", count: target.columns.count).joined(separator: ",")
    let verb = upsert ? "INSERT OR REPLACE INTO" : "INSERT INTO"
    insert = try database.prepare("\(verb) \(quoted) VALUES (\(placeholders))")
    deleteByID =
      target.cached ? try database.prepare("DELETE FROM \(quoted) WHERE \(Database.quote(Store.rowIDColumn)) = ?") : nil
    statement = insert.handle
    self.target = target
    self.session = session
    width = target.columns.count
    kinds = UnsafeMutablePointer<ColumnKind>.allocate(capacity: max(1, target.kinds.count))
    kinds.initialize(from: target.kinds, count: target.kinds.count)
    texts = UnsafeMutablePointer<PendingText>.allocate(capacity: max(1, target.kinds.count))
    let capacity = 64 * 1024
    staged = UnsafeMutablePointer<Staged>.allocate(capacity: 1)
    staged.initialize(to: Staged(arena: UnsafeMutablePointer<UInt8>.allocate(capacity: capacity), arenaCapacity: capacity))
  }

  deinit {
    staged.pointee.arena.deallocate()
    staged.deinitialize(count: 1)
    staged.deallocate()
    kinds.deallocate()
    texts.deallocate()
  }

  // MARK: The row sink

  func value(_ token: JSONToken, row: Int, column: Int) throws {
    guard column < width else { throw tooManyValues() }
    let kind = kinds[column]
    switch token {
    case .number(let text): try bindNumber(text, row, column, kind)
    case .string(let text):
      if kind == .rowID { throw badRowID("a string") }
      stage(column, text)
      if kind == .integer || kind == .real {
        mismatch(row, column, found: "a string", value: JSONValue.quoted(Self.text(text)), storedAs: "text")
      }
    case .null:
      if kind == .rowID { throw badRowID("null") }
      try check(sqlite3_bind_null(statement, Int32(column + 1)))
    case .bool(let flag):
      if kind == .rowID { throw badRowID("a boolean") }
      try check(sqlite3_bind_int64(statement, Int32(column + 1), flag ? 1 : 0))
      if kind == .real || kind == .text { mismatch(row, column, found: "a boolean", value: flag ? "true" : "false", storedAs: "integer") }
    case .nested(let text):
      try bindText(text, row, column, kind, found: text.first == UInt8(ascii: "[") ? "an array" : "an object", textColumnAccepts: true)
    }
  }

  func endRow(_ row: Int, values: Int) throws {
    guard values == width else { throw shortRow(values) }
    let arena = staged.pointee.arena
    for i in 0..<staged.pointee.textCount {
      let text = texts[i]
      // A NULL destructor is SQLITE_STATIC: the arena outlives the step. The 64-bit length
      // takes a value of any size; past SQLite's limit the bind fails with SQLITE_TOOBIG.
      try check(
        sqlite3_bind_text64(
          statement, text.column, UnsafeRawPointer(arena + text.offset).assumingMemoryBound(to: CChar.self), UInt64(text.length),
          nil, UInt8(SQLITE_UTF8)))
    }
    staged.pointee.textCount = 0
    staged.pointee.arenaUsed = 0
    let rc = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard rc == SQLITE_DONE else { throw stepFailed(rc) }
  }

  // MARK: Values

  @inline(__always)
  private func bindNumber(_ text: UnsafeBufferPointer<UInt8>, _ row: Int, _ column: Int, _ kind: ColumnKind) throws {
    let p = text.baseAddress!
    let n = text.count
    let index = Int32(column + 1)
    if NumberText.isInteger(p, n) {
      if let value = NumberText.int64(p, n) {
        if kind == .real {
          let real = Double(value)
          if Int64(exactly: real) == value {
            try check(sqlite3_bind_double(statement, index, real))
          } else {
            try check(sqlite3_bind_int64(statement, index, value))
            mismatch(row, column, found: "an integer a double cannot hold exactly", value: Self.text(text), storedAs: "integer")
          }
        } else {
          try check(sqlite3_bind_int64(statement, index, value))
          if kind == .text { mismatch(row, column, found: "an integer", value: Self.text(text), storedAs: "integer") }
        }
        return
      }
      // Beyond 64 bits: exact digits as text, unless a DOUBLE column's double holds them exactly.
      if kind == .rowID { throw badRowID(Self.text(text)) }
      if kind == .real {
        let real = NumberText.strtodCopy(p, n)
        if NumberText.isExact(real, integerText: p, n) {
          try check(sqlite3_bind_double(statement, index, real))
          return
        }
      }
      return try bindText(text, row, column, kind, found: "an integer beyond 64 bits", textColumnAccepts: false)
    }
    if kind == .rowID { throw badRowID(Self.text(text)) }
    let real = NumberText.double(p, n)
    guard real.isFinite else {
      return try bindText(text, row, column, kind, found: "a number beyond the range of a double", textColumnAccepts: false)
    }
    try check(sqlite3_bind_double(statement, index, real))
    if kind == .integer || kind == .text { mismatch(row, column, found: "a real number", value: Self.text(text), storedAs: "real") }
  }

  private func bindText(
    _ text: UnsafeBufferPointer<UInt8>, _ row: Int, _ column: Int, _ kind: ColumnKind, found: String, textColumnAccepts: Bool
  ) throws {
    if kind == .rowID { throw badRowID(found) }
    stage(column, text)
    let fits = kind == .any || (kind == .text && textColumnAccepts)
    if !fits { mismatch(row, column, found: found, value: Self.text(text), storedAs: "text") }
  }

  /// Copies a text value into the row's arena, to be bound when the row is complete.
  @inline(__always)
  private func stage(_ column: Int, _ text: UnsafeBufferPointer<UInt8>) {
    let n = text.count
    if staged.pointee.arenaUsed + n > staged.pointee.arenaCapacity { growArena(n) }
    let offset = staged.pointee.arenaUsed
    if let base = text.baseAddress { (staged.pointee.arena + offset).update(from: base, count: n) }
    staged.pointee.arenaUsed = offset + n
    texts[staged.pointee.textCount] = PendingText(column: Int32(column + 1), offset: offset, length: n)
    staged.pointee.textCount += 1
  }

  /// Makes room for `count` more bytes in the arena (between binds, so nothing bound moves).
  private func growArena(_ count: Int) {
    let s = staged.pointee
    (staged.pointee.arena, staged.pointee.arenaCapacity) = RowStaging.grow(
      s.arena, used: s.arenaUsed, capacity: s.arenaCapacity, more: count)
  }

  private func mismatch(_ row: Int, _ column: Int, found: String, value: @autoclosure () -> String, storedAs: String) {
    session.mismatch(target: target, row: row, column: column, found: found, value: value(), storedAs: storedAs)
  }

  private static func text(_ text: UnsafeBufferPointer<UInt8>) -> String { String(decoding: text, as: UTF8.self) }

  // MARK: Refusals

  /// The checked path for the per-value C results: SQLite's refusal of the row unless `rc`
  /// is `SQLITE_OK`.
  @inline(__always)
  private func check(_ rc: Int32) throws {
    guard rc == SQLITE_OK else { throw stepFailed(rc) }
  }

  /// SQLite's refusal of the row (or of a delete by id), for the whole row.
  func stepFailed(_ rc: Int32) -> TableAnswerRefusal {
    // SQLITE_CONSTRAINT_PRIMARYKEY, a macro Swift does not import (https://sqlite.org/rescode.html).
    if rc == SQLITE_CONSTRAINT | (6 << 8), target.cached {
      return TableAnswerRefusal(
        "the row's id (\(Store.rowIDColumn)) is already in the table's data; row ids must be unique", wholeRow: true)
    }
    return TableAnswerRefusal(
      "SQLite refused the row: \(String(cString: sqlite3_errmsg(session.loader.database.handle)))", wholeRow: true)
  }

  private func tooManyValues() -> TableAnswerRefusal {
    TableAnswerRefusal("the row has more than \(width) values; the table has \(describeWidth())")
  }

  private func shortRow(_ values: Int) -> TableAnswerRefusal {
    // Placed at the first missing value's column.
    TableAnswerRefusal(
      "the row has \(values) value\(values == 1 ? "" : "s"); the table has \(describeWidth()); a missing value is not null, so the row is refused"
    )
  }

  private func describeWidth() -> String {
    "\(width) column\(width == 1 ? "" : "s")\(target.cached ? " (a row id, then the scheme's columns)" : "")"
  }

  private func badRowID(_ found: String) -> TableAnswerRefusal {
    TableAnswerRefusal("the row id (\(Store.rowIDColumn)) must be an integer of at most 64 bits; found \(found)")
  }
}

@available(*, unavailable)
extension RowBinder: Sendable {}
