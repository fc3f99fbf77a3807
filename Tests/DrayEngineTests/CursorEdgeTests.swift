import DrayEngine
import DrayManifest
import DrayModel
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Cursor values at the edges (docs/http.md, "Precision" and "Cursor boundaries"): an
/// integer beyond 64 bits compares by its digits, and its predecessor is computed by them;
/// an instant with no predecessor RFC 3339 can write (0000-01-01T00:00:00Z) is never sent
/// as a malformed date, nor as itself under `exclusive` (the run fails, saying so).
@Suite struct CursorEdgeTests {
  let folder = TemporaryDirectory()

  func value(_ json: JSONValue) throws -> IncrementalCursor.Value { try #require(IncrementalCursor.Value(json: json)) }

  @Test func predecessorsAtTheEdges() throws {
    #expect(try value(.number("18446744073709551616")).predecessor?.json == .number("18446744073709551615"))
    #expect(try value(.number("100000000000000000000")).predecessor?.json == .number("99999999999999999999"))
    #expect(try value(.number("9223372036854775808")).predecessor?.json == .integer(Int64.max))
    #expect(try value(.integer(Int64.min)).predecessor?.json == .number("-9223372036854775809"))
    #expect(try value(.number("-99999999999999999999")).predecessor?.json == .number("-100000000000000000000"))
    #expect(try value(.number("18446744073709551616")).compare(value(.number("18446744073709551615"))) == 1)
    #expect(try value(.string("0000-01-01T00:00:00Z")).predecessor == nil)
    #expect(try value(.string("0000-01-01T00:00:00.000000001Z")).predecessor?.text == "0000-01-01T00:00:00.000000000Z")
    #expect(try value(.string("0000-01-01T00:30:00+01:00")).predecessor == nil)
    #expect(try value(.string("2024-01-01T00:00:00.999999999Z")).predecessor?.text == "2024-01-01T00:00:00.999999998Z")
    #expect(try value(.string("2016-12-31T23:59:60Z")).predecessor?.text == "2016-12-31T23:59:59.999999999Z")
    #expect(try value(.string("2024-01-01T13:00:00+14:00")).predecessor?.text == "2023-12-31T22:59:59.999999999Z")
    let zero = try value(.string("0000-01-01T00:00:00Z"))
    let exclusive = HTTPStep.Incremental(cursor: JSONPointer(tokens: ["ts"]), param: "since", initial: zero, boundary: .exclusive)
    #expect(exclusive.sent(kept: zero) == nil)
    let lagged = HTTPStep.Incremental(
      cursor: JSONPointer(tokens: ["ts"]), param: "since", initial: zero, lag: .seconds(3600), boundary: .inclusive)
    #expect(lagged.sent(kept: try value(.string("0000-01-01T00:10:00Z")))?.text == "0000-01-01T00:00:00Z")
  }

  func run(_ server: RestServer, _ target: TargetDatabase, path: String, incremental: String) throws -> RunReport {
    try runJob(
      folder,
      """
      version: 1
      job: edge
      \(target.manifestBlock)retry: { count: 0 }
      steps:
        - id: a
          http:
            base_url: '${API}'
            path: \(path)
            load: { table: t, records: /data, write: append }
            incremental: \(incremental)
      """, environment: ["API": server.url]
    ).1
  }

  func keptCursor(_ target: TargetDatabase) throws -> String? {
    try target.rows("SELECT value FROM _dray_http_cursors WHERE step_id = 'a'").first?.first ?? nil
  }

  /// Snowflake-style ids beyond 64 bits (a JSON number) are compared by their digits, kept
  /// as the number they are, and the next run sends the predecessor computed by its digits.
  @Test(arguments: TargetDatabase.Kind.allCases, ["exclusive", "inclusive"])
  func anIntegerCursorBeyond64BitsComparesByItsDigits(kind: TargetDatabase.Kind, boundary: String) throws {
    let body = #"{"data": [{"id": 18446744073709551616, "v": 1}, {"id": 18446744073709551617, "v": 2}]}"#
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/big", body)])
    let target = try TargetDatabase(kind, folder: folder.path)
    let incremental = "{ cursor: /id, param: since, initial: 0, boundary: \(boundary) }"
    let first = try run(server, target, path: "big", incremental: incremental)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(try keptCursor(target) == "18446744073709551617")
    try server.reset()
    let second = try run(server, target, path: "big", incremental: incremental)
    #expect(second.exitCode == 0, "\(second.steps.compactMap(\.errorMessage))")
    let sent = boundary == "exclusive" ? "18446744073709551616" : "18446744073709551617"
    #expect(try server.requests().first?.path == "/big?since=\(sent)")
    // The record at the kept value came back, and was not appended again (this server
    // ignores `since`, so the one below it comes back too and is appended as new).
    #expect(try target.rows("SELECT count(*) FROM t WHERE id = '18446744073709551617'") == [["1"]])
  }

  /// A kept instant at 0000-01-01T00:00:00Z (a "zero date" some APIs give) has no
  /// predecessor: the first run sends `initial`, the next one of an exclusive step fails
  /// before any request (sending the kept value would lose the records arriving later at
  /// it), and an inclusive step goes on working.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func anExclusiveCursorAtYearZeroFailsTheNextRun(kind: TargetDatabase.Kind) throws {
    let server = try RestServer(["--rule", try HTTPBadAnswerTests.rule("/ts0", #"{"data": [{"ts": "0000-01-01T00:00:00Z", "v": 1}]}"#)])
    let target = try TargetDatabase(kind, folder: folder.path)
    let incremental = "{ cursor: /ts, param: since, initial: '0000-01-01T00:00:00Z', boundary: exclusive }"
    let first = try run(server, target, path: "ts0", incremental: incremental)
    #expect(first.exitCode == 0, "\(first.steps.compactMap(\.errorMessage))")
    #expect(try server.requests().first?.path == "/ts0?since=0000-01-01T00%3A00%3A00Z")
    try server.reset()
    let second = try run(server, target, path: "ts0", incremental: incremental)
    #expect(second.exitCode != 0)
    #expect(try server.requests().isEmpty)
    #expect(second.steps.first?.errorCode == "cursor_boundary")
    #expect(
      second.steps.first?.errorMessage?.hasPrefix(
        "the kept cursor 0000-01-01T00:00:00Z (incremental.cursor '/ts') is at or before 0000-01-01T00:00:00Z") == true,
      "\(second.steps.compactMap(\.errorMessage))")
    let inclusive = try run(server, target, path: "ts0", incremental: incremental.replacing("exclusive", with: "inclusive"))
    #expect(inclusive.exitCode == 0, "\(inclusive.steps.compactMap(\.errorMessage))")
    #expect(try server.requests().first?.path == "/ts0?since=0000-01-01T00%3A00%3A00Z")
    #expect(try target.rows("SELECT count(*) FROM t") == [["1"]])
  }
}
