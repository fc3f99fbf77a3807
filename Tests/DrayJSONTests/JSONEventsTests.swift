import DrayJSON
import DrayModel
import DrayTestSupport
import Foundation
import Testing

/// Records every event as text, and stops at the event numbered `stopAt` (from 1) if given.
final class EventLog: JSONEventHandler {
  var events: [String] = []
  let stopAt: Int?

  init(stopAt: Int? = nil) { self.stopAt = stopAt }

  private func note(_ event: String) -> Bool {
    events.append(event)
    return events.count != stopAt
  }

  func scalar(_ value: JSONValue) -> Bool {
    switch value {
    case .integer(let i): note("integer \(i)")
    case .number(let text): note("number \(text)")
    default: note(value.json)
    }
  }
  func start(isArray: Bool) -> Bool { note(isArray ? "[" : "{") }
  func key(_ key: String) -> Bool { note("key \(key.debugDescription)") }
  func end() -> Bool { note("end") }
}

@Suite struct JSONEventsTests {
  func events(_ text: String, allowComments: Bool = false) throws(JSONEvents.Failure) -> [String] {
    let log = EventLog()
    try JSONEvents.parse(Data(text.utf8), into: log, allowComments: allowComments)
    return log.events
  }

  /// How `body` failed, as a `JSONEvents.Failure` describes itself (`stopped(byte: 5)`); nil
  /// when it did not fail.
  func failure(_ body: () throws -> Void) -> String? {
    do {
      try body()
      return nil
    } catch let failure as JSONEvents.Failure {
      return "\(failure)"
    } catch {
      return "not a JSONEvents.Failure: \(error)"
    }
  }

  @Test func eventsComeInDocumentOrderWithValuesDecoded() throws {
    #expect(
      try events(#"{"a": [1, -9223372036854775808, 9223372036854775808, 2.50, 1e3], "nul\u0000key": "x\u0000y", "z": [null, true, {}]}"#)
        == [
          "{", #"key "a""#, "[", "integer 1", "integer -9223372036854775808", "number 9223372036854775808", "number 2.50",
          "number 1e3", "end", #"key "nul\0key""#, #""x\u0000y""#, #"key "z""#, "[", "null", "true", "{", "end", "end", "end",
        ])
  }

  @Test func commentsAreRefusedUnlessAllowed() throws {
    #expect(try events("[1, /* two */ 2]", allowComments: true) == ["[", "integer 1", "integer 2", "end"])
    #expect(failure { _ = try events("[1, /* two */ 2]") } != nil)
  }

  /// Offsets are yajl's bytes consumed: just past the value (or bad byte) they name.
  @Test func aStopNamesTheByteWhereTheHandlerSaidNo() throws {
    let log = EventLog(stopAt: 3)
    #expect(failure { try JSONEvents.parse(Data("[10, 20, 30]".utf8), into: log) } == "stopped(byte: 6)")
    #expect(log.events == ["[", "integer 10", "integer 20"])
  }

  @Test func invalidTruncatedAndEmptyInputsSayWhereTheyEnded() throws {
    #expect(failure { _ = try events("[1, x]") } == #"invalid(reason: "lexical error: invalid char in json text.", byte: 5)"#)
    #expect(failure { _ = try events("[1, 2 ") } == #"truncated(reason: "parse error: premature EOF", bytes: 6)"#)
    #expect(failure { _ = try events("") } == "empty(bytes: 0)")
    #expect(failure { _ = try events(" \r\n\t") } == "empty(bytes: 4)")
  }

  /// A file is read in 256 KiB chunks: values that straddle a chunk's end arrive whole, and
  /// offsets count from the start of the file.
  @Test func aFileIsReadInChunksWithOffsetsIntoTheWholeFile() throws {
    let folder = TemporaryDirectory()
    let item = "\"" + String(repeating: "a", count: 999) + "\""
    let count = 600  // about 600 KB: three chunks
    let path = try folder.write("big.json", "[" + Array(repeating: item, count: count).joined(separator: ",") + ", x]")
    let log = EventLog()
    let handle = try FileChunks(path: path, growing: nil, chunkSize: JSONEvents.chunkSize)
    // yajl counts the bytes it consumed: the offset just past the first bad byte.
    let bad = (item.utf8.count + 1) * count + 3
    #expect(
      failure { try JSONEvents.parse(handle, into: log) } == #"invalid(reason: "lexical error: invalid char in json text.", byte: \#(bad))"#
    )
    #expect(log.events.count == count + 1)
    #expect(log.events.dropFirst().allSatisfy { $0 == item })
  }
}
