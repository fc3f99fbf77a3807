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
