/// A JSON value, as manifests give request parameters and bodies.
///
/// Object keys keep the order in which they were written; `canonicalJSON` sorts them.
public enum JSONValue: Sendable, Hashable {
  case null
  case bool(Bool)
  case integer(Int64)
  /// A number that is not an int64, kept as its JSON text so that no digit is lost.
  case number(String)
  case string(String)
  case array([JSONValue])
  case object([(key: String, value: JSONValue)])

  public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): true
    case (.bool(let a), .bool(let b)): a == b
    case (.integer(let a), .integer(let b)): a == b
    case (.number(let a), .number(let b)): a == b
    case (.string(let a), .string(let b)): a == b
    case (.array(let a), .array(let b)): a == b
    case (.object(let a), .object(let b)):
      a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    default: false
    }
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(canonicalJSON)
  }

  /// The deepest nesting of arrays and objects dray accepts in JSON from outside (server
  /// answers, `--params`, template parameters): 512 levels, the root container counting as
  /// one.
  ///
  /// Writing, comparing and freeing a `JSONValue` recurse once per level, and each level takes
  /// a few hundred bytes of stack; 512 levels stay far inside the smallest thread stack dray
  /// runs on (512 KiB on secondary threads), while a document 10,000 levels deep would
  /// overflow it and crash. Real answers nest a handful of levels. Every parser that builds a
  /// `JSONValue` refuses deeper documents with `nestingMessage(at:)`.
  public static let maxDepth = 512

  /// The message for a document nested deeper than `maxDepth`, at byte offset `byte` (from 0)
  /// of the text: "nested deeper than 512 levels at byte N".
  public static func nestingMessage(at byte: Int) -> String {
    "nested deeper than \(maxDepth) levels at byte \(byte)"
  }

  /// True for `{}`.
  public var isEmptyObject: Bool {
    if case .object(let pairs) = self { return pairs.isEmpty }
    return false
  }

  /// Compact JSON with object keys in the order written.
  public var json: String {
    var out = ""
    write(to: &out, sortKeys: false)
    return out
  }

  /// Canonical JSON: object keys sorted by their UTF-8 bytes, no spaces, strings escaped as
  /// RFC 8785 does (only `"`, `\` and control characters; other characters as UTF-8).
  ///
  /// This is the form hashed into physical table names (platform-api.md §7).
  public var canonicalJSON: String {
    var out = ""
    write(to: &out, sortKeys: true)
    return out
  }

  private func write(to out: inout String, sortKeys: Bool) {
    switch self {
    case .null: out += "null"
    case .bool(let b): out += b ? "true" : "false"
    case .integer(let i): out += String(i)
    case .number(let text): out += text
    case .string(let s): JSONValue.writeString(s, to: &out)
    case .array(let items):
      out += "["
      for (i, item) in items.enumerated() {
        if i > 0 { out += "," }
        item.write(to: &out, sortKeys: sortKeys)
      }
      out += "]"
    case .object(let pairs):
      let ordered = sortKeys ? pairs.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } : pairs
      out += "{"
      for (i, pair) in ordered.enumerated() {
        if i > 0 { out += "," }
        JSONValue.writeString(pair.key, to: &out)
        out += ":"
        pair.value.write(to: &out, sortKeys: sortKeys)
      }
      out += "}"
    }
  }

  /// Appends `s` as a JSON string literal.
  public static func writeString(_ s: String, to out: inout String) {
    out += "\""
    for scalar in s.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case "\u{08}": out += "\\b"
      case "\u{0C}": out += "\\f"
      default:
        if scalar.value < 0x20 {
          let hex = String(scalar.value, radix: 16)
          out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    out += "\""
  }

  /// `s` as a JSON string literal.
  public static func quoted(_ s: String) -> String {
    var out = ""
    writeString(s, to: &out)
    return out
  }
}
