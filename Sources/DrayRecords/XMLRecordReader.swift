internal import CXML2
public import DrayModel
internal import Glibc

/// libxml2's global state, initialised once before the first reader (xmlInitParser(3)).
private let xmlReady: Void = xmlInitParser()

/// Reads the records of an XML answer from a file, streaming, with libxml2's `xmlTextReader`
/// (https://gnome.pages.gitlab.gnome.org/libxml2/devhelp/libxml2-xmlreader.html).
///
/// Each element an `XMLPath` selects is one record: the reader expands that element alone
/// (`xmlTextReaderExpand`), turns it into columns, and moves past it, so memory holds one
/// record at a time. Columns of a record element, by default:
///
/// - each attribute (`<item id="7">` gives `id`);
/// - each child element, by local name, with its text (`<name>Pear</name>` gives `name`);
///   a child repeated under one name gives a JSON list of the texts; a child with children
///   of its own gives all the text inside it, trimmed;
/// - the element's own text as `value`, when it has no child elements.
///
/// Values are typed by their form (see `RecordValue.init(xmlText:)`). With declared columns,
/// each column's value is the child element or attribute named like it, or what its
/// relative path selects (`owner/name`, `@id`, `.`).
///
/// Entities: internal entities the answer declares are expanded where referenced (when a
/// value is read, `xmlNodeGetContent`). External entities and DTDs are never loaded, from
/// the network (`XML_PARSE_NONET`) or from files (no `XML_PARSE_NOENT`, no
/// `XML_PARSE_DTDLOAD`), so an answer cannot make dray read local files; a reference to
/// text that would come from outside is a `RecordError`, not empty text. libxml2 refuses
/// nested expansion ("billion laughs") while parsing; `EntityBudget` bounds the rest
/// ("quadratic blowup").
public struct XMLRecordReader {
  /// The libxml2 loaded at run time (`xmlParserVersion`, digits such as "20914").
  public static var libraryVersion: LibraryVersion {
    _ = xmlReady
    return LibraryVersion(name: "libxml2", packed: Int(String(cString: dray_xml_parser_version())) ?? 0)
  }

  public var records: XMLPath?
  public var columns: [HTTPStep.Column]?
  public var probes: [XMLPath]

  public init(records: XMLPath?, columns: [HTTPStep.Column]? = nil, probes: [XMLPath] = []) {
    self.records = records
    self.columns = columns
    self.probes = probes
  }

  /// Reads `file`, handing each record to `each`.
  /// - Returns: how many records were read, and what each probe found.
  /// - Throws: `RecordError` when the file is not well-formed XML (an empty one included),
  ///   or when a records path
  ///   anchored at the root names another root element; errors thrown by `each` as they are.
  public func read(file: String, each: (Record) throws -> Void) throws -> AnswerSummary {
    _ = xmlReady
    let handle = try XMLReaderHandle(file: file, options: XMLRecordReader.options)
    var info = stat()
    let budget = EntityBudget(answerSize: stat(file, &info) == 0 ? Int(info.st_size) : 0)
    handle.budget = budget
    var summary = AnswerSummary()
    /// (qualified name, local name) of the open elements, the root first.
    var stack: [(String, String)] = []
    /// The local names of the elements met where each step of each watched path would be
    /// (children of what the steps before it select), by the step's index, at most
    /// `memberLimit` each, for "did you mean" when it selects nothing (docs/http.md, "A
    /// misspelt selector").
    var met: [XMLPath: [Int: [String]]] = [:]
    let watched = ((records.map { [$0] } ?? []) + probes).filter { !$0.steps.isEmpty }
    var sawRoot = false
    var status = xmlTextReaderRead(handle.reader)
    while status == 1 {
      let type = xmlTextReaderNodeType(handle.reader)
      if type == Int32(XML_READER_TYPE_END_ELEMENT.rawValue) {
        stack.removeLast()
      } else if type == Int32(XML_READER_TYPE_ELEMENT.rawValue) {
        let qualified = XMLReaderHandle.string(xmlTextReaderConstName(handle.reader))
        let local = XMLReaderHandle.string(xmlTextReaderConstLocalName(handle.reader))
        let empty = xmlTextReaderIsEmptyElement(handle.reader) == 1
        stack.append((qualified, local))
        for path in watched {
          // The first step of `//a/b` is at any depth: every element is where it would be.
          for depth in path.steps.indices
          where (depth > 0 || path.anchor == .root) && (met[path]?[depth]?.count ?? 0) < XMLRecordReader.memberLimit
            && XMLRecordReader.matches(path.anchor, path.steps.prefix(depth), stack.dropLast(), near: true)
          {
            met[path, default: [:]][depth, default: []].append(local)
          }
        }
        if !sawRoot {
          sawRoot = true
          if let records, records.anchor == .root, !XMLPath.matches(records.steps[0], qualified: qualified, local: local) {
            throw RecordError(
              "the records path '\(records)' starts at <\(records.steps[0])>, but the answer's root element is <\(qualified)>")
          }
        }
        for probe in probes where summary.values[.xml(probe)] == nil && XMLRecordReader.matches(probe, stack) {
          summary.values[.xml(probe)] = try handle.probe(probe)
        }
        if let records, XMLRecordReader.matches(records, stack) {
          guard let node = xmlTextReaderExpand(handle.reader) else { throw handle.failure(file: file) }
          try budget.charge(node)
          summary.records += 1
          try each(record(node, number: summary.records))
          stack.removeLast()
          status = xmlTextReaderNext(handle.reader)
          continue
        }
        if empty { stack.removeLast() }
      }
      status = xmlTextReaderRead(handle.reader)
    }
    if !sawRoot, let blank = BlankAnswer.size(ofFile: file) {
      throw RecordError(BlankAnswer.describe(bytes: blank) + "; an empty body is not an XML document")
    }
    if status < 0 { throw handle.failure(file: file) }
    if let records, summary.records == 0, let near = XMLRecordReader.nearSpelling(records, met: met[records] ?? [:]) {
      throw RecordError("the records path '\(records)' matches no element of the answer; did you mean '\(near)'?")
    }
    for probe in probes where summary.values[.xml(probe)] == nil {
      summary.nearSpellings[.xml(probe)] = XMLRecordReader.nearSpelling(probe, met: met[probe] ?? [:])
    }
    return summary
  }

  /// The most names of elements kept for one path's "did you mean".
  static let memberLimit = 1000

  /// "Did you mean": walks the steps of `path` from the first, and replaces each one whose
  /// local name is not among the elements met where it would be (`met`, by the step's
  /// index) by one a small edit away that is (`EditDistance.closest`, a different letter
  /// case included); gives the corrected path, or nil when no step needed one. The walk
  /// stops at a step with no near name.
  static func nearSpelling(_ path: XMLPath, met: [Int: [String]]) -> String? {
    var steps = path.steps
    for (depth, step) in path.steps.enumerated() {
      let names = met[depth] ?? []
      let local = String(step.split(separator: ":").last ?? "")
      if step == "*" || names.isEmpty || names.contains(local) { continue }
      guard let near = EditDistance.closest(to: local, among: names) else { break }
      steps[depth] = step.dropLast(local.count) + near
    }
    guard steps != path.steps else { return nil }
    let anchor = path.anchor == .root ? "/" : path.anchor == .anywhere ? "//" : ""
    return anchor + steps.joined(separator: "/") + (path.attribute.map { "/@" + $0 } ?? "")
  }

  /// libxml2's options for answers: no network, CDATA as text, errors collected rather
  /// than printed.
  static let options = Int32(
    XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)

  /// Whether the file at `path` holds a whole XML document: false when its text stops
  /// before the root element has closed (an empty file too), which is how an answer without
  /// a length shows that the connection closed mid-answer. Read with the options of `read`.
  public static func endsWhole(path: String) -> Bool {
    _ = xmlReady
    guard let handle = try? XMLReaderHandle(file: path, options: XMLRecordReader.options) else { return false }
    var depth = 0
    var sawRoot = false
    var status = xmlTextReaderRead(handle.reader)
    while status == 1 {
      let type = xmlTextReaderNodeType(handle.reader)
      if type == Int32(XML_READER_TYPE_ELEMENT.rawValue) {
        sawRoot = true
        if xmlTextReaderIsEmptyElement(handle.reader) != 1 { depth += 1 }
      } else if type == Int32(XML_READER_TYPE_END_ELEMENT.rawValue) {
        depth -= 1
      }
      status = xmlTextReaderRead(handle.reader)
    }
    return sawRoot && depth == 0
  }

  /// Whether the element at the top of `stack` is one `path` selects.
  static func matches(_ path: XMLPath, _ stack: [(String, String)]) -> Bool {
    matches(path.anchor, path.steps[...], stack[...])
  }

  /// Whether the element at the top of `stack` is one `steps` select from `anchor`; with
  /// `near`, or would be were some steps spelt as a name a small edit away
  /// (`EditDistance.closest`), for "did you mean".
  static func matches(
    _ anchor: XMLPath.Anchor, _ steps: ArraySlice<String>, _ stack: ArraySlice<(String, String)>, near: Bool = false
  ) -> Bool {
    switch anchor {
    case .root:
      guard stack.count == steps.count else { return false }
    case .anywhere, .relative:
      guard stack.count >= steps.count else { return false }
    }
    for (step, element) in zip(steps, stack.suffix(steps.count)) {
      if XMLPath.matches(step, qualified: element.0, local: element.1) { continue }
      if !near || EditDistance.closest(to: String(step.split(separator: ":").last ?? ""), among: [element.1]) == nil { return false }
    }
    return true
  }

  /// An expanded record element as columns.
  /// - Parameter number: the record's number in the answer, from 1, for messages.
  /// - Throws: `RecordError` when two of its attributes and children would be one column
  ///   (`RecordNames`): `<a>1</a><A>2</A>`, or `<item a="1"><a>2</a></item>`.
  func record(_ node: xmlNodePtr, number: Int) throws -> Record {
    if let columns {
      return columns.map { column in
        if case .xml(let path)? = column.from { return (column.name, XMLTree.value(at: path, in: node)) }
        if let child = XMLTree.children(of: node).first(where: { IdentifierKey.sameBytes(XMLTree.localName($0), column.name) }) {
          return (column.name, RecordValue(xmlText: XMLTree.text(child)))
        }
        return (column.name, XMLTree.attribute(column.name, of: node).map { RecordValue(xmlText: $0) } ?? .null)
      }
    }
    var record: Record = []
    var names: [(name: String, what: String)] = []
    var attribute = node.pointee.properties
    while let a = attribute {
      let name = XMLReaderHandle.string(a.pointee.name)
      record.append((name, XMLTree.attribute(name, of: node).map { RecordValue(xmlText: $0) } ?? .null))
      names.append((name, "attribute"))
      attribute = a.pointee.next
    }
    let children = XMLTree.children(of: node)
    if children.isEmpty {
      let text = XMLTree.text(node)
      if !text.trimmingXMLSpace.isEmpty {
        record.append(("value", RecordValue(xmlText: text)))
        names.append(("value", "element's own text, column"))
      }
      try RecordNames.check(names, record: number)
      return record
    }
    // Keyed by UTF-8 bytes: Swift's String equality would merge `é` and `e` + U+0301.
    var groups: [(name: String, values: [String])] = []  // in the order each name first appears
    var groupIndex: [[UInt8]: Int] = [:]
    for child in children {
      let name = XMLTree.localName(child)
      let text = XMLTree.children(of: child).isEmpty ? XMLTree.text(child) : XMLTree.text(child).trimmingXMLSpace
      if let index = groupIndex[Array(name.utf8)] {
        groups[index].values.append(text)
      } else {
        groupIndex[Array(name.utf8)] = groups.count
        groups.append((name, [text]))
      }
    }
    try RecordNames.check(names + groups.map { ($0.name, "child element") }, record: number)
    for (name, values) in groups {
      if values.count == 1 {
        record.append((name, RecordValue(xmlText: values[0])))
      } else {
        record.append((name, .text(JSONValue.array(values.map { .string($0) }).json)))
      }
    }
    return record
  }
}

/// Owns one `xmlTextReader` and collects the first error it reports.
private final class XMLReaderHandle {
  let reader: xmlTextReaderPtr
  private let errors = XMLErrors()

  init(file: String, options: Int32) throws {
    guard let reader = xmlReaderForFile(file, nil, options) else {
      throw RecordError("cannot read the answer at \(file)")
    }
    self.reader = reader
    xmlTextReaderSetStructuredErrorHandler(
      reader,
      { context, error in
        guard let context, let error else { return }
        let errors = Unmanaged<XMLErrors>.fromOpaque(context).takeUnretainedValue()
        guard errors.first == nil, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
        let message = error.pointee.message.map { String(cString: $0) } ?? "error \(error.pointee.code)"
        errors.first = (Int(error.pointee.line), message.trimmingXMLSpace)
      }, Unmanaged.passUnretained(errors).toOpaque())
  }

  deinit { xmlFreeTextReader(reader) }

  /// The error behind a failed read, with its line.
  func failure(file: String) -> RecordError {
    guard let (line, message) = errors.first else { return RecordError("the answer is not well-formed XML") }
    if line > 0 { return RecordError("the answer is not well-formed XML (line \(line): \(message))") }
    return RecordError("the answer is not well-formed XML (\(message))")
  }

  /// Bounds the text entity references add, when set.
  var budget: EntityBudget?

  /// What `path` finds at the current element: an attribute, or the element's text.
  /// - Throws: `RecordError` when its entity references pass the answer's `EntityBudget`.
  func probe(_ path: XMLPath) throws -> AnswerValue {
    if let attribute = path.attribute {
      guard let value = xmlTextReaderGetAttribute(reader, attribute) else { return .absent }
      defer { dray_xml_free(value) }
      return .text(XMLReaderHandle.string(value))
    }
    guard let node = xmlTextReaderExpand(reader) else { return .absent }
    if !XMLTree.children(of: node).isEmpty { return .structure("an element with child elements") }
    try budget?.charge(node)
    let text = XMLTree.text(node).trimmingXMLSpace
    return text.isEmpty ? .null : .text(text)
  }

  static func string(_ pointer: UnsafePointer<xmlChar>?) -> String {
    pointer.map { String(cString: $0) } ?? ""
  }
}

/// Bounds the text that references to entities declared in the answer's DTD add, over the
/// whole answer, to 10 MiB plus 10 times the answer's size.
///
/// libxml2 (2.9) stops nested expansion ("billion laughs": "Detected an entity reference
/// loop") while parsing, but without `XML_PARSE_NOENT` it keeps references as nodes, and
/// `xmlNodeGetContent` expands them when dray reads a value, unbounded: one 50 KB entity
/// referenced 50,000 times ("quadratic blowup") would be 2.5 GB of text. The budget counts
/// what each record's (and each probed element's) references expand to before any of its
/// text is read; 10 times mirrors libxml2's own tolerance for entity amplification
/// (`XML_PARSER_NON_LINEAR`).
final class EntityBudget {
  let limit: Int
  private(set) var used = 0
  /// The first reference to text dray does not load (an external entity, or an entity
  /// the answer's external DTD would declare).
  private(set) var unread: String?
  /// Expanded size of each entity met, by its declaration.
  private var sizes: [UnsafeMutableRawPointer: Int] = [:]

  init(answerSize: Int) {
    limit = (10 << 20) + 10 * max(0, answerSize)
  }

  /// Adds what the entity references inside `node` expand to.
  /// - Throws: `RecordError` once the answer's references add more than `limit` bytes.
  func charge(_ node: xmlNodePtr) throws {
    used = EntityBudget.add(used, referenced(under: node))
    if let unread {
      throw RecordError(
        "the answer refers to \(unread); dray never loads external entities or DTDs, and would read the reference as empty text. Have the server send the text itself"
      )
    }
    if used > limit {
      throw RecordError(
        "the answer's entity references expand to more than \(limit) bytes of text (10 MiB plus 10 times the answer's size); an answer that small cannot need that much, so it was refused (an entity expansion attack, or a server fault)"
      )
    }
  }

  /// The bytes entity references under `node` add.
  private func referenced(under node: xmlNodePtr) -> Int {
    var total = 0
    var child = node.pointee.children
    while let c = child, total <= limit {
      switch c.pointee.type {
      case XML_ENTITY_REF_NODE: total = EntityBudget.add(total, expanded(c))
      case XML_ELEMENT_NODE: total = EntityBudget.add(total, referenced(under: c))
      default: break
      }
      child = c.pointee.next
    }
    return total
  }

  /// The text an entity reference expands to, found as `xmlNodeGetContent` finds it
  /// (`xmlGetDocEntity`); predefined and unknown entities count nothing.
  private func expanded(_ reference: xmlNodePtr) -> Int {
    let name = String(cString: reference.pointee.name)
    guard let entity = xmlGetDocEntity(reference.pointee.doc, reference.pointee.name) else {
      // Undeclared: possible only when the answer names an external DTD, which holds it.
      if unread == nil { unread = "entity '\(name)', which only its external DTD could declare" }
      return 0
    }
    switch entity.pointee.etype {
    case XML_EXTERNAL_GENERAL_PARSED_ENTITY, XML_EXTERNAL_GENERAL_UNPARSED_ENTITY:
      if unread == nil { unread = "the external entity '\(name)'" }
      return 0
    default: break
    }
    let key = UnsafeMutableRawPointer(entity)
    if let size = sizes[key] { return size }
    sizes[key] = limit + 1  // a reference loop (which libxml2 refuses first) counts as too much
    var size = 0
    var child = entity.pointee.children
    while let c = child, size <= limit {
      switch c.pointee.type {
      case XML_TEXT_NODE, XML_CDATA_SECTION_NODE: size = EntityBudget.add(size, Int(xmlStrlen(c.pointee.content)))
      case XML_ENTITY_REF_NODE: size = EntityBudget.add(size, expanded(c))
      case XML_ELEMENT_NODE: size = EntityBudget.add(size, EntityBudget.text(under: c, budget: self))
      default: break
      }
      child = c.pointee.next
    }
    sizes[key] = size
    return size
  }

  /// All the text under an element inside an entity, references expanded.
  private static func text(under node: xmlNodePtr, budget: EntityBudget) -> Int {
    var size = 0
    var child = node.pointee.children
    while let c = child, size <= budget.limit {
      switch c.pointee.type {
      case XML_TEXT_NODE, XML_CDATA_SECTION_NODE: size = add(size, Int(xmlStrlen(c.pointee.content)))
      case XML_ENTITY_REF_NODE: size = add(size, budget.expanded(c))
      case XML_ELEMENT_NODE: size = add(size, text(under: c, budget: budget))
      default: break
      }
      child = c.pointee.next
    }
    return size
  }

  private static func add(_ a: Int, _ b: Int) -> Int {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? Int.max : sum
  }
}

/// The first error libxml2 reported: line and message.
private final class XMLErrors {
  var first: (Int, String)?
}

/// Reading an expanded element tree (valid until the reader moves on).
enum XMLTree {
  static func children(of node: xmlNodePtr) -> [xmlNodePtr] {
    var out: [xmlNodePtr] = []
    var child = node.pointee.children
    while let c = child {
      if c.pointee.type == XML_ELEMENT_NODE { out.append(c) }
      child = c.pointee.next
    }
    return out
  }

  static func localName(_ node: xmlNodePtr) -> String {
    node.pointee.name.map { String(cString: $0) } ?? ""
  }

  static func qualifiedName(_ node: xmlNodePtr) -> String {
    let local = localName(node)
    guard let prefix = node.pointee.ns?.pointee.prefix else { return local }
    return String(cString: prefix) + ":" + local
  }

  /// All the text inside `node` (`xmlNodeGetContent`).
  static func text(_ node: xmlNodePtr) -> String {
    guard let content = xmlNodeGetContent(node) else { return "" }
    defer { dray_xml_free(content) }
    return String(cString: content)
  }

  static func attribute(_ name: String, of node: xmlNodePtr) -> String? {
    guard let value = xmlGetProp(node, name) else { return nil }
    defer { dray_xml_free(value) }
    return String(cString: value)
  }

  /// The value a relative path selects below `node`: the first element each step matches,
  /// then its attribute or its text; null when nothing matches.
  static func value(at path: XMLPath, in node: xmlNodePtr) -> RecordValue {
    var current = node
    for step in path.steps {
      guard let next = children(of: current).first(where: { XMLPath.matches(step, qualified: qualifiedName($0), local: localName($0)) })
      else { return .null }
      current = next
    }
    if let attribute = path.attribute {
      return self.attribute(attribute, of: current).map { RecordValue(xmlText: $0) } ?? .null
    }
    let text = children(of: current).isEmpty ? self.text(current) : self.text(current).trimmingXMLSpace
    return RecordValue(xmlText: text)
  }
}
