public import DrayModel
public import DrayTarget
internal import Foundation

extension Store {
  /// `StoreTransaction.load` on SQLite, inside the caller's transaction: streams the answer
  /// into prepared INSERTs (`TableLoader`), 1 MiB of the file at a time (of a part still
  /// growing, with `growing`, as it arrives).
  ///
  /// A full answer replaces the rows of each table it names (recreating a table whose
  /// columns are no longer the scheme's); a delta deletes `delete_ids`, then inserts
  /// `insert_rows`. The bookkeeping row of each table changed records `info` and the new
  /// row count. An answer that lacks a table the scheme declares loads nothing.
  /// - Throws: `LoadError` (naming resource, table, row, column; the missing table),
  ///   `StoreError`, `SQLiteError`.
  func loadInTransaction(
    file: String, growing: GrowingFile?, scheme: ResourceScheme, params: JSONValue, delta: Bool, cancellation: Cancellation?,
    info: () -> AnswerInfo
  ) throws -> LoadResult {
    try SchemeLimits.check(scheme, for: Store.schemeLimits)
    var targets: [String: TableLoader.Target] = [:]
    for table in scheme.outputs {
      var columns = table.columns
      if scheme.isCached { columns.insert(.init(name: Bookkeeping.rowIDColumn, type: "BIGINT"), at: 0) }
      var kinds = columns.map { ColumnKind(schemeType: $0.type) }
      if scheme.isCached { kinds[0] = .rowID }
      targets[table.name] = TableLoader.Target(
        sourceName: table.name, physicalName: naming.physicalName(resource: scheme.name, table: table.name, params: params),
        columns: columns, kinds: kinds, cached: scheme.isCached)
    }
    // `SchemeLimits.check` refused two output tables of one name above; never trap on one anyway.
    let tables = Dictionary(scheme.outputs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    try saveScheme(scheme)
    for table in scheme.outputs {
      let name = targets[table.name]!.physicalName
      try claim(name, resource: scheme.name, table: table.name, params: params)
      try database.execute(Store.createTableSQL(name: name, table: table, cached: scheme.isCached))
    }
    let loader = TableLoader(
      database: database, resource: scheme.name, targets: targets, isDelta: delta,
      replaceTable: { target in
        let table = tables[target.sourceName]!
        let quoted = Database.quote(target.physicalName)
        if try self.hasSchemeShape(target.physicalName, table: table, cached: target.cached) {
          try self.database.execute("DELETE FROM \(quoted)")
        } else {
          try self.database.execute("DROP TABLE IF EXISTS \(quoted)")
          try self.database.execute(Store.createTableSQL(name: target.physicalName, table: table, cached: target.cached))
        }
      },
      checkDeltaTarget: { target in
        let table = tables[target.sourceName]!
        guard try self.hasSchemeShape(target.physicalName, table: table, cached: target.cached) else {
          throw LoadError(
            resource: scheme.name, table: target.sourceName,
            message:
              "table \(Database.quote(target.physicalName)) does not have the scheme's columns, so a delta cannot apply to it; load full data (without delta) to recreate it"
          )
        }
      }, cancellation: cancellation, growing: growing)
    // dray's own writes happen without the guard; it is armed again on what they leave.
    for target in targets.values { try TableGuard.disarm(target.physicalName, in: database) }
    let outcome = try loader.run(file: file)
    if let missing = LoadError.missingTable(of: scheme, named: outcome.named) { throw missing }
    var result = LoadResult(
      rowCounts: [:], inserted: [:], deleted: [:], tables: [:], mismatches: outcome.mismatches,
      mismatchCount: outcome.mismatchCount, skippedTables: outcome.skipped)
    let now = Bookkeeping.timestamp()
    let info = info()
    for table in scheme.outputs {
      let name = targets[table.name]!.physicalName
      // A full answer empties a table before refilling it, so its rows are the ones inserted.
      let refilled = !delta && outcome.replaced.contains(table.name)
      let rows = refilled ? outcome.inserted[table.name] ?? 0 : try rowCount(ofTable: name)
      result.rowCounts[table.name] = rows
      result.inserted[table.name] = outcome.inserted[table.name] ?? 0
      result.deleted[table.name] = outcome.deleted[table.name] ?? 0
      result.tables[table.name] = name
      // A full answer changes the tables whose data it holds; a delta brings every table to its version.
      guard delta || refilled else { continue }
      let record = try database.cached(
        """
        INSERT INTO _dray_tables(name, resource, params, source_table, content_version, etag, cache_hash, row_count, loaded_at)
        VALUES (?,?,?,?,?,?,?,?,?)
        ON CONFLICT(name) DO UPDATE SET content_version = excluded.content_version, etag = excluded.etag,
          cache_hash = excluded.cache_hash, row_count = excluded.row_count, loaded_at = excluded.loaded_at
        """)
      let hash = info.cacheHash.flatMap { AnswerInfo.cacheHash(for: table.name, in: $0) }
      try record.bind([
        .text(name), .text(scheme.name), .text(params.canonicalJSON), .text(table.name),
        info.contentVersion.map { .text($0) } ?? .null, info.etag.map { .text($0) } ?? .null,
        hash.map { .text($0) } ?? .null, .integer(Int64(rows)), .text(now),
      ])
      _ = try record.step()
      try TableGuard.arm(name, in: database)
    }
    return result
  }

  /// The content version recorded for a physical table, e.g. `v6`.
  public func contentVersion(of physicalName: String) throws -> String? {
    let rows = try database.rows("SELECT content_version FROM _dray_tables WHERE name = ?", [.text(physicalName)])
    if case .text(let v)? = rows.first?.first?.1 { return v }
    return nil
  }

  /// Whether every output table of `scheme` and `params` already holds the full answer
  /// `info` describes (`AnswerInfo.isHeld`); intact tables by `TableGuard.isIntact` (a table
  /// that SQL or anyone else changed is loaded again).
  public func holdsAnswer(_ info: AnswerInfo, scheme: ResourceScheme, params: JSONValue) throws -> Bool {
    try info.isHeld(
      by: scheme, params: params, naming: naming,
      kept: { name, table in try hasSchemeShape(name, table: table, cached: scheme.isCached) && TableGuard.isIntact(name, in: database) },
      recorded: { name in
        try database.rows("SELECT cache_hash, etag, content_version FROM _dray_tables WHERE name = ?", [.text(name)]).first.map {
          $0.map { if case .text(let text) = $0.1 { text } else { nil } }
        }
      })
  }

  /// The version a delta for `scheme` and `params` can start from, or nil when full data is
  /// needed: every output table must exist with the scheme's columns, be unchanged since
  /// dray wrote it (`TableGuard.isIntact`: a delta would keep any edit made since) and
  /// record the same content version (`v6`). Only a cached resource (rows with row ids) takes deltas.
  public func deltaBase(scheme: ResourceScheme, params: JSONValue) throws -> String? {
    guard scheme.isCached, !scheme.outputs.isEmpty else { return nil }
    var version: String?
    for table in scheme.outputs {
      let name = naming.physicalName(resource: scheme.name, table: table.name, params: params)
      guard try hasSchemeShape(name, table: table, cached: true), try TableGuard.isIntact(name, in: database),
        let v = try contentVersion(of: name)
      else { return nil }
      if let version, version != v { return nil }
      version = v
    }
    return version
  }
}
