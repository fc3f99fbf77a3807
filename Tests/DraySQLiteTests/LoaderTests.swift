import DrayJSON
import DrayModel
import DraySQLite
import DrayTarget
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
    #expect(result.skippedTables.names == ["new_table"] && result.skippedTables.more == 0)
    #expect(result.rowCounts == ["t": 1])
  }

  @Test func beyondTenUnlistedTablesTheRestAreCounted() throws {
    let fixture = try StoreFixture()
    let unlisted = (1...12).map { #"{"name":"u\#($0)","data":[]}"# } + [#"{"name":"u1","data":[]}"#, #"{"name":"u12","data":[]}"#]
    let result = try fixture.load(LoaderTests.plain, "[" + (unlisted + [#"{"name":"t","data":[[1,"a"]]}"#]).joined(separator: ",") + "]")
    #expect(result.skippedTables.names == (1...10).map { "u\($0)" })
    // u11 and u12, and u12 again: a name past the first ten counts each time it comes.
    #expect(result.skippedTables.more == 3)
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

  /// The platform answers one element per output table: an answer without one (`[]`, or
  /// some tables only), full data or a delta, loads nothing and keeps every table and its
  /// bookkeeping as they were, instead of counting the old rows as a fresh load.
  @Test(arguments: [
    (#"[]"#, false, "a", "no table of the scheme"),
    (#"[{"name":"a","data":[[7,8]]}]"#, false, "b", "'a'"),
    (#"[{"name":"b","data":[[3,"r"]]},{"name":"other","data":[]}]"#, false, "a", "'b'"),
    (#"[]"#, true, "a", "no table of the scheme"),
    (#"[{"name":"b","insert_rows":[[9,"r"]],"delete_ids":[]}]"#, true, "a", "'b'"),
  ])
  func anAnswerWithoutADeclaredTableLoadsNothing(answer: String, delta: Bool, missing: String, holds: String) throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme(
      name: "R", lifetime: 3600,
      outputs: [.init(name: "a", columns: [.init(name: "x", type: "BIGINT")]), .init(name: "b", columns: [.init(name: "y", type: "TEXT")])])
    try fixture.load(scheme, #"[{"name":"a","data":[[1,5]]},{"name":"b","data":[[2,"p"]]}]"#, info: .init(contentVersion: "v1"))
    let loadedAt = try fixture.rows("SELECT name, content_version, loaded_at FROM _dray_tables ORDER BY name")
    #expect(
      try fixture.loadError(scheme, answer, delta: delta)
        == "resource R, table \(missing): the answer holds no table '\(missing)', which the scheme declares (it holds \(holds)); nothing was loaded: every table keeps its previous rows"
    )
    #expect(try fixture.rows("SELECT hhive_id, x FROM R__a") == [[.integer(1), .integer(5)]])
    #expect(try fixture.rows("SELECT hhive_id, y FROM R__b") == [[.integer(2), .text("p")]])
    #expect(try fixture.rows("SELECT name, content_version, loaded_at FROM _dray_tables ORDER BY name") == loadedAt)
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
      // After a table object ends, no table is being read: none is named.
      (
        #"[{"name":"t","data":[[1,"a"]]}] x"#,
        "resource R: the answer is not valid JSON (more text after the end of the JSON value: 'x', at byte 32)"
      ),
      (
        #"[{"name":"t","data":[[1,"a"]]}][{"name":"t","data":[[1,"a"]]}]"#,
        "resource R: the answer is not valid JSON (more text after the end of the JSON value: '[', at byte 31)"
      ),
      (#"[{"name":"t","data":[]},5]"#, "resource R: each element of the answer must be an object with 'name' and 'data', found a number"),
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
    #expect(try fixture.store.recordedAnswer(ofTable: "R__t")?.contentVersion == "v1")
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
    // A full answer changes the tables it holds data for (`b` with no data stays as it was).
    try fixture.load(
      scheme, #"[{"name":"a","data":[[1,"p"],[2,"q"]]},{"name":"b"}]"#,
      info: .init(contentVersion: "v2", etag: "\"e2\"", cacheHash: hashes))
    let sql = "SELECT name, resource, params, source_table, content_version, etag, cache_hash, row_count FROM _dray_tables ORDER BY name"
    #expect(
      try fixture.rows(sql) == [
        [.text("R__a"), .text("R"), .text("{}"), .text("a"), .text("v2"), .text("\"e2\""), .text("1111"), .integer(2)],
        [.text("R__b"), .text("R"), .text("{}"), .text("b"), .text("v1"), .text("\"e1\""), .text("2222"), .integer(0)],
      ])
    #expect(try fixture.store.deltaBase(scheme: scheme, params: .object([])) == nil)
    // A delta brings every table to its version, changed or not.
    try fixture.load(
      scheme, #"[{"name":"a","insert_rows":[],"delete_ids":[2]},{"name":"b","insert_rows":[],"delete_ids":[]}]"#, delta: true,
      info: .init(contentVersion: "v3"))
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

/// Rows are inserted on the writer's thread (`InsertWriter`), batch by batch, while the
/// answer is parsed: what SQLite refuses is still named by its own row, and nothing of a
/// refused answer stays.
extension LoaderTests {
  /// `count` rows `[id, "n<id>"]` of a cached table, with the id of row `duplicate` set to 1.
  static func cachedRows(_ count: Int, duplicate: Int? = nil) -> String {
    (1...count).map { "[\($0 == duplicate ? 1 : $0),\"n\($0)\"]" }.joined(separator: ",")
  }

  // A cached table's rows have 2 values: a batch holds 4,096 rows, so 4,096 and 4,097 are the
  // last row of the first batch and the first of the second.
  @Test(arguments: [2, 4096, 4097, 9000])
  func aRowSQLiteRefusesIsNamedByItsRowWhicheverBatchItIsIn(duplicate: Int) throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[7,"kept"]]}]"#)
    let answer = #"[{"name":"t","data":["# + LoaderTests.cachedRows(10_000, duplicate: duplicate) + "]}]"
    #expect(
      try fixture.loadError(LoaderTests.cached, answer)
        == "resource R, table t, row \(duplicate): the row's id (hhive_id) is already in the table's data; row ids must be unique")
    #expect(try names(fixture) == [[.integer(7), .text("kept")]])
    // The connection is free again: the next load goes through.
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":["# + LoaderTests.cachedRows(5000) + "]}]")
    #expect(try fixture.rows("SELECT count(*), sum(hhive_id) FROM R__t") == [[.integer(5000), .integer(12_502_500)]])
  }

  @Test func aRefusedRowIsReportedBeforeWhatTheParseMeetsAfterIt() throws {
    let fixture = try StoreFixture()
    // Row 3,000 repeats an id; the answer stops being JSON after row 10,000.
    let answer = #"[{"name":"t","data":["# + LoaderTests.cachedRows(10_000, duplicate: 3000) + #",[10001,"x"] oops"#
    #expect(
      try fixture.loadError(LoaderTests.cached, answer)
        == "resource R, table t, row 3000: the row's id (hhive_id) is already in the table's data; row ids must be unique")
    // A table met after the refused rows is not replaced either.
    let twoTables = ResourceScheme(
      name: "R", lifetime: 3600,
      outputs: [
        .init(name: "t", columns: [.init(name: "name", type: "TEXT")]), .init(name: "u", columns: [.init(name: "name", type: "TEXT")]),
      ])
    try fixture.load(twoTables, #"[{"name":"t","data":[[1,"a"]]},{"name":"u","data":[[1,"b"]]}]"#)
    let refused = #"[{"name":"t","data":["# + LoaderTests.cachedRows(5000, duplicate: 4500) + #"]},{"name":"u","data":[[2,"c"]]}]"#
    #expect(
      try fixture.loadError(twoTables, refused)
        == "resource R, table t, row 4500: the row's id (hhive_id) is already in the table's data; row ids must be unique")
    #expect(try fixture.rows("SELECT hhive_id, name FROM R__u") == [[.integer(1), .text("b")]])
  }

  @Test func rowsOfSeveralTablesAndLargeValuesLoadWhole() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme(
      name: "R",
      outputs: [
        .init(name: "t", columns: [.init(name: "id", type: "BIGINT"), .init(name: "text", type: "TEXT")]),
        .init(name: "u", columns: [.init(name: "id", type: "BIGINT")]),
      ])
    // Values past the batch's 1 MiB of text, and tables whose rows cross batches.
    let large = (1...5).map { #"[\#($0),"\#(String(repeating: Character(UnicodeScalar(UInt8(96 + $0))), count: 700_000))"]"# }
    let small = (6...9000).map { #"[\#($0),"v\#($0)"]"# }
    let ids = (1...20_000).map { "[\($0)]" }
    let answer =
      #"[{"name":"t","data":["# + (large + small).joined(separator: ",") + #"]},{"name":"u","data":["# + ids.joined(separator: ",") + "]}]"
    let result = try fixture.load(scheme, answer)
    #expect(result.rowCounts == ["t": 9000, "u": 20_000])
    #expect(
      try fixture.rows("SELECT id, length(text), substr(text, 1, 5) FROM R__t WHERE id IN (1, 5, 6, 9000) ORDER BY id")
        == [
          [.integer(1), .integer(700_000), .text("aaaaa")], [.integer(5), .integer(700_000), .text("eeeee")],
          [.integer(6), .integer(2), .text("v6")], [.integer(9000), .integer(5), .text("v9000")],
        ])
    #expect(try fixture.rows("SELECT count(*), sum(id) FROM R__u") == [[.integer(20_000), .integer(200_010_000)]])
  }
}

extension LoaderTests {
  /// The rows read so far go to the writer between the 1 MiB pieces of the file, where a
  /// row is usually cut: its first values move to the next batch. The answer is shifted a
  /// byte at a time so that the first piece ends at every byte of a row.
  @Test func aRowCutBetweenTwoPiecesOfTheFileLoadsWhole() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table([
      ("id", "BIGINT"), ("name", "TEXT"), ("amount", "DOUBLE"), ("note", "TEXT"), ("flag", "BIGINT"), ("nested", "TEXT"),
    ])
    let rowCount = 24_000
    let rows = (1...rowCount).map { #"[\#($0),"név-\#($0)",\#($0).5,null,true,{"a":[\#($0),"x"]}]"# }
    let data = rows.joined(separator: ",")
    let expected = (1...rowCount).map { i -> [SQLValue] in
      [.integer(Int64(i)), .text("név-\(i)"), .real(Double(i) + 0.5), .null, .integer(1), .text(#"{"a":[\#(i),"x"]}"#)]
    }
    // Where the first piece ends without padding, inside row `cut`; the row's bytes after that
    // offset are reached by padding the answer's start with up to a row's length.
    let head = #"[{"name":"t","pad":"","data":["#
    var end = head.utf8.count
    let cut = try #require(
      rows.indices.first {
        end += rows[$0].utf8.count + 1
        return end > TableAnswerScanner.chunkSize
      })
    for padding in 0...(rows[cut].utf8.count + 1) {
      let answer = #"[{"name":"t","pad":""# + String(repeating: "p", count: padding) + #"","data":["# + data + "]}]"
      try fixture.load(scheme, answer)
      let loaded = try fixture.rows("SELECT id, name, amount, note, flag, nested FROM R__t ORDER BY id")
      #expect(loaded == expected, "padding \(padding)")
      if loaded != expected { break }
    }
  }
}

extension LoaderTests {
  /// An answer that stops being JSON after many rows: the batches still queued for the writer
  /// are dropped, the load fails with the parse's error and keeps nothing.
  @Test func anAnswerBrokenAfterManyRowsFailsAndKeepsNothing() throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.plain, #"[{"name":"t","data":[[1,"a"]]}]"#)
    let rows = (1...60_000).map { #"[\#($0),"row \#($0)"]"# }.joined(separator: ",")
    for broken in [rows + ",[60001,", rows + ",[60001,nope]]}]", rows + "]}]" + "x"] {
      let error = try #require(try fixture.loadError(LoaderTests.plain, #"[{"name":"t","data":["# + broken))
      // Text after the answer's end is in no table.
      #expect(error.hasPrefix(broken.hasSuffix("x") ? "resource R: " : "resource R, table t"), "\(error)")
      #expect(try fixture.rows("SELECT id, name FROM R__t") == [[.integer(1), .text("a")]])
    }
  }
}

extension LoaderTests {
  /// A table without row ids takes 32 rows an INSERT: a row refused inside one (by a UNIQUE
  /// index someone added to the table) is still named, the statement's rows inserted again
  /// one by one to find it. Width 2: rows 1-32 and 33-64 are whole statements, a batch ends
  /// at row 4,096, and rows 9,985-10,000 (after the last whole statement of the third batch)
  /// go one by one.
  @Test(arguments: [2, 32, 33, 64, 65, 4096, 4097, 9990])
  func aRowRefusedInsideAStatementOfManyRowsIsNamed(duplicate: Int) throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.plain, #"[{"name":"t","data":[[0,"kept"]]}]"#)
    try fixture.store.database.execute(#"CREATE UNIQUE INDEX one_id ON "R__t"(id)"#)
    // Row `duplicate` repeats the id of the row before it.
    let rows = (1...10_000).map { #"[\#($0 == duplicate ? $0 - 1 : $0),"n\#($0)"]"# }.joined(separator: ",")
    #expect(
      try fixture.loadError(LoaderTests.plain, #"[{"name":"t","data":["# + rows + "]}]")
        == "resource R, table t, row \(duplicate): SQLite refused the row: UNIQUE constraint failed: R__t.id")
    #expect(try fixture.rows("SELECT id, name FROM R__t") == [[.integer(0), .text("kept")]])
    let whole = (1...10_000).map { #"[\#($0),"n"]"# }.joined(separator: ",")
    #expect(try fixture.load(LoaderTests.plain, #"[{"name":"t","data":["# + whole + "]}]").rowCounts == ["t": 10_000])
    #expect(try fixture.rows("SELECT count(DISTINCT id), sum(id) FROM R__t") == [[.integer(10_000), .integer(50_005_000)]])
  }
}

/// Failures that are not the row's: a signal, a full disk. They end SQLite's transaction
/// while the writer inserts, and the error says what happened, not that a row was refused.
extension LoaderTests {
  /// The signal comes once 1,000 rows are inserted; SQLite checks the cancellation every
  /// 1,000 instructions of one statement, and 32 rows of 40 columns take more, so the
  /// writer's next INSERT is the one interrupted.
  @Test func aLoadCancelledWhileTheWriterInsertsSaysItWasInterrupted() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table((1...40).map { ("c\($0)", "BIGINT") })
    let row = { (n: Int) in "[" + Array(repeating: String(n), count: 40).joined(separator: ",") + "]" }
    try fixture.load(scheme, #"[{"name":"t","data":["# + row(1) + "]}]")
    let rows = (1...10_000).map(row).joined(separator: ",")
    let file = try fixture.folder.write("big.json", #"[{"name":"t","data":["# + rows + "]}]")
    let cancellation = Cancellation()
    fixture.store.stopWhen(cancellation)
    let observer = fixture.store.observeInsertedRows(every: 1000) { _ in cancellation.cancel(signal: 2) }
    defer { observer?.stop() }
    let error = #expect(throws: LoadError.self) {
      try fixture.store.write {
        try $0.load(file: file, scheme: scheme, params: .object([]), delta: false, info: .init(), cancellation: cancellation)
      }
    }
    #expect(error?.description == "resource R: the load was interrupted; nothing of it was kept")
    #expect(try fixture.rows("SELECT count(*), sum(c40) FROM R__t") == [[.integer(1), .integer(1)]])
  }

  /// `max_page_count` makes SQLite answer SQLITE_FULL as a full disk does.
  @Test(arguments: [false, true])
  func aFullDiskIsNamedAsSuchNotAsARefusedRow(cached: Bool) throws {
    let fixture = try StoreFixture()
    let scheme = cached ? LoaderTests.cached : LoaderTests.plain
    try fixture.load(scheme, #"[{"name":"t","data":[[1,"a"]]}]"#)
    let pages = try #require(fixture.rows("PRAGMA page_count").first?.first)
    guard case .integer(let count) = pages else {
      Issue.record("page_count: \(pages)")
      return
    }
    try fixture.store.database.execute("PRAGMA max_page_count=\(count + 8)")
    let rows = (1...60_000).map { #"[\#($0),"row \#($0) \#(String(repeating: "x", count: 40))"]"# }.joined(separator: ",")
    let error = try #require(try fixture.loadError(scheme, #"[{"name":"t","data":["# + rows + "]}]"))
    #expect(!error.contains("refused the row"), "\(error)")
    #expect(!error.contains("row "), "\(error)")
    #expect(error.contains("database or disk is full"), "\(error)")
    #expect(error.contains(fixture.folder.path + "/db.sqlite"), "\(error)")
    #expect(try fixture.rows("SELECT count(*) FROM R__t") == [[.integer(1)]])
    // With room again, the same answer loads whole.
    try fixture.store.database.execute("PRAGMA max_page_count=1073741823")
    #expect(try fixture.load(scheme, #"[{"name":"t","data":["# + rows + "]}]").rowCounts == ["t": 60_000])
  }
}

extension LoaderTests {
  /// A delta's insert replaces the row of its row id, and that row only: a UNIQUE index a
  /// user added to the table refuses an insert that would repeat another row's value, named
  /// by its row, instead of deleting that other row (as `INSERT OR REPLACE` would).
  @Test func aDeltaInsertThatAUserUniqueIndexRefusesDeletesNoOtherRow() throws {
    let fixture = try StoreFixture()
    try fixture.load(LoaderTests.cached, #"[{"name":"t","data":[[1,"a"],[2,"b"],[3,"c"]]}]"#)
    try fixture.store.database.execute(#"CREATE UNIQUE INDEX one_name ON "R__t"(name)"#)
    #expect(
      try fixture.loadError(LoaderTests.cached, #"[{"name":"t","insert_rows":[[2,"b2"],[4,"a"]],"delete_ids":[]}]"#, delta: true)
        == "resource R, table t, row 2: SQLite refused the row: UNIQUE constraint failed: R__t.name")
    #expect(try names(fixture) == [[.integer(1), .text("a")], [.integer(2), .text("b")], [.integer(3), .text("c")]])
    try fixture.load(LoaderTests.cached, #"[{"name":"t","insert_rows":[[2,"b2"],[4,"d"],[3,"c"]],"delete_ids":[]}]"#, delta: true)
    #expect(
      try names(fixture) == [
        [.integer(1), .text("a")], [.integer(2), .text("b2")], [.integer(3), .text("c")], [.integer(4), .text("d")],
      ])
  }
}

extension LoaderTests {
  /// Every row read before the answer breaks is inserted before the load fails, whichever
  /// batch holds it (the first, the second, or the last, not yet full): a row SQLite refuses
  /// among them is the load's error, not the break after it, however the two threads run.
  @Test(arguments: [3000, 5000, 9990])
  func aRowRefusedBeforeTheAnswerBreaksIsTheError(duplicate: Int) throws {
    let fixture = try StoreFixture()
    let answer = #"[{"name":"t","data":["# + LoaderTests.cachedRows(10_000, duplicate: duplicate) + #",[10001,"x"] oops"#
    #expect(
      try fixture.loadError(LoaderTests.cached, answer)
        == "resource R, table t, row \(duplicate): the row's id (hhive_id) is already in the table's data; row ids must be unique")
  }
}
