internal import DrayModel

/// Reading `steps`: each step's id and kind, and every kind but `http`
/// (`ManifestValidator+HTTPStep.swift`).
extension ManifestValidator {
  /// Reads a list of steps. `group` is the id of the `parallel` step holding them, if any.
  mutating func readSteps(_ node: YAMLNode, _ path: String, retry: RetryPolicy, timeouts: Timeouts, group: String?) -> [Step] {
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
    guard given.count == 1, let kindKey = given.first, let kindName = StepKind.Name(rawValue: kindKey), let kindPair = f.entries[kindKey]
    else {
      if given.isEmpty {
        if !kindReported {
          reader.error(node.location, "\(label) has no kind; give one of: \(kinds.joined(separator: ", "))")
        }
      } else {
        reader.error(
          f.entries[given[1]]?.key.location ?? node.location,
          "a step has one kind; this one has \(given.joined(separator: " and ")): split it into \(given.count) steps")
      }
      return nil
    }
    let kindNode = kindPair.value
    if let group, kindName == .parallel {
      reader.error(
        kindPair.key.location,
        "a parallel group cannot hold another parallel group; list its steps in the group '\(group)' instead")
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
    var partitions: Partitions?
    if let pair = f.entries["partitions"] {
      partitions = readPartitions(pair, kind: kindName, kindNode: kindNode, id: id, group: group)
    }
    guard let kind, idIsValid, f.entries["partitions"] == nil || partitions != nil else {
      if kindName == .tableStream { hasBrokenLoader = true }
      return nil
    }
    return Step(
      id: id, kind: kind, retry: stepRetry, timeouts: stepTimeouts, location: node.location, description: description,
      partitions: partitions)
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
    var contract: HTTPStep.Contract?
    var quarantine = HTTPStep.Quarantine()
    if let node = f["load"] {
      guard let l = reader.fields(node, f.path("load"), keys: ManifestSchema.tableStreamLoad) else { return nil }
      guard let read = readContract(l, format: .json, at: node.location) else { return nil }
      contract = read
      if let q = l["quarantine"] {
        guard let given = readQuarantine(q, l.path("quarantine"), table: nil) else { return nil }
        quarantine = given
        if !read.setsAside {
          reader.warn(
            q.location,
            "'\(l.path("quarantine"))' is unused: no rule of '\(l.path("contract"))' sets rows aside or trims them "
              + "(discard_row or discard_value in new_columns or types)")
        }
      }
    }
    guard let (resource, params) = rp else { return nil }
    return .tableStream(
      TableStreamStep(
        resource: resource, params: params, delta: delta, transaction: transaction, writes: writes, expect: expect, contract: contract,
        quarantine: quarantine))
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

  private mutating func readParallel(_ node: YAMLNode, _ path: String, retry: RetryPolicy, timeouts: Timeouts) -> StepKind? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.parallel) else { return nil }
    let max = reader.integer(f, "max") ?? f.defaultValue("max")
    guard let stepsNode = f.required("steps", &reader) else { return nil }
    let id = String(path.dropFirst("steps.".count).dropLast(".parallel".count))
    let steps = readSteps(stepsNode, f.path("steps"), retry: retry, timeouts: timeouts, group: id)
    return .parallel(ParallelStep(max: max, steps: steps))
  }
}
