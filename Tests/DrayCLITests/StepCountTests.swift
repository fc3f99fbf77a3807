import DrayTestSupport
import Foundation
import Testing

/// `dray validate`, `plan` and `run`, and the run's report, count the steps the file holds
/// (issue 25): a step that does not decode is an error at its position, never a step
/// fewer, at the top level and in a `parallel` group, on SQLite and PostgreSQL.
@Suite struct StepCountTests {
  /// Four steps: an incremental `http` load of the REST server's orders at `primaryKey`, a
  /// group whose `http` member paginates with `cursor`, and two `sql` steps.
  static func job(database: String, server: String, primaryKey: String, cursor: String) -> String {
    """
    version: 1
    job: count
    database: \(database)
    report: { path: report.json }
    steps:
      - sql: SELECT 1
      - id: orders
        http:
          base_url: "\(server)"
          path: orders
          load: { table: orders, records: /data, write: merge, primary_key: \(primaryKey) }
          paginate: { next: /links/next }
          incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z" }
      - id: group
        parallel:
          steps:
            - id: pages
              http:
                base_url: "\(server)"
                path: orders
                load: { table: pages, records: /data }
                paginate: { cursor: \(cursor) }
            - sql: SELECT 2
      - sql: SELECT 3

    """
  }

  /// What every command prints for the broken job at `path`.
  static func errors(_ path: String) -> String {
    """
    \(path):11:73: error: 'steps.orders.http.load.primary_key' is empty; list the record fields that identify a row, such as primary_key: [id]
          load: { table: orders, records: /data, write: merge, primary_key: [] }
                                                                            ^
    \(path):22:33: error: 'steps.pages.http.paginate.cursor' needs one of: from, from_last_record
                paginate: { cursor: { param: after } }
                                    ^
    \(path): 2 errors; nothing was run

    """
  }

  @Test func validatePlanAndRunRefuseAStepThatDoesNotDecodeOnSQLite() throws {
    let server = try RestServer(["--orders", "3"])
    let folder = TemporaryDirectory()
    let broken = try folder.write(
      "broken.yaml",
      Self.job(database: "{ path: data.sqlite }", server: server.url, primaryKey: "[]", cursor: "{ param: after }"))
    for command in ["validate", "plan", "run"] {
      let result = try Command.dray([command, broken])
      #expect(result.status == 2, "\(command)")
      #expect(result.stdout == "", "\(command)")
      #expect(result.stderr == Self.errors(broken), "\(command)")
    }
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/data.sqlite"))
    #expect(!FileManager.default.fileExists(atPath: folder.path + "/report.json"))

    // Corrected, every command and the report count the file's four steps.
    let fixed = try folder.write(
      "fixed.yaml",
      Self.job(
        database: "{ path: data.sqlite }", server: server.url, primaryKey: "[id]", cursor: "{ param: after, from: /links/after }"))
    #expect(try Command.dray(["validate", fixed]).stdout == "\(fixed): ok (job count, 4 steps)\n")
    let plan = try Command.dray(["plan", fixed])
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("steps: 4\n"), "\(plan.stdout)")
    let run = try Command.dray(["run", fixed])
    #expect(run.status == 0, "\(run.stderr)")
    let report = try #require(
      try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: folder.path + "/report.json"))) as? [String: Any])
    let steps = try #require(report["steps"] as? [[String: Any]])
    #expect(steps.compactMap { $0["id"] as? String } == ["sql-1", "orders", "group", "sql-4"])
    #expect(steps.compactMap { $0["status"] as? String } == ["succeeded", "succeeded", "succeeded", "succeeded"])
    let members = try #require(steps[2]["steps"] as? [[String: Any]])
    #expect(members.compactMap { $0["id"] as? String } == ["pages", "group.sql-2"])
  }

  /// On PostgreSQL, `dray plan` of an incremental job read its kept cursors, and showed
  /// `steps: 0` for the broken step; now it refuses the file as every command does.
  @Test func planRefusesAStepThatDoesNotDecodeOnPostgreSQL() throws {
    let server = try RestServer(["--orders", "3"])
    let postgres = try PostgresServer.shared()
    let url = postgres.urlText(database: try postgres.createDatabase("count"))
    let folder = TemporaryDirectory()
    let broken = try folder.write(
      "broken.yaml", Self.job(database: "{ url: \"\(url)\" }", server: server.url, primaryKey: "[]", cursor: "{ param: after }"))
    let result = try Command.dray(["plan", broken])
    #expect(result.status == 2)
    #expect(result.stderr == Self.errors(broken))
    let fixed = try folder.write(
      "fixed.yaml",
      Self.job(
        database: "{ url: \"\(url)\" }", server: server.url, primaryKey: "[id]", cursor: "{ param: after, from: /links/after }"))
    let plan = try Command.dray(["plan", fixed])
    #expect(plan.status == 0, "\(plan.stderr)")
    #expect(plan.stdout.contains("steps: 4\n"), "\(plan.stdout)")
  }
}
