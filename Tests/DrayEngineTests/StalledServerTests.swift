import DrayEngine
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// Servers that accept a request and never answer, or end an answer by closing the
/// connection: every platform call and every page of an `http` step is bounded by the idle
/// timeout, retried, and reported.
@Suite struct StalledServerTests {
  /// The top of a job against `emulator` whose calls give up after 1 s without a byte (30 s
  /// in all, so that a timer that never fires shows as `timeout_request`, not as a hang).
  static func header(_ emulator: Emulator, job: String, retry: String = "{ count: 2, interval: 10ms, backoff: fixed }") -> String {
    """
    version: 1
    job: \(job)
    platform:
      host: "\(emulator.url)"
      environment: DocumentationExampleEnv
      project: DocumentationExampleProj
      timeouts: { connect: 5s, idle: 1s, request: 30s }
      # Framing is tested on the bytes as they are; CompressionTests cut gzip answers.
      compression: false
    auth: { username: \(DemoUser.name), password: \(DemoUser.password) }
    database: { path: data.sqlite }
    retry: \(retry)

    """
  }

  /// A platform call, the path it goes to, and the step that makes it as its first call
  /// after the sign-in (on the sign-in's connection).
  struct Call: Sendable, CustomStringConvertible {
    var name: String
    var path: String
    var step: String
    /// The call whose attempts the report names (`sign-in`), or nil for the step's own.
    var reportedAs: String? = nil
    var description: String { name }
  }

  static let calls = [
    Call(name: "sign-in", path: "/api/v1/auth/jwt/obtain/", step: "schemes: {}", reportedAs: "sign-in"),
    Call(name: "schemes", path: "/api/v1/schema/", step: "schemes: {}"),
    Call(name: "table_stream", path: "/api/v1/rpc/COUNTRIES/", step: "table_stream: { resource: COUNTRIES }"),
    Call(name: "table", path: "/api/v1/rpc/FRUITS/", step: "table: { resource: FRUITS, output: out/fruits.json }"),
    Call(name: "request", path: "/api/v1/rpc/FRUITS/", step: "request: { resource: FRUITS, output: out/answer.json }"),
    Call(name: "files list", path: "/api/v1/directory/nfs4/", step: "files: { connection: nfs4, action: list, path: . }"),
    Call(name: "files meta", path: "/api/v1/file/nfs4/meta/", step: "files: { connection: nfs4, action: meta, path: file.txt }"),
    Call(name: "files get", path: "/api/v1/file/nfs4/", step: "files: { connection: nfs4, action: get, path: file.txt, local: file.txt }"),
    Call(name: "files put", path: "/api/v1/file/nfs4/", step: "files: { connection: nfs4, action: put, path: up.txt, local: up.txt }"),
    Call(name: "files delete", path: "/api/v1/file/nfs4/", step: "files: { connection: nfs4, action: delete, path: notes.txt }"),
  ]

  @Test(arguments: calls)
  func aCallTheServerNeverAnswersTimesOutIdleAndIsRetried(call: Call) throws {
    let emulator = try Emulator(["--fault", #"{"path": "\#(call.path)", "times": 1, "hang": true}"#])
    let folder = TemporaryDirectory()
    try folder.write("up.txt", "uploaded\n")
    let (_, report) = try runJob(
      folder,
      StalledServerTests.header(emulator, job: "stall") + """
        steps:
          - id: stalled
            \(call.step)
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    let attempts = report.steps[0].attempts.filter { $0.call == call.reportedAs }
    #expect(attempts.map(\.outcome) == [.failed(code: "timeout_idle"), .ok])
    let url = emulator.url + String(call.path.dropFirst())
    #expect(attempts.first?.message?.hasPrefix("no data from \(url)") == true)
    #expect(attempts.first?.message?.hasSuffix(" for 1s (idle timeout); the server stalled, or raise timeouts.idle") == true)
    #expect(report.steps[0].httpStatuses.values.reduce(0, +) == report.steps[0].attempts.count - 1)
  }

  /// Members of a `parallel` group whose calls hang at the same time: each is bounded by its
  /// own idle clock, times out, and is retried on a new connection, so the group finishes.
  @Test func parallelCallsThatHangAtOnceEachTimeOutIdleAndAreRetried() throws {
    let emulator = try Emulator([
      "--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "hang": true}"#,
      "--fault", #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "hang": true}"#,
    ])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      StalledServerTests.header(emulator, job: "stall") + """
        steps:
          - id: both
            parallel:
              steps:
                - id: countries
                  table_stream: { resource: COUNTRIES }
                - id: fruits
                  table: { resource: FRUITS, output: out/fruits.json }
        """)
    #expect(report.exitCode == 0, "\(report.steps[0].members.compactMap(\.errorMessage))")
    for member in report.steps[0].members {
      #expect(member.attempts.filter { $0.call == nil }.map(\.outcome) == [.failed(code: "timeout_idle"), .ok], "\(member.id)")
    }
  }

  @Test func aStallWithoutRetriesFailsTheStepNamingTheIdleTimeout() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "hang": true}"#])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      StalledServerTests.header(emulator, job: "stall", retry: "{ count: 1, interval: 10ms }") + """
        steps:
          - id: countries
            table_stream: { resource: COUNTRIES }
        """)
    #expect(report.exitCode == 69)  // an idle timeout: unavailable
    let step = report.steps[0]
    #expect(step.errorCode == "timeout_idle")
    #expect(
      step.errorMessage
        == "no data from \(emulator.url)api/v1/rpc/COUNTRIES/ for 1s (idle timeout); the server stalled, or raise timeouts.idle; gave up after 2 attempts (retry.count: 1)"
    )
    #expect(step.attempts.filter { $0.call == nil }.map(\.outcome.code) == ["timeout_idle", "timeout_idle"])
  }

  /// A page that never comes, first or later, of every way the step paginates.
  @Test(arguments: ["1", "2", "3"])
  func aPageTheServerNeverAnswersTimesOutIdleAndIsRetried(page: String) throws {
    let rule =
      page == "1"
      ? #"{"path": "/items", "query": {"per_page": "10"}, "hang": true, "times": 1}"#
      : #"{"path": "/items", "query": {"page": "\#(page)"}, "hang": true, "times": 1}"#
    let server = try RestServer(["--rule", rule])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      """
      version: 1
      job: pages
      database: { path: data.sqlite }
      retry: { count: 2, interval: 10ms }
      steps:
        - id: items
          timeouts: { idle: 1s, request: 30s }
          http:
            base_url: "\(server.url)"
            path: items
            query: { per_page: 10 }
            load: { table: items, records: /data }
            paginate: { next: /links/next }
      """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    let outcomes = report.steps[0].attempts.map(\.outcome.code)
    var expected = ["ok", "ok", "ok"]
    expected.insert("timeout_idle", at: Int(page)! - 1)
    #expect(outcomes == expected)
    #expect(report.steps[0].attempts[Int(page)! - 1].message?.hasPrefix("page \(page): no data from \(server.url)items") == true)
    #expect(report.steps[0].rows == ["items": 25])
  }

  // MARK: Answers ended by closing the connection

  @Test func aCutPlatformAnswerWithoutALengthIsRetriedAndResumed() throws {
    let emulator = try Emulator([
      "--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "close_delimited": true, "close_after": 200}"#,
      "--fault", #"{"path": "/api/v1/schema/", "times": 1, "close_delimited": true, "close_after": 50}"#,
    ])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      StalledServerTests.header(emulator, job: "cut") + """
        steps:
          - id: schemes
            schemes: {}
          - id: countries
            table_stream: { resource: COUNTRIES }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(report.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["body_truncated", "ok"])
    let countries = report.steps[1].attempts
    #expect(countries.map(\.outcome.code) == ["body_truncated", "ok"])
    #expect(countries.map(\.resumedFrom) == [nil, 200])
    #expect(
      countries.first?.message
        == "the answer from \(emulator.url)api/v1/rpc/COUNTRIES/ was cut short after 200 bytes (the connection closed without a Content-Length or a final chunk to show the answer whole, and the document it holds is not complete); the connection dropped mid-answer"
    )
    let rpc = try requests(emulator, "/api/v1/rpc/COUNTRIES/")
    #expect((rpc.last?["headers"] as? [String: String])?["X-Range"] == "bytes=200-")
  }

  /// A file's bytes have no end of their own: an answer without a length is confirmed by
  /// asking for the bytes after it (416), and a cut one is resumed.
  @Test(arguments: [true, false])
  func aFileAnswerWithoutALengthIsConfirmedOrResumed(cut: Bool) throws {
    let rule = #"{"path": "/api/v1/file/nfs4/", "times": 1, "close_delimited": true\#(cut ? #", "close_after": 10"# : "")}"#
    let emulator = try Emulator(["--fault", rule])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      StalledServerTests.header(emulator, job: "file") + """
        steps:
          - id: get
            files: { connection: nfs4, action: get, path: file.txt, local: file.txt }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    let seed = try bytes(Repository.root + "/Emulator/files/nfs4/file.txt")
    #expect(try bytes(folder.path + "/file.txt") == seed)
    let attempts = report.steps[0].attempts.filter { $0.call == nil }
    #expect(attempts.map(\.outcome.code) == ["body_truncated", "ok"])
    #expect(attempts.map(\.status) == [200, cut ? 206 : 416])
    #expect(attempts.map(\.resumedFrom) == [nil, cut ? 10 : Int64(seed.count)])
  }

  /// A page ended only by the connection's close is whole when its document is: JSON or XML.
  @Test(arguments: ["json", "xml"])
  func aCutPageWithoutALengthIsRetried(format: String) throws {
    let path = format == "json" ? "/items" : "/catalog.xml"
    let server = try RestServer([
      "--rule", #"{"path": "\#(path)", "query": {"page": "2"}, "close_delimited": true, "cut_after": 40, "times": 1}"#,
      "--rule", #"{"path": "\#(path)", "query": {"page": "3"}, "close_delimited": true}"#,
    ])
    let load =
      format == "json"
      ? "load: { table: items, records: /data }\n      paginate: { next: /links/next }"
      : "format: xml\n      load: { table: items, records: /catalog/item }\n      paginate: { next: /catalog/next }"
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      """
      version: 1
      job: pages
      database: { path: data.sqlite }
      retry: { count: 2, interval: 10ms }
      steps:
        - id: items
          http:
            base_url: "\(server.url)"
            path: \(path.dropFirst())
            query: { per_page: 10 }
            \(load)
      """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    // Page 3 also ends only with the connection, but its document is whole.
    #expect(report.steps[0].attempts.map(\.outcome.code) == ["ok", "body_truncated", "ok", "ok"])
    #expect(report.steps[0].rows == ["items": 25])
  }

  // MARK: What is retried

  /// A timeout has no status: the message of a POST that timed out after it was sent does
  /// not send the user to `on_status`.
  @Test func aPOSTThatTimedOutIsNotRetriedAndDoesNotSuggestOnStatus() throws {
    let server = try RestServer(["--rule", #"{"path": "/images", "hang": true}"#])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      """
      version: 1
      job: post
      retry: { count: 2, interval: 10ms }
      steps:
        - id: add
          timeouts: { idle: 1s, request: 30s }
          http: { method: POST, base_url: "\(server.url)", path: images, body: { json: { title: pear } }, output: out/added.json }
      """)
    // Not sent again: a later run would send it again too, so no outage to wait out (exit 1).
    #expect(report.exitCode == 1)
    #expect(report.failure?.failureClass == .permanent)
    let step = report.steps[0]
    #expect(step.attempts.map(\.outcome.code) == ["timeout_idle"])
    #expect(
      step.errorMessage
        == "no data from \(server.url)images for 1s (idle timeout); the server stalled, or raise timeouts.idle; not retried: a POST may "
        + "change data on the server and part of it was sent; make the request safe to repeat (an idempotency key the server honours) "
        + "and use a method such as PUT")
    #expect(try server.requests().count == 1)
  }

  /// A resource the manifest says only reads (`writes: false`): without a transaction id too,
  /// a broken answer is retried within the run (as the next run would ask again), until the
  /// retry count is spent.
  @Test func aDataReadWithoutATransactionIDIsRetriedInTheRun() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "times": 2, "reset": true}"#])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      StalledServerTests.header(emulator, job: "read") + """
        steps:
          - id: countries
            table_stream: { resource: COUNTRIES, transaction: false, writes: false }
        """)
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
    #expect(report.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["connection_reset", "connection_reset", "ok"])
    let rpc = try requests(emulator, "/api/v1/rpc/COUNTRIES/")
    #expect(rpc.count == 3)
    #expect(rpc.allSatisfy { ($0["headers"] as? [String: String])?["X-Transaction-ID"] == nil })
  }
}
