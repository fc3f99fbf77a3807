import DrayEngine
import DrayManifest
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// `rate_limit` against the REST test server started with `--rate-limit 5` (it answers 429
/// above 5 requests in any second): the budget is shared by the steps that name the host.
@Suite struct RequestBudgetTests {
  let folder = TemporaryDirectory()

  /// Runs a parallel group of two `http` steps that page through /items, `perPage` items a
  /// page, each with `budget` among its keys; returns the report and its JSON file's text.
  func run(_ budget: String, perPage: Int, server: RestServer, retries: Int = 0) throws -> (RunReport, String) {
    func member(_ id: String) -> String {
      "        - { id: \(id), http: { base_url: '${API}', path: items, query: { per_page: \(perPage) }, "
        + "load: { table: \(id), records: /data }, paginate: { next: /links/next }\(budget) } }"
    }
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: budget
      database: { path: data.sqlite }
      retry: { count: \(retries) }
      report: { path: report.json }
      steps:
        - id: both
          parallel:
            steps:
      \(member("first"))
      \(member("second"))

      """)
    let manifest = try ManifestLoader(environment: ["API": server.url]).load(path: path)
    let report = Runner(manifest: manifest, console: Console(level: .quiet), cancellation: Cancellation()).run()
    return (report, try String(contentsOfFile: folder.path + "/report.json", encoding: .utf8))
  }

  @Test func aBudgetBelowTheServersLimitGetsNo429AndTheReportShowsTheWaits() throws {
    let server = try RestServer(["--items", "25", "--rate-limit", "5"])
    // Two steps of 5 pages each, at once, on one host: 10 requests, 4 in any second.
    let (report, json) = try run(", rate_limit: { requests: 4, per: 1s }", perPage: 5, server: server)
    #expect(report.status == .succeeded, "\(report.steps.first?.members.map { $0.errorMessage ?? "" } ?? [])")
    let requests = try server.requests()
    #expect(requests.count == 10)
    #expect(!requests.contains { $0.status == 429 })
    let members = try #require(report.steps.first?.members)
    #expect(members.count == 2)
    // The budget is shared: at least 6 of the 10 requests waited, over at least 1.5 s.
    let waited = members.map(\.budgetWait).reduce(0, +)
    #expect(waited >= 1.5)
    #expect(members.allSatisfy { $0.budgetWait > 0 })
    #expect(json.contains("\"budget_wait_seconds\""))
    let problems = try ReportCheck.problems([folder.path + "/report.json"])
    #expect(problems.isEmpty, "\(problems)")
  }

  /// 50 requests without a budget: far more than 5 in some second.
  @Test func withoutABudgetTheSameJobMeets429() throws {
    let server = try RestServer(["--items", "25", "--rate-limit", "5"])
    let (report, json) = try run("", perPage: 1, server: server)
    #expect(report.status == .failed)
    #expect(try server.requests().contains { $0.status == 429 })
    #expect(!json.contains("\"budget_wait_seconds\""))
  }

  /// A server that says its limit in X-RateLimit-* fields: without a rate_limit, its fields
  /// pace the job; at most one request a step meets a 429 (in the first second, before any
  /// answer said what is left, when both steps race; under load both may).
  @Test func theServersOwnFieldsPaceAJobWithoutABudget() throws {
    let server = try RestServer(["--items", "20", "--rate-limit", "5", "--rate-limit-headers"])
    // 2 steps of 20 pages: 40 requests.
    let (report, json) = try run("", perPage: 1, server: server, retries: 2)
    #expect(report.status == .succeeded, "\(report.steps.first?.members.map { $0.errorMessage ?? "" } ?? [])")
    let requests = try server.requests()
    #expect(requests.filter { $0.status == 429 }.count <= 2)
    #expect(requests.filter { $0.status == 200 }.count == 40)
    let members = try #require(report.steps.first?.members)
    #expect(members.map(\.budgetWait).reduce(0, +) > 1)
    #expect(json.contains("\"budget_wait_seconds\""))
  }

  /// A server that states only its policy (`RateLimit-Policy`, no `RateLimit` field, no
  /// `X-RateLimit-*`), in the current draft's form and an older one's: without a rate_limit,
  /// its quota in its window paces the job, and no request meets a 429.
  @Test(arguments: ["current", "old"])
  func theServersPolicyAlonePacesAJobWithoutABudget(form: String) throws {
    let server = try RestServer(["--items", "20", "--rate-limit", "5", "--rate-limit-policy", form])
    // 2 steps of 20 pages: 40 requests.
    let (report, json) = try run("", perPage: 1, server: server, retries: 2)
    #expect(report.status == .succeeded, "\(report.steps.first?.members.map { $0.errorMessage ?? "" } ?? [])")
    let requests = try server.requests()
    #expect(requests.filter { $0.status == 429 }.count == 0)
    #expect(requests.filter { $0.status == 200 }.count == 40)
    let members = try #require(report.steps.first?.members)
    // 40 requests at 5 a second: at least 7 s of waiting between the two steps.
    #expect(members.map(\.budgetWait).reduce(0, +) > 5)
    #expect(json.contains("\"budget_wait_seconds\""))
  }
}
