public import DrayModel
internal import Foundation

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
    let builder = JSONTreeBuilder()
    do throws(JSONEvents.Failure) {
      try JSONEvents.parse(Data(text.utf8), into: builder, allowComments: true, verboseErrors: true)
    } catch .stopped(let byte) where builder.tooDeep {
      throw JSONParseError(message: JSONValue.nestingMessage(at: byte), isTooDeep: true)
    } catch .invalid(let reason, _), .truncated(let reason, _) {
      throw JSONParseError(message: reason.isEmpty ? "not valid JSON" : reason)
    } catch .empty(let bytes) {
      throw JSONParseError(message: bytes == 0 ? "empty" : "only whitespace (\(bytes) bytes)")
    } catch .outOfMemory {
      throw JSONParseError(message: "out of memory starting the JSON parser")
    } catch {
      throw JSONParseError(message: "not valid JSON")
    }
    guard let root = builder.root else { throw JSONParseError(message: "not valid JSON") }
    self = root
  }

  /// Parses JSON bytes.
  public init(parsing bytes: [UInt8]) throws(JSONParseError) {
    try self.init(parsing: String(decoding: bytes, as: UTF8.self))
  }
}

/// Builds a `JSONValue` from yajl's events: the open containers, innermost last. Each is a
/// class, so that appending to it never copies what it holds so far. (Internal, not
/// private: the table answer scanner's differential tests read their reference with it.)
final class JSONTreeBuilder: JSONEventHandler {
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

  func scalar(_ value: JSONValue) -> Bool {
    guard let container = open.last else {
      root = value
      return true
    }
    if container.isArray {
      container.items.append(value)
    } else {
      container.pairs.append((container.key, value))
    }
    return true
  }

  func start(isArray: Bool) -> Bool {
    guard open.count < JSONValue.maxDepth else {
      tooDeep = true
      return false
    }
    open.append(Container(isArray: isArray))
    return true
  }

  func key(_ key: String) -> Bool {
    open.last?.key = key
    return true
  }

  func end() -> Bool {
    guard let container = open.popLast() else { return false }
    return scalar(container.isArray ? .array(container.items) : .object(container.pairs))
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
