internal import DrayJSON
internal import DrayModel
internal import Foundation

/// Turns a manifest's node tree into a `Manifest`, recording every problem on the way.
///
/// `ManifestSchema` declares what every mapping holds: its keys, which are required, their
/// ranges and defaults; the validator reads through it (`Fields`, `NodeReader`) and adds the
/// rules a declaration cannot say. Each block and each step kind has its own `read...`
/// function.
struct ManifestValidator {
  /// Top-level keys starting with this are ignored: a place to define anchors, as in
  /// `x-defaults: &defaults { ... }`.
  static let extensionPrefix = "x-"

  let path: String
  let directory: String
  let root: YAMLNode
  /// The manifest's text, to place `{{ table }}` problems on their line; may be empty.
  let source: String
  var reader: NodeReader
  /// Keyed as SQLite compares names (`IdentifierKey`): dray names staging tables and files
  /// after step ids, so `Items` and `items` would share them.
  private var stepIDs: [IdentifierKey: (id: String, location: SourceLocation, isDefault: Bool)] = [:]
  /// The SQL of `sql` and `query` steps, with its node, for the template checks.
  private var sqlSources: [(stepID: String, sql: String, node: YAMLNode)] = []
  /// A `table_stream` step that did not read: templates may name what it would load, so
  /// "no step loads" is not said (it would only repeat that step's own error).
  private var hasBrokenLoader = false
  /// Every step whose kind is known, read or not, in file order: what `checkRequirements`
  /// needs, so that a step with a problem of its own still says which blocks it needs.
  private var stepKinds: [(id: String, kind: StepKind.Name, location: SourceLocation)] = []
  /// The files steps write, for `checkKeptPaths`.
  var stepOutputs: [StepOutput] = []
  /// Read only the blocks that say where the job keeps its records
  /// (`ManifestLoader.recordsOnly`).
  var recordsOnly = false

  init(path: String, directory: String, environment: [String: String], root: YAMLNode, source: String = "") {
    self.path = path
    self.directory = directory
    self.root = root
    self.source = source
    self.reader = NodeReader(interpolator: Interpolator(environment: environment, secretVariables: [], directory: directory))
    // The secrets list decides how everything else is read, so it comes first.
    if case .mapping(let pairs) = root.content, let node = pairs.first(where: { $0.key.scalar?.text == "secrets" })?.value {
      let names = readSecretEntries(node)
      let found = reader
      reader = NodeReader(
        interpolator: Interpolator(environment: environment, secretVariables: Set(names.compactMap(\.name)), directory: directory))
      reader.diagnostics = found.diagnostics
      reader.redactor = found.redactor
      secretItems = names
    }
  }

  /// The entries of `secrets`: a variable's name (written `NAME` or `${NAME}`) with its
  /// node, or (name nil) a value with references such as `${file:keys/api}`.
  private var secretItems: [(name: String?, node: YAMLNode)] = []

  mutating func validate() -> Manifest? {
    // The values of `secrets` are masked wherever they appear, used or not (read here, once
    // `secretsMayBeMissing` is known).
    for item in secretItems {
      if let name = item.name {
        if let value = reader.interpolator.environment[name] {
          reader.redactor.add(value)
        } else if !reader.secretsMayBeMissing {
          // A misspelt name would otherwise mask nothing, silently.
          reader.error(
            item.node.location,
            "'secrets': environment variable \(name) is not set; set it, or correct the name (nothing it should hide would be masked)")
        }
      } else {
        _ = reader.text(item.node, "secrets", secret: true)
      }
    }
    guard let top = reader.fields(root, "", keys: ManifestSchema.top, extensionPrefix: Self.extensionPrefix) else { return nil }
    let version = top.required("version", &reader).flatMap { readVersion($0) }
    let job = top.required("job", &reader).flatMap { readJobName($0) }
    if recordsOnly { return readRecordKeeping(top, version: version, job: job) }
    let description = reader.string(top, "description")
    let platform = top["platform"].flatMap { readPlatform($0) }
    let auth = top["auth"].flatMap { readAuth($0) }
    let database = top["database"].flatMap { readDatabase($0) }
    let download = top["download"].flatMap { readDownload($0) } ?? DownloadSettings()
    let retry = top["retry"].map { readRetry($0, "retry", base: .default, jobWide: true) } ?? .default
    let state = top["state"].flatMap { readState($0) } ?? StateSettings()
    let report = top["report"].flatMap { readReport($0) } ?? ReportSettings()
    let timeouts = platform?.timeouts ?? Timeouts()
    var steps: [Step] = []
    if let node = top.required("steps", &reader) {
      steps = readSteps(node, "steps", retry: retry, timeouts: timeouts, group: nil)
    }
    // The cross-checks run even when `version` or `job` is wrong: one pass reports everything.
    var manifest = Manifest(
      path: path, directory: directory, version: version ?? Manifest.supportedVersion, job: job ?? "", description: description,
      platform: platform, auth: auth, database: database, download: download, retry: retry,
      state: state, report: report, steps: steps, redactor: reader.redactor)
    checkRequirements(top: top)
    checkTemplates(manifest)
    checkKeptPaths(manifest, top: top)
    manifest.redactor = reader.redactor
    // The names dray writes (the job, step ids, resources, tables, file paths as written and
    // as resolved, the job's own folders and database): never masked, even holding a secret.
    let paths =
      manifest.allSteps.flatMap(\.names) + [manifest.database?.path, manifest.download.path, manifest.state.path].compactMap { $0 }
    manifest.redactor.keep([manifest.job] + manifest.allSteps.map(\.id) + paths + paths.map(manifest.resolve))
    Self.markSecretHeaders(&manifest)
    guard version != nil, job != nil else { return nil }
    return manifest
  }

  /// The blocks that say where the job keeps its records, alone: `database`, `state`,
  /// `download` and `report` (with `version` and `job`, read by the caller). The rest is
  /// neither resolved nor checked; the manifest has no platform, auth or steps.
  private mutating func readRecordKeeping(_ top: Fields, version: Int?, job: String?) -> Manifest? {
    let database = top["database"].flatMap { readDatabase($0) }
    let download = top["download"].flatMap { readDownload($0) } ?? DownloadSettings()
    let state = top["state"].flatMap { readState($0) } ?? StateSettings()
    let report = top["report"].flatMap { readReport($0) } ?? ReportSettings()
    guard let version, let job, top["database"] == nil || database != nil else { return nil }
    return Manifest(
      path: path, directory: directory, version: version, job: job, description: nil, platform: nil, auth: nil, database: database,
      download: download, retry: .default, state: state, report: report, steps: [], redactor: reader.redactor)
  }

  /// Marks every header field whose value holds one of the manifest's secrets
  /// (`HTTPHeader.holdsSecret`), whatever its name, so that it never follows a redirect to
  /// another origin. Done once every secret is known (`auth` is read after `platform`).
  static func markSecretHeaders(_ manifest: inout Manifest) {
    let redactor = manifest.redactor
    func mark(_ headers: [HTTPHeader]) -> [HTTPHeader] {
      headers.map { field in
        var field = field
        if !field.isSecret && redactor.redact(field.value) != field.value { field.holdsSecret = true }
        return field
      }
    }
    func mark(_ step: Step) -> Step {
      var step = step
      switch step.kind {
      case .http(var http):
        http.headers = mark(http.headers)
        step.kind = .http(http)
      case .parallel(var group):
        group.steps = group.steps.map(mark)
        step.kind = .parallel(group)
      case .schemes, .tableStream, .table, .request, .files, .sql, .query:
        break
      }
      return step
    }
    if let headers = manifest.platform?.headers { manifest.platform?.headers = mark(headers) }
    manifest.steps = manifest.steps.map(mark)
  }

  // MARK: Top-level blocks

  /// The entries of `secrets` (see `secretItems`): a name `NAME` or `${NAME}` makes the
  /// variable a secret wherever a value uses it; any other text with a reference
  /// (`${file:keys/api}`, `${A:-${B}}`) is resolved and its value masked.
  private mutating func readSecretEntries(_ node: YAMLNode) -> [(name: String?, node: YAMLNode)] {
    guard case .sequence(let items) = node.content else {
      reader.error(
        node.location, "'secrets' must be a list of environment variable names or ${...} references, found \(node.kindDescription)")
      return []
    }
    var entries: [(name: String?, node: YAMLNode)] = []
    for item in items {
      guard let text = item.scalar?.text else {
        reader.error(item.location, "'secrets' lists environment variable names or ${...} references, found \(item.kindDescription)")
        continue
      }
      let braced = text.hasPrefix("${") && text.hasSuffix("}") ? String(text.dropFirst(2).dropLast()) : nil
      if Interpolator.isVariableName(text) {
        entries.append((text, item))
      } else if let braced, Interpolator.isVariableName(braced) {
        entries.append((braced, item))
      } else if text.contains("${") {
        entries.append((nil, item))
      } else {
        // Perhaps a password written out: masked in the quoted source line, never repeated.
        reader.redactor.add(text)
        reader.error(
          item.location,
          "'secrets' lists environment variable names such as API_TOKEN, or ${...} references such as ${file:keys/api}; this entry is neither (a value written in the manifest is no secret: set it in a variable or a file and list that)"
        )
      }
    }
    return entries
  }

  /// The version, within the declared range; its own messages say what to do on each side.
  private mutating func readVersion(_ node: YAMLNode) -> Int? {
    guard case .integer(let supported) = ManifestSchema.top["version"]?.value,
      let version = reader.integer(node, "version", in: Int.min...Int.max)
    else { return nil }
    if version < supported.lowerBound {
      reader.error(node.location, "'version' must be \(Manifest.supportedVersion), the manifest format this dray reads; found \(version)")
      return nil
    }
    if version > supported.upperBound {
      reader.error(
        node.location,
        "manifest version \(version) is newer than this dray supports (\(Manifest.supportedVersion)); upgrade dray or write version: \(Manifest.supportedVersion)"
      )
      return nil
    }
    return version
  }

  private mutating func readJobName(_ node: YAMLNode) -> String? {
    guard let name = reader.nonEmptyString(node, "job").map(Self.normalizedName) else { return nil }
    guard Self.isIdentifier(name) else {
      reader.error(node.location, "'job' may hold letters, digits, '-', '_' and '.' only (it names files), found '\(name)'")
      return nil
    }
    return name
  }

  /// Whether `s` may name a job or a step: letters of any script (Unicode's Alphabetic
  /// property, with their combining marks), the digits 0 to 9, `-`, `_` and `.`; not
  /// starting with `.`; at most 128 bytes of UTF-8, so that a file named after it (the
  /// lock, the journal, reports, a step's downloads) stays under the 255 bytes a file name
  /// may have. Such a name needs no escaping in a path, and is quoted or escaped like any
  /// text in SQL, XML, HTML and Prometheus labels. Read in NFC (`normalizedName`).
  static func isIdentifier(_ s: String) -> Bool {
    !s.isEmpty && s.utf8.count <= 128 && !s.hasPrefix(".")
      && s.unicodeScalars.allSatisfy {
        $0.properties.isAlphabetic || $0.properties.generalCategory == .nonspacingMark
          || $0.properties.generalCategory == .spacingMark || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)
      }
  }

  /// `name` in Unicode's composed form (NFC), as every name is kept: `é` typed as `e` and a
  /// combining accent is the same step, in the journal and in every file, as `é` typed as one
  /// character.
  static func normalizedName(_ name: String) -> String {
    name.precomposedStringWithCanonicalMapping
  }

  private mutating func readPlatform(_ node: YAMLNode) -> PlatformSettings? {
    guard let f = reader.fields(node, "platform", keys: ManifestSchema.platform) else { return nil }
    let host = f.required("host", &reader).flatMap { readHost($0, f.path("host")) }
    let environment = reader.string(f, "environment")
    let project = reader.string(f, "project")
    let apiVersion = reader.string(f, "api_version") ?? f.defaultValue("api_version")
    let application = reader.string(f, "application")
    let device = reader.string(f, "device") ?? f.defaultValue("device")
    let tls = f["tls"].flatMap { readTLS($0, f.path("tls")) } ?? TLSSettings()
    let timeouts = f["timeouts"].flatMap { readTimeouts($0, f.path("timeouts"), base: Timeouts()) } ?? Timeouts()
    let headers = f["headers"].flatMap { readHeaders($0, f.path("headers"), platform: true) } ?? []
    let compression = reader.bool(f, "compression") ?? f.defaultValue("compression")
    guard let host, let environment, let project else { return nil }
    return PlatformSettings(
      host: host, apiVersion: apiVersion, environment: environment, project: project,
      application: application, device: device, tls: tls, timeouts: timeouts, headers: headers, compression: compression)
  }

  private mutating func readHost(_ node: YAMLNode, _ path: String) -> String? {
    guard var host = reader.nonEmptyString(node, path) else { return nil }
    guard host.hasPrefix("http://") || host.hasPrefix("https://"), host.count > 8 else {
      reader.error(node.location, "'\(path)' must be an http:// or https:// address, found '\(host)'")
      return nil
    }
    // Credentials in the address would be printed wherever the host is; they belong in auth.
    let authority = host.drop { $0 != "/" }.dropFirst(2).prefix { $0 != "/" }
    if let at = authority.lastIndex(of: "@") {
      reader.redactor.add(String(authority[..<at]))  // masked in the quoted source line
      reader.error(node.location, "'\(path)' must not hold a user name or password; give them in 'auth'")
      return nil
    }
    if let problem = Self.authorityProblem(host, path: path) {
      reader.error(node.location, problem)
      return nil
    }
    if !host.hasSuffix("/") { host += "/" }
    return host
  }

  /// Header fields (`platform.headers`, an `http` step's `headers`): a mapping of names to
  /// values; nil when any field is wrong (each with a diagnostic).
  ///
  /// `Accept-Encoding` is dray's own for platform calls (`gzip` for table data and files,
  /// whose `X-Range` counts uncompressed bytes; platform-api.md §3), so `platform.headers`
  /// may not set it; an `http` step's is sent as written when dray can decode every coding
  /// it names (`ContentCoding`).
  mutating func readHeaders(_ node: YAMLNode, _ path: String, platform: Bool = false) -> [HTTPHeader]? {
    guard case .mapping(let pairs) = node.content else {
      reader.error(node.location, "'\(path)' must be a mapping of header names to values, found \(node.kindDescription)")
      return nil
    }
    var headers: [HTTPHeader] = []
    var ok = true
    for pair in pairs {
      let name = pair.key.scalar?.text ?? ""
      if let problem = Self.headerNameProblem(name) {
        reader.error(pair.key.location, problem)
        ok = false
        continue
      }
      let secret = HTTPHeader.secretNames.contains(name.lowercased())
      guard let value = reader.string(pair.value, "\(path).\(name)", secret: secret) else {
        ok = false
        continue
      }
      if let problem = Self.headerValueProblem(value, path: "\(path).\(name)") {
        reader.error(pair.value.location, problem)
        ok = false
        continue
      }
      if name.lowercased() == "accept-encoding" {
        if platform {
          reader.error(
            pair.key.location,
            "'\(path).\(name)' cannot be set: dray asks the platform for gzip on table data and files (their X-Range "
              + "offsets count uncompressed bytes) and for identity on the rest; remove it, and set platform.compression: false to ask for identity everywhere"
          )
          ok = false
          continue
        }
        if let problem = ContentCoding.problem(value) {
          reader.error(pair.value.location, "'\(path).\(name)' \(problem)")
          ok = false
          continue
        }
      }
      headers.append(HTTPHeader(name, value))
    }
    return ok ? headers : nil
  }

  /// TLS settings (`platform.tls`, an `http` step's `tls`).
  mutating func readTLS(_ node: YAMLNode, _ path: String) -> TLSSettings? {
    guard let t = reader.fields(node, path, keys: ManifestSchema.tls) else { return nil }
    var tls = TLSSettings()
    if let v = reader.bool(t, "verify") { tls.verify = v }
    tls.caFile = reader.string(t, "ca_file")
    return tls
  }

  /// A password given as `password` or read from `password_file` (`auth`, an `http` step's
  /// `auth.basic`), which `f` holds one of.
  mutating func readPassword(_ f: Fields) -> String? {
    switch (f["password"], f["password_file"]) {
    case (_?, nil):
      return reader.string(f, "password", secret: true)
    case (nil, let file?):
      return readSecretFile(file, f.path("password_file"))
    case (_?, let file?):
      reader.error(file.location, "'\(f.path)' takes 'password' or 'password_file', not both")
    case (nil, nil):
      reader.error(f.node.location, "missing required key 'password' (or 'password_file') in \(f.path)")
    }
    return nil
  }

  /// A secret read from a file (relative to the job folder), without one trailing newline:
  /// `auth.password_file`, `bearer_file`, `basic.password_file`. An empty file is refused: a
  /// secret file that holds nothing was not written or not mounted, and sending an empty
  /// secret would only fail later at the server (an empty password is written
  /// `password: ""`).
  mutating func readSecretFile(_ node: YAMLNode, _ path: String) -> String? {
    guard let file = reader.nonEmptyString(node, path) else { return nil }
    let full = file.hasPrefix("/") ? file : directory + "/" + file
    do {
      let value = try Interpolator(environment: [:], secretVariables: [], directory: directory).resolve("${file:\(full)}").value
      guard !value.isEmpty else {
        reader.error(
          node.location, "'\(path)': file '\(file)' is empty; write the secret in it (an empty password is written password: \"\")")
        return nil
      }
      reader.redactor.add(value)
      return value
    } catch .nulInFile {
      reader.error(node.location, "'\(path)': file '\(file)' holds a NUL character (U+0000), which would cut the secret short; remove it")
    } catch .notRegularFile(_, let kind) {
      reader.error(node.location, "'\(path)': '\(file)' is \(kind), not a regular file; a secret file must be a regular file")
    } catch {
      if reader.unresolvable(path, error) { return NodeReader.unresolved }
      reader.error(node.location, "'\(path)': cannot read file '\(file)'; check that it exists and is readable")
    }
    return nil
  }

  private mutating func readTimeouts(_ node: YAMLNode, _ path: String, base: Timeouts) -> Timeouts? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.timeouts) else { return nil }
    var t = base
    if let d = reader.duration(f, "connect") { t.connect = d }
    if let d = reader.duration(f, "request") { t.request = d }
    if let d = reader.duration(f, "idle") { t.idle = d }
    return t
  }

  private mutating func readAuth(_ node: YAMLNode) -> Credentials? {
    guard let f = reader.fields(node, "auth", keys: ManifestSchema.auth) else { return nil }
    let username = reader.string(f, "username", credential: true)
    let password = readPassword(f)
    guard let username, let password else { return nil }
    return Credentials(username: username, password: password)
  }

  /// `database:`: `path` (SQLite) or `url` (PostgreSQL, with `password` and `schema`).
  private mutating func readDatabase(_ node: YAMLNode) -> DatabaseSettings? {
    guard let f = reader.fields(node, "database", keys: ManifestSchema.database) else { return nil }
    switch (f["path"], f["url"]) {
    case (let pathNode?, nil):
      for key in ["password", "schema", "timeouts"] {
        if let extra = f[key] {
          reader.error(extra.location, "'database.\(key)' goes with 'url' (PostgreSQL); an SQLite database (database.path) has none")
        }
      }
      guard let path = reader.nonEmptyString(pathNode, "database.path"),
        fileShaped(pathNode, "database.path", path, what: "SQLite file", example: "job.sqlite")
      else { return nil }
      return DatabaseSettings(path: path)
    case (nil, let urlNode?):
      return readPostgres(f, urlNode).map { DatabaseSettings(postgres: $0) }
    case (_?, let urlNode?):
      reader.error(urlNode.location, "'database' takes 'path' (an SQLite file) or 'url' (PostgreSQL), not both")
    case (nil, nil):
      reader.error(node.location, "missing required key 'path' (an SQLite file) or 'url' (PostgreSQL) in database")
    }
    return nil
  }

  /// `database.url`, checked with `PostgresURL`, with `password` and `schema`; the URL's
  /// password and `database.password` are secrets. Every problem is reported.
  private mutating func readPostgres(_ f: Fields, _ urlNode: YAMLNode) -> PostgresTarget? {
    var url: PostgresURL?
    if let text = reader.nonEmptyString(urlNode, "database.url") {
      do {
        url = try PostgresURL(text)
      } catch {
        // The source line is shown with the error: mask what looks like a password first.
        for password in PostgresURL.passwordTexts(in: text) { reader.redactor.add(password) }
        reader.error(urlNode.location, "'database.url': \(error.message)")
      }
    }
    if let password = url?.password { reader.redactor.add(password) }
    var password: String?
    if let node = f["password"] {
      password = reader.string(node, "database.password", secret: true)
      if url?.password != nil {
        reader.error(node.location, "'database.password' and a password in 'database.url' both given; give it once, in database.password")
      }
    }
    var schema: String? = PostgresTarget.defaultSchema
    if let node = f["schema"] {
      schema = reader.nonEmptyString(node, "database.schema")
      if let name = schema, name.utf8.count > 63 {
        reader.error(node.location, "'database.schema' has \(name.utf8.count) bytes; PostgreSQL names have at most 63")
        schema = nil
      } else if let name = schema, Self.isSystemSchema(name) {
        reader.error(
          node.location,
          "'database.schema': \(name) is a PostgreSQL system schema (information_schema, and every name starting with pg_); give the job's tables a schema of their own, such as public or staging"
        )
        schema = nil
      }
    }
    let timeouts = f["timeouts"].map { readDatabaseTimeouts($0) } ?? DatabaseTimeouts()
    guard let url, let schema, let timeouts else { return nil }
    return PostgresTarget(url: url, password: password, schema: schema, timeouts: timeouts)
  }

  /// `database.timeouts`.
  private mutating func readDatabaseTimeouts(_ node: YAMLNode) -> DatabaseTimeouts? {
    guard let f = reader.fields(node, "database.timeouts", keys: ManifestSchema.databaseTimeouts) else { return nil }
    var t = DatabaseTimeouts()
    if let d = reader.duration(f, "connect") { t.connect = d }
    if let d = reader.duration(f, "idle") { t.idle = d }
    if let d = reader.duration(f, "statement") { t.statement = d }
    return t
  }

  /// PostgreSQL's own schemas: `information_schema` and every name starting with `pg_`
  /// (`pg_catalog`, `pg_toast`, `pg_temp`, `pg_temp_3`, ...), a prefix PostgreSQL reserves
  /// ("unacceptable schema name": CREATE SCHEMA refuses it). Compared as written: dray
  /// quotes the schema, so `PG_DATA` is a user's schema.
  static func isSystemSchema(_ name: String) -> Bool {
    name == "information_schema" || name.hasPrefix("pg_")
  }

  private mutating func readDownload(_ node: YAMLNode) -> DownloadSettings? {
    guard let f = reader.fields(node, "download", keys: ManifestSchema.download) else { return nil }
    var d = DownloadSettings()
    if let p = reader.string(f, "path") { d.path = p }
    if let r = reader.bool(f, "resume") { d.resume = r }
    return d
  }

  private mutating func readState(_ node: YAMLNode) -> StateSettings? {
    guard let f = reader.fields(node, "state", keys: ManifestSchema.state) else { return nil }
    guard let p = reader.string(f, "path") else { return StateSettings() }
    return StateSettings(path: p)
  }

  private mutating func readReport(_ node: YAMLNode) -> ReportSettings? {
    guard let f = reader.fields(node, "report", keys: ManifestSchema.report) else { return nil }
    var r = ReportSettings()
    if let node = f["path"], let p = reader.string(f, "path"),
      fileShaped(node, "report.path", p, what: "report file", example: "{job}-{run_id}.json")
    {
      checkPlaceholders(p, node: node)
      r.path = p
    }
    if let node = f["formats"] {
      if case .sequence(let items) = node.content {
        r.formats = items.enumerated().compactMap { reader.choice($1, "report.formats[\($0)]", as: ReportSettings.Format.self) }
      } else {
        reader.error(node.location, "'report.formats' must be a list such as [json, junit], found \(node.kindDescription)")
      }
    }
    return r
  }

  /// The placeholders a report path may hold.
  static let reportPlaceholders = ["job", "run_id"]

  /// Every `{name}` in the report path must be a known placeholder.
  private mutating func checkPlaceholders(_ path: String, node: YAMLNode) {
    var rest = Substring(path)
    while let open = rest.firstIndex(of: "{") {
      guard let close = rest[open...].firstIndex(of: "}") else {
        reader.error(node.location, "'report.path' has a '{' without '}'; placeholders are {job} and {run_id}")
        return
      }
      let name = String(rest[rest.index(after: open)..<close])
      if !Self.reportPlaceholders.contains(name) {
        var message = "'report.path' holds an unknown placeholder '{\(name)}'"
        if let s = EditDistance.closest(to: name, among: Self.reportPlaceholders) { message += "; did you mean '{\(s)}'?" }
        reader.error(node.location, message + " (placeholders: {job}, {run_id})")
      }
      rest = rest[rest.index(after: close)...]
    }
  }

  /// A `retry:` block over `base`: keys given replace the base's. The job's (`jobWide`)
  /// also holds the run's `wait_budget`.
  private mutating func readRetry(_ node: YAMLNode, _ path: String, base: RetryPolicy, jobWide: Bool) -> RetryPolicy {
    guard let f = reader.fields(node, path, keys: jobWide ? ManifestSchema.jobRetry : ManifestSchema.retry) else {
      return base
    }
    var r = base
    if let v = reader.integer(f, "count") { r.count = v }
    if let v = reader.duration(f, "interval") { r.interval = v }
    if let v = reader.choice(f, "backoff", as: RetryPolicy.Backoff.self) { r.backoff = v }
    if let v = reader.duration(f, "max_interval") { r.maxInterval = v }
    if let v = reader.bool(f, "jitter") { r.jitter = v }
    if let v = reader.duration(f, "max_elapsed") { r.maxElapsed = v }
    if let v = reader.duration(f, "max_retry_after") { r.maxRetryAfter = v }
    if jobWide, let v = reader.duration(f, "wait_budget") { r.waitBudget = v }
    if r.maxInterval < r.interval, let node = f["max_interval"] ?? f["interval"] {
      reader.error(
        node.location, "'\(path).max_interval' (\(r.maxInterval.formatted)) is shorter than '\(path).interval' (\(r.interval.formatted))")
    }
    return r
  }

  // MARK: Steps

  /// Reads a list of steps. `group` is the id of the `parallel` step holding them, if any.
  private mutating func readSteps(_ node: YAMLNode, _ path: String, retry: RetryPolicy, timeouts: Timeouts, group: String?) -> [Step] {
    guard case .sequence(let items) = node.content else {
      reader.error(node.location, "'\(path)' must be a list of steps, found \(node.kindDescription)")
      return []
    }
    if items.isEmpty {
      reader.error(node.location, "'\(path)' is empty; \(group == nil ? "a job" : "a parallel group") needs at least one step")
    }
    var steps: [Step] = []
    for (index, item) in items.enumerated() {
      // A step either decodes or is a diagnostic: one that did neither would vanish from
      // validate, plan, run and the report alike.
      let found = reader.diagnostics.count
      if let step = readStep(item, position: index + 1, retry: retry, timeouts: timeouts, group: group) {
        steps.append(step)
      } else if reader.diagnostics.count == found {
        reader.error(
          item.location,
          "\(stepLabel(id: nil, position: index + 1, group: group)) could not be read, yet no problem in it was named; this is a bug in dray: please report it with this step"
        )
      }
    }
    return steps
  }

  /// How messages name a step: `step 'countries'`, or `step 3` (`step 2 of 'group'`) when it
  /// has no usable id.
  private func stepLabel(id: String?, position: Int, group: String?) -> String {
    if let id { return "step '\(id)'" }
    return "step \(position)" + (group.map { " of '\($0)'" } ?? "")
  }

  private mutating func readStep(_ node: YAMLNode, position: Int, retry: RetryPolicy, timeouts: Timeouts, group: String?) -> Step? {
    guard case .mapping(let pairs) = node.content else {
      reader.error(
        node.location,
        "\(stepLabel(id: nil, position: position, group: group)) must be a mapping with one step kind, such as '- sql: SELECT 1', "
          + "found \(node.kindDescription)")
      return nil
    }
    // The id names the step in every later message, so it is read first.
    var explicitID: String?
    var idIsValid = true
    if let idNode = pairs.first(where: { $0.key.scalar?.text == "id" })?.value {
      if let value = reader.nonEmptyString(idNode, "id").map(Self.normalizedName) {
        if Self.isIdentifier(value) {
          explicitID = value
        } else {
          reader.error(idNode.location, "step id may hold letters, digits, '-', '_' and '.' only, found '\(value)'")
          idIsValid = false
        }
      } else {
        idIsValid = false
      }
    }
    let label = stepLabel(id: explicitID, position: position, group: group)

    let kinds = ManifestSchema.stepKinds.names
    let common = ManifestSchema.stepCommon.names
    var f = Fields(node: node, path: label, keys: ManifestSchema.stepCommon + ManifestSchema.stepKinds)
    var unknown: [YAMLNode.Pair] = []
    for pair in pairs {
      let key = pair.key.scalar?.text ?? ""
      if common.contains(key) || kinds.contains(key) {
        f.entries[key] = pair
      } else {
        unknown.append(pair)
      }
    }
    let given = kinds.filter { f[$0] != nil }
    // An unknown key of a step without a kind is most likely a misspelt or unknown kind: one
    // message says so, instead of two.
    var kindReported = false
    for pair in unknown {
      let key = pair.key.scalar?.text ?? ""
      if let suggestion = EditDistance.closest(to: key, among: common + kinds) {
        reader.error(pair.key.location, "unknown key '\(key)' in \(label); did you mean '\(suggestion)'?")
        kindReported = kindReported || kinds.contains(suggestion)
      } else if given.isEmpty {
        reader.error(pair.key.location, "unknown step kind '\(key)' in \(label); step kinds: \(kinds.joined(separator: ", "))")
        kindReported = true
      } else if case .mapping(let options, _) = ManifestSchema.stepKinds[given[0]]?.value, options.names.contains(key) {
        reader.error(pair.key.location, "'\(key)' is an option of \(given[0]); indent it under '\(given[0])' in \(label)")
      } else {
        let valid = (common + [given[0]]).joined(separator: ", ")
        reader.error(pair.key.location, "unknown key '\(key)' in \(label); valid keys: \(valid) (a step's options go inside its kind)")
      }
    }
    guard given.count == 1, let kindKey = given.first, let kindName = StepKind.Name(rawValue: kindKey), let kindNode = f[kindKey] else {
      if given.isEmpty {
        if !kindReported {
          reader.error(node.location, "\(label) has no kind; give one of: \(kinds.joined(separator: ", "))")
        }
      } else {
        reader.error(
          f.entries[given[1]]!.key.location,
          "a step has one kind; this one has \(given.joined(separator: " and ")): split it into \(given.count) steps")
      }
      return nil
    }
    if group != nil && kindName == .parallel {
      reader.error(
        f.entries[kindKey]!.key.location,
        "a parallel group cannot hold another parallel group; list its steps in the group '\(group!)' instead")
      return nil
    }
    // A member of a group without an id is named after the group, so that it cannot clash
    // with a top-level step's default id: `all-sales.table_stream-2`. A step whose id is
    // wrong is still read under its default id (one pass names its other problems too),
    // and then dropped.
    let id = explicitID ?? (group.map { "\($0)." } ?? "") + "\(kindKey)-\(position)"
    let idLocation = f["id"]?.location ?? node.location
    if idIsValid, let first = stepIDs[IdentifierKey(id)] {
      let owner = first.isDefault ? " (the default id of the step there)" : ""
      if IdentifierKey.sameBytes(first.id, id) {
        reader.error(idLocation, "duplicate step id '\(id)'; it is already used at line \(first.location.line)\(owner)")
      } else {
        reader.error(
          idLocation,
          "step id '\(id)' differs from '\(first.id)' at line \(first.location.line)\(owner) only in letter case; "
            + "dray names tables and files after step ids, where case does not count: choose another id")
      }
    } else if idIsValid {
      stepIDs[IdentifierKey(id)] = (id, idLocation, explicitID == nil)
    }
    stepKinds.append((id, kindName, node.location))
    let description = f["description"].flatMap { reader.string($0, "steps.\(id).description") }
    let stepRetry = f["retry"].map { readRetry($0, "steps.\(id).retry", base: retry, jobWide: false) } ?? retry
    let stepTimeouts = f["timeouts"].flatMap { readTimeouts($0, "steps.\(id).timeouts", base: timeouts) } ?? timeouts
    let kindPath = "steps.\(id).\(kindKey)"
    let kind: StepKind?
    switch kindName {
    case .schemes: kind = readSchemes(kindNode, kindPath)
    case .tableStream: kind = readTableStream(kindNode, kindPath)
    case .table: kind = readTable(kindNode, kindPath)
    case .request: kind = readRequest(kindNode, kindPath)
    case .files: kind = readFiles(kindNode, kindPath)
    case .sql: kind = readSQL(kindNode, kindPath)
    case .query: kind = readQuery(kindNode, kindPath)
    case .http: kind = readHTTP(kindNode, kindPath)
    case .parallel: kind = readParallel(kindNode, kindPath, retry: stepRetry, timeouts: stepTimeouts)
    }
    if let kind { noteSQL(kind, id: id, node: kindNode) }
    guard let kind, idIsValid else {
      if kindName == .tableStream { hasBrokenLoader = true }
      return nil
    }
    return Step(id: id, kind: kind, retry: stepRetry, timeouts: stepTimeouts, location: node.location, description: description)
  }

  private mutating func readSchemes(_ node: YAMLNode, _ path: String) -> StepKind? {
    if let s = node.scalar, s.style == .plain, CoreSchema.resolve(s.text) == .null { return .schemes(SchemesStep()) }
    guard let f = reader.fields(node, path, keys: ManifestSchema.schemes) else { return nil }
    var resources: [String]?
    if let node = f["resources"] {
      resources = reader.nameList(
        node, f.path("resources"), whenEmpty: "list the resources whose tables to create, or drop 'resources' for every readable resource")
      if resources == nil { return nil }
    }
    return .schemes(SchemesStep(resources: resources))
  }

  private mutating func resourceAndParams(_ f: Fields) -> (String, JSONValue)? {
    let resource = reader.string(f, "resource")
    let params = f["params"].flatMap { reader.jsonObject($0, f.path("params")) } ?? f.defaultValue("params")
    guard let resource else { return nil }
    return (resource, params)
  }

  private mutating func readTableStream(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.tableStream) else { return nil }
    let rp = resourceAndParams(f)
    let delta = reader.bool(f, "delta") ?? f.defaultValue("delta")
    let transaction = reader.bool(f, "transaction") ?? f.defaultValue("transaction")
    let writes = reader.bool(f, "writes")
    let expect = readExpect(f, names: "rows or column names", example: "rows: { min: 1 }", load: true)
    guard let (resource, params) = rp else { return nil }
    return .tableStream(
      TableStreamStep(resource: resource, params: params, delta: delta, transaction: transaction, writes: writes, expect: expect))
  }

  private mutating func readTable(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.table) else { return nil }
    let rp = resourceAndParams(f)
    let output = f.required("output", &reader).flatMap { outputPath($0, f.path("output")) }
    let format = reader.choice(f, "format", as: OutputFormat.self) ?? f.defaultValue("format")
    let transaction = reader.bool(f, "transaction") ?? f.defaultValue("transaction")
    let writes = reader.bool(f, "writes")
    guard let (resource, params) = rp, let output else { return nil }
    return .table(TableStep(resource: resource, params: params, output: output, format: format, transaction: transaction, writes: writes))
  }

  private mutating func readRequest(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.request) else { return nil }
    let rp = resourceAndParams(f)
    let output = f["output"].flatMap { outputPath($0, f.path("output")) }
    let transaction = reader.bool(f, "transaction") ?? f.defaultValue("transaction")
    let writes = reader.bool(f, "writes")
    guard let (resource, params) = rp else { return nil }
    return .request(RequestStep(resource: resource, params: params, output: output, transaction: transaction, writes: writes))
  }

  private mutating func readFiles(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.files) else { return nil }
    let connection = reader.string(f, "connection")
    let action = reader.choice(f, "action", as: FilesStep.Action.self)
    let remote = reader.string(f, "path")
    let local = f["local"].flatMap { filesLocalPath($0, f.path("local"), action: action, remote: remote) }
    let missingOK = reader.bool(f, "missing_ok") ?? f.defaultValue("missing_ok")
    guard let action else { return nil }
    // What the action needs is checked even when the connection is wrong: one pass.
    var ok = connection != nil && (f["path"] == nil || remote != nil) && (f["local"] == nil || local != nil)
    if f["path"] == nil && action != .list {
      reader.error(node.location, "missing required key 'path' in \(path) (the file on the server for '\(action.rawValue)')")
      ok = false
    }
    if f["local"] == nil && (action == .get || action == .put) {
      reader.error(node.location, "missing required key 'local' in \(path) (the local file for '\(action.rawValue)')")
      ok = false
    }
    guard ok, let connection else { return nil }
    return .files(FilesStep(connection: connection, action: action, path: remote ?? ".", local: local, missingOK: missingOK))
  }

  private mutating func readSQL(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let sql = reader.nonEmptyString(node, path) else { return nil }
    return .sql(SQLStep(sql: sql))
  }

  private mutating func readQuery(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.query) else { return nil }
    let sql = reader.string(f, "sql")
    let output = f["output"].flatMap { outputPath($0, f.path("output")) }
    let format = reader.choice(f, "format", as: OutputFormat.self) ?? f.defaultValue("format")
    let expectations = readExpect(f, names: "column names", example: "n: { min: 1 }")
    guard let sql else { return nil }
    return .query(QueryStep(sql: sql, output: output, format: format, expect: expectations))
  }

  /// The `expect` of a `query` step or a load: conditions by name, each with at least one
  /// of `min`, `max`, `equals`. A condition no value can meet is refused: `min` above `max`,
  /// `equals` outside them, `equals` a list or a mapping (a column holds one value), a bound
  /// that is no finite number, an empty name; for a load (`load`), `rows` is its row count:
  /// `equals` a whole number of at least 0, `max` at least 0.
  /// - Parameters:
  ///   - names: what the names are, and `example` a condition, for when `expect` is not a
  ///     mapping.
  mutating func readExpect(_ f: Fields, names: String, example: String, load: Bool = false) -> [Expectation] {
    var expectations: [Expectation] = []
    if let node = f["expect"], !node.isMapping {
      reader.error(
        node.location,
        "'\(f.path("expect"))' must be a mapping of \(names) to conditions, such as \(example), found \(node.kindDescription)")
    } else if let node = f["expect"], case .mapping(let pairs) = node.content {
      for pair in pairs {
        let column = pair.key.scalar?.text ?? ""
        let cpath = "\(f.path("expect")).\(column)"
        if column.isEmpty {
          reader.error(pair.key.location, "'\(f.path("expect"))' names a column with no name; give the column's name, such as \(example)")
        }
        guard let c = reader.fields(pair.value, cpath, keys: ManifestSchema.expectation) else { continue }
        var x = Expectation(column: column)
        x.min = c["min"].flatMap { number($0, c.path("min")) }
        x.max = c["max"].flatMap { number($0, c.path("max")) }
        x.equals = c["equals"].flatMap { node in finite(node, c.path("equals")) ? reader.json(node, c.path("equals")) : nil }
        if case .mapping(let conditions) = pair.value.content, conditions.isEmpty {
          reader.error(pair.value.location, "'\(cpath)' needs at least one of min, max, equals")
        }
        checkSatisfiable(x, c, rowCount: load && column == "rows")
        expectations.append(x)
      }
    }
    return expectations
  }

  /// Refuses a condition no value can meet (see `readExpect`), at the key that makes it so.
  private mutating func checkSatisfiable(_ x: Expectation, _ c: Fields, rowCount: Bool) {
    if let min = x.min, let max = x.max, ExactNumber.compare(min, max) == 1, let node = c["max"] {
      reader.error(node.location, "'\(c.path("max"))' is \(max), below min \(min): no value is both; swap them or correct one")
    }
    if rowCount, let max = x.max, ExactNumber.compare(max, 0) == -1, let node = c["max"] {
      reader.error(node.location, "'\(c.path("max"))' is \(max), but a row count is never below 0; give 0 or more")
    }
    guard let equals = x.equals, let node = c["equals"] else { return }
    let wanted = rowCount ? "a row count, a whole number of at least 0" : "a number, a string, true, false or null (a column's value)"
    switch equals {
    case .array, .object:
      reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(node.kindDescription)")
      return
    case .integer(let n) where rowCount && n < 0:
      reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(n)")
      return
    case .integer:
      break
    case .number(let text) where rowCount:
      reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(text)")
      return
    case .number:
      break
    case .string, .bool, .null:
      if rowCount {
        let found = if case .string = equals { "a string ('\(node.scalar?.text ?? "")')" } else { equals.json }
        reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(found)")
      }
      return
    }
    guard let value = ExactNumber(equals) else { return }
    if let min = x.min, ExactNumber.compare(value, min) == -1 {
      reader.error(node.location, "'\(c.path("equals"))' is \(value), below min \(min): no value meets both; correct one")
    } else if let max = x.max, ExactNumber.compare(value, max) == 1 {
      reader.error(node.location, "'\(c.path("equals"))' is \(value), above max \(max): no value meets both; correct one")
    }
  }

  /// False, after an error, when `node` is a plain infinity or NaN (`.inf`, `-.Inf`, `.nan`):
  /// no condition compares with one (quote it to compare with that text).
  private mutating func finite(_ node: YAMLNode, _ path: String) -> Bool {
    guard let scalar = node.scalar, scalar.style == .plain, scalar.tag == nil, case .float(let d) = CoreSchema.resolve(scalar.text),
      !d.isFinite
    else { return true }
    reader.error(node.location, "'\(path)' must be a finite number, found \(scalar.text); write a number such as 1000")
    return false
  }

  private mutating func number(_ node: YAMLNode, _ path: String) -> ExactNumber? {
    guard finite(node, path) else { return nil }
    switch reader.json(node, path) {
    case .integer(let i): return .integer(i)
    case .number(let text): return ExactNumber(.number(text))
    case nil: return nil
    default:
      reader.error(node.location, "'\(path)' must be a number, found \(node.kindDescription)")
      return nil
    }
  }

  private mutating func readParallel(_ node: YAMLNode, _ path: String, retry: RetryPolicy, timeouts: Timeouts) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.parallel) else { return nil }
    let max = reader.integer(f, "max") ?? f.defaultValue("max")
    guard let stepsNode = f.required("steps", &reader) else { return nil }
    let id = String(path.dropFirst("steps.".count).dropLast(".parallel".count))
    let steps = readSteps(stepsNode, f.path("steps"), retry: retry, timeouts: timeouts, group: id)
    return .parallel(ParallelStep(max: max, steps: steps))
  }

  // MARK: Cross-checks

  /// Steps that talk to the platform need `platform` and `auth`; steps on tables need
  /// `database`. Each missing block is reported once, at the first step that needs it.
  /// Every step counts, read or not (`stepKinds`): a step's own problem does not hide a
  /// missing block.
  private mutating func checkRequirements(top: Fields) {
    let callsPlatform: (StepKind.Name) -> Bool = {
      switch $0 {
      case .schemes, .tableStream, .table, .request, .files: true
      case .sql, .query, .http, .parallel: false
      }
    }
    let usesDatabase: (StepKind.Name) -> Bool = {
      switch $0 {
      case .schemes, .tableStream, .sql, .query: true
      case .table, .request, .files, .http, .parallel: false
      }
    }
    if let step = stepKinds.first(where: { callsPlatform($0.kind) }) {
      let missing = ["platform", "auth"].filter { top[$0] == nil }
      if !missing.isEmpty {
        let blocks =
          missing.count == 2 ? "the 'platform' and 'auth' blocks" : missing[0] == "auth" ? "an 'auth' block" : "a 'platform' block"
        reader.error(step.location, "step '\(step.id)' (\(step.kind.rawValue)) calls the platform; add \(blocks)")
      }
    }
    if top["database"] == nil, let step = stepKinds.first(where: { usesDatabase($0.kind) }) {
      reader.error(
        step.location,
        "step '\(step.id)' (\(step.kind.rawValue)) uses the database; add a 'database' block with a 'path' (SQLite) or a 'url' (PostgreSQL)"
      )
    }
  }

  /// Remembers the SQL of a `sql` or `query` step for `checkTemplates`.
  private mutating func noteSQL(_ kind: StepKind, id: String, node: YAMLNode) {
    switch kind {
    case .sql(let step):
      sqlSources.append((id, step.sql, node))
    case .query(let step):
      if case .mapping(let pairs) = node.content, let sql = pairs.first(where: { $0.key.scalar?.text == "sql" })?.value {
        sqlSources.append((id, step.sql, sql))
      }
    case .schemes, .tableStream, .table, .request, .files, .http, .parallel:
      break
    }
  }

  /// Every `{{ table "R" "T" }}` must be well formed and name a resource (with the same
  /// parameters) that some `table_stream` step loads. Problems point at the `{{` itself when
  /// it can be found in the manifest's text.
  private mutating func checkTemplates(_ manifest: Manifest) {
    var loaded: [(resource: String, params: String)] = []
    var httpTables: [String: String] = [:]
    for step in manifest.allSteps {
      if case .tableStream(let t) = step.kind { loaded.append((t.resource, t.params.canonicalJSON)) }
      if case .http(let h) = step.kind, let table = h.load?.table { httpTables[table] = step.id }
    }
    let resources = Array(Set(loaded.map(\.resource))).sorted()
    for (stepID, sql, node) in sqlSources {
      let template: SQLTemplate
      do {
        template = try SQLTemplate(parsing: sql)
      } catch {
        reader.error(templateLocation(sql, offset: error.offset, node: node), "step '\(stepID)': \(error.message)")
        continue
      }
      for reference in template.references {
        // Found only for a reference in error: it searches the manifest's text.
        var at: SourceLocation { templateLocation(sql, offset: reference.offset, node: node) }
        var params = JSONValue.object([])
        if let text = reference.paramsJSON {
          let parsed: JSONValue?
          do {
            parsed = try JSONValue(parsing: text)
          } catch  where error.isTooDeep {
            // Not quoted: such parameters run to many kilobytes.
            reader.error(
              at,
              "step '\(stepID)': the parameters of \(reference.written(parameters: false)) are not valid JSON (\(error.message)); "
                + "write them as a JSON object in single quotes, such as '{\"region\":\"EU\"}'")
            continue
          } catch {
            parsed = nil
          }
          guard let parsed, case .object = parsed else {
            reader.error(
              at,
              "step '\(stepID)': the parameters '\(text)' of \(reference.written(parameters: false)) are not a JSON object; "
                + "write them as JSON in single quotes, such as '{\"region\":\"EU\"}'")
            continue
          }
          params = parsed
        }
        let canonical = params.canonicalJSON
        if hasBrokenLoader || loaded.contains(where: { $0.resource == reference.resource && $0.params == canonical }) { continue }
        var message = "step '\(stepID)': \(reference.written()) names "
        if let httpStep = httpTables[reference.resource], !resources.contains(reference.resource) {
          message +=
            "the table of http step '\(httpStep)', which is not a platform resource: write its name as it is, \"\(reference.resource.replacing("\"", with: "\"\""))\""
        } else if resources.contains(reference.resource) {
          let given = loaded.filter { $0.resource == reference.resource }.map { $0.params == "{}" ? "none" : $0.params }
          message +=
            "parameters \(canonical) that no table_stream step of \(reference.resource) loads (loaded: \(given.joined(separator: ", ")))"
        } else {
          message += "a resource that no table_stream step loads"
          if let s = EditDistance.closest(to: reference.resource, among: resources) {
            message += "; did you mean '\(s)'?"
          } else if resources.isEmpty {
            message +=
              "; add a table_stream step for \(reference.resource) before this step, or, for a table another job loads, write the physical name that `dray tables DATABASE` prints"
          } else {
            message += " (loaded: \(resources.joined(separator: ", ")))"
          }
        }
        reader.error(at, message)
      }
    }
  }

  /// Where the `{{` at `offset` (in Unicode scalars) of `sql` stands in the manifest: the
  /// k-th `{{` of the node's text is the k-th `{{` of the source from the node on (YAML
  /// escapes and folding never make or break a `{{`). Falls back to the node's position
  /// when the text was changed by `${...}` or cannot be matched.
  private func templateLocation(_ sql: String, offset: Int, node: YAMLNode) -> SourceLocation {
    guard let raw = node.scalar?.text, !source.isEmpty else { return node.location }
    let scalars = Array(sql.unicodeScalars)
    func countOpenings(_ s: ArraySlice<Unicode.Scalar>) -> Int {
      var n = 0
      var i = s.startIndex
      while i + 1 < s.endIndex {
        if s[i] == "{" && s[i + 1] == "{" {
          n += 1
          i += 2
        } else {
          i += 1
        }
      }
      return n
    }
    guard offset <= scalars.count, countOpenings(scalars[...]) == countOpenings(Array(raw.unicodeScalars)[...]) else {
      return node.location
    }
    var remaining = countOpenings(scalars[..<offset])
    var lineNumber = 0
    for line in SourceText.lines(source) {
      lineNumber += 1
      guard lineNumber >= node.location.line else { continue }
      let chars = Array(line.unicodeScalars)
      var i = lineNumber == node.location.line ? node.location.column - 1 : 0
      while i + 1 < chars.count {
        if chars[i] == "{" && chars[i + 1] == "{" {
          if remaining == 0 { return SourceLocation(file: node.location.file, line: lineNumber, column: i + 1) }
          remaining -= 1
          i += 2
        } else {
          i += 1
        }
      }
    }
    return node.location
  }
}
