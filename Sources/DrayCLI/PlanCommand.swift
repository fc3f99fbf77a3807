internal import DrayDatabases
internal import DrayEngine
internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import Foundation

/// `dray plan JOB.yaml [--fresh] [--from STEP] [--only STEP] [--resend STEP] [--json]`: the resolved job and
/// what a run with the same options would do, without running anything.
///
/// Reads the manifest, the files it names through `${file:...}`, and the run journal when
/// one exists (opened read-only first, so a plan never creates a database or a table).
/// Every line passes through the job's `Redactor` (with `--json`, every string before it is
/// encoded).
enum PlanCommand {
  static func main(_ arguments: [String]) throws -> Int32 {
    let args = try Arguments(arguments, flags: ["--fresh", "--json"], options: ["--from", "--only", "--resend"])
    guard args.positional.count == 1 else { throw UsageError("plan takes one manifest: dray plan JOB.yaml") }
    if args.values["--from"] != nil && args.values["--only"] != nil { throw UsageError("--from and --only do not go together") }
    // A plan signs in nowhere: it can be read where the job's secrets are not set.
    guard var manifest = ManifestInput.load(args.positional[0], secretsMayBeMissing: true) else { return ExitCode.usage }
    let endpoint = manifest.report.otlp.map { OTLPTarget.resolve($0, environment: ProcessInfo.processInfo.environment).endpoint }
    for value in CredentialName.queryValues(in: endpoint ?? "") { manifest.redactor.add(value) }  // the environment's key too
    for key in manifest.unresolvedSecrets {
      DrayCommandLine.printError("note: '\(key)' is not set here (its variable or file is missing); dray run will need it")
    }
    let options = try args.runFlags(steps: manifest.steps.map(\.id))
    let database = Databases.open(manifest)
    let resume: ResumePlan
    let reader: (any DatabaseReader)?
    do {
      reader = try database.openReadOnly()
      resume = try ResumePlan(manifest: manifest, options: options, journal: try reader?.journal())
    } catch {
      let message =
        database.failure(error).map { "cannot read the run journal: \($0.message)" }
        ?? "cannot read the run journal at \(database.journalLocation): \(error)"
      DrayCommandLine.printError(manifest.redactor.redact("dray: \(message)"))
      return ExitCode.stepFailed
    }
    let plan = JobPlan(
      manifest: manifest, database: database, resume: resume, schemes: recordedSchemes(manifest, in: reader),
      // A run continuing a `--fresh` run is fresh too (docs/resume.md).
      cursors: keptCursors(manifest, in: reader), fresh: options.fresh || resume.resumes?.flags.fresh == true,
      refreshTokens: refreshTokenSources(manifest, database: database, in: reader))
    print(args.flags.contains("--json") ? manifest.redactor.redact(plan.json).indentedJSON : manifest.redactor.redact(plan.text))
    return ExitCode.success
  }

  /// The schemes the job's database holds from earlier runs, by resource; empty when it has
  /// none (nothing is created). They give the exact names of every output table.
  static func recordedSchemes(_ manifest: Manifest, in reader: (any DatabaseReader)?) -> [String: ResourceScheme] {
    guard let reader, manifest.database != nil else { return [:] }
    let scheme = { (resource: String) in try? reader.scheme(for: resource) }
    var schemes: [String: ResourceScheme] = [:]
    for step in manifest.allSteps {
      var resources: [String] = []
      switch step.kind {
      case .schemes(let s): resources = s.resources ?? []
      case .tableStream(let t): resources = [t.resource]
      case .table, .request, .files, .sql, .query, .http, .parallel: resources = JobPlan.references(step).map(\.resource)
      }
      for resource in resources where schemes[resource] == nil {
        if let found = scheme(resource) { schemes[resource] = found }
      }
    }
    return schemes
  }

  /// The cursors the job's database keeps for its incremental steps, by step id; empty when
  /// it keeps none (nothing is created).
  static func keptCursors(_ manifest: Manifest, in reader: (any DatabaseReader)?) -> [String: JSONValue] {
    guard let reader, manifest.database != nil else { return [:] }
    var kept: [String: JSONValue] = [:]
    for step in manifest.allSteps {
      guard case .http(let h) = step.kind, h.incremental != nil else { continue }
      if let value = (try? reader.cursor(job: manifest.job, stepID: step.id))?.value { kept[step.id] = value }
    }
    return kept
  }
}

extension PlanCommand {
  /// Which refresh token each `auth.oauth2` with `grant: refresh_token` would present, by
  /// `OAuth2.key`: the one kept in the job's database, or the manifest's (docs/auth.md).
  static func refreshTokenSources(_ manifest: Manifest, database: any JobDatabase, in reader: (any DatabaseReader)?) -> [String: String] {
    var sources: [String: String] = [:]
    for step in manifest.allSteps {
      guard case .http(let h) = step.kind, let o = h.auth?.oauth2, o.grant == .refreshToken else { continue }
      let kept = reader.flatMap { try? $0.keptToken(key: o.key) }
      sources[o.key] =
        switch kept {
        case let kept? where kept.manifestHash == o.refreshTokenHash:
          "the one kept \(database.journalPlace) since \(kept.keptAt) (the server rotated the manifest's)"
        case _?: "the manifest's, which changed since a token was kept: it replaces the kept one"
        case nil: "the manifest's (none kept yet)"
        }
    }
    return sources
  }
}

/// The resolved job as `dray plan` shows it.
struct JobPlan {
  let manifest: Manifest
  /// The job's database: its naming rule and where its journal is.
  let database: any JobDatabase
  let resume: ResumePlan
  /// Physical table names known from `{{ table }}` references, by resource and canonical
  /// parameters JSON, in the order first referenced.
  let knownTables: [String: [String]]
  /// Schemes recorded in the job's database by earlier runs, by resource.
  let schemes: [String: ResourceScheme]
  /// The cursors kept for incremental steps, by step id.
  let cursors: [String: JSONValue]
  /// The run would start with `--fresh` (incremental steps send `initial`).
  let fresh: Bool
  /// Which refresh token each OAuth 2.0 client would present, by `OAuth2.key`.
  let refreshTokens: [String: String]

  init(
    manifest: Manifest, database: any JobDatabase, resume: ResumePlan, schemes: [String: ResourceScheme] = [:],
    cursors: [String: JSONValue] = [:], fresh: Bool = false, refreshTokens: [String: String] = [:]
  ) {
    self.refreshTokens = refreshTokens
    self.manifest = manifest
    self.database = database
    self.resume = resume
    self.schemes = schemes
    self.cursors = cursors
    self.fresh = fresh
    var known: [String: [String]] = [:]
    for step in manifest.allSteps {
      for reference in Self.references(step) {
        let key = reference.resource + "\u{0}" + reference.params.canonicalJSON
        let name = database.naming.physicalName(resource: reference.resource, table: reference.table, params: reference.params)
        if !(known[key]?.contains(name) ?? false) { known[key, default: []].append(name) }
      }
    }
    knownTables = known
  }

  // MARK: Facts

  /// The `{{ table }}` references of a `sql` or `query` step, with parsed parameters.
  static func references(_ step: Step) -> [(resource: String, table: String, params: JSONValue)] {
    let sql: String
    switch step.kind {
    case .sql(let s): sql = s.sql
    case .query(let q): sql = q.sql
    case .schemes, .tableStream, .table, .request, .files, .http, .parallel: return []
    }
    // The manifest validated, so every template parses.
    guard let template = try? SQLTemplate(parsing: sql) else { return [] }
    return template.references.map { reference in
      let params = reference.paramsJSON.flatMap { try? JSONValue(parsing: $0) } ?? .object([])
      return (reference.resource, reference.table, params)
    }
  }

  /// The SQL with physical table names in place of templates.
  func renderedSQL(_ sql: String) -> String {
    guard let template = try? SQLTemplate(parsing: sql) else { return sql }
    return template.render { reference in
      let params = reference.paramsJSON.flatMap { try? JSONValue(parsing: $0) } ?? .object([])
      return database.naming.physicalName(resource: reference.resource, table: reference.table, params: params)
    }
  }

  /// The tables a step creates, fills or reads, by physical name: from the scheme recorded
  /// by an earlier run, else from `{{ table }}` references, else `RESOURCE__<table>` (one per
  /// output table of a scheme not fetched yet).
  func tables(_ step: Step) -> [String] {
    func forResource(_ resource: String, _ params: JSONValue) -> [String] {
      if let scheme = schemes[resource], !scheme.outputs.isEmpty {
        return scheme.outputs.map { database.naming.physicalName(resource: resource, table: $0.name, params: params) }
      }
      return knownTables[resource + "\u{0}" + params.canonicalJSON]
        ?? [database.naming.physicalName(resource: resource, table: "<table>", params: params)]
    }
    switch step.kind {
    case .schemes(let s):
      let resources = s.resources ?? []
      return resources.flatMap { forResource($0, .object([])) }
    case .tableStream(let t):
      // Each partition is its own parameter set, so its own tables; a `rows` step's are
      // known when it runs.
      guard let partitions = step.partitions else { return forResource(t.resource, t.params) }
      return (partitions.knownPartitions ?? []).flatMap { partition in
        (try? t.filled(with: partition)).map { forResource(t.resource, $0.params) } ?? []
      }
    case .sql, .query:
      var out: [String] = []
      for r in Self.references(step) {
        let name = database.naming.physicalName(resource: r.resource, table: r.table, params: r.params)
        if !out.contains(name) { out.append(name) }
      }
      return out
    case .table, .request, .files, .http, .parallel:
      return []
    }
  }

  /// Whether the step calls the network (and so uses its retry policy and timeouts).
  static func callsNetwork(_ step: Step) -> Bool {
    switch step.kind {
    case .sql, .query: false
    case .schemes, .tableStream, .table, .request, .files, .http, .parallel: true
    }
  }

  /// What an incremental step sends on its first page: the parameter, the value, and where
  /// the value comes from; nil for other steps.
  func cursor(_ step: Step) -> (param: String, value: String, source: String)? {
    guard case .http(let h) = step.kind, let incremental = h.incremental else { return nil }
    let kept = fresh ? nil : cursors[step.id].flatMap(IncrementalCursor.Value.init(json:))
    guard let kept else {
      let source = fresh ? "initial, as --fresh starts again" : "initial: no cursor kept yet"
      return (incremental.param, incremental.initial.text, source)
    }
    let lag = incremental.lag.map { kept.isInstant ? ", less lag \($0.formatted)" : "" } ?? ""
    guard let sent = incremental.sent(kept: kept) else {
      return (incremental.param, "nothing", "the run fails: \(incremental.noValueBelow(kept: kept))")
    }
    let below = incremental.boundary == .exclusive ? ", just below it: boundary exclusive" : ""
    return (incremental.param, sent.text, "the kept cursor \(kept.text)\(lag)\(below)")
  }

  /// Why a run would skip the step; nil when it runs. Members of a skipped group share the
  /// group's; those of the group a continued run starts with have their own.
  func skipReason(_ step: Step, group: Step?) -> String? {
    resume.skipReasons[step.id] ?? group.flatMap { resume.skipReasons[$0.id] }
  }

  // MARK: Text

  var text: String {
    var lines: [String] = []
    lines.append("job \(manifest.job)" + (manifest.description.map { ": \($0)" } ?? ""))
    var rows: [(String, String)] = [("manifest", "\(manifest.path) (version \(manifest.version))")]
    if let p = manifest.platform {
      let base = p.host + "api/\(p.apiVersion)/"
      var detail = "environment \(p.environment), project \(p.project)"
      if let application = p.application { detail += ", application \(application)" }
      detail += ", device \(p.device)"
      rows.append(("platform", "\(base) (\(detail))"))
      rows.append(
        ("tls", p.tls.verify ? "verify certificates" + (p.tls.caFile.map { " against \(manifest.resolve($0))" } ?? "") : "NOT VERIFIED"))
      if !p.headers.isEmpty {
        rows.append(("headers", p.headers.map { "\($0.name): \(Self.headerValue($0))" }.joined(separator: ", ")))
      }
    }
    // A user name is no secret (masked with the rest when `secrets` lists it).
    if let auth = manifest.auth { rows.append(("auth", "user \(auth.username), password \(Redactor.mask)")) }
    if let database = manifest.database?.path.map(manifest.resolve) {
      let missing = Folders.firstMissing(holding: database).map { " (the folder \($0) does not exist: a run creates it)" }
      rows.append(("database", database + (missing ?? "")))
    }
    rows.append(
      ("downloads", manifest.resolve(manifest.download.path) + (manifest.download.resume ? ", resumed when broken" : ", not resumed")))
    rows.append(("journal", database.journalLocation))
    rows.append(("report", reportPath + " (\(manifest.report.formats.map(\.rawValue).joined(separator: ", ")))"))
    if let lineage = manifest.report.openLineage {
      let place =
        switch lineage.destination {
        case .url(let url): "POST to \(url)"
        case .path(let path): "appended to \(manifest.resolve(path))"
        }
      rows.append(("openlineage", "events \(place), job namespace \(lineage.namespace)"))
    }
    if let otlp = otlpTarget {
      let headers = otlp.headers.map { "\($0.name): \(Redactor.mask)" }.joined(separator: ", ")
      rows.append(
        (
          "otlp",
          otlp.endpoint.isEmpty
            ? "no endpoint: give report.otlp.endpoint or set OTEL_EXPORTER_OTLP_ENDPOINT; nothing is sent"
            : "trace POSTed to \(otlp.tracesURL)" + (headers.isEmpty ? "" : " with \(headers)")
        ))
    }
    rows.append(("resume", resumeSummary))
    lines += Self.aligned(rows, indent: "  ")
    lines.append("")
    let skipped = manifest.steps.filter { resume.skipReasons[$0.id] != nil }.count
    var heading = "steps: \(manifest.steps.count)"
    if skipped > 0 { heading += "; a run now skips \(skipped) and runs \(manifest.steps.count - skipped)" }
    lines.append(heading)
    for (index, step) in manifest.steps.enumerated() {
      lines += stepLines(step, number: "\(index + 1)", group: nil)
    }
    if manifest.allSteps.contains(where: { tables($0).contains { $0.contains("<table>") } }) {
      lines.append("")
      lines.append("<table> stands for each output table of a resource whose scheme has not been fetched yet.")
    }
    return lines.joined(separator: "\n")
  }

  /// `report.otlp` with the environment filled in; nil when export is off.
  private var otlpTarget: OTLPTarget? {
    manifest.report.otlp.map { OTLPTarget.resolve($0, environment: ProcessInfo.processInfo.environment) }
  }

  /// `report.openlineage` and `report.otlp` for `--json`: absent when off.
  var exportsJSON: [(key: String, value: JSONValue)] {
    var pairs: [(key: String, value: JSONValue)] = []
    if let lineage = manifest.report.openLineage {
      let destination: (key: String, value: JSONValue) =
        switch lineage.destination {
        case .url(let url): ("url", .string(url))
        case .path(let path): ("path", .string(manifest.resolve(path)))
        }
      pairs.append(("openlineage", .object([destination, ("namespace", .string(lineage.namespace))])))
    }
    if let otlp = otlpTarget {
      pairs.append(
        (
          "otlp",
          .object([
            ("endpoint", otlp.endpoint.isEmpty ? .null : .string(otlp.endpoint)),
            ("headers", .object(otlp.headers.map { ($0.name, .string(Redactor.mask)) })),
          ])
        ))
    }
    return pairs
  }

  /// The report path with `{job}` filled in; `{run_id}` is known when the run starts.
  var reportPath: String {
    manifest.resolve(manifest.report.path.replacing("{job}", with: manifest.job))
  }

  private var resumeSummary: String {
    if let run = resume.resumes {
      return "continues run \(run.id) (\(run.status), started \(run.startedAt))"
    }
    return "no unfinished run to continue; a run starts afresh"
  }

  private func stepLines(_ step: Step, number: String, group: Step?) -> [String] {
    let indent = String(repeating: " ", count: 2 + (group == nil ? 0 : 4))
    let action =
      skipReason(step, group: group).map { "skip, \($0)" } ?? resume.unresolvedWrites[step.id].map {
        "fail without calling the server: \($0)"
      }
      ?? (resume.runReasons[step.id].map { "run, \($0)" } ?? "run")
    var lines = ["", "\(indent)\(number). \(step.id) (\(step.kindName)): \(action)"]
    if let description = step.description { lines.append("\(indent)   \(description)") }
    var rows: [(String, String)] = []
    switch step.kind {
    case .sql(let s):
      rows.append(("sql", renderedSQL(s.sql)))
    case .query(let q):
      rows.append(("sql", renderedSQL(q.sql)))
      if let output = q.output { rows.append(("output", manifest.resolve(output) + " (\(q.format.rawValue))")) }
      for e in q.expect {
        var conditions: [String] = []
        if let min = e.min { conditions.append(">= \(min)") }
        if let max = e.max { conditions.append("<= \(max)") }
        if let equals = e.equals { conditions.append("= \(equals.json)") }
        rows.append(("expect", "\(e.column) " + conditions.joined(separator: " and ")))
      }
    case .parallel(let p):
      rows.append(("max", "\(p.max) at once"))
    case .schemes, .tableStream, .table, .request, .files, .http:
      if case .object(let pairs) = step.kind.options {
        for (key, value) in pairs {
          switch (key, value) {
          // An option left empty (no headers, no on_status) says nothing: no line.
          case (_, .array(let items)) where items.isEmpty: continue
          case (_, .object(let members)) where members.isEmpty: continue
          case ("output", .string(let path)), ("local", .string(let path)): rows.append((key, manifest.resolve(path)))
          case (_, .string(let s)): rows.append((key, s))
          case (_, .array(let items)) where items.allSatisfy({ if case .string = $0 { true } else { false } }):
            rows.append((key, items.compactMap { if case .string(let s) = $0 { s } else { nil } }.joined(separator: ", ")))
          default: rows.append((key, value.json))
          }
        }
      }
      if case .schemes(let s) = step.kind, s.resources == nil {
        rows.append(("resources", "every resource the user may read"))
      }
    }
    if let partitions = step.partitions { rows.append(("partitions", partitionsText(partitions))) }
    let tables = tables(step)
    if !tables.isEmpty { rows.append(("tables", tables.joined(separator: ", "))) }
    if let cursor = cursor(step) { rows.append(("sends", "\(cursor.param)=\(cursor.value) (\(cursor.source))")) }
    if case .http(let h) = step.kind, let o = h.auth?.oauth2, let source = refreshTokens[o.key] {
      rows.append(("refresh_token", source))
    }
    if Self.callsNetwork(step) {
      rows.append(("retry", Self.retryText(step.retry)))
      rows.append(("timeouts", Self.timeoutsText(step.timeouts)))
    } else {
      rows.append(("retry", "none (no network calls)"))
    }
    lines += Self.aligned(rows, indent: indent + "   ")
    if case .parallel(let p) = step.kind {
      for (index, member) in p.steps.enumerated() {
        lines += stepLines(member, number: "\(number).\(index + 1)", group: step)
      }
    }
    return lines
  }

  /// `list of 3 (region=eu; region=us; region=ap), 2 at once, lease 30s`; a `rows` query
  /// with its templates rendered, its count known when the step runs; a window's count.
  func partitionsText(_ p: Partitions) -> String {
    let source: String
    switch p.source {
    case .list(let list):
      let shown = list.prefix(3).map(\.label).joined(separator: "; ")
      source = "list of \(list.count) (\(shown)\(list.count > 3 ? "; ..." : ""))"
    case .rows(let sql):
      source = "one per row of: \(renderedSQL(sql)) (counted when the step runs)"
    case .window(let window):
      let count = p.knownPartitions?.count ?? 0
      source = "\(count) window\(count == 1 ? "" : "s") of \(window.every.formatted) from \(window.start) to \(window.end)"
    }
    return "\(source), \(p.concurrency) at once, lease \(p.lease.formatted)"
  }

  /// A step's partitions in `dray plan --json`: the source's kind and what it says, the
  /// count when the manifest alone says it (null for `rows`), `concurrency` and `lease`.
  func partitionsJSON(_ p: Partitions) -> JSONValue {
    var pairs: [(key: String, value: JSONValue)] = [("source", .string(p.source.kind.rawValue))]
    switch p.source {
    case .list: pairs += Self.pairs(of: p.definition)
    case .rows(let sql): pairs.append(("rows", .string(renderedSQL(sql))))
    case .window: pairs += Self.pairs(of: p.definition)
    }
    pairs += [
      ("count", p.knownPartitions.map { .integer(Int64($0.count)) } ?? .null), ("concurrency", .integer(Int64(p.concurrency))),
      ("lease", .string(p.lease.formatted)),
    ]
    return .object(pairs)
  }

  private static func pairs(of value: JSONValue) -> [(key: String, value: JSONValue)] {
    if case .object(let pairs) = value { pairs } else { [] }
  }

  static func headerValue(_ header: HTTPHeader) -> String {
    header.isSecret ? Redactor.mask : header.value
  }

  /// `count 5, interval 1s, backoff exponential, max_interval 30s, jitter false (waits 1s, 2s, 4s, 8s, 16s)`.
  /// When the waits of every retry add up to more than `wait_budget` (the run's total of
  /// retry waits, `RetryBudget`), it says so: without jitter, the waits listed are those
  /// that fit (`(waits 1s, 2s; a 3rd wait would pass wait_budget 5s and end the call)`).
  static func retryText(_ r: RetryPolicy) -> String {
    var text = "count \(r.count), interval \(r.interval.formatted), backoff \(r.backoff.rawValue), max_interval \(r.maxInterval.formatted)"
    text += ", jitter \(r.jitter)"
    if let elapsed = r.maxElapsed { text += ", max_elapsed \(elapsed.formatted)" }
    text += ", max_retry_after \(r.maxRetryAfter.formatted), wait_budget \(r.waitBudget.formatted)"
    guard r.count > 0 else { return text + " (one attempt, no retry)" }
    let full = (1...r.count).map { r.delay(beforeRetry: $0, random: { 1 }) }
    // How many full waits fit in the budget, as `RetryBudget.take` counts.
    var total = Duration.zero
    let fitting = full.firstIndex { wait in
      total += wait
      return total > r.waitBudget
    }
    let listed = r.jitter ? full : Array(full.prefix(fitting ?? full.count))
    var waits = listed.prefix(6).map(\.formatted)
    if listed.count > 6 { waits.append("...") }
    var note = waits.isEmpty ? "no retry" : "waits \(r.jitter ? "up to " : "")\(waits.joined(separator: ", "))"
    if let fitting {
      note +=
        r.jitter
        ? "; fewer retries if the waits add up to more than wait_budget \(r.waitBudget.formatted)"
        : "; the \(Self.ordinal(fitting + 1)) wait (\(full[fitting].formatted)) would pass wait_budget \(r.waitBudget.formatted) and end the call"
    }
    return text + " (\(note))"
  }

  /// `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`.
  static func ordinal(_ n: Int) -> String {
    let suffix =
      (11...13).contains(n % 100) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th"
    return "\(n)\(suffix)"
  }

  static func timeoutsText(_ t: Timeouts) -> String {
    "connect \(t.connect.formatted), request \(t.request.formatted), idle \(t.idle.formatted)"
  }

  /// `name  value` rows with the values lined up; a value's later lines are indented under
  /// its first, and long SQL is cut after `maxLines` lines.
  static func aligned(_ rows: [(String, String)], indent: String, maxLines: Int = 12) -> [String] {
    let width = rows.map(\.0.count).max() ?? 0
    var out: [String] = []
    for (name, value) in rows {
      let pad = indent + name + String(repeating: " ", count: width - name.count + 2)
      var valueLines = value.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      while valueLines.count > 1 && valueLines.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { valueLines.removeLast() }
      if valueLines.count > maxLines {
        let more = valueLines.count - maxLines
        valueLines = Array(valueLines.prefix(maxLines)) + ["... \(more) more line\(more == 1 ? "" : "s")"]
      }
      for (i, line) in valueLines.enumerated() {
        out.append((i == 0 ? pad : String(repeating: " ", count: pad.count)) + line)
      }
    }
    return out
  }
}
