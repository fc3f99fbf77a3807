import DrayTestSupport
import Foundation
import Testing

/// `dray plan` shows the cursor an incremental step sends next.
@Suite struct IncrementalPlanTests {
  @Test func planShowsTheCursorTheNextRunSends() throws {
    let server = try RestServer(["--orders", "3"])
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      database: { path: data.sqlite }
      steps:
        - id: orders
          http:
            base_url: "\(server.url)"
            path: orders
            load: { table: orders, records: /data, write: merge, primary_key: [id] }
            paginate: { next: /links/next }
            incremental: { cursor: /updated_at, param: updated_since, initial: "2024-01-01T00:00:00Z", lag: 1s }
      """)
    func sends(_ arguments: [String] = []) throws -> [String] {
      let result = try Command.dray(["plan", path] + arguments)
      #expect(result.status == 0, "\(result.stderr)")
      // Lines with their runs of spaces (the alignment) made one.
      return result.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }.filter {
        $0.hasPrefix("sends")
      }
    }
    #expect(try sends() == ["sends updated_since=2024-01-01T00:00:00Z (initial: no cursor kept yet)"])
    let run = try Command.dray(["run", path])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(try sends() == ["sends updated_since=2024-01-01T00:00:02Z (the kept cursor 2024-01-01T00:00:03Z, less lag 1s)"])
    #expect(try sends(["--fresh"]) == ["sends updated_since=2024-01-01T00:00:00Z (initial, as --fresh starts again)"])
    let json = try Command.dray(["plan", path, "--json"]).stdout
    #expect(json.contains(#""source": "the kept cursor 2024-01-01T00:00:03Z, less lag 1s""#), "\(json)")
  }

  /// The repro of defect C1 as `dray plan` shows it: a kept cursor with a fraction is shown
  /// as the API wrote it, with the value computed just below it that the next run sends;
  /// one with no value below it says the run fails.
  @Test func planShowsTheValueSentBelowAKeptFraction() throws {
    let server = try TicksServer()
    try server.add([(1, "1701600000.25")])
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: ticks
      database: { path: data.sqlite }
      retry: { count: 0 }
      steps:
        - id: e
          http:
            base_url: "\(server.url)"
            path: ticks
            load: { table: t, records: /data, write: append }
            incremental: { cursor: /c, param: since, initial: 0, boundary: exclusive }
      """)
    func sends(_ path: String) throws -> [String] {
      let result = try Command.dray(["plan", path])
      #expect(result.status == 0, "\(result.stderr)")
      return result.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }.filter { $0.hasPrefix("sends") }
    }
    let run = try Command.dray(["run", path])
    #expect(run.status == 0, "\(run.stderr)")
    #expect(try sends(path) == ["sends since=1701600000.24 (the kept cursor 1701600000.25, just below it: boundary exclusive)"])
    let tiny = try TicksServer()
    try tiny.add([(1, "1e-400")], exactly: true)
    let other = TemporaryDirectory()
    let tinyPath = try other.write("job.yaml", try String(contentsOfFile: path, encoding: .utf8).replacing(server.url, with: tiny.url))
    #expect(try Command.dray(["run", tinyPath]).status == 0)
    #expect(
      try sends(tinyPath) == [
        "sends since=nothing (the run fails: the kept cursor 1e-400 (incremental.cursor '/c') is a number a double cannot hold "
          + "(beyond about 1.8e308, or below about 4.9e-324), so dray computes no value just below it that an API could tell apart "
          + "from it; incremental.boundary exclusive sends the value just below the kept one, and sending the kept value itself would "
          + "lose the records that arrive later at it, so nothing was sent. Use boundary: inclusive if the API answers the records at "
          + "the value sent (>=), or run with --fresh to start again from 'initial')"
      ])
  }

  /// `dray plan` shows `load.delete_missing` and `load.allow_empty` with the load's other keys.
  @Test func planShowsDeleteMissingAndAllowEmpty() throws {
    let folder = TemporaryDirectory()
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      database: { path: data.sqlite }
      steps:
        - id: orders
          http:
            base_url: "https://api.example.com"
            path: orders
            load: { table: orders, records: /data, write: merge, primary_key: [id], delete_missing: true, allow_empty: true }
      """)
    let result = try Command.dray(["plan", path])
    #expect(result.status == 0, "\(result.stderr)")
    let load = result.stdout.split(separator: "\n").first { $0.contains("load") && $0.contains("orders") } ?? ""
    #expect(load.contains(#""delete_missing":true"#), "\(result.stdout)")
    #expect(load.contains(#""allow_empty":true"#), "\(result.stdout)")
    let json = try Command.dray(["plan", path, "--json"]).stdout
    #expect(json.contains(#""delete_missing": true"#), "\(json)")
  }
}
