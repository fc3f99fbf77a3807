internal import DrayModel

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
  var stepIDs: [IdentifierKey: (id: String, location: SourceLocation, isDefault: Bool)] = [:]
  /// The SQL of `sql` and `query` steps, with its node, for the template checks.
  var sqlSources: [(stepID: String, sql: String, node: YAMLNode)] = []
  /// The `auth.oauth2` settings read so far by `OAuth2.key`, with where: the steps that
  /// name one token endpoint and client share one token, so they must agree.
  var oauth2Clients: [String: (settings: OAuth2, path: String)] = [:]
  /// The `auth.login` settings read so far by `Login.key`, with where: the steps that name
  /// one login endpoint and user share one session token, so they must agree.
  var logins: [String: (settings: Login, path: String)] = [:]
  /// A `table_stream` step that did not read: templates may name what it would load, so
  /// "no step loads" is not said (it would only repeat that step's own error).
  var hasBrokenLoader = false
  /// Each `http` load's table and quarantine (`load.quarantine`, or its default), with where
  /// the quarantine is written (the load's own position for the default), for
  /// `checkQuarantineNames`.
  var quarantines: [(path: String, table: String, name: String, given: Bool, location: SourceLocation)] = []
  /// Every step whose kind is known, read or not, in file order: what `checkRequirements`
  /// needs, so that a step with a problem of its own still says which blocks it needs.
  var stepKinds: [(id: String, kind: StepKind.Name, location: SourceLocation)] = []
  /// The files steps write, for `checkKeptPaths`.
  var stepOutputs: [StepOutput] = []
  /// The nodes of each partitioned step, by step id, for `checkPlaceholders`.
  var partitionNodes: [String: PartitionNodes] = [:]
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
  var secretItems: [(name: String?, node: YAMLNode)] = []

  mutating func validate() -> Manifest? {
    // The values of `secrets` are masked wherever they appear, used or not (read here, once
    // `secretsMayBeMissing` is known).
    for item in secretItems {
      if let name = item.name {
        if let value = reader.interpolator.environment[name] {
          reader.redactor.add(value)
        } else if reader.secretsMayBeMissing {
          // Read where it is used (a path, a partition's value) as an unset credential is.
          reader.interpolator = reader.interpolator.setting(name, to: NodeReader.unresolved)
          reader.unresolvedSecrets.append("secrets: \(name)")
        } else {
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
    checkQuarantineNames(postgres: database?.postgres != nil)
    checkKeptPaths(manifest, top: top)
    // Placeholders are dray's words, kept in its messages (the validation's too) whatever
    // a secret's value is.
    reader.redactor.keep(Self.placeholderWords(manifest.allSteps))
    manifest.redactor = reader.redactor
    // The names dray writes (the job, step ids, resources, tables, file paths as written and
    // as resolved, the job's own folders and database): never masked, even holding a secret.
    let paths =
      manifest.allSteps.flatMap(\.names) + [manifest.database?.path, manifest.download.path, manifest.state.path].compactMap { $0 }
    manifest.redactor.keep([manifest.job] + manifest.allSteps.map(\.id) + paths + paths.map(manifest.resolve))
    Self.markSecretHeaders(&manifest)
    checkPlaceholders(manifest)
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
}
