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
    let value = try JSONValue(parsing: #"{"b": 1, "a": [12345678901234567890, 0.10, "t\u0000u"], "c": null} // done"#)
    #expect(value["b"] == .integer(1))
    #expect(value.objectValue?.map(\.key) == ["b", "a", "c"])
    #expect(value["a"] == .array([.number("12345678901234567890"), .number("0.10"), .string("t\u{0}u")]))
    #expect(value["c"] == .null)
    #expect(try JSONValue(parsing: Array("[true]".utf8)) == .array([.bool(true)]))
  }

  /// yajl's verbose message: what is wrong, the text around it, and a caret line.
  @Test func anErrorQuotesWhereTheTextWentWrong() throws {
    let lines = try #require(message("[1, 2,, 3]")).split(separator: "\n").map { String($0.drop { $0 == " " }) }
    #expect(lines == ["parse error: unallowed token at this point in JSON text", "[1, 2,, 3]", "(right here) ------^"])
    let truncated = try #require(message("[1")).split(separator: "\n").map { String($0.drop { $0 == " " }) }
    #expect(truncated == ["parse error: premature EOF", "[1", "(right here) ------^"])
    #expect(message("") == "empty")
    #expect(message(" \n") == "only whitespace (2 bytes)")
    #expect(message("[1, 2]") == nil)
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
