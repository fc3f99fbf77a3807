public import DrayJSON
public import DrayModel
internal import Foundation

/// The rules of applying a table answer (platform-api.md §3; docs/store.md "Deltas",
/// "Unchanged answers"), the one place they live for every store: which list of which table
/// object does what, the refusals and their messages, the missing-table check, the result
/// and which tables get their bookkeeping row and guard armed. One applier serves one load,
/// inside the store's transaction; the store reads the answer with its own mechanism (SQLite
/// streams it into prepared INSERTs, PostgreSQL copies it with `COPY`) and asks the applier
/// at each list, never at each row.
///
/// - Full answer (`data`): each table it holds is replaced once (emptied, or recreated when
///   its columns are not the scheme's), then takes the rows.
/// - Delta (its Content-Version says so): `insert_rows` are upserts (an insert for a row id
///   the table holds replaces that row), `delete_ids` apply before any insert and only to a
///   cached resource; a table that is not replaced must have the scheme's columns (checked
///   once). A delta's `data` replaces its table and is then inserted like `insert_rows`.
/// - A full answer holding `insert_rows` or `delete_ids` is refused, whatever its table.
/// - An answer that lacks a table the scheme declares loads nothing (`LoadError.missingTable`).
public final class TableAnswerApplier {
  /// One output table of the resource.
  public struct Target: Sendable {
    /// The scheme's table; its name is the answer's (the source name).
    public let table: ResourceScheme.Table
    /// The table's name in the database (`TableNaming`).
    public let physicalName: String
    /// Rows carry a leading row id (`ResourceScheme.rowIDColumn`).
    public let cached: Bool

    public var sourceName: String { table.name }
  }

  /// What the store does with one list of a table object.
  public enum ListAction: Sendable, Equatable {
    /// Its rows go into the table: with `upsert`, an insert for a row id the table holds
    /// replaces that row (a delta); without, they fill a table this load replaced.
    case rows(upsert: Bool)
    /// Its items are row ids to delete, before any insert of the answer.
    case ids
  }

  public let scheme: ResourceScheme
  /// The answer is a delta (its Content-Version says so).
  public let delta: Bool
  /// By source table name.
  public let targets: [String: Target]
  /// Tables of the scheme the answer named.
  private var named: Set<String> = []
  /// Tables the answer named that the scheme does not list.
  private var skipped = SkippedTables()
  /// Tables replaced by this load (source names).
  private var replaced: Set<String> = []
  private var deltaChecked: Set<String> = []
  private let store: any TableAnswerStore

  /// Creates the scheme's tables in `store` (`TableAnswerStore.createTables`, which checks
  /// the scheme) for a load of `scheme` and `params`.
  /// - Throws: `StoreError` (a bad scheme, a name clash), the store's errors.
  public init(scheme: ResourceScheme, params: JSONValue, delta: Bool, store: any TableAnswerStore) throws {
    self.scheme = scheme
    self.delta = delta
    self.store = store
    let names = try store.createTables(for: scheme, params: params)
    var targets: [String: Target] = [:]
    for table in scheme.outputs {
      guard let name = names[table.name], targets[table.name] == nil else { continue }
      targets[table.name] = Target(table: table, physicalName: name, cached: scheme.isCached)
    }
    self.targets = targets
  }

  /// The answer's table `name`: its target, noted as named; nil, noted as skipped, when the
  /// scheme does not list it.
  public func target(named name: String) -> Target? {
    guard let target = targets[name] else {
      skipped.add(name)
      return nil
    }
    named.insert(name)
    return target
  }

  /// Refuses a list the answer cannot hold: a delta's list in an answer whose Content-Version
  /// does not say it is a delta, whatever its table.
  public func admit(_ key: TableAnswerKey) throws(TableAnswerRefusal) {
    guard !delta, key != .data else { return }
    throw TableAnswerRefusal("the answer holds a delta ('\(key.name)') but its Content-Version does not say so; refusing to apply it")
  }

  /// What the store does with list `key` of table `source`, once the list is admitted
  /// (`admit`), after doing what the list first asks of the table: `data` replaces it
  /// (once a load); a delta's rows and ids check that it has the scheme's columns (once,
  /// unless replaced); `delete_ids` need row ids (a cached resource). May be asked again for
  /// the same table: nothing is done twice.
  /// - Returns: nil for a table the scheme does not list.
  /// - Throws: `TableAnswerRefusal` (ids of a resource without row ids), `LoadError` (a
  ///   delta onto a table without the scheme's columns), the store's errors.
  public func list(_ key: TableAnswerKey, of source: String) throws -> ListAction? {
    try admit(key)
    guard let target = targets[source] else { return nil }
    switch key {
    case .data:
      if replaced.insert(source).inserted {
        if try store.hasSchemeShape(target.physicalName, table: target.table, cached: target.cached) {
          try store.emptyTable(target.physicalName)
        } else {
          try store.recreateTable(target)
        }
      }
      return .rows(upsert: delta)
    case .insertRows:
      try checkDeltaTarget(target)
      return .rows(upsert: true)
    case .deleteIDs:
      guard target.cached else {
        throw TableAnswerRefusal(
          "the answer deletes rows by id from table \(source), whose resource has no row ids (it is not cached)")
      }
      try checkDeltaTarget(target)
      return .ids
    }
  }

  /// A delta applies only to a table with the scheme's columns (docs/store.md, "Deltas").
  private func checkDeltaTarget(_ target: Target) throws {
    guard !replaced.contains(target.sourceName), !deltaChecked.contains(target.sourceName) else { return }
    guard try store.hasSchemeShape(target.physicalName, table: target.table, cached: target.cached) else {
      throw LoadError(
        resource: scheme.name, table: target.sourceName,
        message:
          "table \(store.quoted(target.physicalName)) does not have the scheme's columns, so a delta cannot apply to it; load full data (without delta) to recreate it"
      )
    }
    deltaChecked.insert(target.sourceName)
  }

  /// Refuses item `item` of a `delete_ids` list, `token`, that is not a row id (an integer of
  /// at most 64 bits); each store reads the ids its own way.
  public static func badRowID(_ token: JSONToken, item: Int) -> TableAnswerRefusal {
    let shown = if case .number(let text) = token { PrintableText.excerpt(String(decoding: text, as: UTF8.self)) } else { "a non-number" }
    return TableAnswerRefusal("delete_ids holds row ids (integers of at most 64 bits); item \(item) is \(shown)")
  }

  /// A load stopped by its cancellation (a signal).
  public var interrupted: LoadError {
    LoadError(resource: scheme.name, message: "the load was interrupted; nothing of it was kept")
  }

  /// Ends a load whose lists are all applied: refuses an answer that lacks a table of the
  /// scheme, then computes the result and has the store record each changed table.
  ///
  /// A full answer changes the tables whose data it holds, which it emptied first: their
  /// row counts are the rows inserted. A delta brings every table to its version: the store
  /// counts its rows. Each changed table gets its bookkeeping row (`info`, with the table's
  /// own hash from `Cache-Hash-Value`) and its guard armed (`TableAnswerStore.recordLoads`).
  /// - Parameters:
  ///   - counts: runs after the missing-table check: applies what the store kept for the end
  ///     (PostgreSQL's staged delta) and gives the rows inserted and deleted, by source name.
  ///   - info: the answer's version and validators, read once the answer is applied.
  /// - Throws: `LoadError.missingTable`, the store's errors.
  public func finish(
    counts: () throws -> (inserted: [String: Int], deleted: [String: Int]), info: () -> AnswerInfo
  ) throws -> LoadResult {
    if let missing = LoadError.missingTable(of: scheme, named: named) { throw missing }
    let (inserted, deleted) = try counts()
    let info = info()
    var result = LoadResult(rowCounts: [:], inserted: [:], deleted: [:], tables: [:], skippedTables: skipped)
    var changed: [LoadedTable] = []
    for table in scheme.outputs {
      guard let target = targets[table.name] else { continue }
      let refilled = !delta && replaced.contains(table.name)
      let rows = refilled ? inserted[table.name] ?? 0 : try store.rowCount(ofTable: target.physicalName)
      result.rowCounts[table.name] = rows
      result.inserted[table.name] = inserted[table.name] ?? 0
      result.deleted[table.name] = deleted[table.name] ?? 0
      result.tables[table.name] = target.physicalName
      guard delta || refilled else { continue }
      let hash = info.cacheHash.flatMap { Self.cacheHash(for: table.name, in: $0) }
      changed.append(
        LoadedTable(
          name: target.physicalName, rowCount: rows, columns: table.columns,
          answer: AnswerInfo(contentVersion: info.contentVersion, etag: info.etag, cacheHash: hash)))
    }
    try store.recordLoads(changed)
    return result
  }

  /// The hash for `table` from a `Cache-Hash-Value` header: comma-separated, URL-encoded
  /// `<table>-Hash:<hash>` entries (platform-api.md §3).
  public static func cacheHash(for table: String, in header: String) -> String? {
    for entry in header.split(separator: ",") {
      let decoded = entry.trimmingCharacters(in: .whitespaces).removingPercentEncoding ?? String(entry)
      let prefix = "\(table)-Hash:"
      if decoded.hasPrefix(prefix) { return String(decoded.dropFirst(prefix.count)) }
    }
    return nil
  }
}

@available(*, unavailable)
extension TableAnswerApplier: Sendable {}

/// A table a load changed, as its bookkeeping row records it.
public struct LoadedTable: Sendable, Equatable {
  /// The physical name.
  public var name: String
  /// Rows in the table after the load.
  public var rowCount: Int
  /// The scheme's columns the table was loaded with (`_dray_tables.column_types`).
  public var columns: [ResourceScheme.Column]
  /// The answer's content version and `ETag`, and this table's own hash as `cacheHash`.
  public var answer: AnswerInfo

  public init(name: String, rowCount: Int, columns: [ResourceScheme.Column] = [], answer: AnswerInfo) {
    self.name = name
    self.rowCount = rowCount
    self.columns = columns
    self.answer = answer
  }
}

/// What a store does for a `TableAnswerApplier`, inside the load's transaction, each with
/// its own mechanism.
public protocol TableAnswerStore: AnyObject {
  /// Checks the scheme (`SchemeLimits.check`), records it and creates its missing tables
  /// with their bookkeeping rows.
  /// - Returns: the physical names, by source table name.
  func createTables(for scheme: ResourceScheme, params: JSONValue) throws -> [String: String]
  /// True when table `name` exists with exactly the columns the store gives a table of
  /// `table` (the row id first when `cached`).
  func hasSchemeShape(_ name: String, table: ResourceScheme.Table, cached: Bool) throws -> Bool
  /// Deletes every row of table `name`, which has the scheme's columns.
  func emptyTable(_ name: String) throws
  /// Drops the table of `target` and creates it again, empty, with the scheme's columns.
  func recreateTable(_ target: TableAnswerApplier.Target) throws
  /// Rows in table `name`.
  func rowCount(ofTable name: String) throws -> Int
  /// Updates the bookkeeping row of each table (`_dray_tables`: content version, `ETag`,
  /// hash, row count, time, the columns loaded with) and arms its guard on what the load
  /// left.
  func recordLoads(_ tables: [LoadedTable]) throws
  /// Table `name` as the store's SQL spells it, for a message: `"R__t"`.
  func quoted(_ name: String) -> String
}

/// A store's tables as the rules of unchanged answers and deltas read them
/// (`TableAnswerApplier.holdsAnswer`, `deltaBase`).
public protocol KeptTables {
  var naming: TableNaming { get }
  /// As `TableAnswerStore.hasSchemeShape`.
  func hasSchemeShape(_ name: String, table: ResourceScheme.Table, cached: Bool) throws -> Bool
  /// Whether table `name` still holds exactly what dray last wrote (its guard).
  func isIntact(table name: String) throws -> Bool
  /// The content version, `ETag` and the table's own hash (as `cacheHash`) recorded for
  /// table `name`; nil when it has no bookkeeping row.
  func recordedAnswer(ofTable name: String) throws -> AnswerInfo?
}

extension TableAnswerApplier {
  /// Whether every output table of `scheme` and `params` already holds the full answer
  /// `info` describes, so that it need not be loaded again (docs/store.md, "Unchanged
  /// answers"). *(ours)* The platform documents `Cache-Hash-Value` and `ETag` but not what
  /// they are computed over (platform-api.md §3), so both must say the same: each output
  /// table is kept (it has the scheme's columns and is intact: nothing changed it since dray
  /// loaded it) and records the answer's hash for that table (which every table must have),
  /// the same strong `ETag` and the same content version.
  public static func holdsAnswer(_ info: AnswerInfo, scheme: ResourceScheme, params: JSONValue, in tables: some KeptTables) throws -> Bool {
    guard let cacheHash = info.cacheHash, let etag = info.etag, !etag.hasPrefix("W/"), !scheme.outputs.isEmpty else { return false }
    for table in scheme.outputs {
      let name = tables.naming.physicalName(resource: scheme.name, table: table.name, params: params)
      guard let hash = Self.cacheHash(for: table.name, in: cacheHash),
        try tables.hasSchemeShape(name, table: table, cached: scheme.isCached), try tables.isIntact(table: name),
        try tables.recordedAnswer(ofTable: name) == AnswerInfo(contentVersion: info.contentVersion, etag: etag, cacheHash: hash)
      else { return false }
    }
    return true
  }

  /// The version a delta for `scheme` and `params` can start from, or nil when full data is
  /// needed (docs/store.md, "Deltas"): only a cached resource (rows with row ids) takes
  /// deltas, and every output table must have the scheme's columns, be intact (a delta would
  /// keep any edit made since dray wrote it) and record the same content version (`v6`).
  public static func deltaBase(scheme: ResourceScheme, params: JSONValue, in tables: some KeptTables) throws -> String? {
    guard scheme.isCached, !scheme.outputs.isEmpty else { return nil }
    var version: String?
    for table in scheme.outputs {
      let name = tables.naming.physicalName(resource: scheme.name, table: table.name, params: params)
      guard try tables.hasSchemeShape(name, table: table, cached: true), try tables.isIntact(table: name),
        let recorded = try tables.recordedAnswer(ofTable: name)?.contentVersion
      else { return nil }
      if let version, version != recorded { return nil }
      version = recorded
    }
    return version
  }
}
