internal import DrayJSON
internal import DrayModel

/// Turns a manifest's node tree into a `Manifest`, recording every problem on the way.
struct ManifestValidator {
  static let topLevelKeys = [
    "version", "job", "description", "secrets", "platform", "auth", "database", "download",
    "retry", "state", "report", "steps",
  ]
  static let stepKinds = ["schemes", "table_stream", "table", "request", "files", "sql", "query", "http", "parallel"]
  static let stepCommonKeys = ["id", "description", "retry", "timeouts"]

  let path: String
  let directory: String
  let root: YAMLNode
  var reader: NodeReader
  private var stepIDs: [String: SourceLocation] = [:]

  init(path: String, directory: String, environment: [String: String], root: YAMLNode) {
    self.path = path
    self.directory = directory
    self.root = root
    self.reader = NodeReader(interpolator: Interpolator(environment: environment, secretVariables: [], directory: directory))
    // The secrets list decides how everything else is read, so it comes first.
    if case .mapping(let pairs) = root.content, let node = pairs.first(where: { $0.key.scalar?.text == "secrets" })?.value {
      let names = readSecretNames(node)
      reader = NodeReader(interpolator: Interpolator(environment: environment, secretVariables: names, directory: directory))
      for name in names { if let value = environment[name] { reader.redactor.add(value) } }
    }
  }

  mutating func validate() -> Manifest? {
    guard let top = reader.fields(root, "", known: Self.topLevelKeys) else { return nil }
    let version = top.required("version", &reader).flatMap { readVersion($0) }
    let job = top.required("job", &reader).flatMap { readJobName($0) }
    let description = top["description"].flatMap { reader.string($0, "description") }
    let platform = top["platform"].flatMap { readPlatform($0) }
    let auth = top["auth"].flatMap { readAuth($0) }
    let database = top["database"].flatMap { readDatabase($0) }
    let download = top["download"].flatMap { readDownload($0) } ?? DownloadSettings()
    let retry = top["retry"].map { readRetry($0, "retry", base: .default) } ?? .default
    let state = top["state"].flatMap { readState($0) } ?? StateSettings()
    let report = top["report"].flatMap { readReport($0) } ?? ReportSettings()
    let timeouts = platform?.timeouts ?? Timeouts()
    var steps: [Step] = []
    if let node = top.required("steps", &reader) {
      steps = readSteps(node, "steps", retry: retry, timeouts: timeouts, nested: false)
    }
    guard let version, let job else { return nil }
    var manifest = Manifest(
      path: path, directory: directory, version: version, job: job, description: description,
      platform: platform, auth: auth, database: database, download: download, retry: retry,
      state: state, report: report, steps: steps, redactor: reader.redactor)
    checkRequirements(manifest, top: top)
    checkTemplates(manifest)
    manifest.redactor = reader.redactor
    return manifest
  }

  // MARK: Top-level blocks

  private mutating func readSecretNames(_ node: YAMLNode) -> Set<String> {
    guard case .sequence(let items) = node.content else {
      reader.error(node.location, "'secrets' must be a list of environment variable names, found \(node.kindDescription)")
      return []
    }
    var names: Set<String> = []
    for item in items {
      guard let text = item.scalar?.text, !text.isEmpty, !text.contains("$") else {
        reader.error(item.location, "'secrets' lists environment variable names, such as API_TOKEN")
        continue
      }
      names.insert(text)
    }
    return names
  }

  private mutating func readVersion(_ node: YAMLNode) -> Int? {
    guard let version = reader.integer(node, "version", in: 1...Int.max) else { return nil }
    if version > Manifest.supportedVersion {
      reader.error(
        node.location,
        "manifest version \(version) is newer than this dray supports (\(Manifest.supportedVersion)); upgrade dray or write version: \(Manifest.supportedVersion)"
      )
      return nil
    }
    return version
  }

  private mutating func readJobName(_ node: YAMLNode) -> String? {
    guard let name = reader.nonEmptyString(node, "job") else { return nil }
    guard Self.isIdentifier(name) else {
      reader.error(node.location, "'job' may hold letters, digits, '-', '_' and '.' only (it names files), found '\(name)'")
      return nil
    }
    return name
  }

  static func isIdentifier(_ s: String) -> Bool {
    !s.isEmpty && s.count <= 128 && !s.hasPrefix(".")
      && s.unicodeScalars.allSatisfy {
        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0))
      }
  }

  private mutating func readPlatform(_ node: YAMLNode) -> PlatformSettings? {
    guard
      let f = reader.fields(
        node, "platform", known: ["host", "api_version", "environment", "project", "application", "device", "tls", "timeouts", "headers"])
    else { return nil }
    let host = f.required("host", &reader).flatMap { readHost($0, f.path("host")) }
    let environment = f.required("environment", &reader).flatMap { reader.nonEmptyString($0, f.path("environment")) }
    let project = f.required("project", &reader).flatMap { reader.nonEmptyString($0, f.path("project")) }
    let apiVersion = f["api_version"].flatMap { reader.nonEmptyString($0, f.path("api_version")) } ?? "v1"
    let application = f["application"].flatMap { reader.string($0, f.path("application")) }
    let device = f["device"].flatMap { reader.nonEmptyString($0, f.path("device")) } ?? "dray-cli"
    var tls = TLSSettings()
    if let node = f["tls"], let t = reader.fields(node, f.path("tls"), known: ["verify", "ca_file"]) {
      if let v = t["verify"].flatMap({ reader.bool($0, t.path("verify")) }) { tls.verify = v }
      tls.caFile = t["ca_file"].flatMap { reader.nonEmptyString($0, t.path("ca_file")) }
    }
    let timeouts = f["timeouts"].flatMap { readTimeouts($0, f.path("timeouts"), base: Timeouts()) } ?? Timeouts()
    let headers = f["headers"].flatMap { readHeaders($0, f.path("headers")) } ?? []
    guard let host, let environment, let project else { return nil }
    return PlatformSettings(
      host: host, apiVersion: apiVersion, environment: environment, project: project,
      application: application, device: device, tls: tls, timeouts: timeouts, headers: headers)
  }

  private mutating func readHost(_ node: YAMLNode, _ path: String) -> String? {
    guard var host = reader.nonEmptyString(node, path) else { return nil }
    guard host.hasPrefix("http://") || host.hasPrefix("https://"), host.count > 8 else {
      reader.error(node.location, "'\(path)' must be an http:// or https:// address, found '\(host)'")
      return nil
    }
    if !host.hasSuffix("/") { host += "/" }
    return host
  }

  /// Header names whose values are always masked.
  static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "x-api-key"]

  private mutating func readHeaders(_ node: YAMLNode, _ path: String) -> [HTTPHeader]? {
    guard case .mapping(let pairs) = node.content else {
      reader.error(node.location, "'\(path)' must be a mapping of header names to values, found \(node.kindDescription)")
      return nil
    }
    var headers: [HTTPHeader] = []
    for pair in pairs {
      let name = pair.key.scalar?.text ?? ""
      guard !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 32 && $0 != ":" }) else {
        reader.error(pair.key.location, "'\(name)' is not an HTTP header name")
        continue
      }
      let secret = Self.secretHeaders.contains(name.lowercased())
      if let value = reader.string(pair.value, "\(path).\(name)", secret: secret) {
        headers.append(HTTPHeader(name, value))
      }
    }
    return headers
  }

  private mutating func readTimeouts(_ node: YAMLNode, _ path: String, base: Timeouts) -> Timeouts? {
    guard let f = reader.fields(node, path, known: ["connect", "request", "idle"]) else { return nil }
    var t = base
    if let d = f["connect"].flatMap({ reader.duration($0, f.path("connect")) }) { t.connect = d }
    if let d = f["request"].flatMap({ reader.duration($0, f.path("request")) }) { t.request = d }
    if let d = f["idle"].flatMap({ reader.duration($0, f.path("idle")) }) { t.idle = d }
    return t
  }

  private mutating func readAuth(_ node: YAMLNode) -> Credentials? {
    guard let f = reader.fields(node, "auth", known: ["username", "password", "password_file"]) else { return nil }
    let username = f.required("username", &reader).flatMap { reader.nonEmptyString($0, "auth.username", secret: true) }
    var password: String?
    switch (f["password"], f["password_file"]) {
    case (let p?, nil):
      password = reader.string(p, "auth.password", secret: true)
    case (nil, let file?):
      if let path = reader.nonEmptyString(file, "auth.password_file") {
        let full = path.hasPrefix("/") ? path : directory + "/" + path
        do {
          password = try Interpolator(environment: [:], secretVariables: [], directory: directory).resolve("${file:\(full)}").value
          reader.redactor.add(password!)
        } catch {
          reader.error(file.location, "cannot read auth.password_file '\(path)'; check that it exists and is readable")
        }
      }
    case (_?, let file?):
      reader.error(file.location, "'auth' takes 'password' or 'password_file', not both")
    case (nil, nil):
      reader.error(node.location, "missing required key 'password' (or 'password_file') in auth")
    }
    guard let username, let password else { return nil }
    return Credentials(username: username, password: password)
  }

  private mutating func readDatabase(_ node: YAMLNode) -> DatabaseSettings? {
    guard let f = reader.fields(node, "database", known: ["path"]) else { return nil }
    guard let path = f.required("path", &reader).flatMap({ reader.nonEmptyString($0, "database.path") }) else { return nil }
    return DatabaseSettings(path: path)
  }

  private mutating func readDownload(_ node: YAMLNode) -> DownloadSettings? {
    guard let f = reader.fields(node, "download", known: ["path", "resume"]) else { return nil }
    var d = DownloadSettings()
    if let p = f["path"].flatMap({ reader.nonEmptyString($0, "download.path") }) { d.path = p }
    if let r = f["resume"].flatMap({ reader.bool($0, "download.resume") }) { d.resume = r }
    return d
  }

  private mutating func readState(_ node: YAMLNode) -> StateSettings? {
    guard let f = reader.fields(node, "state", known: ["path"]) else { return nil }
    guard let p = f["path"].flatMap({ reader.nonEmptyString($0, "state.path") }) else { return StateSettings() }
    return StateSettings(path: p)
  }

  private mutating func readReport(_ node: YAMLNode) -> ReportSettings? {
    guard let f = reader.fields(node, "report", known: ["path", "formats"]) else { return nil }
    var r = ReportSettings()
    if let p = f["path"].flatMap({ reader.nonEmptyString($0, "report.path") }) { r.path = p }
    if let node = f["formats"] {
      if case .sequence(let items) = node.content {
        r.formats = items.enumerated().compactMap { reader.choice($1, "report.formats[\($0)]", as: ReportSettings.Format.self) }
      } else {
        reader.error(node.location, "'report.formats' must be a list such as [json, junit], found \(node.kindDescription)")
      }
    }
    return r
  }

  /// A `retry:` block over `base`: keys given replace the base's.
  private mutating func readRetry(_ node: YAMLNode, _ path: String, base: RetryPolicy) -> RetryPolicy {
    guard let f = reader.fields(node, path, known: ["count", "interval", "backoff", "max_interval", "jitter", "max_elapsed"]) else {
      return base
    }
    var r = base
    if let v = f["count"].flatMap({ reader.integer($0, f.path("count"), in: 0...1000) }) { r.count = v }
    if let v = f["interval"].flatMap({ reader.duration($0, f.path("interval")) }) { r.interval = v }
    if let v = f["backoff"].flatMap({ reader.choice($0, f.path("backoff"), as: RetryPolicy.Backoff.self) }) { r.backoff = v }
    if let v = f["max_interval"].flatMap({ reader.duration($0, f.path("max_interval")) }) { r.maxInterval = v }
    if let v = f["jitter"].flatMap({ reader.bool($0, f.path("jitter")) }) { r.jitter = v }
    if let v = f["max_elapsed"].flatMap({ reader.duration($0, f.path("max_elapsed")) }) { r.maxElapsed = v }
    if r.maxInterval < r.interval, let node = f["max_interval"] ?? f["interval"] {
      reader.error(
        node.location, "'\(path).max_interval' (\(r.maxInterval.formatted)) is shorter than '\(path).interval' (\(r.interval.formatted))")
    }
    return r
  }

  // MARK: Steps

  private mutating func readSteps(_ node: YAMLNode, _ path: String, retry: RetryPolicy, timeouts: Timeouts, nested: Bool) -> [Step] {
    guard case .sequence(let items) = node.content else {
      reader.error(node.location, "'\(path)' must be a list of steps, found \(node.kindDescription)")
      return []
    }
    if items.isEmpty {
      reader.error(node.location, "'\(path)' is empty; a job needs at least one step")
    }
    var steps: [Step] = []
    for (index, item) in items.enumerated() {
      if let step = readStep(item, "\(path)[\(index)]", position: index + 1, retry: retry, timeouts: timeouts, nested: nested) {
        steps.append(step)
      }
    }
    return steps
  }

  private mutating func readStep(_ node: YAMLNode, _ path: String, position: Int, retry: RetryPolicy, timeouts: Timeouts, nested: Bool)
    -> Step?
  {
    let kinds = nested ? Self.stepKinds.filter { $0 != "parallel" } : Self.stepKinds
    guard let f = reader.fields(node, "step", known: Self.stepCommonKeys + kinds) else { return nil }
    let given = kinds.filter { f[$0] != nil }
    guard given.count == 1, let kindName = given.first, let kindNode = f[kindName] else {
      if given.isEmpty {
        reader.error(node.location, "step \(position) has no kind; give one of: \(kinds.joined(separator: ", "))")
      } else {
        reader.error(
          f.entries[given[1]]!.key.location,
          "a step has one kind; this one has \(given.joined(separator: " and ")): split it into \(given.count) steps")
      }
      return nil
    }
    let id: String
    if let idNode = f["id"] {
      guard let value = reader.nonEmptyString(idNode, "\(path).id") else { return nil }
      guard Self.isIdentifier(value) else {
        reader.error(idNode.location, "step id may hold letters, digits, '-', '_' and '.' only, found '\(value)'")
        return nil
      }
      id = value
    } else {
      id = "\(kindName)-\(position)"
    }
    let idLocation = f["id"]?.location ?? node.location
    if let first = stepIDs[id] {
      reader.error(idLocation, "duplicate step id '\(id)'; it is already used at line \(first.line)")
    } else {
      stepIDs[id] = idLocation
    }
    let stepRetry = f["retry"].map { readRetry($0, "steps.\(id).retry", base: retry) } ?? retry
    let stepTimeouts = f["timeouts"].flatMap { readTimeouts($0, "steps.\(id).timeouts", base: timeouts) } ?? timeouts
    let kindPath = "steps.\(id).\(kindName)"
    let kind: StepKind?
    switch kindName {
    case "schemes": kind = readSchemes(kindNode, kindPath)
    case "table_stream": kind = readTableStream(kindNode, kindPath)
    case "table": kind = readTable(kindNode, kindPath)
    case "request": kind = readRequest(kindNode, kindPath)
    case "files": kind = readFiles(kindNode, kindPath)
    case "sql": kind = readSQL(kindNode, kindPath)
    case "query": kind = readQuery(kindNode, kindPath)
    case "http": kind = readHTTP(kindNode, kindPath)
    default: kind = readParallel(kindNode, kindPath, retry: stepRetry, timeouts: stepTimeouts)
    }
    guard let kind else { return nil }
    return Step(id: id, kind: kind, retry: stepRetry, timeouts: stepTimeouts, location: node.location)
  }

  private mutating func readSchemes(_ node: YAMLNode, _ path: String) -> StepKind? {
    if let s = node.scalar, s.style == .plain, CoreSchema.resolve(s.text) == .null { return .schemes(SchemesStep()) }
    guard let f = reader.fields(node, path, known: ["resources"]) else { return nil }
    let resources = f["resources"].flatMap { reader.stringList($0, f.path("resources")) }
    return .schemes(SchemesStep(resources: resources))
  }

  private mutating func resourceAndParams(_ f: Fields) -> (String, JSONValue)? {
    let resource = f.required("resource", &reader).flatMap { reader.nonEmptyString($0, f.path("resource")) }
    let params = f["params"].flatMap { reader.jsonObject($0, f.path("params")) } ?? .object([])
    guard let resource else { return nil }
    return (resource, params)
  }

  private mutating func readTableStream(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, known: ["resource", "params", "delta", "transaction"]) else { return nil }
    let rp = resourceAndParams(f)
    let delta = f["delta"].flatMap { reader.bool($0, f.path("delta")) } ?? false
    let transaction = f["transaction"].flatMap { reader.bool($0, f.path("transaction")) } ?? true
    guard let (resource, params) = rp else { return nil }
    return .tableStream(TableStreamStep(resource: resource, params: params, delta: delta, transaction: transaction))
  }

  private mutating func readTable(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, known: ["resource", "params", "output", "format", "transaction"]) else { return nil }
    let rp = resourceAndParams(f)
    let output = f.required("output", &reader).flatMap { reader.nonEmptyString($0, f.path("output")) }
    let format = f["format"].flatMap { reader.choice($0, f.path("format"), as: OutputFormat.self) } ?? .json
    let transaction = f["transaction"].flatMap { reader.bool($0, f.path("transaction")) } ?? true
    guard let (resource, params) = rp, let output else { return nil }
    return .table(TableStep(resource: resource, params: params, output: output, format: format, transaction: transaction))
  }

  private mutating func readRequest(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, known: ["resource", "params", "output", "transaction"]) else { return nil }
    let rp = resourceAndParams(f)
    let output = f["output"].flatMap { reader.nonEmptyString($0, f.path("output")) }
    let transaction = f["transaction"].flatMap { reader.bool($0, f.path("transaction")) } ?? true
    guard let (resource, params) = rp else { return nil }
    return .request(RequestStep(resource: resource, params: params, output: output, transaction: transaction))
  }

  private mutating func readFiles(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, known: ["connection", "action", "path", "local", "missing_ok"]) else { return nil }
    let connection = f.required("connection", &reader).flatMap { reader.nonEmptyString($0, f.path("connection")) }
    let action = f.required("action", &reader).flatMap { reader.choice($0, f.path("action"), as: FilesStep.Action.self) }
    let remote = f["path"].flatMap { reader.nonEmptyString($0, f.path("path")) }
    let local = f["local"].flatMap { reader.nonEmptyString($0, f.path("local")) }
    let missingOK = f["missing_ok"].flatMap { reader.bool($0, f.path("missing_ok")) } ?? false
    guard let connection, let action else { return nil }
    if remote == nil && action != .list {
      reader.error(node.location, "missing required key 'path' in \(path) (the file on the server for '\(action.rawValue)')")
      return nil
    }
    if local == nil && (action == .get || action == .put) {
      reader.error(node.location, "missing required key 'local' in \(path) (the local file for '\(action.rawValue)')")
      return nil
    }
    return .files(FilesStep(connection: connection, action: action, path: remote ?? ".", local: local, missingOK: missingOK))
  }

  private mutating func readSQL(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let sql = reader.nonEmptyString(node, path) else { return nil }
    return .sql(SQLStep(sql: sql))
  }

  private mutating func readQuery(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, known: ["sql", "output", "format", "expect"]) else { return nil }
    let sql = f.required("sql", &reader).flatMap { reader.nonEmptyString($0, f.path("sql")) }
    let output = f["output"].flatMap { reader.nonEmptyString($0, f.path("output")) }
    let format = f["format"].flatMap { reader.choice($0, f.path("format"), as: OutputFormat.self) } ?? .json
    var expectations: [Expectation] = []
    if let node = f["expect"], case .scalar = node.content {
      reader.error(node.location, "'\(f.path("expect"))' must be a mapping of column names to conditions, such as n: { min: 1 }")
    } else if let node = f["expect"], case .mapping(let pairs) = node.content {
      for pair in pairs {
        let column = pair.key.scalar?.text ?? ""
        let cpath = "\(f.path("expect")).\(column)"
        guard let c = reader.fields(pair.value, cpath, known: ["min", "max", "equals"]) else { continue }
        var x = Expectation(column: column)
        x.min = c["min"].flatMap { number($0, c.path("min")) }
        x.max = c["max"].flatMap { number($0, c.path("max")) }
        x.equals = c["equals"].flatMap { reader.json($0, c.path("equals")) }
        if x.min == nil && x.max == nil && x.equals == nil {
          reader.error(pair.value.location, "'\(cpath)' needs at least one of min, max, equals")
        }
        expectations.append(x)
      }
    }
    guard let sql else { return nil }
    return .query(QueryStep(sql: sql, output: output, format: format, expect: expectations))
  }

  private mutating func number(_ node: YAMLNode, _ path: String) -> Double? {
    switch reader.json(node, path) {
    case .integer(let i): return Double(i)
    case .number(let text): return Double(text)
    case nil: return nil
    default:
      reader.error(node.location, "'\(path)' must be a number, found \(node.kindDescription)")
      return nil
    }
  }

  private mutating func readParallel(_ node: YAMLNode, _ path: String, retry: RetryPolicy, timeouts: Timeouts) -> StepKind? {
    guard let f = reader.fields(node, path, known: ["max", "steps"]) else { return nil }
    let max = f["max"].flatMap { reader.integer($0, f.path("max"), in: 1...64) } ?? 4
    guard let stepsNode = f.required("steps", &reader) else { return nil }
    let steps = readSteps(stepsNode, f.path("steps"), retry: retry, timeouts: timeouts, nested: true)
    return .parallel(ParallelStep(max: max, steps: steps))
  }

  // MARK: Cross-checks

  /// Steps that talk to the platform need `platform` and `auth`; steps on tables need `database`.
  private mutating func checkRequirements(_ manifest: Manifest, top: Fields) {
    for step in manifest.allSteps {
      switch step.kind {
      case .schemes, .tableStream, .table, .request, .files:
        if manifest.platform == nil && top["platform"] == nil {
          reader.error(step.location, "step '\(step.id)' (\(step.kindName)) calls the platform; add a 'platform' block")
        }
        if manifest.auth == nil && top["auth"] == nil {
          reader.error(step.location, "step '\(step.id)' (\(step.kindName)) calls the platform; add an 'auth' block")
        }
      default: break
      }
      switch step.kind {
      case .schemes, .tableStream, .sql, .query:
        if manifest.database == nil && top["database"] == nil {
          reader.error(step.location, "step '\(step.id)' (\(step.kindName)) uses the database; add a 'database' block with a 'path'")
        }
      default: break
      }
    }
  }

  /// Every `{{ table "R" "T" }}` must name a resource some `table_stream` step loads.
  private mutating func checkTemplates(_ manifest: Manifest) {
    var loaded: Set<String> = []
    for step in manifest.allSteps {
      if case .tableStream(let t) = step.kind { loaded.insert(t.resource + "\u{0}" + t.params.canonicalJSON) }
    }
    for step in manifest.allSteps {
      let sql: String
      switch step.kind {
      case .sql(let s): sql = s.sql
      case .query(let q): sql = q.sql
      default: continue
      }
      do {
        for reference in try SQLTemplate(parsing: sql).references {
          var params = JSONValue.object([])
          if let text = reference.paramsJSON {
            do {
              params = try JSONValue(parsing: text)
            } catch {
              reader.error(
                step.location,
                "step '\(step.id)': the parameters of {{ table \"\(reference.resource)\" ... }} are not a JSON object: \(error.message)")
              continue
            }
          }
          if !loaded.contains(reference.resource + "\u{0}" + params.canonicalJSON) {
            let loaders = loaded.map { String($0.split(separator: "\u{0}").first ?? "") }
            var message = "step '\(step.id)': {{ table \"\(reference.resource)\" \"\(reference.table)\" }} names a resource"
            message += reference.paramsJSON == nil ? "" : " and parameters"
            message += " that no table_stream step loads"
            if let s = EditDistance.closest(to: reference.resource, among: Array(Set(loaders))) { message += "; did you mean '\(s)'?" }
            reader.error(step.location, message)
          }
        }
      } catch {
        reader.error(step.location, "step '\(step.id)': \(error.message)")
      }
    }
  }
}
