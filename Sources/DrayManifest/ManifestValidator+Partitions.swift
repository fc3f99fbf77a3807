internal import DrayModel

/// What `checkPlaceholders` needs of a partitioned step once the whole manifest is read: the
/// nodes its problems are reported at.
struct PartitionNodes {
  /// The step kind's mapping (`http: {...}`), where the strings with placeholders are.
  var kind: YAMLNode
  /// The source's value (`list: [...]`, `rows: ...`, `window: {...}`).
  var source: YAMLNode
  /// For `list`: each name a partition gives, with the key that first gives it.
  var listNames: [(name: String, key: YAMLNode)] = []
}

/// Reading `partitions:` of a step, and checking the placeholders of partitioned steps
/// (docs/partitions.md).
extension ManifestValidator {
  /// The `partitions` of step `id` of kind `kind`, or nil with a diagnostic.
  /// - Parameter group: the `parallel` group holding the step, which cannot be partitioned.
  mutating func readPartitions(_ pair: YAMLNode.Pair, kind: StepKind.Name, kindNode: YAMLNode, id: String, group: String?) -> Partitions? {
    let path = "steps.\(id).partitions"
    guard Partitions.stepKinds.contains(kind) else {
      let kinds = Partitions.stepKinds.map(\.rawValue).joined(separator: " and ")
      reader.error(
        pair.key.location,
        "step '\(id)' is a \(kind.rawValue) step, which cannot have 'partitions': only \(kinds) steps run over partitions; remove 'partitions'"
      )
      return nil
    }
    if let group {
      reader.error(
        pair.key.location,
        "step '\(id)' is a member of the parallel group '\(group)', which cannot have 'partitions': a partitioned step runs its partitions side by side itself (partitions.concurrency); move it out of the group"
      )
      return nil
    }
    if kind == .http, let node = child(child(kindNode, "load"), "delete_missing"), node.scalar?.text.lowercased() == "true" {
      // Each partition publishes on its own, so none of them sees the step's whole pull.
      reader.error(
        node.location,
        "'steps.\(id).http.load.delete_missing' cannot run over partitions: each partition publishes its own pages, "
          + "so no single publish sees the whole pull; remove delete_missing, or partitions")
      return nil
    }
    guard let f = reader.fields(pair.value, path, keys: ManifestSchema.partitions) else { return nil }
    var ok = true
    let concurrency = reader.integer(f, "concurrency")
    if f["concurrency"] != nil && concurrency == nil { ok = false }
    let lease = reader.duration(f, "lease")
    if f["lease"] != nil && lease == nil { ok = false }
    let sources = Partitions.SourceKind.allCases.map(\.rawValue).joined(separator: ", ")
    guard
      let (sourceKind, sourceNode) = exactlyOne(
        Partitions.SourceKind.self, in: f, path: path, explaining: "takes exactly one source of \(sources);")
    else {
      // Each source given still says what is wrong with it: one pass reports everything.
      for kind in Partitions.SourceKind.allCases {
        guard let node = f[kind.rawValue] else { continue }
        var unused = PartitionNodes(kind: kindNode, source: node)
        _ = readSource(kind, node, f, id: id, nodes: &unused)
      }
      return nil
    }
    var nodes = PartitionNodes(kind: kindNode, source: sourceNode)
    let source = readSource(sourceKind, sourceNode, f, id: id, nodes: &nodes)
    guard ok, let source else { return nil }
    partitionNodes[id] = nodes
    return Partitions(
      source: source, concurrency: concurrency ?? f.defaultValue("concurrency"), lease: lease ?? Partitions.defaultLease,
      location: pair.key.location)
  }

  /// The source `kind` at `node`, or nil with a diagnostic.
  private mutating func readSource(
    _ kind: Partitions.SourceKind, _ node: YAMLNode, _ f: Fields, id: String, nodes: inout PartitionNodes
  ) -> Partitions.Source? {
    switch kind {
    case .list:
      return readPartitionList(node, f.path("list"), nodes: &nodes).map { .list($0) }
    case .rows:
      return reader.string(f, "rows").map { sql in
        sqlSources.append((id, sql, node))
        return .rows(sql)
      }
    case .window:
      return readWindow(node, f.path("window")).map { .window($0) }
    }
  }

  /// `list`: a non-empty list of non-empty mappings of placeholder names to values, no two
  /// alike (they would be one partition, with one checkpoint).
  private mutating func readPartitionList(_ node: YAMLNode, _ path: String, nodes: inout PartitionNodes) -> [Partition]? {
    guard case .sequence(let items) = node.content else {
      reader.error(
        node.location, "'\(path)' must be a list of mappings such as [{region: eu}, {region: us}], found \(node.kindDescription)")
      return nil
    }
    guard !items.isEmpty else {
      reader.error(node.location, "'\(path)' is empty; list the partitions, such as [{region: eu}, {region: us}], or remove 'partitions'")
      return nil
    }
    var partitions: [(index: Int, partition: Partition)] = []
    var ok = true
    for (index, item) in items.enumerated() {
      let itemPath = "\(path)[\(index)]"
      guard case .mapping(let pairs) = item.content, !pairs.isEmpty else {
        let found = if case .mapping = item.content { "an empty mapping" } else { item.kindDescription }
        reader.error(item.location, "'\(itemPath)' must be a mapping of placeholder names to values, such as {region: eu}, found \(found)")
        ok = false
        continue
      }
      var values: [(name: String, value: String)] = []
      var itemOK = true
      for pair in pairs {
        let name = pair.key.scalar?.text ?? ""
        guard (try? Placeholders.names(in: "{\(name)}")) == [name] else {
          reader.error(
            pair.key.location,
            "'\(itemPath)': '\(name)' cannot name a placeholder; a name is a letter or '_', then letters, digits or '_'")
          itemOK = false
          continue
        }
        guard pair.value.scalar != nil else {
          reader.error(pair.value.location, "'\(itemPath).\(name)' must be a value, found \(pair.value.kindDescription)")
          itemOK = false
          continue
        }
        // A value is any scalar read as text (numbers and booleans too), but null is none:
        // say what to write rather than "must be a string".
        if let scalar = pair.value.scalar, scalar.style == .plain, scalar.tag == nil, CoreSchema.resolve(scalar.text) == .null {
          reader.error(
            pair.value.location,
            "'\(itemPath).\(name)' is null, and a partition's value is text: give the value, or write \"\" for an empty one")
          itemOK = false
          continue
        }
        guard let value = reader.string(pair.value, "\(itemPath).\(name)") else {
          itemOK = false
          continue
        }
        values.append((name, value))
        if !nodes.listNames.contains(where: { $0.name == name }) { nodes.listNames.append((name, pair.key)) }
      }
      guard itemOK else {
        ok = false
        continue
      }
      let partition = Partition(values)
      if let earlier = partitions.first(where: { Self.sameValues($0.partition, partition) }) {
        reader.error(
          item.location,
          "'\(itemPath)' gives the same values as '\(path)[\(earlier.index)]' (\(partition.label)); each partition is run once: remove one")
        ok = false
      }
      partitions.append((index, partition))
    }
    return ok ? partitions.map(\.partition) : nil
  }

  /// Whether two partitions give the same value for each name, in any order, byte for
  /// byte: dray sends the bytes, so `é` (U+00E9) and `e\u{301}` are two partitions (two
  /// URLs), though Swift's `==` finds them canonically equivalent.
  private static func sameValues(_ a: Partition, _ b: Partition) -> Bool {
    a.values.count == b.values.count && a.values.allSatisfy { b[$0.name]?.utf8.elementsEqual($0.value.utf8) == true }
  }

  /// `window: { start, end, every }`, whose windows `Partitions.Window.bounds()` can cut.
  private mutating func readWindow(_ node: YAMLNode, _ path: String) -> Partitions.Window? {
    guard let f = reader.fields(node, path, keys: ManifestSchema.partitionWindow) else { return nil }
    let start = reader.string(f, "start")
    let end = reader.string(f, "end")
    var every: Partitions.Every?
    if let everyNode = f.required("every", &reader), let text = reader.nonEmptyString(everyNode, f.path("every")) {
      every = Partitions.Every(parsing: text)
      let unit = ["mo", "w", "d"].first { text.hasSuffix($0) }
      let digits = unit.map { text.dropLast($0.count) } ?? ""
      if every == nil, let unit, !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
        Int(digits).map({ $0 > 100_000 }) ?? true
      {
        // A whole number and a unit, but a number beyond what a window can be.
        reader.error(
          everyNode.location,
          "'\(f.path("every"))' is too long: '\(text)'; a window is at most 100000\(unit), and no longer than the range from 'start' to 'end'"
        )
      } else if every == nil {
        reader.error(
          everyNode.location,
          "'\(f.path("every"))' is not a window length: '\(text)'; write a whole number and d (days), w (weeks) or mo (calendar months), such as 7d, 2w or 1mo"
        )
      }
    }
    guard let start, let end, let every else { return nil }
    let window = Partitions.Window(start: start, end: end, every: every)
    do {
      _ = try window.bounds()
    } catch {
      reader.error(f[error.key]?.location ?? node.location, "'\(path)': \(error.description)")
      return nil
    }
    return window
  }

  // MARK: Placeholders

  /// One string of a partitioned step that may hold placeholders: the setting it is
  /// (`query.since`), its value as the step holds it, and its node.
  struct PlaceholderSite {
    var setting: String
    var text: String
    var node: YAMLNode
  }

  /// Checks the placeholders of every partitioned step: each names a value every partition
  /// gives (for `rows`, the step uses at least one: the names are known at run time); each
  /// value a `list` gives is used; a window's bounds are used; braces are well formed; an
  /// `http` step's `output` tells its partitions' files apart. Run once every step is read
  /// and the headers holding secrets are marked (they are sent as written).
  mutating func checkPlaceholders(_ manifest: Manifest) {
    for step in manifest.allSteps {
      guard let partitions = step.partitions, let nodes = partitionNodes[step.id] else { continue }
      let path = "steps.\(step.id).\(step.kindName)"
      let sites = placeholderSites(step, nodes.kind, path)
      var used: Set<String> = []
      let given: [String]? =
        switch partitions.source {
        case .list(let list): nodes.listNames.map(\.name).filter { name in list.contains { $0[name] != nil } }
        case .window: Partitions.Window.names
        case .rows: nil
        }
      if case .http = step.kind { checkCredentialPlaceholders(nodes.kind, path, given: given) }
      for site in sites {
        let names: [String]
        do {
          names = try Placeholders.names(in: site.text)
        } catch {
          reader.error(site.node.location, "'\(path).\(site.setting)': \(error.description) (at byte \(error.offset) of the value)")
          continue
        }
        for name in names {
          // `{page}` of `output` is the page number, not a partition's value.
          if site.setting == "output" && name == "page" && !(given?.contains("page") ?? false) { continue }
          used.insert(name)
          guard let given else { continue }
          if !given.contains(name) {
            var message = "'\(path).\(site.setting)': placeholder {\(name)} is no value of the partitions"
            message += given.isEmpty ? "" : ", which give \(given.map { "{\($0)}" }.joined(separator: ", "))"
            message += " ({{ and }} write literal braces)"
            if let suggestion = EditDistance.closest(to: name, among: given) {
              message += "; did you mean {\(suggestion)}?"
              // The value it meant is used, misspelt: one error says so, not a second
              // saying the value is unused.
              used.insert(suggestion)
            }
            reader.error(site.node.location, message)
          } else if case .list(let list) = partitions.source, let missing = list.firstIndex(where: { $0[name] == nil }) {
            reader.error(
              site.node.location,
              "'\(path).\(site.setting)': placeholder {\(name)} has no value in partition \(missing + 1) of 'steps.\(step.id).partitions.list' (\(list[missing].label)); give \(name) in every partition"
            )
          }
        }
      }
      let places = step.kindName == StepKind.Name.http.rawValue ? "path, query, headers, body or output" : "params"
      switch partitions.source {
      case .list:
        for (name, key) in nodes.listNames where !used.contains(name) {
          reader.error(
            key.location,
            "'steps.\(step.id).partitions.list' gives '\(name)', which no placeholder uses: write {\(name)} in the step's \(places), or remove it"
          )
        }
      case .window:
        if used.isDisjoint(with: Partitions.Window.names) {
          reader.error(
            nodes.source.location,
            "'steps.\(step.id).partitions.window' cuts windows that no placeholder uses: write {window_start} and {window_end} in the step's \(places)"
          )
        }
      case .rows:
        if used.isEmpty {
          reader.error(
            nodes.source.location,
            "'steps.\(step.id).partitions.rows' gives each row's columns as placeholders, but the step uses none: write {COLUMN} in the step's \(places)"
          )
        }
      }
      if case .http(let http) = step.kind { checkPartitionedHTTP(http, step: step, partitions: partitions, nodes: nodes, path: path) }
    }
  }

  /// `base_url` takes no placeholders; `output` must tell the partitions' files apart.
  private mutating func checkPartitionedHTTP(_ http: HTTPStep, step: Step, partitions: Partitions, nodes: PartitionNodes, path: String) {
    if let names = try? Placeholders.names(in: http.baseURL), let name = names.first {
      reader.error(
        child(nodes.kind, "base_url")?.location ?? nodes.kind.location,
        "'\(path).base_url' is sent as written: placeholders such as {\(name)} are filled in path, query, headers, body and output; move {\(name)} to path"
      )
    }
    if let table = http.load?.table, let name = (try? Placeholders.names(in: table))?.first {
      reader.error(
        child(child(nodes.kind, "load"), "table")?.location ?? nodes.kind.location,
        "'\(path).load.table' is the one table every partition loads into, named as written: placeholders such as {\(name)} are not filled there; name the table without it"
      )
    }
    guard let output = http.output, let outputNode = child(nodes.kind, "output") else { return }
    // In a paginated output, `{page}` is the page number: a partition's `page` would take
    // its place, and every page of the partition would write one file.
    if http.paginate != nil, let key = nodes.listNames.first(where: { $0.name == "page" })?.key {
      reader.error(
        key.location,
        "'steps.\(step.id).partitions.list' gives 'page', which '\(path).output' uses for the page number; give the value another name"
      )
      return
    }
    let names = ((try? Placeholders.names(in: output)) ?? []).filter { $0 != "page" }
    if names.isEmpty {
      let name = partitions.knownPartitions?.first?.values.first.map { "{\($0.name)}" } ?? "{NAME}"
      // `out/export.json` → `out/export-{region}.json`.
      let slash = output.lastIndex(of: "/").map { output.index(after: $0) } ?? output.startIndex
      let dot = output[slash...].lastIndex(of: ".").flatMap { $0 > slash ? $0 : nil } ?? output.endIndex
      let example = output[..<dot] + "-" + name + output[dot...]
      reader.error(
        outputNode.location,
        "'\(path).output' must hold a placeholder of the partitions besides {page}, such as \(example): otherwise every partition writes the same file"
      )
      return
    }
    guard case .list(let list) = partitions.source else { return }
    var seen: [String: Int] = [:]
    for (index, partition) in list.enumerated() {
      guard let filled = try? http.filled(with: partition).output else { continue }
      if let first = seen[filled] {
        reader.error(
          outputNode.location,
          "'\(path).output' names one file, '\(filled)', for partitions \(first + 1) and \(index + 1) of 'steps.\(step.id).partitions.list': add a placeholder that tells them apart"
        )
        return
      }
      seen[filled] = index
    }
  }

  /// The strings of a partitioned step that take placeholders, as `HTTPStep.filled(with:)`
  /// and `TableStreamStep.filled(with:)` fill them: credentials are sent as written, so
  /// they are not listed.
  private func placeholderSites(_ step: Step, _ kind: YAMLNode, _ path: String) -> [PlaceholderSite] {
    var sites: [PlaceholderSite] = []
    func strings(_ value: JSONValue, _ setting: String, _ node: YAMLNode?, fallback: YAMLNode) {
      switch value {
      case .string(let text): sites.append(PlaceholderSite(setting: setting, text: text, node: node ?? fallback))
      case .array(let items):
        let nodes: [YAMLNode] = if case .sequence(let list)? = node?.content { list } else { [] }
        for (i, item) in items.enumerated() {
          strings(item, "\(setting)[\(i)]", i < nodes.count ? nodes[i] : nil, fallback: node ?? fallback)
        }
      case .object(let members):
        for member in members {
          strings(member.value, "\(setting).\(member.key)", child(node, member.key), fallback: node ?? fallback)
        }
      case .null, .bool, .integer, .number: break
      }
    }
    func items(_ items: [QueryItem], _ setting: String, _ node: YAMLNode?) {
      var seen: [String: Int] = [:]
      for item in items {
        let occurrence = seen[item.name, default: 0]
        seen[item.name] = occurrence + 1
        guard !item.isSecret else { continue }
        var at = child(node, item.name)
        if case .sequence(let list)? = at?.content, occurrence < list.count { at = list[occurrence] }
        sites.append(PlaceholderSite(setting: "\(setting).\(item.name)", text: item.value, node: at ?? node ?? kind))
      }
    }
    switch step.kind {
    case .http(let http):
      if let urlPath = http.path { sites.append(PlaceholderSite(setting: "path", text: urlPath, node: child(kind, "path") ?? kind)) }
      items(http.query, "query", child(kind, "query"))
      for header in http.headers where !header.isSecret && !header.holdsSecret {
        sites.append(
          PlaceholderSite(setting: "headers.\(header.name)", text: header.value, node: child(child(kind, "headers"), header.name) ?? kind))
      }
      let body = child(kind, "body")
      switch http.body {
      case .json(let value)?: strings(value, "body.json", child(body, "json"), fallback: body ?? kind)
      case .form(let form)?: items(form, "body.form", child(body, "form"))
      case nil: break
      }
      if let output = http.output { sites.append(PlaceholderSite(setting: "output", text: output, node: child(kind, "output") ?? kind)) }
    case .tableStream(let table):
      strings(table.params, "params", child(kind, "params"), fallback: kind)
    case .schemes, .table, .request, .files, .sql, .query, .parallel:
      break
    }
    return sites
  }

  /// The value of `key` in mapping `node`, or nil.
  private func child(_ node: YAMLNode?, _ key: String) -> YAMLNode? {
    guard let node, case .mapping(let pairs) = node.content else { return nil }
    return pairs.first { $0.key.scalar?.text == key }?.value
  }
}
