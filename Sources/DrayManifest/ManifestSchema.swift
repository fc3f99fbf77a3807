public import DrayModel

/// The manifest language, declared once: every key of every mapping, what it holds, whether
/// it is required, its default and a one-line summary.
///
/// Three things are derived from this declaration so that they cannot drift apart:
/// - what the validator reads: each mapping's keys (any other is reported as unknown, with a
///   "did you mean"), which are required, integer ranges and defaults (`Fields`,
///   `NodeReader`), and the step kinds (`StepKind.Name`, switched over without a default);
/// - the JSON Schema printed by `dray schema` (`jsonSchema`), for editors;
/// - the key reference (`keyReference`), which the tests compare row by row with
///   `docs/manifest.md`.
///
/// Defaults are read from the model's own defaults (`RetryPolicy.default`, `Timeouts()`, ...),
/// never restated.
public enum ManifestSchema {
  /// One key of a mapping.
  public struct Key: Sendable {
    public var name: String
    public var value: Value
    public var required: Bool
    /// The default as JSON (`3`, `"1s"`, `true`); nil when the key has none.
    public var defaultValue: JSONValue?
    /// What the key means, in one line.
    public var summary: String
    /// For an override block (a step's `retry`), the block whose values its keys default to.
    public var overrides: String?

    init(
      _ name: String, _ value: Value, required: Bool = false, default defaultValue: JSONValue? = nil, overrides: String? = nil,
      _ summary: String
    ) {
      self.name = name
      self.value = value
      self.required = required
      self.defaultValue = defaultValue
      self.overrides = overrides
      self.summary = summary
    }
  }

  /// What a key holds.
  public indirect enum Value: Sendable {
    /// Any scalar's text (`no`, `0755` and `12:30` stay as written); null is refused.
    case string(nonEmpty: Bool)
    /// An integer within bounds.
    case integer(ClosedRange<Int>)
    /// An integer or a decimal number.
    case number
    case boolean
    /// A number and a unit: `500ms`, `30s`, `1.5s`, `5m`, `2h`, `7d`, `2w`; at least
    /// `minimum`, at most 30 days.
    case duration(minimum: Duration)
    /// A window's length (`Partitions.Every`): a whole number and a unit, `7d`, `2w` or `1mo`.
    case period
    /// One of a closed set of words.
    case choice([String])
    case list(Value)
    /// A mapping with a closed set of keys, and rules between them.
    case mapping([Key], rules: [Rule] = [])
    /// A mapping whose keys are free (header names, column names), each holding `Value`.
    case dictionary(Value)
    /// Any YAML value, read as JSON.
    case json
    /// A mapping read as a JSON object.
    case jsonObject
    /// A list of steps; `nested` for the members of a `parallel` group (which cannot be groups).
    case steps(nested: Bool)
    /// Nothing (`schemes:` or `schemes: {}`) or `Value`.
    case optional(Value)
    /// Any one of these (`INTEGER` or `{ type: INTEGER, from: /id }`).
    case oneOf([Value])
    /// A `list` or `dictionary` that holds at least one item: the validator refuses an
    /// empty one (`primary_key: []`, `partitions.list: []`, `columns: {}`).
    case nonEmpty(Value)
  }

  /// A rule between keys of one mapping that the key list alone cannot say.
  public enum Rule: Sendable {
    /// Exactly one of these keys is given.
    case exactlyOne([String])
    /// `key` is required when `when` holds one of `values`.
    case requiredWhen(key: String, when: String, values: [String])
  }

  // MARK: The declaration

  /// Keys of the manifest's top level.
  public static let top: [Key] = [
    Key("version", .integer(1...Manifest.supportedVersion), required: true, "Manifest format version; this dray reads 1."),
    Key(
      "job", .string(nonEmpty: true), required: true, "The job's name: letters, digits, '-', '_', '.'; names the lock, journal and reports."
    ),
    Key("description", .string(nonEmpty: false), "What the job is for, for people."),
    Key(
      "secrets", .list(.string(nonEmpty: true)),
      "Environment variables (NAME or ${NAME}) and ${...} values to mask in every output; under 8 characters, as whole words."
    ),
    Key("platform", .mapping(platform), "The platform server to sign in to (the SDK's initWithCredentials)."),
    Key("auth", .mapping(auth, rules: [.exactlyOne(["password", "password_file"])]), "Credentials (the SDK's auth)."),
    Key(
      "database", .mapping(database, rules: [.exactlyOne(["path", "url"])]),
      "The database the job fills: an SQLite file (the SDK's openBase) or PostgreSQL."),
    Key("download", .mapping(download), "Where answers stream to, and whether broken downloads resume."),
    Key("retry", .mapping(jobRetry), "The job's retry policy; a step's own 'retry' overrides single keys."),
    Key("state", .mapping(state), "Where the lock (and, without a database, the run journal) live."),
    Key("report", .mapping(report), "Where the run report is written, and in which formats."),
    Key("steps", .steps(nested: false), required: true, "The steps, run in file order."),
  ]

  public static let platform: [Key] = [
    Key("host", .string(nonEmpty: true), required: true, "Server address, http:// or https://; a missing trailing '/' is added."),
    Key("api_version", .string(nonEmpty: true), default: .string("v1"), "API version path segment: calls go to HOST/api/API_VERSION/."),
    Key("environment", .string(nonEmpty: true), required: true, "The platform environment."),
    Key("project", .string(nonEmpty: true), required: true, "The platform project."),
    Key("application", .string(nonEmpty: false), "The application name, when the project has several."),
    Key("device", .string(nonEmpty: true), default: .string("dray-cli"), "Device id sent with the token request."),
    Key("tls", .mapping(tls), "TLS certificate checks."),
    Key("timeouts", .mapping(timeouts), "Network time limits of every platform call; a step's 'timeouts' overrides single keys."),
    Key("headers", .dictionary(.string(nonEmpty: false)), "Extra HTTP headers sent with every platform call."),
    Key(
      "compression", .boolean, default: .bool(true),
      "Ask for gzip on table data and files (their X-Range counts uncompressed bytes, so a compressed download resumes); false asks for identity."
    ),
  ]

  public static let tls: [Key] = [
    Key("verify", .boolean, default: .bool(TLSSettings().verify), "Verify the server's certificate and host name."),
    Key("ca_file", .string(nonEmpty: true), "PEM file of trusted certificate authorities, replacing the system's."),
  ]

  /// The least time limit: libcurl reads 0 as its own default (300 s to connect, no limit
  /// otherwise), and a call cannot finish in less.
  static let timeoutMinimum = Duration.milliseconds(100)

  public static let timeouts: [Key] = [
    Key(
      "connect", .duration(minimum: timeoutMinimum), default: duration(Timeouts().connect),
      "Longest time to set up a connection (TCP and TLS)."),
    Key(
      "request", .duration(minimum: timeoutMinimum), default: duration(Timeouts().request),
      "Longest time for a whole call, answer included; a download cut by it resumes on the next attempt."),
    Key(
      "idle", .duration(minimum: timeoutMinimum), default: duration(Timeouts().idle),
      "Longest time without a byte received or sent, counted from when the request is sent, before a call is abandoned."),
  ]

  public static let auth: [Key] = [
    Key("username", .string(nonEmpty: true), required: true, "User name; shown as it is unless 'secrets' lists it."),
    Key("password", .string(nonEmpty: false), "Password; masked in every output. Give this or 'password_file'."),
    Key("password_file", .string(nonEmpty: true), "File holding the password (one trailing newline dropped); give this or 'password'."),
  ]

  public static let database: [Key] = [
    Key(
      "path", .string(nonEmpty: true),
      "SQLite file, relative to the job folder; created when missing, with its folder (the run says so). Give this or 'url'."),
    Key("url", .string(nonEmpty: true), "PostgreSQL database: postgresql://user@host:port/dbname?sslmode=...; a password in it is masked."),
    Key(
      "password", .string(nonEmpty: false),
      "PostgreSQL password; masked in every output. Else the URL's, PGPASSWORD, PGPASSFILE or ~/.pgpass."),
    Key("schema", .string(nonEmpty: true), default: .string(PostgresTarget.defaultSchema), "PostgreSQL schema of the job's tables."),
    Key("timeouts", .mapping(databaseTimeouts), "PostgreSQL time limits: every wait on the server is bounded."),
  ]

  /// `connect` is libpq's `connect_timeout`, which counts less than 2 s as 2 s.
  public static let databaseTimeouts: [Key] = [
    Key(
      "connect", .duration(minimum: .seconds(2)), default: duration(DatabaseTimeouts().connect),
      "Longest time to connect (libpq's connect_timeout; rounded up to whole seconds)."),
    Key(
      "idle", .duration(minimum: .seconds(1)), default: duration(DatabaseTimeouts().idle),
      "Longest time the server may take nothing dray sends (a COPY's rows), or answer nothing to the run journal and lock."),
    Key(
      "statement", .duration(minimum: .seconds(1)), default: duration(DatabaseTimeouts().statement),
      "Longest time one statement may run (statement_timeout): a step's SQL, a COPY; dray gives up 'idle' after it."),
  ]

  public static let download: [Key] = [
    Key("path", .string(nonEmpty: true), default: .string(DownloadSettings().path), "Folder for partial downloads (.part files)."),
    Key("resume", .boolean, default: .bool(DownloadSettings().resume), "Resume a broken download instead of starting again."),
  ]

  public static let retry: [Key] = [
    Key("count", .integer(0...1000), default: .integer(Int64(RetryPolicy.default.count)), "Retries after the first attempt; 0 for none."),
    Key("interval", .duration(minimum: .zero), default: duration(RetryPolicy.default.interval), "Wait before the first retry."),
    Key(
      "backoff", .choice(RetryPolicy.Backoff.allCases.map(\.rawValue)), default: .string(RetryPolicy.default.backoff.rawValue),
      "fixed: every wait is 'interval'; exponential: the wait doubles each retry."),
    Key(
      "max_interval", .duration(minimum: .zero), default: duration(RetryPolicy.default.maxInterval),
      "Longest computed wait between attempts."),
    Key(
      "jitter", .boolean, default: .bool(RetryPolicy.default.jitter), "Wait a random time between 0 and the computed wait (full jitter)."),
    Key(
      "max_elapsed", .duration(minimum: .seconds(1)), "Longest time from the first attempt to the start of the last; no limit when not set."
    ),
    Key(
      "max_retry_after", .duration(minimum: .seconds(1)), default: duration(RetryPolicy.default.maxRetryAfter),
      "Longest Retry-After honoured; a server that asks for a longer wait fails the call."),
  ]

  /// The job's `retry`: a step's keys, and the budget of the whole run.
  public static let jobRetry: [Key] =
    retry + [
      Key(
        "wait_budget", .duration(minimum: .seconds(1)), default: duration(RetryPolicy.default.waitBudget),
        "Longest total of retry waits in one run, over every step; a wait that would pass it ends the call. Job-wide only.")
    ]

  public static let state: [Key] = [
    Key(
      "path", .string(nonEmpty: true), default: .string(StateSettings().path),
      "Folder of the lock file and of a database-less job's journal.")
  ]

  public static let report: [Key] = [
    Key(
      "path", .string(nonEmpty: true), default: .string(ReportSettings().path),
      "Report file; {job} and {run_id} are replaced. Relative to the job folder."),
    Key(
      "formats", .list(.choice(ReportSettings.Format.allCases.map(\.rawValue))),
      default: .array(ReportSettings().formats.map { .string($0.rawValue) }),
      "Report formats written; the JSON report is always written."),
    Key(
      "openlineage", .mapping(openLineage, rules: [.exactlyOne(["url", "path"])]),
      "Send OpenLineage events of each run (START, then COMPLETE, FAIL or ABORT) to a lineage server or a file (docs/report.md)."),
    Key(
      "otlp", .optional(.mapping(otlp)),
      "Send the run's trace over OTLP/HTTP JSON; OTEL_EXPORTER_OTLP_ENDPOINT and _HEADERS fill in what is left out (docs/report.md)."),
  ]

  /// `report.openlineage`: a lineage server's URL or a file, and the job's namespace.
  public static let openLineage: [Key] = [
    Key("url", .string(nonEmpty: true), "The lineage server's endpoint, such as http://marquez:5000/api/v1/lineage; each event is POSTed."),
    Key("path", .string(nonEmpty: true), "A file the events are appended to, one per line. Relative to the job folder."),
    Key(
      "namespace", .string(nonEmpty: true), default: .string(LineageSettings.defaultNamespace),
      "The job's namespace in the events."),
  ]

  /// `report.otlp`: an OpenTelemetry collector's OTLP/HTTP endpoint and header fields.
  public static let otlp: [Key] = [
    Key(
      "endpoint", .string(nonEmpty: true),
      "The collector's base URL, such as http://collector:4318; spans go to {endpoint}/v1/traces, or to an endpoint ending in /v1/traces as it is. Default: OTEL_EXPORTER_OTLP_ENDPOINT."
    ),
    Key(
      "headers", .dictionary(.string(nonEmpty: false)),
      "Header fields sent with each export, all masked as secrets; added to OTEL_EXPORTER_OTLP_HEADERS."),
  ]

  /// Keys every step may have besides its kind.
  public static let stepCommon: [Key] = [
    Key("id", .string(nonEmpty: true), "Unique step id: letters, digits, '-', '_', '.'; defaults to the kind and position, e.g. sql-3."),
    Key("description", .string(nonEmpty: false), "What the step is for, for people."),
    Key("retry", .mapping(retry), overrides: "retry", "Overrides keys of the job's retry policy for this step."),
    Key("timeouts", .mapping(timeouts), overrides: "platform.timeouts", "Overrides keys of platform.timeouts for this step."),
    Key(
      "partitions", .mapping(partitions, rules: [.exactlyOne(Partitions.SourceKind.allCases.map(\.rawValue))]),
      "Run an http or table_stream step once for each partition, its {name} placeholders taking the partition's values (docs/partitions.md)."
    ),
  ]

  /// `partitions` of an `http` or `table_stream` step: one source, and how partitions run.
  public static let partitions: [Key] =
    Partitions.SourceKind.allCases.map { kind in
      switch kind {
      case .list:
        Key(
          kind.rawValue, .nonEmpty(.list(.nonEmpty(.dictionary(.string(nonEmpty: false))))),
          "The partitions, each a mapping of placeholder names to values.")
      case .rows:
        Key(
          kind.rawValue, .string(nonEmpty: true),
          "A query on the job's database, with {{ table ... }} templates: one partition per row, its column names the placeholder names.")
      case .window:
        Key(kind.rawValue, .mapping(partitionWindow), "Consecutive half-open windows [window_start, window_end) from start to end.")
      }
    } + [
      Key(
        "concurrency", .integer(1...64), default: .integer(Int64(Partitions.defaultConcurrency)),
        "How many partitions run at once in one runner (as parallel.max does for a group's steps)."),
      Key(
        "lease", .duration(minimum: .seconds(1)), default: duration(Partitions.defaultLease),
        "How long a claimed partition stays claimed when its runner stops renewing the claim; then another runner may take it."),
    ]

  public static let partitionWindow: [Key] = [
    Key("start", .string(nonEmpty: true), required: true, "The first window's start: a date (2024-01-01) or an RFC 3339 instant."),
    Key("end", .string(nonEmpty: true), required: true, "Where the last window ends (not included); in the form of start."),
    Key("every", .period, required: true, "Each window's length: days (7d), weeks (2w) or calendar months (1mo)."),
  ]

  /// The step kinds: each step has exactly one of these keys.
  public static let stepKinds: [Key] = StepKind.Name.allCases.map(stepKind)

  /// The declaration of one step kind.
  static func stepKind(_ name: StepKind.Name) -> Key {
    let key = name.rawValue
    return switch name {
    case .schemes:
      Key(key, .optional(.mapping(schemes)), "Fetch resource schemes and create their tables (the SDK's resources).")
    case .tableStream:
      Key(key, .mapping(tableStream), "Load a resource's answer into the database (the SDK's tableStream).")
    case .table:
      Key(key, .mapping(table), "Fetch a resource's answer and write it to a file, without the database (the SDK's table).")
    case .request:
      Key(key, .mapping(request), "Send a uniform request; keep or save the answer (the SDK's request).")
    case .files:
      Key(
        key,
        .mapping(
          files,
          rules: [
            .requiredWhen(key: "path", when: "action", values: ["meta", "get", "put", "delete"]),
            .requiredWhen(key: "local", when: "action", values: ["get", "put"]),
          ]), "One file operation on a file-server connection.")
    case .sql:
      Key(key, .string(nonEmpty: true), "SQL statements, with {{ table \"RESOURCE\" \"TABLE\" }} for physical table names.")
    case .query:
      Key(key, .mapping(query), "Run a query, write its rows to a file, check expectations on the first row.")
    case .http:
      Key(key, .mapping(http), "Call any HTTP API; save the answer or load its records into a table (docs/http.md).")
    case .parallel:
      Key(key, .mapping(parallel), "Run a group of steps concurrently (the SDK's *Async calls).")
    }
  }

  public static let schemes: [Key] = [
    Key("resources", .nonEmpty(.list(.string(nonEmpty: true))), "Resources whose tables to create; every readable resource when not set.")
  ]

  static let resourceKeys: [Key] = [
    Key("resource", .string(nonEmpty: true), required: true, "The resource's name on the platform."),
    Key("params", .jsonObject, default: .object([]), "Input parameters; {} takes the server's defaults."),
  ]

  static let transactionKey = Key(
    "transaction", .boolean, default: .bool(true), "Send an X-Transaction-ID kept across retries, so a retry never runs twice.")

  static let writesKey = Key(
    "writes", .boolean,
    "Whether calling the resource may change data on the server; unset, a cached resource (its scheme has 'lifetime') is a read and any other a write. A write without a transaction id is sent at most once (docs/steps.md, \"Reads and writes\")."
  )

  static let outputFormat = Value.choice(OutputFormat.allCases.map(\.rawValue))

  public static let tableStream: [Key] =
    resourceKeys + [
      Key("delta", .boolean, default: .bool(false), "Ask only for the changes since the stored version (X-Delta)."),
      transactionKey,
      writesKey,
      loadExpect,
      Key(
        "load", .mapping(tableStreamLoad),
        "The data contract of a scheme that changes between runs: contract (new_columns, types) and quarantine (docs/steps.md, \"Scheme drift\")."
      ),
    ]

  public static let table: [Key] =
    resourceKeys + [
      Key("output", .string(nonEmpty: true), required: true, "File to write, relative to the job folder."),
      Key("format", outputFormat, default: .string(OutputFormat.json.rawValue), "Format of the file."),
      transactionKey,
      writesKey,
    ]

  public static let request: [Key] =
    resourceKeys + [
      Key("output", .string(nonEmpty: true), "File to save the answer to; only its size is kept when not set."),
      transactionKey,
      writesKey,
    ]

  public static let files: [Key] = [
    Key("connection", .string(nonEmpty: true), required: true, "The file-server connection (the SDK's mount name), e.g. local_storage."),
    Key("action", .choice(FilesStep.Action.allCases.map(\.rawValue)), required: true, "The operation."),
    Key("path", .string(nonEmpty: true), "Path on the server; required except for list (default: the root)."),
    Key("local", .string(nonEmpty: true), "Local file: required for get (destination) and put (source)."),
    Key("missing_ok", .boolean, default: .bool(false), "For delete: a missing file does not fail the step."),
  ]

  public static let query: [Key] = [
    Key("sql", .string(nonEmpty: true), required: true, "One SELECT, with {{ table ... }} templates."),
    Key("output", .string(nonEmpty: true), "File the rows are written to; not written when not set."),
    Key("format", outputFormat, default: .string(OutputFormat.json.rawValue), "Format of the file."),
    Key("expect", .dictionary(.mapping(expectation)), "Conditions on the first row, by column name; a failed one fails the step."),
  ]

  public static let expectation: [Key] = [
    Key("min", .number, "The value is at least this (a load: its row count, or every value of its column)."),
    Key("max", .number, "The value is at most this (a load: its row count, or every value of its column)."),
    Key("equals", .json, "The value equals this (a load: its row count, or every value of its column)."),
  ]

  /// A load's expectations, checked before its table replaces the old one.
  static let loadExpect = Key(
    "expect", .dictionary(.mapping(expectation)),
    "Conditions on the loaded table before it replaces the old one: rows (its row count) or a column's values; a failed one rolls the load back and fails the step."
  )

  public static let parallel: [Key] = [
    Key("max", .integer(1...64), default: .integer(4), "Most steps running at once."),
    Key("steps", .steps(nested: true), required: true, "The steps of the group; any kind but parallel."),
  ]

  /// A query parameter's or form field's value: one value, or a list that repeats the name.
  static let parameterValue = Value.oneOf([.string(nonEmpty: false), .nonEmpty(.list(.string(nonEmpty: false)))])

  public static let http: [Key] = [
    Key("method", .choice(HTTPStep.Method.allCases.map(\.rawValue)), default: .string(HTTPStep.Method.get.rawValue), "The request method."),
    Key("base_url", .string(nonEmpty: true), required: true, "http:// or https:// address, without a query or credentials."),
    Key("path", .string(nonEmpty: false), "Appended to base_url with one '/' between them."),
    Key("query", .dictionary(parameterValue), "Query parameters; a list repeats the name."),
    Key("headers", .dictionary(.string(nonEmpty: false)), "Request header fields; credential headers are masked."),
    Key("body", .mapping(httpBody, rules: [.exactlyOne(["json", "form"])]), "The request body: json or form."),
    Key(
      "auth", .mapping(httpAuth, rules: [.exactlyOne(httpAuth.names)]),
      "Credentials sent as the Authorization header; masked in every output."),
    Key("tls", .mapping(tls), "TLS certificate checks."),
    Key(
      "format", .choice(AnswerFormat.allCases.map(\.rawValue)), default: .string(AnswerFormat.json.rawValue),
      "How to read the answer: json or xml."),
    Key("output", .string(nonEmpty: true), "File each answer is saved to as it came; holds {page} when the step paginates."),
    Key("load", .mapping(httpLoad), "Load the answer's records into a table of the job's database."),
    Key(
      "paginate", .mapping(httpPaginate, rules: [.exactlyOne(HTTPStep.Pagination.Kind.allCases.map(\.rawValue))]),
      "How to find the next page: one of next, link_header, offset, cursor, page."),
    Key(
      "on_status", .dictionary(.choice(HTTPStep.StatusOutcome.allCases.map(\.rawValue))),
      "What a status (404) or class (5xx) does: fail, empty or retry."),
    Key("incremental", .mapping(httpIncremental), "Fetch only the records changed since the last run, by a cursor."),
    Key(
      "rate_limit", .mapping(httpRateLimit),
      "A request budget for the step's host, shared by every step of the run that names it (docs/http.md, \"Request budget\")."),
  ]

  public static let httpBody: [Key] = [
    Key("json", .json, "Sent as application/json."),
    Key("form", .dictionary(parameterValue), "Fields sent as application/x-www-form-urlencoded."),
  ]

  /// The ways an `http` step's `auth` gives credentials, by their keys; a step gives
  /// exactly one.
  enum HTTPAuthKind: String, CaseIterable {
    case bearer
    case bearerFile = "bearer_file"
    case basic
    case oauth2
    case apiKey = "api_key"
    case login
  }

  public static let httpAuth: [Key] = HTTPAuthKind.allCases.map { kind in
    switch kind {
    case .bearer: Key(kind.rawValue, .string(nonEmpty: true), "Token sent as Authorization: Bearer TOKEN.")
    case .bearerFile: Key(kind.rawValue, .string(nonEmpty: true), "File holding the bearer token (one trailing newline dropped).")
    case .basic: Key(kind.rawValue, .mapping(httpBasic, rules: [.exactlyOne(["password", "password_file"])]), "HTTP basic credentials.")
    case .oauth2:
      Key(
        kind.rawValue,
        .mapping(
          httpOAuth2,
          rules: [
            .requiredWhen(key: "refresh_token", when: "grant", values: [OAuth2.Grant.refreshToken.rawValue]),
            .requiredWhen(key: "client_secret", when: "grant", values: [OAuth2.Grant.clientCredentials.rawValue]),
          ]),
        "An OAuth 2.0 access token from token_url, renewed before it expires (docs/auth.md).")
    case .apiKey:
      Key(
        kind.rawValue, .mapping(httpAPIKey, rules: [.exactlyOne(["header", "query"])]),
        "A key sent in a header or a query parameter of every request (docs/auth.md).")
    case .login:
      Key(
        kind.rawValue, .mapping(httpLogin),
        "A session token from a login endpoint for a user and password, renewed before it expires (docs/auth.md).")
    }
  }

  /// Where an `http` step's `paginate.cursor` reads the next cursor, by its keys; a cursor
  /// gives exactly one.
  enum CursorSource: String, CaseIterable {
    case from
    case lastRecord = "from_last_record"
  }

  public static let httpBasic: [Key] = [
    Key("username", .string(nonEmpty: true), required: true, "User name; shown as it is unless 'secrets' lists it."),
    Key("password", .string(nonEmpty: false), "Password; give this or 'password_file'."),
    Key("password_file", .string(nonEmpty: true), "File holding the password; give this or 'password'."),
  ]

  public static let httpPaginate: [Key] =
    HTTPStep.Pagination.Kind.allCases.map { kind in
      switch kind {
      case .next: Key(kind.rawValue, .string(nonEmpty: false), "Where the next page's URL is in the answer.")
      case .linkHeader: Key(kind.rawValue, .boolean, "true: the next page is the rel=\"next\" link of the Link header.")
      case .offset: Key(kind.rawValue, .optional(.mapping(httpOffset)), "Offset and limit parameters; a short page is the last.")
      case .cursor:
        Key(
          kind.rawValue, .mapping(httpCursor, rules: [.exactlyOne(CursorSource.allCases.map(\.rawValue))]),
          "A cursor from the answer, or from its last record, sent back as a parameter.")
      case .page: Key(kind.rawValue, .optional(.mapping(httpPage)), "Page numbers sent as a parameter; an empty page is the last.")
      }
    } + [
      Key("max_pages", .integer(1...Int(Int32.max)), "Most pages fetched; no limit when not set."),
      Key("more", .string(nonEmpty: false), "Where the answer says whether more pages exist; false, null or absent ends the pull."),
    ]

  public static let httpPage: [Key] = [
    Key("param", .string(nonEmpty: true), default: .string("page"), "The page number parameter."),
    Key("start", .integer(0...Int(Int32.max)), default: .integer(1), "The first page's number."),
  ]

  public static let httpOffset: [Key] = [
    Key("param", .string(nonEmpty: true), default: .string("offset"), "The offset parameter."),
    Key("limit_param", .string(nonEmpty: true), default: .string("limit"), "The page size parameter."),
    Key("limit", .integer(1...1_000_000), default: .integer(100), "Records a page."),
    Key("start", .integer(0...Int(Int32.max)), default: .integer(0), "The first offset."),
  ]

  public static let httpCursor: [Key] = [
    Key("param", .string(nonEmpty: true), default: .string("cursor"), "The cursor parameter."),
    Key("from", .string(nonEmpty: false), "Where the next cursor is in the answer; give this or 'from_last_record'."),
    Key(
      "from_last_record", .string(nonEmpty: true),
      "JSON Pointer to the next cursor in the page's last record (Stripe's starting_after); a page without records is the last."),
    Key(
      "body", .string(nonEmpty: true),
      "JSON Pointer into the JSON body where the cursor is sent instead of a parameter (GraphQL: /variables/after)."),
  ]

  static func duration(_ d: Duration) -> JSONValue { .string(d.formatted) }
}

extension [ManifestSchema.Key] {
  /// The keys' names, in declaration order.
  public var names: [String] { map(\.name) }

  /// The key named `name`.
  public subscript(name: String) -> ManifestSchema.Key? { first { $0.name == name } }
}
