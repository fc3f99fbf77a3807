internal import DrayModel
internal import DrayTarget
internal import DrayTransport
internal import Foundation

/// The validators of the answer an `http` step last published (RFC 9110 §8.8), sent back as
/// preconditions so that an unchanged resource costs one small request (RFC 9110 §13.1.2,
/// §13.1.3): `If-None-Match` with its `ETag`, `If-Modified-Since` with its `Last-Modified`.
/// A `304 Not Modified` leaves the table as it is and the step reports `unchanged`.
///
/// Kept by the target database the step publishes into (SQLite or PostgreSQL,
/// `KeptValidators`), written in the transaction that publishes the table (so the
/// validators always describe the rows the table holds), with the step's definition and the
/// SHA-256 of the URL sent: validators are sent only for the same step asking the same URL,
/// and a `304` keeps the table only while the store's table guard says it is intact
/// (`TargetStore.isIntact`); otherwise the step asks again without validators.
///
/// *(ours)* They are kept by a step that sends one `GET` and loads its answer (`load`, no
/// `paginate`, no `incremental`, none of its own `If-None-Match` or `If-Modified-Since`
/// headers: a 304 to page 1 of a paginated list says nothing of the pages after it), and
/// sent while its table is intact, never with `--fresh` (which keeps those of the answer it
/// loads).
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

  /// Where one step keeps its validators: the store it publishes its table into
  /// (`TargetStore.validators`, `StoreTransaction.saveValidators`).
  struct Ledger {
    let store: any TargetStore
    let job: String
    let stepID: String
    let fingerprint: String

    /// The validators kept for a request of `url` by this definition of the step, or nil.
    func read(url: String) throws -> AnswerValidators? {
      guard let kept = try store.validators(job: job, stepID: stepID), kept.fingerprint == fingerprint, kept.request == SHA256.hex(url)
      else { return nil }
      return AnswerValidators(etag: kept.etag, lastModified: kept.lastModified)
    }

    /// Keeps `validators` of the answer to `url` (none: forgets the step's) in
    /// `transaction`, the one that publishes `table`, and then arms the table's guard: a
    /// `304` may keep the table only while nothing else writes it.
    func save(_ validators: AnswerValidators?, url: String, table: String, in transaction: any StoreTransaction) throws {
      try transaction.saveValidators(
        validators.map { KeptValidators(fingerprint: fingerprint, request: SHA256.hex(url), etag: $0.etag, lastModified: $0.lastModified) },
        job: job, stepID: stepID)
      if validators != nil { try transaction.armGuard(ofTable: table) }
    }
  }
}
