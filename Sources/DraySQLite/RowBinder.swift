internal import CSQLite
internal import DrayJSON
internal import DrayModel
internal import DrayTarget

/// The row binder: SQLite's row sink, the per-value path of a load. Each value the scanner
/// hands over is classified by the value rule (docs/store.md) and written, as what to bind,
/// into a batch of rows (text copied into the batch's arena); full batches go to the load's
/// `InsertWriter`, which binds them into the table's prepared INSERT and steps it on a
/// thread of its own, so SQLite allocates nothing per value.
///
/// One per table of a load (`LoadSession.binding(for:upsert:)`): it owns its statements and
/// its batch and frees them in `deinit`.
final class RowBinder: TableAnswerRowSink {
  let insert: Statement
  /// `INSERT` of `rowsPerInsert` rows, for a table without row ids (nil when its parameters
  /// would pass SQLite's limit). One statement for many rows saves SQLite's work of starting
  /// and ending each (about 40% of a 1,000,000-row load's inserts); a table with row ids keeps
  /// one row a statement, as its key would make SQLite journal each statement of several.
  let insertRows: Statement?
  /// Rows of `insertRows`.
  static let rowsPerInsert = 32
  /// `DELETE ... WHERE hhive_id = ?`, for a cached resource.
  let deleteByID: Statement?
  let target: TableLoader.Target
  /// The kind of each column, in order.
  private let kinds: UnsafeMutablePointer<ColumnKind>
  /// Values per row.
  private let width: Int
  /// The batch being filled, behind a raw pointer (see `RowBatch`).
  private let current: UnsafeMutablePointer<UnsafeMutablePointer<RowBatch>>
  private let writer: InsertWriter
  /// Where mismatches and SQLite's refusals are reported; it owns this binder.
  private unowned(unsafe) let session: LoadSession

  /// Prepares `INSERT` into `target`, and its delete by row id when the resource is cached.
  /// For a delta's `upsert` into a cached table, an insert for a row id the table holds
  /// updates that row (`ON CONFLICT (hhive_id) DO UPDATE`, https://sqlite.org/lang_upsert.html):
  /// unlike `INSERT OR REPLACE`, it never deletes another row to satisfy a UNIQUE index a
  /// user added, which refuses the row instead.
  /// - Throws: `SQLiteError`.
  init(session: LoadSession, target: TableLoader.Target, upsert: Bool) throws {
    let database = session.loader.database
    let quoted = Database.quote(target.physicalName)
    let placeholders = Array(repeating: "?", count: target.columns.count).joined(separator: ",")
    var sql = "INSERT INTO \(quoted) VALUES (\(placeholders))"
    if upsert && target.cached {
      let values = target.columns.dropFirst().map { "\(Database.quote($0.name)) = excluded.\(Database.quote($0.name))" }
      sql +=
        " ON CONFLICT (\(Database.quote(ResourceScheme.rowIDColumn))) DO "
        + (values.isEmpty ? "NOTHING" : "UPDATE SET " + values.joined(separator: ", "))
    }
    insert = try database.prepare(sql)
    let parameters = target.columns.count * RowBinder.rowsPerInsert
    insertRows =
      upsert || target.cached || parameters > sqlite3_limit(database.handle, SQLITE_LIMIT_VARIABLE_NUMBER, -1)
      ? nil
      : try database.prepare(
        "INSERT INTO \(quoted) VALUES " + Array(repeating: "(\(placeholders))", count: RowBinder.rowsPerInsert).joined(separator: ","))
    deleteByID =
      target.cached ? try database.prepare("DELETE FROM \(quoted) WHERE \(Database.quote(ResourceScheme.rowIDColumn)) = ?") : nil
    self.target = target
    self.session = session
    writer = session.writer
    width = target.columns.count
    kinds = UnsafeMutablePointer<ColumnKind>.allocate(capacity: max(1, target.kinds.count))
    kinds.initialize(from: target.kinds, count: target.kinds.count)
    current = .allocate(capacity: 1)
    current.initialize(to: writer.take(width: width))
  }

  deinit {
    writer.giveBack(current.pointee)
    current.deallocate()
    kinds.deallocate()
  }

  /// Hands the complete rows bound so far to the writer; the values of a row still being
  /// read move to the next batch.
  /// - Throws: the refusal of an earlier row (`InsertWriter.submit(_:)`).
  func flush() throws {
    let batch = current.pointee
    guard batch.pointee.rows > 0 else { return }
    let next = writer.take(width: width)
    current.pointee = next
    let row = batch.pointee.values + batch.pointee.rows * width
    for column in 0..<batch.pointee.rowValues {
      let value = row[column]
      let slot = next.pointee.values + column
      guard value.kind == .text else {
        slot.pointee = value
        continue
      }
      stage(slot, UnsafeBufferPointer(start: batch.pointee.arena + Int(value.bits), count: value.length))
    }
    next.pointee.rowValues = batch.pointee.rowValues
    batch.pointee.binder = Unmanaged.passUnretained(self)
    try writer.submit(batch)
  }

  // MARK: The row sink

  func value(_ token: JSONToken, row: Int, column: Int) throws {
    guard column < width else { throw tooManyValues() }
    let kind = kinds[column]
    let batch = current.pointee
    let slot = batch.pointee.values + (batch.pointee.rows &* width &+ column)
    batch.pointee.rowValues = column &+ 1
    switch token {
    case .number(let text): try bindNumber(text, row, column, kind, slot)
    case .string(let text):
      if kind == .rowID { throw badRowID("a string") }
      stage(slot, text)
      if kind == .integer || kind == .real {
        mismatch(row, column, found: "a string", value: JSONValue.quoted(Self.text(text)), storedAs: "text")
      }
    case .null:
      if kind == .rowID { throw badRowID("null") }
      slot.pointee = BoundValue(kind: .null, bits: 0, length: 0)
    case .bool(let flag):
      if kind == .rowID { throw badRowID("a boolean") }
      slot.pointee = BoundValue(kind: .integer, bits: flag ? 1 : 0, length: 0)
      if kind == .real || kind == .text { mismatch(row, column, found: "a boolean", value: flag ? "true" : "false", storedAs: "integer") }
    case .nested(let text):
      try bindText(
        text, row, column, kind, slot, found: text.first == UInt8(ascii: "[") ? "an array" : "an object", textColumnAccepts: true)
    }
  }

  func endRow(_ row: Int, values: Int) throws {
    guard values == width else { throw shortRow(values) }
    let batch = current.pointee
    if batch.pointee.rows == 0 { batch.pointee.firstRow = row }
    batch.pointee.rows += 1
    batch.pointee.rowValues = 0
    if batch.pointee.isFull { try flush() }
  }

  // MARK: Values

  @inline(__always)
  private func bindNumber(
    _ text: UnsafeBufferPointer<UInt8>, _ row: Int, _ column: Int, _ kind: ColumnKind, _ slot: UnsafeMutablePointer<BoundValue>
  ) throws {
    // A JSON number has at least one digit; text without an address is kept as text.
    guard let p = text.baseAddress else {
      return try bindText(text, row, column, kind, slot, found: "a number without digits", textColumnAccepts: false)
    }
    let n = text.count
    if NumberText.isInteger(p, n) {
      if let value = NumberText.int64(p, n) {
        if kind == .real {
          let real = Double(value)
          if Int64(exactly: real) == value {
            slot.pointee = BoundValue(kind: .real, bits: real.bitPattern, length: 0)
          } else {
            slot.pointee = BoundValue(kind: .integer, bits: UInt64(bitPattern: value), length: 0)
            mismatch(row, column, found: "an integer a double cannot hold exactly", value: Self.text(text), storedAs: "integer")
          }
        } else {
          slot.pointee = BoundValue(kind: .integer, bits: UInt64(bitPattern: value), length: 0)
          if kind == .text { mismatch(row, column, found: "an integer", value: Self.text(text), storedAs: "integer") }
        }
        return
      }
      // Beyond 64 bits: exact digits as text, unless a DOUBLE column's double holds them exactly.
      if kind == .rowID { throw badRowID(Self.text(text)) }
      if kind == .real {
        let real = NumberText.strtodCopy(p, n)
        if NumberText.isExact(real, integerText: p, n) {
          slot.pointee = BoundValue(kind: .real, bits: real.bitPattern, length: 0)
          return
        }
      }
      return try bindText(text, row, column, kind, slot, found: "an integer beyond 64 bits", textColumnAccepts: false)
    }
    if kind == .rowID { throw badRowID(Self.text(text)) }
    let real = NumberText.double(p, n)
    guard real.isFinite else {
      return try bindText(text, row, column, kind, slot, found: "a number beyond the range of a double", textColumnAccepts: false)
    }
    slot.pointee = BoundValue(kind: .real, bits: real.bitPattern, length: 0)
    if kind == .integer || kind == .text { mismatch(row, column, found: "a real number", value: Self.text(text), storedAs: "real") }
  }

  private func bindText(
    _ text: UnsafeBufferPointer<UInt8>, _ row: Int, _ column: Int, _ kind: ColumnKind, _ slot: UnsafeMutablePointer<BoundValue>,
    found: String, textColumnAccepts: Bool
  ) throws {
    if kind == .rowID { throw badRowID(found) }
    stage(slot, text)
    let fits = kind == .any || (kind == .text && textColumnAccepts)
    if !fits { mismatch(row, column, found: found, value: Self.text(text), storedAs: "text") }
  }

  /// Copies a text value into the batch's arena.
  @inline(__always)
  private func stage(_ slot: UnsafeMutablePointer<BoundValue>, _ text: UnsafeBufferPointer<UInt8>) {
    let batch = current.pointee
    let n = text.count
    if batch.pointee.arenaUsed + n > batch.pointee.arenaCapacity {
      let b = batch.pointee
      (batch.pointee.arena, batch.pointee.arenaCapacity) = RowStaging.grow(b.arena, used: b.arenaUsed, capacity: b.arenaCapacity, more: n)
    }
    let offset = batch.pointee.arenaUsed
    if let base = text.baseAddress { (batch.pointee.arena + offset).update(from: base, count: n) }
    batch.pointee.arenaUsed = offset + n
    slot.pointee = BoundValue(kind: .text, bits: UInt64(offset), length: n)
  }

  private func mismatch(_ row: Int, _ column: Int, found: String, value: @autoclosure () -> String, storedAs: String) {
    session.mismatch(target: target, row: row, column: column, found: found, value: value(), storedAs: storedAs)
  }

  private static func text(_ text: UnsafeBufferPointer<UInt8>) -> String { String(decoding: text, as: UTF8.self) }

  // MARK: Refusals

  /// Whether SQLite's result `rc` refuses the row itself (a constraint, a value past SQLite's
  /// length limit, a datatype mismatch), rather than the database failing (disk full, I/O
  /// error, interrupt, out of memory: https://sqlite.org/rescode.html): only a refusal is the
  /// row's, to be named by it.
  static func refusesRow(_ rc: Int32) -> Bool {
    let primary = ResultCode.primary(rc)
    return primary == SQLITE_CONSTRAINT || primary == SQLITE_TOOBIG || primary == SQLITE_MISMATCH
  }

  /// The database's failure `rc`, which is no row's: SQLite's error naming the database file.
  func failure(_ rc: Int32) -> SQLiteError { session.loader.database.error(rc, sql: nil) }

  /// SQLite's refusal of the row (or of a delete by id), for the whole row.
  func stepFailed(_ rc: Int32) -> TableAnswerRefusal {
    if rc == ResultCode.constraintPrimaryKey, target.cached {
      return TableAnswerRefusal(
        "the row's id (\(ResourceScheme.rowIDColumn)) is already in the table's data; row ids must be unique", wholeRow: true)
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
    TableAnswerRefusal(
      "the row id (\(ResourceScheme.rowIDColumn)) must be an integer of at most 64 bits; found \(PrintableText.excerpt(found))")
  }
}

@available(*, unavailable)
extension RowBinder: Sendable {}
