import DrayTestSupport
import Foundation
import Testing

/// `dray status`, run as the built binary on the journal of real runs.
@Suite struct StatusCommandTests {
  /// A step's attempts are its own calls': the sign-in made on its way, retried, is not one
  /// (the run's summary names it apart, `sign-in retried once`).
  @Test func attemptsCountTheStepsOwnCallsNotTheSignIn() throws {
    let emulator = try Emulator([
      "--fault", #"{"path": "/api/v1/auth/jwt/obtain/", "status": 503, "times": 1}"#,
      "--fault", #"{"path": "/api/v1/rpc/LANGUAGES/", "status": 503, "times": 1}"#,
    ])
    let folder = TemporaryDirectory("dray-status")
    let manifest = try folder.write(
      "job.yaml",
      JobText.header(job: "attempts", emulator: emulator, database: "db.sqlite") + """
        steps:
          - id: fruits
            table_stream: { resource: FRUITS }
          - id: languages
            table_stream: { resource: LANGUAGES }

        """)
    let run = try Command.dray(["run", manifest])
    #expect(run.status == 0, "\(run.output)")
    #expect(run.stdout.contains("sign-in retried once"), "\(run.stdout)")
    let status = try Command.dray(["status", manifest])
    #expect(status.status == 0, "\(status.output)")
    let lines = status.stdout.split(separator: "\n").map(String.init)
    let fruits = try #require(lines.first { $0.hasPrefix("  fruits: ") })
    let languages = try #require(lines.first { $0.hasPrefix("  languages: ") })
    #expect(!fruits.contains("attempts"), "\(fruits)")
    #expect(fruits.contains(" at ") && fruits.hasSuffix(" bytes"), "\(fruits)")
    #expect(languages.contains(", 2 attempts, "), "\(languages)")
  }
}
