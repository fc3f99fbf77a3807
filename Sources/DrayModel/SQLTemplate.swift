/// SQL text with `{{ table "RESOURCE" "TABLE" }}` references to physical table names.
///
/// The SDK's `getTablesName(db, resource, params, table)` as template syntax:
///
///     SELECT * FROM {{ table "FRUITS" "output_table" }}
///     SELECT * FROM {{ table "SALES" "output_table" '{"region":"EU"}' }}
///
/// The optional third argument is the parameters object as JSON, in single quotes; without
/// it the default (empty) parameters are meant.
public struct SQLTemplate: Sendable, Hashable {
  /// A reference to one physical table.
  public struct TableReference: Sendable, Hashable {
    public var resource: String
    public var table: String
    /// The parameters' JSON text as written; nil for the default parameters.
    public var paramsJSON: String?
    /// Offset of `{{` in the SQL text, in Unicode scalars.
    public var offset: Int
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

  /// Parses `sql`.
  /// - Throws: `SQLTemplate.SyntaxError` with the offset (in Unicode scalars) of the bad template.
  public init(parsing sql: String) throws(SyntaxError) {
    var parts: [Part] = []
    let scalars = Array(sql.unicodeScalars)
    var text = String.UnicodeScalarView()
    var i = 0
    while i < scalars.count {
      if scalars[i] == "{" && i + 1 < scalars.count && scalars[i + 1] == "{" {
        let start = i
        var j = i + 2
        while j + 1 < scalars.count && !(scalars[j] == "}" && scalars[j + 1] == "}") { j += 1 }
        guard j + 1 < scalars.count else {
          throw SyntaxError(offset: start, message: "'{{' has no closing '}}'")
        }
        var inner = String.UnicodeScalarView()
        inner.append(contentsOf: scalars[(i + 2)..<j])
        let reference = try SQLTemplate.parseReference(String(inner), offset: start)
        if !text.isEmpty { parts.append(.text(String(text))) }
        text = String.UnicodeScalarView()
        parts.append(.table(reference))
        i = j + 2
      } else {
        text.append(scalars[i])
        i += 1
      }
    }
    if !text.isEmpty { parts.append(.text(String(text))) }
    self.parts = parts
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
    var arguments: [(String, Character)] = []
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
      guard let close = rest.firstIndex(of: quote) else {
        throw SyntaxError(offset: offset, message: "unterminated string in template")
      }
      arguments.append((String(rest[..<close]), quote))
      rest = rest[rest.index(after: close)...]
      skipSpaces()
    }
    guard arguments.count == 2 || arguments.count == 3 else {
      throw SyntaxError(
        offset: offset,
        message: "{{ table }} takes a resource and a table name, and optionally parameters as JSON: {{ table \"RESOURCE\" \"TABLE\" }}")
    }
    guard !arguments[0].0.isEmpty, !arguments[1].0.isEmpty else {
      throw SyntaxError(offset: offset, message: "{{ table }} needs a non-empty resource and table name")
    }
    return TableReference(
      resource: arguments[0].0, table: arguments[1].0,
      paramsJSON: arguments.count == 3 ? arguments[2].0 : nil, offset: offset)
  }
}
