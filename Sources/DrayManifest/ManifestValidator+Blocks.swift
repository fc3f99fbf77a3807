internal import DrayModel

/// Reading the top-level blocks: `secrets`, `version`, `job`, `platform` (with its headers,
/// TLS settings and time limits), `auth`, `download`, `state`, `report` and `retry`.
extension ManifestValidator {
  /// The entries of `secrets` (see `secretItems`): a name `NAME` or `${NAME}` makes the
  /// variable a secret wherever a value uses it; any other text with a reference
  /// (`${file:keys/api}`, `${A:-${B}}`) is resolved and its value masked.
  mutating func readSecretEntries(_ node: YAMLNode) -> [(name: String?, node: YAMLNode)] {
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
  mutating func readVersion(_ node: YAMLNode) -> Int? {
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

  mutating func readJobName(_ node: YAMLNode) -> String? {
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

  mutating func readPlatform(_ node: YAMLNode) -> PlatformSettings? {
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
      let secret = HTTPHeader.isSecretName(name)
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

  mutating func readTimeouts(_ node: YAMLNode, _ path: String, base: Timeouts) -> Timeouts? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.timeouts) else { return nil }
    var t = base
    if let d = reader.duration(f, "connect") { t.connect = d }
    if let d = reader.duration(f, "request") { t.request = d }
    if let d = reader.duration(f, "idle") { t.idle = d }
    return t
  }

  mutating func readAuth(_ node: YAMLNode) -> Credentials? {
    guard let f = reader.fields(node, "auth", keys: ManifestSchema.auth) else { return nil }
    let username = reader.string(f, "username", credential: true)
    let password = readPassword(f)
    guard let username, let password else { return nil }
    return Credentials(username: username, password: password)
  }

  mutating func readDownload(_ node: YAMLNode) -> DownloadSettings? {
    guard let f = reader.fields(node, "download", keys: ManifestSchema.download) else { return nil }
    var d = DownloadSettings()
    if let p = reader.string(f, "path") { d.path = p }
    if let r = reader.bool(f, "resume") { d.resume = r }
    return d
  }

  mutating func readState(_ node: YAMLNode) -> StateSettings? {
    guard let f = reader.fields(node, "state", keys: ManifestSchema.state) else { return nil }
    guard let p = reader.string(f, "path") else { return StateSettings() }
    return StateSettings(path: p)
  }

  mutating func readReport(_ node: YAMLNode) -> ReportSettings? {
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
    if let node = f["openlineage"] { r.openLineage = readOpenLineage(node) }
    if let node = f["otlp"] { r.otlp = readOTLP(node) }
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
  mutating func readRetry(_ node: YAMLNode, _ path: String, base: RetryPolicy, jobWide: Bool) -> RetryPolicy {
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
}
