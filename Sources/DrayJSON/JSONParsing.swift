public import DrayModel

extension JSONValue {
  /// Parses a whole JSON document held in memory, with dray's one JSON reader (`JSONLexer`:
  /// RFC 8259 and RFC 3629 checked strictly, as every table answer is).
  ///
  /// Integers that fit in Int64 become `.integer`; every other number keeps its exact text
  /// as `.number`. Object keys keep their order. Strings and keys keep every character,
  /// `\u0000` included. JSON has no comments, and none is read (`//` or `/*` is refused,
  /// saying so). Meant for small documents (tokens, schemes, `--params`, error bodies, reports);
  /// table answers stream through the store's loader instead. Arrays and objects nested deeper
  /// than `JSONValue.maxDepth` (512) levels are refused, so that no value too deep to write or
  /// free without overflowing the stack is ever built.
  /// - Throws: `JSONParseError`: what is wrong and the byte it is at, counted from 0 in the
  ///   UTF-8 text (`expected ',' or ']' after an item of a list, found 'x', at byte 4`;
  ///   `nested deeper than 512 levels at byte N`).
  public init(parsing text: String) throws(JSONParseError) {
    var text = text
    self = try text.withUTF8 { Self.parse(UnsafeRawBufferPointer($0)) }.get()
  }

  /// Parses JSON bytes, as `init(parsing:)` parses text.
  public init(parsing bytes: [UInt8]) throws(JSONParseError) {
    self = try bytes.withUnsafeBytes { Self.parse($0) }.get()
  }

  private static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<JSONValue, JSONParseError> {
    let lexer = JSONLexer(scratchCapacity: 256)
    var builder = JSONTreeBuilder()
    do {
      try lexer.feed(bytes, &builder)
      try lexer.finish(&builder)
    } catch let failure as JSONLexer.Failure {
      return .failure(JSONParseError(failure))
    } catch {
      return .failure(JSONParseError(message: "not valid JSON"))
    }
    guard let root = builder.root else { return .failure(JSONParseError(message: "not valid JSON")) }
    return .success(root)
  }

  /// A number as written: an integer that fits in Int64 as `.integer` (`-0` as 0), any other
  /// as its exact text (`.number`).
  init(number text: UnsafeBufferPointer<UInt8>) {
    self = Self.integer(text).map { .integer($0) } ?? .number(String(decoding: text, as: UTF8.self))
  }

  /// The integer `text` writes when it is one (digits, after an optional `-`) that fits in
  /// Int64; nil otherwise.
  private static func integer(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
    let negative = text.first == UInt8(ascii: "-")
    let digits = text.dropFirst(negative ? 1 : 0)
    guard !digits.isEmpty, digits.count <= 19 else { return nil }
    var value: Int64 = 0
    for c in digits {
      let digit = c &- UInt8(ascii: "0")
      guard digit < 10 else { return nil }
      let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
      let (next, carry) =
        negative ? shifted.subtractingReportingOverflow(Int64(digit)) : shifted.addingReportingOverflow(Int64(digit))
      guard !overflow && !carry else { return nil }
      value = next
    }
    return value
  }
}

/// Builds a `JSONValue` from the lexer's events: the open containers, innermost last, each
/// appended to in place.
struct JSONTreeBuilder: JSONLexerEvents {
  private struct Container {
    let isArray: Bool
    var items: [JSONValue] = []
    var pairs: [(key: String, value: JSONValue)] = []
    var key = ""
  }

  private var open: [Container] = []
  /// The whole value, once its last token came.
  private(set) var root: JSONValue?

  private mutating func add(_ value: JSONValue) {
    guard !open.isEmpty else {
      root = value
      return
    }
    let last = open.count - 1
    if open[last].isArray {
      open[last].items.append(value)
    } else {
      open[last].pairs.append((open[last].key, value))
    }
  }

  mutating func null() { add(.null) }
  mutating func bool(_ flag: Bool) { add(.bool(flag)) }
  mutating func number(_ text: UnsafeBufferPointer<UInt8>) { add(JSONValue(number: text)) }
  mutating func string(_ text: UnsafeBufferPointer<UInt8>) { add(.string(String(decoding: text, as: UTF8.self))) }
  mutating func key(_ text: UnsafeBufferPointer<UInt8>) { open[open.count - 1].key = String(decoding: text, as: UTF8.self) }
  mutating func startArray() { open.append(Container(isArray: true)) }
  mutating func startObject() { open.append(Container(isArray: false)) }
  mutating func endArray() { end() }
  mutating func endObject() { end() }

  private mutating func end() {
    let container = open.removeLast()
    add(container.isArray ? .array(container.items) : .object(container.pairs))
  }
}

/// A JSON document dray could not read: what was wrong and where.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
  /// What is wrong and the byte it is at (counted from 0 in the UTF-8 text); `empty`, or
  /// `only whitespace (N bytes)`, for a document with no value.
  public var message: String
  /// True when the document is nested deeper than `JSONValue.maxDepth`; `message` then
  /// quotes none of the text.
  public var isTooDeep = false
  public var description: String { "invalid JSON: \(message)" }

  init(message: String, isTooDeep: Bool = false) {
    self.message = message
    self.isTooDeep = isTooDeep
  }

  /// The lexer's failure in a document's words.
  init(_ failure: JSONLexer.Failure) {
    switch failure {
    case .invalid(let detail, let byte): self.init(message: "\(detail), at byte \(byte)")
    case .nonNumber(let token, let byte): self.init(message: "\(token) is not a JSON number (JSON has no NaN or Infinity), at byte \(byte)")
    case .tooDeep(let byte): self.init(message: JSONValue.nestingMessage(at: byte), isTooDeep: true)
    case .truncated(let bytes): self.init(message: "the JSON ends before its value is complete, after \(bytes) bytes")
    case .empty(let bytes): self.init(message: bytes == 0 ? "empty" : "only whitespace (\(bytes) bytes)")
    case .stopped: self.init(message: "not valid JSON")
    }
  }
}

extension JSONValue {
  /// The member `key` of an object; nil for other values or a missing key.
  public subscript(key: String) -> JSONValue? {
    guard case .object(let pairs) = self else { return nil }
    return pairs.first { $0.key == key }?.value
  }

  public var stringValue: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  public var intValue: Int64? {
    if case .integer(let i) = self { return i }
    return nil
  }

  public var arrayValue: [JSONValue]? {
    if case .array(let a) = self { return a }
    return nil
  }

  public var objectValue: [(key: String, value: JSONValue)]? {
    if case .object(let o) = self { return o }
    return nil
  }
}
