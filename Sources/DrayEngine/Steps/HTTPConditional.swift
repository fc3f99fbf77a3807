internal import DrayModel
internal import DrayStore
internal import DrayTransport
internal import Foundation

/// The validators of the answer an `http` step last published (RFC 9110 §8.8), sent back as
/// preconditions so that an unchanged resource costs one small request (RFC 9110 §13.1.2,
/// §13.1.3): `If-None-Match` with its `ETag`, `If-Modified-Since` with its `Last-Modified`.
/// A `304 Not Modified` leaves the table as it is and the step reports `unchanged`.
///
/// Kept in the table `_dray_http_validators` of the job's database, one row per step,
/// written in the transaction that publishes the table (so the validators always describe
/// the rows the table holds):
///
///     _dray_http_validators(job, step_id, fingerprint, request, etag, last_modified, updated_at)
///
/// `fingerprint` is the step's definition and `request` the SHA-256 of the URL sent (which
/// may hold a key, so it is not stored itself): validators are sent only for the same step
/// asking the same URL. *(ours)* They are kept by a step that sends one `GET` and loads its
/// answer (`load`, no `paginate`, no `incremental`, none of its own `If-None-Match` or
/// `If-Modified-Since` headers: a 304 to page 1 of a paginated list says nothing of the
/// pages after it), and sent while its table exists, never with `--fresh` (which keeps
/// those of the answer it loads).
struct AnswerValidators: Equatable {
  var etag: String?
  var lastModified: String?

  /// The validators of `headers`; nil when the answer gave none.
  init?(_ headers: HTTPHeaders) {
    etag = headers["ETag"]
    lastModified = headers["Last-Modified"]
    if etag == nil && lastModified == nil { return nil }
  }

  init(etag: String?, lastModified: String?) {
    self.etag = etag
    self.lastModified = lastModified
  }

  /// The preconditions to send: `If-None-Match` (weak comparison, RFC 9110 §13.1.2, so a
  /// weak ETag serves too) and `If-Modified-Since`, which a server that knows the first
  /// ignores (§13.1.3).
  var preconditions: [HTTPHeader] {
    (etag.map { [HTTPHeader("If-None-Match", $0)] } ?? []) + (lastModified.map { [HTTPHeader("If-Modified-Since", $0)] } ?? [])
  }

  /// Whether `options` keeps validators and sends preconditions (see the type's rules).
  static func apply(to options: HTTPStep) -> Bool {
    options.load != nil && options.paginate == nil && options.incremental == nil && options.method == .get
      && !options.headers.contains { ["if-none-match", "if-modified-since"].contains($0.name.lowercased()) }
  }

  /// The ledger of one step in `database`.
  struct Ledger {
    let database: Database
    let job: String
    let stepID: String
    let fingerprint: String

    func createTable() throws {
      _ = try database.execute(
        """
        CREATE TABLE IF NOT EXISTS _dray_http_validators(
          job TEXT NOT NULL, step_id TEXT NOT NULL, fingerprint TEXT NOT NULL, request TEXT NOT NULL, etag TEXT,
          last_modified TEXT, updated_at TEXT NOT NULL, PRIMARY KEY(job, step_id))
        """)
    }

    /// The validators kept for a request of `url` by this definition of the step, or nil.
    func read(url: String) throws -> AnswerValidators? {
      let rows = try database.rows(
        "SELECT etag, last_modified FROM _dray_http_validators WHERE job = ? AND step_id = ? AND fingerprint = ? AND request = ?",
        [.text(job), .text(stepID), .text(fingerprint), .text(SHA256.hex(url))])
      guard let row = rows.first else { return nil }
      func text(_ value: SQLValue) -> String? {
        if case .text(let t) = value { return t }
        return nil
      }
      return AnswerValidators(etag: text(row[0].1), lastModified: text(row[1].1))
    }

    /// Keeps `validators` of the answer to `url` (none: forgets the step's), inside the
    /// caller's transaction.
    func save(_ validators: AnswerValidators?, url: String, at time: String) throws {
      guard let validators else {
        _ = try database.rows("DELETE FROM _dray_http_validators WHERE job = ? AND step_id = ?", [.text(job), .text(stepID)])
        return
      }
      _ = try database.rows(
        """
        INSERT INTO _dray_http_validators(job, step_id, fingerprint, request, etag, last_modified, updated_at)
        VALUES (?,?,?,?,?,?,?)
        ON CONFLICT(job, step_id) DO UPDATE SET fingerprint = excluded.fingerprint, request = excluded.request,
          etag = excluded.etag, last_modified = excluded.last_modified, updated_at = excluded.updated_at
        """,
        [
          .text(job), .text(stepID), .text(fingerprint), .text(SHA256.hex(url)), validators.etag.map { .text($0) } ?? .null,
          validators.lastModified.map { .text($0) } ?? .null, .text(time),
        ])
    }
  }
}
