internal import CSQLite
internal import DrayModel

// The row binder: the per-value path of a load. yajl's callbacks reach it through a raw
// pointer to the `Cursor`; each value is classified by the value rule (docs/store.md) and
// bound into the table's prepared INSERT, text staged in an arena and bound without a copy
// when the row is complete.

/// The state yajl's callbacks update for every value. Only trivial fields, reached through
/// a raw pointer: the per-value path does no reference counting and no exclusivity checks.
struct Cursor {
  var place = Place.start
  var key = Key.other
  /// Depth inside a skipped value, or inside a nested value of a row.
  var depth = 0
  /// The prepared INSERT of the rows being loaded.
  var insert: OpaquePointer?
  var kinds: UnsafeMutablePointer<ColumnKind>?
  /// Values per row.
  var width = 0
  /// Values bound so far in the current row.
  var column = 0
  /// 1-based number of the current row in its list.
  var row = 0
  /// Rows inserted from the current list.
  var inserted = 0
  /// The current row's text values, copied here and bound without a copy (`SQLITE_STATIC`)
  /// when the row is complete: SQLite then allocates nothing per value.
  var arena: UnsafeMutablePointer<UInt8>
  var arenaUsed = 0
  var arenaCapacity: Int
  /// Column, offset and length of each text value in `arena`, in the order met.
  var texts: UnsafeMutablePointer<PendingText>?
  var textCount = 0
  var session: Unmanaged<LoadSession>

  init(session: LoadSession, arena: UnsafeMutablePointer<UInt8>, capacity: Int) {
    self.session = Unmanaged.passUnretained(session)
    self.arena = arena
    self.arenaCapacity = capacity
  }
}

/// A text value of the current row, waiting in the cursor's arena.
struct PendingText {
  var column: Int32
  var offset: Int
  var length: Int
}

/// The prepared statements of one table of a load and the buffers the cursor points into
/// while its rows load, freed when the table's binding is released.
final class TableBinding {
  let insert: Statement
  /// `DELETE ... WHERE hhive_id = ?`, for a cached resource.
  let deleteByID: Statement?
  /// The kind of each column, in order.
  let kinds: UnsafeMutablePointer<ColumnKind>
  /// Room for one row's text values.
  let texts: UnsafeMutablePointer<PendingText>

  /// Prepares `INSERT` (`INSERT OR REPLACE` for a delta's `upsert`) into `target`, and its
  /// delete by row id when the resource is cached.
  /// - Throws: `SQLiteError`.
  init(database: Database, target: TableLoader.Target, upsert: Bool) throws {
    let quoted = Database.quote(target.physicalName)
    let placeholders = Array(repeating: "?", count: target.columns.count).joined(separator: ",")
    let verb = upsert ? "INSERT OR REPLACE INTO" : "INSERT INTO"
    insert = try database.prepare("\(verb) \(quoted) VALUES (\(placeholders))")
    deleteByID =
      target.cached ? try database.prepare("DELETE FROM \(quoted) WHERE \(Database.quote(Store.rowIDColumn)) = ?") : nil
    kinds = UnsafeMutablePointer<ColumnKind>.allocate(capacity: max(1, target.kinds.count))
    kinds.initialize(from: target.kinds, count: target.kinds.count)
    texts = UnsafeMutablePointer<PendingText>.allocate(capacity: max(1, target.kinds.count))
  }

  deinit {
    kinds.deallocate()
    texts.deallocate()
  }
}

@available(*, unavailable)
extension TableBinding: Sendable {}

extension LoadSession {

  @inline(__always)
  static func session(_ c: UnsafeMutablePointer<Cursor>) -> LoadSession { c.pointee.session.takeUnretainedValue() }

  /// The checked path for the per-value C results: false when `rc` is `SQLITE_OK`; else the
  /// load stops with SQLite's message (`stepFailed`) and the caller returns 0 to yajl.
  @inline(__always)
  static func failed(_ c: UnsafeMutablePointer<Cursor>, _ rc: Int32) -> Bool {
    guard rc != SQLITE_OK else { return false }
    _ = session(c).stepFailed(rc)
    return true
  }

  @inline(__always)
  static func bindText(
    _ c: UnsafeMutablePointer<Cursor>, _ p: UnsafePointer<UInt8>, _ n: Int, found: String, textColumnAccepts: Bool
  ) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    if kind == .rowID { return session(c).badRowID(found) }
    stage(c, column, p, n)
    let fits = kind == .any || (kind == .text && textColumnAccepts)
    if !fits { session(c).mismatch(found: found, value: text(p, n), storedAs: "text") }
    c.pointee.column = column + 1
    return 1
  }

  /// Copies a text value into the row's arena, to be bound when the row is complete.
  @inline(__always)
  static func stage(_ c: UnsafeMutablePointer<Cursor>, _ column: Int, _ p: UnsafePointer<UInt8>, _ n: Int) {
    if c.pointee.arenaUsed + n > c.pointee.arenaCapacity { session(c).growArena(n) }
    let offset = c.pointee.arenaUsed
    (c.pointee.arena + offset).update(from: p, count: n)
    c.pointee.arenaUsed = offset + n
    c.pointee.texts![c.pointee.textCount] = PendingText(column: Int32(column + 1), offset: offset, length: n)
    c.pointee.textCount += 1
  }

  @inline(__always)
  static func bindString(_ c: UnsafeMutablePointer<Cursor>, _ p: UnsafePointer<UInt8>?, _ n: Int) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    if kind == .rowID { return session(c).badRowID("a string") }
    // A NULL pointer would bind SQL NULL; "" must stay an empty string.
    let pointer = p ?? emptyText
    stage(c, column, pointer, n)
    if kind == .integer || kind == .real {
      session(c).mismatch(found: "a string", value: JSONValue.quoted(text(pointer, n)), storedAs: "text")
    }
    c.pointee.column = column + 1
    return 1
  }

  // nonisolated(unsafe): one byte, written once here and only read afterwards.
  nonisolated(unsafe) static let emptyText: UnsafePointer<UInt8> = {
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    p.initialize(to: 0)
    return UnsafePointer(p)
  }()

  @inline(__always)
  static func bindNumber(_ c: UnsafeMutablePointer<Cursor>, _ p: UnsafePointer<UInt8>, _ n: Int) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    let statement = c.pointee.insert
    let index = Int32(column + 1)
    if NumberText.isInteger(p, n) {
      if let value = NumberText.int64(p, n) {
        if kind == .real {
          let real = Double(value)
          if Int64(exactly: real) == value {
            if failed(c, sqlite3_bind_double(statement, index, real)) { return 0 }
          } else {
            if failed(c, sqlite3_bind_int64(statement, index, value)) { return 0 }
            session(c).mismatch(found: "an integer a double cannot hold exactly", value: text(p, n), storedAs: "integer")
          }
        } else {
          if failed(c, sqlite3_bind_int64(statement, index, value)) { return 0 }
          if kind == .text { session(c).mismatch(found: "an integer", value: text(p, n), storedAs: "integer") }
        }
        c.pointee.column = column + 1
        return 1
      }
      // Beyond 64 bits: exact digits as text, unless a DOUBLE column's double holds them exactly.
      if kind == .rowID { return session(c).badRowID(text(p, n)) }
      if kind == .real {
        let real = NumberText.strtodCopy(p, n)
        if NumberText.isExact(real, integerText: p, n) {
          if failed(c, sqlite3_bind_double(statement, index, real)) { return 0 }
          c.pointee.column = column + 1
          return 1
        }
      }
      return bindText(c, p, n, found: "an integer beyond 64 bits", textColumnAccepts: false)
    }
    if kind == .rowID { return session(c).badRowID(text(p, n)) }
    let real = NumberText.double(p, n)
    guard real.isFinite else { return bindText(c, p, n, found: "a number beyond the range of a double", textColumnAccepts: false) }
    if failed(c, sqlite3_bind_double(statement, index, real)) { return 0 }
    if kind == .integer || kind == .text { session(c).mismatch(found: "a real number", value: text(p, n), storedAs: "real") }
    c.pointee.column = column + 1
    return 1
  }

  @inline(__always)
  static func bindBool(_ c: UnsafeMutablePointer<Cursor>, _ value: Bool) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    let kind = c.pointee.kinds![column]
    if kind == .rowID { return session(c).badRowID("a boolean") }
    if failed(c, sqlite3_bind_int64(c.pointee.insert, Int32(column + 1), value ? 1 : 0)) { return 0 }
    if kind == .real || kind == .text { session(c).mismatch(found: "a boolean", value: value ? "true" : "false", storedAs: "integer") }
    c.pointee.column = column + 1
    return 1
  }

  @inline(__always)
  static func bindNull(_ c: UnsafeMutablePointer<Cursor>) -> Int32 {
    let column = c.pointee.column
    guard column < c.pointee.width else { return session(c).tooManyValues() }
    if c.pointee.kinds![column] == .rowID { return session(c).badRowID("null") }
    if failed(c, sqlite3_bind_null(c.pointee.insert, Int32(column + 1))) { return 0 }
    c.pointee.column = column + 1
    return 1
  }

  @inline(__always)
  static func endRow(_ c: UnsafeMutablePointer<Cursor>) -> Int32 {
    guard c.pointee.column == c.pointee.width else { return session(c).shortRow() }
    let statement = c.pointee.insert
    let arena = c.pointee.arena
    for i in 0..<c.pointee.textCount {
      let text = c.pointee.texts![i]
      // A NULL destructor is SQLITE_STATIC: the arena outlives the step. The 64-bit length
      // takes a value of any size; past SQLite's limit the bind fails with SQLITE_TOOBIG.
      let rc = sqlite3_bind_text64(
        statement, text.column, UnsafeRawPointer(arena + text.offset).assumingMemoryBound(to: CChar.self), UInt64(text.length), nil,
        UInt8(SQLITE_UTF8))
      guard rc == SQLITE_OK else { return session(c).stepFailed(rc) }
    }
    c.pointee.textCount = 0
    c.pointee.arenaUsed = 0
    let rc = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard rc == SQLITE_DONE else { return session(c).stepFailed(rc) }
    c.pointee.inserted += 1
    c.pointee.place = .rows
    return 1
  }

  func shortRow() -> Int32 {
    let c = cursor.pointee
    // Report the first missing value's column.
    return fail(
      "the row has \(c.column) value\(c.column == 1 ? "" : "s"); the table has \(LoadSession.describeWidth(target, c.width)); a missing value is not null, so the row is refused"
    )
  }
}
