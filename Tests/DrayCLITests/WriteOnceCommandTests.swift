import DrayTestSupport
import Foundation
import Glibc
import Testing

/// A write without a transaction id across runs, through the built `dray`: a run killed
/// (SIGKILL) while the write's answer is arriving leaves its outcome unknown in the journal,
/// on SQLite and on PostgreSQL; `dray plan` says so, a plain run refuses to send it, and
/// `dray run --resend STEP` sends it (docs/steps.md, "Reads and writes").
@Suite struct WriteOnceCommandTests {
  static let write = "/api/v1/rpc/FRUITS_WRITE/"

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aRunKilledWhileItsWriteIsOutLeavesItUnsentUntilResendAsks(database: TargetDatabase.Kind) throws {
    // The server applies the write, sends 5 bytes of its answer and stalls.
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_WRITE/", "times": 1, "stall_after": 5, "stall_for": 60}"#])
    let folder = TemporaryDirectory("dray-write")
    let target = try TargetDatabase(database, folder: folder.path)
    let manifest = folder.path + "/write.yaml"
    try folder.write(
      "write.yaml",
      JobText.header(job: "write", emulator: emulator) + target.manifestBlock + """
        steps:
          - id: add-fig
            request: { resource: FRUITS_WRITE, params: { insert: [[30, fig, 1.1, 1]] }, transaction: false }
          - id: after
            request: { resource: test_resource }

        """)
    func sent() throws -> [[String: Any]] { try requests(emulator, Self.write) }

    let killed = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/killed")
    #expect(killed.waitUntil { ((try? sent())?.first?["response_bytes"] as? Int ?? 0) >= 5 }, "\(killed.errors)")
    killed.send(SIGKILL)
    #expect(killed.wait() == .signaled(SIGKILL))

    let plan = try Command.dray(["plan", manifest])
    #expect(plan.status == 0, "\(plan.output)")
    #expect(plan.stdout.contains("1. add-fig (request): fail without calling the server: its call was sent in run "), "\(plan.stdout)")
    #expect(
      plan.stdout.contains(
        "without a transaction id, and whether the server applied it is unknown, so it was not sent again; check on the server, "
          + "then run dray run \(manifest) --resend add-fig to send it again"), "\(plan.stdout)")
    #expect(try Command.dray(["plan", manifest, "--resend", "add-fig"]).stdout.contains("1. add-fig (request): run"))

    let status = try Command.dray(["status", manifest])
    #expect(status.stdout.contains("its call's outcome is unknown: not sent again until dray run --resend add-fig"), "\(status.stdout)")
    #expect(status.stdout.contains("  add-fig: sent in run "), "\(status.stdout)")

    let plain = try Command.dray(["run", manifest])
    #expect(plain.status == 1, "\(plain.output)")
    #expect(plain.output.contains("add-fig: request failed after "), "\(plain.output)")
    #expect(plain.output.contains(": not run: its call was sent in run "), "\(plain.output)")
    #expect(try sent().count == 1)
    // Its report, with the checkpoint `sent`, is one docs/report.schema.json allows.
    let reports = folder.path + "/.dray/reports"
    let written = try FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".json") }
    #expect(written.count == 1)
    #expect(try ReportCheck.problems(written.map { reports + "/" + $0 }) == "")

    let resent = try Command.dray(["run", manifest, "--resend", "add-fig"])
    #expect(resent.status == 0, "\(resent.output)")
    #expect(try sent().count == 2)
  }

  @Test func resendIsInTheUsageAndNamesAStepOfTheJob() throws {
    let help = try Command.dray(["help"])
    #expect(help.stdout.contains("dray run JOB.yaml [--fresh] [--from STEP] [--only STEP] [--resend STEP]"))
    #expect(help.stdout.contains("--resend STEP     send STEP's call again"))
    let emulator = try Emulator()
    let folder = TemporaryDirectory("dray-write")
    try folder.write(
      "write.yaml",
      JobText.header(job: "write", emulator: emulator) + """
        steps:
          - id: add-fig
            request: { resource: FRUITS_WRITE, params: { insert: [[30, fig, 1.1, 1]] }, transaction: false }

        """)
    let wrong = try Command.dray(["run", folder.path + "/write.yaml", "--resend", "add-fgi"])
    #expect(wrong.status == 2)
    #expect(wrong.stderr.contains("--resend add-fgi: no such step; did you mean 'add-fig'? Steps: add-fig"), "\(wrong.stderr)")
    #expect(try requests(emulator, Self.write).isEmpty)
  }
}

extension WriteOnceCommandTests {
  /// With a transaction id (the default) the server recognises a repeat: a run killed after
  /// the server applied the write and before its answer's head came leaves the id on disk,
  /// and the next run sends the same id, so the row is inserted once.
  @Test func aRunKilledBeforeTheAnswerOfATransactionCameSendsTheSameIDAgain() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_WRITE/", "times": 1, "delay_answer": 60}"#])
    let folder = TemporaryDirectory("dray-write")
    let manifest = folder.path + "/write.yaml"
    try folder.write(
      "write.yaml",
      JobText.header(job: "write", emulator: emulator) + """
        steps:
          - id: add-fig
            request: { resource: FRUITS_WRITE, params: { insert: [[30, fig, 1.1, 1]] } }

        """)
    func figs() throws -> Int {
      let data = try emulator.admin("GET", "versions/FRUITS")
      return String(decoding: data, as: UTF8.self).components(separatedBy: #", 30, "fig""#).count - 1
    }
    let killed = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/killed")
    #expect(killed.waitUntil { (try? figs()) == 1 }, "\(killed.errors)")
    killed.send(SIGKILL)
    #expect(killed.wait() == .signaled(SIGKILL))

    let next = try Command.dray(["run", manifest])
    #expect(next.status == 0, "\(next.output)")
    let ids = try requests(emulator, Self.write).map { ($0["headers"] as? [String: String])?["X-Transaction-ID"] }
    #expect(ids.count == 2)
    #expect(ids[0] != nil && ids[0] == ids[1])
    #expect(try figs() == 1)
  }

  /// Interrupted (SIGINT) while the write's answer is arriving: the run says the write is not
  /// sent again unless asked, and the next plain run holds it.
  @Test func aRunInterruptedWhileItsWriteIsOutSaysItIsNotSentAgain() throws {
    let emulator = try Emulator(["--fault", #"{"path": "/api/v1/rpc/FRUITS_WRITE/", "times": 1, "stall_after": 5, "stall_for": 60}"#])
    let folder = TemporaryDirectory("dray-write")
    let manifest = folder.path + "/write.yaml"
    try folder.write(
      "write.yaml",
      JobText.header(job: "write", emulator: emulator, database: "data/db.sqlite") + """
        steps:
          - id: add-fig
            table: { resource: FRUITS_WRITE, params: { insert: [[30, fig, 1.1, 1]] }, output: out/fig.json, transaction: false }

        """)
    let interrupted = try ChildProcess.dray(["run", manifest], logPrefix: folder.path + "/interrupted")
    #expect(
      interrupted.waitUntil { ((try? requests(emulator, Self.write))?.first?["response_bytes"] as? Int ?? 0) >= 5 }, "\(interrupted.errors)"
    )
    interrupted.send(SIGINT)
    #expect(interrupted.wait() == .exited(130))
    #expect(
      interrupted.output.contains(
        "interrupted by SIGINT; the next run will not send it again: check on the server whether it was applied, then run "
          + "dray run \(manifest) --resend add-fig to send it again"), "\(interrupted.output)")

    let plain = try Command.dray(["run", manifest])
    #expect(plain.status == 1, "\(plain.output)")
    #expect(plain.output.contains(": not run: its call was sent in run "), "\(plain.output)")
    #expect(try requests(emulator, Self.write).count == 1)
  }
}
