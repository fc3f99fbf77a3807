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

    let plain = try Command.dray(["run", manifest])
    #expect(plain.status == 1, "\(plain.output)")
    #expect(plain.output.contains("add-fig: request failed after "), "\(plain.output)")
    #expect(plain.output.contains(": not run: its call was sent in run "), "\(plain.output)")
    #expect(try sent().count == 1)

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
