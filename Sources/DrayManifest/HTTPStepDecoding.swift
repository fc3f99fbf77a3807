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

    if !checkParameters(f, paginate: paginate, incremental: incremental) { ok = false }
    if auth != nil, let pair = headerPair(f["headers"], named: "authorization") {
      reader.error(
        pair.key.location,
        "'\(f.path("headers")).\(pair.key.scalar?.text ?? "")' and '\(f.path("auth"))' both set the Authorization header; keep one")
      ok = false
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
        incremental: incremental, more: more))
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
    var initial: JSONValue?
    if let initialNode = f.required("initial", &reader), let value = reader.json(initialNode, f.path("initial")) {
      switch value {
      case .string, .integer, .number: initial = value
      default:
        reader.error(
          initialNode.location,
          "'\(f.path("initial"))' must be a string or a number, such as \"2024-01-01T00:00:00Z\" or 0, found \(value.json)")
      }
    }
    let lag = reader.duration(f, "lag")
    if f["lag"] != nil && lag == nil {
      ok = false
    } else if let lagNode = f["lag"], let initial, IncrementalCursor.Value(json: initial)?.isInstant != true {
      reader.error(
        lagNode.location, "'\(f.path("lag"))' moves back an RFC 3339 instant; 'initial' is not one, such as 2024-01-01T00:00:00Z")
      ok = false
    }
    guard ok, let cursor, let param, let initial else { return nil }
    return HTTPStep.Incremental(cursor: cursor, param: param, initial: initial, lag: lag)
  }

  /// A JSON Pointer (RFC 6901), or nil with a diagnostic.
  private mutating func readPointer(_ node: YAMLNode, _ path: String) -> JSONPointer? {
    guard let text = reader.string(node, path) else { return nil }
    do {
      return try JSONPointer(parsing: text)
    } catch {
      reader.error(node.location, "'\(path)': \(error.message)")
      return nil
    }
  }

  /// Which one of `Kind`'s keys `f` holds; nil, with a diagnostic, when it holds none or
  /// several (`explaining` says what the mapping takes, before the keys found).
  private mutating func exactlyOne<Kind: RawRepresentable & CaseIterable>(
    _ kind: Kind.Type, in f: Fields, path: String, explaining: String
  ) -> Kind? where Kind.RawValue == String {
    let given = Kind.allCases.filter { f[$0.rawValue] != nil }
    guard given.count == 1 else {
      if given.isEmpty {
        reader.error(f.node.location, "'\(path)' needs one of: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
      } else {
        reader.error(
          f.entries[given[1].rawValue]!.key.location,
          "'\(path)' \(explaining) this one has \(given.map(\.rawValue).joined(separator: " and "))")
      }
      return nil
    }
    return given[0]
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

  private mutating func readBaseURL(_ node: YAMLNode, _ path: String) -> String? {
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
  private mutating func readQueryItems(_ node: YAMLNode, _ path: String) -> [QueryItem]? {
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
      let secret = QueryItem(name, "").isSecret
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

  private mutating func readBody(_ node: YAMLNode, _ path: String) -> HTTPStep.Body? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpBody) else { return nil }
    switch (f["json"], f["form"]) {
    case (let json?, nil):
      return reader.json(json, f.path("json"), credentials: true).map { .json($0) }
    case (nil, let form?):
      return readQueryItems(form, f.path("form")).map { .form($0) }
    case (_?, let form?):
      reader.error(form.location, "'\(path)' takes 'json' or 'form', not both")
    case (nil, nil):
      reader.error(node.location, "'\(path)' needs 'json' (sent as application/json) or 'form' (application/x-www-form-urlencoded)")
    }
    return nil
  }

  private mutating func readHTTPAuth(_ node: YAMLNode, _ path: String) -> HTTPStep.Auth? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpAuth) else { return nil }
    let kinds = ManifestSchema.HTTPAuthKind.allCases.map(\.rawValue).joined(separator: ", ")
    guard let kind = exactlyOne(ManifestSchema.HTTPAuthKind.self, in: f, path: path, explaining: "takes one of \(kinds);") else {
      return nil
    }
    switch kind {
    case .bearer:
      return reader.string(f, "bearer", secret: true).map { .bearer(token: $0) }
    case .bearerFile:
      return readSecretFile(f["bearer_file"]!, f.path("bearer_file")).map { .bearer(token: $0) }
    case .basic:
      guard let b = reader.fields(f["basic"]!, f.path("basic"), keys: ManifestSchema.httpBasic) else { return nil }
      let username = reader.string(b, "username", credential: true)
      let password = readPassword(b)
      guard let username, let password else { return nil }
      let auth = HTTPStep.Auth.basic(username: username, password: password)
      reader.redactor.add(String(auth.authorization.dropFirst("Basic ".count)))
      return auth
    }
  }

  // MARK: Answers

  /// A selector in the answer's format: a JSON Pointer, or an XML element path (`relative`
  /// for declared columns, absolute otherwise; `attribute` allows a final `@name`).
  private mutating func readSelector(_ node: YAMLNode, _ path: String, format: AnswerFormat, relative: Bool, attribute: Bool)
    -> RecordSelector?
  {
    guard let text = reader.string(node, path) else { return nil }
    do {
      switch format {
      case .json:
        return .json(try JSONPointer(parsing: text))
      case .xml:
        let xml = try XMLPath(parsing: text)
        if relative && xml.anchor != .relative {
          reader.error(node.location, "'\(path)' is relative to a record element, such as name, owner/name or @id; found '\(text)'")
          return nil
        }
        if !relative && xml.anchor == .relative {
          reader.error(node.location, "'\(path)' must start with '/' or '//', such as /catalog/item or //item; found '\(text)'")
          return nil
        }
        if !attribute && xml.attribute != nil {
          reader.error(node.location, "'\(path)' selects elements; '\(text)' ends with an attribute")
          return nil
        }
        return .xml(xml)
      }
    } catch {
      reader.error(node.location, "'\(path)': \(error.message)")
      return nil
    }
  }

  private mutating func readLoad(_ node: YAMLNode, _ path: String, format: AnswerFormat) -> HTTPStep.Load? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpLoad) else { return nil }
    var table = reader.string(f, "table")
    if let name = table, let tableNode = f["table"] {
      let lower = name.lowercased()
      if lower.hasPrefix("_dray") || lower.hasPrefix("sqlite_") {
        reader.error(tableNode.location, "'\(f.path("table"))': names starting with _dray or sqlite_ are reserved; choose another")
        table = nil
      }
    }
    var records: RecordSelector?
    if let node = f["records"] {
      records = readSelector(node, f.path("records"), format: format, relative: false, attribute: false)
    } else if format == .json {
      records = .json(try! JSONPointer(parsing: ""))
    } else {
      reader.error(
        node.location, "missing required key 'records' in \(path): the path of the record elements, such as /catalog/item or //item")
    }
    var columns: [HTTPStep.Column]?
    var columnsOK = true
    if let node = f["columns"] {
      columns = readColumns(node, f.path("columns"), format: format)
      columnsOK = columns != nil
    }
    let expect = readExpect(f, names: "rows or column names", example: "rows: { min: 1 }", load: true)
    let chosen = reader.choice(f, "write", as: HTTPStep.WriteMode.self)
    if f["write"] != nil && chosen == nil { columnsOK = false }
    let write = chosen ?? f.defaultValue("write")
    var primaryKey: [String] = []
    if let keyNode = f["primary_key"] {
      if let names = reader.nameList(
        keyNode, f.path("primary_key"), whenEmpty: "list the record fields that identify a row, such as primary_key: [id]")
      {
        primaryKey = names
      } else {
        columnsOK = false
      }
      if write != .merge {
        reader.error(keyNode.location, "'\(f.path("primary_key"))' is for write: merge; this load writes with \(write.rawValue)")
        columnsOK = false
      }
      if let columns {
        for name in primaryKey where !columns.contains(where: { IdentifierKey($0.name) == IdentifierKey(name) }) {
          reader.error(keyNode.location, "'\(f.path("primary_key"))' names '\(name)', which is not in '\(f.path("columns"))'")
          columnsOK = false
        }
      }
    } else if write == .merge {
      reader.error(
        f["write"]?.location ?? node.location,
        "'\(f.path("write"))': merge needs 'primary_key', the record fields that identify a row, such as primary_key: [id]")
      columnsOK = false
    }
    var deleted: JSONPointer?
    if let deletedNode = f["deleted"] {
      deleted = readPointer(deletedNode, f.path("deleted"))
      if deleted == nil { columnsOK = false }
      if write != .merge {
        reader.error(deletedNode.location, "'\(f.path("deleted"))' deletes merged rows; it needs write: merge")
        columnsOK = false
      }
      if format != .json {
        reader.error(deletedNode.location, "'\(f.path("deleted"))' is a JSON Pointer; it needs format: json")
        columnsOK = false
      }
    }
    let chosenExtra = reader.choice(f, "extra", as: HTTPStep.ExtraFields.self)
    if f["extra"] != nil && chosenExtra == nil { columnsOK = false }
    let extra = chosenExtra ?? f.defaultValue("extra")
    if let extraNode = f["extra"], chosenExtra != nil, f["columns"] == nil || format != .json {
      reader.error(
        extraNode.location,
        f["columns"] == nil
          ? "'\(f.path("extra"))' says what fields that 'columns' do not name do; without 'columns' every field is loaded"
          : "'\(f.path("extra"))' reads JSON records; it needs format: json")
      columnsOK = false
    }
    let allowEmpty = reader.bool(f, "allow_empty") ?? f.defaultValue("allow_empty")
    guard let table, let records, columnsOK else { return nil }
    return HTTPStep.Load(
      table: table, records: records, columns: columns, expect: expect, write: write, primaryKey: primaryKey, deleted: deleted,
      extra: extra, allowEmpty: allowEmpty)
  }

  private mutating func readColumns(_ node: YAMLNode, _ path: String, format: AnswerFormat) -> [HTTPStep.Column]? {
    guard case .mapping(let pairs) = node.content, !pairs.isEmpty else {
      reader.error(
        node.location, "'\(path)' must be a mapping of column names to types (TEXT, INTEGER, REAL, NUMERIC), such as id: INTEGER")
      return nil
    }
    var columns: [HTTPStep.Column] = []
    var seen: [String: String] = [:]
    var ok = true
    for pair in pairs {
      let name = pair.key.scalar?.text ?? ""
      let cpath = "\(path).\(name)"
      guard !name.isEmpty else {
        reader.error(pair.key.location, "'\(path)' has an empty column name")
        ok = false
        continue
      }
      // SQLite compares identifiers without regard to ASCII case.
      let folded = String(name.map { $0.isASCII ? Character($0.lowercased()) : $0 })
      if let other = seen[folded] {
        reader.error(pair.key.location, "columns '\(other)' and '\(name)' differ only in letter case; SQLite cannot tell them apart")
        ok = false
        continue
      }
      seen[folded] = name
      if pair.value.scalar != nil {
        guard let type = readColumnType(pair.value, cpath) else {
          ok = false
          continue
        }
        columns.append(HTTPStep.Column(name: name, type: type))
      } else {
        guard let c = reader.fields(pair.value, cpath, keys: ManifestSchema.httpColumn) else {
          ok = false
          continue
        }
        let type = c["type"].flatMap { readColumnType($0, c.path("type")) }
        let from = c["from"].flatMap { readSelector($0, c.path("from"), format: format, relative: true, attribute: true) }
        if (c["type"] != nil && type == nil) || (c["from"] != nil && from == nil) {
          ok = false
          continue
        }
        columns.append(HTTPStep.Column(name: name, type: type ?? c.defaultValue("type"), from: from))
      }
    }
    return ok ? columns : nil
  }

  private mutating func readColumnType(_ node: YAMLNode, _ path: String) -> ColumnType? {
    reader.choice(node, path, as: ColumnType.self)
  }

  /// A mapping read through its declaration; a key written with no value (`offset:`,
  /// `page:`) takes every default, as an empty mapping.
  private mutating func readFieldsOrDefaults(_ value: YAMLNode, _ path: String, keys: [ManifestSchema.Key]) -> Fields? {
    if let s = value.scalar, s.style == .plain, CoreSchema.resolve(s.text) == .null {
      return Fields(node: value, path: path, keys: keys)
    }
    return reader.fields(value, path, keys: keys)
  }

  private mutating func readPagination(
    _ node: YAMLNode, _ path: String, format: AnswerFormat, maxPages: inout Int?, more: inout RecordSelector?
  ) -> HTTPStep.Pagination? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.httpPaginate) else { return nil }
    // Each part is read whatever the others hold: one pass names every problem.
    maxPages = reader.integer(f, "max_pages")
    var ok = f["max_pages"] == nil || maxPages != nil
    if let moreNode = f["more"] {
      more = readSelector(moreNode, f.path("more"), format: format, relative: false, attribute: true)
      if more == nil { ok = false }
    }
    guard
      let kind = exactlyOne(HTTPStep.Pagination.Kind.self, in: f, path: path, explaining: "takes one way to find the next page;")
    else { return nil }
    let pagination = readPaginationKind(kind, f, format: format)
    return ok ? pagination : nil
  }

  /// The one way to find the next page that `f`, an `http` step's `paginate`, holds.
  private mutating func readPaginationKind(_ kind: HTTPStep.Pagination.Kind, _ f: Fields, format: AnswerFormat)
    -> HTTPStep.Pagination?
  {
    let value = f[kind.rawValue]!
    switch kind {
    case .next:
      return readSelector(value, f.path("next"), format: format, relative: false, attribute: true).map { .next($0) }
    case .linkHeader:
      guard let on = reader.bool(value, f.path("link_header")) else { return nil }
      guard on else {
        reader.error(value.location, "'\(f.path("link_header"))' can only be true; remove 'paginate' for a single request")
        return nil
      }
      return .linkHeader
    case .offset:
      guard let o = readFieldsOrDefaults(value, f.path("offset"), keys: ManifestSchema.httpOffset) else { return nil }
      let param = reader.string(o, "param")
      let limitParam = reader.string(o, "limit_param")
      let limit = reader.integer(o, "limit")
      let start = reader.integer(o, "start")
      let bad =
        (o["param"] != nil && param == nil) || (o["limit_param"] != nil && limitParam == nil)
        || (o["limit"] != nil && limit == nil) || (o["start"] != nil && start == nil)
      if bad { return nil }
      return .offset(
        param: param ?? o.defaultValue("param"), limitParam: limitParam ?? o.defaultValue("limit_param"),
        limit: limit ?? o.defaultValue("limit"), start: start ?? o.defaultValue("start"))
    case .cursor:
      guard let c = reader.fields(value, f.path("cursor"), keys: ManifestSchema.httpCursor) else { return nil }
      let param = reader.string(c, "param")
      if c["param"] != nil && param == nil { return nil }
      guard
        let source = exactlyOne(
          ManifestSchema.CursorSource.self, in: c, path: c.path, explaining: "takes one place to read the next cursor;")
      else { return nil }
      if source == .lastRecord, let lastNode = c["from_last_record"] {
        if let bodyNode = c["body"] {
          reader.error(
            bodyNode.location,
            "'\(c.path("body"))' sends a cursor read with 'from'; 'from_last_record' sends its cursor as a parameter: drop one")
          return nil
        }
        guard format == .json else {
          reader.error(lastNode.location, "'\(c.path("from_last_record"))' is a JSON Pointer into a record; it needs format: json")
          return nil
        }
        return readPointer(lastNode, c.path("from_last_record")).map { .lastRecord(param: param ?? c.defaultValue("param"), field: $0) }
      }
      let from = c["from"].flatMap { readSelector($0, c.path("from"), format: format, relative: false, attribute: true) }
      guard let from else { return nil }
      if let bodyNode = c["body"] {
        guard let pointer = readPointer(bodyNode, c.path("body")) else { return nil }
        if c["param"] != nil {
          reader.error(bodyNode.location, "'\(c.path("body"))' sends the cursor in the body; drop '\(c.path("param"))'")
          return nil
        }
        return .bodyCursor(from: from, body: pointer)
      }
      return .cursor(param: param ?? c.defaultValue("param"), from: from)
    case .page:
      guard let p = readFieldsOrDefaults(value, f.path("page"), keys: ManifestSchema.httpPage) else { return nil }
      let param = reader.string(p, "param")
      let start = reader.integer(p, "start")
      if (p["param"] != nil && param == nil) || (p["start"] != nil && start == nil) { return nil }
      return .page(param: param ?? p.defaultValue("param"), start: start ?? p.defaultValue("start"))
    }
  }

  private mutating func readOnStatus(_ node: YAMLNode, _ path: String) -> [HTTPStep.StatusRule]? {
    guard case .mapping(let pairs) = node.content else {
      reader.error(node.location, "'\(path)' must be a mapping of statuses to outcomes, such as { 404: empty, 422: fail }")
      return nil
    }
    var rules: [HTTPStep.StatusRule] = []
    var ok = true
    for pair in pairs {
      let key = pair.key.scalar?.text ?? ""
      var rule: HTTPStep.StatusRule?
      if key.count == 3, key.hasSuffix("xx"), let hundreds = Int(key.prefix(1)), (4...5).contains(hundreds) {
        rule = HTTPStep.StatusRule(.statusClass(hundreds), outcome: .fail)
      } else if let status = Int(key), (400...599).contains(status), key.count == 3 {
        rule = HTTPStep.StatusRule(.status(status), outcome: .fail)
      }
      guard var rule else {
        reader.error(pair.key.location, "'\(key)' in \(path) is not a status from 400 to 599, nor 4xx or 5xx")
        ok = false
        continue
      }
      guard let outcome = reader.choice(pair.value, "\(path).\(key)", as: HTTPStep.StatusOutcome.self) else {
        ok = false
        continue
      }
      rule.outcome = outcome
      rules.append(rule)
    }
    return ok ? rules : nil
  }
}
