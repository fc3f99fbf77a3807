import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// `incremental.boundary` and the precision of cursor values (docs/http.md, "Cursor
/// boundaries"), against the REST test server's `/orders` in its inclusive and exclusive
/// modes.
@Suite struct CursorBoundaryTests {
  let folder = TemporaryDirectory()

  /// Runs job `shop`, one incremental step over `/orders` per load (`orders`, `events`...).
  func run(_ server: RestServer, _ target: TargetDatabase, loads: [String], boundary: String?, perPage: Int = 3) throws -> RunReport {
    let steps = loads.map { load in
      """
        - id: \(load.contains("append") ? "events" : "orders")
          http:
            base_url: '\(server.url)'
            path: orders
            query: { per_page: \(perPage) }
            load: \(load)
            paginate: { next: /links/next }
            incremental: { cursor: /updated_at, param: updated_since, initial: '2024-01-01T00:00:00Z'\(boundary.map { ", boundary: \($0)" } ?? "") }

      """
    }
    let path = try folder.write(
      "job.yaml", "version: 1\njob: shop\n\(target.manifestBlock)retry: { count: 1, interval: 10ms }\nsteps:\n" + steps.joined())
    let manifest = try ManifestLoader().load(path: path)
    return Runner(manifest: manifest, options: RunFlags(), console: Console(level: .quiet), cancellation: Cancellation()).run()
  }

  static let merge = "{ table: orders, records: /data, write: merge, primary_key: [id], deleted: /deleted }"
  static let append = "{ table: events, records: /data, write: append }"

  @Test func predecessorsAreExactAndValuesKeepTheirPrecision() throws {
    func value(_ json: JSONValue) throws -> IncrementalCursor.Value { try #require(IncrementalCursor.Value(json: json)) }
    #expect(try value(.integer(9_007_199_254_740_993)).predecessor?.json == .integer(9_007_199_254_740_992))
    #expect(try value(.integer(9_007_199_254_740_993)).compare(value(.integer(9_007_199_254_740_992))) == 1)
    #expect(try value(.number("123456789012345678901234567890")).compare(value(.number("123456789012345678901234567891"))) == -1)
    #expect(try value(.number("-123456789012345678901234567890")).compare(value(.number("-123456789012345678901234567891"))) == 1)
    #expect(try value(.number("123456789012345678901234567890")).compare(value(.integer(Int64.max))) == 1)
    #expect(try value(.integer(Int64.min)).compare(value(.number("-123456789012345678901234567890"))) == 1)
    #expect(try value(.string("2024-01-01T00:00:00Z")).predecessor?.text == "2023-12-31T23:59:59.999999999Z")
    #expect(try value(.string("2024-01-01T00:00:00.000000001Z")).predecessor?.text == "2024-01-01T00:00:00.000000000Z")
    #expect(try value(.string("2024-01-01T01:00:00.5+01:00")).predecessor?.text == "2024-01-01T00:00:00.499999999Z")
    #expect(try value(.string("2024-01-01T00:00:00.000000002Z")).compare(value(.string("2024-01-01T00:00:00.000000001Z"))) == 1)
    #expect(try value(.string("2024-01-01T00:00:00.000000001Z")).text == "2024-01-01T00:00:00.000000001Z")
    #expect(try value(.string("b-0001")).predecessor == nil)
    #expect(try value(.string("b-0001")).compare(value(.string("b-0002"))) == -1)
    #expect(try value(.number("1.5")).predecessor?.json == .number("1.4"))
    let lagged = HTTPStep.Incremental(
      cursor: JSONPointer(tokens: ["t"]), param: "since", initial: try value(.string("2024-01-01T00:00:00Z")), lag: .seconds(60),
      boundary: .exclusive)
    #expect(try lagged.sent(kept: value(.string("2024-01-01T01:00:00Z")))?.text == "2024-01-01T00:58:59.999999999Z")
  }

  /// A record arriving late at the kept value: an exclusive API loses it unless dray asks
  /// from just below the kept value; the records at the kept value come back, and neither
  /// merge nor append doubles them.
  @Test(arguments: TargetDatabase.Kind.allCases, ["exclusive", "inclusive"])
  func recordsArrivingLateAtTheKeptValueAreLoadedOnce(kind: TargetDatabase.Kind, api: String) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer()
    try server.setOrdersMode(#"{"boundary": "\#(api)", "nanos": true}"#)
    try server.changeOrders(#"{"insert": 2}"#)
    try server.changeOrders(#"{"insert": 2, "burst": true}"#)
    let shared = try #require(server.allOrders().last?["updated_at"] as? String)
    #expect(shared == "2024-01-01T00:00:00.000000003Z")
    let first = try run(server, target, loads: [Self.merge, Self.append], boundary: api == "exclusive" ? "exclusive" : nil)
    #expect(first.status == .succeeded, "\(first.steps.map { $0.errorMessage ?? "" })")
    // Late, at the value the last run kept; and one more change after it.
    try server.changeOrders(#"{"insert": [{"customer": "late", "updated_at": "\#(shared)"}]}"#)
    try server.changeOrders(#"{"update": [1], "set": {"status": "paid"}}"#)
    try server.reset()
    let second = try run(server, target, loads: [Self.merge, Self.append], boundary: api == "exclusive" ? "exclusive" : nil)
    #expect(second.status == .succeeded, "\(second.steps.map { $0.errorMessage ?? "" })")
    let expected = api == "exclusive" ? "2024-01-01T00%3A00%3A00.000000002Z" : "2024-01-01T00%3A00%3A00.000000003Z"
    let firstPages = try server.requests().map(\.path).filter { $0.hasPrefix("/orders") && !$0.contains("&page=") }
    #expect(firstPages == ["/orders?per_page=3&updated_since=\(expected)", "/orders?per_page=3&updated_since=\(expected)"])
    #expect(
      try target.rows("SELECT id, status FROM orders ORDER BY id") == [
        ["1", "paid"], ["2", "new"], ["3", "new"], ["4", "new"], ["5", "new"],
      ])
    let events = try target.rows("SELECT id, updated_at FROM events ORDER BY id, updated_at").map { "\($0[0] ?? "")@\($0[1] ?? "")" }
    #expect(
      events == [
        "1@2024-01-01T00:00:00.000000001Z", "1@2024-01-01T00:00:00.000000004Z", "2@2024-01-01T00:00:00.000000002Z",
        "3@\(shared)", "4@\(shared)", "5@\(shared)",
      ])
    #expect(try target.rows("SELECT value FROM _dray_http_cursors") == Array(repeating: [#""2024-01-01T00:00:00.000000004Z""#], count: 2))
    #expect(second.steps.contains { $0.notes.contains { $0.hasPrefix("2 records at the kept cursor") } }, "\(second.steps.map(\.notes))")
  }

  /// Without `boundary: exclusive`, an exclusive API loses the record that arrives late
  /// at the kept value: what the key is for.
  @Test func anExclusiveAPIReadAsInclusiveLosesALateRecordAtTheKeptValue() throws {
    let target = try TargetDatabase(.sqlite, folder: folder.path)
    let server = try RestServer()
    try server.setOrdersMode(#"{"boundary": "exclusive", "nanos": true}"#)
    try server.changeOrders(#"{"insert": 2, "burst": true}"#)
    _ = try run(server, target, loads: [Self.merge], boundary: nil)
    try server.changeOrders(#"{"insert": [{"customer": "late", "updated_at": "2024-01-01T00:00:00.000000001Z"}]}"#)
    _ = try run(server, target, loads: [Self.merge], boundary: nil)
    #expect(try target.rows("SELECT count(*) FROM orders") == [["2"]])
    _ = try run(server, target, loads: [Self.merge], boundary: "exclusive")
    #expect(try target.rows("SELECT count(*) FROM orders") == [["3"]])
  }

  /// Order 1 changes after page 1 (orders 1-3) is answered: it moves to the end, and order 4
  /// slides into page 1's place, so page 2 starts at order 5. The kept cursor stays at
  /// order 1's first value, and the next run fetches order 4.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aRecordChangedWhileThePullIsBetweenPagesIsFetchedByTheNextRun(kind: TargetDatabase.Kind) throws {
    let target = try TargetDatabase(kind, folder: folder.path)
    let server = try RestServer(["--orders", "7"])
    try server.setOrdersMode(#"{"before_page": {"page": 2, "change": {"update": [1], "set": {"status": "paid"}}}}"#)
    let first = try run(server, target, loads: [Self.merge], boundary: nil)
    #expect(first.status == .succeeded, "\(first.steps.first?.errorMessage ?? "")")
    #expect(try server.requests().flatMap(\.records) == [1, 2, 3, 5, 6, 7, 1])
    #expect(try target.rows("SELECT value FROM _dray_http_cursors") == [[#""2024-01-01T00:00:01Z""#]])
    #expect(first.steps.first?.notes.contains { $0.hasPrefix("the record id 1 changed while the pull was between pages") } == true)
    try server.reset()
    let second = try run(server, target, loads: [Self.merge], boundary: nil)
    #expect(second.status == .succeeded, "\(second.steps.first?.errorMessage ?? "")")
    #expect(try server.requests().flatMap(\.records).contains(4))
    #expect(try target.rows("SELECT id, status FROM orders ORDER BY id") == (1...7).map { ["\($0)", $0 == 1 ? "paid" : "new"] })
    #expect(try target.rows("SELECT value FROM _dray_http_cursors") == [[#""2024-01-01T00:00:08Z""#]])
  }
}
