internal import DrayJSON
public import DrayModel
public import Foundation

/// dray's own tables in a job's database, on every store (each store writes their SQL in its
/// dialect: SQLite's `Store` and `Journal`, PostgreSQL's `PostgresStore` and `PostgresJournal`):
///
/// - `_dray_resources(resource, scheme, fetched_at)`: each resource's scheme as last fetched
///   (`encodeScheme`);
/// - `_dray_tables(name, resource, params, source_table, content_version, etag, cache_hash,
///   row_count, loaded_at)`: one row per physical table (`TableRecord`);
/// - `_dray_runs` and `_dray_checkpoints`: the run journal (`RunRecord`, `CheckpointRecord`;
///   docs/resume.md);
/// - `_dray_http_cursors`: the kept cursor of each `incremental` step (`CursorEntry`);
/// - `_dray_http_validators`: the validators of each conditional `http` step
///   (`KeptValidators`);
/// - `_dray_http_pages`: the pages an `http` step staged (the page ledger, in the staging
///   database);
/// - `_dray_guard`: the table guard (docs/store.md, "The table guard").
///
/// A step's SQL may read them and never write them (`UserSQLError.ownTable`).
public enum Bookkeeping {
  /// The prefix of every table dray keeps for itself.
  public static let prefix = "_dray_"

  /// What `_dray_tables` records about one physical table.
  public struct TableRecord: Sendable, Equatable {
    public var name: String
    public var resource: String
    public var params: String
    public var sourceTable: String
    public var contentVersion: String?
    public var etag: String?
    public var cacheHash: String?
    public var rowCount: Int
    public var loadedAt: String?

    public init(
      name: String, resource: String, params: String, sourceTable: String, contentVersion: String?, etag: String?,
      cacheHash: String?, rowCount: Int, loadedAt: String?
    ) {
      self.name = name
      self.resource = resource
      self.params = params
      self.sourceTable = sourceTable
      self.contentVersion = contentVersion
      self.etag = etag
      self.cacheHash = cacheHash
      self.rowCount = rowCount
      self.loadedAt = loadedAt
    }
  }

  /// RFC 3339 UTC time, seconds precision.
  public static func timestamp(_ date: Date = Date()) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.string(from: date)
  }

  /// `scheme` as `_dray_resources` keeps it: JSON of its name, type, lifetime and outputs.
  public static func encodeScheme(_ scheme: ResourceScheme) -> String {
    var object: [(key: String, value: JSONValue)] = [("name", .string(scheme.name)), ("type", .string(scheme.type))]
    if let lifetime = scheme.lifetime { object.append(("lifetime", .integer(Int64(lifetime)))) }
    object.append(
      (
        "output",
        .array(
          scheme.outputs.map { table in
            .object([
              ("name", .string(table.name)),
              ("columns", .array(table.columns.map { .object([("name", .string($0.name)), ("type", .string($0.type))]) })),
            ])
          })
      ))
    return JSONValue.object(object).json
  }

  /// The scheme `encodeScheme` kept.
  /// - Throws: `JSONError` for text that is not JSON.
  public static func decodeScheme(_ json: String) throws -> ResourceScheme {
    let value = try JSONValue(parsing: json)
    let outputs = (value["output"]?.arrayValue ?? []).map { table in
      ResourceScheme.Table(
        name: table["name"]?.stringValue ?? "",
        columns: (table["columns"]?.arrayValue ?? []).map {
          ResourceScheme.Column(name: $0["name"]?.stringValue ?? "", type: $0["type"]?.stringValue ?? "TEXT")
        })
    }
    return ResourceScheme(
      name: value["name"]?.stringValue ?? "", type: value["type"]?.stringValue ?? "tabular",
      lifetime: value["lifetime"]?.intValue.map { Int($0) }, outputs: outputs, json: json)
  }
}
