import DrayModel
import DrayRecords
import DrayTestSupport
import Foundation
import Testing

@Suite struct RecordReaderTests {
  let folder = TemporaryDirectory()

  func read(
    _ text: String, format: AnswerFormat = .json, records: String?, columns: [HTTPStep.Column]? = nil, probes: [String] = []
  ) throws -> ([Record], AnswerSummary) {
    let file = try folder.write("answer", text)
    func selector(_ s: String) throws -> RecordSelector {
      format == .json ? .json(try JSONPointer(parsing: s)) : .xml(try XMLPath(parsing: s))
    }
    var out: [Record] = []
    let reader = RecordReader(format: format, records: try records.map(selector), columns: columns, probes: try probes.map(selector))
    let summary = try reader.read(file: file) { out.append($0) }
    return (out, summary)
  }

  func names(_ records: [Record]) -> [[String]] { records.map { $0.map(\.name) } }
  func values(_ records: [Record]) -> [[RecordValue]] { records.map { $0.map(\.value) } }

  @Test func jsonRecordsAtAPointerWithTheNextLink() throws {
    let (records, summary) = try read(
      """
      {"meta": {"n": 2}, "data": {"items": [
        {"id": 1, "name": "pear", "price": 0.5, "big": 123456789012345678901234567890, "ok": true, "tags": ["a", {"b": null}], "none": null},
        {"id": 2, "name": "fig \\u00e9", "owner": {"name": "Ann"}}
      ]}, "links": {"next": "/items?page=2", "last": null, "self": {"href": "x"}}}
      """, records: "/data/items", probes: ["/links/next", "/links/last", "/links/prev", "/links/self"])
    #expect(summary.records == 2)
    #expect(names(records) == [["id", "name", "price", "big", "ok", "tags", "none"], ["id", "name", "owner"]])
    #expect(
      values(records) == [
        [
          .integer(1), .text("pear"), .real(0.5), .bigInteger("123456789012345678901234567890"), .boolean(true),
          .text(#"["a",{"b":null}]"#),
          .null,
        ],
        [.integer(2), .text("fig é"), .text(#"{"name":"Ann"}"#)],
      ])
    #expect(summary.values[.json(try JSONPointer(parsing: "/links/next"))] == .text("/items?page=2"))
    #expect(summary.values[.json(try JSONPointer(parsing: "/links/last"))] == .null)
    #expect(summary.values[.json(try JSONPointer(parsing: "/links/prev"))] == nil)
    #expect(summary.values[.json(try JSONPointer(parsing: "/links/self"))] == .structure("an object"))
  }

  /// An incremental cursor's column keeps each number with a fraction or an exponent as the
  /// API wrote it (`decimal`, stored as REAL); other columns read it as a double; a number no
  /// double holds stays text, as elsewhere.
  @Test func theCursorColumnKeepsNumbersAsWritten() throws {
    let file = try folder.write("answer", #"[{"c": 1e3, "d": 1e3}, {"c": 1701600000.25, "d": 7}, {"c": 5, "d": 1e400}, {"c": 1e400}]"#)
    for columns in [nil, [HTTPStep.Column(name: "c", type: .real), HTTPStep.Column(name: "d", type: .real)]] {
      var reader = RecordReader(format: .json, records: .json(try JSONPointer(parsing: "")), columns: columns)
      reader.cursorColumn = "c"
      var out: [Record] = []
      _ = try reader.read(file: file) { out.append($0) }
      let read = values(out).map { Array($0.prefix(2)) }
      #expect(read[0] == [.decimal("1e3"), .real(1000)])
      #expect(read[1] == [.decimal("1701600000.25"), .integer(7)])
      #expect(read[2] == [.integer(5), .text("1e400")])
      #expect(read[3].first == .text("1e400"))
      #expect(RecordValue.decimal("1e3").inferredType == .real)
      #expect(RecordValue.decimal("1e3").real == 1000)
    }
  }

  @Test func jsonRecordShapes() throws {
    // The whole document as the records; scalars become a `value` column.
    let (list, _) = try read(#"[1, "two", [3], null]"#, records: "")
    #expect(values(list) == [[.integer(1)], [.text("two")], [.text("[3]")], [.null]])
    // An object is one record; null is none (an empty answer is refused: see below).
    #expect(try read(#"{"item": {"id": 7}}"#, records: "/item").0.count == 1)
    #expect(try read(#"{"items": null}"#, records: "/items").1.records == 0)
    // An element by index.
    #expect(values(try read(#"{"pages": [[{"a": 1}], [{"a": 2}]]}"#, records: "/pages/1").0) == [[.integer(2)]])
  }

  @Test func jsonDeclaredColumnsTakeMembersOrPointers() throws {
    let columns = [
      HTTPStep.Column(name: "id", type: .integer),
      HTTPStep.Column(name: "owner", type: .text, from: .json(try JSONPointer(parsing: "/owner/name"))),
      HTTPStep.Column(name: "missing", type: .text),
    ]
    let (records, _) = try read(#"[{"id": 1, "owner": {"name": "Ann"}, "extra": 5}, {"id": 2}]"#, records: "", columns: columns)
    #expect(names(records) == [["id", "owner", "missing"], ["id", "owner", "missing"]])
    #expect(values(records) == [[.integer(1), .text("Ann"), .null], [.integer(2), .null, .null]])
  }

  /// A partitioned step infers a page's columns before it waits for the database
  /// (`inferredColumns`), then hands them to `load`: the same columns and records as `load`
  /// inferring them itself, and nothing to infer when columns are declared.
  @Test func columnsInferredAheadAreTheOnesLoadInfers() throws {
    let file = try folder.write("page", #"[{"id": 1, "name": "pear"}, {"id": 2.5, "tags": ["a"]}, {"name": null}]"#)
    let reader = RecordReader(format: .json, records: .json(try JSONPointer(parsing: "")))
    let ahead = try #require(try reader.inferredColumns(file: file))
    func load(_ inferred: [(name: String, type: ColumnType?)]?) throws -> ([String], [ColumnType?], [[RecordValue]]) {
      var prepared: [(name: String, type: ColumnType?)] = []
      var records: [[RecordValue]] = []
      _ = try reader.load(file: file, inferred: inferred, prepare: { prepared = $0 }, each: { records.append($0.map(\.value)) })
      return (prepared.map(\.name), prepared.map(\.type), records)
    }
    let own = try load(nil)
    let given = try load(ahead)
    #expect(ahead.map(\.name) == ["id", "name", "tags"])
    #expect(given.0 == own.0 && given.1 == own.1 && given.2 == own.2)
    #expect(own.2.count == 3)
    let declared = RecordReader(
      format: .json, records: .json(try JSONPointer(parsing: "")), columns: [HTTPStep.Column(name: "id", type: .integer)])
    #expect(try declared.inferredColumns(file: file) == nil)
  }

  @Test func jsonProblemsSayWhatIsWrong() throws {
    #expect(throws: RecordError("the records selector '/data' points at a string; it must point at a list or an object")) {
      try read(#"{"data": "nope"}"#, records: "/data")
    }
    #expect(throws: RecordError("the records selector '/data' matches nothing in the answer")) {
      try read(#"{"items": []}"#, records: "/data")
    }
    #expect(throws: RecordError("the answer ends before its JSON is complete (12 bytes)")) {
      try read(#"{"data": [1,"#, records: "/data")
    }
    #expect(throws: RecordError("the answer is not valid JSON ('<html>' is not a JSON value, at byte 0)")) {
      try read("<html>", records: "")
    }
    // Stricter than yajl: a lone UTF-16 surrogate escape is no character, and overlong UTF-8
    // is no UTF-8 (RFC 8259 §7 and §8.1, RFC 3629); neither is stored as something else.
    let lone = "a string holds \\uD83D, half of a UTF-16 surrogate pair without its other half (not a character)"
    #expect(throws: RecordError("the answer is not valid JSON (\(lone), at byte 17)")) {
      try read(#"{"data": [{"a": "\ud83d"}]}"#, records: "/data")
    }
    let overlong = try folder.write("overlong", "")
    try Data(#"{"data": [{"a": ""#.utf8 + [0xC0, 0x80] + #""}]}"#.utf8).write(to: URL(fileURLWithPath: overlong))
    #expect(throws: RecordError("the answer is not valid JSON (a string holds bytes that are not UTF-8, at byte 17)")) {
      try RecordReader(format: .json, records: .json(try JSONPointer(parsing: "/data")), columns: nil, probes: []).read(file: overlong) {
        _ in
      }
    }
  }

  static let catalog = """
    <?xml version="1.0" encoding="UTF-8"?>
    <catalog xmlns="urn:test" xmlns:x="urn:x" page="1">
      <item id="1" x:flag="y"><name>Pear &amp; co</name><price>1.5</price><code>007</code><note/><tag>a</tag><tag>b</tag>
        <owner><name>Ann</name><since>2020</since></owner></item>
      <item id="2"><name>Fig</name><price>3</price><code>12</code><note>ripe</note></item>
      <group><item id="3"><name>Deep</name></item></group>
      <x:next href="/catalog?page=2">/catalog?page=2</x:next>
    </catalog>
    """

  /// An empty body is not a document: never "no records", which would empty a table.
  @Test func blankAnswersAreRefusedInEveryFormat() throws {
    for (format, records, kind) in [(AnswerFormat.json, "", "a JSON"), (.json, "/data", "a JSON"), (.xml, "//item", "an XML")] {
      #expect(throws: RecordError("the answer is empty; an empty body is not \(kind) document")) {
        try read("", format: format, records: records)
      }
      #expect(throws: RecordError("the answer holds only whitespace (4 bytes); an empty body is not \(kind) document")) {
        try read(" \r\n\t", format: format, records: records)
      }
    }
    // A value after whitespace, or a cut one, is not blank.
    #expect(try read(" []", records: "").0.isEmpty)
    #expect(throws: RecordError("the answer ends before its JSON is complete (4 bytes)")) { try read(" tru", records: "") }
  }

  @Test func xmlRecordsFromAnElementPath() throws {
    let (records, summary) = try read(
      Self.catalog, format: .xml, records: "/catalog/item",
      probes: ["/catalog/next", "/catalog/next/@href", "/catalog/@page", "/catalog/none"])
    #expect(summary.records == 2)
    #expect(names(records) == [["id", "flag", "name", "price", "code", "note", "tag", "owner"], ["id", "name", "price", "code", "note"]])
    #expect(
      values(records) == [
        [.integer(1), .text("y"), .text("Pear & co"), .real(1.5), .text("007"), .null, .text(#"["a","b"]"#), .text("Ann2020")],
        [.integer(2), .text("Fig"), .integer(3), .integer(12), .text("ripe")],
      ])
    #expect(summary.values[.xml(try XMLPath(parsing: "/catalog/next"))] == .text("/catalog?page=2"))
    #expect(summary.values[.xml(try XMLPath(parsing: "/catalog/next/@href"))] == .text("/catalog?page=2"))
    #expect(summary.values[.xml(try XMLPath(parsing: "/catalog/@page"))] == .text("1"))
    #expect(summary.values[.xml(try XMLPath(parsing: "/catalog/none"))] == nil)
  }

  @Test func xmlAnywhereAndDeclaredColumns() throws {
    let columns = [
      HTTPStep.Column(name: "id", type: .integer, from: .xml(try XMLPath(parsing: "@id"))),
      HTTPStep.Column(name: "name", type: .text),
      HTTPStep.Column(name: "owner", type: .text, from: .xml(try XMLPath(parsing: "owner/name"))),
    ]
    let (records, _) = try read(Self.catalog, format: .xml, records: "//item", columns: columns)
    #expect(
      values(records) == [
        [.integer(1), .text("Pear & co"), .text("Ann")], [.integer(2), .text("Fig"), .null], [.integer(3), .text("Deep"), .null],
      ])
  }

  @Test func xmlProblemsSayWhereTheyAre() throws {
    #expect(
      throws: RecordError(
        "the answer is not well-formed XML (line 2: Opening and ending tag mismatch: name line 2 and item)")
    ) {
      try read("<catalog>\n<item><name>x</item>\n</catalog>", format: .xml, records: "/catalog/item")
    }
    #expect(throws: RecordError("the records path '/catalog/item' starts at <catalog>, but the answer's root element is <feed>")) {
      try read("<feed><item/></feed>", format: .xml, records: "/catalog/item")
    }
  }

  /// Entities declared in the answer are expanded; nothing outside it is ever read, and a
  /// reference to such text is an error, not silently empty; expansion is bounded.
  @Test func xmlEntitiesDeclaredInTheAnswerAreExpandedAndNothingElse() throws {
    let (records, _) = try read(
      #"<?xml version="1.0"?><!DOCTYPE c [<!ENTITY x "hello"><!ENTITY y "&x;, &x;">]><c><item><v>&y; &amp; bye</v></item></c>"#,
      format: .xml, records: "/c/item")
    #expect(values(records) == [[.text("hello, hello & bye")]])

    let local = try folder.write("local.txt", "LOCAL FILE")
    let dtd = try folder.write("local.dtd", #"<!ENTITY y "FROM THE DTD">"#)
    // An external entity that would read a local file.
    #expect(
      throws: RecordError(
        "the answer refers to the external entity 'secret'; dray never loads external entities or DTDs, and would read the reference as empty text. Have the server send the text itself"
      )
    ) {
      try read(
        #"<?xml version="1.0"?><!DOCTYPE c [<!ENTITY secret SYSTEM "file://\#(local)">]><c><item><v>a&secret;b</v></item></c>"#,
        format: .xml, records: "/c/item")
    }
    // An external DTD that would declare the entity.
    #expect(
      throws: RecordError(
        "the answer refers to entity 'y', which only its external DTD could declare; dray never loads external entities or DTDs, and would read the reference as empty text. Have the server send the text itself"
      )
    ) {
      try read(
        #"<?xml version="1.0"?><!DOCTYPE c SYSTEM "file://\#(dtd)"><c><item><v>a&y;b</v></item></c>"#, format: .xml,
        records: "/c/item")
    }
    // An external parameter entity: never loaded, so what it declares is undeclared.
    #expect(throws: RecordError("the answer is not well-formed XML (line 1: Entity 'y' not defined)")) {
      try read(
        #"<?xml version="1.0"?><!DOCTYPE c [<!ENTITY % p SYSTEM "file://\#(dtd)"> %p;]><c><item><v>a&y;b</v></item></c>"#,
        format: .xml, records: "/c/item")
    }
    // Billion laughs: libxml2 refuses the nesting while parsing.
    var laughs = #"<!ENTITY l0 "lol">"#
    for i in 1...9 { laughs += "<!ENTITY l\(i) \"" + String(repeating: "&l\(i - 1);", count: 10) + "\">" }
    #expect(throws: RecordError("the answer is not well-formed XML (line 1: Detected an entity reference loop)")) {
      try read(#"<?xml version="1.0"?><!DOCTYPE c [\#(laughs)]><c><item><v>&l9;</v></item></c>"#, format: .xml, records: "/c/item")
    }
    // Quadratic blowup: a 50 KB entity referenced 50,000 times would be 2.5 GB of text.
    let blowup =
      #"<?xml version="1.0"?><!DOCTYPE c [<!ENTITY a ""# + String(repeating: "a", count: 50_000) + #"">]><c><item><v>"#
      + String(repeating: "&a;", count: 50_000) + "</v></item></c>"
    let limit = (10 << 20) + 10 * blowup.utf8.count
    #expect(
      throws: RecordError(
        "the answer's entity references expand to more than \(limit) bytes of text (10 MiB plus 10 times the answer's size); an answer that small cannot need that much, so it was refused (an entity expansion attack, or a server fault)"
      )
    ) {
      try read(blowup, format: .xml, records: "/c/item")
    }
  }

  @Test func valuesAndInference() {
    #expect(RecordValue(xmlText: " 42 ") == .integer(42))
    #expect(RecordValue(xmlText: "-0.5e3") == .real(-500))
    #expect(RecordValue(xmlText: "0042") == .text("0042"))
    #expect(RecordValue(xmlText: "+1") == .text("+1"))
    #expect(RecordValue(xmlText: "99999999999999999999") == .text("99999999999999999999"))
    #expect(RecordValue(xmlText: "") == .null)
    #expect(ColumnType.join(nil, .integer) == .integer)
    #expect(ColumnType.join(.integer, .real) == .real)
    #expect(ColumnType.join(.real, .integer) == .real)
    #expect(ColumnType.join(.integer, .text) == .text)
    #expect(ColumnType.join(.real, .text) == .text)
    var inference = ColumnInference()
    inference.add([("id", .integer(1)), ("price", .integer(2)), ("note", .null), ("code", .integer(3))])
    inference.add([("ID", .integer(2)), ("price", .real(2.5)), ("note", .null), ("code", .text("C-4")), ("extra", .null)])
    #expect(inference.columns.map(\.name) == ["id", "price", "note", "code", "extra"])
    #expect(inference.columns.map(\.type) == [.integer, .real, nil, .text, nil])
  }
}
