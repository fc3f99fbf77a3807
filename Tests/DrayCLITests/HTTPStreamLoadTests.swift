import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Glibc
import Testing

/// An `http` page whose records have declared columns loads while it downloads: its records
/// are read from the part as it grows, in the page's transaction, which commits with the
/// page's ledger entry only once the download is whole and verified (docs/network.md,
/// "Loading while downloading"). 300 items, 100 a page (about 11.5 KB each): 3 pages. On
/// both targets: a PostgreSQL target's pages load as they download into the local staging
/// file, and are published from there once the last is in (docs/http.md, "On PostgreSQL").
@Suite struct HTTPStreamLoadTests {
  /// A job loading the items with declared columns, uncompressed (so that the server's
  /// byte counts are the part's and a broken page resumes with `Range`); `extra` is added
  /// to the step's `http` mapping.
  static func job(_ target: TargetDatabase, extra: String = "", compressed: Bool = false) throws -> String {
    let path = target.folder + "/items.yaml"
    try """
    version: 1
    job: stream
    \(target.manifestBlock)retry: { count: 2, interval: 10ms }
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
    """.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  /// The size of the part of page `page` being downloaded; 0 when there is none.
  static func partSize(_ target: TargetDatabase, page: Int) -> Int {
    let downloads = target.folder + "/.dray/downloads/stream"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []
    guard let name = names.first(where: { $0.hasSuffix(".page-\(page).part") }),
      let size = try? FileManager.default.attributesOfItem(atPath: downloads + "/" + name)[.size] as? Int
    else { return 0 }
    return size
  }

  /// The rows of `sql` in the file where the job's pages stage (the SQLite target itself).
  static func staged(_ target: TargetDatabase, _ sql: String) throws -> [[SQLValue]] {
    try Database(path: target.stagingPath(job: "stream")).rows(sql).map(\.values)
  }

  /// Whether the page's transaction is open while its part is still growing.
  static func loadsWhileDownloading(_ target: TargetDatabase, page: Int) -> Bool {
    partSize(target, page: page) > 0 && SQLiteFile.isWriteLocked(target.stagingPath(job: "stream"))
  }

  static let allItems = "SELECT id, name, price, code, active, note, tags FROM items ORDER BY id"

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPageLoadsWhileItDownloadsAndGivesTheRowsOfAPageLoadedAfterItsDownload(kind: TargetDatabase.Kind) throws {
    // Page 2 comes at 20,000 bytes a second: about half a second.
    let server = try RestServer(["--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "rate": 20000}"#])
    let streamedFolder = TemporaryDirectory()
    let streamed = try TargetDatabase(kind, folder: streamedFolder.path)
    let run = try ChildProcess.dray(
      ["run", HTTPStreamLoadTests.job(streamed)], environment: ["API": server.url], logPrefix: streamedFolder.path + "/run")
    #expect(run.waitUntil { HTTPStreamLoadTests.loadsWhileDownloading(streamed, page: 2) })
    #expect(run.wait() == .exited(0), "\(run.errors)")

    // A step that also saves its pages loads each after its download.
    let afterFolder = TemporaryDirectory()
    let after = try TargetDatabase(kind, folder: afterFolder.path)
    let saved = try Command.dray(
      ["run", HTTPStreamLoadTests.job(after, extra: "      output: pages/{page}.json")], environment: ["API": server.url])
    #expect(saved.status == 0, "\(saved.output)")
    let rows = try streamed.rows(HTTPStreamLoadTests.allItems)
    #expect(rows.count == 300)
    #expect(try rows == after.rows(HTTPStreamLoadTests.allItems))
    let bytes = try Report(run.output).step("items")["bytes"] as? Int
    #expect(bytes ?? 0 > 30000)
    #expect(try bytes == Report(saved.stdout).step("items")["bytes"] as? Int)
  }

  /// A gzip page's part holds the decoded bytes, which the load reads as they arrive.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aCompressedPageLoadsWhileItDownloads(kind: TargetDatabase.Kind) throws {
    // Page 2, about 2 KB compressed, comes at 2,000 bytes a second.
    let server = try RestServer(["--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "rate": 2000}"#])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let run = try ChildProcess.dray(
      ["run", HTTPStreamLoadTests.job(target, compressed: true)], environment: ["API": server.url], logPrefix: folder.path + "/run")
    #expect(run.waitUntil { HTTPStreamLoadTests.loadsWhileDownloading(target, page: 2) })
    #expect(run.wait() == .exited(0), "\(run.errors)")
    #expect(try server.requests().map(\.contentEncoding) == ["gzip", "gzip", "gzip"])
    #expect(try target.rows("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items") == [["300", "300", "1", "300"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPageBrokenMidwayResumesAtItsPartsEndAndGivesExactlyItsRecords(kind: TargetDatabase.Kind) throws {
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "ranges": true, "close_after": 5000, "times": 1}"#,
      "--rule", #"{"path": "/items", "ranges": true}"#,
    ])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let run = try Command.dray(["run", HTTPStreamLoadTests.job(target)], environment: ["API": server.url])
    #expect(run.status == 0, "\(run.output)")
    let pageTwo = try server.requests().filter { $0.path.contains("page=2") }
    #expect(pageTwo.map { $0["Range"] } == [nil, "bytes=5000-"])
    #expect(pageTwo.map(\.status) == [200, 206])

    let cleanFolder = TemporaryDirectory()
    let clean = try TargetDatabase(kind, folder: cleanFolder.path)
    #expect(try Command.dray(["run", HTTPStreamLoadTests.job(clean)], environment: ["API": server.url]).status == 0)
    let rows = try target.rows(HTTPStreamLoadTests.allItems)
    #expect(rows.count == 300)
    #expect(try rows == clean.rows(HTTPStreamLoadTests.allItems))
  }

  /// A server that ignores the range sends the whole page again: what was read of the first
  /// answer rolls back, and the page loads from its start once finished.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPageSentAgainFromItsStartLoadsOnceFinishedWithExactlyItsRecords(kind: TargetDatabase.Kind) throws {
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "ranges": true, "close_after": 5000, "times": 1}"#,
    ])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let run = try Command.dray(["run", HTTPStreamLoadTests.job(target)], environment: ["API": server.url])
    #expect(run.status == 0, "\(run.output)")
    #expect(try server.requests().filter { $0.path.contains("page=2") }.map(\.status) == [200, 200])
    let notes = try Report(run.stdout).step("items")["notes"] as? [String] ?? []
    #expect(notes.contains("page 2: the download started the answer again from byte 0; it was loaded once finished"))
    #expect(try target.rows("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items") == [["300", "300", "1", "300"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKillMidPageCommitsNoRowOfThatPageAndTheNextRunResumesItsPart(kind: TargetDatabase.Kind) throws {
    // Page 2 comes at 3,000 bytes a second: about 4 s.
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "rate": 3000, "ranges": true}"#,
    ])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let job = try HTTPStreamLoadTests.job(target)
    let run = try ChildProcess.dray(["run", job], environment: ["API": server.url], logPrefix: folder.path + "/killed")
    #expect(run.waitUntil { HTTPStreamLoadTests.loadsWhileDownloading(target, page: 2) })
    run.send(SIGKILL)
    #expect(run.wait() == .signaled(SIGKILL))
    let held = HTTPStreamLoadTests.partSize(target, page: 2)
    #expect(held > 0)
    // Page 1 only: none of page 2's records, and no published table.
    #expect(try HTTPStreamLoadTests.staged(target, "SELECT pages, rows FROM _dray_http_pages") == [[.integer(1), .integer(100)]])
    #expect(
      try HTTPStreamLoadTests.staged(target, #"SELECT count(*), max(id) FROM "_dray_http__stream__items""#) == [
        [.integer(100), .integer(100)]
      ])
    #expect(try target.columnNames("items") == [])

    try server.setRules(#"[{"path": "/items", "ranges": true}]"#)
    try server.reset()
    let rerun = try Command.dray(["run", job], environment: ["API": server.url])
    #expect(rerun.status == 0, "\(rerun.output)")
    #expect(
      try server.requests().map { [$0.path, $0["Range"] ?? "-"] } == [
        ["/items?page=2&per_page=100", "bytes=\(held)-"], ["/items?page=3&per_page=100", "-"],
      ])
    #expect(try target.rows("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM items") == [["300", "300", "1", "300"]])
  }

  /// An error status's body is never a page's records, even one in JSON that the records
  /// selector would read: a status `on_status` names `empty` on a page the page before
  /// linked to fails the step as a 204 there does (it cannot say whether more pages follow),
  /// any other status fails it too, and neither loads it nor publishes the pages before.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anErrorStatusWithAJSONBodyLoadsNothingOfIt(kind: TargetDatabase.Kind) throws {
    let records = #"{\"data\": [{\"id\": 999, \"name\": \"not a record\"}], \"links\": {\"next\": null}}"#
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "status": 404, "body": "\#(records)"}"#,
    ])
    let emptyFolder = TemporaryDirectory()
    let empty = try TargetDatabase(kind, folder: emptyFolder.path)
    let ended = try Command.dray(
      ["run", HTTPStreamLoadTests.job(empty, extra: "      on_status: { 404: empty }")], environment: ["API": server.url])
    #expect(ended.status == 1, "\(ended.output)")
    #expect(ended.output.contains("HTTP 404, which on_status names empty"), "\(ended.output)")
    #expect(try empty.columnNames("items") == [])

    try server.setRules(#"[{"path": "/items", "query": {"page": "2"}, "status": 422, "body": "\#(records)"}]"#)
    let refusedFolder = TemporaryDirectory()
    let refused = try TargetDatabase(kind, folder: refusedFolder.path)
    let failed = try Command.dray(["run", HTTPStreamLoadTests.job(refused)], environment: ["API": server.url])
    #expect(failed.status == 1, "\(failed.output)")
    #expect(failed.output.contains("HTTP 422"))
    #expect(
      try HTTPStreamLoadTests.staged(refused, #"SELECT count(*), max(id) FROM "_dray_http__stream__items""#) == [
        [.integer(100), .integer(100)]
      ])
    #expect(try refused.columnNames("items") == [])
  }

  /// A page that breaks off in the middle of its records is refused whole: the records read
  /// before the fault roll back with its transaction, and the error names the page.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPageThatIsNotJSONPartwayCommitsNoneOfItsRecords(kind: TargetDatabase.Kind) throws {
    let broken = #"{\"data\": [{\"id\": 101}, {\"id\": 102}, oops]}"#
    let server = try RestServer([
      "--items", "300", "--rule", #"{"path": "/items", "query": {"page": "2"}, "status": 200, "body": "\#(broken)"}"#,
    ])
    let folder = TemporaryDirectory()
    let target = try TargetDatabase(kind, folder: folder.path)
    let run = try Command.dray(["run", HTTPStreamLoadTests.job(target)], environment: ["API": server.url])
    #expect(run.status == 1, "\(run.output)")
    #expect(run.output.contains("page 2 (\(server.url)items?page=2&per_page=100): the answer is not valid JSON"), "\(run.output)")
    #expect(try HTTPStreamLoadTests.staged(target, "SELECT pages, rows FROM _dray_http_pages") == [[.integer(1), .integer(100)]])
    #expect(
      try HTTPStreamLoadTests.staged(target, #"SELECT count(*), max(id) FROM "_dray_http__stream__items""#) == [
        [.integer(100), .integer(100)]
      ])
    // Page 1, committed, leaves no file behind: neither its answer nor its sidecar.
    let downloads = folder.path + "/.dray/downloads/stream"
    let left = (try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []
    #expect(!left.contains { $0.contains(".page-1") }, "\(left)")
  }
}
