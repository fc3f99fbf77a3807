import DrayModel
import DrayTestSupport
import DrayTransport
import Foundation
import Synchronization
import Testing

/// The network layer seen from `dray run`: the built binary against the emulator, with
/// what the run report records.
@Suite struct NetworkJobTests {
  /// Writes a job for `host` with `steps` (YAML, indented two spaces) and returns its path.
  func job(_ folder: TemporaryDirectory, host: String, retry: String = "{ count: 2, interval: 100ms, jitter: false }", steps: String) throws
    -> String
  {
    try folder.write(
      "job.yaml",
      """
      version: 1
      job: net
      platform:
        host: \(host)
        environment: DocumentationExampleEnv
        project: DocumentationExampleProj
        timeouts: { connect: 2s, idle: 10s }
        # Byte counts and trickle timings here are of the answer as it is; CompressionTests has gzip.
        compression: false
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      database: { path: data/db.sqlite }
      retry: \(retry)
      steps:
      \(steps)
      """)
  }

  /// The run reports of the job folder, oldest first, as JSON objects.
  func reports(_ folder: TemporaryDirectory) throws -> [(text: String, json: [String: Any])] {
    let directory = folder.path + "/.dray/reports"
    return try FileManager.default.contentsOfDirectory(atPath: directory).sorted().map { name in
      let text = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
      return (text, try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:])
    }
  }

  func steps(_ report: [String: Any]) -> [[String: Any]] { report["steps"] as? [[String: Any]] ?? [] }

  func attempts(_ step: [String: Any]) -> [[String: Any]] { step["attempts"] as? [[String: Any]] ?? [] }

  /// Every attempt of a step and, for a group, of its members (which hold their own).
  func allAttempts(_ step: [String: Any]) -> [[String: Any]] {
    attempts(step) + (step["steps"] as? [[String: Any]] ?? []).flatMap(allAttempts)
  }

  /// The rows of a table, in id order, as the sqlite3 shell prints them, hashed.
  func tableChecksum(_ database: String, _ table: String) throws -> String {
    let result = try Command.run("/usr/bin/sqlite3", [database, "SELECT * FROM \(table) ORDER BY id"])
    guard result.status == 0 else { throw TestSupportError("sqlite3 failed: \(result.stderr)") }
    return SHA256.hex(Array(result.stdout.utf8))
  }

  // MARK: Tokens

  /// A job longer than the token's lifetime: the slow step outlives the token, then three
  /// calls at once need a new one. With `exp` in the token dray renews before use; without,
  /// the three meet 401s. Either way: exactly one re-auth.
  @Test(arguments: [true, false])
  func aTokenExpiringDuringALongJobIsRenewedExactlyOnce(expClaim: Bool) throws {
    let net = try NetworkFixture(["--token-lifetime", "3", "--fault", #"{"path": "/api/v1/rpc/BIG/", "times": 1, "trickle": 450000}"#])
    try net.config(#"{"token_exp_claim": \#(expClaim)}"#)
    let path = try job(
      net.folder, host: net.emulator.url,
      steps: """
          - id: schemes
            schemes: {}
          - id: slow
            table_stream: { resource: BIG }
          - id: group
            parallel:
              steps:
                - id: countries
                  table_stream: { resource: COUNTRIES }
                - id: currencies
                  table_stream: { resource: CURRENCIES }
                - id: languages
                  table_stream: { resource: LANGUAGES }
        """)
    let result = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(result.status == 0, "\(result.output)")
    #expect(try net.requests("/api/v1/auth/jwt/obtain/").count == 2)
    let refusals = try net.allRequests().filter { $0.status == 401 }.count
    if expClaim { #expect(refusals == 0) } else { #expect(refusals >= 1) }

    let report = try #require(try reports(net.folder).last?.json)
    // Every sign-in is an attempt in the report; the renewal says why it was made.
    let signIns = steps(report).flatMap(allAttempts).filter { $0["call"] as? String == "sign-in" }
    #expect(signIns.count == 2)
    let renewals = signIns.filter { $0["message"] != nil }
    #expect(renewals.count == 1)
    #expect(renewals.first?["outcome"] as? String == "ok")
    #expect(
      renewals.first?["message"] as? String
        == (expClaim ? "signed in again: the token expires soon (exp)" : "signed in again: the token was refused (401)"))
    let group = try #require(steps(report).first { $0["id"] as? String == "group" })
    let memberOutcomes = (group["steps"] as? [[String: Any]] ?? []).map { attempts($0).compactMap { $0["outcome"] as? String } }
    #expect(memberOutcomes.count == 3)
    if !expClaim {
      #expect(memberOutcomes.contains { $0.first == "http_401" })
    }
  }

  // MARK: Resume after kill -9

  @Test func aKilledDownloadResumesWithOnlyTheRemainderAndLoadsTheSameTable() throws {
    let rows = 200_000  // about 18 MB of answer
    let net = try NetworkFixture(["--fault", #"{"path": "/api/v1/rpc/BIG/", "times": 1, "trickle": 6000000}"#], rows: rows)
    let jobSteps = """
          - id: schemes
            schemes: {}
          - id: big
            table_stream: { resource: BIG }
      """
    let path = try job(net.folder, host: net.emulator.url, steps: jobSteps)
    let downloads = net.folder.path + "/.dray/downloads/net"

    // The first run is killed with SIGKILL once a third of the answer is on disk.
    let first = Process()
    first.executableURL = URL(fileURLWithPath: Repository.drayBinary)
    first.arguments = ["run", path]
    first.environment = ProcessInfo.processInfo.environment.merging(DemoUser.environment) { $1 }
    first.standardOutput = FileHandle.nullDevice
    first.standardError = FileHandle.nullDevice
    try first.run()
    // A clean run of the same job elsewhere, for the table to compare with; started once the
    // first run has taken the slow answer, and run alongside the rest.
    let clean = TemporaryDirectory("dray-net-clean")
    let cleanPath = try job(clean, host: net.emulator.url, steps: jobSteps)
    let cleanRun = Mutex<Result<Command.Result, any Error>?>(nil)
    let cleanDone = DispatchGroup()
    var part: String?
    let deadline = Date().addingTimeInterval(60)
    while Date() < deadline && first.isRunning {
      part = (try? FileManager.default.contentsOfDirectory(atPath: downloads))?.first { $0.hasSuffix(".part") }.map {
        downloads + "/" + $0
      }
      if part != nil && cleanRun.withLock({ $0 == nil }) {
        cleanRun.withLock { $0 = .failure(TestSupportError("the clean run did not finish")) }
        cleanDone.enter()
        Thread.detachNewThread {
          let result = Result { try Command.dray(["run", cleanPath], environment: DemoUser.environment) }
          cleanRun.withLock { $0 = result }
          cleanDone.leave()
        }
      }
      if let part, let size = try? FileManager.default.attributesOfItem(atPath: part)[.size] as? NSNumber,
        size.int64Value > net.serverSize / 3
      {
        break
      }
      Thread.sleep(forTimeInterval: 0.01)
    }
    kill(first.processIdentifier, SIGKILL)
    first.waitUntilExit()
    #expect(first.terminationReason == .uncaughtSignal && first.terminationStatus == SIGKILL)
    let partPath = try #require(part)
    let kept = try #require((try FileManager.default.attributesOfItem(atPath: partPath)[.size] as? NSNumber)?.int64Value)
    #expect(kept > 0 && kept < net.serverSize)

    let second = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(second.status == 0, "\(second.output)")
    let report = try #require(try reports(net.folder).last?.json)
    let big = try #require(steps(report).first { $0["id"] as? String == "big" })
    #expect((big["bytes"] as? NSNumber)?.int64Value == net.serverSize - kept)
    #expect((big["notes"] as? [String])?.contains("resumed a partial download at byte \(kept)") == true)
    #expect((attempts(big).first { $0["call"] == nil }?["resumed_from"] as? NSNumber)?.int64Value == kept)

    // The second run asked for, and the server sent, exactly the bytes the part lacked.
    // (What the server wrote in the first run also counts bytes still in the socket
    // buffers when dray died, so it is not compared here; Benchmarks/kill-resume.sh prints it.)
    // (The clean run's request carries a transaction id of its own.)
    let all = try net.requests()
    let requests = all.filter { $0["X-Transaction-ID"] == all.first?["X-Transaction-ID"] }
    #expect(all.count == 3)
    #expect(requests.count == 2)
    #expect(requests.first?["X-Range"] == nil)
    #expect(requests.last?["X-Range"] == "bytes=\(kept)-")
    #expect(requests.last?.responseBytes == net.serverSize - kept)

    // The clean run loaded the same rows.
    cleanDone.wait()
    let cleanResult = try #require(try cleanRun.withLock { $0 }?.get())
    #expect(cleanResult.status == 0, "\(cleanResult.output)")
    let resumedTable = try tableChecksum(net.folder.path + "/data/db.sqlite", "BIG__output_table")
    #expect(resumedTable == (try tableChecksum(clean.path + "/data/db.sqlite", "BIG__output_table")))
  }

  // MARK: Secrets

  @Test func aServerEchoingTheAuthorizationHeaderNeverLeaksTheToken() throws {
    let net = try NetworkFixture([
      "--fault", #"{"path": "/api/v1/rpc/FRUITS/", "status": 400, "description": "bad parameters", "echo_authorization": true}"#,
    ])
    let path = try job(net.folder, host: net.emulator.url, steps: "    - id: fruits\n      table_stream: { resource: FRUITS }")
    let result = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(result.status == 1)
    let token = try #require(try net.requests("/api/v1/rpc/FRUITS/").first?["Authorization"]?.dropFirst("Bearer ".count))
    #expect(token.count > 20)
    let report = try #require(try reports(net.folder).last?.text)
    #expect(
      report.contains(
        "HTTP 400 Bad Request from \(net.emulator.url)api/v1/rpc/FRUITS/: bad parameters; you sent Authorization: Bearer ***"))
    #expect(!report.contains(token))
    #expect(!result.output.contains(token))
    #expect(result.stdout.contains("you sent Authorization: Bearer ***"))
  }

  // MARK: Proxies and time limits

  @Test func theProxyComesFromTheEnvironment() throws {
    let target = try NetworkFixture()
    let proxy = try Emulator()
    let path = try job(target.folder, host: target.emulator.url, steps: "    - id: schemes\n      schemes: {}")
    let proxied = try Command.dray(["run", path], environment: DemoUser.environment.merging(["http_proxy": proxy.url]) { $1 })
    #expect(proxied.status == 0, "\(proxied.output)")
    #expect(try target.allRequests().isEmpty)
    let seen = try proxy.requests().map(LoggedRequest.init).map(\.path)
    #expect(seen == ["\(target.emulator.url)api/v1/auth/jwt/obtain/", "\(target.emulator.url)api/v1/schema/"])

    let bypass = ["http_proxy": proxy.url, "no_proxy": "127.0.0.1"]
    let direct = try Command.dray(["run", path, "--fresh"], environment: DemoUser.environment.merging(bypass) { $1 })
    #expect(direct.status == 0, "\(direct.output)")
    #expect(try target.allRequests().map(\.path) == ["/api/v1/auth/jwt/obtain/", "/api/v1/schema/"])
    #expect(try proxy.requests().count == 2)
  }

  @Test func aStepsOwnTimeoutsApplyAndTheReportSaysWhichFired() throws {
    let net = try NetworkFixture(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "trickle": 40}"#])
    let path = try job(
      net.folder, host: net.emulator.url, retry: "{ count: 1, interval: 100ms, jitter: false }",
      steps: """
            - id: schemes
              schemes: {}
            - id: fruits
              table_stream: { resource: FRUITS }
              timeouts: { request: 400ms }
        """)
    let result = try Command.dray(["run", path], environment: DemoUser.environment)
    #expect(result.status == 69)  // a time limit: unavailable
    let report = try #require(try reports(net.folder).last?.json)
    let fruits = try #require(steps(report).last)
    let error = fruits["error"] as? [String: String]
    #expect(error?["code"] == "timeout_request")
    #expect(
      error?["message"]
        == "\(net.emulator.url)api/v1/rpc/FRUITS/ took longer than 400ms (request timeout); raise timeouts.request, "
        + "or check why the server is slow; gave up after 2 attempts (retry.count: 1)")
    #expect(attempts(fruits).compactMap { $0["outcome"] as? String } == ["timeout_request", "timeout_request"])
    #expect(attempts(fruits).first?["wait_seconds"] as? NSNumber == 0.1)
  }
}
