import DrayEngine
import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// `retry.max_retry_after` and `retry.wait_budget` through a whole run: a wait past either
/// is refused before it starts (so these runs wait for nothing), the step fails naming the
/// setting to raise, in its error and in the report written.
@Suite struct RetryLimitTests {
  func run(_ retry: String, rule: [String: Any]) throws -> (RunReport, json: String, requests: Int) {
    let server = try RestServer()
    try server.setRules(String(decoding: try JSONSerialization.data(withJSONObject: [rule]), as: UTF8.self))
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      """
      version: 1
      job: limits
      database: { path: data.sqlite }
      retry: \(retry)
      report: { path: reports/limits.json }
      steps:
        - id: things
          http: { base_url: '${API}', path: things, load: { table: things, columns: { id: INTEGER } } }
      """, environment: ["API": server.url])
    #expect(try ReportCheck.problems([folder.path + "/reports/limits.json"]) == "")
    return (report, try text(folder.path + "/reports/limits.json"), try server.requests().count)
  }

  @Test func aRetryAfterPastMaxRetryAfterFailsTheStepNamingIt() throws {
    let (report, json, requests) = try run(
      "{ count: 3, interval: 10ms, max_retry_after: 10m }",
      rule: ["path": "/things", "status": 503, "headers": ["Retry-After": "3600"], "body": "busy"])
    #expect(report.exitCode == 69)
    #expect(requests == 1)
    #expect(report.steps[0].attempts.count == 1)
    let message = try #require(report.steps[0].errorMessage)
    #expect(
      message.hasSuffix(
        "the server asked to wait 3600 s before retrying (Retry-After), longer than retry.max_retry_after (10m); giving up. Raise retry.max_retry_after to wait that long"
      ), "\(message)")
    #expect(json.contains("retry.max_retry_after (10m)"))
  }

  @Test func aWaitPastTheRunsWaitBudgetFailsTheStepNamingIt() throws {
    let (report, json, requests) = try run(
      "{ count: 3, interval: 2s, backoff: fixed, jitter: false, wait_budget: 1s }",
      rule: ["path": "/things", "status": 503, "body": "busy"])
    #expect(report.exitCode == 69)
    #expect(requests == 1)
    #expect(report.steps[0].attempts.count == 1)
    let message = try #require(report.steps[0].errorMessage)
    #expect(
      message.hasSuffix(
        "gave up after 1 attempt: waiting 2s more would pass retry.wait_budget (1s of retry waits per run; 0s waited so far)"),
      "\(message)")
    #expect(json.contains("retry.wait_budget (1s of retry waits per run"))
  }
}
