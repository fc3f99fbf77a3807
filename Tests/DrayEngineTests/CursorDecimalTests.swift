import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Number cursors written with a fraction or an exponent (docs/http.md, "Cursor
/// boundaries" and "Precision"), against `Emulator/ticks_server.py`, an API whose `since`
/// is exclusive: the value is kept as the API wrote it, compared exactly, and an
/// `exclusive` step sends a value computed below it by its digits, so that a record arriving
/// later at the kept value is loaded, and none twice.
@Suite struct CursorDecimalTests {
  let folder = TemporaryDirectory()

  func value(_ json: JSONValue) throws -> IncrementalCursor.Value { try #require(IncrementalCursor.Value(json: json)) }

  @Test func decimalPredecessorsAreComputedByTheirDigits() throws {
    let expected: [(String, JSONValue)] = [
      ("1701600000.25", .number("1701600000.24")),
      ("1701600000.250", .number("1701600000.249")),
      ("1e3", .integer(999)),
      ("1E3", .integer(999)),
      ("1.0e3", .integer(999)),
      ("1.5e-3", .number("0.0014")),
      ("0.0", .number("-0.1")),
      ("-0.25", .number("-0.26")),
      ("0.01", .number("0.00")),
      ("1e1", .integer(9)),
      ("9.999e3", .integer(9998)),
      ("1e25", .number("9999999999999999000000000")),
      // One unit of the last digit would read as the same double: the next higher digit.
      ("100000000000000000000.0", .number("99999999999999990000.0")),
      ("0.1234567890123456789", .number("0.1234567890123456689")),
    ]
    for (kept, below) in expected {
      let number = try value(.number(kept))
      #expect(number.predecessor?.json == below, "\(kept)")
      #expect(number.text == kept, "kept as written: \(kept)")
      if let p = number.predecessor { #expect(p.compare(number) == -1, "\(kept)") }
    }
    // A double cannot hold these: no value below them is computed.
    #expect(try value(.number("1e-400")).predecessor == nil)
    #expect(try value(.number("1e400")).predecessor == nil)
    #expect(IncrementalCursor.Value(json: .number("1e9999999")) == nil)
  }

  @Test func numbersCompareExactlyInAnyForm() throws {
    #expect(try value(.number("1e3")).compare(value(.integer(1000))) == 0)
    #expect(try value(.number("1000.5")).compare(value(.number("1e3"))) == 1)
    #expect(try value(.number("0.1234567890123456789")).compare(value(.number("0.1234567890123456788"))) == 1)
    #expect(try value(.number("1.8446744073709551616e19")).compare(value(.number("18446744073709551616"))) == 0)
    #expect(try value(.number("18446744073709551616.5")).compare(value(.number("18446744073709551616"))) == 1)
    #expect(try value(.number("-1e-3")).compare(value(.number("-0.0011"))) == 1)
    #expect(try value(.number("-0.0")).compare(value(.integer(0))) == 0)
    #expect(try value(.number("2E+2")).compare(value(.number("199.99999999999999999999"))) == 1)
  }

  /// The year-zero instant and text have no value below them: an exclusive run would have
  /// to send the kept value itself, so it sends nothing; a lag that reached year zero is
  /// below the kept value and is sent.
  @Test func noPredecessorMeansNothingIsSent() throws {
    let zero = try value(.string("0000-01-01T00:00:00Z"))
    let exclusive = HTTPStep.Incremental(cursor: JSONPointer(tokens: ["ts"]), param: "since", initial: zero, boundary: .exclusive)
    #expect(exclusive.sent(kept: zero) == nil)
    #expect(exclusive.noValueBelow(kept: zero).contains("Use boundary: inclusive"))
    let lagged = HTTPStep.Incremental(
      cursor: JSONPointer(tokens: ["ts"]), param: "since", initial: zero, lag: .seconds(3600), boundary: .exclusive)
    #expect(lagged.sent(kept: try value(.string("0000-01-01T00:10:00Z")))?.text == "0000-01-01T00:00:00Z")
    let tiny = try value(.number("1e-400"))
    #expect(exclusive.sent(kept: tiny) == nil)
    #expect(
      exclusive.noValueBelow(kept: tiny)
        == "the kept cursor 1e-400 (incremental.cursor '/ts') is a number a double cannot hold (beyond about 1.8e308, or below about "
        + "4.9e-324), so dray computes no value just below it that an API could tell apart from it; incremental.boundary exclusive "
        + "sends the value just below the kept one, and sending the kept value itself would lose the records that arrive later at "
        + "it, so nothing was sent. Use boundary: inclusive if the API answers the records at the value sent (>=), or run with "
        + "--fresh to start again from 'initial'")
  }

  func run(_ server: TicksServer, _ target: TargetDatabase, write: String = "append", boundary: String = "exclusive") throws -> RunReport {
    let load =
      write == "append" ? "{ table: t, records: /data, write: append }" : "{ table: t, records: /data, write: merge, primary_key: [id] }"
    return try runJob(
      folder,
      """
      version: 1
      job: ticks
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: a
          http:
            base_url: '${API}'
            path: ticks
            load: \(load)
            incremental: { cursor: /c, param: since, initial: 0, boundary: \(boundary) }
      """, environment: ["API": server.url]
    ).1
  }

  func keptCursor(_ target: TargetDatabase) throws -> String? {
    try target.rows("SELECT value FROM _dray_http_cursors WHERE step_id = 'a'").first?.first ?? nil
  }

  /// The defect's repro: epoch seconds with a fraction, an exclusive API comparing them as
  /// doubles. The second run sends one unit of the last digit below the kept value, loads
  /// the record that arrived later at the kept value, and appends none twice; the finer
  /// value between the two (an API may hold more digits than it wrote) is recognised too.
  @Test(arguments: TargetDatabase.Kind.allCases, [false, true])
  func aRecordArrivingLaterAtAKeptFractionIsLoadedOnce(kind: TargetDatabase.Kind, exactly: Bool) throws {
    let server = try TicksServer()
    let target = try TargetDatabase(kind, folder: folder.path)
    try server.add([(1, "1701600000.245"), (2, "1701600000.25")], exactly: exactly)
    let first = try run(server, target)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(try keptCursor(target) == "1701600000.25")
    try server.add([(3, "1701600000.25"), (4, "1701600000.5")], exactly: exactly)
    try server.reset()
    let second = try run(server, target)
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    #expect(try server.requests() == ["/ticks?since=1701600000.24"])
    #expect(try target.rows("SELECT id, count(*) FROM t GROUP BY id ORDER BY id") == [["1", "1"], ["2", "1"], ["3", "1"], ["4", "1"]])
    #expect(try keptCursor(target) == "1701600000.5")
    #expect(
      second.steps.first?.notes.contains(
        "2 records at the kept cursor 1701600000.25 (or below it, above 1701600000.24, the value sent) already appended by an earlier run were not appended again"
      ) == true, "\(second.steps.map(\.notes))")
  }

  /// `1e3` is kept as `1e3`, compared as 1000 and answered with `999`; a kept
  /// `100000000000000000000.0` is kept as written, never `1e+20`.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func exponentFormsAreKeptAsWrittenAndSteppedBelowByTheirDigits(kind: TargetDatabase.Kind) throws {
    let server = try TicksServer()
    let target = try TargetDatabase(kind, folder: folder.path)
    try server.add([(1, "1e3")])
    #expect(try run(server, target).exitCode == 0)
    #expect(try keptCursor(target) == "1e3")
    try server.add([(2, "1000"), (3, "1.0e3")])
    try server.reset()
    let second = try run(server, target)
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    #expect(try server.requests() == ["/ticks?since=999"])
    #expect(try target.rows("SELECT id, count(*) FROM t GROUP BY id ORDER BY id") == [["1", "1"], ["2", "1"], ["3", "1"]])
    // The highest is kept as first seen among equals: 1e3.
    #expect(try keptCursor(target) == "1e3")
    try server.add([(4, "100000000000000000000.0")])
    #expect(try run(server, target).exitCode == 0)
    #expect(try keptCursor(target) == "100000000000000000000.0")
    try server.add([(5, "100000000000000000000.0")])
    try server.reset()
    let fourth = try run(server, target)
    #expect(fourth.exitCode == 0, "\(fourth.steps.compactMap(\.errorMessage))")
    #expect(try server.requests() == ["/ticks?since=99999999999999990000.0"])
    #expect(try target.rows("SELECT id, count(*) FROM t WHERE id >= 4 GROUP BY id ORDER BY id") == [["4", "1"], ["5", "1"]])
  }

  /// A kept integer is sent less 1; a record the API holds with a fraction between the two
  /// comes back and is not appended twice.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aFractionBelowAKeptIntegerIsNotAppendedTwice(kind: TargetDatabase.Kind) throws {
    let server = try TicksServer()
    let target = try TargetDatabase(kind, folder: folder.path)
    try server.add([(1, "999.5"), (2, "1000")])
    #expect(try run(server, target).exitCode == 0)
    #expect(try keptCursor(target) == "1000")
    try server.add([(3, "1000")])
    try server.reset()
    let second = try run(server, target)
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    #expect(try server.requests() == ["/ticks?since=999"])
    #expect(try target.rows("SELECT id, count(*) FROM t GROUP BY id ORDER BY id") == [["1", "1"], ["2", "1"], ["3", "1"]])
    #expect(second.steps.first?.notes.contains { $0.hasPrefix("2 records at the kept cursor 1000 already appended") } == true)
  }

  /// With merge the records between the value sent and the kept one are written again,
  /// unchanged; the late one is added.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func mergeAbsorbsTheRecordsBelowTheKeptFraction(kind: TargetDatabase.Kind) throws {
    let server = try TicksServer()
    let target = try TargetDatabase(kind, folder: folder.path)
    try server.add([(1, "0.5"), (2, "0.75")])
    #expect(try run(server, target, write: "merge").exitCode == 0)
    try server.add([(3, "0.75")])
    try server.reset()
    let second = try run(server, target, write: "merge")
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    #expect(try server.requests() == ["/ticks?since=0.74"])
    #expect(try target.rows("SELECT id FROM t ORDER BY id") == [["1"], ["2"], ["3"]])
  }

  /// A kept number no double holds has no value below it: the next run fails before any
  /// request, saying what and what to do, and the kept cursor stays.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aKeptNumberWithoutAValueBelowFailsTheRun(kind: TargetDatabase.Kind) throws {
    let server = try TicksServer()
    let target = try TargetDatabase(kind, folder: folder.path)
    try server.add([(1, "1e-400")], exactly: true)
    let first = try run(server, target)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(try keptCursor(target) == "1e-400")
    try server.reset()
    let second = try run(server, target)
    #expect(second.exitCode != 0)
    #expect(try server.requests() == [])
    #expect(second.steps.first?.errorCode == "cursor_boundary")
    #expect(
      second.steps.first?.errorMessage?.hasPrefix("the kept cursor 1e-400 (incremental.cursor '/c') is a number a double cannot hold")
        == true)
    #expect(second.steps.first?.errorMessage?.contains("Use boundary: inclusive") == true)
    #expect(try keptCursor(target) == "1e-400")
    #expect(try run(server, target, boundary: "inclusive").exitCode == 0)
    #expect(try server.requests() == ["/ticks?since=1e-400"])
  }
}
