import DrayEngine
import DrayManifest
import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Incremental `http` loads against the REST test server's `/orders`: write modes, the
/// kept cursor, deletes, and columns that follow the API (docs/http.md); on both targets
/// (one suite, two databases).
@Suite struct IncrementalTests {
  let folder = TemporaryDirectory()

  /// Runs a job with one `http` step over `/orders`, `load` and `incremental` as given.
  func run(_ server: RestServer, _ target: TargetDatabase, load: String, incremental: String? = nil, fresh: Bool = false) throws
    -> RunReport
  {
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 1, interval: 10ms }
      steps:
        - id: orders
          http:
            base_url: '\(server.url)'
            path: orders
            query: { per_page: 3 }
            load: \(load)
            paginate: { next: /links/next }
      \(incremental.map { "      incremental: \($0)" } ?? "")
      """)
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: RunFlags(fresh: fresh), console: Console(level: .quiet), cancellation: Cancellation())
      .run()
  }

  static let mergeLoad = "{ table: orders, records: /data, write: merge, primary_key: [id], deleted: /deleted }"
  static let cursor = "{ cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z' }"

  /// The table's rows as `id -> column -> text`, for comparing with the server's orders.
  func table(_ target: TargetDatabase, _ name: String, columns: [String]) throws -> [Int: [String: String]] {
    var out: [Int: [String: String]] = [:]
    for row in try target.rows("SELECT \(columns.map { "\"\($0)\"" }.joined(separator: ", ")) FROM \(name)") {
      var record: [String: String] = [:]
      for (column, value) in zip(columns, row) { record[column] = value ?? "\(SQLValue.null)" }
      if let id = record["id"].flatMap({ Int($0) }) { out[id] = record }
    }
    return out
  }

  func serverOrders(_ server: RestServer, columns: [String]) throws -> [Int: [String: String]] {
    var out: [Int: [String: String]] = [:]
    for order in try server.orders() {
      var record: [String: String] = [:]
      for column in columns {
        switch order[column] {
        case let n as NSNumber where n.doubleValue != n.doubleValue.rounded():
          record[column] = "\(SQLValue.real(n.doubleValue))"
        case let n as NSNumber: record[column] = "\(SQLValue.integer(n.int64Value))"
        case let s as String: record[column] = "\(SQLValue.text(s))"
        default: record[column] = "\(SQLValue.null)"
        }
      }
      out[try #require(order["id"] as? NSNumber).intValue] = record
    }
    return out
  }

  /// The kept cursor's JSON text; nil when none is kept.
  func keptCursor(_ target: TargetDatabase) throws -> String? {
    try target.rows("SELECT value FROM _dray_http_cursors WHERE step_id = 'orders'").first?.first ?? nil
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func mergeFollowsInsertsUpdatesAndDeletesOverSixRunsFetchingOnlyWhatChanged(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "7"])
    let changes = [
      #"{"insert": 2}"#, #"{"update": [1, 4], "set": {"status": "paid"}}"#, #"{"delete": [2, 8]}"#,
      #"{"insert": 1, "update": [3], "set": {"status": "sent"}, "delete": [5]}"#, "{}",
    ]
    let columns = ["id", "customer", "total", "status", "updated_at"]
    var sent = "2024-01-01T00:00:00Z"
    for round in 0...changes.count {
      if round > 0 { try server.changeOrders(changes[round - 1]) }
      let expectedIDs = Set(
        try server.orders().compactMap { ($0["updated_at"] as! String) > sent ? ($0["id"] as! NSNumber).intValue : nil })
      try server.reset()
      let report = try run(server, target, load: IncrementalTests.mergeLoad, incremental: IncrementalTests.cursor)
      #expect(report.status == .succeeded, "run \(round): \(report.steps.first?.errorMessage ?? "")")
      #expect(try table(target, "orders", columns: columns) == serverOrders(server, columns: columns), "run \(round)")
      let requests = try server.requests()
      #expect(
        requests.first?.path.contains("updated_since=\(sent.replacing(":", with: "%3A"))") == true, "run \(round): \(requests.map(\.path))")
      // Each run fetches only what changed since the kept cursor: live records and deletions.
      let fetched = requests.flatMap(\.records)
      #expect(Set(fetched).isSuperset(of: expectedIDs), "run \(round)")
      #expect(fetched.count == Set(fetched).count, "run \(round): a record fetched twice: \(fetched)")
      guard let kept = try keptCursor(target) else {
        Issue.record("run \(round): no kept cursor")
        return
      }
      #expect(kept >= "\"\(sent)\"")
      sent = String(kept.dropFirst().dropLast())
    }
    // Runs after the first fetch a handful of records, not the whole resource.
    #expect(try server.requests().flatMap(\.records).isEmpty)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func appendKeepsEveryVersionOfEveryRecordExactlyOnce(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "5"])
    let load = "{ table: events, records: /data, write: append }"
    var versions: [[String]] = []
    for change in ["{}", #"{"update": [2], "set": {"status": "paid"}}"#, #"{"insert": 2, "update": [2]}"#, "{}"] {
      try server.changeOrders(change)
      let report = try run(server, target, load: load, incremental: IncrementalTests.cursor)
      #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
      versions.append(contentsOf: try server.requests().flatMap(\.records).map { ["\($0)"] })
      try server.reset()
    }
    let rows = try target.rows("SELECT id, updated_at FROM events").map { "\($0[0] ?? "")@\($0[1] ?? "")" }
    #expect(rows.count == Set(rows).count, "a version loaded twice: \(rows)")
    #expect(rows.count == 5 + 1 + 3)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func lagReReadsAWindowBeforeTheKeptCursor(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    let lagged = "{ cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z', lag: 2s }"
    _ = try run(server, target, load: IncrementalTests.mergeLoad, incremental: lagged)
    try server.reset()
    let report = try run(server, target, load: IncrementalTests.mergeLoad, incremental: lagged)
    #expect(report.status == .succeeded)
    // The kept cursor is 00:00:03 (three ticks); two seconds earlier re-reads orders 2 and 3.
    #expect(try server.requests().first?.path == "/orders?per_page=3&updated_since=2024-01-01T00%3A00%3A01Z")
    #expect(try server.requests().flatMap(\.records) == [2, 3])
    #expect(try target.rows("SELECT count(*) FROM orders") == [["3"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func freshStartsAgainFromInitialAndReplacesTheTable(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "4"])
    _ = try run(server, target, load: IncrementalTests.mergeLoad, incremental: IncrementalTests.cursor)
    try target.execute("INSERT INTO orders(id, customer) VALUES (99, 'not on the server')")
    try server.reset()
    let report = try run(server, target, load: IncrementalTests.mergeLoad, incremental: IncrementalTests.cursor, fresh: true)
    #expect(report.status == .succeeded)
    #expect(try server.requests().first?.path == "/orders?per_page=3&updated_since=2024-01-01T00%3A00%3A00Z")
    #expect(try target.rows("SELECT id FROM orders ORDER BY id") == [["1"], ["2"], ["3"], ["4"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aNewFieldAddsAColumnNamedInTheReport(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "4"])
    _ = try run(server, target, load: IncrementalTests.mergeLoad, incremental: IncrementalTests.cursor)
    try server.changeOrders(#"{"update": [3], "set": {"coupon": "WINTER"}}"#)
    let report = try run(server, target, load: IncrementalTests.mergeLoad, incremental: IncrementalTests.cursor)
    #expect(report.steps.first?.notes.contains("added column coupon to table orders: the API's records hold it") == true)
    #expect(try target.rows("SELECT id, coupon FROM orders WHERE coupon IS NOT NULL") == [["3", "WINTER"]])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aRecordWithoutItsCursorIsRefusedByPageAndRecord(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "2"])
    let report = try run(
      server, target, load: IncrementalTests.mergeLoad,
      incremental: "{ cursor: /modified, param: updated_since, initial: '2024-01-01T00:00:00Z' }")
    #expect(report.status == .failed)
    #expect(report.steps.first?.errorCode == "bad_answer")
    #expect(
      report.steps.first?.errorMessage
        == "page 1 (\(server.url)orders?per_page=3&updated_since=2024-01-01T00%3A00%3A00Z): record 1 has no value at the cursor '/modified' (incremental.cursor), so dray cannot tell how far it has read; nothing of this page was loaded. Point incremental.cursor at a field every record holds, such as /updated_at"
    )
    #expect(try keptCursor(target) == nil)
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aCursorOfAnotherKindThanInitialIsRefused(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "2"])
    let report = try run(
      server, target, load: IncrementalTests.mergeLoad, incremental: "{ cursor: /updated_at, param: updated_since, initial: 0 }")
    #expect(report.status == .failed)
    #expect(
      report.steps.first?.errorMessage?.hasSuffix(
        #"record 1 has the cursor "2024-01-01T00:00:01Z" at '/updated_at', which is an RFC 3339 instant and cannot be compared with 0 (a number), the value sent as updated_since; nothing of this page was loaded. Cursors compare as numbers, as RFC 3339 instants or as text; give incremental.initial in the API's form"#
      ) == true, "\(report.steps.first?.errorMessage ?? "")")
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func aRecordWithoutItsPrimaryKeyIsRefused(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "2"])
    let report = try run(server, target, load: "{ table: orders, records: /data, write: merge, primary_key: [order_no] }")
    #expect(report.status == .failed)
    #expect(
      report.steps.first?.errorMessage?.hasSuffix(
        "record 1 has no value for the primary key 'order_no' (load.primary_key), so it cannot be merged; nothing of this page was loaded. Name fields every record holds in primary_key"
      ) == true)
    #expect(try target.columnNames("orders") == [])
  }

  @Test(arguments: TargetDatabase.Kind.allCases)
  func declaredColumnsIgnoreOrRefuseOtherFields(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    let columns = "columns: { id: INTEGER, customer: TEXT, changed: { type: TEXT, from: /updated_at } }"
    let ignoring = try run(server, target, load: "{ table: orders, records: /data, \(columns) }")
    #expect(ignoring.status == .succeeded)
    #expect(try target.columnNames("orders") == ["id", "customer", "changed"])
    let refusing = try run(server, target, load: "{ table: orders, records: /data, \(columns), extra: refuse }")
    #expect(refusing.status == .failed)
    #expect(
      refusing.steps.first?.errorMessage?.hasSuffix(
        "record 1: new column 'total' (load.contract.new_columns: freeze); nothing of this step was published. Declare the column in load.columns, or choose discard_row or discard_value"
      ) == true, "\(refusing.steps.first?.errorMessage ?? "")")
    // `extra: refuse` is the old spelling of new_columns: freeze; discard_value notes each
    // record it trimmed in the quarantine.
    let frozen = try run(server, target, load: "{ table: orders, records: /data, \(columns), contract: { new_columns: freeze } }")
    #expect(frozen.steps.first?.errorMessage == refusing.steps.first?.errorMessage)
    let trimming = try run(server, target, load: "{ table: orders, records: /data, \(columns), contract: { new_columns: discard_value } }")
    #expect(trimming.status == .succeeded, "\(trimming.steps.first?.errorMessage ?? "")")
    #expect(try target.columnNames("orders") == ["id", "customer", "changed"])
    #expect(
      try target.rows("SELECT reason, action FROM orders_rejected ORDER BY reason")
        == Array(repeating: ["new column 'total'; new column 'status'", "trimmed"], count: 3))
    #expect(trimming.steps.first?.contract?.trimmed == 3)
  }

  /// A server whose cursor goes backwards: the kept cursor stays at the highest value.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aCursorGoingBackwardsKeepsTheHighestValue(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "3"])
    _ = try run(server, target, load: IncrementalTests.mergeLoad, incremental: IncrementalTests.cursor)
    // The server answers an older record whatever the cursor sent (a clock set back).
    try server.setRules(
      #"[{"path": "/orders", "status": 200, "body": "{\"data\": [{\"id\": 1, \"updated_at\": \"2023-06-01T00:00:00Z\", \"status\": \"old\"}], \"links\": {}}"}]"#
    )
    let report = try run(server, target, load: IncrementalTests.mergeLoad, incremental: IncrementalTests.cursor)
    #expect(report.status == .succeeded)
    #expect(try keptCursor(target) == "\"2024-01-01T00:00:03Z\"")
    #expect(try target.rows("SELECT status FROM orders WHERE id = 1") == [["old"]])
  }

  /// `write: replace` (the default) replaces the table's rows with the pages' records on
  /// every run.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func replaceGivesTheServersRecordsEveryRun(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "4"])
    let columns = ["id", "customer", "total", "status", "updated_at"]
    for change in ["{}", #"{"insert": 2, "update": [1], "set": {"status": "paid"}}"#] {
      try server.changeOrders(change)
      let report = try run(server, target, load: "{ table: orders, records: /data }")
      #expect(report.status == .succeeded, "\(report.steps.first?.errorMessage ?? "")")
      #expect(try table(target, "orders", columns: columns) == serverOrders(server, columns: columns))
      #expect(report.steps.first?.rows == ["orders": try server.orders().count])
    }
  }

  /// A merge into a table that already holds two rows with one key is refused with the same
  /// words on both databases, and changes nothing.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aMergeIntoATableHoldingADuplicateKeyIsRefused(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "2"])
    // A first run creates the database; the table is the user's own.
    #expect(try run(server, target, load: "{ table: other, records: /data }").status == .succeeded)
    try target.execute("CREATE TABLE orders (id bigint, customer text)")
    try target.execute("INSERT INTO orders VALUES (1, 'a')")
    try target.execute("INSERT INTO orders VALUES (1, 'b')")
    let report = try run(server, target, load: "{ table: orders, records: /data, write: merge, primary_key: [id] }")
    #expect(report.status == .failed)
    #expect(
      report.steps.first?.errorMessage
        == "table orders already holds more than one row with id = 1, so it cannot be merged into by that primary key; remove the duplicates, or run with --fresh to load the table anew"
    )
    #expect(try target.rows("SELECT id, customer FROM orders ORDER BY customer") == [["1", "a"], ["1", "b"]])
    #expect(try target.columnNames("orders") == ["id", "customer"])
  }

  /// Stripe's lists page by the last record's id under the parameter an incremental pull
  /// sends its kept id in: each page's value replaces the first page's (never both, which
  /// a server reading the first one answered with page 1 again: `pagination_loop` on every
  /// run), and the second run starts after the kept cursor.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aPageCursorReplacesTheIncrementalParameterOfTheSameName(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "7"])
    let path = try folder.write(
      "job.yaml",
      """
      version: 1
      job: shop
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: orders
          http:
            base_url: '\(server.url)'
            path: stripe/orders
            query: { limit: 3 }
            load: { table: orders, records: /data, write: merge, primary_key: [id] }
            paginate: { cursor: { param: starting_after, from_last_record: /id }, more: /has_more }
            incremental: { cursor: /id, param: starting_after, initial: 0 }
      """)
    let manifest = try ManifestLoader().load(path: path)
    func run() -> RunReport {
      Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
    }
    let first = run()
    #expect(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
    #expect(
      try server.requests().map(\.path) == [
        "/stripe/orders?limit=3&starting_after=0", "/stripe/orders?limit=3&starting_after=3", "/stripe/orders?limit=3&starting_after=6",
      ])
    #expect(try target.rows("SELECT id FROM orders ORDER BY id") == (1...7).map { [String($0)] })
    #expect(try keptCursor(target) == "7")

    try server.reset()
    try server.changeOrders(#"{"insert": 2}"#)
    let second = run()
    #expect(second.status == .succeeded, "\(second.steps.first?.errorMessage ?? "")")
    #expect(try server.requests().map(\.path) == ["/stripe/orders?limit=3&starting_after=7"])
    #expect(try target.rows("SELECT id FROM orders ORDER BY id") == (1...9).map { [String($0)] })
    #expect(try keptCursor(target) == "9")
  }

  /// An incremental pull from the kept cursor that finds nothing changed answers no records,
  /// its normal answer, and is not refused; a `--fresh` start that finds none over a table
  /// holding rows would empty it, and is refused as a replace load is (`empty_answer`).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func nothingChangedIsAnAnswerButAnEmptyFreshStartIsRefused(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "4"])
    #expect(try run(server, target, load: Self.mergeLoad, incremental: Self.cursor).status == .succeeded)
    let quiet = try run(server, target, load: Self.mergeLoad, incremental: Self.cursor)
    #expect(quiet.status == .succeeded, "\(quiet.steps.first?.errorMessage ?? "")")
    #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
    try server.setRules(#"[{"path": "/orders", "status": 200, "body": "{\"data\": [], \"links\": {\"next\": null}}"}]"#)
    try server.reset()
    let fresh = try run(server, target, load: Self.mergeLoad, incremental: Self.cursor, fresh: true)
    #expect(fresh.steps.first?.errorCode == "empty_answer")
    let url = server.url + (try server.requests().first?.path.dropFirst() ?? "")
    #expect(
      fresh.steps.first?.errorMessage
        == "table orders holds 4 rows, and the answer of \(url) held no records: a load after --fresh would leave the table empty, so nothing was loaded and the table keeps its rows; if no records is a valid answer of this API, set load.allow_empty: true"
    )
    #expect(try target.rows("SELECT count(*) FROM orders") == [["4"]])
  }

  /// On PostgreSQL a staged value its column cannot hold is refused by table, record and
  /// column (SQLite keeps it as the answer gave it, docs/store.md), and nothing is written.
  @Test func aValueItsPostgreSQLColumnCannotHoldIsRefused() throws {
    let target = try TargetDatabase(.postgres, folder: folder.path)
    let server = try RestServer(["--orders", "2"])
    let report = try run(server, target, load: "{ table: orders, records: /data, columns: { id: INTEGER, customer: INTEGER } }")
    #expect(report.status == .failed)
    #expect(report.steps.first?.errorCode == "load_error")
    #expect(
      report.steps.first?.errorMessage
        == #"table orders, record 1, column 2 'customer' (INTEGER, a bigint column): "customer-1" is a string; a bigint column takes integers within 64 bits and booleans (as 1 and 0); nothing of the step's records was written; nothing was published, and the next run fetches the pages again. Make the column's type hold the API's values, or set load.contract.types: evolve (widen the column) or discard_row (set such records aside)"#
    )
    #expect(try target.columnNames("orders") == [])
    #expect(try keptCursor(target) == nil)
  }

  @Test func cursorValuesCompareAsTheAPIGivesThem() throws {
    func value(_ json: JSONValue) throws -> IncrementalCursor.Value { try #require(IncrementalCursor.Value(json: json)) }
    #expect(try value(.integer(9)).compare(value(.integer(10))) == -1)
    #expect(try value(.string("9")).compare(value(.string("10"))) == 1)
    #expect(try value(.string("2024-01-01T01:00:00+01:00")).compare(value(.string("2024-01-01T00:00:00Z"))) == 0)
    #expect(try value(.string("2024-01-01T00:00:00.5Z")).compare(value(.string("2024-01-01T00:00:00Z"))) == 1)
    #expect(try value(.integer(1)).compare(value(.string("1"))) == nil)
    #expect(try value(.string("2024-01-01T00:00:00Z")).moved(back: .seconds(90)).text == "2023-12-31T23:58:30Z")
  }
}
