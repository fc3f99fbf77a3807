internal import CSQLite
internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import Foundation

/// One value of a row waiting for its INSERT: what the row binder decided to bind.
struct BoundValue {
  enum Kind: UInt8 { case null, integer, real, text }
  var kind: Kind
  /// The integer's or the double's bit pattern; for text, its offset in the batch's arena.
  var bits: UInt64
  /// Bytes of text.
  var length: Int
}

/// Rows of one table, bound value by value on the load's thread and inserted together on
/// the writer's (`InsertWriter`). Only trivial fields, reached through a raw pointer: the
/// per-value path does no reference counting and no exclusivity checks.
struct RowBatch {
  /// `rowCapacity` rows of `width` values.
  var values: UnsafeMutablePointer<BoundValue>
  var width: Int
  var rowCapacity: Int
  /// Complete rows.
  var rows = 0
  /// Values of the row after them, which is still being read.
  var rowValues = 0
  /// The answer's number of the first row (rows of a batch are consecutive in their list).
  var firstRow = 0
  /// The text of the rows' values.
  var arena: UnsafeMutablePointer<UInt8>
  var arenaUsed = 0
  var arenaCapacity: Int
  /// The binder whose INSERT takes the rows; set when the batch is handed over.
  var binder: Unmanaged<RowBinder>?

  /// Text past which a batch is handed over before it is full: 1 MiB.
  static let arenaLimit = 1 << 20

  /// Whether the batch should be handed over now.
  var isFull: Bool { rows == rowCapacity || arenaUsed >= RowBatch.arenaLimit }
}

/// The load's inserts on a thread of their own (`HandoffThread`), so that parsing the answer
/// (on the load's thread) and SQLite's inserts use two cores. The load's thread fills a
/// `RowBatch` and hands it over with `submit(_:)`; at most `queueLimit` batches wait, so
/// memory stays bounded whatever the answer's size.
///
/// The connection is never used by both threads at once: the load's thread runs any other
/// statement (replacing a table, preparing an INSERT, a delete by row id) only after
/// `drain()`, which returns once the writer has inserted every batch handed over. The
/// connection is opened `SQLITE_OPEN_NOMUTEX`; the handoff's lock orders the two threads'
/// uses of it.
///
/// The first row SQLite refuses stops the writer: later batches are dropped, and the
/// refusal, placed at its table and row, is thrown by the next `submit(_:)` or `drain()`.
/// A failure of the database rather than of a row (a full disk, an I/O error, an interrupt)
/// stops it the same way, thrown as SQLite's error (`SQLiteError`), with no row named.
final class InsertWriter {
  /// Batches handed over and not yet inserted, at most.
  static let queueLimit = 3
  /// Values a batch holds, at most (its rows are this divided by the row's width).
  static let batchValues = 8192

  private let handoff = HandoffThread<UnsafeMutablePointer<RowBatch>>(limit: InsertWriter.queueLimit) { batch in
    InsertWriter.insert(batch.pointee)
  }
  /// Every batch made, freed with the writer; used on the load's thread only.
  private var all: [UnsafeMutablePointer<RowBatch>] = []

  deinit {
    for batch in all {
      batch.pointee.values.deallocate()
      batch.pointee.arena.deallocate()
      batch.deinitialize(count: 1)
      batch.deallocate()
    }
  }

  /// An empty batch for rows of `width` values; waits while `queueLimit` batches are queued.
  func take(width: Int) -> UnsafeMutablePointer<RowBatch> {
    let batch = handoff.take() ?? allocate()
    let rows = max(1, Self.batchValues / max(1, width))
    if batch.pointee.rowCapacity * batch.pointee.width < rows * width {
      batch.pointee.values.deallocate()
      batch.pointee.values = .allocate(capacity: rows * max(1, width))
    }
    batch.pointee.width = width
    batch.pointee.rowCapacity = rows
    batch.pointee.rows = 0
    batch.pointee.rowValues = 0
    batch.pointee.arenaUsed = 0
    batch.pointee.binder = nil
    return batch
  }

  /// Gives back a batch taken and not handed over.
  func giveBack(_ batch: UnsafeMutablePointer<RowBatch>) { handoff.giveBack(batch) }

  /// Hands `batch` (its rows complete, `binder` set) to the writer.
  /// - Throws: the refusal of an earlier row (`TableAnswerError`) or the database's failure
  ///   (`SQLiteError`), once the writer stopped on it.
  func submit(_ batch: UnsafeMutablePointer<RowBatch>) throws { try handoff.submit(batch) }

  /// Waits until every batch handed over is inserted (or dropped, after a failure); then the
  /// connection is the caller's until the next `submit(_:)`.
  /// - Returns: the refusal or failure that stopped the writer, if one did.
  func drain() -> (any Error)? { handoff.drain() }

  /// Ends the writer's thread, once what was handed over is inserted (the load drains it
  /// first, on success and on failure alike).
  func stop() { handoff.stop() }

  // MARK: The writer's thread

  /// Inserts the rows of `batch`, `RowBinder.rowsPerInsert` rows a statement while that many
  /// are left, then one a statement; the refusal of the first row SQLite refuses, or the
  /// database's failure.
  ///
  /// A statement of several rows that fails is rolled back by SQLite (a statement that can
  /// fail on a constraint keeps a statement journal; https://sqlite.org/lang_conflict.html),
  /// so its rows are inserted again one a statement, to name the row refused. A failure that
  /// is not the row's (`RowBinder.refusesRow`: disk full, I/O error, interrupt), or that
  /// ended the transaction, stops there: each row would commit on its own, and no row is
  /// to blame.
  private static func insert(_ batch: RowBatch) -> (any Error)? {
    guard let binder = batch.binder?.takeUnretainedValue() else { return nil }
    var row = 0
    if let multiple = binder.insertRows?.handle {
      let count = RowBinder.rowsPerInsert
      while batch.rows - row >= count {
        var rc = SQLITE_OK
        for k in 0..<count where rc == SQLITE_OK { rc = bind(batch, row: row + k, to: multiple, from: Int32(k * batch.width)) }
        if rc == SQLITE_OK {
          rc = sqlite3_step(multiple)
          sqlite3_reset(multiple)
        }
        if rc != SQLITE_OK && rc != SQLITE_DONE {
          guard RowBinder.refusesRow(rc), sqlite3_get_autocommit(sqlite3_db_handle(multiple)) == 0 else {
            return binder.failure(rc)
          }
          break
        }
        row += count
      }
    }
    let statement = binder.insert.handle
    while row < batch.rows {
      var rc = bind(batch, row: row, to: statement, from: 0)
      if rc == SQLITE_OK {
        rc = sqlite3_step(statement)
        sqlite3_reset(statement)
        if rc == SQLITE_DONE {
          row += 1
          continue
        }
      }
      guard RowBinder.refusesRow(rc) else { return binder.failure(rc) }
      return TableAnswerError(table: binder.target.sourceName, row: batch.firstRow + row, message: binder.stepFailed(rc).message)
    }
    return nil
  }

  /// Binds the values of `row` to `statement`'s parameters after the first `offset`.
  @inline(__always)
  private static func bind(_ batch: RowBatch, row: Int, to statement: OpaquePointer, from offset: Int32) -> Int32 {
    let values = batch.values + row * batch.width
    var rc = SQLITE_OK
    for column in 0..<batch.width where rc == SQLITE_OK {
      let value = values[column]
      let index = offset + Int32(column + 1)
      switch value.kind {
      case .null: rc = sqlite3_bind_null(statement, index)
      case .integer: rc = sqlite3_bind_int64(statement, index, Int64(bitPattern: value.bits))
      case .real: rc = sqlite3_bind_double(statement, index, Double(bitPattern: value.bits))
      case .text:
        // A NULL destructor is SQLITE_STATIC: the arena outlives the step. The 64-bit
        // length takes a value of any size; past SQLite's limit the bind fails with
        // SQLITE_TOOBIG.
        rc = sqlite3_bind_text64(
          statement, index, UnsafeRawPointer(batch.arena + Int(value.bits)).assumingMemoryBound(to: CChar.self),
          UInt64(value.length), nil, UInt8(SQLITE_UTF8))
      }
    }
    return rc
  }

  private func allocate() -> UnsafeMutablePointer<RowBatch> {
    let capacity = 64 * 1024
    let batch = UnsafeMutablePointer<RowBatch>.allocate(capacity: 1)
    batch.initialize(
      to: RowBatch(
        values: .allocate(capacity: 1), width: 1, rowCapacity: 1, arena: .allocate(capacity: capacity),
        arenaCapacity: capacity))
    all.append(batch)
    return batch
  }

}
