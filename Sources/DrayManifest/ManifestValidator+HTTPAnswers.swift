internal import DrayModel

/// Reading what the `http` step does with its answers (docs/http.md): `load` and its
/// columns, `paginate`, `on_status`.
extension ManifestValidator {
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

  mutating func readLoad(_ node: YAMLNode, _ path: String, format: AnswerFormat) -> HTTPStep.Load? {
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
      records = .json(.wholeDocument)
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
    let contract = readContract(f, format: format, at: node.location)
    if contract == nil { columnsOK = false }
    let quarantine = f["quarantine"].map { readQuarantine($0, f.path("quarantine"), table: table) } ?? HTTPStep.Quarantine()
    if quarantine == nil { columnsOK = false }
    if let table, let quarantine {
      let name = quarantine.table ?? HTTPStep.Quarantine.defaultName(for: table)
      quarantines.append((path, table, name, f["quarantine"] != nil, f["quarantine"]?.location ?? node.location))
    }
    if let contract, let node = f["quarantine"], !contract.setsAside {
      reader.warn(
        node.location,
        "'\(f.path("quarantine"))' is unused: no rule of '\(f.path("contract"))' sets records aside or trims them "
          + "(discard_row or discard_value in new_columns or types)")
    }
    let allowEmpty = reader.bool(f, "allow_empty") ?? f.defaultValue("allow_empty")
    let deleteMissing = reader.bool(f, "delete_missing") ?? f.defaultValue("delete_missing")
    if deleteMissing, write != .merge, let missingNode = f["delete_missing"] {
      reader.error(
        missingNode.location,
        "'\(f.path("delete_missing"))' deletes the rows a full merge pull did not see; it needs write: merge with primary_key "
          + "(this load writes with \(write.rawValue)); set write: merge and primary_key, or remove delete_missing")
      columnsOK = false
    }
    guard let table, let records, let contract, let quarantine, columnsOK else { return nil }
    return HTTPStep.Load(
      table: table, records: records, columns: columns, expect: expect, write: write, primaryKey: primaryKey, deleted: deleted,
      contract: contract, quarantine: quarantine, allowEmpty: allowEmpty, deleteMissing: deleteMissing)
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

  mutating func readPagination(
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
      let (kind, value) = exactlyOne(HTTPStep.Pagination.Kind.self, in: f, path: path, explaining: "takes one way to find the next page;")
    else { return nil }
    let pagination = readPaginationKind(kind, value, f, format: format)
    return ok ? pagination : nil
  }

  /// The one way to find the next page that `f`, an `http` step's `paginate`, holds:
  /// `kind`, whose value is `value`.
  private mutating func readPaginationKind(_ kind: HTTPStep.Pagination.Kind, _ value: YAMLNode, _ f: Fields, format: AnswerFormat)
    -> HTTPStep.Pagination?
  {
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
        let (source, _) = exactlyOne(
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

  mutating func readOnStatus(_ node: YAMLNode, _ path: String) -> [HTTPStep.StatusRule]? {
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
