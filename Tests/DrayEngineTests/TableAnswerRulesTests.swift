import DrayModel
import DrayPostgres
import DrayPostgresStore
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// The rules of applying a table answer (`TableAnswerApplier`: full, delta, unchanged, the
/// refusals and their messages, the result and the bookkeeping) hold alike on SQLite and on
/// PostgreSQL, each loading with its own mechanism.
@Suite struct TableAnswerRulesTests {
  static let cached = ResourceScheme(name: "R", lifetime: 60, outputs: [.init(name: "t", columns: [.init(name: "name", type: "TEXT")])])
  static let plain = ResourceScheme(name: "R", outputs: [.init(name: "t", columns: [.init(name: "name", type: "TEXT")])])

  /// A fresh target of `kind` and its store.
  struct Target {
    let folder = TemporaryDirectory()
    let database: TargetDatabase
    let store: any TargetStore
    private var answers = 0

    init(_ kind: TargetDatabase.Kind) throws {
      database = try TargetDatabase(kind, folder: folder.path)
      if let url = database.url {
        store = try PostgresStore(target: PostgresTarget(url: PostgresURL(url)))
      } else {
        try FileManager.default.createDirectory(atPath: folder.path + "/data", withIntermediateDirectories: true)
        store = try Store(path: folder.path + "/" + TargetDatabase.sqlitePath)
      }
    }

    /// Writes `json` as an answer file and loads it.
    @discardableResult
    mutating func load(
      _ scheme: ResourceScheme, _ json: String, delta: Bool = false, info: AnswerInfo = .init(), cancellation: Cancellation? = nil
    ) throws -> LoadResult {
      answers += 1
      let file = try folder.write("answer-\(answers).json", json)
      return try store.write {
        try $0.load(file: file, scheme: scheme, params: .object([]), delta: delta, info: info, cancellation: cancellation)
      }
    }

    /// The load's error, or nil when it succeeded.
    mutating func loadError(_ scheme: ResourceScheme, _ json: String, delta: Bool = false, cancellation: Cancellation? = nil) throws
      -> String?
    {
      do {
        try load(scheme, json, delta: delta, cancellation: cancellation)
        return nil
      } catch let error as LoadError {
        return error.description
      }
    }

    func names() throws -> [[String?]] { try database.rows(#"SELECT hhive_id, name FROM "R__t" ORDER BY hhive_id"#) }
  }
  /// `A__b` + `c` and `A` + `b__c` name one physical table: refused on both databases, the
  /// reason the database's own (PostgreSQL compares names exactly; it was told SQLite's).
  @Test(arguments: TargetDatabase.Kind.allCases)
  func twoTablesOfOneNameAreRefusedForTheDatabasesReason(kind: TargetDatabase.Kind) throws {
    let target = try Target(kind)
    let first = ResourceScheme(name: "A__b", outputs: [.init(name: "c", columns: [.init(name: "x", type: "TEXT")])])
    let second = ResourceScheme(name: "A", outputs: [.init(name: "b__c", columns: [.init(name: "x", type: "TEXT")])])
    _ = try target.store.write { try $0.createTables(for: first, params: .object([])) }
    let error = #expect(throws: StoreError.self) { try target.store.write { try $0.createTables(for: second, params: .object([])) } }
    let reason =
      kind == .sqlite
      ? "SQLite table names ignore ASCII case, so the two cannot share the database"
      : "two tables cannot share one name (long names are cut to PostgreSQL's 63 bytes and end in a hash of the whole name)"
    #expect(
      error?.description
        == #"resource 'A': output table 'b__c' would be stored as "A__b__c", which already holds output table 'c' of resource 'A__b' (params {}); "#
        + reason + "; nothing was created")
  }

  /// Each refusal, word for word, and the rows kept as they were.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func eachRefusalReadsTheSameAndKeepsTheRows(kind: TargetDatabase.Kind) throws {
    var target = try Target(kind)
    try target.load(Self.cached, #"[{"name":"t","data":[[1,"a"],[2,"b"]]}]"#, info: .init(contentVersion: "v1"))
    let cancelled = Cancellation()
    cancelled.cancel(signal: 2)
    let cases: [(scheme: ResourceScheme, answer: String, delta: Bool, cancellation: Cancellation?, message: String)] = [
      (
        Self.cached, #"[{"name":"t","insert_rows":[[1,"a"]]}]"#, false, nil,
        "resource R, table t: the answer holds a delta ('insert_rows') but its Content-Version does not say so; refusing to apply it"
      ),
      // Whatever the table: the answer as a whole is not what its Content-Version says.
      (
        Self.cached, #"[{"name":"other","delete_ids":[1]},{"name":"t","data":[]}]"#, false, nil,
        "resource R, table other: the answer holds a delta ('delete_ids') but its Content-Version does not say so; refusing to apply it"
      ),
      (
        Self.cached, #"[{"name":"t","insert_rows":[],"delete_ids":["x"]}]"#, true, nil,
        "resource R, table t: delete_ids holds row ids (integers of at most 64 bits); item 1 is a non-number"
      ),
      (
        Self.cached, #"[{"name":"t","insert_rows":[],"delete_ids":[1,1.5]}]"#, true, nil,
        "resource R, table t: delete_ids holds row ids (integers of at most 64 bits); item 2 is 1.5"
      ),
      (
        Self.cached, "[]", false, nil,
        "resource R, table t: the answer holds no table 't', which the scheme declares (it holds no table of the scheme); nothing was loaded: every table keeps its previous rows"
      ),
      (
        Self.cached, #"[{"name":"t","data":[[3,"c"]]}]"#, false, cancelled,
        "resource R: the load was interrupted; nothing of it was kept"
      ),
    ]
    for refusal in cases {
      let message = try target.loadError(refusal.scheme, refusal.answer, delta: refusal.delta, cancellation: refusal.cancellation)
      #expect(message == refusal.message, "\(refusal.answer)")
      #expect(try target.names() == [["1", "a"], ["2", "b"]])
    }
    #expect(try target.store.deltaBase(scheme: Self.cached, params: .object([])) == "v1")
  }

  /// `delete_ids` need row ids: a resource that is not cached has none.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func idsOfAResourceWithoutRowIDsAreRefused(kind: TargetDatabase.Kind) throws {
    var target = try Target(kind)
    try target.load(Self.plain, #"[{"name":"t","data":[["a"]]}]"#)
    #expect(
      try target.loadError(Self.plain, #"[{"name":"t","delete_ids":[1]}]"#, delta: true)
        == "resource R, table t: the answer deletes rows by id from table t, whose resource has no row ids (it is not cached)")
    #expect(try target.database.rows(#"SELECT name FROM "R__t""#) == [["a"]])
  }

  /// A delta applies only to a table with the scheme's columns; full data recreates it.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func aDeltaRefusesATableWithoutTheSchemesColumnsAndFullDataRecreatesIt(kind: TargetDatabase.Kind) throws {
    var target = try Target(kind)
    let integer = kind == .sqlite ? "INTEGER" : "bigint"
    try target.database.execute(#"CREATE TABLE "R__t" (hhive_id \#(integer) PRIMARY KEY, name TEXT, extra REAL)"#)
    #expect(try target.store.deltaBase(scheme: Self.cached, params: .object([])) == nil)
    #expect(
      try target.loadError(Self.cached, #"[{"name":"t","insert_rows":[[1,"a"]]}]"#, delta: true)
        == #"resource R, table t: table "R__t" does not have the scheme's columns, so a delta cannot apply to it; load full data (without delta) to recreate it"#
    )
    #expect(
      try target.loadError(Self.cached, #"[{"name":"t","insert_rows":[],"delete_ids":[1]}]"#, delta: true)
        == #"resource R, table t: table "R__t" does not have the scheme's columns, so a delta cannot apply to it; load full data (without delta) to recreate it"#
    )
    // A delta's `data` replaces the table, so its shape does not matter.
    try target.load(Self.cached, #"[{"name":"t","data":[[1,"a"]]}]"#, delta: true, info: .init(contentVersion: "v2"))
    #expect(try target.database.columnNames("R__t") == ["hhive_id", "name"])
    #expect(try target.store.deltaBase(scheme: Self.cached, params: .object([])) == "v2")
  }

  /// Row counts, inserts and deletes, and which tables a load records (a delta records every
  /// table); an unchanged answer is held only when every table records its hash, the strong
  /// ETag and the version.
  @Test(arguments: TargetDatabase.Kind.allCases)
  func resultsAndBookkeepingAreTheSame(kind: TargetDatabase.Kind) throws {
    var target = try Target(kind)
    let scheme = ResourceScheme(
      name: "R", lifetime: 60,
      outputs: [.init(name: "a", columns: [.init(name: "x", type: "TEXT")]), .init(name: "b", columns: [.init(name: "y", type: "TEXT")])])
    let hashes = "a-Hash%3A1111,b-Hash%3A2222"
    let first = AnswerInfo(contentVersion: "v1", etag: "\"e1\"", cacheHash: hashes)
    var result = try target.load(scheme, #"[{"name":"a","data":[[1,"p"]]},{"name":"b","data":[]},{"name":"c","data":[[1]]}]"#, info: first)
    #expect(result.rowCounts == ["a": 1, "b": 0] && result.inserted == ["a": 1, "b": 0] && result.deleted == ["a": 0, "b": 0])
    #expect(result.tables == ["a": "R__a", "b": "R__b"] && result.skippedTables.names == ["c"])
    #expect(try target.store.holdsAnswer(first, scheme: scheme, params: .object([])))
    #expect(
      try !target.store.holdsAnswer(
        AnswerInfo(contentVersion: "v1", etag: "W/\"e1\"", cacheHash: hashes), scheme: scheme, params: .object([])))
    let second = AnswerInfo(contentVersion: "v2", etag: "\"e2\"", cacheHash: hashes)
    result = try target.load(scheme, #"[{"name":"b","data":[]},{"name":"a","data":[[1,"p"],[2,"q"]]}]"#, info: second)
    #expect(result.rowCounts == ["a": 2, "b": 0] && result.inserted == ["a": 2, "b": 0])
    let sql = "SELECT name, resource, params, source_table, content_version, etag, cache_hash, row_count FROM _dray_tables ORDER BY name"
    #expect(
      try target.database.rows(sql) == [
        ["R__a", "R", "{}", "a", "v2", "\"e2\"", "1111", "2"],
        ["R__b", "R", "{}", "b", "v2", "\"e2\"", "2222", "0"],
      ])
    #expect(try target.store.holdsAnswer(second, scheme: scheme, params: .object([])))
    #expect(try !target.store.holdsAnswer(first, scheme: scheme, params: .object([])))
    #expect(try target.store.deltaBase(scheme: scheme, params: .object([])) == "v2")
    // Deletes apply before inserts, whatever the key order; a delta records every table.
    result = try target.load(
      scheme, #"[{"insert_rows":[[2,"Q"],[3,"r"]],"name":"a","delete_ids":[2,1]},{"name":"b","insert_rows":[],"delete_ids":[]}]"#,
      delta: true, info: .init(contentVersion: "v3"))
    #expect(result.rowCounts == ["a": 2, "b": 0] && result.inserted == ["a": 2, "b": 0] && result.deleted == ["a": 2, "b": 0])
    #expect(try target.database.rows(#"SELECT hhive_id, x FROM "R__a" ORDER BY hhive_id"#) == [["2", "Q"], ["3", "r"]])
    #expect(try target.store.deltaBase(scheme: scheme, params: .object([])) == "v3")
  }
}
