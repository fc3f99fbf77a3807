import DrayJSON
import Testing

/// The JSON reader of table answers (`JSONLexer`, through `TableAnswerScanner`): what RFC
/// 8259 and RFC 3629 allow reaches the sink exactly, what they do not is refused with what
/// was wrong and its byte, and both come out the same wherever the chunks are cut.
@Suite struct JSONLexerTests {
  /// The events of `answer`, or its error, with the answer cut at each of `cuts`.
  func outcome(_ answer: [UInt8], cuts: [Int] = []) -> String {
    let recorder = TableAnswerScannerTests.Recorder()
    let scanner = TableAnswerScanner(sink: recorder)
    do {
      try answer.withUnsafeBytes { all in
        var start = 0
        for end in cuts + [all.count] where end > start {
          try scanner.feed(UnsafeRawBufferPointer(rebasing: all[start..<end]))
          start = end
        }
      }
      try scanner.finish()
      return recorder.events.joined(separator: " | ")
    } catch {
      return "error: \(error)"
    }
  }

  /// The outcome of `answer` fed whole, checked equal when it is cut in two at every byte,
  /// in three around every byte, and fed byte by byte.
  func checked(_ answer: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> String {
    let whole = outcome(answer)
    for cut in 1..<max(1, answer.count) {
      #expect(outcome(answer, cuts: [cut]) == whole, "cut at \(cut)", sourceLocation: sourceLocation)
      #expect(outcome(answer, cuts: [cut - 1, cut + 1]) == whole, "cut around \(cut)", sourceLocation: sourceLocation)
    }
    #expect(outcome(answer, cuts: Array(1..<max(1, answer.count))) == whole, "byte by byte", sourceLocation: sourceLocation)
    return whole
  }

  /// The value a row of one `value` hands over, or the answer's error.
  func value(_ value: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> String {
    let answer = Array(#"[{"name":"t","data":[["#.utf8) + value + Array("]]}]".utf8)
    let result = checked(answer, sourceLocation: sourceLocation)
    guard !result.hasPrefix("error: ") else { return result }
    let events = result.components(separatedBy: " | ")
    return events.count == 7 ? String(events[3].dropFirst(4)) : result
  }

  func value(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
    value(Array(text.utf8), sourceLocation: sourceLocation)
  }

  /// The error for a row of one `value`, whose JSON starts at byte 22 of the answer (bytes
  /// counted from 0); `byte` is counted in the value.
  func refusal(_ detail: String, at byte: Int) -> String {
    "error: table 't', row 1, column 1: the answer is not valid JSON (\(detail), at byte \(22 + byte))"
  }

  @Test func numbersReachTheSinkExactlyAsWritten() {
    for number in ["0", "-0", "7", "-12", "1.5", "-0.0e-0", "1E+2", "2e-3", "1e999", "123456789012345678901234567890", "0.000001"] {
      #expect(value(number) == "n:" + number)
    }
  }

  @Test func whatIsNotANumberIsRefusedAndNamed() {
    #expect(value("01") == refusal("'01' is not a JSON number", at: 0))
    #expect(value("1.") == refusal("'1.' is not a JSON number", at: 0))
    #expect(value("-") == refusal("'-' is not a JSON number", at: 0))
    #expect(value("1e") == refusal("'1e' is not a JSON number", at: 0))
    #expect(value("1e+") == refusal("'1e+' is not a JSON number", at: 0))
    #expect(value("1.5.3") == refusal("'1.5.3' is not a JSON number", at: 0))
    #expect(value("12x") == refusal("'12x' is not a JSON number", at: 0))
    #expect(value(".5") == refusal("'.5' is not a JSON value", at: 0))
    #expect(value("+1") == refusal("'+1' is not a JSON value", at: 0))
    #expect(value("tru") == refusal("'tru' is not a JSON value", at: 0))
    #expect(value("nulls") == refusal("'nulls' is not a JSON value", at: 0))
    #expect(value("True") == refusal("'True' is not a JSON value", at: 0))
    let nonNumber = "error: table 't', row 1, column 1: %@ is not a JSON number; the answer is refused (JSON has no NaN or Infinity)"
    for (token, name) in [("NaN", "NaN"), ("-Infinity", "-Infinity"), ("Infinity", "Infinity"), ("-NaN", "-NaN"), ("inf", "inf")] {
      #expect(value(token) == nonNumber.replacingOccurrences(of: "%@", with: name))
    }
  }

  @Test func literalsAndTheirNeighbours() {
    #expect(value("true") == "true")
    #expect(value("false") == "false")
    #expect(value("null") == "null")
    #expect(value(" \t\r\nnull\n") == "null")
  }

  @Test func everyEscapeIsUnescaped() {
    #expect(value(#""a\"b\\c\/d\be\ff\ng\rh\ti""#) == "s:a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti")
    #expect(value(#""\u0041\u00e9\u20AC\ud83d\ude00""#) == "s:Aé€😀")
    #expect(value(#""\u0000""#) == "s:\u{0}")
    #expect(value(#""\udbff\udfff""#) == "s:\u{10FFFF}")
    #expect(value(#""plain, then \n""#) == "s:plain, then \n")
    let long = String(repeating: "abcdefghij", count: 30)
    #expect(value("\"\(long)\\\"\(long)\"") == "s:\(long)\"\(long)")
    #expect(value(#""""#) == "s:")
  }

  @Test func whatIsNotAnEscapeIsRefused() {
    #expect(value(#""a\x""#) == refusal(#"'\x' is not a JSON escape (JSON has \" \\ \/ \b \f \n \r \t \uXXXX)"#, at: 2))
    #expect(value(#""\u12G4""#) == refusal(#"'\u12G' is not a JSON escape (\u takes four hexadecimal digits)"#, at: 1))
    #expect(value(#""\u12""#) == refusal(#"'\u12"' is not a JSON escape (\u takes four hexadecimal digits)"#, at: 1))
  }

  @Test func aLoneSurrogateEscapeIsRefusedNotReplaced() {
    let lone = "half of a UTF-16 surrogate pair without its other half (not a character)"
    #expect(value(#""\ud800""#) == refusal(#"a string holds \uD800, "# + lone, at: 1))
    #expect(value(#""x\udc00""#) == refusal(#"a string holds \uDC00, "# + lone, at: 2))
    #expect(value(#""\ud800x""#) == refusal(#"a string holds \uD800, "# + lone, at: 1))
    #expect(value(#""\ud800\n""#) == refusal(#"a string holds \uD800, "# + lone, at: 1))
    #expect(value(#""\ud800\u0041""#) == refusal(#"a string holds \uD800, "# + lone, at: 1))
    #expect(value(#""\ud800\ud800""#) == refusal(#"a string holds \uD800, "# + lone, at: 1))
  }

  @Test func utf8IsCheckedByRFC3629() {
    // Two, three and four bytes, at the edges of each range.
    for text in ["é", "ß", "\u{7FF}", "\u{800}", "€", "\u{D7FF}", "\u{E000}", "\u{FFFF}", "\u{10000}", "😀", "\u{10FFFF}"] {
      #expect(value("\"a\(text)b\"") == "s:a\(text)b")
    }
    let notUTF8 = "a string holds bytes that are not UTF-8"
    for bytes: [UInt8] in [
      [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xED, 0xBF, 0xBF],
      [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0x80],
      [0xBF], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xC3, 0x41], [0xE2, 0x28, 0xA1],
    ] {
      #expect(value([0x22, 0x61] + bytes + [0x22]) == refusal(notUTF8, at: 2), "\(bytes)")
      // The same after an escape, where the string is unescaped as it is read.
      #expect(value([0x22, 0x5C, 0x6E] + bytes + [0x22]) == refusal(notUTF8, at: 3), "\(bytes)")
    }
  }

  @Test func aControlCharacterMustBeEscaped() {
    #expect(
      value([0x22, 0x61, 0x0A, 0x22])
        == refusal(#"a string holds the control character 0x0A unescaped (JSON needs it escaped, as \u000A)"#, at: 2))
    #expect(
      value([0x22, 0x00, 0x22])
        == refusal(#"a string holds the control character 0x00 unescaped (JSON needs it escaped, as \u0000)"#, at: 1))
    #expect(
      value([0x22, 0x5C, 0x74, 0x1F, 0x22])
        == refusal(#"a string holds the control character 0x1F unescaped (JSON needs it escaped, as \u001F)"#, at: 3))
    #expect(value([0x22, 0x7F, 0x22]) == "s:\u{7F}")
  }

  @Test func theGrammarIsChecked() {
    let prefix = #"[{"name":"t","data":[["#
    func error(_ detail: String, at byte: Int, row: Int? = 1, column: Int? = nil) -> String {
      var place = "table 't'"
      if let row { place += ", row \(row)" }
      if let column { place += ", column \(column)" }
      return "error: \(place): the answer is not valid JSON (\(detail), at byte \(byte))"
    }
    #expect(checked(Array((prefix + "1,]]}]").utf8)) == error("expected a value, found ']'", at: 24, column: 2))
    #expect(checked(Array((prefix + "1 2]]}]").utf8)) == error("expected ',' or ']' after an item of a list, found '2'", at: 24, column: 2))
    #expect(
      checked(Array((prefix + "1]]}]]").utf8))
        == "error: the answer is not valid JSON (more text after the end of the JSON value: ']', at byte 27)")
    #expect(
      checked(Array((prefix + "1]]}] x").utf8))
        == "error: the answer is not valid JSON (more text after the end of the JSON value: 'x', at byte 28)")
    #expect(checked(Array((prefix + #"{"a" 1}]]}]"#).utf8)) == error("expected ':' after a key, found '1'", at: 27, column: 1))
    #expect(checked(Array((prefix + #"{a: 1}]]}]"#).utf8)) == error("expected a key (a string) in an object, found 'a'", at: 23, column: 1))
    #expect(
      checked(Array((prefix + #"{"a": 1,}]]}]"#).utf8)) == error("expected a key (a string) in an object, found '}'", at: 30, column: 1))
    #expect(
      checked(Array((prefix + #"{"a": 1 "b": 2}]]}]"#).utf8))
        == error("expected ',' or '}' after a member of an object, found '\"'", at: 30, column: 1))
    #expect(
      checked(Array(#"[{"name":"t",,"data":[]}]"#.utf8))
        == "error: table 't': the answer is not valid JSON (expected a key (a string) in an object, found ',', at byte 13)")
    #expect(
      checked(Array((prefix + "1]]}").utf8)) == "error: the answer ends before its JSON is complete (26 bytes); the download was cut short")
    #expect(
      checked(Array((prefix + #""abc"#).utf8))
        == "error: table 't', row 1, column 1: the answer ends before its JSON is complete (26 bytes); the download was cut short")
    #expect(
      checked(Array((prefix + "12").utf8))
        == "error: table 't', row 1, column 2: the answer ends before its JSON is complete (24 bytes); the download was cut short")
    #expect(
      checked(Array("// note\n[]".utf8))
        == "error: the answer is not valid JSON ('//' starts a comment, and JSON has no comments: remove it, at byte 0)")
    #expect(
      checked(Array(#"[{"name": "t", /* rows */ "data": []}]"#.utf8))
        == "error: table 't': the answer is not valid JSON ('/*' starts a comment, and JSON has no comments: remove it, at byte 15)")
  }

  @Test func nestedValuesKeepTheirTextCompact() {
    #expect(value(#"[ 1 , { "k" : "\u00e9\"" , "e" : [ ] } , 2.50 ]"#) == #"j:[1,{"k":"é\"","e":[]},2.50]"#)
    #expect(value(#"{"a\nb": {"c": [true, false, null]}}"#) == #"j:{"a\nb":{"c":[true,false,null]}}"#)
  }

  @Test func nestingIsBoundedAt512Levels() {
    // The answer's list, the table, `data` and the row are four levels.
    let fits = String(repeating: "[", count: 508) + String(repeating: "]", count: 508)
    #expect(value(fits) == "j:" + fits)
    let deep = String(repeating: "[", count: 509) + String(repeating: "]", count: 509)
    #expect(
      outcome(Array(#"[{"name":"t","data":[["#.utf8) + Array(deep.utf8) + Array("]]}]".utf8))
        == "error: table 't', row 1, column 1: the answer is nested deeper than 512 levels at byte 530")
  }

  /// A wrong token that is not printable text is shown by its bytes, never as replacement
  /// characters, invisible characters or raw control bytes, and named when its bytes start
  /// as a known kind of file does (RFC 8259 §8.1 for the byte order marks).
  @Test func whatIsNotTextIsShownByItsBytes() {
    let answer = Array("[]".utf8)
    func start(_ detail: String) -> String { "error: the answer is not valid JSON (\(detail), at byte 0)" }
    #expect(
      checked([0xEF, 0xBB, 0xBF] + answer)
        == start("the bytes EF BB BF are not a JSON value: a UTF-8 byte order mark, which JSON text does not start with (RFC 8259 §8.1)"))
    #expect(
      checked([0xFE, 0xFF, 0, 0x5B, 0, 0x5D])
        == start("the bytes FE FF 00 are not a JSON value: a UTF-16 byte order mark; JSON between systems is UTF-8 (RFC 8259 §8.1)"))
    #expect(
      checked([0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03])
        == start(
          "the bytes 1F 8B 08 00 00 00 00 00 … are not a JSON value: gzip-compressed data the server did not declare (Content-Encoding)"))
    #expect(checked([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A]) == start("the bytes 89 50 4E 47 are not a JSON value: a PNG image"))
    // UTF-16 text: NUL bytes between its ASCII characters.
    #expect(
      checked([0x5B, 0, 0x5D, 0])
        == "error: the answer is not valid JSON (the byte 00 is not a JSON value: a NUL byte; text with NUL bytes between its characters is UTF-16 or UTF-32, and JSON between systems is UTF-8 (RFC 8259 §8.1), at byte 1)"
    )
    // The signatures of a file only count at its start.
    #expect(value([0xEF, 0xBB, 0xBF]) == refusal("the bytes EF BB BF are not a JSON value", at: 0))
    #expect(value(Array("\u{200B}1".utf8)) == refusal("the bytes E2 80 8B 31 are not a JSON value", at: 0))
    #expect(value([0x31, 0xC3]) == refusal("the bytes 31 C3 are not a JSON number", at: 0))
    #expect(value([0x74, 0x72, 0x1B, 0x5B, 0x32, 0x4A]) == refusal("the bytes 74 72 1B are not a JSON value", at: 0))
    #expect(value("café") == refusal("'café' is not a JSON value", at: 0))
    // A structural error quotes printable ASCII only.
    #expect(
      checked(Array("[] x\u{1}\u{1B}[2J".utf8))
        == "error: the answer is not valid JSON (more text after the end of the JSON value: 'x', at byte 3)")
  }
}
