public import DrayModel
public import DrayTarget
internal import Foundation

extension Store {
  /// `StoreTransaction.load` on SQLite, inside the caller's transaction, under `applier`'s
  /// rules (`TableAnswerApplier`: what each list does, the refusals, the result and the
  /// bookkeeping): streams the answer into prepared INSERTs (`TableLoader`), 1 MiB of the
  /// file at a time (of a part still growing, with `growing`, as it arrives).
  /// - Throws: `LoadError` (naming resource, table, row, column; the missing table),
  ///   `StoreError`, `SQLiteError`.
  func loadInTransaction(
    file: String, growing: GrowingFile?, applier: TableAnswerApplier, cancellation: Cancellation?, info: () -> AnswerInfo
  ) throws -> LoadResult {
    var targets: [String: TableLoader.Target] = [:]
    for (source, target) in applier.targets {
      var columns = target.table.columns
      if target.cached { columns.insert(.init(name: ResourceScheme.rowIDColumn, type: "BIGINT"), at: 0) }
      var kinds = columns.map { ColumnKind(schemeType: $0.type) }
      if target.cached { kinds[0] = .rowID }
      targets[source] = TableLoader.Target(
        sourceName: source, physicalName: target.physicalName, columns: columns, kinds: kinds, cached: target.cached)
    }
    let loader = TableLoader(
      database: database, applier: applier, targets: targets, cancellation: cancellation, growing: growing)
    // dray's own writes happen without the guard; it is armed again on what they leave.
    for target in targets.values { try TableGuard.disarm(target.physicalName, in: database) }
    let outcome = try loader.run(file: file)
    var result = try applier.finish(counts: { (outcome.inserted, outcome.deleted) }, info: info)
    result.mismatches = outcome.mismatches
    result.mismatchCount = outcome.mismatchCount
    return result
  }

  /// The version and validators `_dray_tables` records for physical table `name`, or nil
  /// when it has no row (`KeptTables`).
  public func recordedAnswer(ofTable name: String) throws -> AnswerInfo? {
    let rows = try database.rows("SELECT content_version, etag, cache_hash FROM _dray_tables WHERE name = ?", [.text(name)])
    guard let row = rows.first else { return nil }
    func text(_ column: String) throws -> String? { if case .text(let text) = try row[column] { text } else { nil } }
    return AnswerInfo(contentVersion: try text("content_version"), etag: try text("etag"), cacheHash: try text("cache_hash"))
  }

  /// Whether every output table already holds the full answer `info` describes
  /// (`TableAnswerApplier.holdsAnswer`); intact tables by `TableGuard.isIntact` (a table
  /// that SQL or anyone else changed is loaded again).
  public func holdsAnswer(_ info: AnswerInfo, scheme: ResourceScheme, params: JSONValue) throws -> Bool {
    try TableAnswerApplier.holdsAnswer(info, scheme: scheme, params: params, in: self)
  }

  /// The version a delta can start from (`TableAnswerApplier.deltaBase`).
  public func deltaBase(scheme: ResourceScheme, params: JSONValue) throws -> String? {
    try TableAnswerApplier.deltaBase(scheme: scheme, params: params, in: self)
  }
}

extension Store: KeptTables {}
