import DrayTestSupport
import Foundation
import Testing

/// `dray plan` shows the partitions of a step: the source, how many where the manifest says
/// it, how many run at once and the lease.
@Suite struct PartitionsPlanTests {
  static let job = """
    version: 1
    job: fan
    database: { path: data.sqlite }
    steps:
      - id: repos
        http: { base_url: "http://127.0.0.1:9/", path: repos, load: { table: repos, records: /data } }
      - id: issues
        partitions: { rows: "SELECT id AS repo FROM repos", concurrency: 8, lease: 1m }
        http: { base_url: "http://127.0.0.1:9/", path: "repos/{repo}/issues", load: { table: issues, records: /data } }
      - id: regions
        partitions: { list: [{ region: eu }, { region: us }, { region: ap }, { region: af }] }
        http: { base_url: "http://127.0.0.1:9/", path: "sales/{region}", load: { table: sales, records: /data } }
      - id: weeks
        partitions: { window: { start: 2024-01-01, end: 2024-04-01, every: 2w }, concurrency: 4 }
        http: { base_url: "http://127.0.0.1:9/", path: metrics, query: { from: "{window_start}", to: "{window_end}" } }

    """

  @Test func planShowsEachStepsPartitions() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write("job.yaml", Self.job)
    let result = try Command.dray(["plan", path])
    #expect(result.status == 0, "\(result.output)")
    // Lines with their runs of spaces (the alignment) made one.
    let lines = result.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }.filter {
      $0.hasPrefix("partitions")
    }
    #expect(
      lines == [
        "partitions one per row of: SELECT id AS repo FROM repos (counted when the step runs), 8 at once, lease 1m",
        "partitions list of 4 (region=eu; region=us; region=ap; ...), 1 at once, lease 30s",
        "partitions 7 windows of 2w from 2024-01-01 to 2024-04-01, 4 at once, lease 30s",
      ])

    let json = try Command.dray(["plan", path, "--json"])
    #expect(json.status == 0, "\(json.output)")
    let plan = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
    let steps = try #require(plan["steps"] as? [[String: Any]])
    let partitions = steps.map { $0["partitions"] as? [String: Any] }
    #expect(partitions[0] == nil)
    #expect(partitions.dropFirst().map { $0?["source"] as? String } == ["rows", "list", "window"])
    #expect(partitions.dropFirst().map { $0?["count"] as? Int } == [nil, 4, 7])
    #expect(partitions.dropFirst().map { $0?["concurrency"] as? Int } == [8, 1, 4])
    #expect(partitions[1]?["rows"] as? String == "SELECT id AS repo FROM repos")
    #expect((partitions[3]?["window"] as? [String: String]) == ["start": "2024-01-01", "end": "2024-04-01", "every": "2w"])
    #expect((partitions[2]?["list"] as? [[String: String]])?.first == ["region": "eu"])
  }
}
