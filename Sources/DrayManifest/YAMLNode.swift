public import DrayModel

/// A node of a YAML document, with the position where it starts.
///
/// Built from libyaml's events by `YAMLParser`. Positions take no part in equality of the
/// values read from nodes; they only serve diagnostics.
public struct YAMLNode: Sendable {
  public enum ScalarStyle: Sendable {
    case plain, singleQuoted, doubleQuoted, literal, folded
  }

  public struct Scalar: Sendable {
    /// The scalar's text after YAML's own unescaping and folding.
    public var text: String
    public var style: ScalarStyle
    /// An explicit tag such as `!!str`, expanded (`tag:yaml.org,2002:str`); nil when none.
    public var tag: String?
  }

  public struct Pair: Sendable {
    public var key: YAMLNode
    public var value: YAMLNode
  }

  public enum Content: Sendable {
    case scalar(Scalar)
    case sequence([YAMLNode])
    case mapping([Pair])
  }

  public var content: Content
  /// 1-based line and column where the node starts.
  public var location: SourceLocation
  /// Nodes in this subtree, aliases counted at their expanded size.
  public var size: Int

  /// The node's kind in words, for messages: "a string", "a mapping", ...
  public var kindDescription: String {
    switch content {
    case .scalar(let s):
      switch s.style == .plain && s.tag == nil ? CoreSchema.resolve(s.text) : .string {
      case .null: return "null"
      case .bool: return "a boolean"
      case .integer: return "an integer"
      case .float: return "a number"
      case .string: return "a string"
      }
    case .sequence: return "a list"
    case .mapping: return "a mapping"
    }
  }

  public var isMapping: Bool {
    if case .mapping = content { return true }
    return false
  }

  public var scalar: Scalar? {
    if case .scalar(let s) = content { return s }
    return nil
  }
}

/// Scalar resolution by the YAML 1.2 core schema (YAML 1.2.2 §10.3.2).
///
/// Only plain scalars are resolved; quoted and block scalars are always strings. `yes`, `no`,
/// `on`, `off` are strings (they were booleans only in YAML 1.1), and so are `12:30` and
/// `0755`-like text wherever a string is expected: the manifest reader asks for the type it
/// needs and takes the text as written when it needs a string.
public enum CoreSchema {
  public enum Resolved: Equatable, Sendable {
    case null
    case bool(Bool)
    /// An integer; nil when it does not fit in Int64.
    case integer(Int64?)
    case float(Double)
    case string
  }

  /// Resolves a plain scalar's text.
  public static func resolve(_ text: String) -> Resolved {
    switch text {
    case "", "~", "null", "Null", "NULL": return .null
    case "true", "True", "TRUE": return .bool(true)
    case "false", "False", "FALSE": return .bool(false)
    case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF": return .float(.infinity)
    case "-.inf", "-.Inf", "-.INF": return .float(-.infinity)
    case ".nan", ".NaN", ".NAN": return .float(.nan)
    default: break
    }
    let bytes = Array(text.utf8)
    if isDecimalInteger(bytes) { return .integer(Int64(text)) }
    if bytes.count > 2 && bytes[0] == UInt8(ascii: "0") {
      let digits = String(decoding: bytes[2...], as: UTF8.self)
      if bytes[1] == UInt8(ascii: "o"), digits.utf8.allSatisfy({ (48...55).contains($0) }) {
        return .integer(Int64(digits, radix: 8))
      }
      if bytes[1] == UInt8(ascii: "x"), digits.utf8.allSatisfy({ isHexDigit($0) }) {
        return .integer(Int64(digits, radix: 16))
      }
    }
    if isFloat(bytes), let value = Double(text) { return .float(value) }
    return .string
  }

  private static func isHexDigit(_ b: UInt8) -> Bool {
    (48...57).contains(b) || (65...70).contains(b) || (97...102).contains(b)
  }

  /// `[-+]?[0-9]+`
  private static func isDecimalInteger(_ b: [UInt8]) -> Bool {
    var i = 0
    if i < b.count && (b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+")) { i += 1 }
    guard i < b.count else { return false }
    return b[i...].allSatisfy { (48...57).contains($0) }
  }

  /// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
  private static func isFloat(_ b: [UInt8]) -> Bool {
    var i = 0
    func digits() -> Int {
      let start = i
      while i < b.count && (48...57).contains(b[i]) { i += 1 }
      return i - start
    }
    if i < b.count && (b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+")) { i += 1 }
    let whole = digits()
    if i < b.count && b[i] == UInt8(ascii: ".") {
      i += 1
      let fraction = digits()
      if whole == 0 && fraction == 0 { return false }
    } else if whole == 0 {
      return false
    }
    if i < b.count && (b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E")) {
      i += 1
      if i < b.count && (b[i] == UInt8(ascii: "-") || b[i] == UInt8(ascii: "+")) { i += 1 }
      if digits() == 0 { return false }
    }
    return i == b.count
  }
}
