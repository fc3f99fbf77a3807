internal import DrayModel
internal import DrayTransport
internal import Foundation

/// A run's OpenLineage events (spec 2-0-2, `RunEvent`; docs/report.md, "OpenLineage").
///
/// - `run.runId`: `runUUID(job:runID:)`, a UUID (version 8, RFC 9562 §5.8) made of the first
///   16 bytes of SHA-256 of `dray-run:<job>:<run id>`, so every event of a run, and the run
///   that resumes it, name it alike without keeping a table of ids.
/// - A resumed run names the run it resumes in the `dray_resumes` run facet (its run id and
///   UUID).
/// - Inputs: each platform resource read (namespace the platform's origin, name
///   `ENVIRONMENT/PROJECT/RESOURCE`), each file a `files` step reads (`get`, `list`,
///   `meta`: `ENVIRONMENT/PROJECT/file/CONNECTION/PATH`) and each `http` step's address
///   (namespace its origin, name the path, without the query).
/// - Outputs: each table written (OpenLineage "Naming": `postgres://host:port` and
///   `database.schema.table`; SQLite: `sqlite://` and the file's absolute path, and the
///   table), with the `schema` facet (column names) and the `outputStatistics` facet (the
///   rows the step's report gives for the table).
struct LineageEvents {
  let settings: LineageSettings
  let manifest: Manifest
  let job: String
  let runID: String

  /// The `producer` of every event and facet: dray's source and version.
  static let producer = "https://github.com/dray-dev/dray/tree/v\(DrayVersion.current)"
  static let specURL = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
  static let eventSchemaURL = specURL + "#/$defs/RunEvent"
  static let schemaFacetURL = "https://openlineage.io/spec/facets/1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
  static let statisticsFacetURL =
    "https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"
  static let resumesFacetURL = specURL + "#/$defs/RunFacet"

  /// The run's UUID: version 8 (RFC 9562 §5.8), the first 16 bytes of SHA-256 of
  /// `dray-run:<job>:<runID>` with the version and variant bits set.
  static func runUUID(job: String, runID: String) -> String {
    var bytes = Array(SHA256.digest(Array("dray-run:\(job):\(runID)".utf8)).prefix(16))
    bytes[6] = (bytes[6] & 0x0f) | 0x80
    bytes[8] = (bytes[8] & 0x3f) | 0x80
    let hex = bytes.map { String(format: "%02x", $0) }.joined()
    let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
      String(hex.dropFirst(range.lowerBound).prefix(range.count))
    }
    return parts.joined(separator: "-")
  }

  func start(eventTime: Date, resumes: String?) -> JSONValue {
    event("START", eventTime: eventTime, resumes: resumes, inputs: inputs, outputs: [])
  }

  func end(_ report: RunReport, columns: (String) -> [String]?) -> JSONValue {
    let type =
      switch report.status {
      case .succeeded: "COMPLETE"
      case .interrupted: "ABORT"
      default: "FAIL"
      }
    return event(type, eventTime: report.endedAt, resumes: report.resumes, inputs: inputs, outputs: outputs(report, columns: columns))
  }

  /// The `ABORT` event of a run found ended without recording an end (its process killed):
  /// `eventTime` is when it was found, and the `dray_abandoned` run facet says so.
  func abandoned(eventTime: Date, processID: Int) -> JSONValue {
    let note = facet(
      Self.resumesFacetURL,
      [
        ("foundAt", .string(RunReport.rfc3339(eventTime))), ("processId", .integer(Int64(processID))),
        ("note", .string("the run ended without recording an end (its process was killed); a later run found it and marked it abandoned")),
      ])
    return event("ABORT", eventTime: eventTime, resumes: nil, inputs: inputs, outputs: [], extraFacets: [("dray_abandoned", note)])
  }

  private func event(
    _ type: String, eventTime: Date, resumes: String?, inputs: [JSONValue], outputs: [JSONValue],
    extraFacets: [(key: String, value: JSONValue)] = []
  ) -> JSONValue {
    var runFacets: [(key: String, value: JSONValue)] = extraFacets
    if let resumes {
      runFacets.append(
        (
          "dray_resumes",
          facet(
            Self.resumesFacetURL,
            [("runId", .string(Self.runUUID(job: job, runID: resumes))), ("drayRunId", .string(resumes))])
        ))
    }
    return .object([
      ("eventType", .string(type)),
      ("eventTime", .string(RunReport.rfc3339(eventTime))),
      ("run", .object([("runId", .string(Self.runUUID(job: job, runID: runID))), ("facets", .object(runFacets))])),
      ("job", .object([("namespace", .string(settings.namespace)), ("name", .string(job)), ("facets", .object([]))])),
      ("inputs", .array(inputs)),
      ("outputs", .array(outputs)),
      ("producer", .string(Self.producer)),
      ("schemaURL", .string(Self.eventSchemaURL)),
    ])
  }

  private func facet(_ schemaURL: String, _ fields: [(key: String, value: JSONValue)]) -> JSONValue {
    .object([("_producer", .string(Self.producer)), ("_schemaURL", .string(schemaURL))] + fields)
  }

  /// Each resource and address the job's steps read, once, in file order.
  var inputs: [JSONValue] {
    var seen = Set<String>()
    var out: [JSONValue] = []
    func add(_ namespace: String, _ name: String) {
      guard seen.insert(namespace + "\u{0}" + name).inserted else { return }
      out.append(.object([("namespace", .string(namespace)), ("name", .string(name)), ("facets", .object([]))]))
    }
    let platform = manifest.platform.map { (Self.origin($0.host), "\($0.environment)/\($0.project)/") }
    for step in manifest.allSteps {
      switch step.kind {
      case .schemes(let s): if let platform { for r in s.resources ?? [] { add(platform.0, platform.1 + r) } }
      case .tableStream(let s): if let platform { add(platform.0, platform.1 + s.resource) }
      case .table(let s): if let platform { add(platform.0, platform.1 + s.resource) }
      case .request(let s): if let platform { add(platform.0, platform.1 + s.resource) }
      case .http(let s):
        let base = s.baseURL
        let origin = Self.origin(base)
        var path = String(base.dropFirst(origin.count)) + (s.path ?? "")
        if let query = path.firstIndex(of: "?") { path = String(path[..<query]) }
        add(origin, path.isEmpty ? "/" : path)
      case .files(let s) where s.action == .get || s.action == .list || s.action == .meta:
        // A file read from a file-server connection: `ENVIRONMENT/PROJECT/file/CONNECTION/PATH`.
        if let platform { add(platform.0, platform.1 + "file/\(s.connection)/" + s.path) }
      case .files, .sql, .query, .parallel: break
      }
    }
    return out
  }

  /// `scheme://host[:port]` of `url`, without credentials.
  static func origin(_ url: String) -> String {
    guard let scheme = url.range(of: "://") else { return url }
    var authority = url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
    return String(url[..<scheme.upperBound]).lowercased() + authority
  }

  /// The database's dataset namespace, and a table's dataset name in it.
  var database: (namespace: String, name: (String) -> String)? {
    guard let target = manifest.database?.target else { return nil }
    switch target {
    case .sqlite(let path):
      return ("sqlite://" + manifest.resolve(path), { $0 })
    case .postgres(let postgres):
      let url = postgres.url
      let host = url.host.map { $0.hasPrefix("/") ? "localhost" : $0 } ?? "localhost"
      let database = url.database ?? url.user ?? "postgres"
      return ("postgres://\(host):\(url.port ?? 5432)", { "\(database).\(postgres.schema).\($0)" })
    }
  }

  /// Each table the run's steps wrote (steps that ran, members included), once.
  private func outputs(_ report: RunReport, columns: (String) -> [String]?) -> [JSONValue] {
    guard let database else { return [] }
    var rows: [String: Int] = [:]
    var order: [String] = []
    func collect(_ step: StepReport) {
      guard step.status != .skipped, step.status != .notRun else { return }
      for table in step.tables {
        if rows[table] == nil { order.append(table) }
        // The step that loaded the table counts its rows; one that only created it (schemes), none.
        rows[table] = step.rows[table] ?? rows[table] ?? 0
      }
      for member in step.members where !step.partitioned { collect(member) }
    }
    for step in report.steps { collect(step) }
    return order.map { table in
      var facets: [(key: String, value: JSONValue)] = []
      if let columns = columns(table), !columns.isEmpty {
        facets.append(
          ("schema", facet(Self.schemaFacetURL, [("fields", .array(columns.map { .object([("name", .string($0))]) }))])))
      }
      return .object([
        ("namespace", .string(database.namespace)), ("name", .string(database.name(table))), ("facets", .object(facets)),
        (
          "outputFacets",
          .object([("outputStatistics", facet(Self.statisticsFacetURL, [("rowCount", .integer(Int64(rows[table] ?? 0)))]))])
        ),
      ])
    }
  }
}
