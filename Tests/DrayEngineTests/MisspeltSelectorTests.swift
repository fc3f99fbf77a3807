import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// A misspelt `paginate.next` once loaded one page of nine records, said "1 page" and moved
/// the incremental cursor past records it never fetched; a misspelt `columns.<c>.from` gave
/// a column of NULLs. A selector that matches nothing where the object it looks in holds a
/// member one small edit away (`EditDistance.closest`) is taken as misspelt: the step fails
/// naming the near spelling. A true last page (`next` null or absent, with no near name)
/// still ends the pull. docs/http.md, "A misspelt selector".
@Suite struct MisspeltSelectorTests {
  let folder = TemporaryDirectory()

  func run(_ target: TargetDatabase, _ server: RestServer, _ http: String) throws -> RunReport {
    try runJob(
      folder,
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: orders
          http: { base_url: '${API}', \(http) }
      """, environment: ["API": server.url]
    ).1
  }

  /// The URL of the first request the server received.
  func firstURL(_ server: RestServer) throws -> String {
    server.url + (try server.requests().first?.path.dropFirst() ?? "")
  }

  static let incremental = "incremental: { cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z' }"

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aMisspeltNextLinkFailsTheStepAndKeepsTheCursor(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "9"])
    let report = try run(
      target, server,
      "path: orders, query: { per_page: 3 }, load: { table: orders, records: /data, write: merge, primary_key: [id] }, paginate: { next: /links/nxt }, \(Self.incremental)"
    )
    #expect(report.exitCode == 1)
    #expect(report.steps[0].errorCode == "bad_answer")
    #expect(
      report.steps[0].errorMessage
        == "page 1 (\(try firstURL(server))): paginate.next '/links/nxt' matches nothing in the answer; did you mean '/links/next'? A misspelt selector would end the pull early, so nothing was published"
    )
    #expect(try target.columnNames("orders") == [])
    // No cursor kept (on PostgreSQL the table of kept cursors is not even made).
    #expect((try? target.rows("SELECT count(*) FROM _dray_http_cursors WHERE value IS NOT NULL")) ?? [["0"]] == [["0"]])
  }

  /// `paginate.more` and `paginate.cursor.from` are read by the same rule.
  @Test func aMisspeltMoreOrCursorFails() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try RestServer(["--orders", "9"])
    for (paginate, message) in [
      (
        "{ cursor: { param: starting_after, from_last_record: /id }, more: /has_mroe }",
        "paginate.more '/has_mroe' matches nothing in the answer; did you mean '/has_more'?"
      ),
      ("{ cursor: { from: /links/nxt } }", "paginate.cursor.from '/links/nxt' matches nothing in the answer; did you mean '/links/next'?"),
    ] {
      try server.reset()
      let path = paginate.contains("more") ? "stripe/orders, query: { limit: 3 }" : "orders, query: { per_page: 3 }"
      let report = try run(target, server, "path: \(path), load: { table: orders, records: /data }, paginate: \(paginate)")
      #expect(
        report.steps[0].errorMessage
          == "page 1 (\(try firstURL(server))): \(message) A misspelt selector would end the pull early, so nothing was published")
    }
  }

  /// A last page whose links lack `next`, or that has no links at all, ends the pull.
  @Test func aTrueLastPageStillEndsThePull() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    for body in [#"{"data": [{"id": 1}], "links": {"prev": "/things?page=0", "self": "/things"}}"#, #"{"data": [{"id": 1}]}"#] {
      let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", body)])
      let report = try run(target, server, "path: things, load: { table: things, records: /data }, paginate: { next: /links/next }")
      #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
      #expect(report.steps[0].notes.contains("1 page"))
    }
  }

  @Test func aMisspeltRecordsSelectorNamesTheNearSpelling() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    let report = try run(target, server, "path: orders, load: { table: orders, records: /dta }")
    #expect(
      report.steps[0].errorMessage
        == "the answer of \(server.url)orders: the records selector '/dta' matches nothing in the answer; did you mean '/data'?")
  }

  /// A declared column's `from` that matches no record of a page whose records hold a near
  /// name fails; one that matched no record of the whole load, with no near name, loads
  /// NULL and says so in the step's notes.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aColumnsFromThatMatchesNothingFailsOrIsNoted(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    let misspelt = try run(
      target, server, "path: orders, load: { table: orders, records: /data, columns: { id: INTEGER, who: { from: /custmer } } }")
    #expect(misspelt.steps[0].errorCode == "bad_answer")
    #expect(
      misspelt.steps[0].errorMessage
        == "the answer of \(server.url)orders: load.columns.who.from '/custmer' matches nothing in the page's 3 records; did you mean '/customer'? A misspelt selector would load the column as NULL; nothing of this page was loaded"
    )
    #expect(try target.columnNames("orders") == [])
    let absent = try run(
      target, server, "path: orders, load: { table: orders, records: /data, columns: { id: INTEGER, coupon: { from: /coupon } } }")
    #expect(absent.exitCode == 0, "\(absent.steps.compactMap(\.errorMessage))")
    #expect(
      absent.steps[0].notes.contains("load.columns.coupon.from '/coupon' matched no record of the 3 loaded; the column holds only NULL"))
  }

  @Test func aMisspeltCursorOrDeletedMarkNamesTheNearSpelling() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    try server.changeOrders(#"{"delete": [2]}"#)
    let cursor = try run(
      target, server,
      "path: orders, load: { table: orders, records: /data }, incremental: { cursor: /updated_a, param: updated_since, initial: '2024-01-01T00:00:00Z' }"
    )
    #expect(
      cursor.steps[0].errorMessage
        == "the answer of \(try firstURL(server)): record 1 has no value at the cursor '/updated_a' (incremental.cursor), so dray cannot tell how far it has read; nothing of this page was loaded. Did you mean '/updated_at'?"
    )
    try server.reset()
    let deleted = try run(
      target, server, "path: orders, load: { table: orders, records: /data, write: merge, primary_key: [id], deleted: /delted }")
    #expect(
      deleted.steps[0].errorMessage
        == "the answer of \(server.url)orders: load.deleted '/delted' matches nothing in the page's 3 records; did you mean '/deleted'? A misspelt selector would load deleted records as rows; nothing of this page was loaded"
    )
    let last = try run(
      target, server,
      "path: stripe/orders, query: { limit: 3 }, load: { table: orders, records: /data }, paginate: { cursor: { param: starting_after, from_last_record: /idd } }"
    )
    #expect(
      last.steps[0].errorMessage
        == "page 1 (\(server.url)stripe/orders?limit=3): paginate.cursor.from_last_record '/idd' is missing in record 2, the last of the page; it must be a string or a number; did you mean '/id'?"
    )
  }

  /// A misspelling is found at any depth of a pointer, not only in its last token: at the
  /// first token the object it looks in lacks while holding a member a small edit away (a
  /// different letter case included), and the whole corrected pointer is suggested.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aMisspeltPaginationTokenAtAnyDepthFails(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let object = #"{"data": [{"id": 1}, {"id": 2}], "links": {"next": "/things?page=2"}, "meta": {"has_more": true}}"#
    let list = #"{"data": [{"id": 1}, {"id": 2}], "links": [{"next": "/things?page=2"}]}"#
    for (body, paginate, message) in [
      (object, "{ next: /link/next }", "paginate.next '/link/next' matches nothing in the answer; did you mean '/links/next'?"),
      (object, "{ next: /Links/Next }", "paginate.next '/Links/Next' matches nothing in the answer; did you mean '/links/next'?"),
      (list, "{ next: /link/0/next }", "paginate.next '/link/0/next' matches nothing in the answer; did you mean '/links/0/next'?"),
      (list, "{ next: /links/0/nxt }", "paginate.next '/links/0/nxt' matches nothing in the answer; did you mean '/links/0/next'?"),
      (
        object, "{ cursor: { from: /link/next } }",
        "paginate.cursor.from '/link/next' matches nothing in the answer; did you mean '/links/next'?"
      ),
      (
        object, "{ cursor: { param: after, from_last_record: /id }, more: /Meta/has_more }",
        "paginate.more '/Meta/has_more' matches nothing in the answer; did you mean '/meta/has_more'?"
      ),
    ] {
      let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", body)])
      let report = try run(target, server, "path: things, load: { table: things, records: /data }, paginate: \(paginate)")
      #expect(report.exitCode == 1)
      #expect(
        report.steps[0].errorMessage
          == "page 1 (\(server.url)things): \(message) A misspelt selector would end the pull early, so nothing was published")
      #expect(try target.columnNames("things") == [])
    }
  }

  /// A last page still ends the pull when a pointer's parent is absent with no near name,
  /// or its next is null.
  @Test func aTrueLastPageEndsThePullAtAnyDepth() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    for (body, next) in [
      (#"{"data": [{"id": 1}], "meta": {"count": 1}}"#, "/links/next"),
      (#"{"data": [{"id": 1}], "links": null}"#, "/links/next"),
      (#"{"data": [{"id": 1}], "links": {"next": null}}"#, "/links/next"),
      (#"{"data": [{"id": 1}], "links": []}"#, "/links/0/next"),
      (#"{"data": [{"id": 1}], "paging": {"cursors": {}}}"#, "/paging/cursors/next"),
    ] {
      let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", body)])
      let report = try run(target, server, "path: things, load: { table: things, records: /data }, paginate: { next: \(next) }")
      #expect(report.exitCode == 0, "\(body): \(report.steps.compactMap(\.errorMessage))")
      #expect(report.steps[0].notes.contains("1 page"))
    }
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aColumnsFromMisspeltAtAnyDepthFails(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let body = #"{"data": [{"id": 1, "customer": {"name": "a"}}, {"id": 2}]}"#
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", body)])
    for (from, near) in [("/custmer/name", "/customer/name"), ("/Customer/name", "/customer/name"), ("/customer/Name", "/customer/name")] {
      let report = try run(
        target, server, "path: things, load: { table: things, records: /data, columns: { id: INTEGER, who: { from: \(from) } } }")
      #expect(report.steps[0].errorCode == "bad_answer")
      #expect(
        report.steps[0].errorMessage
          == "the answer of \(server.url)things: load.columns.who.from '\(from)' matches nothing in the page's 2 records; did you mean '\(near)'? A misspelt selector would load the column as NULL; nothing of this page was loaded"
      )
      #expect(try target.columnNames("things") == [])
    }
    // Record 2 lacks the customer and any near name: the column loads, NULL there.
    let right = try run(
      target, server, "path: things, load: { table: things, records: /data, columns: { id: INTEGER, who: { from: /customer/name } } }")
    #expect(right.exitCode == 0, "\(right.steps.compactMap(\.errorMessage))")
    #expect(try target.rows("SELECT id, who FROM things ORDER BY id") == [["1", "a"], ["2", nil]])
  }

  /// `load.deleted`, `incremental.cursor` and `paginate.cursor.from_last_record` read records
  /// as loaded, by the same walk.
  @Test func aRecordPointerMisspeltAtAnyDepthNamesTheNearSpelling() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let body = #"{"data": [{"id": 1, "meta": {"gone": false, "at": "2024-02-01T00:00:00Z", "key": "k1"}}]}"#
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", body)])
    let deleted = try run(
      target, server, "path: things, load: { table: things, records: /data, write: merge, primary_key: [id], deleted: /mta/gone }")
    #expect(
      deleted.steps[0].errorMessage
        == "the answer of \(server.url)things: load.deleted '/mta/gone' matches nothing in the page's 1 record; did you mean '/meta/gone'? A misspelt selector would load deleted records as rows; nothing of this page was loaded"
    )
    let cursor = try run(
      target, server,
      "path: things, load: { table: things, records: /data }, incremental: { cursor: /Meta/at, param: since, initial: '2024-01-01T00:00:00Z' }"
    )
    #expect(
      cursor.steps[0].errorMessage?.hasSuffix(
        "record 1 has no value at the cursor '/Meta/at' (incremental.cursor), so dray cannot tell how far it has read; nothing of this page was loaded. Did you mean '/meta/at'?"
      ) == true, "\(cursor.steps.compactMap(\.errorMessage))")
    let fromLast = try run(
      target, server,
      "path: things, load: { table: things, records: /data }, paginate: { cursor: { param: after, from_last_record: /meat/key } }"
    )
    #expect(
      fromLast.steps[0].errorMessage
        == "page 1 (\(server.url)things): paginate.cursor.from_last_record '/meat/key' is missing in record 1, the last of the page; it must be a string or a number; did you mean '/meta/key'?"
    )
  }

  /// An XML path is walked step by step by the same rule.
  @Test func aMisspeltXMLStepAtAnyDepthNamesTheNearSpelling() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let page = "<catalog><item><id>1</id></item><links><next>/things?page=2</next></links></catalog>"
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", page)])
    for (next, near) in [
      ("/catalog/link/next", "/catalog/links/next"), ("/Catalog/links/next", "/catalog/links/next"),
      ("/catalog/Links/next", "/catalog/links/next"), ("//links/nxt", "//links/next"), ("/Catalog/Links/Next", "/catalog/links/next"),
    ] {
      let report = try run(
        target, server, "path: things, format: xml, load: { table: things, records: /catalog/item }, paginate: { next: '\(next)' }")
      #expect(
        report.steps[0].errorMessage
          == "page 1 (\(server.url)things): paginate.next '\(next)' matches nothing in the answer; did you mean '\(near)'? A misspelt selector would end the pull early, so nothing was published"
      )
    }
    let last = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", "<catalog><item><id>1</id></item><meta/></catalog>")])
    let report = try run(
      target, last, "path: things, format: xml, load: { table: things, records: /catalog/item }, paginate: { next: /catalog/links/next }")
    #expect(report.exitCode == 0, "\(report.steps.compactMap(\.errorMessage))")
  }

  /// A pagination value that is a list or an object names the page, as the other errors of
  /// a page do.
  @Test func aNextLinkThatIsAnObjectNamesThePage() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let body = #"{"data": [{"id": 1}], "links": {"next": {"href": "/things?page=2"}}}"#
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/things", body)])
    let report = try run(target, server, "path: things, load: { table: things, records: /data }, paginate: { next: /links/next }")
    #expect(report.steps[0].errorCode == "bad_pagination")
    #expect(
      report.steps[0].errorMessage
        == "page 1 (\(server.url)things): paginate.next '/links/next' is an object in the answer; point it at the value itself")
  }

  /// XML element paths follow the same rule: the records path, and a pagination path.
  @Test func aMisspeltXMLPathNamesTheNearSpelling() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try RestServer(["--items", "9"])
    let records = try run(target, server, "path: catalog.xml, format: xml, load: { table: items, records: /catalog/itme }")
    #expect(records.steps[0].errorCode == "bad_answer")
    #expect(
      records.steps[0].errorMessage
        == "the answer of \(server.url)catalog.xml: the records path '/catalog/itme' matches no element of the answer; did you mean '/catalog/item'?"
    )
    try server.reset()
    let next = try run(
      target, server,
      "path: catalog.xml, query: { per_page: 3 }, format: xml, load: { table: items, records: /catalog/item }, paginate: { next: /catalog/nxt }"
    )
    #expect(
      next.steps[0].errorMessage
        == "page 1 (\(try firstURL(server))): paginate.next '/catalog/nxt' matches nothing in the answer; did you mean '/catalog/next'? A misspelt selector would end the pull early, so nothing was published"
    )
    // A last page, without <next>, still ends the pull.
    let whole = try run(
      target, server,
      "path: catalog.xml, query: { per_page: 5 }, format: xml, load: { table: items, records: /catalog/item }, paginate: { next: /catalog/next }"
    )
    #expect(whole.exitCode == 0, "\(whole.steps.compactMap(\.errorMessage))")
    #expect(whole.steps[0].notes.contains("2 pages"))
  }
}
