import DrayModel
import DrayPostgres
import DrayTestSupport
import Foundation
import Testing

/// Connection failures on a PostgreSQL target are retried under the job's `retry` policy,
/// like HTTP failures, and the run resumes from its last commit. Each test starts a server
/// of its own, since it stops it.
@Suite struct PostgresRetryTests {
  /// The server stops (`pg_ctl stop -m immediate`) while the run waits to retry an HTTP 503;
  /// the run's PostgreSQL attempts fail and wait under the retry policy until the server
  /// is started again; the run then takes its lock again and finishes with the exact rows.
  @Test func aRunWaitsOutAStoppedServerAndFinishesWithExactRows() throws {
    let server = try PostgresServer()
    let database = try server.createDatabase("retry")
    let emulator = try Emulator()
    let fruits = "/api/v1/rpc/FRUITS/"
    // The first FRUITS request answers 503 and asks for 3 s: the run waits, then asks again.
    try emulator.admin("POST", "faults", json: #"[{"path": "\#(fruits)", "times": 1, "status": 503, "retry_after": "3"}]"#)
    let folder = TemporaryDirectory()
    let url = try server.url(database: database, withPassword: false).redacted
    try folder.write("pw.txt", PostgresServer.password)
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: pg-retry
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: demo, password: demo-password }
      database: { url: "\(url)", password: "${file:pw.txt}" }
      retry: { count: 120, interval: 250ms, backoff: fixed, jitter: false }
      steps:
        - id: schemes
          schemes: { resources: [FRUITS] }
        - id: fruits
          table_stream: { resource: FRUITS }
      """)
    let run = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/run")
    #expect(
      run.waitUntil {
        ((try? emulator.requests()) ?? []).contains { ($0["path"] as? String) == fruits }
      }, "the run never asked for FRUITS: \(run.errors)")
    try server.stopServer()
    #expect(run.waitUntil { run.errors.contains("database attempt 1 failed") }, "no PostgreSQL retry: \(run.errors)")
    try server.start()
    #expect(run.wait() == .exited(0), "\(run.errors)")
    #expect(run.errors.contains("; trying again in 0.25s"), "\(run.errors)")

    // The step's report lists its database attempts: failed ones with their wait, then the
    // one that succeeded.
    let reports = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports").filter { $0.hasSuffix(".json") }
    let report =
      try JSONSerialization.jsonObject(
        with: Data(contentsOf: URL(fileURLWithPath: folder.path + "/.dray/reports/" + (try #require(reports.first))))) as? [String: Any]
    let steps = try #require(report?["steps"] as? [[String: Any]])
    let attempts = try #require(steps.first { $0["id"] as? String == "fruits" }?["attempts"] as? [[String: Any]])
    let reconnections = attempts.filter { $0["call"] as? String == "database" }
    #expect(reconnections.count >= 2, "\(attempts)")
    #expect(
      reconnections.dropLast().allSatisfy { $0["outcome"] as? String != "ok" && $0["wait_seconds"] != nil }, "\(reconnections)")
    #expect(reconnections.last?["outcome"] as? String == "ok", "\(reconnections)")

    let check = try server.connect(database: database)
    #expect(try check.execute(#"SELECT id, name FROM "FRUITS__output_table" ORDER BY id"#).rows.map { $0[0] } == [1, 2, 3, 4, 5])
    #expect(try check.execute("SELECT status FROM _dray_runs").rows == [["succeeded"]])
    #expect(
      try check.execute("SELECT step_id, status FROM _dray_checkpoints ORDER BY step_id").rows == [
        ["fruits", "succeeded"], ["schemes", "succeeded"],
      ])
  }
}
