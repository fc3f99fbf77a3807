internal import DrayJSON
internal import DrayModel

/// The checks across blocks and steps, run once every step is read: the blocks steps need
/// and the tables `{{ table }}` templates name.
extension ManifestValidator {
  /// Steps that talk to the platform need `platform` and `auth`; steps on tables need
  /// `database`. Each missing block is reported once, at the first step that needs it.
  /// Every step counts, read or not (`stepKinds`): a step's own problem does not hide a
  /// missing block.
  mutating func checkRequirements(top: Fields) {
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
  mutating func noteSQL(_ kind: StepKind, id: String, node: YAMLNode) {
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
  mutating func checkTemplates(_ manifest: Manifest) {
    var loaded: [(resource: String, params: String)] = []
    // Resources a `rows` step loads, with parameters known only when it runs.
    var loadedAnyParams: Set<String> = []
    var httpTables: [String: String] = [:]
    for step in manifest.allSteps {
      if case .tableStream(let t) = step.kind {
        // A partitioned step loads one parameter set per partition.
        if let partitions = step.partitions {
          if let known = partitions.knownPartitions {
            loaded += known.compactMap { partition in (try? t.filled(with: partition)).map { (t.resource, $0.params.canonicalJSON) } }
          } else {
            loadedAnyParams.insert(t.resource)
          }
        } else {
          loaded.append((t.resource, t.params.canonicalJSON))
        }
      }
      if case .http(let h) = step.kind, let table = h.load?.table { httpTables[table] = step.id }
    }
    let resources = Array(Set(loaded.map(\.resource)).union(loadedAnyParams)).sorted()
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
          let parsed: JSONValue
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
            // What was wrong and at which byte (a comment, a key without quotes, ...).
            reader.error(
              at,
              "step '\(stepID)': the parameters '\(text)' of \(reference.written(parameters: false)) are not valid JSON (\(error.message)); "
                + "write them as a JSON object in single quotes, such as '{\"region\":\"EU\"}'")
            continue
          }
          guard case .object = parsed else {
            reader.error(
              at,
              "step '\(stepID)': the parameters '\(text)' of \(reference.written(parameters: false)) are not a JSON object; "
                + "write them as JSON in single quotes, such as '{\"region\":\"EU\"}'")
            continue
          }
          params = parsed
        }
        let canonical = params.canonicalJSON
        if hasBrokenLoader || loadedAnyParams.contains(reference.resource)
          || loaded.contains(where: { $0.resource == reference.resource && $0.params == canonical })
        {
          continue
        }
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

  /// A quarantine must be a table of its own: its name (`load.quarantine`, or
  /// `<table>_rejected`), compared case-insensitively after the naming rule (PostgreSQL's
  /// 63 bytes, `IdentifierLimit`), may not be a table another `http` step loads, nor another
  /// step's quarantine (said where that name is given), unless that step loads the same table
  /// (their records share it). A
  /// quarantine written into a loaded table would add its columns there, and the next run
  /// would refuse it (`quarantine_clash`).
  mutating func checkQuarantineNames(postgres: Bool) {
    let key = { (name: String) in IdentifierKey(postgres ? IdentifierLimit.fitted(name, maxBytes: 63) : name) }
    for (index, load) in quarantines.enumerated() {
      let name = key(load.name)
      let others = quarantines.enumerated().filter { $0.offset != index && key($0.element.table) != key(load.table) }.map(\.element)
      if let other = others.first(where: { key($0.table) == name }) {
        reader.error(
          load.location,
          "the quarantine of '\(load.path)' is table '\(load.name)', which '\(other.path)' loads; "
            + "name another table with \(load.path).quarantine")
      } else if load.given, let other = others.first(where: { key($0.name) == name }) {
        reader.error(
          load.location,
          "the quarantine of '\(load.path)' is table '\(load.name)', the quarantine of '\(other.path)' too; "
            + "name another table with \(load.path).quarantine")
      }
    }
  }
}
