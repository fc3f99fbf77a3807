/// One step of a job, with its effective settings.
public struct Step: Sendable {
  /// Unique within the job; defaults to the step kind with its 1-based position
  /// (`schemes-1`), prefixed for a member of a `parallel` group by the group's id
  /// (`all-sales.table_stream-2`).
  public var id: String
  public var kind: StepKind
  /// The effective retry policy: the job's, overridden by the step's `retry:`.
  public var retry: RetryPolicy
  /// The effective network time limits: the platform's, overridden by the step's `timeouts:`.
  public var timeouts: Timeouts
  /// Where the step starts in the manifest.
  public var location: SourceLocation
  /// What the step is for, as the manifest says; no part of its fingerprint.
  public var description: String?
  /// The partitions an `http` or `table_stream` step runs over (`partitions:`), nil for one
  /// run of its settings as written.
  public var partitions: Partitions?

  public init(
    id: String, kind: StepKind, retry: RetryPolicy = .default, timeouts: Timeouts = Timeouts(),
    location: SourceLocation, description: String? = nil, partitions: Partitions? = nil
  ) {
    self.id = id
    self.partitions = partitions
    self.kind = kind
    self.retry = retry
    self.timeouts = timeouts
    self.location = location
    self.description = description
  }

  /// The kind's manifest key, e.g. `table_stream`.
  public var kindName: String { kind.name.rawValue }

  /// The names the manifest gives for what this step reads and writes, as written there:
  /// resources, tables, file-server connections and paths, local file paths (relative to
  /// the job folder or absolute). dray writes them as they are (`Redactor.keep(_:)`); a
  /// `parallel` group's members give their own.
  public var names: [String] {
    switch kind {
    case .schemes(let step): step.resources ?? []
    case .tableStream(let step): [step.resource]
    case .table(let step): [step.resource, step.output]
    case .request(let step): [step.resource] + (step.output.map { [$0] } ?? [])
    case .files(let step): [step.connection, step.path] + (step.local.map { [$0] } ?? [])
    case .query(let step): step.output.map { [$0] } ?? []
    case .http(let step): (step.output.map { [$0] } ?? []) + (step.load.map { [$0.table] } ?? [])
    case .sql, .parallel: []
    }
  }
}

/// What a step does; one case per manifest step key.
public enum StepKind: Sendable {
  /// Fetch resource schemes and create their tables (the SDK's `resources`).
  case schemes(SchemesStep)
  /// Load a resource's answer into the database (the SDK's `tableStream`).
  case tableStream(TableStreamStep)
  /// Fetch a resource's answer without the database and write it to a file (`table`).
  case table(TableStep)
  /// Send a uniform request and save the answer (`request`).
  case request(RequestStep)
  /// One file operation on a file-server connection.
  case files(FilesStep)
  /// Run SQL statements in the database.
  case sql(SQLStep)
  /// Run a query and write its rows, checking expectations.
  case query(QueryStep)
  /// Run a group of steps concurrently (the SDK's `*Async` calls).
  case parallel(ParallelStep)
  /// Call any HTTP API; save the answer or load its records into a table.
  case http(HTTPStep)

  /// The step kinds by their manifest keys, in the order the manifest reference lists
  /// them. The manifest's declaration (`ManifestSchema.stepKinds`) and the validator switch
  /// over these cases, so that a new kind cannot be forgotten in either.
  public enum Name: String, Sendable, Hashable, CaseIterable {
    case schemes
    case tableStream = "table_stream"
    case table, request, files, sql, query, http, parallel
  }

  /// This kind's name; its raw value is the manifest key.
  public var name: Name {
    switch self {
    case .schemes: .schemes
    case .tableStream: .tableStream
    case .table: .table
    case .request: .request
    case .files: .files
    case .sql: .sql
    case .query: .query
    case .parallel: .parallel
    case .http: .http
    }
  }
}

public struct SchemesStep: Sendable, Hashable {
  /// Resources whose tables to create; nil for every resource the user may read.
  public var resources: [String]?
  public init(resources: [String]? = nil) { self.resources = resources }
}

public struct TableStreamStep: Sendable, Hashable {
  public var resource: String
  /// Input parameters, a JSON object; `{}` takes the server's defaults.
  public var params: JSONValue
  /// Ask for a delta from the stored version (`X-Delta`).
  public var delta: Bool
  /// Send an `X-Transaction-ID`, kept across retries of the call.
  public var transaction: Bool
  /// Whether calling the resource may change data on the server (`writes`); nil lets dray
  /// decide from the resource's scheme (docs/steps.md, "Reads and writes").
  public var writes: Bool?
  /// Conditions each loaded table must meet before it replaces the old one (`rows`, or a
  /// column's values); see `Expectation`.
  public var expect: [Expectation]
  /// `load.contract`: what a scheme that changed since the tables were made does (a column
  /// gained, lost or retyped; docs/steps.md "Scheme drift"); nil without `load`, where the
  /// tables follow the scheme as the server sends it, as they always have.
  public var contract: HTTPStep.Contract?
  /// `load.quarantine`: where rows the contract sets aside or trims are noted, and its bounds.
  public var quarantine: HTTPStep.Quarantine
  public init(
    resource: String, params: JSONValue = .object([]), delta: Bool = false, transaction: Bool = true, writes: Bool? = nil,
    expect: [Expectation] = [], contract: HTTPStep.Contract? = nil, quarantine: HTTPStep.Quarantine = HTTPStep.Quarantine()
  ) {
    self.resource = resource
    self.params = params
    self.delta = delta
    self.transaction = transaction
    self.writes = writes
    self.expect = expect
    self.contract = contract
    self.quarantine = quarantine
  }
}

/// File formats for answers written by `table` and rows written by `query`.
public enum OutputFormat: String, Sendable, Hashable, CaseIterable {
  case json, ndjson, csv
}

public struct TableStep: Sendable, Hashable {
  public var resource: String
  public var params: JSONValue
  /// File to write, relative to the job folder.
  public var output: String
  public var format: OutputFormat
  public var transaction: Bool
  /// As `TableStreamStep.writes`.
  public var writes: Bool?
  public init(
    resource: String, params: JSONValue = .object([]), output: String, format: OutputFormat = .json, transaction: Bool = true,
    writes: Bool? = nil
  ) {
    self.resource = resource
    self.params = params
    self.output = output
    self.format = format
    self.transaction = transaction
    self.writes = writes
  }
}

public struct RequestStep: Sendable, Hashable {
  public var resource: String
  public var params: JSONValue
  /// File to save the answer to, relative to the job folder; nil to keep only its size.
  public var output: String?
  public var transaction: Bool
  /// As `TableStreamStep.writes`.
  public var writes: Bool?
  public init(resource: String, params: JSONValue = .object([]), output: String? = nil, transaction: Bool = true, writes: Bool? = nil) {
    self.resource = resource
    self.params = params
    self.output = output
    self.transaction = transaction
    self.writes = writes
  }
}

public struct FilesStep: Sendable, Hashable {
  public enum Action: String, Sendable, Hashable, CaseIterable {
    case list, meta, get, put, delete
  }
  /// The file-server connection (the SDK's mount name), e.g. `nfs4`.
  public var connection: String
  public var action: Action
  /// Path on the server, relative to the connection's root (`.` for the root).
  public var path: String
  /// Local file: destination of `get`, source of `put`, where `list` and `meta` write
  /// their answer. Relative to the job folder and never outside it.
  public var local: String?
  /// For `delete`: whether a missing file fails the step.
  public var missingOK: Bool
  public init(connection: String, action: Action, path: String, local: String? = nil, missingOK: Bool = false) {
    self.connection = connection
    self.action = action
    self.path = path
    self.local = local
    self.missingOK = missingOK
  }

  /// The server folder `path` names, or nil when it names a file: a path that ends in `/`,
  /// or whose last part is `.` or `..`, names a folder (`docs/`, `docs/.`, `.`,
  /// `docs/archive/..`). The folder is given with `.` and inner `..` removed, `.` for the
  /// connection's root (`JobPath.lexical`); a leading `..` stays, for the server to judge.
  ///
  /// ```swift
  /// FilesStep.folder("docs/.")      // "docs"
  /// FilesStep.folder("docs/a/..")   // "docs"
  /// FilesStep.folder("docs/a.txt")  // nil
  /// ```
  public static func folder(_ path: String) -> String? {
    let last = path.split(separator: "/").last
    guard path.hasSuffix("/") || last == nil || last == "." || last == ".." else { return nil }
    return JobPath.lexical(path)
  }

  /// The file `path` names on the server, within `folder` (a `put` of the local file
  /// `name` into a folder path: `docs/.` and `docs/` give `docs/name`, `.` gives `name`);
  /// `path` itself when it names a file.
  public static func file(_ path: String, named name: String) -> String {
    guard let folder = folder(path) else { return path }
    return folder == "." ? name : folder + "/" + name
  }
}

public struct SQLStep: Sendable, Hashable {
  /// Statements, `;`-separated, with `{{ table "RESOURCE" "TABLE" }}` templates.
  public var sql: String
  public init(sql: String) { self.sql = sql }
}

public struct QueryStep: Sendable, Hashable {
  public var sql: String
  public var output: String?
  public var format: OutputFormat
  /// Conditions on the first row's columns, checked in order.
  public var expect: [Expectation]
  public init(sql: String, output: String? = nil, format: OutputFormat = .json, expect: [Expectation] = []) {
    self.sql = sql
    self.output = output
    self.format = format
    self.expect = expect
  }
}

/// A condition on a column of a query's first row (`n: { min: 200 }`), or on a table a load
/// is about to publish: `rows: { min: 1000 }` (the rows it holds), `price: { min: 0 }` (its
/// column's values). Numbers compare by their exact value (`ExactNumber`).
public struct Expectation: Sendable, Hashable {
  public var column: String
  public var min: ExactNumber?
  public var max: ExactNumber?
  public var equals: JSONValue?
  public init(column: String, min: ExactNumber? = nil, max: ExactNumber? = nil, equals: JSONValue? = nil) {
    self.column = column
    self.min = min
    self.max = max
    self.equals = equals
  }
}

public struct ParallelStep: Sendable {
  /// Most steps running at once.
  public var max: Int
  public var steps: [Step]
  public init(max: Int, steps: [Step]) {
    self.max = max
    self.steps = steps
  }
}
