import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A server that ignores the `offset` or `page` parameter answers the same full page to
/// every URL; each URL differs, so no next link or cursor ever repeats, and the pull once
/// fetched forever. A page whose records are those of the page before stops the step with
/// `pagination_loop` and publishes nothing (docs/http.md, "Pagination: `paginate`").
@Suite struct RepeatedPageTests {
  let folder = TemporaryDirectory()

  static let paginations: [(paginate: String, url: String, param: String)] = [
    ("{ offset: { param: offset, limit_param: limit, limit: 2 } }", "ign?offset=2&limit=2", "paginate.offset.param 'offset'"),
    ("{ page: { param: pg } }", "ign?pg=2", "paginate.page.param 'pg'"),
  ]

  @Test(arguments: paginations, TargetDatabase.Kind.allCases)
  func aPageRepeatingThePageBeforeStopsThePull(
    _ pagination: (paginate: String, url: String, param: String), on kind: TargetDatabase.Kind
  ) throws {
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/ign", #"{"items": [{"id": 1}, {"id": 2}]}"#)])
    let target = try TargetDatabase(kind, folder: folder.path)
    let report = try runJob(
      folder,
      """
      version: 1
      job: ign
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: a
          http: { base_url: '${API}', path: ign, paginate: \(pagination.paginate), load: { table: t, records: /items } }
      """, environment: ["API": server.url]
    ).1
    #expect(report.exitCode == 1)
    #expect(report.steps[0].errorCode == "pagination_loop")
    #expect(
      report.steps[0].errorMessage
        == "page 2 (\(server.url)\(pagination.url)) holds the same 2 records as page 1: the server ignores \(pagination.param); check the parameter's name against the API's documentation; stopping so as not to fetch pages forever"
    )
    #expect(try server.requests().count == 2)
    #expect(try target.columnNames("t") == [])
  }

  /// Pages that hold different records, and a page equal to one two pages before (a list
  /// that really holds repeats), go on as before.
  @Test func pagesThatDifferFromThePageBeforeAreLoaded() throws {
    let server = try RestServer([
      "--rule",
      try HTTPBadAnswerTests.rule("/rep", #"{"items": [{"id": 1}, {"id": 2}]}"#).replacing(
        #""status""#, with: #""query": {"page": "1"}, "status""#),
      "--rule",
      try HTTPBadAnswerTests.rule("/rep", #"{"items": [{"id": 3}, {"id": 4}]}"#).replacing(
        #""status""#, with: #""query": {"page": "2"}, "status""#),
      "--rule",
      try HTTPBadAnswerTests.rule("/rep", #"{"items": [{"id": 1}, {"id": 2}]}"#).replacing(
        #""status""#, with: #""query": {"page": "3"}, "status""#),
      "--rule", try HTTPBadAnswerTests.rule("/rep", #"{"items": []}"#),
    ])
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let report = try runJob(
      folder,
      """
      version: 1
      job: rep
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: a
          http: { base_url: '${API}', path: rep, paginate: { page: { param: page } }, load: { table: t, records: /items } }
      """, environment: ["API": server.url]
    ).1
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT id FROM t ORDER BY rowid") == [["1"], ["2"], ["3"], ["4"], ["1"], ["2"]])
  }
}
