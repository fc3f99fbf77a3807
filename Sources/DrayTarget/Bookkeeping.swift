internal import DrayJSON
public import DrayModel
public import Foundation

/// dray's own tables in a job's database, declared once for every store (`Table`: each store
/// names the column types in its dialect): `resources`, `tables`, `runs`, `checkpoints`,
/// `cursors`, `validators`, `pages`; beside them each store keeps its table guard
/// (docs/store.md, "The table guard").
///
/// A step's SQL may read them and never write them (`UserSQLError.ownTable`).
public enum Bookkeeping {
  /// The prefix of every table dray keeps for itself.
  public static let prefix = "_dray_"

  /// One of dray's own tables, declared once for every store: its columns in order, each
  /// store naming their types in its dialect (`createStatement(types:)`).
  public struct Table: Sendable {
    /// What a column holds.
    public enum ColumnType: Sendable {
      /// Text (JSON text included).
      case text
      /// A 64-bit integer.
      case integer
      /// 0 or 1 on SQLite, a `boolean` where the database has one.
      case flag
    }

    /// One column: its name, type, whether it may be NULL, and an integer default.
    public struct Column: Sendable {
      public var name: String
      public var type: ColumnType
      public var notNull: Bool
      public var defaultValue: Int?
    }

    public let name: String
    public let columns: [Column]
    public let primaryKey: [String]

    /// The column names, in order.
    public var columnNames: [String] { columns.map(\.name) }

    /// `CREATE TABLE IF NOT EXISTS <name>(<columns>, PRIMARY KEY(<key>))`, each column's
    /// type named by `types`, the table named by `qualified` (a schema's prefix) and
    /// `extra` column definitions added after the declared ones.
    public func createStatement(
      types: (ColumnType) -> String, qualified: (String) -> String = { $0 }, extra: [String] = []
    ) -> String {
      let definitions =
        columns.map { column in
          [column.name, types(column.type)] + (column.notNull ? ["NOT NULL"] : [])
            + (column.defaultValue.map { ["DEFAULT \($0)"] } ?? [])
        }.map { $0.joined(separator: " ") } + extra + ["PRIMARY KEY(\(primaryKey.joined(separator: ", ")))"]
      return "CREATE TABLE IF NOT EXISTS \(qualified(name))(\(definitions.joined(separator: ", ")))"
    }

    init(_ name: String, key: [String], _ columns: [(String, ColumnType, notNull: Bool)], defaults: [String: Int] = [:]) {
      self.name = name
      self.primaryKey = key
      self.columns = columns.map { Column(name: $0.0, type: $0.1, notNull: $0.notNull, defaultValue: defaults[$0.0]) }
    }
  }

  /// `_dray_resources`: each resource's scheme as last fetched (`encodeScheme`).
  public static let resources = Table(
    "_dray_resources", key: ["resource"], [("resource", .text, true), ("scheme", .text, true), ("fetched_at", .text, true)])

  /// `_dray_tables`: one row per physical table (`TableRecord`), with `column_types`: the
  /// scheme's columns the table was last made or loaded with (`encodeColumns`), what a
  /// `table_stream` contract compares the server's scheme with (docs/steps.md, "Scheme
  /// drift"); NULL in a row an older dray wrote.
  public static let tables = Table(
    "_dray_tables", key: ["name"],
    [
      ("name", .text, true), ("resource", .text, true), ("params", .text, true), ("source_table", .text, true),
      ("content_version", .text, false), ("etag", .text, false), ("cache_hash", .text, false), ("row_count", .integer, true),
      ("loaded_at", .text, false), ("column_types", .text, false),
    ], defaults: ["row_count": 0])

  /// The column of `_dray_tables` that databases made by an older dray lack, added when a
  /// store opens one (`ALTER TABLE ... ADD COLUMN`).
  public static let addedTableColumn = "column_types"

  /// `_dray_runs`: the journal's runs (`RunRecord`; docs/resume.md).
  public static let runs = Table(
    "_dray_runs", key: ["run_id"],
    [
      ("run_id", .text, true), ("lineage", .text, true), ("job", .text, true), ("started_at", .text, true), ("ended_at", .text, false),
      ("status", .text, true), ("manifest_fingerprint", .text, true), ("pid", .integer, true), ("fresh", .integer, true),
      ("from_step", .text, false), ("only_step", .text, false),
    ], defaults: ["fresh": 0])

  /// `_dray_checkpoints`: each step's checkpoint (`CheckpointRecord`).
  public static let checkpoints = Table(
    "_dray_checkpoints", key: ["job", "step_id"],
    [
      ("job", .text, true), ("step_id", .text, true), ("run_id", .text, true), ("lineage", .text, true), ("fingerprint", .text, true),
      ("status", .text, true), ("attempts", .integer, true), ("rows", .integer, true), ("bytes", .integer, true),
      ("outputs", .text, true), ("finished_at", .text, true),
    ])

  /// `_dray_http_cursors`: the kept cursor of each `incremental` step (`CursorEntry`), with
  /// the digests of the records at the kept (`boundary`) and staged (`staged_boundary`)
  /// values, the last two added after the others (`cursorsAddedColumns`).
  public static let cursors = Table(
    "_dray_http_cursors", key: ["job", "step_id"],
    [
      ("job", .text, true), ("step_id", .text, true), ("value", .text, false), ("staged", .text, false), ("fresh", .flag, true),
      ("updated_at", .text, true), ("boundary", .text, false), ("staged_boundary", .text, false),
    ])

  /// The columns of `_dray_http_cursors` a database made by an older dray lacks: each store
  /// adds them (`ALTER TABLE ... ADD COLUMN`, nullable text) when it opens the table.
  public static let cursorsAddedColumns = ["boundary", "staged_boundary"]

  /// `_dray_http_validators`: the validators of each conditional `http` step
  /// (`KeptValidators`).
  public static let validators = Table(
    "_dray_http_validators", key: ["job", "step_id"],
    [
      ("job", .text, true), ("step_id", .text, true), ("fingerprint", .text, true), ("request", .text, true), ("etag", .text, false),
      ("last_modified", .text, false), ("updated_at", .text, true),
    ])

  /// `_dray_claims`: the partitions of a partitioned step open for claims by the runners of
  /// one run (`dray run --join`, PostgreSQL; docs/partitions.md, "Many runners"): one row per
  /// partition, keyed by its member id; `owner` and `generation` name the live claim and
  /// `expires_us` ends it (microseconds since 1970 by the database's clock); `state` is
  /// `pending`, `claimed`, `done` or `failed` (`message` says why).
  public static let claims = Table(
    "_dray_claims", key: ["job", "member_id"],
    [
      ("job", .text, true), ("member_id", .text, true), ("run_id", .text, true), ("step_id", .text, true), ("ordinal", .integer, true),
      ("partition", .text, true), ("state", .text, true), ("owner", .text, false), ("generation", .integer, true),
      ("expires_us", .integer, true), ("message", .text, false), ("fingerprint", .text, false),
    ], defaults: ["generation": 0, "expires_us": 0])

  /// `_dray_joins`: the run each `--run-key` names (`dray run --join --run-key KEY`), and
  /// its exit code once it ended (nil while it runs); a joined run without a key is recorded
  /// under its own run id.
  public static let joins = Table(
    "_dray_joins", key: ["job", "run_key"],
    [("job", .text, true), ("run_key", .text, true), ("run_id", .text, true), ("exit_code", .integer, false)])

  /// `_dray_http_pages`: the pages an `http` step staged (`StagedPages`, the page ledger, in
  /// the staging database).
  public static let pages = Table(
    "_dray_http_pages", key: ["job", "step_id"],
    [
      ("job", .text, true), ("step_id", .text, true), ("lineage", .text, true), ("fingerprint", .text, true), ("pages", .integer, true),
      ("rows", .integer, true), ("bytes", .integer, true), ("next", .text, false), ("updated_at", .text, true),
    ])

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
    rfc3339(date, milliseconds: false)
  }

  /// `date` as RFC 3339 in UTC, `2026-12-03T17:10:54Z`, or with `milliseconds`
  /// `2026-12-03T17:10:54.007Z`: the form `ISO8601DateFormatter` writes with
  /// `.withInternetDateTime` (and `.withFractionalSeconds`), except that the fraction is
  /// truncated to the millisecond where that formatter rounds it, so a time is never moved
  /// into the next second. Years outside 0...9999, which RFC 3339 cannot write, are clamped
  /// to them.
  ///
  /// Computed by hand from the seconds since 1970 (the civil-from-days algorithm of Howard
  /// Hinnant's date library): an `ISO8601DateFormatter` made for each call cost a run of a
  /// small job about a fifth of its time (an ICU date format opened each time).
  public static func rfc3339(_ date: Date, milliseconds: Bool) -> String {
    // To the microsecond first: a Date made from a whole millisecond (1.007 s) holds a
    // double just below it, which is still that millisecond.
    let seconds1970 = min(max(date.timeIntervalSince1970, -62_167_219_200), 253_402_300_799.999)
    let microseconds = Int64((seconds1970 * 1_000_000).rounded())
    let (seconds, microsecond) = floorDivision(microseconds, 1_000_000)
    let millisecond = microsecond / 1000
    let (days, secondOfDay) = floorDivision(seconds, 86_400)
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let shifted = days + 719_468
    let era = floorDivision(shifted, 146_097).quotient
    let dayOfEra = shifted - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    var text = digits(year, 4) + "-" + digits(month, 2) + "-" + digits(day, 2) + "T"
    text += digits(secondOfDay / 3600, 2) + ":" + digits(secondOfDay / 60 % 60, 2) + ":" + digits(secondOfDay % 60, 2)
    if milliseconds { text += "." + digits(millisecond, 3) }
    return text + "Z"
  }

  /// `value` (not negative) in decimal, zero-padded to `width` digits.
  private static func digits(_ value: Int64, _ width: Int) -> String {
    let text = String(value)
    return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
  }

  /// The quotient rounded towards minus infinity, and the remainder that goes with it
  /// (0 ..< `divisor`).
  private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
    let quotient = value / divisor - (value % divisor < 0 ? 1 : 0)
    return (quotient, value - quotient * divisor)
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

  /// A table's columns as `_dray_tables.column_types` keeps them: a JSON array of
  /// `{"name": ..., "type": ...}` objects, in order, with the platform's type names.
  public static func encodeColumns(_ columns: [ResourceScheme.Column]) -> String {
    JSONValue.array(columns.map { .object([("name", .string($0.name)), ("type", .string($0.type))]) }).json
  }

  /// The columns `encodeColumns` kept; nil for text that is not such an array.
  public static func decodeColumns(_ json: String) -> [ResourceScheme.Column]? {
    guard let items = (try? JSONValue(parsing: json))?.arrayValue else { return nil }
    var columns: [ResourceScheme.Column] = []
    for item in items {
      guard let name = item["name"]?.stringValue, let type = item["type"]?.stringValue else { return nil }
      columns.append(ResourceScheme.Column(name: name, type: type))
    }
    return columns
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
