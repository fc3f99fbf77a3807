/// `{name}` placeholders in the strings of a partitioned step, which take the partition's
/// values (docs/partitions.md). Only a step with `partitions:` reads them; there `{{` and
/// `}}` are literal braces. A name is a letter or `_`, then letters, digits or `_` (ASCII).
public enum Placeholders {
  /// A brace that begins no placeholder, or a placeholder the partition does not define.
  public struct Problem: Error, Equatable, CustomStringConvertible {
    /// What is wrong and what to write instead.
    public var description: String
    /// The byte offset (UTF-8, from 0) in the text where the problem starts.
    public var offset: Int
    /// The description says what to do already (no advice on defining the value follows).
    public var advised = false
  }

  /// One part of a text: literal text (braces unescaped) or a placeholder.
  enum Part: Equatable {
    case text(String)
    case name(String, offset: Int)
  }

  /// The placeholder names in `text`, in order (a name used twice is listed twice).
  /// - Throws: `Problem` for a `{` that opens no name (`{}`, `{a b}`, `{` at the end) or a
  ///   lone `}`.
  public static func names(in text: String) throws(Problem) -> [String] {
    try parts(of: text).compactMap { part in
      if case .name(let name, _) = part { name } else { nil }
    }
  }

  /// `text` with each placeholder replaced by its value in `partition`, passed through
  /// `encode` (percent-encoding where it lands in a URL), and `{{`, `}}` as single braces.
  /// - Throws: `Problem` for a brace that opens no placeholder, or a name `partition` does
  ///   not define.
  public static func fill(_ text: String, _ partition: Partition, encode: (String) -> String = { $0 }) throws(Problem)
    -> String
  {
    var out = ""
    for part in try parts(of: text) {
      switch part {
      case .text(let literal): out += literal
      case .name(let name, let offset):
        guard let value = partition[name] else {
          let known = partition.values.map { "{\($0.name)}" }.joined(separator: ", ")
          throw Problem(
            description: "placeholder {\(name)} is not a value of the partition (\(known.isEmpty ? "it has none" : "it has \(known)"))",
            offset: offset)
        }
        out += encode(value)
      }
    }
    return out
  }

  /// Refuses a value of `partition` that is empty, `.` or `..` where `path` uses it: the
  /// path would gain an empty segment (`/repos//issues`) or name another resource
  /// (`/repos/../issues`), not the partition's.
  /// - Throws: `Problem`, at the placeholder, naming it, the path it would send, and what to do.
  static func checkSegments(_ path: String, _ partition: Partition) throws(Problem) {
    for part in try parts(of: path) {
      guard case .name(let name, let offset) = part, let value = partition[name], ["", ".", ".."].contains(value) else { continue }
      let sent = (try? fill(path, partition)) ?? path
      let what = value.isEmpty ? "is empty" : "is '\(value)'"
      throw Problem(
        description: "path: placeholder {\(name)} \(what) in this partition, so the request would go to \(sent) "
          + "(\(value.isEmpty ? "an empty path segment" : "a segment that names another path")), not to the partition's resource; "
          + "leave such partitions out (in a rows query: WHERE \(name) <> ''; in a list: remove the entry)",
        offset: offset, advised: true)
    }
  }

  /// `value` as one URL path segment: every byte but RFC 3986's unreserved characters
  /// (§2.3: letters, digits, `-`, `.`, `_`, `~`) percent-encoded, so that a value holding
  /// `/`, `?` or `#` stays inside its segment.
  public static func pathSegment(_ value: String) -> String {
    var out = ""
    for byte in value.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
        UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
        out.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let hex = String(byte, radix: 16, uppercase: true)
        out += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return out
  }

  /// `value` as part of a file name: `/` and `\` (which would name folders), `:`, `*`, `?`,
  /// `"`, `<`, `>`, `|` (which some file systems refuse), `%` (so that the name reads back
  /// one way), control characters and `{`, `}` percent-encoded, as is a value that is `.`
  /// or `..` whole; anything else (letters of any script, spaces, `-`, `+`, `.`) stays.
  /// `2024-01-01T00:00:00+02:00` becomes `2024-01-01T00%3A00%3A00+02%3A00`.
  public static func fileName(_ value: String) -> String {
    func escaped(_ byte: UInt8) -> String {
      let hex = String(byte, radix: 16, uppercase: true)
      return "%" + (hex.count == 1 ? "0" + hex : hex)
    }
    if value == "." || value == ".." { return value.utf8.map(escaped).joined() }
    var out: [UInt8] = []
    for byte in value.utf8 {
      switch byte {
      case 0..<0x20, 0x7F, UInt8(ascii: "/"), UInt8(ascii: "\\"), UInt8(ascii: ":"), UInt8(ascii: "*"), UInt8(ascii: "?"),
        UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "|"), UInt8(ascii: "%"), UInt8(ascii: "{"),
        UInt8(ascii: "}"):
        out += Array(escaped(byte).utf8)
      default:
        out.append(byte)
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  static func parts(of text: String) throws(Problem) -> [Part] {
    let bytes = Array(text.utf8)
    var parts: [Part] = []
    var literal: [UInt8] = []
    var index = 0
    func flush() {
      if !literal.isEmpty { parts.append(.text(String(decoding: literal, as: UTF8.self))) }
      literal = []
    }
    while index < bytes.count {
      let byte = bytes[index]
      let next = index + 1 < bytes.count ? bytes[index + 1] : nil
      if byte == UInt8(ascii: "{") && next == UInt8(ascii: "{") || byte == UInt8(ascii: "}") && next == UInt8(ascii: "}") {
        literal.append(byte)
        index += 2
      } else if byte == UInt8(ascii: "}") {
        throw Problem(description: "a '}' that closes no placeholder: write '}}' for a literal brace", offset: index)
      } else if byte == UInt8(ascii: "{") {
        var end = index + 1
        while end < bytes.count, isNameByte(bytes[end], first: end == index + 1) { end += 1 }
        guard end > index + 1, end < bytes.count, bytes[end] == UInt8(ascii: "}") else {
          throw Problem(
            description: "a '{' that begins no placeholder: write {name} (letters, digits, _) or '{{' for a literal brace",
            offset: index)
        }
        flush()
        parts.append(.name(String(decoding: bytes[(index + 1)..<end], as: UTF8.self), offset: index))
        index = end + 1
      } else {
        literal.append(byte)
        index += 1
      }
    }
    flush()
    return parts
  }

  private static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"): true
    case UInt8(ascii: "0")...UInt8(ascii: "9"): !first
    default: false
    }
  }
}

extension HTTPStep {
  /// Stands for `{page}` while an output path is filled: no encoded value holds U+0000.
  private static let pageMark = "\u{0}page\u{0}"

  /// The step for one partition: placeholders in `path` (percent-encoded as one path
  /// segment), `query` values, header values and body strings (as the values are), and
  /// `output` (as file names, `Placeholders.fileName`; `{page}` stays for the page number)
  /// take `partition`'s values. Values
  /// that hold credentials (`QueryItem.isSecret`, `HTTPHeader.holdsSecret`) are left as
  /// they are: a secret may hold braces.
  /// - Throws: `Placeholders.Problem`, with the setting's name prefixed to its description.
  public func filled(with partition: Partition) throws -> HTTPStep {
    func fill(_ text: String, _ setting: String, in partition: Partition = partition, encode: (String) -> String = { $0 }) throws
      -> String
    {
      do {
        return try Placeholders.fill(text, partition, encode: encode)
      } catch {
        throw Placeholders.Problem(description: "\(setting): \(error.description)", offset: error.offset)
      }
    }
    var step = self
    if let path { try Placeholders.checkSegments(path, partition) }
    step.path = try path.map { try fill($0, "path", encode: Placeholders.pathSegment) }
    step.query = try query.map { item in
      item.isSecret ? item : QueryItem(item.name, try fill(item.value, "query.\(item.name)"))
    }
    step.headers = try headers.map { header in
      guard !header.holdsSecret && !HTTPHeader.isSecretName(header.name) else { return header }
      var filled = header
      filled.value = try fill(header.value, "headers.\(header.name)")
      return filled
    }
    switch body {
    case .json(let value)?: step.body = .json(try Placeholders.fill(value, partition, setting: "body"))
    case .form(let items)?:
      step.body = .form(try items.map { $0.isSecret ? $0 : QueryItem($0.name, try fill($0.value, "body.\($0.name)")) })
    case nil: break
    }
    // Values land in a file name (`Placeholders.fileName`); `{page}`, unless the partition
    // gives a `page`, stays for the page number.
    step.output = try output.map { output in
      var withPage = partition
      let keepsPage = withPage["page"] == nil
      if keepsPage { withPage.values.append((name: "page", value: Self.pageMark)) }
      let filled = try fill(output, "output", in: withPage, encode: { $0 == Self.pageMark && keepsPage ? $0 : Placeholders.fileName($0) })
      return keepsPage ? filled.replacing(Self.pageMark, with: "{page}") : filled
    }
    return step
  }
}

extension Placeholders {
  /// `value` with placeholders filled in its strings (object keys kept as they are).
  /// - Parameter setting: the setting's name, prefixed to a problem's description.
  public static func fill(_ value: JSONValue, _ partition: Partition, setting: String) throws(Problem) -> JSONValue {
    switch value {
    case .string(let text):
      do {
        return .string(try fill(text, partition))
      } catch {
        throw Problem(description: "\(setting): \(error.description)", offset: error.offset)
      }
    case .array(let items):
      var filled: [JSONValue] = []
      for (index, item) in items.enumerated() { filled.append(try fill(item, partition, setting: "\(setting)[\(index)]")) }
      return .array(filled)
    case .object(let members):
      var filled: [(key: String, value: JSONValue)] = []
      for member in members { filled.append((member.key, try fill(member.value, partition, setting: "\(setting).\(member.key)"))) }
      return .object(filled)
    case .null, .bool, .integer, .number: return value
    }
  }
}

extension TableStreamStep {
  /// The step for one partition: placeholders in the strings of `params` take
  /// `partition`'s values, so each partition is its own parameter set (and its own tables,
  /// as the platform names them).
  /// - Throws: `Placeholders.Problem`.
  public func filled(with partition: Partition) throws -> TableStreamStep {
    var step = self
    step.params = try Placeholders.fill(params, partition, setting: "params")
    return step
  }
}
