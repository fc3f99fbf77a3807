/// Where something is inside an answer: a JSON Pointer for JSON answers, an element path
/// for XML answers.
public enum RecordSelector: Sendable, Hashable, CustomStringConvertible {
  case json(JSONPointer)
  case xml(XMLPath)

  /// The selector as written.
  public var description: String {
    switch self {
    case .json(let p): p.description
    case .xml(let p): p.description
    }
  }
}

/// Why a selector cannot be used.
public struct SelectorError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

/// A JSON Pointer (RFC 6901): `""` is the whole document, `/data/items` the member `items`
/// of the member `data`, `/items/0` the first element of `items`.
///
/// In a token, `~1` stands for `/` and `~0` for `~` (§3); a token names an array element
/// when it is `0` or a decimal number without a leading zero (§4).
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
  /// The reference tokens, unescaped.
  public let tokens: [String]
  /// The pointer as written.
  public let description: String

  /// `""`, the whole document (RFC 6901 §5).
  public static let wholeDocument = JSONPointer(tokens: [], description: "")

  private init(tokens: [String], description: String) {
    self.tokens = tokens
    self.description = description
  }

  /// Parses a pointer's text.
  /// - Throws: `SelectorError` when the text does not start with `/` (and is not empty) or
  ///   holds a `~` not followed by `0` or `1`.
  public init(parsing text: String) throws(SelectorError) {
    description = text
    guard !text.isEmpty else {
      tokens = []
      return
    }
    guard text.hasPrefix("/") else {
      throw SelectorError("a JSON Pointer starts with '/' (RFC 6901), such as /data/items; found '\(text)'")
    }
    var tokens: [String] = []
    for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
      var token = ""
      var scalars = raw.unicodeScalars.makeIterator()
      while let c = scalars.next() {
        guard c == "~" else {
          token.unicodeScalars.append(c)
          continue
        }
        switch scalars.next() {
        case "0": token += "~"
        case "1": token += "/"
        default: throw SelectorError("'\(text)' holds a '~' not followed by 0 or 1; write ~0 for '~' and ~1 for '/' (RFC 6901)")
        }
      }
      tokens.append(token)
    }
    self.tokens = tokens
  }

  /// The array index a token names (RFC 6901 §4), or nil.
  public static func index(_ token: String) -> Int? {
    guard let first = token.unicodeScalars.first, token.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
    if first == "0" && token.count > 1 { return nil }
    return Int(token)
  }

  /// The value this pointer names inside `value`, or nil when there is none.
  public func resolve(in value: JSONValue) -> JSONValue? {
    var current = value
    for token in tokens {
      switch current {
      case .object(let pairs):
        guard let next = pairs.first(where: { $0.key == token })?.value else { return nil }
        current = next
      case .array(let items):
        guard let i = JSONPointer.index(token), i < items.count else { return nil }
        current = items[i]
      default:
        return nil
      }
    }
    return current
  }

  /// The pointer of `tokens`, each escaped as RFC 6901 §3 says (`~` as `~0`, `/` as `~1`).
  public init(tokens: [String]) {
    self.tokens = tokens
    description = tokens.map { "/" + $0.replacing("~", with: "~0").replacing("/", with: "~1") }.joined()
  }

  /// "Did you mean": walks the tokens from the first, and replaces each one the object it
  /// looks in lacks by the member a small edit away that it holds (`EditDistance.closest`, a
  /// different letter case included), going on inside that member; gives the corrected
  /// pointer, or nil when no token needed one. The walk stops at a token with no near
  /// member, or where there is no object to look in. A selector that matches nothing where
  /// such a name is near is taken as misspelt (docs/http.md, "A misspelt selector"); a true
  /// last page, whose object lacks the member and any near name, or lacks the object
  /// itself, is not.
  /// - Parameter members: the member names of the object the given tokens (corrected so
  ///   far) select; empty when they select a list, or nothing.
  ///
  /// ```swift
  /// // {"links": {"next": "/p2"}}
  /// try JSONPointer(parsing: "/Link/Next").nearSpelling { $0.isEmpty ? ["links"] : ["next"] }  // /links/next
  /// try JSONPointer(parsing: "/links/next").nearSpelling { $0.isEmpty ? ["links"] : ["prev"] }  // nil
  /// ```
  public func nearSpelling(members: ([String]) -> [String]) -> JSONPointer? {
    var corrected = tokens
    for (k, token) in tokens.enumerated() {
      let names = members(Array(corrected.prefix(k)))
      if names.isEmpty || names.contains(token) { continue }
      guard let near = EditDistance.closest(to: token, among: names) else { break }
      corrected[k] = near
    }
    return corrected == tokens ? nil : JSONPointer(tokens: corrected)
  }

  /// `nearSpelling(members:)` with the members of the objects inside `value`.
  public func nearSpelling(in value: JSONValue) -> JSONPointer? {
    nearSpelling { prefix in
      guard case .object(let pairs)? = JSONPointer(tokens: prefix).resolve(in: value) else { return [] }
      return pairs.map(\.key)
    }
  }

  public static func == (a: JSONPointer, b: JSONPointer) -> Bool { a.tokens == b.tokens }
  public func hash(into hasher: inout Hasher) { hasher.combine(tokens) }
}

/// An element path in an XML document, a small subset of XPath's abbreviated syntax:
///
/// | path | selects |
/// |---|---|
/// | `/catalog/item` | each `item` child of the root element `catalog` |
/// | `//item` | each `item` element at any depth (not inside another match) |
/// | `//feed/entry` | each `entry` child of a `feed` element at any depth |
/// | `/catalog/next/@href` | the `href` attribute of `/catalog/next` |
/// | `name`, `owner/name`, `@id`, `.` | relative to a record element (declared columns) |
///
/// A step without a prefix matches an element's local name whatever its namespace
/// (`entry` matches `<entry xmlns="http://www.w3.org/2005/Atom">` and `<atom:entry>`); a step
/// with a prefix (`atom:entry`) matches the qualified name as written. `*` matches any element.
public struct XMLPath: Sendable, Hashable, CustomStringConvertible {
  public enum Anchor: Sendable, Hashable {
    /// `/a/b`: from the root element.
    case root
    /// `//a/b`: the first step at any depth.
    case anywhere
    /// `a/b`: from a record element.
    case relative
  }

  public let anchor: Anchor
  /// Element names, in order; `*` matches any element.
  public let steps: [String]
  /// A final `@name` step: the attribute of the last element.
  public let attribute: String?
  /// The path as written.
  public let description: String

  /// Parses a path's text.
  /// - Throws: `SelectorError` naming the step that is not an XML name.
  public init(parsing text: String) throws(SelectorError) {
    description = text
    var rest = Substring(text)
    if rest.hasPrefix("//") {
      anchor = .anywhere
      rest = rest.dropFirst(2)
    } else if rest.hasPrefix("/") {
      anchor = .root
      rest = rest.dropFirst()
    } else {
      anchor = .relative
    }
    guard !rest.isEmpty else {
      throw SelectorError("'\(text)' names no element; write an element path such as /catalog/item or //item")
    }
    var steps: [String] = []
    var attribute: String?
    let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
    for (i, part) in parts.enumerated() {
      if part == "." && anchor == .relative && parts.count == 1 { break }
      if part.hasPrefix("@") {
        guard i == parts.count - 1, XMLPath.isName(part.dropFirst()) else {
          throw SelectorError("'\(text)': an attribute step (@name) may only come last")
        }
        attribute = String(part.dropFirst())
        continue
      }
      guard part == "*" || XMLPath.isName(part) else {
        throw SelectorError(
          part.isEmpty
            ? "'\(text)' has an empty step; '//' may only start a path"
            : "'\(text)': '\(part)' is not an XML element name")
      }
      steps.append(String(part))
    }
    if anchor != .relative && steps.isEmpty {
      throw SelectorError("'\(text)' names no element; write an element path such as /catalog/item or //item")
    }
    self.steps = steps
    self.attribute = attribute
  }

  /// An XML name (XML 1.0 §2.3), loosely: letters, digits, `-`, `_`, `.`, and one `:`
  /// between a prefix and a local name; not starting with a digit, `-` or `.`.
  static func isName(_ s: Substring) -> Bool {
    guard let first = s.unicodeScalars.first, first != "-", first != ".", !("0"..."9").contains(first) else { return false }
    if s.filter({ $0 == ":" }).count > 1 || s.hasPrefix(":") || s.hasSuffix(":") { return false }
    return s.unicodeScalars.allSatisfy {
      $0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.:".unicodeScalars.contains($0) || $0.value >= 0xB7
    }
  }

  /// Whether element name `qualified` (with local name `local`) matches `step`.
  public static func matches(_ step: String, qualified: String, local: String) -> Bool {
    if step == "*" { return true }
    return step.contains(":") ? step == qualified : step == local
  }

  public static func == (a: XMLPath, b: XMLPath) -> Bool {
    a.anchor == b.anchor && a.steps == b.steps && a.attribute == b.attribute
  }
  public func hash(into hasher: inout Hasher) {
    hasher.combine(steps)
    hasher.combine(attribute)
  }
}
