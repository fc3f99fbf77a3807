import DrayEngine
import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// The names dray writes itself (tables, file paths, resources) are never altered by
/// masking: a secret listed under `secrets:` that happens to sit inside one leaves it whole
/// wherever it is written, while the secret on its own is still masked; on both targets.
@Suite struct KeptNamesTests {
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aSecretInsideATableNameAndAnOutputPathLeavesThemWhole(kind: TargetDatabase.Kind) throws {
    let secret = "zebrakey9"
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", #"[{"id": 1}, {"id": 2}]"#)])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let table = "things_\(secret)"
    let output = "out/\(secret)-counts.csv"
    let (manifest, report) = try runJob(
      folder,
      """
      version: 1
      job: names
      secrets: [KEY]
      \(target.manifestBlock)retry: { count: 0 }
      report: { path: "reports/{job}.json", formats: [json, junit] }
      steps:
        - id: counts
          query: { sql: "SELECT 1 AS n", output: \(output), format: csv }
        - id: things
          http:
            base_url: '${API}'
            path: things
            headers: { X-Key: '${KEY}' }
            load: { table: \(table), columns: { id: INTEGER }, expect: { rows: { min: 5 } } }
      """, environment: ["API": server.url, "KEY": secret])
    #expect(report.exitCode == 1)
    #expect(report.steps[0].outputs.contains { $0.hasSuffix(output) }, "\(report.steps[0].outputs)")
    let message = "table \(table): expectation failed: rows = 2, expected at least 5"
    #expect(report.steps[1].errorMessage?.hasPrefix(message) == true, "\(report.steps[1].errorMessage ?? "")")

    // Masked as every report format writes it: the names whole, the secret alone masked.
    let redacted = report.redacted(by: manifest.redactor)
    #expect(redacted.steps[1].errorMessage?.hasPrefix(message) == true, "\(redacted.steps[1].errorMessage ?? "")")
    #expect(redacted.steps[1].tables.allSatisfy { !$0.contains("***") })
    #expect(manifest.redactor.redact("the key \(secret) in \(output)") == "the key *** in \(output)")
    let json = try text(folder.path + "/reports/names.json")
    let junit = try text(folder.path + "/reports/names.junit.xml")
    for written in [json, junit] {
      #expect(!written.contains("***"), "\(written)")
      #expect(written.contains(message))
    }
    #expect(json.contains(output))
    // The failed expectation published nothing.
    #expect(try target.columnNames(table) == [])
    #expect(try ReportCheck.problems([folder.path + "/reports/names.json", folder.path + "/reports/names.junit.xml"]) == "")
  }
}
