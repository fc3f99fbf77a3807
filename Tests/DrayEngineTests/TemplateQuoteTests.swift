import DrayEngine
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// `{{ table }}` names a table whose resource and table names hold quotes: a quote doubled
/// inside an argument stands for one, as in SQL (issue 25), on both databases.
@Suite struct TemplateQuoteTests {
  /// An emulator whose one resource is FRUITS renamed `SAY "HI"`, its table `out"put`.
  static func emulator(_ folder: TemporaryDirectory) throws -> Emulator {
    let data = try Data(contentsOf: URL(fileURLWithPath: Repository.root + "/Emulator/resources.json"))
    var all = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let resources = try #require(all["resources"] as? [String: Any])
    var fruits = try #require(resources["FRUITS"] as? [String: Any])
    let outputs = try #require(fruits["outputs"] as? [String: Any])
    fruits["outputs"] = ["out\"put": try #require(outputs["output_table"])]
    all["resources"] = ["SAY \"HI\"": fruits]
    let path = try folder.write("resources.json", String(decoding: try JSONSerialization.data(withJSONObject: all), as: UTF8.self))
    return try Emulator(["--resources", path])
  }

  @Test func aDoubledQuoteParsesAsOne() throws {
    let template = try SQLTemplate(parsing: #"{{ table "SAY ""HI""" 'it''s' '{"note":"it''s"}' }} {{ table "A" "B" }}"#)
    #expect(template.references.map(\.resource) == [#"SAY "HI""#, "A"])
    #expect(template.references.map(\.table) == ["it's", "B"])
    #expect(template.references.map(\.paramsJSON) == [#"{"note":"it's"}"#, nil])
    let error = #expect(throws: SQLTemplate.SyntaxError.self) { try SQLTemplate(parsing: #"{{ table "A"" }}"#) }
    #expect(error?.message == "unterminated string in template")
  }

  /// Validation's messages write a reference as the template does, quotes doubled.
  @Test func messagesWriteAReferenceAsTheTemplateDoes() {
    let text = #"""
      version: 1
      job: j
      database: { path: db.sqlite }
      steps:
        - sql: 'SELECT * FROM {{ table "SAY ""HI""" "it''s" }}'
      """#
    #expect(
      ManifestText.errors(text) == [
        #"job.yaml:5:25: error: step 'sql-1': {{ table "SAY ""HI""" "it's" }} names a resource that no table_stream step loads; add a table_stream step for SAY "HI" before this step, or, for a table another job loads, write the physical name that `dray tables DATABASE` prints"#
      ])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDoubledQuoteInATemplateArgumentIsOneQuote(kind: TargetDatabase.Kind) throws {
    let folder = TemporaryDirectory()
    let emulator = try Self.emulator(folder)
    let target = try TargetDatabase(kind, folder: folder.path)
    let report = try runJob(
      folder,
      JobText.header(job: "quotes", emulator: emulator) + target.manifestBlock
        + #"""
        steps:
          - table_stream: { resource: 'SAY "HI"' }
          - sql: |
              CREATE TABLE cheap AS SELECT name FROM {{ table "SAY ""HI""" "out""put" }} WHERE price < 1.5;
          - query:
              sql: "SELECT count(*) AS n FROM {{ table 'SAY \"HI\"' 'out\"put' }}"
              expect: { n: { equals: 5 } }
        """#
    ).1
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT name FROM cheap ORDER BY name") == [["apple"], ["plum"]])
  }
}
