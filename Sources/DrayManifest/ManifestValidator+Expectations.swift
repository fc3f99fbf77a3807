internal import DrayModel

/// Reading `expect`: the conditions of a `query` step or a load on a column or a row count.
extension ManifestValidator {
  /// The `expect` of a `query` step or a load: conditions by name, each with at least one
  /// of `min`, `max`, `equals`. A condition no value can meet is refused: `min` above `max`,
  /// `equals` outside them, `equals` a list or a mapping (a column holds one value), a bound
  /// that is no finite number, an empty name; for a load (`load`), `rows` is its row count:
  /// `equals` a whole number of at least 0, `max` at least 0.
  /// - Parameters:
  ///   - names: what the names are, and `example` a condition, for when `expect` is not a
  ///     mapping.
  mutating func readExpect(_ f: Fields, names: String, example: String, load: Bool = false) -> [Expectation] {
    var expectations: [Expectation] = []
    if let node = f["expect"], !node.isMapping {
      reader.error(
        node.location,
        "'\(f.path("expect"))' must be a mapping of \(names) to conditions, such as \(example), found \(node.kindDescription)")
    } else if let node = f["expect"], case .mapping(let pairs) = node.content {
      for pair in pairs {
        let column = pair.key.scalar?.text ?? ""
        let cpath = "\(f.path("expect")).\(column)"
        if column.isEmpty {
          reader.error(pair.key.location, "'\(f.path("expect"))' names a column with no name; give the column's name, such as \(example)")
        }
        guard let c = reader.fields(pair.value, cpath, keys: ManifestSchema.expectation) else { continue }
        var x = Expectation(column: column)
        x.min = c["min"].flatMap { number($0, c.path("min")) }
        x.max = c["max"].flatMap { number($0, c.path("max")) }
        x.equals = c["equals"].flatMap { node in finite(node, c.path("equals")) ? reader.json(node, c.path("equals")) : nil }
        if case .mapping(let conditions) = pair.value.content, conditions.isEmpty {
          reader.error(pair.value.location, "'\(cpath)' needs at least one of min, max, equals")
        }
        checkSatisfiable(x, c, rowCount: load && column == "rows")
        expectations.append(x)
      }
    }
    return expectations
  }

  /// Refuses a condition no value can meet (see `readExpect`), at the key that makes it so.
  private mutating func checkSatisfiable(_ x: Expectation, _ c: Fields, rowCount: Bool) {
    if let min = x.min, let max = x.max, ExactNumber.compare(min, max) == 1, let node = c["max"] {
      reader.error(node.location, "'\(c.path("max"))' is \(max), below min \(min): no value is both; swap them or correct one")
    }
    if rowCount, let max = x.max, ExactNumber.compare(max, 0) == -1, let node = c["max"] {
      reader.error(node.location, "'\(c.path("max"))' is \(max), but a row count is never below 0; give 0 or more")
    }
    guard let equals = x.equals, let node = c["equals"] else { return }
    let wanted = rowCount ? "a row count, a whole number of at least 0" : "a number, a string, true, false or null (a column's value)"
    switch equals {
    case .array, .object:
      reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(node.kindDescription)")
      return
    case .integer(let n) where rowCount && n < 0:
      reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(n)")
      return
    case .integer:
      break
    case .number(let text) where rowCount:
      reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(text)")
      return
    case .number:
      break
    case .string, .bool, .null:
      if rowCount {
        let found = if case .string = equals { "a string ('\(node.scalar?.text ?? "")')" } else { equals.json }
        reader.error(node.location, "'\(c.path("equals"))' must be \(wanted), found \(found)")
      }
      return
    }
    guard let value = ExactNumber(equals) else { return }
    if let min = x.min, ExactNumber.compare(value, min) == -1 {
      reader.error(node.location, "'\(c.path("equals"))' is \(value), below min \(min): no value meets both; correct one")
    } else if let max = x.max, ExactNumber.compare(value, max) == 1 {
      reader.error(node.location, "'\(c.path("equals"))' is \(value), above max \(max): no value meets both; correct one")
    }
  }

  /// False, after an error, when `node` is a plain infinity or NaN (`.inf`, `-.Inf`, `.nan`):
  /// no condition compares with one (quote it to compare with that text).
  private mutating func finite(_ node: YAMLNode, _ path: String) -> Bool {
    guard let scalar = node.scalar, scalar.style == .plain, scalar.tag == nil, case .float(let d) = CoreSchema.resolve(scalar.text),
      !d.isFinite
    else { return true }
    reader.error(node.location, "'\(path)' must be a finite number, found \(scalar.text); write a number such as 1000")
    return false
  }

  private mutating func number(_ node: YAMLNode, _ path: String) -> ExactNumber? {
    guard finite(node, path) else { return nil }
    switch reader.json(node, path) {
    case .integer(let i): return .integer(i)
    case .number(let text): return ExactNumber(.number(text))
    case nil: return nil
    default:
      reader.error(node.location, "'\(path)' must be a number, found \(node.kindDescription)")
      return nil
    }
  }
}
