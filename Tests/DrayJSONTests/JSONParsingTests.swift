import DrayJSON
import DrayModel
import Testing

@Suite struct JSONParsingTests {
  func message(_ text: String) -> String? {
    do {
      _ = try JSONValue(parsing: text)
      return nil
    } catch {
      return error.message
    }
  }

  @Test func aDocumentKeepsKeyOrderExactNumbersAndEveryCharacter() throws {
    let value = try JSONValue(parsing: #"{"b": 1, "a": [12345678901234567890, 0.10, "t\u0000u"], "c": null}"#)
    #expect(value["b"] == .integer(1))
    #expect(value.objectValue?.map(\.key) == ["b", "a", "c"])
    #expect(value["a"] == .array([.number("12345678901234567890"), .number("0.10"), .string("t\u{0}u")]))
    #expect(value["c"] == .null)
    #expect(try JSONValue(parsing: Array("[true]".utf8)) == .array([.bool(true)]))
  }

  /// The lexer's message, as a table answer's: what is wrong, what was found, and the byte
  /// it is at (from 0), on one line.
  @Test func anErrorSaysWhatIsWrongAndTheByteItIsAt() throws {
    #expect(message("[1, 2,, 3]") == "expected a value, found ',', at byte 6")
    #expect(message("{region: EU}") == "expected a key (a string) in an object, found 'region', at byte 1")
    #expect(message(#"{"a": 1 "b": 2}"#) == #"expected ',' or '}' after a member of an object, found '"', at byte 8"#)
    #expect(message("[1") == "the JSON ends before its value is complete, after 2 bytes")
    #expect(message(#"{"a": NaN}"#) == "NaN is not a JSON number (JSON has no NaN or Infinity), at byte 6")
    #expect(
      message(#"["\ud800"]"#)
        == "a string holds \\uD800, half of a UTF-16 surrogate pair without its other half (not a character), at byte 2")
    #expect(message("") == "empty")
    #expect(message(" \n") == "only whitespace (2 bytes)")
    #expect(message("[1, 2]") == nil)
  }

  /// JSON has no comments (RFC 8259), and none is read: wherever one stands, the message says
  /// that it is a comment, where, and to remove it. (yajl read documents with comments.)
  @Test func aCommentIsRefusedWhereverItStandsSayingSo() throws {
    let remove = "starts a comment, and JSON has no comments: remove it"
    #expect(message("// the region\n{\"region\": \"EU\"}") == "'//' \(remove), at byte 0")
    #expect(message(#"{/* first */"a": 1}"#) == "'/*' \(remove), at byte 1")
    #expect(message(#"{"a": /* one */ 1}"#) == "'/*' \(remove), at byte 6")
    #expect(message(#"{"a" /* key */: 1}"#) == "'/*' \(remove), at byte 5")
    #expect(message(#"{"a": 1 // one"#) == "'//' \(remove), at byte 8")
    #expect(message("[1, 2] /* done */") == "'/*' \(remove), at byte 7")
    #expect(message(#"["// is text", "/* too */"]"#) == nil)
    // A slash alone is no comment: said as what it is.
    #expect(message("[1 / 2]") == "expected ',' or ']' after an item of a list, found '/', at byte 3")
  }

  @Test func nestingIsBoundedAt512LevelsWithThePlaceOfTheFirstTooDeep() throws {
    let deepest = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
    _ = try JSONValue(parsing: deepest)
    let tooDeep = String(repeating: "[", count: JSONValue.maxDepth + 1) + String(repeating: "]", count: JSONValue.maxDepth + 1)
    #expect(throws: JSONParseError.self) { try JSONValue(parsing: tooDeep) }
    do {
      _ = try JSONValue(parsing: tooDeep)
    } catch {
      #expect(error.isTooDeep)
      #expect(error.message == "nested deeper than 512 levels at byte 512")
      #expect(error.description == "invalid JSON: nested deeper than 512 levels at byte 512")
    }
  }
}
