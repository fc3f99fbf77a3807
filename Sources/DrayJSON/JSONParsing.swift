internal import CYAJL
public import DrayModel

extension JSONValue {
  /// Parses a whole JSON document held in memory, with yajl's tree parser.
  ///
  /// Integers that fit in Int64 become `.integer`; every other number keeps its exact text
  /// as `.number`. Object keys keep their order. Meant for small documents (tokens, schemes,
  /// error bodies); table answers stream through the store's loader instead.
  /// - Throws: `JSONParseError` with yajl's message.
  public init(parsing text: String) throws(JSONParseError) {
    var message = [CChar](repeating: 0, count: 512)
    let tree = text.withCString { yajl_tree_parse($0, &message, message.count) }
    guard let tree else {
      let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      throw JSONParseError(message: reason.isEmpty ? "not valid JSON" : reason.trimmingSpaces)
    }
    defer { yajl_tree_free(tree) }
    self = JSONValue.convert(tree)
  }

  /// Parses JSON bytes.
  public init(parsing bytes: [UInt8]) throws(JSONParseError) {
    try self.init(parsing: String(decoding: bytes, as: UTF8.self))
  }

  private static func convert(_ value: yajl_val) -> JSONValue {
    let node = value.pointee
    switch node.type {
    case yajl_t_string:
      return .string(String(cString: node.u.string))
    case yajl_t_number:
      let raw = String(cString: node.u.number.r)
      if node.u.number.flags & 0x01 != 0, let i = Int64(raw) { return .integer(i) }
      return .number(raw)
    case yajl_t_object:
      let object = node.u.object
      var pairs: [(key: String, value: JSONValue)] = []
      pairs.reserveCapacity(object.len)
      for i in 0..<object.len {
        pairs.append((String(cString: object.keys[i]!), convert(object.values[i]!)))
      }
      return .object(pairs)
    case yajl_t_array:
      let array = node.u.array
      return .array((0..<array.len).map { convert(array.values[$0]!) })
    case yajl_t_true: return .bool(true)
    case yajl_t_false: return .bool(false)
    default: return .null
    }
  }
}

/// A JSON document yajl could not parse.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
  /// yajl's message, naming the offending position and text.
  public var message: String
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
