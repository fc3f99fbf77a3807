import DrayManifest
import DrayModel
import Foundation

/// Checks a JSON value against a JSON Schema (draft-07), for the keywords `dray schema`
/// uses: type, properties, required, additionalProperties, patternProperties, enum,
/// pattern, minLength, minimum, maximum, items, minItems, minProperties, anyOf, oneOf, allOf, if/then and
/// `$ref` to `#/definitions/...`. Any other keyword fails the check, so the schema cannot
/// grow a keyword these tests would silently ignore.
struct JSONSchemaChecker {
  let root: JSONValue

  /// The problems found, as `path: what`; empty when `value` is valid.
  func problems(_ value: JSONValue) -> [String] {
    check(value, against: root, at: "$")
  }

  private func check(_ value: JSONValue, against schema: JSONValue, at path: String) -> [String] {
    guard case .object(let keywords) = schema else { return ["\(path): schema is not an object"] }
    var out: [String] = []
    let object = Dictionary(keywords.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
    for (keyword, argument) in keywords {
      switch keyword {
      case "$schema", "title", "description", "default", "examples", "definitions", "then":
        continue
      case "$ref":
        guard case .string(let ref) = argument, ref.hasPrefix("#/definitions/"),
          let target = root.member("definitions")?.member(String(ref.dropFirst("#/definitions/".count)))
        else {
          out.append("\(path): unresolvable $ref \(argument.json)")
          continue
        }
        out += check(value, against: target, at: path)
      case "type":
        let types: [String] =
          switch argument {
          case .string(let t): [t]
          case .array(let items): items.compactMap { if case .string(let t) = $0 { t } else { nil } }
          default: []
          }
        if !types.contains(where: { Self.has(value, type: $0) }) { out.append("\(path): expected \(types), found \(value.json)") }
      case "properties":
        guard case .object(let pairs) = value, case .object(let properties) = argument else { continue }
        for (name, sub) in properties {
          if let member = pairs.first(where: { $0.key == name }) { out += check(member.value, against: sub, at: "\(path).\(name)") }
        }
      case "required":
        guard case .object(let pairs) = value, case .array(let names) = argument else { continue }
        for case .string(let name) in names where !pairs.contains(where: { $0.key == name }) {
          out.append("\(path): missing \(name)")
        }
      case "patternProperties":
        continue  // checked with additionalProperties
      case "additionalProperties":
        guard case .object(let pairs) = value else { continue }
        let declared: [String] = Self.keys(object["properties"])
        let patterns: [String] = Self.keys(object["patternProperties"])
        for pair in pairs where !declared.contains(pair.key) && !patterns.contains(where: { Self.matches(pair.key, $0) }) {
          if case .bool(false) = argument {
            out.append("\(path): unexpected key \(pair.key)")
          } else {
            out += check(pair.value, against: argument, at: "\(path).\(pair.key)")
          }
        }
      case "enum":
        guard case .array(let allowed) = argument else { continue }
        if !allowed.contains(value) { out.append("\(path): \(value.json) not in \(argument.json)") }
      case "pattern":
        guard case .string(let s) = value, case .string(let pattern) = argument else { continue }
        if !Self.matches(s, pattern) { out.append("\(path): '\(s)' does not match \(pattern)") }
      case "minLength":
        guard case .string(let s) = value, case .integer(let n) = argument else { continue }
        if s.unicodeScalars.count < n { out.append("\(path): shorter than \(n)") }
      case "minimum", "maximum":
        guard let number = Self.number(value), let bound = Self.number(argument) else { continue }
        if keyword == "minimum" ? number < bound : number > bound { out.append("\(path): \(number) beyond \(keyword) \(bound)") }
      case "items":
        guard case .array(let items) = value else { continue }
        for (i, item) in items.enumerated() { out += check(item, against: argument, at: "\(path)[\(i)]") }
      case "minItems":
        guard case .array(let items) = value, case .integer(let n) = argument else { continue }
        if items.count < n { out.append("\(path): fewer than \(n) items") }
      case "minProperties":
        guard case .object(let pairs) = value, case .integer(let n) = argument else { continue }
        if pairs.count < n { out.append("\(path): fewer than \(n) properties") }
      case "anyOf", "oneOf", "allOf":
        guard case .array(let subs) = argument else { continue }
        let results = subs.map { check(value, against: $0, at: path) }
        let passed = results.filter(\.isEmpty).count
        switch keyword {
        case "anyOf" where passed == 0: out.append("\(path): matches none of anyOf (\(results.flatMap { $0 }.joined(separator: "; ")))")
        case "oneOf" where passed != 1: out.append("\(path): matches \(passed) of oneOf")
        case "allOf" where passed != subs.count: out += results.flatMap { $0 }
        default: break
        }
      case "if":
        if check(value, against: argument, at: path).isEmpty, let then = object["then"] {
          out += check(value, against: then, at: path)
        }
      default:
        out.append("\(path): keyword \(keyword) is not understood by this checker")
      }
    }
    return out
  }

  private static func keys(_ value: JSONValue?) -> [String] {
    if case .object(let pairs)? = value { return pairs.map(\.key) }
    return []
  }

  private static func has(_ value: JSONValue, type: String) -> Bool {
    switch (type, value) {
    case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): true
    case ("number", .integer), ("number", .number), ("integer", .integer): true
    case ("integer", .number(let text)): Double(text).map { $0 == $0.rounded() } ?? false
    default: false
    }
  }

  private static func number(_ value: JSONValue) -> Double? {
    switch value {
    case .integer(let i): Double(i)
    case .number(let text): Double(text)
    default: nil
    }
  }

  private static func matches(_ s: String, _ pattern: String) -> Bool {
    guard let regex = try? NSRegularExpression(pattern: pattern) else { return false }
    return regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
  }
}

extension JSONValue {
  /// The member `key` of an object.
  func member(_ key: String) -> JSONValue? {
    if case .object(let pairs) = self { return pairs.first { $0.key == key }?.value }
    return nil
  }

  /// A YAML document as an editor's language server reads it: plain scalars by the YAML 1.2
  /// core schema, everything else as strings, `${...}` left as written.
  init(yaml node: YAMLNode) {
    switch node.content {
    case .mapping(let pairs):
      self = .object(pairs.map { (key: $0.key.scalar?.text ?? "", value: JSONValue(yaml: $0.value)) })
    case .sequence(let items):
      self = .array(items.map { JSONValue(yaml: $0) })
    case .scalar(let s):
      guard s.style == .plain, s.tag == nil else {
        self = .string(s.text)
        return
      }
      switch CoreSchema.resolve(s.text) {
      case .null: self = .null
      case .bool(let b): self = .bool(b)
      case .integer(let i?): self = .integer(i)
      case .integer(nil), .float: self = .number(s.text)
      case .string: self = .string(s.text)
      }
    }
  }
}
