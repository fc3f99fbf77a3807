import DrayModel
import DrayTestSupport
import Foundation
import Testing

@testable import DrayManifest

/// The one declaration of the language (`ManifestSchema`) against what derives from it or
/// must agree with it: the validator's key lists, the JSON Schema, `docs/manifest.md`.
@Suite struct ManifestSchemaTests {
  static let validFolder = Repository.root + "/Tests/DrayManifestTests/Fixtures/valid"

  @Test func theValidatorReadsExactlyTheDeclaredKeys() {
    #expect(ManifestValidator.topLevelKeys == ManifestSchema.top.names)
    #expect(ManifestValidator.stepCommonKeys == ManifestSchema.stepCommon.names)
    // A step kind the validator reads must be declared, and the other way round.
    #expect(ManifestValidator.stepKinds == ManifestSchema.stepKinds.names)
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
          let isName = [".headers", ".expect", ".http.query", ".body.form", ".load.columns", ".http.on_status"].contains {
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
    let declared = Set(ManifestSchema.keyReference.map(\.path)).subtracting([
      "auth.password", "database.url", "database.password", "database.schema",
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
      return line[line.index(line.startIndex, offsetBy: 3)..<end].allSatisfy { $0.isLetter || "_[]<>.".contains($0) }
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
