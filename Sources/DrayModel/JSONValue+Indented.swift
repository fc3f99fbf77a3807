extension JSONValue {
  /// JSON text indented by two spaces per level, keys in the order written, ending without a
  /// newline. Arrays of scalars stay on one line: `["json", "junit"]`.
  public var indentedJSON: String {
    var out = ""
    writeIndented(to: &out, indent: "")
    return out
  }

  private func writeIndented(to out: inout String, indent: String) {
    let inner = indent + "  "
    switch self {
    case .array(let items) where !items.isEmpty:
      if items.allSatisfy(\.isScalar) {
        out += "[" + items.map(\.json).joined(separator: ", ") + "]"
        return
      }
      out += "[\n"
      for (i, item) in items.enumerated() {
        out += inner
        item.writeIndented(to: &out, indent: inner)
        out += i == items.count - 1 ? "\n" : ",\n"
      }
      out += indent + "]"
    case .object(let pairs) where !pairs.isEmpty:
      out += "{\n"
      for (i, pair) in pairs.enumerated() {
        out += inner + JSONValue.quoted(pair.key) + ": "
        pair.value.writeIndented(to: &out, indent: inner)
        out += i == pairs.count - 1 ? "\n" : ",\n"
      }
      out += indent + "}"
    default:
      out += json
    }
  }

  private var isScalar: Bool {
    switch self {
    case .array, .object: false
    default: true
    }
  }
}
