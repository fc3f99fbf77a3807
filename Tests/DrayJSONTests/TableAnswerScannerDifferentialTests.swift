import DrayModel
import DrayTestSupport
import Foundation
import Testing

@testable import DrayJSON

/// The table answer scanner checked against a well-kept parser of its own: every answer,
/// valid or not, read by the scanner (whole and in random pieces) and by Python's `json`
/// module (`PythonJSON`, a child process) must give the same events, or be refused by both;
/// the scanner alone refuses the strings Python reads leniently (lone UTF-16 surrogate
/// escapes). dray's own `JSONValue(parsing:)` reads with the scanner's lexer, so it is no
/// reference.
///
/// The cases come from `SeededRandom` (seed `DRAY_SCANNER_DIFF_SEED`, a fixed one by default);
/// a failure names the seed, the case and the bytes around it.
@Suite struct TableAnswerScannerDifferentialTests {
  static let seed = SeededRandom.seed(fromEnvironment: "DRAY_SCANNER_DIFF_SEED", fallback: 2026_12_01)

  // MARK: What the sinks see

  /// A value as a sink sees it: its kind and exact bytes.
  enum Token: Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number([UInt8])
    case string([UInt8])
    case nested([UInt8])

    init(_ token: JSONToken) {
      switch token {
      case .null: self = .null
      case .bool(let flag): self = .bool(flag)
      case .number(let text): self = .number(Array(text))
      case .string(let text): self = .string(Array(text))
      case .nested(let text): self = .nested(Array(text))
      }
    }

    /// A value of a tree, as the scanner promises to hand it over: numbers as written,
    /// strings as their UTF-8, arrays and objects as compact JSON text (key order kept, strings
    /// written by `JSONValue.writeString`, numbers as written).
    init(_ value: JSONValue) {
      switch value {
      case .null: self = .null
      case .bool(let flag): self = .bool(flag)
      case .integer(let integer): self = .number(Array(String(integer).utf8))
      case .number(let text): self = .number(Array(text.utf8))
      case .string(let text): self = .string(Array(text.utf8))
      case .array, .object: self = .nested(Array(value.json.utf8))
      }
    }

    var description: String {
      switch self {
      case .null: "null"
      case .bool(let flag): "\(flag)"
      case .number(let text): "n:" + Self.show(text)
      case .string(let text): "s:" + Self.show(text)
      case .nested(let text): "j:" + Self.show(text)
      }
    }

    /// Bytes as text, quoted, or in hex when they are not UTF-8; long ones shortened.
    static func show(_ bytes: [UInt8]) -> String {
      let shown = bytes.count > 120 ? Array(bytes.prefix(120)) : bytes
      let more = bytes.count > 120 ? "…(\(bytes.count) bytes)" : ""
      guard let text = String(validating: shown, as: UTF8.self) else {
        return "<" + shown.map { String($0, radix: 16) }.joined(separator: " ") + ">" + more
      }
      return JSONValue.quoted(text) + more
    }
  }

  /// What a sink is told.
  enum Event: Equatable, CustomStringConvertible {
    case table
    case name([UInt8])
    case list(String)
    case value(row: Int, column: Int, Token)
    case endRow(row: Int, values: Int)
    case id(item: Int, Token)
    case endList(String, items: Int)
    case endTable

    var description: String {
      switch self {
      case .table: "table"
      case .name(let name): "name " + Token.show(name)
      case .list(let key): "list \(key)"
      case .value(let row, let column, let token): "\(row).\(column) \(token)"
      case .endRow(let row, let values): "end row \(row) \(values)"
      case .id(let item, let token): "id \(item) \(token)"
      case .endList(let key, let items): "end \(key) \(items)"
      case .endTable: "end table"
      }
    }
  }

  /// Writes down every event, reading every list.
  final class Recorder: TableAnswerSink, TableAnswerRowSink {
    var events: [Event] = []

    func beginTable() { events.append(.table) }
    func tableName(_ name: String) { events.append(.name(Array(name.utf8))) }
    func endTable() { events.append(.endTable) }
    func beginList(_ key: TableAnswerKey) -> TableAnswerList {
      events.append(.list(key.name))
      return key == .deleteIDs ? .ids : .rows(self)
    }
    func endList(_ key: TableAnswerKey, items: Int) { events.append(.endList(key.name, items: items)) }
    func deleteID(_ token: JSONToken, item: Int) { events.append(.id(item: item, Token(token))) }
    func value(_ token: JSONToken, row: Int, column: Int) { events.append(.value(row: row, column: column, Token(token))) }
    func endRow(_ row: Int, values: Int) { events.append(.endRow(row: row, values: values)) }
  }

  enum Outcome {
    case accepted([Event])
    case refused(any Error)
  }

  /// The scanner's reading of `bytes` fed in `pieces` (ranges covering them in order).
  static func scan(_ bytes: [UInt8], pieces: [Range<Int>]) -> Outcome {
    let recorder = Recorder()
    let scanner = TableAnswerScanner(sink: recorder)
    do {
      try bytes.withUnsafeBytes { all in
        for piece in pieces { try scanner.feed(UnsafeRawBufferPointer(rebasing: all[piece])) }
      }
      try scanner.finish()
      return .accepted(recorder.events)
    } catch {
      return .refused(error)
    }
  }

  // MARK: The reference reading

  /// The events of `bytes` read by Python's `json` module (numbers as written, key order
  /// kept); nil when Python refuses the bytes, reads them leniently (an unpaired surrogate
  /// escape), or the answer's shape is wrong.
  static func reference(_ bytes: [UInt8]) -> [Event]? {
    guard case .value(let value) = PythonJSON.shared.read(bytes) else { return nil }
    return events(of: value)
  }

  /// The events of a table answer (platform-api.md §3) held as a tree; nil when its shape is
  /// not an answer's, as the scanner documents it: a list of objects, each with one string
  /// `name`; `data` and `insert_rows` lists of rows, each row a list; `delete_ids` a list of
  /// numbers or strings; every other key read past, whatever it holds.
  static func events(of answer: JSONValue) -> [Event]? {
    guard case .array(let tables) = answer else { return nil }
    var events: [Event] = []
    for table in tables {
      guard case .object(let pairs) = table else { return nil }
      events.append(.table)
      var named = false
      for (key, value) in pairs {
        switch (key, value) {
        case ("name", .string(let name)) where !named:
          named = true
          events.append(.name(Array(name.utf8)))
        case ("delete_ids", .array(let ids)):
          events.append(.list(key))
          for (index, id) in ids.enumerated() {
            switch id {
            case .integer, .number, .string: events.append(.id(item: index + 1, Token(id)))
            default: return nil
            }
          }
          events.append(.endList(key, items: ids.count))
        case ("data", .array(let rows)), ("insert_rows", .array(let rows)):
          events.append(.list(key))
          for (index, row) in rows.enumerated() {
            guard case .array(let values) = row else { return nil }
            for (column, value) in values.enumerated() { events.append(.value(row: index + 1, column: column, Token(value))) }
            events.append(.endRow(row: index + 1, values: values.count))
          }
          events.append(.endList(key, items: rows.count))
        case ("name", _), ("data", _), ("insert_rows", _), ("delete_ids", _):
          return nil
        default:
          break
        }
      }
      guard named else { return nil }
      events.append(.endTable)
    }
    return events
  }

  // MARK: Checking

  /// Collects failures, keeping the first few.
  struct Failures {
    var found: [String] = []
    var full: Bool { found.count >= 5 }
    mutating func add(_ failure: String?, _ place: @autoclosure () -> String) {
      if let failure, !full { found.append(place() + ": " + failure) }
    }
  }

  /// What is wrong with the scanner's reading of `bytes` fed in `pieces`, against `expected`
  /// (nil: the bytes are to be refused); nil when nothing is.
  static func problem(_ bytes: [UInt8], pieces: [Range<Int>], expected: [Event]?) -> String? {
    switch (scan(bytes, pieces: pieces), expected) {
    case (.refused(let error), nil): return problem(with: error)
    case (.refused(let error), _?): return "refused what the reference accepts: \(error)"
    case (.accepted, nil): return "accepted what the reference refuses"
    case (.accepted(let found), let expected?): return difference(found, expected)
    }
  }

  /// What is wrong with a refusal: every error must be a `TableAnswerError` whose description
  /// is not empty and names no Swift type.
  static func problem(with error: any Error) -> String? {
    guard let error = error as? TableAnswerError else { return "refused with \(type(of: error)): \(error)" }
    let text = error.description
    let typeNames = ["Swift.", "Optional(", "DrayJSON", "DrayModel", "TableAnswer", "JSONToken", "Failure", "Unsafe", "Error("]
    if text.isEmpty || typeNames.contains(where: text.contains) { return "refused with the description '\(text)'" }
    return nil
  }

  /// The first difference of two event lists; nil when they are equal.
  static func difference(_ found: [Event], _ expected: [Event]) -> String? {
    guard found != expected else { return nil }
    let index = zip(found, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(found.count, expected.count)
    func at(_ events: [Event]) -> String { index < events.count ? events[index].description : "nothing" }
    return "event \(index): scanner \(at(found)), reference \(at(expected)) (\(found.count) and \(expected.count) events)"
  }

  /// `bytes` for a failure message, shortened.
  static func show(_ bytes: [UInt8]) -> String { Token.show(bytes) }

  /// Whole, in random pieces, and byte by byte when short (a cut inside every token).
  static func cuts(_ count: Int, using random: inout SeededRandom) -> [[Range<Int>]] {
    var cuts = [[0..<count], RandomJSONText.pieces(of: count, using: &random)]
    if count <= 1024 { cuts.append((0..<count).map { $0..<($0 + 1) }) }
    return cuts
  }

  // MARK: Valid answers

  /// The kinds of token whose every inner cut a byte-by-byte feed tries: each escape, a
  /// surrogate pair, UTF-8 of 2, 3 and 4 bytes, the literals, numbers with a fraction, an
  /// exponent and a sign; found by a look at the bytes.
  static func tokenKinds(_ bytes: [UInt8]) -> Set<String> {
    let lowered = bytes.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
    var kinds = Set<String>()
    for kind in [
      #"\""#, #"\\"#, #"\/"#, #"\b"#, #"\f"#, #"\n"#, #"\r"#, #"\t"#, #"\u00"#, #"\ud8"#, "true", "false", "null", ".", "e+", "e-", "-",
    ]
    where contains(Array(kind.utf8), in: lowered) {
      kinds.insert(kind)
    }
    for (kind, leads) in [("2-byte", 0xC2...0xDF), ("3-byte", 0xE0...0xEF), ("4-byte", 0xF0...0xF4)] as [(String, ClosedRange<UInt8>)]
    where bytes.contains(where: leads.contains) {
      kinds.insert(kind)
    }
    return kinds
  }

  static let allTokenKinds = tokenKinds(Array(#"\" \\ \/ \b \f \n \r \t \u00e9 \ud83d true false null 1.5e+1 1e-1 é € 😀"#.utf8))

  static func contains(_ needle: [UInt8], in bytes: [UInt8]) -> Bool {
    guard needle.count <= bytes.count else { return false }
    return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
  }

  @Test func generatedAnswersGiveTheReferenceEventsWholeAndInPieces() {
    var random = SeededRandom(seed: Self.seed)
    var failures = Failures()
    var cutInside = Set<String>()
    for index in 0..<3000 where !failures.full {
      let answer = RandomJSON.tableAnswer(using: &random)
      let layout = random.element(of: RandomJSONText.Layout.allCases)
      let bytes = RandomJSONText.write(answer, layout: layout, using: &random)
      let place = "seed \(Self.seed), answer \(index) (\(layout)) \(Self.show(bytes))"
      // The generator's tree has every number as written, as Python's reading has them.
      let exact = Self.events(of: answer)!
      failures.add(Self.difference(Self.reference(bytes) ?? [], exact), "Python against the generator, " + place)
      for pieces in Self.cuts(bytes.count, using: &random) {
        failures.add(Self.problem(bytes, pieces: pieces, expected: exact), place + " in \(pieces.count) pieces")
        if pieces.count == bytes.count && cutInside != Self.allTokenKinds { cutInside.formUnion(Self.tokenKinds(bytes)) }
      }
    }
    #expect(failures.found.isEmpty, "\(failures.found.joined(separator: "\n"))")
    #expect(Self.allTokenKinds.count == 20)
    #expect(Self.allTokenKinds.subtracting(cutInside).isEmpty, "never cut inside \(Self.allTokenKinds.subtracting(cutInside))")
  }

  // MARK: Corrupted answers

  /// Bytes a flipped or inserted byte takes: JSON's structure, number and literal characters,
  /// and bytes that are never, or only sometimes, UTF-8.
  static let strayBytes =
    Array(#"{}[]:,"\ /*0123456789-+.eEtrufalsn"#.utf8) + [
      0x00, 0x09, 0x0A, 0x0B, 0x0C, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xE2, 0xF0, 0xF8, 0xFF,
    ]

  /// `bytes` with one byte changed, inserted or deleted, or cut short.
  static func mutated(_ bytes: [UInt8], using random: inout SeededRandom) -> (bytes: [UInt8], what: String) {
    var bytes = bytes
    let at = random.below(bytes.count + 1)
    let stray = random.below(2) == 0 ? random.element(of: strayBytes) : UInt8(truncatingIfNeeded: random.next())
    switch random.below(4) {
    case 0 where at < bytes.count:
      bytes[at] = stray == bytes[at] ? ~stray : stray
      return (bytes, "byte \(at) changed")
    case 1:
      bytes.insert(stray, at: at)
      return (bytes, "byte inserted at \(at)")
    case 2 where at < bytes.count:
      bytes.remove(at: at)
      return (bytes, "byte \(at) deleted")
    default:
      return (Array(bytes[..<at]), "cut after \(at) bytes")
    }
  }

  /// `answer` (a list of table objects) with its shape made wrong: not a list, a table that is
  /// not an object, without a `name`, with a second one or one that is not a string, a list
  /// key that holds no list, a row that is not a list, a row id that is no number or string.
  static func misshapen(_ answer: JSONValue, using random: inout SeededRandom) -> JSONValue {
    guard case .array(var tables) = answer, !tables.isEmpty, case .object(var pairs) = tables[0] else { return answer }
    let others: [JSONValue] = [.null, .bool(true), .number("1"), .string("x"), .object([]), .array([]), .array([.null])]
    func other() -> JSONValue { random.element(of: others) }
    func insert(_ key: String, _ value: JSONValue) { pairs.insert((key, value), at: random.below(pairs.count + 1)) }
    switch random.below(8) {
    case 0: return .object([("tables", answer)])
    case 1: return other()
    case 2: tables[0] = .array(pairs.map(\.value))
    case 3: pairs.removeAll { $0.key == "name" }
    case 4: insert("name", other())
    case 5: insert(["data", "insert_rows", "delete_ids"][random.below(3)], other())
    case 6: insert(["data", "insert_rows"][random.below(2)], .array([.array([]), other(), .array([.null])]))
    default: insert("delete_ids", .array([.number("1"), [.null, .bool(false), .array([]), .object([])][random.below(4)]]))
    }
    if case .object = tables[0] { tables[0] = .object(pairs) }
    return .array(tables)
  }

  /// How the reference reads a case.
  enum Verdict: Hashable {
    case accepted
    case refused
    /// Read by Python, though JSON does not allow it (an unpaired surrogate escape).
    case lenient
  }

  /// Checks `bytes` against the reference reading, each way in `cuts`: the scanner refuses
  /// exactly when Python or the answer's shape does, or Python reads them leniently, and
  /// otherwise gives the reference's events.
  /// - Returns: how the reference read them.
  @discardableResult
  static func check(_ bytes: [UInt8], cuts: [[Range<Int>]], place: String, into failures: inout Failures) -> Verdict {
    let events = reference(bytes)
    let verdict: Verdict =
      events != nil ? .accepted : PythonJSON.shared.read(bytes) == .unpairedSurrogate ? .lenient : .refused
    for pieces in cuts {
      failures.add(problem(bytes, pieces: pieces, expected: events), place + " in \(pieces.count) pieces")
    }
    return verdict
  }

  @Test func corruptedAnswersAreRefusedExactlyWhenTheReferenceOrTheShapeRefusesThem() {
    var random = SeededRandom(seed: Self.seed &+ 1)
    var failures = Failures()
    var verdicts: [Verdict: Int] = [:]
    for index in 0..<3000 where !failures.full {
      var answer = RandomJSON.tableAnswer(rows: 4, using: &random)
      let layout = random.element(of: RandomJSONText.Layout.allCases)
      var fault: RandomJSONText.Fault?
      switch random.below(3) {
      case 0: fault = RandomJSONText.randomFault(in: answer, using: &random)
      case 1: answer = Self.misshapen(answer, using: &random)
      default: break
      }
      var bytes = RandomJSONText.write(answer, layout: layout, fault: fault, using: &random)
      var what = fault.map { "\($0)" } ?? "misshapen or written whole"
      if fault == nil || random.below(4) == 0 {
        let mutation = Self.mutated(bytes, using: &random)
        bytes = mutation.bytes
        what += ", " + mutation.what
      }
      let place = "seed \(Self.seed &+ 1), answer \(index) (\(layout), \(what)) \(Self.show(bytes))"
      verdicts[Self.check(bytes, cuts: Self.cuts(bytes.count, using: &random), place: place, into: &failures), default: 0] += 1
    }
    #expect(failures.found.isEmpty, "\(failures.found.joined(separator: "\n"))")
    // Most cases are refused (about 2,750 of 3,000), and enough are not for the events to be
    // compared (about 200).
    #expect(verdicts[.refused, default: 0] > 2000 && verdicts[.accepted, default: 0] > 100, "\(verdicts)")
  }

  @Test func anAnswerCutShortAnywhereIsRefused() {
    var random = SeededRandom(seed: Self.seed &+ 2)
    var failures = Failures()
    for index in 0..<8 where !failures.full {
      let answer = RandomJSON.tableAnswer(rows: 2, using: &random)
      let layout = random.element(of: RandomJSONText.Layout.allCases)
      let bytes = RandomJSONText.write(answer, layout: layout, using: &random)
      for end in 0...bytes.count {
        let prefix = Array(bytes[..<end])
        let cuts = [[0..<end], RandomJSONText.pieces(of: end, using: &random)]
        Self.check(prefix, cuts: cuts, place: "seed \(Self.seed &+ 2), answer \(index) (\(layout)) cut after \(end) bytes", into: &failures)
      }
    }
    #expect(failures.found.isEmpty, "\(failures.found.joined(separator: "\n"))")
  }

  /// Each of `RandomJSONText.badInString` in each place a string can stand in an answer.
  static func answers(insideStrings inserted: [UInt8]) -> [[UInt8]] {
    let templates = [
      #"[{"name": "t@"}]"#, #"[{"name": "t", "data": [["a@b"]]}]"#, #"[{"name": "t", "data": [["@"]]}]"#,
      #"[{"name": "t", "data": [[1, ["x", "@"]]]}]"#, #"[{"name": "t", "data": [[{"k@": 1}]]}]"#,
      #"[{"name": "t", "delete_ids": ["@"]}]"#, #"[{"name": "t", "other": {"a": "@"}}]"#, #"[{"name": "t", "d@": 1}]"#,
    ]
    return templates.map { template in
      Array(template.utf8).split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false).map(Array.init)
        .joined(separator: inserted).map { $0 }
    }
  }

  /// `value` in each place a value can stand in an answer, or stray around it.
  static func answers(asValue value: String) -> [[UInt8]] {
    let templates = [
      "@", "[@]", #"[{"name": "t", "data": [[@]]}]"#, #"[{"name": "t", "data": [[1, @, 2]]}]"#,
      #"[{"name": "t", "data": [[[@], {"k": @}]]}]"#, #"[{"name": "t", "insert_rows": [@]}]"#,
      #"[{"name": "t", "delete_ids": [@]}]"#, #"[{"name": "t", "other": @}]"#, #"[{"name": @}]"#, #"[{"name": "t"}] @"#,
    ]
    return templates.map { Array($0.replacingOccurrences(of: "@", with: value).utf8) }
  }

  @Test func everyBadNumberAndLiteralInEveryPlaceIsRefusedAsTheReferenceRefusesIt() {
    var random = SeededRandom(seed: Self.seed &+ 7)
    var failures = Failures()
    let values = RandomJSONText.badNumbers + RandomJSONText.badLiterals + RandomJSON.specialNumbers + ["true", "false", "null"]
    for value in values {
      for bytes in Self.answers(asValue: value) {
        let verdict = Self.check(bytes, cuts: Self.cuts(bytes.count, using: &random), place: Self.show(bytes), into: &failures)
        if !RandomJSONText.badNumbers.contains(value) && !RandomJSONText.badLiterals.contains(value) { continue }
        #expect(verdict == .refused, "\(Self.show(bytes))")
      }
    }
    #expect(failures.found.isEmpty, "\(failures.found.joined(separator: "\n"))")
  }

  /// Small answers holding every kind of token, each escape and UTF-8 width among them.
  static let smallAnswers = [
    #"[{"name":"t","data":[[1,-0.5e+3,"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00é€😀",true,false,null,[1,{"k":[]}],{}]],"x":{"y":[1E2]},"delete_ids":[3,"4"]}]"#,
    "[ {\n \"insert_rows\" :\t[ [ 0 , \"\" ] ] ,\r\n \"name\" : \"n\\u0061me\" } , { \"name\": \"u\", \"data\": [] } ]\n",
  ]

  @Test func oneByteEditsAtEveryPlaceOfSmallAnswersAreReadAsTheReferenceReadsThem() {
    var random = SeededRandom(seed: Self.seed &+ 8)
    var failures = Failures()
    for answer in Self.smallAnswers {
      let bytes = Array(answer.utf8)
      #expect(Self.reference(bytes) != nil)
      for at in 0...bytes.count where !failures.full {
        // The byte deleted; a random third of the stray bytes inserted, and put in its place.
        var edits = at < bytes.count ? [Array(bytes[..<at] + bytes[(at + 1)...])] : []
        for stray in Self.strayBytes where random.below(3) == 0 {
          edits.append(Array(bytes[..<at] + [stray] + bytes[at...]))
          if at < bytes.count && stray != bytes[at] { edits.append(Array(bytes[..<at] + [stray] + bytes[(at + 1)...])) }
        }
        for edited in edits {
          let cuts = [[0..<edited.count], RandomJSONText.pieces(of: edited.count, using: &random)]
          Self.check(edited, cuts: cuts, place: "edit at \(at): \(Self.show(edited))", into: &failures)
        }
      }
    }
    #expect(failures.found.isEmpty, "\(failures.found.joined(separator: "\n"))")
  }

  @Test func everyBadStringPieceInEveryPlaceIsRefusedAsTheReferenceRefusesIt() {
    var random = SeededRandom(seed: Self.seed &+ 3)
    var failures = Failures()
    for inserted in RandomJSONText.badInString {
      for bytes in Self.answers(insideStrings: inserted) {
        Self.check(bytes, cuts: Self.cuts(bytes.count, using: &random), place: Self.show(bytes), into: &failures)
      }
    }
    #expect(failures.found.isEmpty, "\(failures.found.joined(separator: "\n"))")
  }

  // MARK: What a lenient reader lets through (yajl did)

  /// What is wrong with the scanner's reading of `bytes`, which it must refuse, fed whole, in
  /// random pieces and byte by byte; nil when it refuses them each way with a well-formed
  /// error.
  static func refusalProblem(_ bytes: [UInt8], using random: inout SeededRandom) -> String? {
    for pieces in cuts(bytes.count, using: &random) {
      if let problem = problem(bytes, pieces: pieces, expected: nil) { return problem + " in \(pieces.count) pieces" }
    }
    return nil
  }

  /// A `\u` escape of a UTF-16 surrogate outside a pair (`"\ud800"`, `"\udc00"`,
  /// `"\ud800x"`, `"\ud800\u0041"`) stands for no character (RFC 8259 §8.2). Python reads it
  /// anyway, into a string that is no text (yajl read a high surrogate without a low one as
  /// `?`, and joined `\ud800\u0041` into U+10041). The scanner refuses such a string wherever
  /// it stands, in a value read past too.
  @Test func loneSurrogateEscapesAreRefusedWhereverTheyStand() {
    var random = SeededRandom(seed: Self.seed &+ 4)
    let escapes = [#"\ud800"#, #"\udc00"#, #"\ud800x"#, #"\ud800\u0041"#, #"\uDBFF\uDBFF"#, #"\udfff\ud800"#, #"\ud83d"#]
    for escape in escapes {
      for bytes in Self.answers(insideStrings: Array(escape.utf8)) {
        #expect(PythonJSON.shared.read(bytes) == .unpairedSurrogate, "Python reads \(Self.show(bytes)) otherwise")
        #expect(Self.refusalProblem(bytes, using: &random) == nil, "\(Self.show(bytes))")
      }
    }
  }

  /// UTF-8 that RFC 3629 forbids but yajl let through inside strings: overlong forms
  /// (`C0 80`, `E0 80 80`), UTF-16 surrogates encoded (`ED A0 80`), code points past U+10FFFF
  /// (`F4 90 80 80`, `F5`-`F7` lead bytes). The scanner refuses them wherever they stand, as
  /// Python does, and as it refuses the bytes yajl refused too (`F8`-`FF`, a continuation byte
  /// alone, a sequence cut short).
  @Test func utf8ThatYajlLetThroughIsRefusedWhereverItStands() {
    var random = SeededRandom(seed: Self.seed &+ 5)
    let sequences: [[UInt8]] = [
      [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xED, 0xA0, 0x80],
      [0xED, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xF7, 0xBF, 0xBF, 0xBF],
    ]
    for sequence in sequences {
      for bytes in Self.answers(insideStrings: sequence) {
        #expect(PythonJSON.shared.read(bytes) == .refused, "Python reads \(Self.show(bytes))")
        #expect(Self.refusalProblem(bytes, using: &random) == nil, "\(Self.show(bytes))")
      }
    }
  }

  /// The scanner refuses an answer nested deeper than `JSONValue.maxDepth` (512) levels, its
  /// own list, table object, list of rows and row counted, so that a value in a row, or read
  /// past, nests up to 508 levels; the reference (`PythonJSON`) stops at the same depth.
  @Test func anAnswerNestedDeeperThan512LevelsIsRefused() {
    var random = SeededRandom(seed: Self.seed &+ 9)
    var failures = Failures()
    let most = JSONValue.maxDepth - 4
    for levels in [most, most + 1] {
      let list = String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
      let object = String(repeating: #"{"k":"#, count: levels) + "1" + String(repeating: "}", count: levels)
      for value in [list, object] {
        for template in [#"[{"name": "t", "data": [[@]]}]"#, #"[{"name": "t", "other": [[@]]}]"#] {
          let bytes = Array(template.replacingOccurrences(of: "@", with: value).utf8)
          let place = "\(levels) levels: \(Self.show(bytes))"
          #expect((Self.reference(bytes) != nil) == (levels == most), "the reference reads \(place) wrongly")
          if levels == most {
            Self.check(bytes, cuts: Self.cuts(bytes.count, using: &random), place: place, into: &failures)
          } else {
            failures.add(Self.refusalProblem(bytes, using: &random), place)
          }
        }
      }
    }
    #expect(failures.found.isEmpty, "\(failures.found.joined(separator: "\n"))")
  }

  /// yajl took a vertical tab (0x0B) and a form feed (0x0C) for whitespace between tokens;
  /// RFC 8259 §2 allows only space, tab, line feed and carriage return, and the scanner
  /// refuses them, wherever they stand, as Python does.
  @Test func whitespaceJSONDoesNotAllowIsRefusedBetweenEveryTwoTokens() {
    var random = SeededRandom(seed: Self.seed &+ 10)
    let gaps = #"@[@{@"name"@:@"t"@,@"data"@:@[@[@1@,@"x"@,@null@]@]@,@"delete_ids"@:@[@2@]@}@]@"#
      .split(separator: "@", omittingEmptySubsequences: false)
    for space in ["\u{0B}", "\u{0C}"] {
      for gap in 1..<gaps.count {
        let bytes = Array((gaps[..<gap].joined() + space + gaps[gap...].joined()).utf8)
        #expect(PythonJSON.shared.read(bytes) == .refused, "Python reads \(Self.show(bytes))")
        #expect(Self.refusalProblem(bytes, using: &random) == nil, "\(Self.show(bytes))")
      }
    }
  }

  /// yajl accepted an answer followed by a string it never ends (`[...] "abc`: at the end of
  /// the text it waited for the rest of the string); the scanner refuses any text after the
  /// answer, as Python does.
  @Test func aStringBegunAfterTheAnswerIsRefused() {
    var random = SeededRandom(seed: Self.seed &+ 11)
    for after in [#"""#, #" "abc"#, "\n\"x\\\"", #""]"#, " \"é"] {
      let bytes = Array((#"[{"name": "t", "data": [[1]]}]"# + after).utf8)
      #expect(PythonJSON.shared.read(bytes) == .refused, "Python reads \(Self.show(bytes))")
      #expect(Self.refusalProblem(bytes, using: &random) == nil, "\(Self.show(bytes))")
    }
  }

  // MARK: The benchmark's answer

  @Test func aBenchmarkShapedAnswerOf5000RowsInRandomPiecesGivesTheReferenceEvents() throws {
    var random = SeededRandom(seed: Self.seed &+ 6)
    let answer = RandomJSON.benchmarkAnswer(rows: 5000, using: &random)
    let bytes = RandomJSONText.write(answer, layout: .compact, escaping: .minimal, using: &random)
    let exact = try #require(Self.events(of: answer))
    #expect(exact.count == 5000 * 9 + 5)
    #expect(Self.difference(try #require(Self.reference(bytes)), exact) == nil)
    let pieces = RandomJSONText.pieces(of: bytes.count, using: &random)
    #expect(Self.problem(bytes, pieces: pieces, expected: exact) == nil, "seed \(Self.seed &+ 6)")
  }
}
