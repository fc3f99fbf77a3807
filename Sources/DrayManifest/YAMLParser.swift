internal import CYAML
public import DrayModel

/// Builds a `YAMLNode` tree from libyaml's event stream.
///
/// libyaml checks the syntax of YAML 1.2.2 (chapters 6 to 9); a UTF-8 byte order mark is
/// dropped first (§5.2), and line breaks, CRLF included, are normalised to `\n` inside
/// scalars (§5.4, §6.5). Rules beyond libyaml's own checks:
/// - one document per file (a leading `---` is fine; §9.2 allows a stream of several, a
///   manifest is one);
/// - a duplicate mapping key is an error naming both lines (§3.2.1.1: keys are unique);
/// - a tab used as indentation is reported as such (§6.1: tabs never indent);
/// - anchors and aliases (§3.2.2.2, §7.1) are supported; an alias shares its anchor's node
///   (no copy), and the expanded size of the document is bounded by `maxNodes`, so a
///   "billion laughs" document fails at once with bounded memory;
/// - `<<` merge keys (the YAML 1.1 merge type, yaml.org/type/merge.html) merge a mapping or
///   a list of mappings into the enclosing mapping; keys written in the mapping win, then
///   earlier merged mappings; a second `<<` in one mapping is a duplicate key;
/// - tags other than `!!str` are refused (§10.3 core schema types are resolved from plain
///   text instead, by `CoreSchema`);
/// - nesting deeper than `maxDepth` is refused;
/// - a key holding U+0000 (`"a\0b"`) is refused: C libraries would read it cut short.
///
/// Positions are converted once, here: libyaml's 0-based marks (columns in characters)
/// become 1-based `SourceLocation`s.
public struct YAMLParser {
  /// Most nodes a document may expand to, aliases counted at their expanded size.
  public static let maxNodes = 1_000_000
  /// Deepest nesting of mappings and lists.
  public static let maxDepth = 200
  /// libyaml's limit on the length of an implicit ("simple") mapping key, in characters.
  public static let maxSimpleKeyLength = 1024

  /// The libyaml loaded at run time (`yaml_get_version_string`).
  public static var libraryVersion: LibraryVersion {
    LibraryVersion(name: "libyaml", version: String(cString: yaml_get_version_string()))
  }

  let file: String

  public init(file: String) { self.file = file }

  /// Parses `source` into its single document's root node.
  /// - Returns: the root, or nil for an empty document.
  /// - Throws: `ManifestError` with every problem found (syntax errors stop the parse).
  public func parse(_ source: String) throws(ManifestError) -> YAMLNode? {
    let (root, problems) = try parseKeepingProblems(source)
    if !problems.isEmpty { throw ManifestError(diagnostics: problems, source: source) }
    return root
  }

  /// Parses `source` into its single document's root node, with the problems found in a
  /// document that parsed (a duplicate key, a refused tag or merge key: each dropped from
  /// the tree), so that validation can read the rest in the same pass.
  /// - Returns: the root, or nil for an empty document, and those problems.
  /// - Throws: `ManifestError` when the document does not parse (a syntax error, an alias
  ///   bomb, too deep a nesting), with every problem found before.
  func parseKeepingProblems(_ source: String) throws(ManifestError) -> (root: YAMLNode?, problems: [Diagnostic]) {
    var text = source
    if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
    var builder = Builder(file: file)
    let failure: Diagnostic? = text.utf8CString.withUnsafeBufferPointer { buffer in
      var parser = yaml_parser_t()
      guard yaml_parser_initialize(&parser) == 1 else {
        return Diagnostic(builder.location(0, 0), "out of memory starting the YAML parser")
      }
      defer { yaml_parser_delete(&parser) }
      // `utf8CString` ends in a NUL: never empty, so it has an address.
      guard let start = buffer.baseAddress else { return Diagnostic(builder.location(0, 0), "the manifest text could not be read") }
      start.withMemoryRebound(to: UInt8.self, capacity: buffer.count) { bytes in
        yaml_parser_set_input_string(&parser, bytes, buffer.count - 1)
      }
      yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
      var event = yaml_event_t()
      while true {
        guard yaml_parser_parse(&parser, &event) == 1 else {
          return syntaxError(parser, text, lastScalar: builder.lastScalar)
        }
        defer { yaml_event_delete(&event) }
        if event.type == YAML_STREAM_END_EVENT { return nil }
        if let stop = builder.handle(event) { return stop }
      }
    }
    if let failure {
      throw ManifestError(diagnostics: builder.diagnostics + [failure], source: text)
    }
    return (builder.root, builder.diagnostics)
  }

  /// - Parameter lastScalar: where the last non-empty scalar before the error started
  ///   (line, column, character index, all 0-based), to recognise an over-long key.
  private func syntaxError(_ parser: yaml_parser_t, _ text: String, lastScalar: (line: Int, column: Int, index: Int)?) -> Diagnostic {
    let problem = parser.problem.map { String(cString: $0) } ?? "unknown error"
    let context = parser.context.map { String(cString: $0) }
    let mark = parser.problem_mark
    let start = parser.context_mark
    let location = SourceLocation(file: file, line: mark.line + 1, column: mark.column + 1)
    let opened = "line \(start.line + 1), column \(start.column + 1)"
    let lines = SourceText.lines(text)
    // A tab in the indentation of the failing line (or of the line its context started on)
    // is the usual cause; say so instead of libyaml's generic message.
    for lineIndex in [mark.line, start.line] where lineIndex < lines.count {
      let line = lines[lineIndex]
      let indentation = line.unicodeScalars.prefix { $0 == " " || $0 == "\t" }
      if let tab = indentation.firstIndex(of: "\t") {
        let column = indentation.distance(from: indentation.startIndex, to: tab) + 1
        return Diagnostic(
          SourceLocation(file: file, line: lineIndex + 1, column: column),
          "a tab is used for indentation; YAML indents with spaces only")
      }
    }
    let longKey =
      "a mapping key is longer than \(YAMLParser.maxSimpleKeyLength) characters, "
      + "the most YAML allows for an implicit key; shorten it, or write it as an "
      + "explicit key (`? key` on its own line, then `: value`)"
    if context == "while scanning a simple key" {
      if mark.index - start.index > YAMLParser.maxSimpleKeyLength || mark.line > start.line {
        let keyStart = SourceLocation(file: file, line: start.line + 1, column: start.column + 1)
        if mark.line == start.line { return Diagnostic(keyStart, longKey) }
        return Diagnostic(keyStart, "expected ':' after this key on the same line")
      }
    }
    // libyaml stops treating a scalar as a possible key after 1024 characters, so a ':'
    // after a longer one reads as a misplaced ':'.
    if let key = lastScalar, key.line == mark.line, mark.index - key.index > YAMLParser.maxSimpleKeyLength,
      problem == "mapping values are not allowed in this context" || problem == "did not find expected ',' or '}'"
    {
      return Diagnostic(SourceLocation(file: file, line: key.line + 1, column: key.column + 1), longKey)
    }
    // libyaml's wording for the common mistakes, said the way a person would fix them.
    switch (problem, context) {
    case ("did not find expected ',' or '}'", "while parsing a flow mapping"):
      return Diagnostic(
        location,
        "expected ',' or '}' in the { } mapping opened at \(opened); inside { } and [ ], "
          + "quote a value that holds '{', '}', '[', ']' or ',', such as \"reports/{job}.json\"")
    case ("did not find expected ',' or ']'", "while parsing a flow sequence"):
      return Diagnostic(
        location,
        "expected ',' or ']' in the [ ] list opened at \(opened); inside { } and [ ], "
          + "quote a value that holds '{', '}', '[', ']' or ','")
    case ("found unexpected end of stream", "while scanning a quoted scalar"):
      return Diagnostic(
        SourceLocation(file: file, line: start.line + 1, column: start.column + 1), "this quoted string is never closed")
    case ("mapping values are not allowed in this context", _):
      return Diagnostic(
        location, "unexpected ':' here; quote a value that holds ': ', or check the indentation of this line")
    case ("did not find expected key", "while parsing a block mapping"):
      return Diagnostic(
        location, "expected a key at the indentation of the mapping that starts at \(opened); check the indentation of this line")
    case ("did not find expected '-' indicator", "while parsing a block collection"):
      return Diagnostic(
        location, "expected a list item ('- ') at the indentation of the list that starts at \(opened); check the indentation of this line")
    case ("found character that cannot start any token", _):
      let scalar = Self.scalar(at: mark.line, mark.column, in: lines)
      return Diagnostic(location, "\(scalar.map { "'\($0)'" } ?? "this character") cannot start a value; quote the value")
    case ("control characters are not allowed", _):
      return Diagnostic(location, "the manifest holds a control character; YAML allows tabs and line breaks only")
    default:
      var message = "YAML syntax error: \(problem)"
      if let context { message += " (\(context) started at \(opened))" }
      return Diagnostic(location, message)
    }
  }

  private static func scalar(at line: Int, _ column: Int, in lines: [Substring]) -> Unicode.Scalar? {
    guard line < lines.count else { return nil }
    let scalars = Array(lines[line].unicodeScalars)
    return column < scalars.count ? scalars[column] : nil
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
  /// Where the last non-empty scalar started, 0-based: line, column, character index.
  var lastScalar: (line: Int, column: Int, index: Int)?

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
      if event.end_mark.index > event.start_mark.index {
        lastScalar = (event.start_mark.line, event.start_mark.column, event.start_mark.index)
      }
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
      checkTag(tag, at: at)
      let node = YAMLNode(content: .scalar(.init(text: text, style: style, tag: tag)), location: at, size: 1)
      return add(node, anchor: data.anchor.map { String(cString: $0) }, newNodes: 1)
    case YAML_ALIAS_EVENT:
      let name = String(cString: event.data.alias.anchor)
      guard let node = anchors[name] else {
        return Diagnostic(at, "alias '*\(name)' refers to no anchor defined before it")
      }
      var aliased = node
      aliased.location = at
      // The alias shares the anchored node; it counts at its expanded size.
      return add(aliased, anchor: nil, newNodes: node.size)
    case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
      if stack.count >= YAMLParser.maxDepth {
        return Diagnostic(at, "nesting is deeper than \(YAMLParser.maxDepth) levels")
      }
      let isMapping = event.type == YAML_MAPPING_START_EVENT
      let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
      checkTag((isMapping ? event.data.mapping_start.tag : event.data.sequence_start.tag).map { String(cString: $0) }, at: at)
      stack.append(Frame(isMapping: isMapping, location: at, anchor: anchor.map { String(cString: $0) }))
    case YAML_SEQUENCE_END_EVENT:
      let frame = stack.removeLast()
      let node = YAMLNode(content: .sequence(frame.items), location: frame.location, size: frame.size)
      return add(node, anchor: frame.anchor, newNodes: 1)
    case YAML_MAPPING_END_EVENT:
      let frame = stack.removeLast()
      let pairs = mappingPairs(frame.items)
      let node = YAMLNode(content: .mapping(pairs), location: frame.location, size: frame.size)
      return add(node, anchor: frame.anchor, newNodes: 1)
    default:
      break
    }
    return nil
  }

  /// Adds `node` to the open collection (or makes it the root); `newNodes` is how many
  /// nodes it adds to the document: 1 for a scalar or a closed collection (whose items were
  /// counted as they came), the expanded size for an alias.
  private mutating func add(_ node: YAMLNode, anchor: String?, newNodes: Int) -> Diagnostic? {
    totalSize += newNodes
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
    // By bytes: keys are equal only character by character (YAML 1.2 §3.2.1.3), never by
    // Unicode canonical equivalence (`é` and `e\u{301}` are two query parameters).
    var seen: [[UInt8]: SourceLocation] = [:]
    var mergeKey: SourceLocation?
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
        if let first = mergeKey {
          diagnostics.append(
            Diagnostic(
              key.location, "duplicate merge key '<<'; it is already set at line \(first.line) (merge several mappings with '<<: [*a, *b]')"
            ))
          continue
        }
        mergeKey = key.location
        merged.append(contentsOf: mergeSources(value))
        continue
      }
      if Interpolator.holdsNUL(scalar.text) {
        let shown = scalar.text.replacing("\0", with: "\\0")
        diagnostics.append(
          Diagnostic(key.location, "the key '\(shown)' holds a NUL character (U+0000, written \\0), which would cut it short; remove it"))
        continue
      }
      if let first = seen[Array(scalar.text.utf8)] {
        diagnostics.append(
          Diagnostic(key.location, "duplicate key '\(scalar.text)'; it is already set at line \(first.line)"))
        continue
      }
      seen[Array(scalar.text.utf8)] = key.location
      explicit.append(YAMLNode.Pair(key: key, value: value))
    }
    for pair in merged {
      guard let text = pair.key.scalar?.text, seen[Array(text.utf8)] == nil else { continue }
      seen[Array(text.utf8)] = pair.key.location
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

  /// Tags other than `!!str` (and the no-op `!!map`, `!!seq`, `!`) are refused: a custom tag
  /// such as `!secret` would otherwise be silently ignored.
  private mutating func checkTag(_ tag: String?, at location: SourceLocation) {
    guard let tag, !Self.acceptedTags.contains(tag) else { return }
    let core = "tag:yaml.org,2002:"
    let shown = tag.hasPrefix(core) ? "!!" + tag.dropFirst(core.count) : tag
    diagnostics.append(
      Diagnostic(
        location,
        "the tag '\(shown)' is not supported; write the value without a tag (the one tag dray reads is !!str, which keeps a value as text)")
    )
  }

  static let acceptedTags: Set<String> = ["!", "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"]

  private func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?, _ length: Int) -> String {
    guard let pointer else { return "" }
    return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
  }
}
