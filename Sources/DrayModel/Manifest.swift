/// A validated job manifest with every `${...}` resolved and every default applied.
///
/// Relative paths stay as written; `resolve(_:)` anchors them at the job folder (the folder
/// holding the manifest), so a job behaves the same from cron, CI or a shell.
public struct Manifest: Sendable {
  /// The newest manifest `version` this build reads.
  public static let supportedVersion = 1

  /// The manifest file as the user named it.
  public var path: String
  /// The job folder: the directory holding the manifest, absolute.
  public var directory: String
  public var version: Int
  /// The job's name: letters, digits, `-`, `_`, `.`; names the lock, the journal and reports.
  public var job: String
  public var description: String?
  public var platform: PlatformSettings?
  public var auth: Credentials?
  public var database: DatabaseSettings?
  public var download: DownloadSettings
  /// The job-wide retry policy; each step carries its effective policy.
  public var retry: RetryPolicy
  public var state: StateSettings
  public var report: ReportSettings
  public var steps: [Step]
  /// Every secret value of the job, for masking.
  public var redactor: Redactor
  /// The credentials (`auth`, an `http` step's `bearer` or `basic`) whose variable is unset
  /// or whose file cannot be read, by key (`auth.password`), when the loader was told to
  /// allow that (`ManifestLoader.secretsMayBeMissing`); otherwise always empty.
  public var unresolvedSecrets: [String] = []
  /// What an unresolved credential reads as (`unresolvedSecrets`): a replay matches it, in
  /// the forms a request carries it, with any recorded text (docs/recordings.md).
  public static let unresolvedCredential = "(not set)"
  /// What validation found that is no error (a deprecated spelling, a setting with no
  /// effect), each `file:line:column: warning: message`; `dray validate` and `dray run` print
  /// them to standard error.
  public var warnings: [String] = []

  public init(
    path: String, directory: String, version: Int = Manifest.supportedVersion, job: String,
    description: String? = nil, platform: PlatformSettings? = nil, auth: Credentials? = nil,
    database: DatabaseSettings? = nil, download: DownloadSettings = DownloadSettings(),
    retry: RetryPolicy = .default, state: StateSettings = StateSettings(),
    report: ReportSettings = ReportSettings(), steps: [Step] = [], redactor: Redactor = Redactor()
  ) {
    self.path = path
    self.directory = directory
    self.version = version
    self.job = job
    self.description = description
    self.platform = platform
    self.auth = auth
    self.database = database
    self.download = download
    self.retry = retry
    self.state = state
    self.report = report
    self.steps = steps
    self.redactor = redactor
  }

  /// `path` made absolute against the job folder (an absolute `path` is returned as is).
  public func resolve(_ path: String) -> String {
    if path.hasPrefix("/") { return path }
    if path == "." || path.isEmpty { return directory }
    var relative = Substring(path)
    while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
    return directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
  }

  /// Every step, with the members of `parallel` groups in file order after their group.
  public var allSteps: [Step] {
    steps.flatMap { step -> [Step] in
      if case .parallel(let group) = step.kind { return [step] + group.steps }
      return [step]
    }
  }
}

/// The `platform:` block: the SDK's `initWithCredentials`.
public struct PlatformSettings: Sendable, Hashable {
  /// Server address, e.g. `http://127.0.0.1:8765/`.
  public var host: String
  /// API version path segment; `v1` by default.
  public var apiVersion: String
  public var environment: String
  public var project: String
  public var application: String?
  /// Device id sent with the token request; `dray-cli` by default.
  public var device: String
  public var tls: TLSSettings
  public var timeouts: Timeouts
  /// Extra headers sent with every platform call.
  public var headers: [HTTPHeader]
  /// Whether table data and files are asked for in gzip (`platform.compression`, true by
  /// default); false asks for identity.
  public var compression: Bool

  public init(
    host: String, apiVersion: String = "v1", environment: String, project: String,
    application: String? = nil, device: String = "dray-cli", tls: TLSSettings = TLSSettings(),
    timeouts: Timeouts = Timeouts(), headers: [HTTPHeader] = [], compression: Bool = true
  ) {
    self.host = host
    self.apiVersion = apiVersion
    self.environment = environment
    self.project = project
    self.application = application
    self.device = device
    self.tls = tls
    self.timeouts = timeouts
    self.headers = headers
    self.compression = compression
  }
}

/// One HTTP header field.
public struct HTTPHeader: Sendable, Hashable {
  public var name: String
  public var value: String
  /// The value holds a secret although the name is not a credential's (`isSecretName`): a
  /// manifest's `X-Signed: ${SIGNING_KEY}` with `SIGNING_KEY` listed under `secrets:`.
  public var holdsSecret: Bool

  /// - Parameter secret: the value holds a secret (see `holdsSecret`); a header whose name is
  ///   a credential's (`isSecretName`) is one whatever this says.
  public init(_ name: String, _ value: String, secret: Bool = false) {
    self.name = name
    self.value = value
    self.holdsSecret = secret
  }

  /// Header names (lower case) whose values are credentials although no word of theirs is a
  /// credential's (`Cookie`), and some that are (`Authorization`, `X-Api-Key`).
  public static let secretNames: Set<String> = [
    "authorization", "proxy-authorization", "cookie", "cookie2", "set-cookie", "x-api-key", "x-auth-token",
  ]

  /// Whether a header field named `name` (any case) holds a credential: `name` is one of
  /// `secretNames`, or a credential's by the one rule for names (`CredentialName`, as for
  /// query parameters and body fields: `PRIVATE-TOKEN`, `X-Goog-Api-Key`, `X-Password`,
  /// `X-Hub-Signature-256`).
  public static func isSecretName(_ name: String) -> Bool {
    secretNames.contains(name.lowercased()) || CredentialName.isCredential(name)
  }

  /// Whether this header's value is a credential: its name is a credential's
  /// (`isSecretName`), or its value holds a secret. Such a field is masked in every output
  /// and never follows a redirect to another origin.
  public var isSecret: Bool { holdsSecret || HTTPHeader.isSecretName(name) }

  /// What in `value` a header field cannot carry, or nil when nothing: a line break (CR or
  /// LF) would end the field and start another one (header injection, request smuggling),
  /// NUL ends the text for libcurl, and RFC 9110 §5.5 allows no other control character
  /// (a field value is visible characters, spaces and tabs). Named by kind ("a line
  /// break"), never by the value, which may be a secret.
  public static func unsafeCharacter(in value: String) -> String? {
    for scalar in value.unicodeScalars {
      switch scalar.value {
      case 0x0A, 0x0D: return "a line break"
      case 0x00: return "a NUL character"
      case 0x09: continue
      case 0x01...0x1F, 0x7F:
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "a control character (U+\(String(repeating: "0", count: 4 - hex.count) + hex))"
      default: continue
      }
    }
    return nil
  }

  /// Whether `token`, handed out by a login or token endpoint, can be sent in a header as it
  /// is: one or more visible ASCII characters (`VCHAR`, RFC 5234 §B.1), the characters of
  /// RFC 6750's `b64token` and of the session tokens APIs hand out (`1|abc`, `a:b`), with no
  /// space, line break or other control character.
  public static func isTokenText(_ token: String) -> Bool {
    !token.isEmpty && token.utf8.allSatisfy { (0x21...0x7E).contains($0) }
  }
}

/// TLS settings: verification is on unless turned off explicitly.
public struct TLSSettings: Sendable, Hashable {
  /// Verify the server's certificate and host name.
  public var verify: Bool
  /// PEM bundle of trusted certificate authorities, replacing the system's.
  public var caFile: String?
  public init(verify: Bool = true, caFile: String? = nil) {
    self.verify = verify
    self.caFile = caFile
  }
}

/// Network time limits of one request (docs/network.md, "Time limits"). Every request has
/// all three, so that no wait on the network is unbounded.
public struct Timeouts: Sendable, Hashable {
  /// Longest time to establish a connection (TCP and TLS). Default 10 s.
  public var connect: Duration
  /// Longest time for a whole request, from its start to the last byte of its answer (a
  /// download cut by it resumes on the next attempt). Default 1 h.
  public var request: Duration
  /// Longest time without a byte received or sent, counted from the moment the request is
  /// handed to the connection. Default 60 s.
  public var idle: Duration
  public init(connect: Duration = .seconds(10), request: Duration = .seconds(3600), idle: Duration = .seconds(60)) {
    self.connect = connect
    self.request = request
    self.idle = idle
  }
}

/// The `auth:` block: the SDK's `auth(user, password)`.
public struct Credentials: Sendable, Hashable {
  public var username: String
  public var password: String
  public init(username: String, password: String) {
    self.username = username
    self.password = password
  }
}

extension Manifest {
  /// Which database the job writes, as fields of a step's fingerprint: the resolved SQLite
  /// path (empty without a database), or for `database.url` the URL without its password
  /// (wherever the password is written, it is not part of which database it is) and the
  /// schema, so that two databases, or two schemas of one, never share a fingerprint.
  public var databaseIdentity: [(key: String, value: String)] {
    if let target = database?.postgres {
      var url = target.url
      url.password = nil
      return [("database", url.redacted), ("schema", target.schema)]
    }
    return [("database", database?.path.map { resolve($0) } ?? "")]
  }
}

/// The `database:` block: an SQLite file (`path`, the SDK's `openBase(path, key)`) or a
/// PostgreSQL database (`url`), exactly one of them.
public struct DatabaseSettings: Sendable, Hashable {
  /// Where the job's tables live.
  public enum Target: Sendable, Hashable {
    /// An SQLite file, relative to the job folder.
    case sqlite(path: String)
    /// A schema of a PostgreSQL database.
    case postgres(PostgresTarget)
  }

  public var target: Target

  /// An SQLite file, relative to the job folder.
  public init(path: String) { target = .sqlite(path: path) }
  public init(postgres: PostgresTarget) { target = .postgres(postgres) }

  /// The SQLite file, relative to the job folder; nil for a PostgreSQL target.
  public var path: String? {
    if case .sqlite(let path) = target { path } else { nil }
  }

  /// The PostgreSQL target; nil for an SQLite file.
  public var postgres: PostgresTarget? {
    if case .postgres(let target) = target { target } else { nil }
  }
}

/// `database:` with `url`: a schema of a PostgreSQL database (docs/postgres.md).
public struct PostgresTarget: Sendable, Hashable {
  public var url: PostgresURL
  /// `database.password`, a secret; nil when the URL or libpq's own sources give it.
  public var password: String?
  /// The schema of the job's tables and of dray's own; `public` by default.
  public var schema: String

  /// `database.timeouts`: how long dray waits on the server.
  public var timeouts: DatabaseTimeouts

  /// The schema when `database.schema` is not given.
  public static let defaultSchema = "public"

  public init(
    url: PostgresURL, password: String? = nil, schema: String = PostgresTarget.defaultSchema,
    timeouts: DatabaseTimeouts = DatabaseTimeouts()
  ) {
    self.url = url
    self.password = password
    self.schema = schema
    self.timeouts = timeouts
  }
}

/// Time limits of every wait on a PostgreSQL server (`database.timeouts`, docs/postgres.md,
/// "Time limits"), the database's counterpart of the network's `Timeouts`: every wait is
/// bounded, so a stalled server fails the run instead of holding it.
public struct DatabaseTimeouts: Sendable, Hashable {
  /// Longest time to connect (libpq's `connect_timeout`, in whole seconds, at least 2).
  /// Default 10 s.
  public var connect: Duration
  /// Longest time the server may take no byte of what dray sends (a statement, a `COPY`'s
  /// rows), and, for the run journal and the run lock, longest time for an answer; also
  /// the span of TCP keepalives. Default 60 s.
  public var idle: Duration
  /// Longest time one statement may run (the server's `statement_timeout`: a step's SQL, a
  /// `COPY`, a delta); dray gives up on a server that has not answered `idle` after it.
  /// Also the server's `idle_in_transaction_session_timeout`. Default 1 h.
  public var statement: Duration

  public init(connect: Duration = .seconds(10), idle: Duration = .seconds(60), statement: Duration = .seconds(3600)) {
    self.connect = connect
    self.idle = idle
    self.statement = statement
  }
}

/// The `download:` block: where answers stream and whether they resume.
public struct DownloadSettings: Sendable, Hashable {
  /// Folder for `.part` files, relative to the job folder.
  public var path: String
  /// Resume broken downloads with `X-Range` (platform) or `Range` (other servers).
  public var resume: Bool
  public init(path: String = ".dray/downloads", resume: Bool = true) {
    self.path = path
    self.resume = resume
  }
}

/// The `state:` block: where the run journal and the lock live.
public struct StateSettings: Sendable, Hashable {
  /// Folder, relative to the job folder.
  public var path: String
  public init(path: String = ".dray") { self.path = path }
}

/// The `report:` block.
public struct ReportSettings: Sendable, Hashable {
  public enum Format: String, Sendable, Hashable, CaseIterable {
    case json, junit, prometheus, html
  }
  /// Path template; `{job}` and `{run_id}` are replaced. Relative to the job folder.
  public var path: String
  /// Formats written besides the JSON report (which is always written).
  public var formats: [Format]
  /// OpenLineage events of each run (`report.openlineage`); nil: none are sent.
  public var openLineage: LineageSettings?
  /// The run's trace over OTLP/HTTP (`report.otlp`); nil: none is sent.
  public var otlp: OTLPSettings?
  public init(
    path: String = ".dray/reports/{job}-{run_id}.json", formats: [Format] = [.json], openLineage: LineageSettings? = nil,
    otlp: OTLPSettings? = nil
  ) {
    self.path = path
    self.formats = formats
    self.openLineage = openLineage
    self.otlp = otlp
  }
}
