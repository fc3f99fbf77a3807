internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import Foundation

/// Where a paginated `http` step stands: pages committed, and the request of the next page.
///
/// Kept in the page ledger of the step's staging database (`RecordStaging`: the job's
/// SQLite database, a local file beside a server database, or without `load` the journal's
/// SQLite file), one entry per step (`StagedPages`).
///
/// A page's rows and this entry are written in one transaction, so after a kill the row names
/// exactly the pages whose rows are in the staging table. A later run resumes from `next`
/// only when it continues the same run lineage and the step's definition is unchanged
/// (same fingerprint); otherwise the step starts again from its first page. The entry is
/// removed once the step has published its records and recorded its checkpoint.
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

  let staging: any RecordStaging
  let job: String
  let stepID: String
  let lineage: String
  let fingerprint: String
  /// The secrets no stored link may hold, and the step's query parameters masked values
  /// are put back from (`Next.stored`).
  let redactor: Redactor
  let query: [QueryItem]

  /// The progress a run may resume from: same lineage and fingerprint, and a next page.
  func resumable() throws -> Progress? {
    guard let kept = try staging.pages(job: job, stepID: stepID), kept.lineage == lineage, kept.fingerprint == fingerprint
    else { return nil }
    var next: Next?
    if let json = kept.next {
      guard let parsed = Next(stored: json, query: query) else { return nil }
      next = parsed
    }
    return Progress(pages: kept.pages, rows: kept.rows, bytes: kept.bytes, next: next)
  }

  /// Records `progress` in `transaction`, with the page's rows.
  func save(_ progress: Progress, in transaction: any StagingTransaction) throws {
    let pages = StagedPages(
      lineage: lineage, fingerprint: fingerprint, pages: progress.pages, rows: progress.rows, bytes: progress.bytes,
      next: progress.next.map { $0.stored(redactor: redactor, query: query) })
    try transaction.savePages(pages, job: job, stepID: stepID)
  }

  /// Forgets the step's progress.
  func clear(in transaction: any StagingTransaction) throws {
    try transaction.clearPages(job: job, stepID: stepID)
  }
}
