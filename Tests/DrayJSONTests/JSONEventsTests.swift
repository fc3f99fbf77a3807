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
  let folder = TemporaryDirectory()

  /// `text` written to a file and parsed into `log`.
  func parse(_ text: String, into log: EventLog = EventLog()) throws {
    let path = try folder.write("document.json", text)
    try JSONEvents.parse(try FileChunks(path: path, growing: nil, chunkSize: JSONEvents.chunkSize), into: log)
  }

  func events(_ text: String) throws -> [String] {
    let log = EventLog()
    try parse(text, into: log)
    return log.events
  }

  /// How `body` failed (`stopped at byte 5`); nil when it did not fail.
  func failure(_ body: () throws -> Void) -> String? {
    do {
      try body()
      return nil
    } catch let failure as JSONEvents.Failure {
      switch failure {
      case .stopped(let byte): return "stopped at byte \(byte)"
      case .invalid(let reason, let byte): return "invalid at byte \(byte): \(reason)"
      case .truncated(let reason, let bytes): return "truncated after \(bytes) bytes: \(reason)"
      case .empty(let bytes): return "empty, \(bytes) bytes"
      case .unreadable(let error): return "unreadable: \(error)"
      }
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

  @Test func commentsAreRefused() throws {
    #expect(
      failure { _ = try events("[1, /* two */ 2]") }
        == "invalid at byte 4: '/*' starts a comment, and JSON has no comments: remove it")
  }

  /// The byte of a stop is where the token the handler refused starts.
  @Test func aStopNamesTheByteWhereTheHandlerSaidNo() throws {
    let log = EventLog(stopAt: 3)
    #expect(failure { try parse("[10, 20, 30]", into: log) } == "stopped at byte 5")
    #expect(log.events == ["[", "integer 10", "integer 20"])
  }

  @Test func invalidTruncatedAndEmptyInputsSayWhereTheyEnded() throws {
    #expect(failure { _ = try events("[1, x]") } == "invalid at byte 4: 'x' is not a JSON value")
    #expect(failure { _ = try events("[1, 2 ") } == "truncated after 6 bytes: the JSON ends before its value is complete")
    #expect(failure { _ = try events("") } == "empty, 0 bytes")
    #expect(failure { _ = try events(" \r\n\t") } == "empty, 4 bytes")
  }

  /// A file is read in 256 KiB chunks: values that straddle a chunk's end arrive whole, and
  /// offsets count from the start of the file.
  @Test func aFileIsReadInChunksWithOffsetsIntoTheWholeFile() throws {
    let item = "\"" + String(repeating: "a", count: 999) + "\""
    let count = 600  // about 600 KB: three chunks
    let log = EventLog()
    let bad = (item.utf8.count + 1) * count + 2
    #expect(
      failure { try parse("[" + Array(repeating: item, count: count).joined(separator: ",") + ", x]", into: log) }
        == "invalid at byte \(bad): 'x' is not a JSON value")
    #expect(log.events.count == count + 1)
    #expect(log.events.dropFirst().allSatisfy { $0 == item })
  }

  /// A document cut short does not end whole; one that is whole, or not JSON at all (for its
  /// reader to refuse), does.
  @Test func endsWholeIsFalseOnlyForADocumentCutShort() throws {
    for cut in ["[1, 2", #"{"a": "b"#, "tru", "[1.", #"{"a""#] {
      #expect(!JSONEvents.endsWhole(Array(cut.utf8)), "\(cut)")
      #expect(!JSONEvents.endsWhole(path: try folder.write("cut.json", cut)), "\(cut)")
    }
    for whole in ["[1, 2]", "true", "<html>", "[1, /* c */ 2]", " "] {
      #expect(JSONEvents.endsWhole(Array(whole.utf8)), "\(whole)")
      #expect(JSONEvents.endsWhole(path: try folder.write("whole.json", whole)), "\(whole)")
    }
    #expect(!JSONEvents.endsWhole(path: folder.path + "/none.json"))
  }
}
