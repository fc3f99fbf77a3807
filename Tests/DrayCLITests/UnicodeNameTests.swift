import DrayTestSupport
import Foundation
import Testing

/// A job name and step ids in any script's letters (issue 25: the docs say "letters"): the
/// run, its journal and kept cursor, its downloads and every report file take them as
/// they are, on SQLite and PostgreSQL; an id typed with a combining accent is the same id
/// as the composed one (NFC).
@Suite struct UnicodeNameTests {
  @Test(arguments: TargetDatabase.Kind.allCases)
  func namesInAnyScriptRunReportAndResume(kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--orders", "3"])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    // `e\u0301tat`: é written as e and a combining acute accent (NFD).
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: zählung
      \(target.manifestBlock)report: { path: "reports/{job}-{run_id}.json", formats: [json, junit, prometheus, html] }
      steps:
        - id: 受注
          http:
            base_url: "\(server.url)"
            path: orders
            load: { table: orders, records: /data, write: merge, primary_key: [id] }
            paginate: { next: /links/next }
            incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z" }
        - id: grüppe
          parallel:
            steps:
              - sql: SELECT 1
              - id: "e\\u0301tat"
                query: { sql: SELECT count(*) AS n FROM orders, output: out/n.json }

      """)
    #expect(try Command.dray(["validate", path]).stdout == "\(path): ok (job zählung, 2 steps)\n")
    let run = try Command.dray(["run", path])
    #expect(run.status == 0, "\(run.stderr)")

    let reports = folder.path + "/reports"
    let files = try FileManager.default.contentsOfDirectory(atPath: reports).sorted()
    let json = try #require(files.first { $0.hasPrefix("zählung-") && $0.hasSuffix(".json") })
    let report = try #require(
      try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: reports + "/" + json))) as? [String: Any])
    #expect(report["job"] as? String == "zählung")
    let steps = try #require(report["steps"] as? [[String: Any]])
    #expect(steps.compactMap { $0["id"] as? String } == ["受注", "grüppe"])
    #expect(steps.compactMap { $0["status"] as? String } == ["succeeded", "succeeded"])
    let members = try #require(steps[1]["steps"] as? [[String: Any]]).compactMap { $0["id"] as? String }
    #expect(members == ["grüppe.sql-1", "état"])
    // Kept composed: one scalar for é.
    #expect(members.last.map { Array($0.unicodeScalars) } == ["\u{E9}", "t", "a", "t"])
    #expect(try String(contentsOfFile: folder.path + "/out/n.json", encoding: .utf8).contains(#""n":3"#))

    let junit = try String(contentsOfFile: reports + "/" + json.dropLast(".json".count) + ".junit.xml", encoding: .utf8)
    #expect(junit.contains(#"name="受注""#) && junit.contains(#"name="grüppe/état""#), "\(junit)")
    let prometheus = try String(contentsOfFile: reports + "/zählung.prom", encoding: .utf8)
    #expect(prometheus.contains(#"dray_job_status{dray_job="zählung",status="succeeded"} 1"#), "\(prometheus)")
    let html = try #require(files.first { $0.hasSuffix(".html") })
    #expect(try String(contentsOfFile: reports + "/" + html, encoding: .utf8).contains("受注"))

    // The journal and the kept cursor know the step by its name.
    #expect(try target.rows("SELECT step_id, value FROM _dray_http_cursors") == [["受注", #""2024-01-01T00:00:03Z""#]])
    #expect(Set(try target.rows("SELECT step_id FROM _dray_checkpoints").compactMap(\.first)) == ["受注", "grüppe", "grüppe.sql-1", "état"])
    let plan = try Command.dray(["plan", path])
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("  1. 受注 (http): run\n"), "\(plan.stdout)")
    let status = try Command.dray(["status", path])
    #expect(status.status == 0, "\(status.stderr)")
    #expect(status.stdout.contains("succeeded"), "\(status.stdout)")
    // A name typed with a combining accent (ü as u and U+0308) is the same step.
    let again = try Command.dray(["run", path, "--only", "gru\u{308}ppe"])
    #expect(again.status == 0, "\(again.stderr)")
  }
}
