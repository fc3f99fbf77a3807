import DrayTestSupport
import Foundation
import Testing

/// A failed run's exit code says whether trying again later may help (README, "Exit codes";
/// docs/report.md, "Failure classes"): 69 when services stayed unavailable after the retry
/// policy, 1 for everything else; the report's `failure_class` and `failure_reason` and the
/// summary's `failure:` line say which and why. The built `dray` against the emulator.
@Suite struct FailureClassTests {
  /// A job of two FRUITS loads (`a` and `b`), each the emulator's, the second optional,
  /// retried twice without waiting long.
  func job(_ folder: TemporaryDirectory, _ emulator: Emulator, password: String = DemoUser.password, steps: String? = nil) throws
    -> String
  {
    try folder.write(
      "job.yaml",
      """
      version: 1
      job: classes
      platform: { host: "\(emulator.url)", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: \(DemoUser.name), password: "\(password)" }
      database: { path: data/db.sqlite }
      retry: { count: 2, interval: 10ms, backoff: fixed }
      steps:
      \(steps ?? "  - id: fruits\n    table_stream: { resource: FRUITS }")
      """)
  }

  /// The `failure:` line of a summary, or nil.
  func failureLine(_ output: String) -> String? {
    output.split(separator: "\n").first { $0.hasPrefix("failure: ") }.map(String.init)
  }

  @Test func aServerAnswering503UntilTheRetriesRunOutExits69Unavailable() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "status": 503}"#])
    let folder = TemporaryDirectory()
    let result = try Command.dray(["run", try job(folder, emulator)])
    #expect(result.status == 69, "\(result.output)")
    let report = try Report(result.stdout)
    #expect(report.json["exit_code"] as? Int == 69)
    #expect(report.json["failure_class"] as? String == "unavailable")
    let reason = "step fruits: the server answered HTTP 503 Service Unavailable (http_503)"
    #expect(report.json["failure_reason"] as? String == reason)
    #expect(failureLine(result.stdout) == "failure: unavailable (exit 69): \(reason); trying again later may succeed", "\(result.stdout)")
    #expect(try ReportCheck.problems([try reportPath(result.stdout)]) == "")
  }

  @Test func aServerNobodyListensAtExits69() throws {
    let folder = TemporaryDirectory()
    // Port 9 (discard) on loopback: nothing listens, so every connection is refused.
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: refused
      platform: { host: "http://127.0.0.1:9/", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: \(DemoUser.name), password: \(DemoUser.password) }
      database: { path: data/db.sqlite }
      retry: { count: 1, interval: 10ms }
      steps:
        - id: fruits
          table_stream: { resource: FRUITS }
      """)
    let result = try Command.dray(["run", path])
    #expect(result.status == 69, "\(result.output)")
    #expect(
      failureLine(result.stdout)
        == "failure: unavailable (exit 69): step fruits: the server refused connections (connection_refused); trying again later may succeed",
      "\(result.stdout)")
  }

  @Test func aRefusedPasswordExits1Permanent() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let result = try Command.dray(["run", try job(folder, emulator, password: "not-the-password")])
    #expect(result.status == 1, "\(result.output)")
    let report = try Report(result.stdout)
    #expect(report.json["failure_class"] as? String == "permanent")
    let reason = "step fruits: the server refused the credentials (HTTP 401 Unauthorized, auth_failed)"
    #expect(report.json["failure_reason"] as? String == reason)
    #expect(failureLine(result.stdout) == "failure: permanent (exit 1): \(reason); trying again without a change will not help")
    #expect(!result.output.contains("not-the-password"))
  }

  @Test func a401AfterAFreshTokenExits1() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "status": 401}"#])
    let folder = TemporaryDirectory()
    let result = try Command.dray(["run", try job(folder, emulator)])
    #expect(result.status == 1, "\(result.output)")
    #expect(try Report(result.stdout).json["failure_class"] as? String == "permanent")
  }

  @Test func aFailedExpectationExits1() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory()
    let steps = """
        - id: fruits
          table_stream: { resource: FRUITS, expect: { rows: { min: 1000 } } }
      """
    let result = try Command.dray(["run", try job(folder, emulator, steps: steps)])
    #expect(result.status == 1, "\(result.output)")
    let report = try Report(result.stdout)
    #expect(report.json["failure_class"] as? String == "permanent")
    #expect(report.json["failure_reason"] as? String == "step fruits: an expectation failed (expectation_failed)", "\(report.json)")
  }

  /// A group with one member refused (404) and one unavailable (503): the refusal decides.
  /// With both unavailable, the run is.
  @Test func severalFailuresAreUnavailableOnlyWhenEveryOneIs() throws {
    let emulator = try Emulator([
      "--fault", #"{"path": "/api/v1/rpc/FRUITS/", "status": 503}"#, "--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "status": 404}"#,
      "--fault", #"{"path": "/api/v1/rpc/CURRENCIES/", "status": 429}"#,
    ])
    func group(_ second: String) -> String {
      """
        - id: both
          parallel:
            steps:
              - id: fruits
                table_stream: { resource: FRUITS }
              - id: second
                table_stream: { resource: \(second) }
      """
    }
    let (first, second) = (TemporaryDirectory(), TemporaryDirectory())
    let mixed = try Command.dray(["run", try job(first, emulator, steps: group("COUNTRIES"))])
    #expect(mixed.status == 1, "\(mixed.output)")
    #expect(
      try Report(mixed.stdout).json["failure_reason"] as? String
        == "step both: second: the server refused the call with HTTP 404 Not Found (http_404)")
    let unavailable = try Command.dray(["run", try job(second, emulator, steps: group("CURRENCIES"))])
    #expect(unavailable.status == 69, "\(unavailable.output)")
    #expect(
      try Report(unavailable.stdout).json["failure_reason"] as? String
        == "step both: fruits: the server answered HTTP 503 Service Unavailable (http_503); "
        + "second: the server answered HTTP 429 Too Many Requests (http_429)")
  }

  /// The report path a run printed last.
  func reportPath(_ output: String) throws -> String {
    let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("report: ") })
    return String(line.dropFirst("report: ".count))
  }
}

/// `dray run --when-locked exit|succeed|join`: what a start that finds the job's lock held
/// ends as.
@Suite struct WhenLockedTests {
  @Test func succeedEndsAsASuccessWhileAnotherRunnerHoldsTheLockAndExitKeeps75() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "hang": true}"#])
    let folder = TemporaryDirectory()
    let manifest = try folder.write(
      "job.yaml",
      """
      version: 1
      job: held
      platform:
        host: "\(emulator.url)"
        environment: DocumentationExampleEnv
        project: DocumentationExampleProj
        timeouts: { idle: 3s }
      auth: { username: \(DemoUser.name), password: \(DemoUser.password) }
      database: { path: data.sqlite }
      retry: { count: 1, interval: 10ms, backoff: fixed }
      steps:
        - id: fruits
          table_stream: { resource: FRUITS }
      """)
    let first = try BackgroundDray(["run", manifest], logPrefix: folder.path + "/first")
    try first.wait(for: "the call the server holds") {
      ((try? emulator.requests()) ?? []).contains { ($0["path"] as? String)?.hasPrefix("/api/v1/rpc/FRUITS/") == true }
    }
    let succeed = try Command.dray(["run", "--when-locked", "succeed", manifest])
    #expect(succeed.status == 0, "\(succeed.output)")
    #expect(succeed.stdout == "", "\(succeed.stdout)")
    #expect(
      succeed.stderr.contains(
        "job 'held' is already running (process \(first.process.processIdentifier), started "),
      "\(succeed.stderr)")
    #expect(
      succeed.stderr.contains(
        "; this start changed nothing and ends as a success (--when-locked succeed): the run holding the lock does the job"),
      "\(succeed.stderr)")
    #expect(!succeed.stderr.contains("error"), "\(succeed.stderr)")
    let exit = try Command.dray(["run", "--when-locked=exit", manifest])
    #expect(exit.status == 75, "\(exit.output)")
    #expect(exit.stderr.contains("; this run changed nothing. Wait for it to finish, or stop it first."), "\(exit.stderr)")

    #expect(try first.finish().status == 0)
    // Only the holder's run was recorded and reported.
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path + "/.dray/reports").count == 1)
  }

  @Test func joinIsTakenAndUnknownValuesAreUsageErrors() throws {
    // `join` is `--join`: it takes a --run-key, checked before the manifest is read.
    let join = try Command.dray(["run", "--when-locked", "join", "--run-key", "", "job.yaml"])
    #expect(join.status == 2)
    #expect(
      join.stderr
        == "dray: --run-key takes 1 to 200 bytes of printable text (a Kubernetes Job's UID, a CI pipeline's id)\nRun 'dray help' for usage.\n"
    )
    let both = try Command.dray(["run", "--when-locked", "succeed", "--join", "job.yaml"])
    #expect(both.status == 2)
    #expect(both.stderr.hasPrefix("dray: --join and --when-locked succeed do not go together\n"))
    let other = try Command.dray(["run", "--when-locked", "wait", "job.yaml"])
    #expect(other.status == 2)
    #expect(other.stderr.hasPrefix("dray: --when-locked wait: unknown value; values: exit, succeed, join\n"))
  }
}
