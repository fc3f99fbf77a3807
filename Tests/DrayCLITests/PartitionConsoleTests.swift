import DrayTestSupport
import Foundation
import Testing

/// What `dray run` prints for a partitioned step (docs/partitions.md, "Report and console").
@Suite struct PartitionConsoleTests {
  @Test func aRowsQueryWithNoRowsIsSaidOnce() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: none
      database: { path: data.sqlite }
      steps:
        - id: prep
          sql: CREATE TABLE repos (id integer)
        - id: issues
          partitions: { rows: "SELECT id AS repo FROM repos" }
          http: { base_url: "http://127.0.0.1:9/", path: "repos/{repo}/issues", load: { table: issues, records: /data } }

      """)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.stderr.components(separatedBy: "no partitions: the rows query returned no rows").count - 1 == 1, "\(result.stderr)")
  }
}

/// The summary of a run whose partitions are many keeps the job's own steps.
@Suite struct PartitionSummaryTests {
  @Test func manyPartitionsAreCountedAndTheStepsStayListed() throws {
    let folder = TemporaryDirectory()
    let server = try RestServer()
    let list = (1...30).map { "{ n: \"\($0)\" }" }.joined(separator: ", ")
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: many
      database: { path: data.sqlite }
      steps:
        - id: first
          http: { base_url: "\(server.url)", path: echo/first, load: { table: first, records: /data } }
        - id: echoes
          partitions: { list: [\(list)], concurrency: 4 }
          http: { base_url: "\(server.url)", path: "echo/{n}", load: { table: echoes, records: /data, write: append } }

      """)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    let lines = result.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
    #expect(lines.contains { $0.hasPrefix("first http succeeded") }, "\(result.stdout)")
    #expect(lines.contains { $0.hasPrefix("echoes http succeeded 30 rows") }, "\(result.stdout)")
    #expect(lines.contains("(partitions: 30 succeeded not listed; the report lists every partition)"), "\(result.stdout)")
    #expect(!lines.contains { $0.hasPrefix("echoes[") })
  }
}

/// `dray status` on a partitioned step that has not finished says how far its partitions got.
@Suite struct PartitionStatusTests {
  @Test func statusCountsThePartitionsOfAnUnfinishedStep() throws {
    let folder = TemporaryDirectory()
    let server = try RestServer(["--repos", "3", "--issues", "4"])
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: part
      database: { path: data.sqlite }
      retry: { count: 0 }
      steps:
        - id: issues
          partitions: { list: [{ repo: "1" }, { repo: "99" }, { repo: "2" }] }
          http: { base_url: "\(server.url)", path: "repos/{repo}/issues", load: { table: issues, records: /data, write: append } }

      """)
    let run = try Command.dray(["run", path])
    #expect(run.status == 1, "\(run.output)")
    let status = try Command.dray(["status", path])
    #expect(status.status == 0, "\(status.output)")
    let line = try #require(status.stdout.split(separator: "\n").first { $0.hasPrefix("  issues: ") })
    // Repository 99 is a 404: it fails for good, and repository 2 is not started.
    #expect(line.contains("; partitions: 1 finished (4 rows), 1 failed in run "), "\(line)")
    #expect(line.hasSuffix("the next dray run resumes the others"), "\(line)")
  }

  /// While the run is under way, the step is `running`, not the `failed` its starting
  /// checkpoint holds until it ends (`write: replace` records one; `append` none).
  @Test(arguments: ["replace", "append"])
  func statusDuringAPartitionedRunSaysRunning(write: String) throws {
    let folder = TemporaryDirectory()
    let server = try RestServer(["--repos", "3", "--issues", "4", "--rule", #"{"path": "/repos/2/issues", "hold": true, "times": 1}"#])
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: part
      database: { path: data.sqlite }
      steps:
        - id: issues
          partitions: { list: [{ repo: "1" }, { repo: "2" }] }
          http: { base_url: "\(server.url)", path: "repos/{repo}/issues", load: { table: issues, records: /data, write: \(write) } }

      """)
    let run = try ChildProcess.dray(["run", path], logPrefix: folder.path + "/run")
    #expect(try server.waitForHeld() == 1)
    let status = try Command.dray(["status", path])
    try server.release()
    #expect(run.wait() == .exited(0), "\(run.errors)")
    #expect(status.status == 0, "\(status.output)")
    let lines = status.stdout.split(separator: "\n").map(String.init)
    let runLine = try #require(lines.dropFirst().first, "\(status.stdout)")
    let runID = String(runLine.split(separator: " ").first ?? "")
    #expect(runLine.contains("  running "), "\(runLine)")
    let line = try #require(lines.first { $0.hasPrefix("  issues: ") }, "\(status.stdout)")
    let head = write == "replace" ? "running in run \(runID)" : "none"
    #expect(line == "  issues: \(head); partitions: 1 finished (4 rows) so far", "\(status.stdout)")
  }

  @Test func planCountsThePartitionsARunWouldSkip() throws {
    let folder = TemporaryDirectory()
    let server = try RestServer(["--repos", "3", "--issues", "4"])
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: part
      database: { path: data.sqlite }
      retry: { count: 0 }
      steps:
        - id: issues
          partitions: { list: [{ repo: "1" }, { repo: "2" }, { repo: "99" }] }
          http: { base_url: "\(server.url)", path: "repos/{repo}/issues", load: { table: issues, records: /data, write: append } }

      """)
    let run = try Command.dray(["run", path])
    #expect(run.status == 1, "\(run.output)")
    let plan = try Command.dray(["plan", path])
    #expect(plan.status == 0, "\(plan.output)")
    let line = try #require(plan.stdout.split(separator: "\n").first { $0.contains("issues (http): run") })
    #expect(line.hasSuffix("; 2 partitions finished in the chain, skipped unless changed since"), "\(line)")
  }
}

/// The line that starts a partitioned `http` step shows its URL as written.
@Suite struct PartitionStartLineTests {
  @Test func theStartLineShowsThePlaceholdersAsWritten() throws {
    let folder = TemporaryDirectory()
    let server = try RestServer()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: start
      database: { path: data.sqlite }
      steps:
        - id: echoes
          partitions: { list: [{ n: a }, { n: b }] }
          http: { base_url: "\(server.url)", path: "echo/{n}", query: { q: "{n}" }, load: { table: echoes, records: /data } }

      """)
    let result = try Command.dray(["run", path])
    #expect(result.status == 0, "\(result.output)")
    let start = try #require(result.stderr.split(separator: "\n").first { $0.contains("step echoes: http ") })
    #expect(start.hasSuffix("/echo/{n}?q={n}, for each partition"), "\(start)")
    #expect(result.stderr.contains("step echoes[n=a]: http GET \(server.url)"), "\(result.stderr)")
  }
}
