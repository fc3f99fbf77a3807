internal import DrayJSON
internal import DrayModel
internal import DraySQLite
internal import DrayTarget
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
///
/// No secret is stored: a server's next-page link often repeats the request's key
/// (`?api_key=...`), which is kept as `***` and put back from the manifest when read (see
/// `Next.stored`).
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

    /// What stands for a secret value in a stored link.
    static let mask = "***"

    /// The JSON kept in the ledger, which holds no secret `redactor` knows. The value of
    /// each query parameter of `url` that holds a secret and is the value of the parameter
    /// of the same name in the step's `query` becomes `***`, its name listed in `masked`,
    /// and is put back from `query` when read (`init(stored:query:)`). A secret anywhere
    /// else (another parameter, the path, the cursor) has nothing to be put back from: the
    /// link is kept masked and marked `restart`, and a resumed run starts the step again
    /// from its first page (its staged rows are dropped), which loses no row.
    func stored(redactor: Redactor, query: [QueryItem]) -> String {
      var masked: [String] = []
      let url = Next.mapQuery(url) { name, value in
        guard redactor.redact(String(value)) != value, let decoded = Next.decoded(value),
          query.contains(where: { $0.name == name && $0.value == decoded })
        else { return nil }
        masked.append(name)
        return Next.mask
      }
      let restart = redactor.redact(url) != url || cursor.map { redactor.redact($0) != $0 } == true
      var o: [(key: String, value: JSONValue)] = [("url", .string(redactor.redact(url)))]
      if let offset { o.append(("offset", .integer(Int64(offset)))) }
      if let cursor { o.append(("cursor", .string(redactor.redact(cursor)))) }
      if let since { o.append(("since", .string(since))) }
      if !masked.isEmpty { o.append(("masked", .array(masked.map { .string($0) }))) }
      if restart { o.append(("restart", .bool(true))) }
      return JSONValue.object(o).json
    }

    init(url: String, offset: Int? = nil, cursor: String? = nil, since: String? = nil) {
      self.url = url
      self.offset = offset
      self.cursor = cursor
      self.since = since
    }

    /// The request `stored(redactor:query:)` kept, with each masked value put back from the
    /// step's `query`; nil when it cannot be (marked `restart`, or a masked name the step's
    /// `query` no longer has), so that the step starts again from its first page.
    init?(stored json: String, query: [QueryItem]) {
      guard let value = try? JSONValue(parsing: json), let stored = value["url"]?.stringValue, value["restart"] == nil
      else { return nil }
      let masked = Set((value["masked"]?.arrayValue ?? []).compactMap(\.stringValue))
      var missing = false
      url = Next.mapQuery(stored) { name, value in
        guard masked.contains(name), value == Next.mask else { return nil }
        guard let item = query.first(where: { $0.name == name }) else {
          missing = true
          return nil
        }
        return Redactor.percentEncoded(item.value)
      }
      guard !missing else { return nil }
      offset = value["offset"]?.intValue.map { Int($0) }
      cursor = value["cursor"]?.stringValue
      since = value["since"]?.stringValue
    }

    /// `url` with the value of each query parameter `change` gives a new one for (it is
    /// given the decoded name and the value as written); the rest as written.
    static func mapQuery(_ url: String, _ change: (_ name: String, _ value: Substring) -> String?) -> String {
      guard let mark = url.firstIndex(of: "?") else { return url }
      let end = url[mark...].firstIndex(of: "#") ?? url.endIndex
      let pairs = url[url.index(after: mark)..<end].split(separator: "&", omittingEmptySubsequences: false).map { pair in
        guard let equals = pair.firstIndex(of: "="), let name = decoded(pair[..<equals]),
          let value = change(name, pair[pair.index(after: equals)...])
        else { return String(pair) }
        return pair[...equals] + value
      }
      return String(url[...mark]) + pairs.joined(separator: "&") + url[end...]
    }

    /// A query name or value percent-decoded, `+` read as a space
    /// (application/x-www-form-urlencoded).
    static func decoded(_ text: Substring) -> String? {
      text.replacing("+", with: " ").removingPercentEncoding
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
  /// The secrets no stored link may hold, and the step's query parameters masked values
  /// are put back from (`Next.stored`).
  let redactor: Redactor
  let query: [QueryItem]

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
      guard let parsed = Next(stored: json, query: query) else { return nil }
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
      .integer(Int64(progress.rows)), .integer(progress.bytes),
      progress.next.map { .text($0.stored(redactor: redactor, query: query)) } ?? .null,
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
