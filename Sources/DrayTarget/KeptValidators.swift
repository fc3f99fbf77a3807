/// What a store keeps for an `http` step that sends conditional requests: the validators of
/// the answer it last published (RFC 9110 §8.8), with the step definition and the request
/// they belong to, in the table `_dray_http_validators` of the target database, one row per
/// step:
///
///     _dray_http_validators(job, step_id, fingerprint, request, etag, last_modified, updated_at)
///
/// Written in the transaction that publishes the step's table
/// (`StoreTransaction.saveValidators`), read back with `TargetStore.validators`. When they
/// are sent, and what a `304` may keep, is the engine's rule (`AnswerValidators`,
/// docs/http.md "Conditional requests"); a store only keeps the row.
public struct KeptValidators: Sendable, Equatable {
  /// The step's definition (its fingerprint) when it published.
  public var fingerprint: String
  /// The SHA-256 (hex) of the URL asked: a URL may hold a key, so it is not kept itself.
  public var request: String
  /// The answer's `ETag`, as the server sent it; nil when it sent none.
  public var etag: String?
  /// The answer's `Last-Modified`, as the server sent it; nil when it sent none.
  public var lastModified: String?

  public init(fingerprint: String, request: String, etag: String?, lastModified: String?) {
    self.fingerprint = fingerprint
    self.request = request
    self.etag = etag
    self.lastModified = lastModified
  }
}
