import DrayModel
import DrayStore
import DrayTestSupport
import Foundation
import Testing

/// The shapes of a table answer: key order, deltas, unknown tables, broken answers.
@Suite struct LoaderTests {
  static let cached = ResourceScheme.table([("name", "TEXT")], lifetime: 3600)
  static let plain = ResourceScheme.table([("id", "BIGINT"), ("name", "TEXT")])

  func names(_ fixture: StoreFixture) throws -> [[SQLValue]] {
    try fixture.rows("SELECT hhive_id, name FROM R__t ORDER BY hhive_id")
  }

  @Test func aNameAfterTheDataStillLoadsTheRows() throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.plain, #"[{"name":"t","data":[[9,"old"]]}]"#)
    let result = try fixture.load(LoaderTests.plain, #"[{"data":[[1,"a"],[2,"b"]],"meta":{"x":[1]},"name":"t"}]"#)
    #expect(result.rowCounts == ["t": 2])
    #expect(result.inserted == ["t": 2])
    #expect(try fixture.rows("SELECT id, name FROM R__t ORDER BY id") == [[.integer(1), .text("a")], [.integer(2), .text("b")]])
  }

  @Test(arguments: [
    #"[{"name":"t","insert_rows":[[2,"B"],[4,"d"]],"delete_ids":[2,3]}]"#,
    #"[{"insert_rows":[[2,"B"],[4,"d"]],"delete_ids":[2,3],"name":"t"}]"#,
    #"[{"delete_ids":[2,3],"name":"t","insert_rows":[[2,"B"],[4,"d"]]}]"#,
    #"[{"name":"t","delete_ids":[2,3],"insert_rows":[[2,"B"],[4,"d"]]}]"#,
  ])
  func aDeltaDeletesBeforeItInsertsWhateverTheKeyOrder(answer: String) throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[1,"a"],[2,"b"],[3,"c"]]}]"#)
    let result = try fixture.load(LoaderTests.cached, answer, delta: true)
    // Row 2 is updated (deleted, then inserted again), 3 deleted, 4 inserted.
    #expect(try names(fixture) == [[.integer(1), .text("a")], [.integer(2), .text("B")], [.integer(4), .text("d")]])
    #expect(result.deleted == ["t": 2])
    #expect(result.inserted == ["t": 2])
    #expect(result.rowCounts == ["t": 3])
  }

  @Test func aDeltaInsertForARowIDTheTableHoldsReplacesThatRow() throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[1,"a"],[2,"b"]]}]"#)
    try fixture.load(LoaderTests.cached, #"[{"name":"t","insert_rows":[[1,"z"]],"delete_ids":[]}]"#, delta: true)
    #expect(try names(fixture) == [[.integer(1), .text("z")], [.integer(2), .text("b")]])
  }

  @Test func aDeltaAnswerThatHoldsFullDataReplacesTheTable() throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[1,"a"],[2,"b"]]}]"#)
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[5,"e"]]}]"#, delta: true)
    #expect(try names(fixture) == [[.integer(5), .text("e")]])
  }

  @Test func aFullAnswerWithDeltaKeysIsRefused() throws {
    let fixture = try StoreFixture()
    #expect(
      try fixture.loadError(LoaderTests.cached, #"[{"name":"t","insert_rows":[[1,"a"]]}]"#)
        == "resource R, table t: the answer holds a delta ('insert_rows') but its Content-Version does not say so; refusing to apply it")
  }

  @Test func tablesTheSchemeDoesNotListAreSkippedAndReported() throws {
    let fixture = try StoreFixture()
    let result = try fixture.load(
      LoaderTests.plain, #"[{"name":"new_table","data":[[1,2,3]]},{"name":"t","data":[[1,"a"]]},{"name":"new_table","data":[]}]"#)
    #expect(result.skippedTables == ["new_table"])
    #expect(result.rowCounts == ["t": 1])
  }

  @Test func theRowsOfOneTableMaySpanSeveralObjects() throws {
    let fixture = try StoreFixture()
    let result = try fixture.load(LoaderTests.plain, #"[{"name":"t","data":[[1,"a"]]},{"data":[[2,"b"]],"name":"t"}]"#)
    #expect(result.rowCounts == ["t": 2])
  }

  @Test func everyOutputTableOfAResourceLoads() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme(
      name: "R",
      outputs: [.init(name: "a", columns: [.init(name: "x", type: "BIGINT")]), .init(name: "b", columns: [.init(name: "y", type: "TEXT")])])
    let result = try fixture.load(scheme, #"[{"name":"b","data":[["p"],["q"]]},{"name":"a","data":[[1]]}]"#)
    #expect(result.rowCounts == ["a": 1, "b": 2])
    #expect(result.tables == ["a": "R__a", "b": "R__b"])
  }

  @Test func brokenAnswersAreRefusedWithWhereAndWhy() throws {
    let fixture = try StoreFixture()
    let plain = LoaderTests.plain
    let cases: [(String, String)] = [
      ("", "resource R: the answer is empty; expected a JSON list of tables"),
      (" \n\t ", "resource R: the answer holds only whitespace (4 bytes); expected a JSON list of tables"),
      (#"{"name":"t"}"#, "resource R: the answer must be a JSON list of tables, found an object"),
      (#"[["t"]]"#, "resource R: each element of the answer must be an object with 'name' and 'data', found a list"),
      (#"[{"name":"t","data":[{"id":1}]}]"#, "resource R, table t, row 1: each row must be a JSON list of values, found an object"),
      (
        #"[{"name":"t","data":[[1,"a"],[2,"b",3]]}]"#,
        "resource R, table t, row 2, column 3: the row has more than 2 values; the table has 2 columns"
      ),
      (
        #"[{"name":"t","data":[[1,"a"],[2,"#,
        "resource R, table t, row 2, column 2: the answer ends before its JSON is complete (32 bytes); the download was cut short"
      ),
      (#"[{"data":[[1,"a"]]}]"#, "resource R: an element of the answer has no 'name'"),
      (#"[{"name":7,"data":[]}]"#, "resource R: a table's 'name' must be a string"),
      (#"[{"name":"t","data":5}]"#, "resource R, table t: a table's 'data' must be a list"),
      (#"[{"name":"t","name":"t","data":[]}]"#, "resource R, table t: a table object has 'name' twice"),
    ]
    for (answer, message) in cases {
      let error = try fixture.loadError(plain, answer)
      #expect(error == message, "\(answer)")
    }
  }

  @Test func rowIDsMustBeUniqueIntegers() throws {
    let fixture = try StoreFixture()
    let cached = LoaderTests.cached
    #expect(
      try fixture.loadError(cached, #"[{"name":"t","data":[[1,"a"],["2","b"]]}]"#)
        == "resource R, table t, row 2, column 1: the row id (hhive_id) must be an integer of at most 64 bits; found a string")
    #expect(
      try fixture.loadError(cached, #"[{"name":"t","data":[[1,"a"],[1.5,"b"]]}]"#)
        == "resource R, table t, row 2, column 1: the row id (hhive_id) must be an integer of at most 64 bits; found 1.5")
    let duplicate = try fixture.loadError(cached, #"[{"name":"t","data":[[1,"a"],[1,"b"]]}]"#)
    #expect(
      duplicate
        == "resource R, table t, row 2: the row's id (hhive_id) is already in the table's data; row ids must be unique")
    #expect(
      try fixture.loadError(cached, #"[{"name":"t","insert_rows":[],"delete_ids":["x"]}]"#, delta: true)
        == "resource R, table t: delete_ids holds row ids (integers of at most 64 bits); item 1 is a non-number")
    #expect(
      try fixture.loadError(LoaderTests.plain, #"[{"name":"t","delete_ids":[1]}]"#, delta: true)
        == "resource R, table t: the answer deletes rows by id from table t, whose resource has no row ids (it is not cached)")
  }

  @Test func aFailedLoadLeavesThePreviousRowsAndBookkeeping() throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[1,"a"],[2,"b"]]}]"#, info: .init(contentVersion: "v1"))
    #expect(try fixture.loadError(LoaderTests.cached, #"[{"name":"t","insert_rows":[[3,"c"]],"delete_ids":[1,"#, delta: true) != nil)
    #expect(try names(fixture) == [[.integer(1), .text("a")], [.integer(2), .text("b")]])
    #expect(try fixture.store.contentVersion(of: "R__t") == "v1")
  }

  @Test func aFullLoadRecreatesATableWhoseColumnsAreNotTheSchemesAndADeltaRefusesIt() throws {
    let fixture = try StoreFixture()
    try fixture.store.database.execute(#"CREATE TABLE "R__t" (hhive_id INTEGER PRIMARY KEY, name TEXT, extra REAL)"#)
    #expect(try fixture.store.deltaBase(scheme: LoaderTests.cached, params: .object([])) == nil)
    let refused = try fixture.loadError(LoaderTests.cached, #"[{"name":"t","insert_rows":[[1,"a"]]}]"#, delta: true)
    #expect(
      refused
        == #"resource R, table t: table "R__t" does not have the scheme's columns, so a delta cannot apply to it; load full data (without delta) to recreate it"#
    )
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[1,"a"]]}]"#, info: .init(contentVersion: "v3"))
    #expect(
      try fixture.rows("SELECT name, type FROM pragma_table_info('R__t')") == [
        [.text("hhive_id"), .text("INTEGER")], [.text("name"), .text("")],
      ])
    #expect(try fixture.store.deltaBase(scheme: LoaderTests.cached, params: .object([])) == "v3")
  }

  @Test func theBookkeepingRecordsVersionETagHashAndRowCount() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme(
      name: "R", lifetime: 60,
      outputs: [.init(name: "a", columns: [.init(name: "x", type: "TEXT")]), .init(name: "b", columns: [.init(name: "y", type: "TEXT")])])
    let hashes = "a-Hash%3A1111,b-Hash%3A2222"
    try fixture.load(
      scheme, #"[{"name":"a","data":[[1,"p"]]},{"name":"b","data":[]}]"#,
      info: .init(contentVersion: "v1", etag: "\"e1\"", cacheHash: hashes))
    // A full answer that names only table a changes only table a.
    try fixture.load(
      scheme, #"[{"name":"a","data":[[1,"p"],[2,"q"]]}]"#, info: .init(contentVersion: "v2", etag: "\"e2\"", cacheHash: hashes))
    let sql = "SELECT name, resource, params, source_table, content_version, etag, cache_hash, row_count FROM _dray_tables ORDER BY name"
    #expect(
      try fixture.rows(sql) == [
        [.text("R__a"), .text("R"), .text("{}"), .text("a"), .text("v2"), .text("\"e2\""), .text("1111"), .integer(2)],
        [.text("R__b"), .text("R"), .text("{}"), .text("b"), .text("v1"), .text("\"e1\""), .text("2222"), .integer(0)],
      ])
    #expect(try fixture.store.deltaBase(scheme: scheme, params: .object([])) == nil)
    // A delta brings every table to its version, named in the answer or not.
    try fixture.load(scheme, #"[{"name":"a","insert_rows":[],"delete_ids":[2]}]"#, delta: true, info: .init(contentVersion: "v3"))
    #expect(try fixture.store.deltaBase(scheme: scheme, params: .object([])) == "v3")
  }

  @Test func largeAnswersStreamAcrossReadChunksExactly() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table([("id", "BIGINT"), ("text", "TEXT"), ("real", "DOUBLE")])
    let long = String(repeating: "é\\\"x\\u00e9", count: 40_000)
    var rows: [String] = [#"[0,"\#(long)",0.5]"#]
    for i in 1...30_000 { rows.append(#"[\#(i),"row \"\#(i)\" \u263A",\#(i).25]"#) }
    let result = try fixture.load(scheme, #"[{"name":"t","data":[\#(rows.joined(separator: ","))]}]"#)
    #expect(result.rowCounts == ["t": 30_001])
    #expect(result.mismatchCount == 0)
    #expect(try fixture.rows("SELECT length(text) FROM R__t WHERE id = 0") == [[.integer(160_000)]])
    #expect(try fixture.rows("SELECT sum(real), count(DISTINCT text) FROM R__t WHERE id > 0") == [[.real(450_022_500), .integer(30_000)]])
    #expect(try fixture.rows("SELECT text FROM R__t WHERE id = 29999") == [[.text("row \"29999\" ☺")]])
  }
}

extension LoaderTests {
  @Test func aCancelledLoadStopsAndKeepsNothing() throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.plain, #"[{"name":"t","data":[[1,"a"]]}]"#)
    let file = try fixture.folder.write("big.json", #"[{"name":"t","data":[[2,"b"],[3,"c"]]}]"#)
    let cancellation = Cancellation()
    cancellation.cancel(signal: 2)
    #expect(throws: LoadError.self) {
      try fixture.store.write {
        try $0.load(file: file, scheme: LoaderTests.plain, params: .object([]), delta: false, info: .init(), cancellation: cancellation)
      }
    }
    #expect(try fixture.rows("SELECT id, name FROM R__t") == [[.integer(1), .text("a")]])
  }
}
