internal import DrayModel

/// Reading the `http` step (docs/http.md).
extension ManifestValidator {
  mutating func readHTTP(_ node: YAMLNode, _ path: String) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.http) else { return nil }
    var ok = true
    func need<T>(_ value: T?, present: Bool) -> T? {
      if value == nil && present { ok = false }
      return value
    }

    let method = need(reader.choice(f, "method", as: HTTPStep.Method.self), present: f["method"] != nil) ?? f.defaultValue("method")
    let baseURL = f.required("base_url", &reader).flatMap { readBaseURL($0, f.path("base_url")) }
    if baseURL == nil { ok = false }
    let urlPath = need(f["path"].flatMap { readURLPath($0, f.path("path")) }, present: f["path"] != nil)
    let query = need(f["query"].flatMap { readQueryItems($0, f.path("query")) }, present: f["query"] != nil) ?? []
    let headers = need(f["headers"].flatMap { readHeaders($0, f.path("headers")) }, present: f["headers"] != nil) ?? []
    let body = need(f["body"].flatMap { readBody($0, f.path("body")) }, present: f["body"] != nil)
    let auth = need(f["auth"].flatMap { readHTTPAuth($0, f.path("auth")) }, present: f["auth"] != nil)
    let tls = need(f["tls"].flatMap { readTLS($0, f.path("tls")) }, present: f["tls"] != nil) ?? TLSSettings()
    let format = need(reader.choice(f, "format", as: AnswerFormat.self), present: f["format"] != nil) ?? f.defaultValue("format")
    let output = need(f["output"].flatMap { outputPath($0, f.path("output")) }, present: f["output"] != nil)
    let load = need(f["load"].flatMap { readLoad($0, f.path("load"), format: format) }, present: f["load"] != nil)
    var maxPages: Int?
    var more: RecordSelector?
    let paginate = f["paginate"].flatMap {
      readPagination($0, f.path("paginate"), format: format, maxPages: &maxPages, more: &more)
    }
    if f["paginate"] != nil && paginate == nil { ok = false }
    let onStatus = need(f["on_status"].flatMap { readOnStatus($0, f.path("on_status")) }, present: f["on_status"] != nil) ?? []
    let incremental = need(
      f["incremental"].flatMap { readIncremental($0, f.path("incremental"), format: format) }, present: f["incremental"] != nil)
    if let node = f["incremental"], f["load"] == nil {
      reader.error(node.location, "'\(f.path("incremental"))' takes its cursor from the records; add 'load' to '\(path)'")
      ok = false
    }

    if load?.deleteMissing == true, f["incremental"] != nil, case .mapping(let pairs)? = f["load"]?.content,
      let missingNode = pairs.first(where: { $0.key.scalar?.text == "delete_missing" })?.value
    {
      reader.error(
        missingNode.location,
        "'\(f.path("load")).delete_missing' needs a full pull, and '\(f.path("incremental"))' fetches only the changed records, "
          + "so every row would look missing; remove delete_missing, or incremental")
      ok = false
    }

    let rateLimit = need(f["rate_limit"].flatMap { readRateLimit($0, f.path("rate_limit")) }, present: f["rate_limit"] != nil)

    if !checkParameters(f, paginate: paginate, incremental: incremental) { ok = false }
    if case .login(let login)? = auth, let pair = headerPair(f["headers"], named: login.header.lowercased()) {
      reader.error(
        pair.key.location,
        "'\(f.path("headers")).\(pair.key.scalar?.text ?? "")' and '\(f.path("auth")).login' both set \(login.header); keep one")
      ok = false
    } else if auth != nil, auth?.login == nil, let pair = headerPair(f["headers"], named: "authorization") {
      reader.error(
        pair.key.location,
        "'\(f.path("headers")).\(pair.key.scalar?.text ?? "")' and '\(f.path("auth"))' both set the Authorization header; keep one")
      ok = false
    }
    if case .apiKey(let key)? = auth {
      switch key.place {
      case .header(let name):
        if let pair = headerPair(f["headers"], named: name.lowercased()) {
          reader.error(
            pair.key.location,
            "'\(f.path("headers")).\(pair.key.scalar?.text ?? "")' and '\(f.path("auth")).api_key' both set \(name); keep one")
          ok = false
        }
      case .query(let name):
        if query.contains(where: { $0.name == name }), let node = f["query"] {
          reader.error(node.location, "'\(f.path("query"))' and '\(f.path("auth")).api_key' both send \(name); keep one")
          ok = false
        }
      }
    }
    if let output, let outputNode = f["output"] {
      if paginate != nil && !output.contains("{page}") {
        reader.error(
          outputNode.location,
          "'\(f.path("output"))' must hold {page} when the step paginates, such as out/items-{page}.json: each page is saved to its own file"
        )
        ok = false
      } else if paginate == nil && output.contains("{page}") {
        reader.error(
          outputNode.location, "'\(f.path("output"))' holds {page} but the step does not paginate; add 'paginate' or drop {page}")
        ok = false
      }
    }
    // Only when `load` is absent: a `load` with a problem of its own has said so.
    if let paginate, f["load"] == nil, let node = f["paginate"] {
      switch paginate {
      case .offset:
        reader.error(node.location, "offset pagination counts the records of each page; add 'load' with 'records' to '\(path)'")
        ok = false
      case .page, .lastRecord:
        reader.error(node.location, "this pagination reads the records of each page; add 'load' with 'records' to '\(path)'")
        ok = false
      case .next, .linkHeader, .cursor, .bodyCursor:
        break
      }
    }
    // A body with a problem of its own has said so.
    let jsonBody =
      switch body {
      case .json?: true
      case .form?: false
      case nil: f["body"] != nil
      }
    if case .bodyCursor? = paginate, !jsonBody, let node = f["paginate"] {
      reader.error(node.location, "'\(f.path("paginate")).cursor.body' sends the cursor inside the JSON body; add 'body: { json: ... }'")
      ok = false
    }
    if let loadNode = f["load"], !hasTopLevelKey("database") {
      reader.error(
        loadNode.location, "'\(f.path("load"))' fills a table; add a 'database' block with a 'path' (SQLite) or a 'url' (PostgreSQL)")
      ok = false
    }
    guard ok, let baseURL else { return nil }
    return .http(
      HTTPStep(
        method: method, baseURL: baseURL, path: urlPath, query: query, headers: headers, body: body, auth: auth, tls: tls,
        format: format, output: output, load: load, paginate: paginate, maxPages: maxPages, onStatus: onStatus,
        incremental: incremental, more: more, rateLimit: rateLimit))
  }

  /// A `rate_limit`: `requests` (at least 1) in any window of `per` (longer than zero).
  private mutating func readRateLimit(_ node: YAMLNode, _ path: String) -> HTTPStep.RateLimit? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpRateLimit) else { return nil }
    let requests = reader.integer(f, "requests")
    // Zero or a negative window would let no request through, or any number: said as such.
    if let node = f["per"], let text = node.scalar?.text,
      text.hasPrefix("-") || NodeReader.parseDuration(text) == .zero
    {
      reader.error(
        node.location,
        NodeReader.roundsToZero(text)
          ? "'\(f.path("per"))' is \(text), which rounds to 0: durations are counted in whole milliseconds; write the window, at least 1ms, such as 1s or 1m"
          : "'\(f.path("per"))' must be longer than zero, found \(text); write the window, such as 1s or 1m")
      return nil
    }
    let per = reader.duration(f, "per")
    guard let requests, let per else { return nil }
    return HTTPStep.RateLimit(requests: requests, per: per)
  }

  /// Refuses a query parameter that two parts of an `http` step both send, so that each
  /// request would carry it twice: `incremental.param`, and the parameters of `offset` and
  /// `page` pagination, against each other and against `query`. (A cursor pagination's
  /// `param` may be `incremental.param`: the next page's cursor replaces the first page's
  /// value.)
  /// - Returns: false after a diagnostic for each clash.
  private mutating func checkParameters(
    _ f: Fields, paginate: HTTPStep.Pagination?, incremental: HTTPStep.Incremental?
  ) -> Bool {
    func child(_ node: YAMLNode?, _ key: String) -> YAMLNode? {
      guard let node, case .mapping(let pairs) = node.content else { return nil }
      return pairs.first { $0.key.scalar?.text == key }?.value
    }
    // Each parameter dray sets: its name, the key that names it (its default when not
    // given, placed at the block), and where the step's query should give its value instead.
    var sent: [(name: String, key: String, node: YAMLNode?, instead: String)] = []
    if let incremental {
      let node = child(f["incremental"], "param")
      sent.append((incremental.param, f.path("incremental.param"), node, "'\(f.path("incremental.initial"))' gives the first value"))
    }
    let pages = f["paginate"]
    switch paginate {
    case .offset(let param, let limitParam, _, _)?:
      let block = child(pages, "offset")
      let instead = "'start' and 'limit' of '\(f.path("paginate.offset"))' give its values"
      sent.append((param, f.path("paginate.offset.param"), child(block, "param") ?? block ?? pages, instead))
      sent.append((limitParam, f.path("paginate.offset.limit_param"), child(block, "limit_param") ?? block ?? pages, instead))
    case .page(let param, _)?:
      let block = child(pages, "page")
      sent.append(
        (
          param, f.path("paginate.page.param"), child(block, "param") ?? block ?? pages,
          "'\(f.path("paginate.page.start"))' gives the first page"
        ))
    case .next?, .linkHeader?, .cursor?, .lastRecord?, .bodyCursor?, nil:
      break
    }
    var ok = true
    for (i, later) in sent.enumerated() {
      guard let earlier = sent[..<i].first(where: { $0.name == later.name }), let node = later.node else { continue }
      reader.error(
        node.location,
        "'\(later.key)' is '\(later.name)', the parameter '\(earlier.key)' sends; each request would carry it twice: give each its own parameter"
      )
      ok = false
    }
    if case .mapping(let pairs) = f["query"]?.content {
      for pair in pairs {
        let name = pair.key.scalar?.text ?? ""
        guard let owner = sent.first(where: { $0.name == name }) else { continue }
        reader.error(
          pair.key.location,
          "'\(f.path("query")).\(name)' is the parameter '\(owner.key)' sends; each request would carry it twice: remove it from '\(f.path("query"))' (\(owner.instead))"
        )
        ok = false
      }
    }
    return ok
  }

  private mutating func readIncremental(_ node: YAMLNode, _ path: String, format: AnswerFormat) -> HTTPStep.Incremental? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpIncremental) else { return nil }
    var ok = true
    if format != .json {
      reader.error(node.location, "'\(path)' reads a JSON Pointer in each record; it needs format: json")
      ok = false
    }
    let cursor = f.required("cursor", &reader).flatMap { readPointer($0, f.path("cursor")) }
    let param = reader.string(f, "param")
    var initial: IncrementalCursor.Value?
    if let initialNode = f.required("initial", &reader), let value = reader.json(initialNode, f.path("initial")) {
      initial = IncrementalCursor.Value(json: value)
      if initial == nil {
        reader.error(
          initialNode.location,
          "'\(f.path("initial"))' must be a string or a number, such as \"2024-01-01T00:00:00Z\" or 0, found \(value.json)")
      }
    }
    let lag = reader.duration(f, "lag")
    if f["lag"] != nil && lag == nil {
      ok = false
    } else if let lagNode = f["lag"], let initial, !initial.isInstant {
      reader.error(
        lagNode.location, "'\(f.path("lag"))' moves back an RFC 3339 instant; 'initial' is not one, such as 2024-01-01T00:00:00Z")
      ok = false
    }
    let boundary = reader.choice(f, "boundary", as: IncrementalCursor.Boundary.self)
    if f["boundary"] != nil && boundary == nil {
      ok = false
    } else if boundary == .exclusive, let node = f["boundary"], let initial, !initial.isInstant, !initial.hasPredecessor {
      reader.error(
        node.location,
        "'\(f.path("boundary"))' exclusive asks from just below the kept value, and 'initial' (\(initial.text)) is \(initial.kind)"
          + "\(initial.isText ? ", which has no value just below it" : " a double cannot hold (beyond about 1.8e308, or below about 4.9e-324), so dray computes no value just below it")"
          + "; use boundary: inclusive if the API answers the records at the value sent (>=), or a cursor that is a number or an RFC 3339 instant"
      )
      ok = false
    }
    guard ok, let cursor, let param, let initial else { return nil }
    return HTTPStep.Incremental(cursor: cursor, param: param, initial: initial, lag: lag, boundary: boundary ?? .inclusive)
  }

  /// A JSON Pointer (RFC 6901), or nil with a diagnostic.
  mutating func readPointer(_ node: YAMLNode, _ path: String) -> JSONPointer? {
    guard let text = reader.string(node, path) else { return nil }
    do {
      return try JSONPointer(parsing: text)
    } catch {
      reader.error(node.location, "'\(path)': \(error.message)")
      return nil
    }
  }

  /// Which one of `Kind`'s keys `f` holds, and its value; nil, with a diagnostic, when it
  /// holds none or several (`explaining` says what the mapping takes, before the keys found).
  mutating func exactlyOne<Kind: RawRepresentable & CaseIterable>(
    _ kind: Kind.Type, in f: Fields, path: String, explaining: String
  ) -> (kind: Kind, value: YAMLNode)? where Kind.RawValue == String {
    let given = Kind.allCases.compactMap { kind in f.entries[kind.rawValue].map { (kind: kind, pair: $0) } }
    guard given.count == 1 else {
      if given.isEmpty {
        reader.error(f.node.location, "'\(path)' needs one of: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
      } else {
        reader.error(
          given[1].pair.key.location,
          "'\(path)' \(explaining) this one has \(given.map(\.kind.rawValue).joined(separator: " and "))")
      }
      return nil
    }
    return (given[0].kind, given[0].pair.value)
  }

  private func hasTopLevelKey(_ key: String) -> Bool {
    guard case .mapping(let pairs) = root.content else { return false }
    return pairs.contains { $0.key.scalar?.text == key }
  }

  private func headerPair(_ node: YAMLNode?, named name: String) -> YAMLNode.Pair? {
    guard let node, case .mapping(let pairs) = node.content else { return nil }
    return pairs.first { $0.key.scalar?.text.lowercased() == name }
  }

  // MARK: Request

  mutating func readBaseURL(_ node: YAMLNode, _ path: String) -> String? {
    guard let url = reader.nonEmptyString(node, path) else { return nil }
    let lower = url.lowercased()
    let scheme = lower.hasPrefix("https://") ? 8 : lower.hasPrefix("http://") ? 7 : 0
    let host = url.dropFirst(scheme).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    guard scheme > 0, !host.isEmpty, !url.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }) else {
      reader.error(node.location, "'\(path)' must be an http:// or https:// address such as https://api.example.com/v1/, found '\(url)'")
      return nil
    }
    guard !url.contains("#") else {
      reader.error(node.location, "'\(path)' must not hold a fragment ('#...'); servers never see it")
      return nil
    }
    guard !url.contains("?") else {
      reader.error(node.location, "'\(path)' must not hold a query ('?...'); give query parameters in 'query'")
      return nil
    }
    guard !host.contains("@") else {
      reader.error(node.location, "'\(path)' must not hold credentials (user@host); give them in 'auth'")
      return nil
    }
    if let problem = Self.authorityProblem(url, path: path) {
      reader.error(node.location, problem)
      return nil
    }
    return url
  }

  private mutating func readURLPath(_ node: YAMLNode, _ path: String) -> String? {
    guard let value = reader.string(node, path) else { return nil }
    if value.lowercased().hasPrefix("http://") || value.lowercased().hasPrefix("https://") {
      reader.error(node.location, "'\(path)' is appended to base_url; put the address in base_url and the rest in path")
      return nil
    }
    if value.contains("#") {
      reader.error(node.location, "'\(path)' must not hold a fragment ('#...'); servers never see it")
      return nil
    }
    return value
  }

  /// A mapping of names to scalars or lists of scalars (a list repeats the name).
  private mutating func readQueryItems(
    _ node: YAMLNode, _ path: String, isSecret: (String) -> Bool = { QueryItem($0, "").isSecret }
  ) -> [QueryItem]? {
    guard case .mapping(let pairs) = node.content else {
      reader.error(node.location, "'\(path)' must be a mapping of names to values, found \(node.kindDescription)")
      return nil
    }
    var items: [QueryItem] = []
    var ok = true
    for pair in pairs {
      let name = pair.key.scalar?.text ?? ""
      guard !name.isEmpty else {
        reader.error(pair.key.location, "'\(path)' has an empty name")
        ok = false
        continue
      }
      let secret = isSecret(name)
      let values: [YAMLNode]
      if case .sequence(let list) = pair.value.content { values = list } else { values = [pair.value] }
      if values.isEmpty {
        reader.error(
          pair.value.location, "'\(path).\(name)' is an empty list, which sends nothing; give a value (\"\" for an empty one) or remove it")
        ok = false
      }
      for value in values {
        guard value.scalar != nil else {
          reader.error(value.location, "'\(path).\(name)' must be a value or a list of values, found \(value.kindDescription)")
          ok = false
          continue
        }
        if let text = reader.string(value, "\(path).\(name)", secret: secret) {
          items.append(QueryItem(name, text))
        } else {
          ok = false
        }
      }
    }
    return ok ? items : nil
  }

  /// A `body`: `json` or `form`. The values of the fields `isSecret` names are read as
  /// secrets (an unset variable in one is not quoted, and is left unresolved where
  /// credentials may be missing).
  mutating func readBody(
    _ node: YAMLNode, _ path: String, isSecret: @escaping (String) -> Bool = { QueryItem($0, "").isSecret }
  ) -> HTTPStep.Body? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpBody) else { return nil }
    switch (f["json"], f["form"]) {
    case (let json?, nil):
      return reader.json(json, f.path("json"), secretKey: isSecret).map { .json($0) }
    case (nil, let form?):
      return readQueryItems(form, f.path("form"), isSecret: isSecret).map { .form($0) }
    case (_?, let form?):
      reader.error(form.location, "'\(path)' takes 'json' or 'form', not both")
    case (nil, nil):
      reader.error(node.location, "'\(path)' needs 'json' (sent as application/json) or 'form' (application/x-www-form-urlencoded)")
    }
    return nil
  }

  /// A bearer token, which goes into the `Authorization` header as it is: refused when it
  /// holds a line break or another character a header cannot carry (`headerValueProblem`).
  private mutating func bearer(_ token: String, _ node: YAMLNode, _ path: String) -> HTTPStep.Auth? {
    if let problem = Self.headerValueProblem(token, path: path) {
      reader.error(node.location, problem)
      return nil
    }
    return .bearer(token: token)
  }

  private mutating func readHTTPAuth(_ node: YAMLNode, _ path: String) -> HTTPStep.Auth? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpAuth) else { return nil }
    let kinds = ManifestSchema.HTTPAuthKind.allCases.map(\.rawValue).joined(separator: ", ")
    guard let (kind, value) = exactlyOne(ManifestSchema.HTTPAuthKind.self, in: f, path: path, explaining: "takes one of \(kinds);")
    else {
      return nil
    }
    switch kind {
    case .bearer:
      return reader.string(f, "bearer", secret: true).flatMap { bearer($0, value, f.path("bearer")) }
    case .bearerFile:
      return readSecretFile(value, f.path("bearer_file")).flatMap { bearer($0, value, f.path("bearer_file")) }
    case .basic:
      guard let b = reader.fields(value, f.path("basic"), keys: ManifestSchema.httpBasic) else { return nil }
      let username = reader.string(b, "username", credential: true)
      let password = readPassword(b)
      guard let username, let password else { return nil }
      let auth = HTTPStep.Auth.basic(username: username, password: password)
      reader.redactor.add(String((auth.authorization ?? "").dropFirst("Basic ".count)))
      return auth
    case .oauth2:
      return readOAuth2(value, f.path("oauth2")).map { .oauth2($0) }
    case .apiKey:
      return readAPIKey(value, f.path("api_key")).map { .apiKey($0) }
    case .login:
      return readLogin(value, f.path("login")).map { .login($0) }
    }
  }
}
