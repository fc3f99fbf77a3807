import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Glibc
import Testing

/// An `http` page whose records have declared columns loads while it downloads: its records
/// are read from the part as it grows, in the page's transaction, which commits with the
/// page's ledger entry only once the download is whole and verified (docs/network.md,
/// "Loading while downloading"). 300 items, 100 a page (about 11.5 KB each): 3 pages.
@Suite struct HTTPStreamLoadTests {
  /// A job loading the items with declared columns, uncompressed (so that the server's
  /// byte counts are the part's and a broken page resumes with `Range`); `extra` is added
  /// to the step's `http` mapping.
  static func job(_ folder: TemporaryDirectory, extra: String = "", compressed: Bool = false) throws -> String {
    try folder.write(
      "items.yaml",
      """
      version: 1
      job: stream
      database: { path: data/db.sqlite }
      retry: { count: 2, interval: 10ms }
      steps:
        - id: items
          http:
            base_url: ${API}
            path: items
            query: { per_page: 100 }
            headers: { Accept-Encoding: \(compressed ? "gzip" : "identity") }
            load:
              table: items
              records: /data
              columns: { id: INTEGER, name: TEXT, price: NUMERIC, code: TEXT, active: INTEGER, note: TEXT, tags: TEXT }
            paginate: { next: /links/next }
      \(extra)
      """)
  }

  /// The size of the part of page `page` being downloaded; 0 when there is none.
  static func partSize(_ folder: TemporaryDirectory, page: Int) -> Int {
    let downloads = folder.path + "/.dray/downloads/stream"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []
    guard let name = names.first(where: { $0.hasSuffix(".page-\(page).part") }),
      let size = try? FileManager.default.attributesOfItem(atPath: downloads + "/" + name)[.size] as? Int
    else { return 0 }
    return size
  }

  /// The rows of `sql` in the job's database.
  static func rows(_ folder: TemporaryDirectory, _ sql: String) throws -> [[SQLValue]] {
    try Database(path: folder.path + "/data/db.sqlite").rows(sql).map { $0.map(\.1) }
  }

  static let allItems = "SELECT id, name, price, code, active, note, tags FROM items ORDER BY id"

  @Test func aPageLoadsWhileItDownloadsAndGivesTheRowsOfAPageLoadedAfterItsDownload() throws {
    // Page 2 comes at 20,000 bytes a second: about half a second.
    let server = try RestServer(["--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "rate": 20000}"#])
    let streamed = TemporaryDirectory()
    let run = try ChildProcess.dray(
      ["run", HTTPStreamLoadTests.job(streamed)], environment: ["API": server.url], logPrefix: streamed.path + "/run")
    // The page's transaction is open while its part is still growing.
    #expect(
      run.waitUntil {
        HTTPStreamLoadTests.partSize(streamed, page: 2) > 0 && SQLiteFile.isWriteLocked(streamed.path + "/data/db.sqlite")
      })
    #expect(run.wait() == .exited(0), "\(run.errors)")

    // A step that also saves its pages loads each after its download.
    let after = TemporaryDirectory()
    let saved = try Command.dray(
      ["run", HTTPStreamLoadTests.job(after, extra: "      output: pages/{page}.json")], environment: ["API": server.url])
    #expect(saved.status == 0, "\(saved.output)")
    let rows = try HTTPStreamLoadTests.rows(streamed, HTTPStreamLoadTests.allItems)
    #expect(rows.count == 300)
    #expect(try rows == HTTPStreamLoadTests.rows(after, HTTPStreamLoadTests.allItems))
    let bytes = try Report(run.output).step("items")["bytes"] as? Int
    #expect(bytes ?? 0 > 30000)
    #expect(try bytes == Report(saved.stdout).step("items")["bytes"] as? Int)
  }

  /// A gzip page's part holds the decoded bytes, which the load reads as they arrive.
  @Test func aCompressedPageLoadsWhileItDownloads() throws {
    // Page 2, about 2 KB compressed, comes at 2,000 bytes a second.
    let server = try RestServer(["--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "rate": 2000}"#])
    let folder = TemporaryDirectory()
    let run = try ChildProcess.dray(
      ["run", HTTPStreamLoadTests.job(folder, compressed: true)], environment: ["API": server.url], logPrefix: folder.path + "/run")
    #expect(
      run.waitUntil {
        HTTPStreamLoadTests.partSize(folder, page: 2) > 0 && SQLiteFile.isWriteLocked(folder.path + "/data/db.sqlite")
      })
    #expect(run.wait() == .exited(0), "\(run.errors)")
    #expect(try server.requests().map(\.contentEncoding) == ["gzip", "gzip", "gzip"])
    #expect(
      try HTTPStreamLoadTests.rows(folder, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items")
        == [[.integer(300), .integer(300), .integer(1), .integer(300)]])
  }

  @Test func aPageBrokenMidwayResumesAtItsPartsEndAndGivesExactlyItsRecords() throws {
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "ranges": true, "close_after": 5000, "times": 1}"#,
      "--rule", #"{"path": "/items", "ranges": true}"#,
    ])
    let folder = TemporaryDirectory()
    let run = try Command.dray(["run", HTTPStreamLoadTests.job(folder)], environment: ["API": server.url])
    #expect(run.status == 0, "\(run.output)")
    let pageTwo = try server.requests().filter { $0.path.contains("page=2") }
    #expect(pageTwo.map { $0["Range"] } == [nil, "bytes=5000-"])
    #expect(pageTwo.map(\.status) == [200, 206])

    let clean = TemporaryDirectory()
    #expect(try Command.dray(["run", HTTPStreamLoadTests.job(clean)], environment: ["API": server.url]).status == 0)
    let rows = try HTTPStreamLoadTests.rows(folder, HTTPStreamLoadTests.allItems)
    #expect(rows.count == 300)
    #expect(try rows == HTTPStreamLoadTests.rows(clean, HTTPStreamLoadTests.allItems))
  }

  /// A server that ignores the range sends the whole page again: what was read of the first
  /// answer rolls back, and the page loads from its start once finished.
  @Test func aPageSentAgainFromItsStartLoadsOnceFinishedWithExactlyItsRecords() throws {
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "ranges": true, "close_after": 5000, "times": 1}"#,
    ])
    let folder = TemporaryDirectory()
    let run = try Command.dray(["run", HTTPStreamLoadTests.job(folder)], environment: ["API": server.url])
    #expect(run.status == 0, "\(run.output)")
    #expect(try server.requests().filter { $0.path.contains("page=2") }.map(\.status) == [200, 200])
    let notes = try Report(run.stdout).step("items")["notes"] as? [String] ?? []
    #expect(notes.contains("page 2: the download started the answer again from byte 0; it was loaded once finished"))
    #expect(
      try HTTPStreamLoadTests.rows(folder, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items")
        == [[.integer(300), .integer(300), .integer(1), .integer(300)]])
  }

  @Test func aKillMidPageCommitsNoRowOfThatPageAndTheNextRunResumesItsPart() throws {
    // Page 2 comes at 3,000 bytes a second: about 4 s.
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "rate": 3000, "ranges": true}"#,
    ])
    let folder = TemporaryDirectory()
    let job = try HTTPStreamLoadTests.job(folder)
    let run = try ChildProcess.dray(["run", job], environment: ["API": server.url], logPrefix: folder.path + "/killed")
    #expect(
      run.waitUntil {
        HTTPStreamLoadTests.partSize(folder, page: 2) > 0 && SQLiteFile.isWriteLocked(folder.path + "/data/db.sqlite")
      })
    run.send(SIGKILL)
    #expect(run.wait() == .signaled(SIGKILL))
    let held = HTTPStreamLoadTests.partSize(folder, page: 2)
    #expect(held > 0)
    // Page 1 only: none of page 2's records, and no published table.
    #expect(try HTTPStreamLoadTests.rows(folder, "SELECT pages, rows FROM _dray_http_pages") == [[.integer(1), .integer(100)]])
    #expect(
      try HTTPStreamLoadTests.rows(folder, #"SELECT count(*), max(id) FROM "_dray_http__stream__items""#) == [
        [.integer(100), .integer(100)]
      ])
    #expect(try HTTPStreamLoadTests.rows(folder, "SELECT count(*) FROM sqlite_master WHERE name = 'items'") == [[.integer(0)]])

    try server.setRules(#"[{"path": "/items", "ranges": true}]"#)
    try server.reset()
    let rerun = try Command.dray(["run", job], environment: ["API": server.url])
    #expect(rerun.status == 0, "\(rerun.output)")
    #expect(
      try server.requests().map { [$0.path, $0["Range"] ?? "-"] } == [
        ["/items?page=2&per_page=100", "bytes=\(held)-"], ["/items?page=3&per_page=100", "-"],
      ])
    #expect(
      try HTTPStreamLoadTests.rows(folder, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items")
        == [[.integer(300), .integer(300), .integer(1), .integer(300)]])
  }

  /// An error status's body is never a page's records, even one in JSON that the records
  /// selector would read: a status `on_status` names `empty` ends the pages, any other fails
  /// the step, and neither loads it.
  @Test func anErrorStatusWithAJSONBodyLoadsNothingOfIt() throws {
    let records = #"{\"data\": [{\"id\": 999, \"name\": \"not a record\"}], \"links\": {\"next\": null}}"#
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "status": 404, "body": "\#(records)"}"#,
    ])
    let empty = TemporaryDirectory()
    let ended = try Command.dray(
      ["run", HTTPStreamLoadTests.job(empty, extra: "      on_status: { 404: empty }")], environment: ["API": server.url])
    #expect(ended.status == 0, "\(ended.output)")
    #expect(try HTTPStreamLoadTests.rows(empty, "SELECT count(*), max(id) FROM items") == [[.integer(100), .integer(100)]])

    try server.setRules(#"[{"path": "/items", "query": {"page": "2"}, "status": 422, "body": "\#(records)"}]"#)
    let refused = TemporaryDirectory()
    let failed = try Command.dray(["run", HTTPStreamLoadTests.job(refused)], environment: ["API": server.url])
    #expect(failed.status == 1, "\(failed.output)")
    #expect(failed.output.contains("HTTP 422"))
    #expect(
      try HTTPStreamLoadTests.rows(refused, #"SELECT count(*), max(id) FROM "_dray_http__stream__items""#) == [
        [.integer(100), .integer(100)]
      ])
    #expect(try HTTPStreamLoadTests.rows(refused, "SELECT count(*) FROM sqlite_master WHERE name = 'items'") == [[.integer(0)]])
  }

  /// A page that breaks off in the middle of its records is refused whole: the records read
  /// before the fault roll back with its transaction, and the error names the page.
  @Test func aPageThatIsNotJSONPartwayCommitsNoneOfItsRecords() throws {
    let broken = #"{\"data\": [{\"id\": 101}, {\"id\": 102}, oops]}"#
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "status": 200, "body": "\#(broken)"}"#,
    ])
    let folder = TemporaryDirectory()
    let run = try Command.dray(["run", HTTPStreamLoadTests.job(folder)], environment: ["API": server.url])
    #expect(run.status == 1, "\(run.output)")
    #expect(run.output.contains("page 2 (\(server.url)items?page=2&per_page=100): the answer is not valid JSON"), "\(run.output)")
    #expect(try HTTPStreamLoadTests.rows(folder, "SELECT pages, rows FROM _dray_http_pages") == [[.integer(1), .integer(100)]])
    #expect(
      try HTTPStreamLoadTests.rows(folder, #"SELECT count(*), max(id) FROM "_dray_http__stream__items""#) == [
        [.integer(100), .integer(100)]
      ])
    // Page 1, committed, leaves no file behind: neither its answer nor its sidecar.
    let downloads = folder.path + "/.dray/downloads/stream"
    let left = (try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []
    #expect(!left.contains { $0.contains(".page-1") }, "\(left)")
  }
}
