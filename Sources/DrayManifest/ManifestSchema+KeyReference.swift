internal import DrayModel

// MARK: - Key reference

extension ManifestSchema {
  /// One row of the key reference: a key's dotted path and how it reads.
  public struct KeyReference: Sendable, Equatable {
    /// `platform.tls.verify`, `steps[].table_stream.resource`, `steps[].query.expect.<column>.min`.
    public var path: String
    /// `string`, `integer (0 to 1000)`, `duration`, `one of: fixed, exponential`, ...
    public var type: String
    /// `required`, the default in manifest syntax (`3`, `1s`, `true`), `as retry.count` for
    /// a key of an override block, or `-` for none.
    public var defaultText: String
    public var summary: String

    /// The default as `docs/manifest.md` shows it: values and key paths in backticks.
    public var defaultCell: String {
      switch defaultText {
      case "-", "required": defaultText
      case let text where text.hasPrefix("as "): "as `\(text.dropFirst(3))`"
      default: "`\(defaultText)`"
      }
    }
  }

  /// Every key of the language with its path, type and default, depth first in declaration
  /// order. `docs/manifest.md` holds exactly these rows.
  public static var keyReference: [KeyReference] {
    var out: [KeyReference] = []
    func walk(_ keys: [Key], _ prefix: String, overriding: String?) {
      for key in keys {
        let path = prefix.isEmpty ? key.name : "\(prefix).\(key.name)"
        let defaultText =
          key.required ? "required" : overriding.map { "as \($0).\(key.name)" } ?? key.defaultValue.map(yamlText) ?? "-"
        out.append(KeyReference(path: path, type: typeName(key.value), defaultText: defaultText, summary: key.summary))
        walkValue(key.value, path, overriding: key.overrides)
      }
    }
    func walkValue(_ value: Value, _ path: String, overriding: String?) {
      switch value {
      case .mapping(let keys, _): walk(keys, path, overriding: overriding)
      case .optional(let inner): walkValue(inner, path, overriding: nil)
      case .oneOf(let values): for value in values { walkValue(value, path, overriding: nil) }
      case .dictionary(let inner): walkValue(inner, path + ".<name>", overriding: nil)
      case .nonEmpty(let inner): walkValue(inner, path, overriding: overriding)
      case .steps(nested: false):
        walk(stepCommon, path + "[]", overriding: nil)
        walk(stepKinds, path + "[]", overriding: nil)
      default: break
      }
    }
    walk(top, "", overriding: nil)
    return out
  }

  /// A default in manifest syntax.
  static func yamlText(_ value: JSONValue) -> String {
    switch value {
    case .string(let s): s
    case .array(let items): "[" + items.map(yamlText).joined(separator: ", ") + "]"
    default: value.json
    }
  }

  /// The type of a value in words, for the reference and messages.
  public static func typeName(_ value: Value) -> String {
    switch value {
    case .string(nonEmpty: true): "string"
    case .string(nonEmpty: false): "string (may be empty)"
    case .integer(let range) where range.count == 1: "integer (\(range.lowerBound))"
    case .integer(let range): "integer (\(range.lowerBound) to \(range.upperBound))"
    case .number: "number"
    case .boolean: "boolean"
    case .duration(let minimum) where minimum == .zero: "duration (0s to \(NodeReader.maxDuration.formatted))"
    case .duration(let minimum): "duration (\(minimum.formatted) to \(NodeReader.maxDuration.formatted))"
    case .period: "period (Nd, Nw or Nmo)"
    case .choice(let words): "one of: " + words.joined(separator: ", ")
    case .list(let inner): "list of " + plural(typeName(inner))
    case .mapping: "mapping"
    case .dictionary(.oneOf(let values)): "mapping of names to " + values.map { plural(typeName($0)) }.joined(separator: " or ")
    case .dictionary(let inner): "mapping of names to " + plural(typeName(inner))
    case .json: "any value"
    case .jsonObject: "mapping (JSON object)"
    case .steps(nested: false): "list of steps"
    case .steps(nested: true): "list of steps (not parallel)"
    case .optional(let inner): typeName(inner) + " or empty"
    case .oneOf(let values): values.map(typeName).joined(separator: " or ")
    case .nonEmpty(let inner): "non-empty " + typeName(inner)
    }
  }

  private static func plural(_ type: String) -> String {
    if type.hasPrefix("non-empty ") { return "non-empty " + plural(String(type.dropFirst("non-empty ".count))) }
    if type.hasPrefix("one of:") { return "words, each " + type }
    if type.hasPrefix("string") { return "strings" + type.dropFirst("string".count) }
    if type.hasPrefix("list of ") { return "lists of " + type.dropFirst("list of ".count) }
    if type.hasPrefix("mapping of ") { return "mappings of " + type.dropFirst("mapping of ".count) }
    return type + "s"
  }
}
