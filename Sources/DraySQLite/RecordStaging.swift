public import DrayModel
public import DrayTarget
internal import Foundation

/// SQLite as the `RecordStaging` of an `http` step: the job's database at `database.path`,
/// or beside a server database a local file. Staging tables are `RecordTable`s; the page
/// ledger is the table
///
///     _dray_http_pages(job, step_id, lineage, fingerprint, pages, rows, bytes, next, updated_at)
///
/// one row per step, written in the transaction that commits a page's rows, so that after
/// a kill it names exactly the pages whose rows are staged.
public final class SQLiteStaging: RecordStaging {
  let database: Database

  /// Opens (creating when missing) the database at `path` and its page ledger; running
  /// statements stop with an error once `cancellation` is cancelled.
  /// - Throws: `StoreError.cannotCreateFolder`; `SQLiteError`.
  public init(path: String, cancellation: Cancellation) throws {
    do {
      try Folders.create(holding: path)
    } catch {
      throw StoreError.cannotCreateFolder(error)
    }
    database = try Database(path: path)
    database.stopWhen(cancellation)
    try database.execute(Store.createStatement(Bookkeeping.pages))
  }

  public func pages(job: String, stepID: String) throws -> StagedPages? {
    let rows = try database.rows(
      "SELECT lineage, fingerprint, pages, rows, bytes, next FROM _dray_http_pages WHERE job = ? AND step_id = ?",
      [.text(job), .text(stepID)])
    guard let row = rows.first, case .text(let lineage) = try row["lineage"], case .text(let fingerprint) = try row["fingerprint"],
      case .integer(let pages) = try row["pages"], case .integer(let count) = try row["rows"],
      case .integer(let bytes) = try row["bytes"]
    else { return nil }
    let next: String? = if case .text(let text) = try row["next"] { text } else { nil }
    return StagedPages(lineage: lineage, fingerprint: fingerprint, pages: Int(pages), rows: Int(count), bytes: bytes, next: next)
  }

  public func cursor(job: String, stepID: String) throws -> CursorEntry {
    try Store.cursor(in: database, job: job, stepID: stepID)
  }

  public func table(_ name: String) throws -> any StagedTable { try RecordTable(database: database, name: name) }

  /// A `BEGIN IMMEDIATE` transaction (`Database.transaction`).
  public func write<T>(_ body: (any StagingTransaction) throws -> T) throws -> T {
    try database.transaction { try body(SQLiteStagingTransaction(database: database)) }
  }
}

/// An open transaction of a `SQLiteStaging`.
final class SQLiteStagingTransaction: StagingTransaction {
  let database: Database

  init(database: Database) { self.database = database }

  func savePages(_ pages: StagedPages, job: String, stepID: String) throws {
    let statement = try database.cached(
      """
      INSERT INTO _dray_http_pages(job, step_id, lineage, fingerprint, pages, rows, bytes, next, updated_at)
      VALUES (?,?,?,?,?,?,?,?,?)
      ON CONFLICT(job, step_id) DO UPDATE SET lineage = excluded.lineage, fingerprint = excluded.fingerprint,
        pages = excluded.pages, rows = excluded.rows, bytes = excluded.bytes, next = excluded.next,
        updated_at = excluded.updated_at
      """)
    try statement.bind([
      .text(job), .text(stepID), .text(pages.lineage), .text(pages.fingerprint), .integer(Int64(pages.pages)),
      .integer(Int64(pages.rows)), .integer(pages.bytes), pages.next.map { .text($0) } ?? .null, .text(updatedAt()),
    ])
    _ = try statement.step()
  }

  /// Now, as RFC 3339 with fractional seconds.
  private func updatedAt() -> String {
    Bookkeeping.rfc3339(.now, milliseconds: true)
  }

  func clearPages(job: String, stepID: String) throws {
    let statement = try database.cached("DELETE FROM _dray_http_pages WHERE job = ? AND step_id = ?")
    try statement.bind([.text(job), .text(stepID)])
    _ = try statement.step()
  }

  /// The table in the main database: a target's transaction may hold a temporary copy of
  /// the same name (`TableWrites.stage`).
  func dropTable(_ name: String) throws {
    try database.execute("DROP TABLE IF EXISTS main.\(Database.quote(name))")
  }

  func saveCursor(_ entry: CursorEntry, job: String, stepID: String) throws {
    let ledger = CursorLedger(database: database, job: job, stepID: stepID)
    try ledger.createTable()
    try ledger.save(entry, at: Bookkeeping.timestamp())
  }
}

@available(*, unavailable)
extension SQLiteStagingTransaction: Sendable {}
