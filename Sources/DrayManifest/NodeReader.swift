internal import DrayJSON
internal import DrayModel

/// Reads typed values from positioned nodes, collecting every problem instead of stopping.
///
/// Each accessor returns nil after recording a diagnostic when the node does not hold what
/// is expected; callers carry on so that one pass reports everything.
struct NodeReader {
  var diagnostics: [Diagnostic] = []
  var redactor = Redactor()
  var interpolator: Interpolator
  /// When true, a credential (read with `secret: true`, or from a password or token file)
  /// whose variable is unset or whose file cannot be read is no error: it reads as
  /// `unresolved` and its key is added to `unresolvedSecrets`.
  var secretsMayBeMissing = false
  var unresolvedSecrets: [String] = []
  /// What an unresolved credential reads as.
  static let unresolved = Manifest.unresolvedCredential

  init(interpolator: Interpolator) {
    self.interpolator = interpolator
  }

  mutating func error(_ location: SourceLocation, _ message: String) {
    diagnostics.append(Diagnostic(location, message))
  }

  /// What is no error but deserves a line (`Manifest.warnings`).
  var warnings: [Diagnostic] = []

  mutating func warn(_ location: SourceLocation, _ message: String) {
    warnings.append(Diagnostic(location, message))
  }

  // MARK: Mappings

  /// The entries of a mapping node declared by `keys` (`ManifestSchema`), with any other key
  /// reported as unknown; keys starting with `extensionPrefix` (when given) are skipped
  /// silently.
  mutating func fields(_ node: YAMLNode, _ path: String, keys: [ManifestSchema.Key], extensionPrefix: String? = nil) -> Fields? {
    guard case .mapping(let pairs) = node.content else {
      error(node.location, "\(Self.label(path)) must be a mapping, found \(node.kindDescription)")
      return nil
    }
    var fields = Fields(node: node, path: path, keys: keys)
    let known = keys.names
    for pair in pairs {
      let key = pair.key.scalar?.text ?? ""
      if known.contains(key) {
        fields.entries[key] = pair
      } else if let prefix = extensionPrefix, key.hasPrefix(prefix) {
        continue
      } else {
        error(pair.key.location, Self.unknownKey(key, in: path, known: known))
      }
    }
    return fields
  }

  static func unknownKey(_ key: String, in path: String, known: [String]) -> String {
    let place = path.isEmpty ? "at the top level" : "in \(path)"
    if let suggestion = EditDistance.closest(to: key, among: known) {
      return "unknown key '\(key)' \(place); did you mean '\(suggestion)'?"
    }
    return "unknown key '\(key)' \(place); valid keys: \(known.joined(separator: ", "))"
  }

  /// "'platform.host'" or "the manifest" for the root.
  static func label(_ path: String) -> String { path.isEmpty ? "the manifest" : "'\(path)'" }

  // MARK: Scalars

  /// The node's text after interpolation, or nil (with a diagnostic) when it is not a scalar.
  /// - Parameters:
  ///   - secret: the value is a secret, masked in every output (`Redactor`).
  ///   - credential: the value is part of a credential that may stay unresolved
  ///     (`secretsMayBeMissing`) although it is no secret itself, as a user name.
  /// - Returns: the text, the scalar's style, and whether the text draws on a secret (a
  ///   variable listed in `secrets`, a `${file:...}`).
  mutating func text(_ node: YAMLNode, _ path: String, secret: Bool = false, credential: Bool = false) -> (
    text: String, style: YAMLNode.ScalarStyle, fromSecret: Bool
  )? {
    guard let scalar = node.scalar else {
      error(node.location, "\(Self.label(path)) must be a string, found \(node.kindDescription)")
      return nil
    }
    do {
      let result = try interpolator.resolve(scalar.text)
      for part in result.secretParts where part != Self.unresolved { redactor.add(part) }
      if secret { redactor.add(result.value) }
      // C libraries (SQLite, libcurl, the file system) read U+0000 as the end of the text:
      // `DELETE FROM t\0 WHERE ...` would run as `DELETE FROM t`. The value is never quoted.
      guard !Interpolator.holdsNUL(result.value) else {
        self.error(
          node.location, "\(Self.label(path)) holds a NUL character (U+0000, written \\0), which would cut the value short; remove it")
        return nil
      }
      // An interpolated plain scalar resolves like one written out: `count: ${N:-3}` is 3.
      return (result.value, scalar.style, result.isSecret)
    } catch {
      if secret || credential, unresolvable(path, error) { return (Self.unresolved, .doubleQuoted, true) }
      var isSecret = secret
      if case .unset(let name) = error, interpolator.secretVariables.contains(name) { isSecret = true }
      // `auth` and an http step's `basic` take a `password_file`; `database` does not.
      let fileKey = path.hasSuffix(".password") && path != "database.password" ? "password_file" : nil
      self.error(node.location, "\(Self.label(path)): \(error.description(secret: isSecret, fileKey: fileKey))")
      return nil
    }
  }

  /// Whether the credential at `path`, which failed with `error`, may stay unresolved
  /// (`secretsMayBeMissing`); if so, it is recorded in `unresolvedSecrets`.
  mutating func unresolvable(_ path: String, _ error: InterpolationError) -> Bool {
    switch error {
    case .unset, .unreadableFile, .noFile:
      guard secretsMayBeMissing else { return false }
      unresolvedSecrets.append(path)
      return true
    default:
      return false
    }
  }

  /// A string. Any scalar's text is a string (`no`, `0755`, `12:30` stay as written), but a
  /// plain null (`~`, `null`, nothing) is refused.
  mutating func string(_ node: YAMLNode, _ path: String, secret: Bool = false, credential: Bool = false) -> String? {
    if let scalar = node.scalar, scalar.style == .plain, scalar.tag == nil, CoreSchema.resolve(scalar.text) == .null {
      error(node.location, "\(Self.label(path)) must be a string, found null")
      return nil
    }
    return text(node, path, secret: secret, credential: credential)?.text
  }

  /// A non-empty string.
  mutating func nonEmptyString(_ node: YAMLNode, _ path: String, secret: Bool = false, credential: Bool = false) -> String? {
    guard let value = string(node, path, secret: secret, credential: credential) else { return nil }
    if value.isEmpty {
      error(node.location, "\(Self.label(path)) must not be empty")
      return nil
    }
    return value
  }

  /// The core-schema value of a plain scalar, after interpolation; quoted scalars are strings.
  /// A value from `${...}` resolves like a plain scalar even when quoted: `count: "${N:-3}"` is 3.
  private mutating func resolved(_ node: YAMLNode, _ path: String, secret: Bool = false) -> (CoreSchema.Resolved, String)? {
    guard let (value, style, _) = text(node, path, secret: secret) else { return nil }
    let interpolated = node.scalar?.text.contains("${") ?? false
    if (style != .plain && !interpolated) || node.scalar?.tag == "tag:yaml.org,2002:str" { return (.string, value) }
    return (CoreSchema.resolve(value), value)
  }

  mutating func integer(_ node: YAMLNode, _ path: String, in range: ClosedRange<Int>) -> Int? {
    guard let (value, text) = resolved(node, path) else { return nil }
    if case .integer(nil) = value {
      error(node.location, "\(Self.label(path)) must be between \(range.lowerBound) and \(range.upperBound), found \(text)")
      return nil
    }
    guard case .integer(let i?) = value else {
      error(node.location, "\(Self.label(path)) must be an integer, found \(Self.describe(value, text))")
      return nil
    }
    guard range.contains(Int(i)) else {
      error(node.location, "\(Self.label(path)) must be between \(range.lowerBound) and \(range.upperBound), found \(i)")
      return nil
    }
    return Int(i)
  }

  mutating func bool(_ node: YAMLNode, _ path: String) -> Bool? {
    guard let (value, text) = resolved(node, path) else { return nil }
    guard case .bool(let b) = value else {
      error(node.location, "\(Self.label(path)) must be true or false, found \(Self.describe(value, text))")
      return nil
    }
    return b
  }

  /// The longest duration a manifest may give: 30 days. Longer waits and time limits are
  /// mistakes (and beyond it a count of milliseconds outgrows what libcurl takes).
  static let maxDuration = Duration.seconds(30 * 24 * 3600)

  /// A duration with a unit: `500ms`, `30s`, `1.5s`, `5m`, `2h`, `7d`, `2w` (a week is 7
  /// days of 24 hours); at least `minimum` (the
  /// key's, `ManifestSchema.Value.duration`), at most `maxDuration`.
  mutating func duration(_ node: YAMLNode, _ path: String, minimum: Duration) -> Duration? {
    guard let (_, text) = resolved(node, path) else { return nil }
    if let d = Self.parseDuration(text) {
      guard d <= Self.maxDuration else {
        error(node.location, "\(Self.label(path)) is too long: \(text); a duration is at most 30 days (30d, 720h)")
        return nil
      }
      guard d >= minimum else {
        let rounded = Self.roundsToZero(text) ? " (durations are counted in whole milliseconds: \(text) rounds to 0ms)" : ""
        error(
          node.location,
          "\(Self.label(path)) is too short: \(text)\(rounded); it must be between \(minimum.formatted) and \(Self.maxDuration.formatted)")
        return nil
      }
      return d
    }
    let isBareNumber = !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") } && Double(text) != nil
    if isBareNumber {
      error(node.location, "\(Self.label(path)) needs a unit: write '\(text)s' for \(text) seconds (units: ms, s, m, h, d, w)")
    } else {
      error(node.location, "\(Self.label(path)) is not a duration: '\(text)'; write a number and a unit: 500ms, 30s, 5m, 1h, 7d")
    }
    return nil
  }

  /// Whether `text` writes a duration above zero that `parseDuration(_:)`, counting whole
  /// milliseconds, rounds to zero (`0.0000000001s`, `0.4ms`).
  static func roundsToZero(_ text: String) -> Bool {
    guard parseDuration(text) == .zero else { return false }
    let number = text.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
    return Double(number).map { $0 > 0 } ?? false
  }

  /// The duration `text` writes, or nil when it is not one. A duration too long for
  /// `Duration` (beyond about 292 million years) comes back as `Duration.seconds(Int64.max)`,
  /// so that the caller can say it is too long rather than malformed.
  static func parseDuration(_ text: String) -> Duration? {
    let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400), ("w", 7 * 86400)]
    for (unit, scale) in units where text.hasSuffix(unit) {
      let number = text.dropLast(unit.count)
      guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
        let value = Double(number), value.isFinite, value >= 0
      else { return nil }
      let milliseconds = (value * scale * 1000).rounded()
      // Int64(exactly:) of a Double at or past 2^63 would trap; such a value is far too long.
      guard milliseconds < 9.2e18 else { return .seconds(Int64.max) }
      return .milliseconds(Int64(milliseconds))
    }
    return nil
  }

  mutating func choice<E: RawRepresentable & CaseIterable>(_ node: YAMLNode, _ path: String, as: E.Type) -> E?
  where E.RawValue == String {
    guard let text = string(node, path) else { return nil }
    if let value = E(rawValue: text) { return value }
    let names = E.allCases.map(\.rawValue)
    var message = "\(Self.label(path)) must be one of \(names.joined(separator: ", ")), found '\(text)'"
    if let suggestion = EditDistance.closest(to: text, among: names) { message += "; did you mean '\(suggestion)'?" }
    error(node.location, message)
    return nil
  }

  /// A list of non-empty strings, each named once: the lists of names whose emptiness
  /// means nothing (`primary_key`, `schemes.resources`); nil, with a diagnostic, when any
  /// entry is wrong, one is repeated or the list is empty.
  /// - Parameter whenEmpty: what to write instead of an empty list, for its message.
  mutating func nameList(_ node: YAMLNode, _ path: String, whenEmpty: String) -> [String]? {
    guard case .sequence(let items) = node.content else {
      error(node.location, "\(Self.label(path)) must be a list, found \(node.kindDescription)")
      return nil
    }
    guard !items.isEmpty else {
      error(node.location, "\(Self.label(path)) is empty; \(whenEmpty)")
      return nil
    }
    var out: [String] = []
    var ok = true
    for (i, item) in items.enumerated() {
      guard let s = nonEmptyString(item, "\(path)[\(i)]") else {
        ok = false
        continue
      }
      // By bytes, as databases and servers compare names: `é` and `e\u{301}` are two.
      if out.contains(where: { $0.utf8.elementsEqual(s.utf8) }) {
        error(item.location, "\(Self.label(path)) names '\(s)' twice; list each once")
        ok = false
        continue
      }
      out.append(s)
    }
    return ok ? out : nil
  }

  /// Any node as JSON: mappings become objects, lists arrays, plain scalars their core-schema
  /// value, quoted scalars strings.
  /// - Parameter secretKey: the values of the keys it names are secrets (an `http` step's
  ///   JSON body: those named as credentials, `QueryItem.secretNames`); `secret`: this
  ///   node's values are.
  mutating func json(
    _ node: YAMLNode, _ path: String, secretKey: ((String) -> Bool)? = nil, secret: Bool = false
  ) -> JSONValue? {
    switch node.content {
    case .mapping(let pairs):
      var out: [(key: String, value: JSONValue)] = []
      for pair in pairs {
        let key = pair.key.scalar?.text ?? ""
        let isSecret = secret || (secretKey?(key) ?? false)
        if let value = json(pair.value, path.isEmpty ? key : "\(path).\(key)", secretKey: secretKey, secret: isSecret) {
          out.append((key, value))
        }
      }
      return .object(out)
    case .sequence(let items):
      var out: [JSONValue] = []
      for (i, item) in items.enumerated() {
        if let value = json(item, "\(path)[\(i)]", secretKey: secretKey, secret: secret) { out.append(value) }
      }
      return .array(out)
    case .scalar(let scalar):
      guard let (text, style, fromSecret) = self.text(node, path, secret: secret) else { return nil }
      let value = Self.jsonType(of: scalar, text, style: style, secret: secret || fromSecret)
      // A secret's text, or anything derived from it, is never printed (`written` is).
      let shown = secret || fromSecret ? "the value" : text
      if let written = Self.leadingZerosDropped(value, text) {
        let sent =
          secret || fromSecret
          ? "which JSON cannot keep; quote it to send it as text"
          : "which would be sent as the number \(written); quote it to send the text \"\(text)\", or write \(written)"
        error(node.location, "\(Self.label(path)): \(shown) is a number with leading zeros, \(sent)")
        return nil
      }
      switch value {
      case .null: return .null
      case .bool(let b): return .bool(b)
      case .integer(let i?): return .integer(i)
      case .integer(nil): return .number(text.hasPrefix("+") ? String(text.dropFirst()) : text)
      case .float(let d):
        guard d.isFinite else {
          error(node.location, "\(Self.label(path)): \(shown) has no JSON form; quote it to send a string")
          return nil
        }
        return .number(Self.isJSONNumber(text) ? text : "\(d)")
      case .string: return .string(text)
      }
    }
  }

  /// The JSON type of a scalar of a JSON value (a body, `params`), by the YAML 1.2 core
  /// schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution): a quoted scalar or one tagged
  /// `!!str` is a string, whatever a `${...}` in it resolves to; a plain one is typed by its
  /// text (`42`, `true`, `null`). A plain scalar that is one whole reference (`${N}`,
  /// `${N:-3}`) is typed by the value it resolves to, unless that value is a secret (a
  /// secret field's, a listed variable's, a file's): a credential is sent as the text it
  /// is, never as a number its digits happen to make. Any other plain scalar holding a
  /// reference (`id-${N}`) is a string.
  static func jsonType(of scalar: YAMLNode.Scalar, _ text: String, style: YAMLNode.ScalarStyle, secret: Bool) -> CoreSchema.Resolved {
    guard style == .plain, scalar.tag != "tag:yaml.org,2002:str" else { return .string }
    guard scalar.text.contains("${") else { return CoreSchema.resolve(text) }
    guard !secret, Interpolator.isOneReference(scalar.text) else { return .string }
    return CoreSchema.resolve(text)
  }

  /// A JSON object from a mapping node.
  mutating func jsonObject(_ node: YAMLNode, _ path: String) -> JSONValue? {
    guard case .mapping = node.content else {
      error(node.location, "\(Self.label(path)) must be a mapping, found \(node.kindDescription)")
      return nil
    }
    return json(node, path)
  }

  /// The JSON number a plain scalar with leading zeros becomes (`02142` → 2142, `0008` → 8,
  /// `01.50` → 1.5), when the core schema reads it as a number: the text is likely meant as
  /// it stands (a postal code, an id), and JSON has no number that keeps the zeros. Nil for
  /// any other scalar (`42`, `0`, `-1.5`, `0.25`, `+7`, `1e3`; `0x1F` and `0o17`, another
  /// base on purpose).
  static func leadingZerosDropped(_ value: CoreSchema.Resolved, _ text: String) -> String? {
    let digits = text.drop { $0 == "-" || $0 == "+" }
    guard digits.count > 1, digits.hasPrefix("0"), digits.dropFirst().first?.isNumber == true else { return nil }
    switch value {
    case .integer(let i):
      return i.map(String.init) ?? (text.hasPrefix("-") ? "-" : "") + digits.drop { $0 == "0" }
    case .float(let d):
      return "\(d)"
    case .null, .bool, .string:
      return nil
    }
  }

  private static func isJSONNumber(_ text: String) -> Bool {
    (try? JSONValue(parsing: text)).map { if case .number = $0 { true } else { false } } ?? false
  }

  private static func describe(_ value: CoreSchema.Resolved, _ text: String) -> String {
    switch value {
    case .null: "null"
    case .bool: "a boolean (\(text))"
    case .integer: "an integer (\(text))"
    case .float: "a number (\(text))"
    case .string: "a string ('\(text)')"
    }
  }
}

/// The entries of one mapping, by key, with the mapping's declaration (`ManifestSchema`).
struct Fields {
  let node: YAMLNode
  let path: String
  /// What the mapping may hold: each key's type, range, default and whether it is required.
  let keys: [ManifestSchema.Key]
  var entries: [String: YAMLNode.Pair] = [:]

  init(node: YAMLNode, path: String, keys: [ManifestSchema.Key]) {
    self.node = node
    self.path = path
    self.keys = keys
  }

  subscript(key: String) -> YAMLNode? { entries[key]?.value }

  /// The dotted path of `key` inside this mapping, for messages.
  func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

  /// The declaration of `key`; asking for a key the mapping does not declare is a mistake
  /// in dray, caught by the tests.
  func declaration(_ key: String) -> ManifestSchema.Key {
    guard let declared = keys[key] else { preconditionFailure("'\(key)' is not declared in \(Self.self) '\(path)'") }
    return declared
  }

  /// The node at `key`, or nil with a "missing required key" diagnostic.
  func required(_ key: String, _ reader: inout NodeReader) -> YAMLNode? {
    assert(declaration(key).required, "'\(key)' is not declared required in '\(path)'")
    if let value = entries[key]?.value { return value }
    let place = path.isEmpty ? "at the top level" : "in \(path)"
    reader.error(node.location, "missing required key '\(key)' \(place)")
    return nil
  }

  /// The node at `key`: for a key declared required, nil with a "missing required key"
  /// diagnostic when it is absent.
  func node(_ key: String, _ reader: inout NodeReader) -> YAMLNode? {
    declaration(key).required ? required(key, &reader) : self[key]
  }

  /// The default `ManifestSchema` declares for `key`, as `T`.
  func defaultValue<T: DeclaredDefault>(_ key: String) -> T {
    guard let json = declaration(key).defaultValue, let value = T(declaredDefault: json) else {
      preconditionFailure("'\(path(key))' declares no default of type \(T.self)")
    }
    return value
  }
}

/// A type a key's declared default (`ManifestSchema.Key.defaultValue`, JSON) reads as.
protocol DeclaredDefault {
  init?(declaredDefault: JSONValue)
}

extension Int: DeclaredDefault {
  init?(declaredDefault json: JSONValue) {
    guard case .integer(let i) = json, let value = Int(exactly: i) else { return nil }
    self = value
  }
}

extension Bool: DeclaredDefault {
  init?(declaredDefault json: JSONValue) {
    guard case .bool(let b) = json else { return nil }
    self = b
  }
}

extension String: DeclaredDefault {
  init?(declaredDefault json: JSONValue) {
    guard case .string(let s) = json else { return nil }
    self = s
  }
}

extension JSONValue: DeclaredDefault {
  init?(declaredDefault json: JSONValue) { self = json }
}

extension DeclaredDefault where Self: RawRepresentable, RawValue == String {
  init?(declaredDefault json: JSONValue) {
    guard case .string(let s) = json else { return nil }
    self.init(rawValue: s)
  }
}

extension OutputFormat: DeclaredDefault {}
extension AnswerFormat: DeclaredDefault {}
extension HTTPStep.WriteMode: DeclaredDefault {}
extension HTTPStep.TypeRule: DeclaredDefault {}
extension ColumnType: DeclaredDefault {}
extension HTTPStep.Method: DeclaredDefault {}
extension OAuth2.ClientAuth: DeclaredDefault {}

// MARK: Values read as the schema declares them

extension NodeReader {
  /// The string at `key` of `fields`: non-empty when declared so; nil when absent (with a
  /// diagnostic when required) or not a string. `secret` and `credential` as for
  /// `text(_:_:secret:credential:)`.
  mutating func string(_ fields: Fields, _ key: String, secret: Bool = false, credential: Bool = false) -> String? {
    guard let node = fields.node(key, &self) else { return nil }
    guard case .string(let nonEmpty) = fields.declaration(key).value else { preconditionFailure("'\(key)' is not a string") }
    return nonEmpty
      ? nonEmptyString(node, fields.path(key), secret: secret, credential: credential)
      : string(node, fields.path(key), secret: secret, credential: credential)
  }

  /// The integer at `key` of `fields`, within its declared range; nil when absent or wrong.
  mutating func integer(_ fields: Fields, _ key: String) -> Int? {
    guard case .integer(let range) = fields.declaration(key).value else { preconditionFailure("'\(key)' is not an integer") }
    return fields.node(key, &self).flatMap { integer($0, fields.path(key), in: range) }
  }

  /// The boolean at `key` of `fields`; nil when absent or wrong.
  mutating func bool(_ fields: Fields, _ key: String) -> Bool? {
    fields.node(key, &self).flatMap { bool($0, fields.path(key)) }
  }

  /// The duration at `key` of `fields`, within its declared range; nil when absent or wrong.
  mutating func duration(_ fields: Fields, _ key: String) -> Duration? {
    guard case .duration(let minimum) = fields.declaration(key).value else { preconditionFailure("'\(key)' is not a duration") }
    return fields.node(key, &self).flatMap { duration($0, fields.path(key), minimum: minimum) }
  }

  /// One of `E`'s words at `key` of `fields`; nil when absent or wrong.
  mutating func choice<E: RawRepresentable & CaseIterable>(_ fields: Fields, _ key: String, as type: E.Type) -> E?
  where E.RawValue == String {
    fields.node(key, &self).flatMap { choice($0, fields.path(key), as: type) }
  }
}
