import DrayJSON
import DrayModel
import DrayTestSupport
import Testing

/// The one reader of the table answer shape (platform-api.md §3): what it hands its sinks,
/// fed whole or piece by piece, and how it places what they refuse.
@Suite struct TableAnswerScannerTests {
  /// Writes down every event, and refuses what `refuse` says.
  final class Recorder: TableAnswerSink, TableAnswerRowSink {
    var events: [String] = []
    var refuse: (String) -> TableAnswerRefusal? = { _ in nil }

    func note(_ event: String) throws {
      events.append(event)
      if let refusal = refuse(event) { throw refusal }
    }

    func beginTable() throws { try note("table") }
    func tableName(_ name: String) throws { try note("name \(name)") }
    func endTable() throws { try note("end table") }
    func beginList(_ key: TableAnswerKey) throws -> TableAnswerList {
      try note("list \(key.name)")
      return key == .deleteIDs ? .ids : .rows(self)
    }
    func endList(_ key: TableAnswerKey, items: Int) throws { try note("end \(key.name) \(items)") }
    func deleteID(_ token: JSONToken, item: Int) throws { try note("id \(item) \(Self.text(token))") }
    func value(_ token: JSONToken, row: Int, column: Int) throws { try note("\(row).\(column) \(Self.text(token))") }
    func endRow(_ row: Int, values: Int) throws { try note("end row \(row) \(values)") }

    static func text(_ token: JSONToken) -> String {
      switch token {
      case .null: "null"
      case .bool(let flag): "\(flag)"
      case .number(let text): "n:" + String(decoding: text, as: UTF8.self)
      case .string(let text): "s:" + String(decoding: text, as: UTF8.self)
      case .nested(let text): "j:" + String(decoding: text, as: UTF8.self)
      }
    }
  }

  /// The events of `answer` fed in pieces of `piece` bytes (all at once for 0).
  func events(_ answer: String, piece: Int = 0, recorder: Recorder = Recorder()) throws -> [String] {
    let scanner = TableAnswerScanner(sink: recorder)
    let bytes = Array(answer.utf8)
    try bytes.withUnsafeBytes { all in
      let step = piece == 0 ? max(1, all.count) : piece
      for start in stride(from: 0, to: all.count, by: step) {
        try scanner.feed(UnsafeRawBufferPointer(rebasing: all[start..<min(all.count, start + step)]))
      }
    }
    try scanner.finish()
    return recorder.events
  }

  let answer = #"""
    [{"name": "t", "version": {"a": [1, {"b": 2}]}, "data": [[1, "x\ty", null, true], [-2.5e3, [1, {"k": "\u00e9\""}], {}, ""]]},
     {"name": "d", "insert_rows": [[9]], "delete_ids": [3, 4]}]
    """#

  @Test func everyPartOfTheAnswerReachesTheSinksInOrder() throws {
    #expect(
      try events(answer) == [
        "table", "name t", "list data",
        "1.0 n:1", "1.1 s:x\ty", "1.2 null", "1.3 true", "end row 1 4",
        "2.0 n:-2.5e3", #"2.1 j:[1,{"k":"é\""}]"#, "2.2 j:{}", "2.3 s:", "end row 2 4",
        "end data 2", "end table",
        "table", "name d", "list insert_rows", "1.0 n:9", "end row 1 1", "end insert_rows 1",
        "list delete_ids", "id 1 n:3", "id 2 n:4", "end delete_ids 2", "end table",
      ])
  }

  @Test(arguments: [1, 2, 7, 64])
  func anAnswerFedPieceByPieceGivesTheSameEvents(piece: Int) throws {
    #expect(try events(answer, piece: piece) == events(answer))
  }

  func failure(_ answer: String, piece: Int = 0, refuse: @escaping (String) -> TableAnswerRefusal? = { _ in nil }) -> String? {
    let recorder = Recorder()
    recorder.refuse = refuse
    do {
      _ = try events(answer, piece: piece, recorder: recorder)
      return nil
    } catch {
      return "\(error)"
    }
  }

  @Test func aRefusalIsPlacedByTableRowAndColumn() {
    let answer = #"[{"name": "t", "data": [[1, 2], [3, 4]]}]"#
    #expect(failure(answer) { $0 == "2.1 n:4" ? TableAnswerRefusal("no") : nil } == "table 't', row 2, column 2: no")
    #expect(failure(answer) { $0 == "2.1 n:4" ? TableAnswerRefusal("no", wholeRow: true) : nil } == "table 't', row 2: no")
    #expect(failure(answer) { $0 == "end row 1 2" ? TableAnswerRefusal("short") : nil } == "table 't', row 1, column 3: short")
    #expect(failure(answer) { $0 == "list data" ? TableAnswerRefusal("not now") : nil } == "table 't': not now")
  }

  @Test(arguments: [0, 1, 5])
  func whatIsNotATableAnswerIsNamedWhereverAPieceEnds(piece: Int) {
    #expect(failure("", piece: piece) == "the answer is empty; expected a JSON list of tables")
    #expect(failure("  \n", piece: piece) == "the answer holds only whitespace (3 bytes); expected a JSON list of tables")
    #expect(failure(#"{"name": "t"}"#, piece: piece) == "the answer must be a JSON list of tables, found an object")
    #expect(failure(#"[{"data": []}]"#, piece: piece) == "an element of the answer has no 'name'")
    #expect(failure(#"[{"name": "t", "name": "u"}]"#, piece: piece) == "table 't': a table object has 'name' twice")
    #expect(failure(#"[{"name": "t", "data": {}}]"#, piece: piece) == "table 't': a table's 'data' must be a list")
    #expect(
      failure(#"[{"name": "t", "data": [[1, NaN]]}]"#, piece: piece)
        == "table 't', row 1, column 2: NaN is not a JSON number; the answer is refused (JSON has no NaN or Infinity)")
    #expect(
      failure(#"[{"name": "t", "data": [[1, 2], [3"#, piece: piece)
        == "table 't', row 2, column 2: the answer ends before its JSON is complete (34 bytes); the download was cut short")
  }

  /// The events `body` returns, one line, or its error.
  static func outcome(_ body: () throws -> [String]) -> String {
    do { return try body().joined(separator: " | ") } catch { return "error: \(error)" }
  }

  /// A value cut by the 1 MiB read of `scan(file:)` at each of its bytes (an escape, a
  /// surrogate pair between its halves, a 4-byte UTF-8 character, a number, a literal, a run
  /// of whitespace) reads as it does whole; `-Infinity` and a bad escape are refused alike.
  @Test func valuesCutByTheReadOfAFileReadAsWhole() throws {
    let folder = TemporaryDirectory("dray-scan-cut")
    // Each value, and what its row's value reads as whole (or its refusal).
    let values = [
      (#""\uD83D\uDE00""#, "1.0 s:😀"), ("\"😀é\"", "1.0 s:😀é"), (#""a\\\"b\/""#, #"1.0 s:a\"b/"#), ("-12.5e+3", "1.0 n:-12.5e+3"),
      ("true", "1.0 true"), ("null", "1.0 null"), (" \r\n\t  0", "1.0 n:0"), (#"[1,{"k":[]}]"#, #"1.0 j:[1,{"k":[]}]"#),
      ("-Infinity", "-Infinity is not a JSON number"), (#""\u12x4""#, #"'\u12x' is not a JSON escape"#),
    ]
    let head = #"[{"name":"t","pad":""#
    let tail = "]]}]"
    for (value, reads) in values {
      let bytes = Array(value.utf8)
      for before in 0...bytes.count {
        // The value starts `before` bytes before the end of the first read.
        let padding = TableAnswerScanner.chunkSize - before - head.utf8.count - #"","data":[["#.utf8.count
        let answer = head + String(repeating: "p", count: padding) + #"","data":[["# + value + tail
        let path = try folder.write("answer.json", answer)
        let whole = Self.outcome { try events(answer) }
        let recorder = Recorder()
        let read = Self.outcome {
          try TableAnswerScanner(sink: recorder).scan(file: path)
          return recorder.events
        }
        #expect(whole.contains(reads), "\(whole)")
        #expect(read == whole, "\(value) cut \(before) bytes in")
      }
    }
  }
}
