import DrayManifest
import DrayModel
import DrayTestSupport
import Testing

/// A step in the file either decodes or is a diagnostic: nothing a manifest holds makes a
/// step vanish from the job (issue 25), at the top level or in a `parallel` group; and what
/// a step accepts means something (an empty list, a repeated name, a parameter sent twice
/// are refused at their position).
@Suite struct StepDecodingTests {
  /// A job with a database, whose steps follow.
  static let head = "version: 1\njob: j\ndatabase: { path: db.sqlite }\nsteps:\n"

  func errors(_ steps: String) -> [String] {
    ManifestText.errors(Self.head + steps)
  }

  /// Steps around the one under test, so that a vanishing step would leave a valid job.
  func job(_ step: String, inGroup: Bool) -> String {
    let indented = step.split(separator: "\n").map { (inGroup ? "      " : "") + $0 }.joined(separator: "\n")
    if inGroup {
      return """
          - sql: SELECT 1
          - id: group
            parallel:
              steps:
        \(indented)
                - sql: SELECT 2
          - sql: SELECT 3
        """
    }
    return "  - sql: SELECT 1\n\(indented)\n  - sql: SELECT 3\n"
  }

  @Test(arguments: [false, true])
  func anEmptyPrimaryKeyIsRefusedAtItsPosition(inGroup: Bool) {
    let step = """
        - id: items
          http: { base_url: "http://h/", load: { table: items, write: merge, primary_key: [] } }
      """
    let line = inGroup ? 10 : 7
    let column = inGroup ? 91 : 85
    #expect(
      errors(job(step, inGroup: inGroup)) == [
        "job.yaml:\(line):\(column): error: 'steps.items.http.load.primary_key' is empty; list the record fields that identify a row, such as primary_key: [id]"
      ])
  }

  @Test func aRepeatedPrimaryKeyFieldIsRefused() {
    #expect(
      errors(
        """
          - id: items
            http: { base_url: "http://h/", load: { table: items, write: merge, primary_key: [id, region, id] } }
        """) == [
          "job.yaml:6:98: error: 'steps.items.http.load.primary_key' names 'id' twice; list each once"
        ])
  }

  @Test func emptyOrRepeatedSchemesResourcesAreRefused() {
    let head = """
      \(ManifestText.platformJob)

      """
    #expect(
      ManifestText.errors(head + "  - schemes: { resources: [] }\n") == [
        "job.yaml:7:27: error: 'steps.schemes-1.schemes.resources' is empty; list the resources whose tables to create, or drop 'resources' for every readable resource"
      ])
    #expect(
      ManifestText.errors(head + "  - schemes: { resources: [A, B, A] }\n") == [
        "job.yaml:7:34: error: 'steps.schemes-1.schemes.resources' names 'A' twice; list each once"
      ])
  }

  @Test func anEmptyListOfQueryOrFormValuesIsRefused() {
    #expect(
      errors(
        """
          - http: { base_url: "http://h/", query: { tag: [] }, body: { form: { kind: [] } } }
        """) == [
          "job.yaml:5:50: error: 'steps.http-1.http.query.tag' is an empty list, which sends nothing; give a value (\"\" for an empty one) or remove it",
          "job.yaml:5:78: error: 'steps.http-1.http.body.form.kind' is an empty list, which sends nothing; give a value (\"\" for an empty one) or remove it",
        ])
  }

  @Test(arguments: [false, true])
  func aCursorWithNowhereToReadItFromIsRefused(inGroup: Bool) {
    let step = """
        - id: items
          http: { base_url: "http://h/", load: { table: t }, paginate: { cursor: { param: after } } }
      """
    let line = inGroup ? 10 : 7
    let column = inGroup ? 82 : 76
    #expect(
      errors(job(step, inGroup: inGroup)) == [
        "job.yaml:\(line):\(column): error: 'steps.items.http.paginate.cursor' needs one of: from, from_last_record"
      ])
  }

  @Test func aCursorReadTwoWaysOrFromTheLastRecordIntoTheBodyIsRefused() {
    #expect(
      errors(
        """
          - http:
              base_url: "http://h/"
              load: { table: t }
              paginate: { cursor: { from: /next, from_last_record: /id } }
          - http:
              base_url: "http://h/"
              body: { json: { q: 1 } }
              load: { table: u }
              paginate: { cursor: { from_last_record: /id, body: /after } }
        """) == [
          "job.yaml:8:42: error: 'steps.http-1.http.paginate.cursor' takes one place to read the next cursor; this one has from and from_last_record",
          "job.yaml:13:58: error: 'steps.http-2.http.paginate.cursor.body' sends a cursor read with 'from'; 'from_last_record' sends its cursor as a parameter: drop one",
        ])
  }

  @Test func aParameterTwoPartsOfAStepSendIsRefused() {
    #expect(
      errors(
        """
          - id: orders
            http:
              base_url: "http://h/"
              query: { since: "2024", offset: 5, page: 2 }
              load: { table: orders, records: /data }
              paginate: { offset: { param: since } }
              incremental: { cursor: /updated, param: since, initial: 0 }
          - id: pages
            http:
              base_url: "http://h/"
              query: { page: 2 }
              load: { table: pages }
              paginate: { page: }
          - id: limits
            http:
              base_url: "http://h/"
              load: { table: limits }
              paginate: { offset: { param: n, limit_param: n } }
          - id: offsets
            http:
              base_url: "http://h/"
              query: { limit: 10 }
              load: { table: offsets }
              paginate: { offset: }
        """) == [
          "job.yaml:8:16: error: 'steps.orders.http.query.since' is the parameter 'steps.orders.http.incremental.param' sends; each request would carry it twice: remove it from 'steps.orders.http.query' ('steps.orders.http.incremental.initial' gives the first value)",
          "job.yaml:10:36: error: 'steps.orders.http.paginate.offset.param' is 'since', the parameter 'steps.orders.http.incremental.param' sends; each request would carry it twice: give each its own parameter",
          "job.yaml:15:16: error: 'steps.pages.http.query.page' is the parameter 'steps.pages.http.paginate.page.param' sends; each request would carry it twice: remove it from 'steps.pages.http.query' ('steps.pages.http.paginate.page.start' gives the first page)",
          "job.yaml:22:52: error: 'steps.limits.http.paginate.offset.limit_param' is 'n', the parameter 'steps.limits.http.paginate.offset.param' sends; each request would carry it twice: give each its own parameter",
          "job.yaml:26:16: error: 'steps.offsets.http.query.limit' is the parameter 'steps.offsets.http.paginate.offset.limit_param' sends; each request would carry it twice: remove it from 'steps.offsets.http.query' ('start' and 'limit' of 'steps.offsets.http.paginate.offset' give its values)",
        ])
  }

  /// Step ids and the job's name take letters of any script, kept composed (NFC): an
  /// accent typed as a combining character names the same step.
  @Test func namesTakeLettersOfAnyScriptInComposedForm() throws {
    let manifest = try ManifestText.load(
      #"""
      version: 1
      job: "za\u0308hlung"
      database: { path: db.sqlite }
      steps:
        - id: 受注
          sql: SELECT 1
        - id: "e\u0301tat"
          sql: SELECT 2
      """#)
    #expect(manifest.job.unicodeScalars.map(\.value) == [0x7A, 0xE4, 0x68, 0x6C, 0x75, 0x6E, 0x67])
    #expect(manifest.steps.map(\.id) == ["受注", "\u{E9}tat"])
    #expect(manifest.steps[1].id.unicodeScalars.count == 4)
    #expect(
      errors(
        #"""
          - { id: état, sql: SELECT 1 }
          - { id: "e\u0301tat", sql: SELECT 2 }
          - { id: "🙂", sql: SELECT 3 }
          - { id: \#(String(repeating: "ä", count: 65)), sql: SELECT 4 }
        """#) == [
          "job.yaml:6:11: error: duplicate step id 'état'; it is already used at line 5",
          "job.yaml:7:11: error: step id may hold letters, digits, '-', '_' and '.' only, found '🙂'",
          "job.yaml:8:11: error: step id may hold letters, digits, '-', '_' and '.' only, found '\(String(repeating: "ä", count: 65))'",
        ])
  }

  /// Step ids that differ only in ASCII letter case would share the staging tables and
  /// files dray names after them (a parallel group of `Items` and `items` mixed their rows):
  /// refused, at top level and inside a group; other scripts' cases are distinct names.
  @Test func stepIdsThatDifferOnlyInLetterCaseAreRefused() {
    #expect(
      errors(
        """
          - { id: Items, sql: SELECT 1 }
          - id: group
            parallel:
              steps:
                - { id: ITEMS, sql: SELECT 2 }
                - { id: Ítems, sql: SELECT 3 }
                - { id: ítems, sql: SELECT 4 }
        """) == [
          "job.yaml:9:17: error: step id 'ITEMS' differs from 'Items' at line 5 only in letter case; dray names tables and files after step ids, where case does not count: choose another id"
        ])
  }

  /// The other engineer's case of issue 25: a cursor pagination sending the incremental
  /// parameter replaces the first page's value, so it is accepted.
  @Test func aCursorMaySendTheIncrementalParameter() throws {
    let manifest = try ManifestText.load(
      Self.head
        + """
          - http:
              base_url: "http://h/"
              load: { table: t, records: /data }
              paginate: { cursor: { param: since, from: /next } }
              incremental: { cursor: /updated, param: since, initial: 0 }
        """)
    #expect(manifest.steps.count == 1)
  }

  /// Every key a step kind declares (`ManifestSchema`), nested mappings included, set in
  /// turn to odd values (empty lists and mappings, empty text, null, a number, a word,
  /// lists): the job either loads with all its steps, at the top level and in a group, or
  /// fails with diagnostics that name the problem, never with the fallback that a step
  /// could not be read for no reason given.
  @Test(arguments: StepKind.Name.allCases.filter { $0 != .sql })
  func everyKeyGivenAnOddValueLoadsTheWholeJobOrSaysWhy(kind: StepKind.Name) throws {
    let head = """
      \(ManifestText.platformJob)

      """
    let odd: [JSONValue] = [
      .array([]), .object([]), .string(""), .null, .integer(0), .string("x"), .array([.string("x")]), .array([.array([])]),
      .object([("x", .array([]))]),
    ]
    let declared = try #require(ManifestSchema.stepKinds[kind.rawValue])
    guard case .mapping(let keys, _) = Self.mapping(declared.value) else { throw ManifestTestError("\(kind) is no mapping") }
    var tried = 0
    for path in Self.keyPaths(keys) {
      for value in odd {
        let body = Self.setting(path, to: value, in: Self.base(kind))
        for inGroup in kind == .parallel ? [false] : [false, true] {
          let step = "{ \"\(kind.rawValue)\": \(body.json) }"
          let steps =
            inGroup
            ? "  - sql: SELECT 1\n  - parallel: { steps: [\(step), { sql: SELECT 2 }] }\n  - sql: SELECT 3\n"
            : "  - sql: SELECT 1\n  - \(step)\n  - sql: SELECT 3\n"
          tried += 1
          do {
            let manifest = try ManifestText.load(head + steps)
            #expect(manifest.steps.count == 3, "\(steps)")
            if inGroup { #expect(manifest.steps[1].kind.parallel?.steps.count == 2, "\(steps)") }
          } catch {
            #expect(!error.diagnostics.isEmpty, "\(steps)")
            #expect(!error.diagnostics.contains { $0.message.contains("no problem in it was named") }, "\(steps)")
          }
        }
      }
    }
    #expect(tried > 0)
  }

  /// The mapping inside an optional value (`schemes:` or `{ ... }`).
  static func mapping(_ value: ManifestSchema.Value) -> ManifestSchema.Value {
    if case .optional(let inner) = value { return mapping(inner) }
    return value
  }

  /// The dotted paths of `keys`, with those of the mappings they hold.
  static func keyPaths(_ keys: [ManifestSchema.Key], prefix: [String] = []) -> [[String]] {
    keys.flatMap { key -> [[String]] in
      let path = prefix + [key.name]
      if case .mapping(let inner, _) = mapping(key.value) { return [path] + keyPaths(inner, prefix: path) }
      return [path]
    }
  }

  /// `object` with `path` set to `value`, creating the mappings on the way.
  static func setting(_ path: [String], to value: JSONValue, in object: JSONValue) -> JSONValue {
    guard let key = path.first else { return value }
    var pairs: [(key: String, value: JSONValue)] = []
    if case .object(let existing) = object { pairs = existing }
    let inner = pairs.first { $0.key == key }?.value ?? .object([])
    pairs.removeAll { $0.key == key }
    pairs.append((key, setting(Array(path.dropFirst()), to: value, in: inner)))
    return .object(pairs)
  }

  /// A valid body of each step kind, using most of its keys.
  static func base(_ kind: StepKind.Name) -> JSONValue {
    let text: String =
      switch kind {
      case .schemes: #"{"resources":["A"]}"#
      case .tableStream: #"{"resource":"A","params":{"k":"v"},"expect":{"rows":{"min":1}}}"#
      case .table: #"{"resource":"A","output":"out/a.json"}"#
      case .request: #"{"resource":"A","output":"out/a.json"}"#
      case .files: #"{"connection":"c","action":"get","path":"p","local":"l"}"#
      case .sql: #""SELECT 1""#
      case .query: #"{"sql":"SELECT 1 AS n","output":"out/q.json","expect":{"n":{"min":1}}}"#
      case .http:
        #"{"base_url":"http://h/","query":{"a":"b"},"headers":{"X":"y"},"auth":{"bearer":"tok-123456789"},"load":{"table":"t","write":"merge","primary_key":["id"],"columns":{"id":"INTEGER"}},"paginate":{"cursor":{"from":"/next"},"max_pages":2},"incremental":{"cursor":"/u","param":"since","initial":0},"on_status":{"404":"empty"}}"#
      case .parallel: #"{"steps":[{"sql":"SELECT 1"}]}"#
      }
    return (try? JSONValue(parsing: text)) ?? .null
  }
}

/// A test's own precondition that does not hold.
struct ManifestTestError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
