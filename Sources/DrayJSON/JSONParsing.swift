internal import CYAJL
public import DrayModel

extension JSONValue {
  /// Parses a whole JSON document held in memory, with yajl's event parser.
  ///
  /// Integers that fit in Int64 become `.integer`; every other number keeps its exact text
  /// as `.number`. Object keys keep their order. Strings and keys keep every character,
  /// `\u0000` included (yajl's tree parser hands them over as C strings, which a NUL would
  /// cut short: a column `"nam\u0000e"` would read as `nam`). Comments are allowed, as in
  /// yajl's tree parser. Meant for small documents (tokens, schemes, error bodies); table
  /// answers stream through the store's loader instead. Arrays and objects nested deeper than
  /// `JSONValue.maxDepth` (512) levels are refused, so that no value too deep to write or free
  /// without overflowing the stack is ever built.
  /// - Throws: `JSONParseError` with yajl's message, or "nested deeper than 512 levels at
  ///   byte N" (N counted from 0 in the UTF-8 text).
  public init(parsing text: String) throws(JSONParseError) {
    let bytes = Array(text.utf8)
    let builder = JSONTreeBuilder()
    let context = Unmanaged.passUnretained(builder).toOpaque()
    var callbacks = yajl_callbacks(
      yajl_null: { ctx in JSONTreeBuilder.from(ctx).add(.null) },
      yajl_boolean: { ctx, value in JSONTreeBuilder.from(ctx).add(.bool(value != 0)) },
      yajl_integer: nil,
      yajl_double: nil,
      yajl_number: { ctx, text, length in
        let raw = String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
        let isInteger = !raw.contains { $0 == "." || $0 == "e" || $0 == "E" }
        return JSONTreeBuilder.from(ctx).add(isInteger ? Int64(raw).map { .integer($0) } ?? .number(raw) : .number(raw))
      },
      yajl_string: { ctx, text, length in
        JSONTreeBuilder.from(ctx).add(.string(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)))
      },
      yajl_start_map: { ctx in JSONTreeBuilder.from(ctx).start(isArray: false) },
      yajl_map_key: { ctx, text, length in
        JSONTreeBuilder.from(ctx).key(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self))
      },
      yajl_end_map: { ctx in JSONTreeBuilder.from(ctx).end() },
      yajl_start_array: { ctx in JSONTreeBuilder.from(ctx).start(isArray: true) },
      yajl_end_array: { ctx in JSONTreeBuilder.from(ctx).end() })
    guard let parser = yajl_alloc(&callbacks, nil, context) else {
      throw JSONParseError(message: "out of memory starting the JSON parser")
    }
    defer { yajl_free(parser) }
    _ = dray_yajl_allow_comments(parser)
    var status = bytes.withUnsafeBufferPointer { yajl_parse(parser, $0.baseAddress, $0.count) }
    if status == yajl_status_ok { status = yajl_complete_parse(parser) }
    if status == yajl_status_client_canceled && builder.tooDeep {
      throw JSONParseError(message: JSONValue.nestingMessage(at: max(0, Int(yajl_get_bytes_consumed(parser)) - 1)), isTooDeep: true)
    }
    guard status == yajl_status_ok, let root = builder.root else {
      let reason = bytes.withUnsafeBufferPointer { buffer -> String in
        guard let message = yajl_get_error(parser, 1, buffer.baseAddress, buffer.count) else { return "" }
        defer { yajl_free_error(parser, message) }
        return String(cString: message)
      }
      throw JSONParseError(message: reason.trimmingSpaces.isEmpty ? "not valid JSON" : reason.trimmingSpaces)
    }
    self = root
  }

  /// Parses JSON bytes.
  public init(parsing bytes: [UInt8]) throws(JSONParseError) {
    try self.init(parsing: String(decoding: bytes, as: UTF8.self))
  }
}

/// Builds a `JSONValue` from yajl's events: the open containers, innermost last. Each is a
/// class, so that appending to it never copies what it holds so far.
private final class JSONTreeBuilder {
  final class Container {
    let isArray: Bool
    var items: [JSONValue] = []
    var pairs: [(key: String, value: JSONValue)] = []
    var key = ""
    init(isArray: Bool) { self.isArray = isArray }
  }

  var open: [Container] = []
  var root: JSONValue?
  /// Set when a container would open past `JSONValue.maxDepth`; the parse stops there.
  var tooDeep = false

  static func from(_ ctx: UnsafeMutableRawPointer?) -> JSONTreeBuilder {
    Unmanaged<JSONTreeBuilder>.fromOpaque(ctx!).takeUnretainedValue()
  }

  func add(_ value: JSONValue) -> Int32 {
    guard let container = open.last else {
      root = value
      return 1
    }
    if container.isArray {
      container.items.append(value)
    } else {
      container.pairs.append((container.key, value))
    }
    return 1
  }

  func start(isArray: Bool) -> Int32 {
    guard open.count < JSONValue.maxDepth else {
      tooDeep = true
      return 0
    }
    open.append(Container(isArray: isArray))
    return 1
  }

  func key(_ key: String) -> Int32 {
    open.last?.key = key
    return 1
  }

  func end() -> Int32 {
    guard let container = open.popLast() else { return 0 }
    return add(container.isArray ? .array(container.items) : .object(container.pairs))
  }
}

/// A JSON document yajl could not parse.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
  /// yajl's message, naming the offending position and text.
  public var message: String
  /// True when the document is nested deeper than `JSONValue.maxDepth`; `message` then
  /// quotes none of the text.
  public var isTooDeep = false
  public var description: String { "invalid JSON: \(message)" }
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

extension String {
  var trimmingSpaces: String {
    var s = Substring(self)
    while let f = s.first, f.isWhitespace { s.removeFirst() }
    while let l = s.last, l.isWhitespace { s.removeLast() }
    return String(s)
  }
}
