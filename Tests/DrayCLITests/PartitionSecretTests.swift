import DrayTestSupport
import Foundation
import Testing

/// A partition value that draws on a secret (docs/partitions.md, "How a partitioned step
/// runs"): the member's id is the hashed form `STEP[#...]`, so the secret is in no log line,
/// report or journal row, the report's `partition` masks it, and a file name `output` gives
/// holds `secret-` and a hash of it.
@Suite struct PartitionSecretTests {
  @Test func aSecretPartitionValueIsInNoMemberIdLogLineReportOrJournal() throws {
    let secret = "tkSentinel\(UUID().uuidString.prefix(8))"
    let server = try RestServer()
    let folder = TemporaryDirectory("dray-partition-secret")
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: ps
      database: { path: data.sqlite }
      secrets: [TENANT_KEY]
      report: { formats: [json, html] }
      steps:
        - id: p
          partitions: { list: [{ tenant: "${TENANT_KEY}" }, { tenant: public }] }
          http:
            base_url: "\(server.url)"
            path: echo/x
            headers: { X-Tenant: "{tenant}" }
            load: { table: t, records: /data, write: append }
        - id: q
          partitions: { list: [{ tenant: "${TENANT_KEY}" }, { tenant: public }] }
          http: { base_url: "\(server.url)", path: echo/y, output: "out/{tenant}.json" }

      """)
    let result = try Command.dray(["run", path, "--verbose"], environment: ["TENANT_KEY": secret], directory: folder.path)
    #expect(result.status == 0, "\(result.output)")
    #expect(try server.requests().compactMap { $0.headers["X-Tenant"] }.sorted() == [secret, "public"].sorted())
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/out").sorted()
    #expect(files.count == 2 && files.contains("public.json"), "\(files)")
    #expect(files.contains { $0.hasPrefix("secret-") && $0.hasSuffix(".json") }, "\(files)")
    #expect(!result.output.contains("Sentinel"), "\(result.output)")
    #expect(result.stderr.contains("p[tenant=public]"), "\(result.stderr)")
    #expect(result.stderr.contains("p[#"), "\(result.stderr)")
    let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports")
    #expect(reports.contains { $0.hasSuffix(".json") } && reports.contains { $0.hasSuffix(".html") }, "\(reports)")
    for report in reports {
      let text = try String(contentsOfFile: folder.path + "/.dray/reports/" + report, encoding: .utf8)
      #expect(!text.contains("Sentinel"), "\(report)")
      if report.hasSuffix(".json") { #expect(text.contains(#""tenant":"***""#), "\(text)") }
    }
    let ids = try SQLiteFile.rows(folder.path + "/data.sqlite", "SELECT step_id FROM _dray_checkpoints").compactMap { $0[0] }
    #expect(ids.contains("p[tenant=public]"), "\(ids)")
    #expect(ids.contains { $0.hasPrefix("p[#") && $0.count == "p[#".count + 17 }, "\(ids)")
    #expect(!ids.contains { $0.contains("Sentinel") }, "\(ids)")
  }
}
