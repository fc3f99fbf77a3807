import DrayModel
import DrayTestSupport
import Foundation
import Testing

@testable import DrayManifest

/// The one declaration of the language (`ManifestSchema`) against what derives from it or
/// must agree with it: the validator's key lists, the JSON Schema, `docs/manifest.md`.
@Suite struct ManifestSchemaTests {
  static let validFolder = Repository.root + "/Tests/DrayManifestTests/Fixtures/valid"

  func errors(_ text: String, directory: String = "/jobs") -> [String] {
    ManifestText.errors(text, directory: directory)
  }

  @Test func theValidatorReadsExactlyTheDeclaredKeys() {
    let found = errors(
      """
      version: 1
      job: j
      zzzzzzzzzz: 1
      steps:
        - zzzzzzzzzz: 1
      """)
    #expect(
      found == [
        "job.yaml:3:1: error: unknown key 'zzzzzzzzzz' at the top level; valid keys: \(ManifestSchema.top.names.joined(separator: ", "))",
        "job.yaml:5:5: error: unknown step kind 'zzzzzzzzzz' in step 1; step kinds: \(ManifestSchema.stepKinds.names.joined(separator: ", "))",
      ])
    // The step kinds are declared in the model's order, each under its manifest key.
    #expect(ManifestSchema.stepKinds.names == StepKind.Name.allCases.map(\.rawValue))
    #expect(ManifestSchema.stepKinds.names == ["schemes", "table_stream", "table", "request", "files", "sql", "query", "http", "parallel"])
  }

  @Test func rangesAndDefaultsComeFromTheDeclaration() throws {
    guard case .integer(let range) = ManifestSchema.parallel["max"]?.value else {
      Issue.record("parallel.max is not declared as an integer")
      return
    }
    let text = """
      version: 1
      job: j
      database: { path: db.sqlite }
      steps:
        - id: group
          parallel:
            max: \(range.upperBound + 1)
            steps: [{ sql: SELECT 1 }]
        - id: fine
          parallel: { steps: [{ sql: SELECT 1 }] }
      """
    #expect(
      errors(text) == [
        "job.yaml:7:12: error: 'steps.group.parallel.max' must be between \(range.lowerBound) and \(range.upperBound), found \(range.upperBound + 1)"
      ])
    let manifest = try ManifestLoader(environment: [:]).load(
      text: text.replacing("max: \(range.upperBound + 1)", with: "max: \(range.upperBound)"), path: "job.yaml", directory: "/jobs")
    let fine = try #require(manifest.steps[1].kind.parallel)
    #expect(ManifestSchema.parallel["max"]?.defaultValue == .integer(Int64(fine.max)))
  }

  /// `auth.password_file`, `bearer_file` and `basic.password_file` are read by one reader:
  /// an empty file is refused alike (it was not written or not mounted), and an empty
  /// password is written `password: ""`.
  @Test func anEmptySecretFileIsRefusedWhereverItIsNamed() throws {
    let folder = TemporaryDirectory()
    try folder.write("empty", "")
    try folder.write("newline", "\n")
    let found = errors(
      """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: u, password_file: empty }
      steps:
        - table: { resource: R, output: out/r.json }
        - http: { base_url: "http://h/", auth: { bearer_file: newline } }
        - http: { base_url: "http://h/", auth: { basic: { username: u, password_file: empty } } }
      """, directory: folder.path)
    let advice = "write the secret in it (an empty password is written password: \"\")"
    #expect(
      found == [
        "job.yaml:4:37: error: 'auth.password_file': file 'empty' is empty; \(advice)",
        "job.yaml:7:57: error: 'steps.http-2.http.auth.bearer_file': file 'newline' is empty; \(advice)",
        "job.yaml:8:81: error: 'steps.http-3.http.auth.basic.password_file': file 'empty' is empty; \(advice)",
      ])
    #expect(
      errors(
        """
        version: 1
        job: j
        platform: { host: "http://h/", environment: e, project: p }
        auth: { username: u, password: "" }
        steps:
          - table: { resource: R, output: out/r.json }
        """
      ).isEmpty)
  }

  @Test func anUnreadableSecretFileIsNamedAlikeInEveryBlock() {
    let found = errors(
      """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: u, password_file: nowhere }
      steps:
        - table: { resource: R, output: out/r.json }
        - http: { base_url: "http://h/", auth: { bearer_file: nowhere } }
      """, directory: TemporaryDirectory().path)
    #expect(
      found == [
        "job.yaml:4:37: error: 'auth.password_file': cannot read file 'nowhere'; check that it exists and is readable",
        "job.yaml:7:57: error: 'steps.http-2.http.auth.bearer_file': cannot read file 'nowhere'; check that it exists and is readable",
      ])
  }

  /// `platform.headers` and an `http` step's `headers` are read by one reader, with the same
  /// checks and messages.
  @Test func headersAndTLSReadAlikeOnThePlatformAndInHTTPSteps() {
    let found = errors(
      """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p, headers: { "Bad Name": x }, tls: { verify: maybe } }
      auth: { username: u, password: p-secret-1 }
      steps:
        - table: { resource: R, output: out/r.json }
        - http: { base_url: "http://h/", headers: { "Bad Name": x }, tls: { verify: maybe } }
      """)
    #expect(found.count == 4)
    #expect(found[0].hasPrefix("job.yaml:3:71: error: "))
    #expect(found[2].hasPrefix("job.yaml:7:47: error: "))
    #expect(found[0].dropFirst("job.yaml:3:71: error: ".count) == found[2].dropFirst("job.yaml:7:47: error: ".count))
    #expect(found[1] == "job.yaml:3:103: error: 'platform.tls.verify' must be true or false, found a string ('maybe')")
    #expect(found[3] == "job.yaml:7:79: error: 'steps.http-2.http.tls.verify' must be true or false, found a string ('maybe')")
  }

  @Test func theKitchenSinkManifestUsesEveryDeclaredKey() throws {
    let text = try String(contentsOfFile: Self.validFolder + "/everything.yaml", encoding: .utf8)
    let root = try #require(try YAMLParser(file: "everything.yaml").parse(text))
    var used: Set<String> = []
    func walk(_ node: YAMLNode, _ path: String) {
      switch node.content {
      case .mapping(let pairs):
        for pair in pairs {
          let key = pair.key.scalar?.text ?? ""
          if path.isEmpty && key.hasPrefix("x-") { continue }
          // Header, column, parameter and status names are free: their path holds <name>,
          // and only what is inside them is a key of the language.
          let isName = [".headers", ".expect", ".http.query", ".body.form", ".load.columns", ".http.on_status", ".partitions.list[]"]
            .contains {
              path.hasSuffix($0)
            }
          let child = isName ? "\(path).<name>" : path.isEmpty ? key : "\(path).\(key)"
          if !isName { used.insert(child) }
          if !path.hasSuffix(".params") && !["params", "equals", "json"].contains(key) { walk(pair.value, child) }
        }
      case .sequence(let items):
        // Members of a parallel group have the same keys as top-level steps.
        let prefix = path.hasSuffix(".parallel.steps") ? "steps" : path
        for item in items { walk(item, prefix + "[]") }
      case .scalar:
        break
      }
    }
    walk(root, "")
    // auth.password and auth.password_file exclude each other; the file is the one used.
    // database.path and database.url too: the PostgreSQL keys are read in DatabaseTargetTests.
    // report.openlineage's url and path too: the path is read in TelemetryExportTests.
    let declared = Set(ManifestSchema.keyReference.map(\.path)).subtracting([
      "auth.password", "report.openlineage.path", "database.url", "database.password", "database.schema", "database.timeouts",
      "database.timeouts.connect", "database.timeouts.idle", "database.timeouts.statement",
    ])
    #expect(declared.subtracting(used).sorted() == [])
    #expect(used.subtracting(declared).sorted() == [])
  }

  @Test func theJSONSchemaAcceptsEveryValidManifest() throws {
    let checker = JSONSchemaChecker(root: ManifestSchema.jsonSchema)
    var files = ExampleManifests.find(in: Self.validFolder)
    for folder in ["examples", "jobs"] {
      files += ExampleManifests.find(in: Repository.root + "/" + folder)
    }
    for file in files {
      let text = try String(contentsOfFile: file, encoding: .utf8)
      let root = try #require(try YAMLParser(file: file).parse(text))
      #expect(checker.problems(JSONValue(yaml: root)) == [], "\(file)")
    }
  }

  @Test(arguments: [
    ("version: 1\njob: j\nsteps: [{sql: x}]\nplatfrom: {}\n", "$: unexpected key platfrom"),
    ("version: 1\nsteps: [{sql: x}]\n", "$: missing job"),
    ("version: 2\njob: j\nsteps: [{sql: x}]\n", "$.version: matches none of anyOf"),
    ("version: 1\njob: j\nsteps: [{sql: x, query: {sql: y}}]\n", "$.steps[0]: matches 2 of oneOf"),
    ("version: 1\njob: j\nsteps: [{id: a}]\n", "$.steps[0]: matches 0 of oneOf"),
    (
      "version: 1\njob: j\nsteps: [{parallel: {steps: [{parallel: {steps: [{sql: x}]}}]}}]\n",
      "$.steps[0].parallel.steps[0]: unexpected key parallel"
    ),
    ("version: 1\njob: j\nretry: {interval: 5}\nsteps: [{sql: x}]\n", "$.retry.interval: expected [\"string\"], found 5"),
    ("version: 1\njob: j\nauth: {username: u}\nsteps: [{sql: x}]\n", "$.auth: matches 0 of oneOf"),
    ("version: 1\njob: j\nsteps: [{files: {connection: c, action: get, path: p}}]\n", "$.steps[0].files: missing local"),
  ])
  func theJSONSchemaRefusesWhatTheValidatorRefuses(_ yaml: String, _ problem: String) throws {
    let root = try #require(try YAMLParser(file: "t.yaml").parse(yaml))
    let problems = JSONSchemaChecker(root: ManifestSchema.jsonSchema).problems(JSONValue(yaml: root))
    #expect(problems.contains { $0.hasPrefix(problem) }, "\(problems)")
  }

  /// The lists and mappings the validator refuses empty are refused empty by the schema too
  /// (minItems, minProperties), and the same ones with an item pass it.
  @Test(arguments: [
    ("partitions: { list: [] }\n    http: { base_url: \"https://h/\", path: \"{r}\" }", "$.steps[0].partitions.list: fewer than 1 items"),
    (
      "partitions: { list: [{}] }\n    http: { base_url: \"https://h/\", path: \"{r}\" }",
      "$.steps[0].partitions.list[0]: fewer than 1 properties"
    ),
    ("schemes: { resources: [] }", "$.steps[0].schemes.resources: fewer than 1 items"),
    ("http: { base_url: \"https://h/\", query: { a: [] } }", "$.steps[0].http.query.a: matches none of anyOf"),
    ("http: { base_url: \"https://h/\", method: POST, body: { form: { a: [] } } }", "$.steps[0].http.body.form.a: matches none of anyOf"),
    ("http: { base_url: \"https://h/\", load: { table: t, columns: {} } }", "$.steps[0].http.load.columns: fewer than 1 properties"),
    (
      "http: { base_url: \"https://h/\", load: { table: t, write: merge, primary_key: [] } }",
      "$.steps[0].http.load.primary_key: fewer than 1 items"
    ),
  ])
  func theJSONSchemaRefusesTheEmptyListsAndMappingsTheValidatorRefuses(_ step: String, _ problem: String) throws {
    let yaml = "version: 1\njob: j\ndatabase: { path: d.sqlite }\nsteps:\n  - " + step + "\n"
    #expect(!ManifestText.errors(yaml).isEmpty, "the validator takes \(step)")
    let root = try #require(try YAMLParser(file: "t.yaml").parse(yaml))
    let problems = JSONSchemaChecker(root: ManifestSchema.jsonSchema).problems(JSONValue(yaml: root))
    // Inside an anyOf's reasons, for `schemes` (which may also be empty: null).
    #expect(problems.contains { $0.contains(problem) }, "\(problems)")
    // With one item, the schema takes it.
    let filled = yaml.replacing("list: [{}]", with: "list: [{ r: a }]").replacing("list: []", with: "list: [{ r: a }]")
      .replacing("resources: []", with: "resources: [R]").replacing("a: []", with: "a: [x]").replacing(
        "columns: {}", with: "columns: { id: INTEGER }"
      )
      .replacing("primary_key: []", with: "primary_key: [id]")
    let filledRoot = try #require(try YAMLParser(file: "t.yaml").parse(filled))
    #expect(JSONSchemaChecker(root: ManifestSchema.jsonSchema).problems(JSONValue(yaml: filledRoot)) == [], "\(filled)")
  }

  @Test func typedKeysTakeAReferenceAndStringKeysTakeAnyScalar() throws {
    let yaml = """
      version: 1
      job: j
      description: no
      platform: { host: "http://h/", environment: on, project: 0755, device: 12:30 }
      retry: { count: "${RETRIES:-3}", jitter: "${JITTER}", interval: "${INTERVAL:-1s}" }
      steps: [{sql: x}]
      """
    let root = try #require(try YAMLParser(file: "t.yaml").parse(yaml))
    #expect(JSONSchemaChecker(root: ManifestSchema.jsonSchema).problems(JSONValue(yaml: root)) == [])
  }

  @Test func theCommittedSchemaFileIsCurrent() throws {
    let committed = try String(contentsOfFile: Repository.root + "/docs/manifest.schema.json", encoding: .utf8)
    #expect(committed == ManifestSchema.jsonSchemaText, "run: dray schema > docs/manifest.schema.json")
  }

  @Test func theReferenceDocumentsEveryKeyWithItsTypeAndDefault() throws {
    let docs = try String(contentsOfFile: Repository.root + "/docs/manifest.md", encoding: .utf8)
    // Rows of the key tables: the first cell is a key path in backticks.
    let rows = docs.split(separator: "\n").map(String.init).filter { line in
      guard line.hasPrefix("| `"), let end = line.dropFirst(3).firstIndex(of: "`") else { return false }
      return line[line.index(line.startIndex, offsetBy: 3)..<end].allSatisfy { $0.isLetter || $0.isNumber || "_[]<>.".contains($0) }
    }
    let expected = ManifestSchema.keyReference.map { "| `\($0.path)` | \($0.type) | \($0.defaultCell) |" }
    let documented = rows.map { row in
      // The first three cells: key, type, default; the fourth is free prose.
      let cells = row.split(separator: "|", omittingEmptySubsequences: false).dropFirst().prefix(3)
      return "|" + cells.joined(separator: "|") + "|"
    }
    let missing = expected.filter { !documented.contains($0) }
    #expect(missing == [], "docs/manifest.md lacks or differs on these rows:\n\(missing.joined(separator: "\n"))")
    let unknown = documented.filter { !expected.contains($0) }
    #expect(unknown == [], "docs/manifest.md documents keys the language does not have:\n\(unknown.joined(separator: "\n"))")
  }

  @Test func defaultsComeFromTheModel() {
    let reference = Dictionary(uniqueKeysWithValues: ManifestSchema.keyReference.map { ($0.path, $0.defaultText) })
    #expect(reference["retry.count"] == "\(RetryPolicy.default.count)")
    #expect(reference["retry.interval"] == "1s")
    #expect(reference["retry.max_interval"] == "30s")
    #expect(reference["platform.timeouts.connect"] == "10s")
    #expect(reference["platform.timeouts.idle"] == "1m")
    #expect(reference["download.path"] == ".dray/downloads")
    #expect(reference["report.formats"] == "[json]")
    #expect(reference["version"] == "required")
    #expect(reference["platform.application"] == "-")
    #expect(reference["steps[].retry.count"] == "as retry.count")
    #expect(reference["steps[].timeouts.idle"] == "as platform.timeouts.idle")
  }
}
