internal import CYAML
internal import DrayModel

/// Builds a `YAMLNode` tree from libyaml's event stream.
///
/// Rules beyond libyaml's own syntax checks:
/// - one document per file (a leading `---` is fine);
/// - a duplicate mapping key is an error naming both lines;
/// - a tab used as indentation is reported as such;
/// - anchors and aliases are supported; an alias shares its anchor's node (no copy), and
///   the expanded size of the document is bounded by `maxNodes`, so a "billion laughs"
///   document fails at once with bounded memory;
/// - `<<` merge keys (YAML 1.1 merge type) merge a mapping or a list of mappings into the
///   enclosing mapping; keys written in the mapping win, then earlier merged mappings;
/// - nesting deeper than `maxDepth` is refused.
public struct YAMLParser {
  /// Most nodes a document may expand to, aliases counted at their expanded size.
  public static let maxNodes = 1_000_000
  /// Deepest nesting of mappings and lists.
  public static let maxDepth = 200
  /// libyaml's limit on the length of an implicit ("simple") mapping key, in characters.
  public static let maxSimpleKeyLength = 1024

  let file: String

  public init(file: String) { self.file = file }

  /// Parses `source` into its single document's root node.
  /// - Returns: the root, or nil for an empty document.
  /// - Throws: `ManifestError` with every problem found (syntax errors stop the parse).
  public func parse(_ source: String) throws(ManifestError) -> YAMLNode? {
    var text = source
    if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
    var builder = Builder(file: file)
    let failure: Diagnostic? = text.utf8CString.withUnsafeBufferPointer { buffer in
      var parser = yaml_parser_t()
      guard yaml_parser_initialize(&parser) == 1 else {
        return Diagnostic(builder.location(0, 0), "out of memory starting the YAML parser")
      }
      defer { yaml_parser_delete(&parser) }
      buffer.baseAddress!.withMemoryRebound(to: UInt8.self, capacity: buffer.count) { bytes in
        yaml_parser_set_input_string(&parser, bytes, buffer.count - 1)
      }
      yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
      var event = yaml_event_t()
      while true {
        guard yaml_parser_parse(&parser, &event) == 1 else {
          return syntaxError(parser, text)
        }
        defer { yaml_event_delete(&event) }
        if event.type == YAML_STREAM_END_EVENT { return nil }
        if let stop = builder.handle(event) { return stop }
      }
    }
    if let failure {
      throw ManifestError(diagnostics: builder.diagnostics + [failure], source: text)
    }
    if !builder.diagnostics.isEmpty {
      throw ManifestError(diagnostics: builder.diagnostics, source: text)
    }
    return builder.root
  }

  private func syntaxError(_ parser: yaml_parser_t, _ text: String) -> Diagnostic {
    let problem = parser.problem.map { String(cString: $0) } ?? "unknown error"
    let context = parser.context.map { String(cString: $0) }
    let mark = parser.problem_mark
    let location = SourceLocation(file: file, line: mark.line + 1, column: mark.column + 1)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    // A tab in the indentation of the failing line (or of the line its context started on)
    // is the usual cause; say so instead of libyaml's generic message.
    for lineIndex in [mark.line, parser.context_mark.line] where lineIndex < lines.count {
      let line = lines[lineIndex]
      let indentation = line.unicodeScalars.prefix { $0 == " " || $0 == "\t" }
      if let tab = indentation.firstIndex(of: "\t") {
        let column = indentation.distance(from: indentation.startIndex, to: tab) + 1
        return Diagnostic(
          SourceLocation(file: file, line: lineIndex + 1, column: column),
          "a tab is used for indentation; YAML indents with spaces only")
      }
    }
    if context == "while scanning a simple key" {
      let start = parser.context_mark
      if mark.index - start.index > YAMLParser.maxSimpleKeyLength
        || mark.line > start.line
      {
        let keyStart = SourceLocation(file: file, line: start.line + 1, column: start.column + 1)
        if mark.line == start.line {
          return Diagnostic(
            keyStart,
            "a mapping key is longer than \(YAMLParser.maxSimpleKeyLength) characters, "
              + "the most YAML allows for an implicit key; shorten it, or write it as an "
              + "explicit key (`? key` on its own line, then `: value`)")
        }
        return Diagnostic(keyStart, "expected ':' after this key on the same line")
      }
    }
    var message = "YAML syntax error: \(problem)"
    if let context {
      message += " (\(context) started at line \(parser.context_mark.line + 1), column \(parser.context_mark.column + 1))"
    }
    return Diagnostic(location, message)
  }
}

/// Turns events into nodes; one frame per open collection.
private struct Builder {
  struct Frame {
    var isMapping: Bool
    var location: SourceLocation
    var anchor: String?
    var items: [YAMLNode] = []
    var size = 1
  }

  let file: String
  var stack: [Frame] = []
  var anchors: [String: YAMLNode] = [:]
  var root: YAMLNode?
  var documents = 0
  var totalSize = 0
  var diagnostics: [Diagnostic] = []

  init(file: String) { self.file = file }

  func location(_ line: Int, _ column: Int) -> SourceLocation {
    SourceLocation(file: file, line: line + 1, column: column + 1)
  }

  /// Handles one event; returns a diagnostic when parsing must stop.
  mutating func handle(_ event: yaml_event_t) -> Diagnostic? {
    let at = location(event.start_mark.line, event.start_mark.column)
    switch event.type {
    case YAML_DOCUMENT_START_EVENT:
      documents += 1
      if documents > 1 {
        return Diagnostic(
          at, "a manifest holds one YAML document; a second one starts here (remove it or move it to its own file)")
      }
    case YAML_SCALAR_EVENT:
      let data = event.data.scalar
      let text = string(data.value, data.length)
      let style: YAMLNode.ScalarStyle =
        switch data.style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: .literal
        case YAML_FOLDED_SCALAR_STYLE: .folded
        default: .plain
        }
      let tag = data.tag.map { String(cString: $0) }
      let node = YAMLNode(content: .scalar(.init(text: text, style: style, tag: tag)), location: at, size: 1)
      return add(node, anchor: data.anchor.map { String(cString: $0) })
    case YAML_ALIAS_EVENT:
      let name = String(cString: event.data.alias.anchor)
      guard let node = anchors[name] else {
        return Diagnostic(at, "alias '*\(name)' refers to no anchor defined before it")
      }
      var aliased = node
      aliased.location = at
      return add(aliased, anchor: nil)
    case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
      if stack.count >= YAMLParser.maxDepth {
        return Diagnostic(at, "nesting is deeper than \(YAMLParser.maxDepth) levels")
      }
      let isMapping = event.type == YAML_MAPPING_START_EVENT
      let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
      stack.append(Frame(isMapping: isMapping, location: at, anchor: anchor.map { String(cString: $0) }))
    case YAML_SEQUENCE_END_EVENT:
      let frame = stack.removeLast()
      return add(YAMLNode(content: .sequence(frame.items), location: frame.location, size: frame.size), anchor: frame.anchor)
    case YAML_MAPPING_END_EVENT:
      let frame = stack.removeLast()
      let pairs = mappingPairs(frame.items)
      let node = YAMLNode(content: .mapping(pairs), location: frame.location, size: frame.size)
      return add(node, anchor: frame.anchor)
    default:
      break
    }
    return nil
  }

  private mutating func add(_ node: YAMLNode, anchor: String?) -> Diagnostic? {
    totalSize += node.size
    if totalSize > YAMLParser.maxNodes {
      return Diagnostic(
        node.location,
        "the document expands to more than \(YAMLParser.maxNodes) nodes through aliases; refusing to expand it")
    }
    if let anchor { anchors[anchor] = node }
    if stack.isEmpty {
      root = node
    } else {
      stack[stack.count - 1].items.append(node)
      stack[stack.count - 1].size += node.size
    }
    return nil
  }

  /// Pairs the items of a mapping, checks duplicate keys and applies `<<` merge keys.
  private mutating func mappingPairs(_ items: [YAMLNode]) -> [YAMLNode.Pair] {
    var explicit: [YAMLNode.Pair] = []
    var merged: [YAMLNode.Pair] = []
    var seen: [String: SourceLocation] = [:]
    var index = 0
    while index + 1 < items.count {
      let key = items[index]
      let value = items[index + 1]
      index += 2
      guard let scalar = key.scalar else {
        diagnostics.append(Diagnostic(key.location, "a mapping key must be a plain value, not \(key.kindDescription)"))
        continue
      }
      if scalar.style == .plain && scalar.text == "<<" && scalar.tag == nil {
        merged.append(contentsOf: mergeSources(value))
        continue
      }
      if let first = seen[scalar.text] {
        diagnostics.append(
          Diagnostic(key.location, "duplicate key '\(scalar.text)'; it is already set at line \(first.line)"))
        continue
      }
      seen[scalar.text] = key.location
      explicit.append(YAMLNode.Pair(key: key, value: value))
    }
    for pair in merged {
      guard let text = pair.key.scalar?.text, seen[text] == nil else { continue }
      seen[text] = pair.key.location
      explicit.append(pair)
    }
    return explicit
  }

  /// The pairs a `<<` value brings: a mapping's, or each mapping's of a list, in order.
  private mutating func mergeSources(_ value: YAMLNode) -> [YAMLNode.Pair] {
    switch value.content {
    case .mapping(let pairs):
      return pairs
    case .sequence(let nodes):
      var out: [YAMLNode.Pair] = []
      for node in nodes {
        if case .mapping(let pairs) = node.content {
          out.append(contentsOf: pairs)
        } else {
          diagnostics.append(Diagnostic(node.location, "a '<<' merge list holds mappings only, not \(node.kindDescription)"))
        }
      }
      return out
    case .scalar:
      diagnostics.append(Diagnostic(value.location, "a '<<' merge key takes a mapping or a list of mappings, not \(value.kindDescription)"))
      return []
    }
  }

  private func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?, _ length: Int) -> String {
    guard let pointer else { return "" }
    return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
  }
}
