/// SQL text with `{{ table "RESOURCE" "TABLE" }}` references to physical table names.
///
/// The SDK's `getTablesName(db, resource, params, table)` as template syntax:
///
///     SELECT * FROM {{ table "FRUITS" "output_table" }}
///     SELECT * FROM {{ table "SALES" "output_table" '{"region":"EU"}' }}
///
/// The optional third argument is the parameters object as JSON, in single quotes; without
/// it the default (empty) parameters are meant. Inside an argument, its quote doubled stands
/// for one, as in SQL: `{{ table "SAY ""HI""" "output_table" }}` names the resource
/// `SAY "HI"`, and `'{"note":"it''s"}'` the parameters `{"note":"it's"}`.
public struct SQLTemplate: Sendable, Hashable {
  /// A reference to one physical table.
  public struct TableReference: Sendable, Hashable {
    public var resource: String
    public var table: String
    /// The parameters' JSON text as written; nil for the default parameters.
    public var paramsJSON: String?
    /// Offset of `{{` in the SQL text, in Unicode scalars.
    public var offset: Int

    /// The reference as a template writes it, each argument's quote doubled inside it:
    /// `{{ table "SAY ""HI""" "output_table" '{"region":"EU"}' }}`; without the parameters
    /// when `parameters` is false.
    public func written(parameters: Bool = true) -> String {
      func quoted(_ text: String, _ quote: String) -> String { quote + text.replacing(quote, with: quote + quote) + quote }
      let json = parameters ? paramsJSON.map { " " + quoted($0, "'") } ?? "" : ""
      return "{{ table \(quoted(resource, "\"")) \(quoted(table, "\""))\(json) }}"
    }
  }

  public enum Part: Sendable, Hashable {
    case text(String)
    case table(TableReference)
  }

  public var parts: [Part]

  /// The table references, in order.
  public var references: [TableReference] {
    parts.compactMap { if case .table(let r) = $0 { r } else { nil } }
  }

  /// Parses `sql`, in one pass over its UTF-8 bytes (a 5 MB statement list is cheap).
  /// - Throws: `SQLTemplate.SyntaxError` with the offset (in Unicode scalars) of the bad template.
  public init(parsing sql: String) throws(SyntaxError) {
    var sql = sql
    let result: Result<[Part], SyntaxError> = sql.withUTF8 { bytes in
      do throws(SyntaxError) {
        return .success(try SQLTemplate.parts(bytes))
      } catch {
        return .failure(error)
      }
    }
    self.parts = try result.get()
  }

  private static func parts(_ bytes: UnsafeBufferPointer<UInt8>) throws(SyntaxError) -> [Part] {
    let open = UInt8(ascii: "{")
    let close = UInt8(ascii: "}")
    func text(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
    var parts: [Part] = []
    var textStart = 0
    var index = 0
    var scalars = 0  // Unicode scalars before `index`
    while index < bytes.count {
      let byte = bytes[index]
      guard byte == open, index + 1 < bytes.count, bytes[index + 1] == open else {
        if byte & 0xC0 != 0x80 { scalars += 1 }
        index += 1
        continue
      }
      var end = index + 2
      while end + 1 < bytes.count && !(bytes[end] == close && bytes[end + 1] == close) { end += 1 }
      guard end + 1 < bytes.count else { throw SyntaxError(offset: scalars, message: "'{{' has no closing '}}'") }
      let inner = text(index + 2..<end)
      let reference = try parseReference(inner, offset: scalars)
      if textStart < index { parts.append(.text(text(textStart..<index))) }
      parts.append(.table(reference))
      scalars += 4 + inner.unicodeScalars.count
      index = end + 2
      textStart = index
    }
    if textStart < bytes.count { parts.append(.text(text(textStart..<bytes.count))) }
    return parts
  }

  /// The SQL with each reference replaced by `name(reference)`.
  public func render(_ name: (TableReference) throws -> String) rethrows -> String {
    var out = ""
    for part in parts {
      switch part {
      case .text(let t): out += t
      case .table(let r): out += try name(r)
      }
    }
    return out
  }

  public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var offset: Int
    public var message: String
    public var description: String { message }
  }

  private static func parseReference(_ inner: String, offset: Int) throws(SyntaxError) -> TableReference {
    var arguments: [String] = []
    var rest = Substring(inner)
    func skipSpaces() { rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "\n" } }
    skipSpaces()
    guard rest.hasPrefix("table") else {
      throw SyntaxError(offset: offset, message: "unknown template '{{\(inner)}}'; the one function is: {{ table \"RESOURCE\" \"TABLE\" }}")
    }
    rest = rest.dropFirst(5)
    skipSpaces()
    while let quote = rest.first {
      guard quote == "\"" || quote == "'" else {
        throw SyntaxError(offset: offset, message: "template arguments are quoted strings: {{ table \"RESOURCE\" \"TABLE\" }}")
      }
      rest = rest.dropFirst()
      // A quote doubled inside an argument is one quote, as SQL writes it: "say ""hi""".
      var argument = ""
      while true {
        guard let close = rest.firstIndex(of: quote) else {
          throw SyntaxError(offset: offset, message: "unterminated string in template")
        }
        argument += rest[..<close]
        rest = rest[rest.index(after: close)...]
        guard rest.first == quote else { break }
        argument.append(quote)
        rest = rest.dropFirst()
      }
      arguments.append(argument)
      skipSpaces()
    }
    guard arguments.count == 2 || arguments.count == 3 else {
      throw SyntaxError(
        offset: offset,
        message: "{{ table }} takes a resource and a table name, and optionally parameters as JSON: {{ table \"RESOURCE\" \"TABLE\" }}")
    }
    guard !arguments[0].isEmpty, !arguments[1].isEmpty else {
      throw SyntaxError(offset: offset, message: "{{ table }} needs a non-empty resource and table name")
    }
    return TableReference(
      resource: arguments[0], table: arguments[1],
      paramsJSON: arguments.count == 3 ? arguments[2] : nil, offset: offset)
  }
}
