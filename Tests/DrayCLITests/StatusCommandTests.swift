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

  /// `dray status` and `dray report` read where the job keeps its records (`version`, `job`,
  /// `database`, `state`, `download`, `report`): a variable elsewhere (the platform's host,
  /// the sign-in, a step's resource) need not be set for them; one they need is named.
  @Test func statusAndReportNeedOnlyTheVariablesOfWhereTheJobKeepsItsRecords() throws {
    let emulator = try Emulator()
    let folder = TemporaryDirectory("dray-status")
    try folder.write(
      "job.yaml",
      """
      version: 1
      job: vars
      platform: { host: "${FMP_HOST}", environment: DocumentationExampleEnv, project: DocumentationExampleProj }
      auth: { username: "${FMP_USER}", password: "${FMP_PASSWORD}" }
      database: { path: "${DATA_DIR}/db.sqlite" }
      steps:
        - id: fruits
          table_stream: { resource: "${RESOURCE}" }

      """)
    func dray(_ arguments: [String], _ environment: [String: String]) throws -> Command.Result {
      try Command.run(Repository.drayBinary, arguments, environment: environment, inherit: false, directory: folder.path)
    }
    let run = try dray(
      ["run", "job.yaml", "--quiet"],
      DemoUser.environment.merging(["FMP_HOST": emulator.url, "RESOURCE": "FRUITS", "DATA_DIR": "data"]) { $1 })
    #expect(run.status == 0, "\(run.output)")

    let status = try dray(["status", "job.yaml"], ["DATA_DIR": "data"])
    #expect(status.status == 0, "\(status.output)")
    #expect(status.stdout.contains("\ncheckpoints:\n  fruits: succeeded in run "), "\(status.stdout)")
    #expect(
      status.stderr
        == "note: the steps were not read here (job.yaml:3:19: 'platform.host': environment variable FMP_HOST is not set; set it, or give a default with ${FMP_HOST:-default}); checkpoints are listed as the journal holds them, not compared with the steps' definitions\n"
    )
    let page = try dray(["report", "job.yaml", "-o", "page.html"], ["DATA_DIR": "data"])
    #expect(page.status == 0, "\(page.output)")
    #expect(page.stdout == "page.html\n")
    #expect(try folder.read("page.html").contains("<h1>job vars: <span"))

    // The database's own variable is needed: named, with what the command reads.
    for command in ["status", "report"] {
      let missing = try dray([command, "job.yaml"], [:])
      #expect(missing.status == 2, "\(missing.output)")
      #expect(
        missing.stderr.hasPrefix(
          "job.yaml:5:19: error: 'database.path': environment variable DATA_DIR is not set; set it, or give a default with ${DATA_DIR:-default}\n"
        ), "\(missing.stderr)")
      #expect(
        missing.stderr.hasSuffix(
          "job.yaml: 1 error in what this command reads to find the job's journal and reports (version, job, database, state, download, report); nothing was read\n"
        ), "\(missing.stderr)")
      #expect(!missing.stderr.contains("FMP_HOST"))
    }
  }
}
