import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A call that may change data on the server and carries no transaction id is applied at
/// most once per step, in the run and in the next run, unless `--resend` asks for it again
/// (docs/steps.md, "Reads and writes"; docs/network.md, "Writes").
@Suite struct WriteOnceTests {
  static let write = "/api/v1/rpc/FRUITS_WRITE/"

  /// The step `add-fig` of kind `kind`, calling FRUITS_WRITE without a transaction id.
  static func job(_ emulator: Emulator, _ target: TargetDatabase, kind: String, extra: String = "") -> String {
    let output = kind == "table" ? "output: out/fig.json, " : ""
    return JobText.header(job: "write", emulator: emulator, retry: "{ count: 2, interval: 10ms, backoff: fixed }") + target.manifestBlock
      + """
      steps:
        - id: add-fig
          \(kind): { resource: FRUITS_WRITE, params: { insert: [[30, fig, 1.1, 1]] }, \(output)transaction: false\(extra) }

      """
  }

  /// Loads the manifest at `path` and runs it with `options`, quietly.
  static func run(_ path: String, _ options: RunFlags = RunFlags()) throws -> RunReport {
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: options, console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  /// How many rows of FRUITS the server holds with id 30 (each a fig FRUITS_WRITE added).
  static func figs(_ emulator: Emulator) throws -> Int {
    let data = try emulator.admin("GET", "versions/FRUITS")
    let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let rows = try #require((object["tables"] as? [String: Any])?["output_table"] as? [[Any]])
    return rows.filter { ($0.dropFirst().first as? Int) == 30 }.count
  }

  /// The reported bug, for each step kind that calls a resource and on both journals: an
  /// answer cut after 20 bytes was re-sent (200 cut, 412, 200) and the row inserted twice;
  /// a second run sent it a third time. Now the step fails saying the outcome is unknown,
  /// the next plain run refuses to send it, and `--resend` sends it once more.
  @Test(arguments: TargetDatabase.Kind.allCases, ["table", "request", "table_stream"])
  func aWriteWhoseAnswerBrokeOffIsSentOnceInTheRunAndTheNextUntilResendAsks(database: TargetDatabase.Kind, kind: String) throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_WRITE/", "times": 1, "close_after": 20}"#])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(database, folder: folder.path)
    let path = folder.path + "/job.yaml"
    try Self.job(emulator, target, kind: kind).write(toFile: path, atomically: true, encoding: .utf8)

    let first = try Self.run(path)
    #expect(first.exitCode == ExitCode.stepFailed)
    let step = first.steps[0]
    #expect(step.errorCode == "outcome_unknown")
    #expect(step.attempts.filter { $0.call == nil }.map(\.outcome.code) == ["body_truncated"])
    let message = try #require(step.errorMessage)
    #expect(
      message.hasSuffix(
        "; not sent again: the call may change data on the server and carries no X-Transaction-ID for the server to recognise a repeat by, "
          + "and it reached the server and no whole answer came back, so whether the server applied it is unknown; "
          + "the next run will not send it again: check on the server whether it was applied, then run dray run \(path) --resend add-fig to send it again"
      ), "\(message)")
    #expect(step.checkpointAfter?.status == "sent")
    #expect(try requests(emulator, Self.write).count == 1)
    #expect(try Self.figs(emulator) == 1)

    let second = try Self.run(path)
    #expect(second.exitCode == ExitCode.stepFailed)
    #expect(second.resumes == first.runID)
    #expect(second.steps[0].errorCode == "outcome_unknown")
    let sentAt = try #require(step.checkpointAfter?.finishedAt)
    #expect(
      second.steps[0].errorMessage
        == "not run: its call was sent in run \(first.runID) (\(sentAt)) without a transaction id, and whether the server applied it is unknown, "
        + "so it was not sent again; check on the server, then run dray run \(path) --resend add-fig to send it again")
    #expect(second.steps[0].checkpointAfter?.status == "sent")
    #expect(try requests(emulator, Self.write).count == 1)
    #expect(try Self.figs(emulator) == 1)

    // --fresh leaves the unfinished chain, and does not send it either.
    let fresh = try Self.run(path, RunFlags(fresh: true))
    #expect(fresh.steps[0].errorCode == "outcome_unknown")
    #expect(try requests(emulator, Self.write).count == 1)

    let resent = try Self.run(path, RunFlags(resend: "add-fig"))
    #expect(resent.exitCode == ExitCode.success, "\(resent.steps.compactMap(\.errorMessage))")
    #expect(resent.steps[0].checkpointAfter?.status == "succeeded")
    let sent = try requests(emulator, Self.write).map { $0["headers"] as? [String: String] ?? [:] }
    #expect(sent.count == 2)
    // Sent again whole: a resume (X-Range) would have sent it again too.
    #expect(sent.allSatisfy { $0["X-Range"] == nil && $0["X-Transaction-ID"] == nil })
    #expect(try Self.figs(emulator) == 2)
  }

  /// A member of a `parallel` group is held like any step, and `--resend` names the member.
  @Test func aMemberOfAGroupIsHeldToo() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_WRITE/", "times": 1, "close_after": 20}"#])
    let folder = TemporaryDirectory()
    let (manifest, first) = try runJob(
      folder,
      JobText.header(job: "group", emulator: emulator, database: "data/db.sqlite", retry: "{ count: 2, interval: 10ms, backoff: fixed }")
        + """
        steps:
          - id: both
            parallel:
              steps:
                - id: add-fig
                  request: { resource: FRUITS_WRITE, params: { insert: [[30, fig, 1.1, 1]] }, transaction: false }
                - id: fruits
                  table: { resource: FRUITS, output: out/fruits.json }
        """)
    #expect(first.steps[0].members.first { $0.id == "add-fig" }?.errorCode == "outcome_unknown")
    let second = try Self.run(manifest.path)
    let held = try #require(second.steps[0].members.first { $0.id == "add-fig" })
    #expect(held.errorCode == "outcome_unknown")
    #expect(held.errorMessage?.hasPrefix("not run: its call was sent in run \(first.runID) ") == true, "\(held.errorMessage ?? "")")
    #expect(try requests(emulator, Self.write).count == 1)
    let resent = try Self.run(manifest.path, RunFlags(resend: "add-fig"))
    #expect(resent.exitCode == ExitCode.success, "\(resent.steps.compactMap(\.errorMessage))")
    #expect(try Self.figs(emulator) == 2)
  }

  /// A 503 is the server refusing the call whole: said so, and sent again as retries allow;
  /// the row is inserted once.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aWriteTheServerRefusedWith503IsSentAgainAndAppliedOnce(database: TargetDatabase.Kind) throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_WRITE/", "times": 1, "status": 503}"#])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(database, folder: folder.path)
    let (_, report) = try runJob(folder, Self.job(emulator, target, kind: "request"))
    #expect(report.exitCode == ExitCode.success, "\(report.steps.compactMap(\.errorMessage))")
    #expect(report.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["http_503", "ok"])
    #expect(try Self.figs(emulator) == 1)
  }

  /// Refused on every attempt: the step fails saying what the server did, records a failure
  /// (not a write of unknown outcome), and the next plain run sends it.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aWriteRefusedUntilRetriesRunOutFailsSayingSoAndTheNextRunSendsIt(database: TargetDatabase.Kind) throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_WRITE/", "times": 3, "status": 503}"#])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(database, folder: folder.path)
    let (manifest, first) = try runJob(folder, Self.job(emulator, target, kind: "request"))
    #expect(first.exitCode == ExitCode.unavailable)  // refused (503): it changed nothing, a later run may send it
    #expect(first.steps[0].errorCode == "http_503")
    #expect(
      first.steps[0].errorMessage
        == "HTTP 503 Service Unavailable from \(emulator.url)api/v1/rpc/FRUITS_WRITE/: injected fault; "
        + "gave up after 3 attempts (retry.count: 2); the server refused it with 503, so it changed nothing there")
    #expect(first.steps[0].checkpointAfter?.status == "failed")
    #expect(try Self.figs(emulator) == 0)

    let second = try Self.run(manifest.path)
    #expect(second.exitCode == ExitCode.success, "\(second.steps.compactMap(\.errorMessage))")
    #expect(try Self.figs(emulator) == 1)
  }

  /// A resource dray cannot tell to be a read (no `lifetime` in its scheme) is a write, also
  /// for `table_stream`; `writes: false` says it reads, and it is retried as a read.
  @Test func anUncachedResourceIsAWriteUnlessTheManifestSaysItReads() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "reset": true}"#])
    func job(_ options: String) -> String {
      JobText.header(job: "reads", emulator: emulator, database: "data/db.sqlite", retry: "{ count: 2, interval: 10ms, backoff: fixed }")
        + """
        steps:
          - id: countries
            table_stream: { resource: COUNTRIES, transaction: false\(options) }
        """
    }
    let (_, first) = try runJob(TemporaryDirectory(), job(""))
    #expect(first.steps[0].errorCode == "outcome_unknown")
    #expect(first.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["connection_reset"])
    #expect(try requests(emulator, "/api/v1/rpc/COUNTRIES/").count == 1)

    try emulator.admin("POST", "faults", json: #"{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "reset": true}"#)
    let (_, read) = try runJob(TemporaryDirectory(), job(", writes: false"))
    #expect(read.exitCode == ExitCode.success, "\(read.steps.compactMap(\.errorMessage))")
    #expect(read.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["connection_reset", "ok"])
  }

  /// A cached resource (FRUITS has `lifetime`) is a read by its scheme: retried without a
  /// transaction id, with no `writes` in the manifest.
  @Test func aCachedResourceIsARead() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS/", "times": 1, "close_after": 20}"#])
    let folder = TemporaryDirectory()
    let (_, report) = try runJob(
      folder,
      JobText.header(job: "cached", emulator: emulator, retry: "{ count: 2, interval: 10ms, backoff: fixed }") + """
        steps:
          - id: fruits
            table: { resource: FRUITS, output: out/fruits.json, transaction: false }
        """)
    #expect(report.exitCode == ExitCode.success, "\(report.steps.compactMap(\.errorMessage))")
    #expect(report.steps[0].attempts.filter { $0.call == nil }.map(\.outcome.code) == ["body_truncated", "ok"])
  }
}
