internal import DrayJSON
internal import DrayModel
internal import DrayStore
internal import Foundation

/// Where a paginated `http` step stands: pages committed, and the request of the next page.
///
/// Kept in the table `_dray_http_pages` of the job's journal database (the target database
/// when the job has one), one row per step:
///
///     _dray_http_pages(job, step_id, lineage, fingerprint, pages, rows, bytes, next, updated_at)
///
/// A page's rows and this row are written in one transaction, so after a kill the row names
/// exactly the pages whose rows are in the staging table. A later run resumes from `next`
/// only when it continues the same run lineage and the step's definition is unchanged
/// (same fingerprint); otherwise the step starts again from its first page. The row is
/// removed in the transaction that publishes the table and records the step's checkpoint.
struct PageLedger {
  /// The request of the next page.
  struct Next: Sendable, Equatable {
    var url: String
    /// The offset the URL asks for (offset pagination), or its page number (page
    /// pagination).
    var offset: Int?
    /// The cursor the URL sends (cursor pagination).
    var cursor: String?
    /// The incremental cursor every page of this run sends (`incremental.param`), when
    /// the pages are built from the step's URL.
    var since: String?

    var json: String {
      var o: [(key: String, value: JSONValue)] = [("url", .string(url))]
      if let offset { o.append(("offset", .integer(Int64(offset)))) }
      if let cursor { o.append(("cursor", .string(cursor))) }
      if let since { o.append(("since", .string(since))) }
      return JSONValue.object(o).json
    }

    init(url: String, offset: Int? = nil, cursor: String? = nil, since: String? = nil) {
      self.url = url
      self.offset = offset
      self.cursor = cursor
      self.since = since
    }

    init?(json: String) {
      guard let value = try? JSONValue(parsing: json), let url = value["url"]?.stringValue else { return nil }
      self.url = url
      self.offset = value["offset"]?.intValue.map { Int($0) }
      self.cursor = value["cursor"]?.stringValue
      self.since = value["since"]?.stringValue
    }
  }

  /// What the ledger holds for a step.
  struct Progress: Sendable, Equatable {
    var pages = 0
    var rows = 0
    var bytes: Int64 = 0
    /// Nil when the last committed page was the last.
    var next: Next?
  }

  let database: Database
  let job: String
  let stepID: String
  let lineage: String
  let fingerprint: String

  static let schema = """
    CREATE TABLE IF NOT EXISTS _dray_http_pages(
      job TEXT NOT NULL, step_id TEXT NOT NULL, lineage TEXT NOT NULL, fingerprint TEXT NOT NULL,
      pages INTEGER NOT NULL, rows INTEGER NOT NULL, bytes INTEGER NOT NULL, next TEXT,
      updated_at TEXT NOT NULL, PRIMARY KEY(job, step_id))
    """

  func createTable() throws {
    try database.execute(PageLedger.schema)
  }

  /// The progress a run may resume from: same lineage and fingerprint, and a next page.
  func resumable() throws -> Progress? {
    let rows = try database.rows(
      "SELECT lineage, fingerprint, pages, rows, bytes, next FROM _dray_http_pages WHERE job = ? AND step_id = ?",
      [.text(job), .text(stepID)])
    guard let row = rows.first, row[0].1 == .text(lineage), row[1].1 == .text(fingerprint),
      case .integer(let pages) = row[2].1, case .integer(let count) = row[3].1, case .integer(let bytes) = row[4].1
    else { return nil }
    var next: Next?
    if case .text(let json) = row[5].1 {
      guard let parsed = Next(json: json) else { return nil }
      next = parsed
    }
    return Progress(pages: Int(pages), rows: Int(count), bytes: bytes, next: next)
  }

  /// Records `progress`, inside the caller's transaction when there is one.
  func save(_ progress: Progress) throws {
    let statement = try database.cached(
      """
      INSERT INTO _dray_http_pages(job, step_id, lineage, fingerprint, pages, rows, bytes, next, updated_at)
      VALUES (?,?,?,?,?,?,?,?,?)
      ON CONFLICT(job, step_id) DO UPDATE SET lineage = excluded.lineage, fingerprint = excluded.fingerprint,
        pages = excluded.pages, rows = excluded.rows, bytes = excluded.bytes, next = excluded.next,
        updated_at = excluded.updated_at
      """)
    try statement.bind([
      .text(job), .text(stepID), .text(lineage), .text(fingerprint), .integer(Int64(progress.pages)),
      .integer(Int64(progress.rows)), .integer(progress.bytes), progress.next.map { .text($0.json) } ?? .null,
      .text(RunReport.rfc3339(.now)),
    ])
    _ = try statement.step()
  }

  /// Forgets the step's progress.
  func clear() throws {
    let statement = try database.cached("DELETE FROM _dray_http_pages WHERE job = ? AND step_id = ?")
    try statement.bind([.text(job), .text(stepID)])
    _ = try statement.step()
  }
}
