internal import DrayModel
internal import DrayTarget

/// `_dray_http_validators` in an SQLite database (`KeptValidators`).
struct ValidatorLedger {
  let database: Database

  /// The row of step `stepID` of `job`; nil when there is none (or no table).
  func read(job: String, stepID: String) throws -> KeptValidators? {
    guard try database.tableExists("_dray_http_validators") else { return nil }
    let rows = try database.rows(
      "SELECT fingerprint, request, etag, last_modified FROM _dray_http_validators WHERE job = ? AND step_id = ?",
      [.text(job), .text(stepID)])
    guard let row = rows.first else { return nil }
    func text(_ column: String) throws -> String? {
      if case .text(let t) = try row[column] { return t }
      return nil
    }
    return KeptValidators(
      fingerprint: try text("fingerprint") ?? "", request: try text("request") ?? "", etag: try text("etag"),
      lastModified: try text("last_modified"))
  }

  /// Keeps `validators` for step `stepID` of `job` (nil: forgets the step's), inside the
  /// caller's transaction; creates the table when missing.
  func save(_ validators: KeptValidators?, job: String, stepID: String) throws {
    _ = try database.execute(Store.createStatement(Bookkeeping.validators))
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
        .text(job), .text(stepID), .text(validators.fingerprint), .text(validators.request), validators.etag.map { .text($0) } ?? .null,
        validators.lastModified.map { .text($0) } ?? .null, .text(Bookkeeping.timestamp()),
      ])
  }
}
