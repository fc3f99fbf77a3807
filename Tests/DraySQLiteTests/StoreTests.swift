import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Foundation
import Testing

/// Physical table names, the bookkeeping and the names SQLite must refuse (platform-api.md §7).
@Suite struct StoreTests {
  @Test func physicalNamesFollowThePlatformRule() {
    #expect(Store.tableName(resource: "FRUITS", table: "output_table", params: .object([])) == "FRUITS__output_table")
    let params = JSONValue.object([("region", .string("EU")), ("a", .integer(1))])
    let digest = SHA256.hex(#"{"a":1,"region":"EU"}"#).prefix(8)
    #expect(Store.tableName(resource: "FRUITS", table: "output_table", params: params) == "FRUITS__output_table__\(digest)")
    // Key order does not matter: the parameters are canonical before they are hashed.
    let reordered = JSONValue.object([("a", .integer(1)), ("region", .string("EU"))])
    #expect(Store.tableName(resource: "FRUITS", table: "output_table", params: reordered) == "FRUITS__output_table__\(digest)")
  }

  @Test func eachParameterSetGetsItsOwnTableAndBookkeepingRow() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table([("id", "BIGINT")], resource: "FRUITS", table: "output_table")
    let eu = JSONValue.object([("region", .string("EU"))])
    let us = JSONValue.object([("region", .string("US"))])
    try fixture.load(scheme, #"[{"name":"output_table","data":[[1],[2]]}]"#, params: eu, info: .init(contentVersion: "v1"))
    try fixture.load(scheme, #"[{"name":"output_table","data":[[3]]}]"#, params: us, info: .init(contentVersion: "v1"))
    try fixture.load(scheme, #"[{"name":"output_table","data":[]}]"#)
    let euName = Store.tableName(resource: "FRUITS", table: "output_table", params: eu)
    let usName = Store.tableName(resource: "FRUITS", table: "output_table", params: us)
    #expect(euName != usName)
    let records = try fixture.store.records(resource: "FRUITS")
    #expect(records.map(\.name) == ["FRUITS__output_table", euName, usName].sorted())
    #expect(records.map(\.params) == ["{}", #"{"region":"EU"}"#, #"{"region":"US"}"#])
    #expect(records.map(\.rowCount) == [0, 2, 1])
    #expect(try fixture.store.recordedTable(resource: "FRUITS", table: "output_table", params: eu) == euName)
    #expect(try fixture.store.recordedTable(resource: "FRUITS", table: "output_table", params: .object([("region", .string("JP"))])) == nil)
  }

  @Test func anyServerNameRoundTripsExactly() throws {
    let fixture = try StoreFixture()
    let columns = [
      "order", "select", "say \"hi\"", "with space", "страна", "名前", "😀", "a;DROP TABLE x;--", "'single'", "[br]", "`tick`", "tab\there",
    ]
    let scheme = ResourceScheme(
      name: "ODD \"names\" 資源", outputs: [.init(name: "table; \"x\"", columns: columns.map { .init(name: $0, type: "TEXT") })])
    let names = try fixture.store.createTables(for: scheme)
    let physical = "ODD \"names\" 資源__table; \"x\""
    #expect(names == ["table; \"x\"": physical])
    let values = columns.map { JSONValue.quoted($0) }.joined(separator: ",")
    try fixture.load(scheme, #"[{"name":"table; \"x\"","data":[[\#(values)]]}]"#)
    #expect(try fixture.rows("SELECT name FROM pragma_table_info(\(SQLValue.text(physical).sqlLiteral))") == columns.map { [.text($0)] })
    let select = columns.map { Database.quote($0) }.joined(separator: ", ")
    #expect(try fixture.rows("SELECT \(select) FROM \(Database.quote(physical))") == [columns.map { .text($0) }])
    #expect(try fixture.store.records().map(\.sourceTable) == ["table; \"x\""])
  }

  @Test func namesSQLiteCannotHoldAreRefusedBeforeAnythingIsCreated() throws {
    let fixture = try StoreFixture()
    let cases: [(ResourceScheme, String)] = [
      (.table([("a", "TEXT")], resource: ""), "resource '': the resource name is empty; nothing was created"),
      (.table([("a", "TEXT")], table: ""), "resource 'R': an output table has an empty name; nothing was created"),
      (
        .table([("a", "TEXT"), ("", "TEXT")]),
        "resource 'R': output table 't' has a column with an empty name (column 2); nothing was created"
      ),
      // Two output tables of one name: each load would fill both, or trap on the duplicate.
      (
        ResourceScheme(name: "R", outputs: [.init(name: "t", columns: [.init(name: "a", type: "TEXT")]), .init(name: "t", columns: [])]),
        "resource 'R': the scheme lists two output tables named 't'; each output table needs its own name; nothing was created"
      ),
      (
        ResourceScheme(
          name: "R",
          outputs: [
            .init(name: "t", columns: [.init(name: "a", type: "TEXT")]), .init(name: "T", columns: [.init(name: "b", type: "TEXT")]),
          ]),
        "resource 'R': the scheme lists output tables 't' and 'T', which SQLite cannot tell apart (names differ only in letter case); nothing was created"
      ),
      (.table([]), "resource 'R': output table 't' has no columns; SQLite cannot create a table without columns; nothing was created"),
      // A NUL would cut the name short in SQLite's C interface: `nam\0e` would create `nam`.
      (
        .table([("nam\0e", "TEXT")]),
        "resource 'R': output table 't' has a column named 'nam\\0e', which holds a NUL character (U+0000); nothing was created"
      ),
      (
        .table([("a", "TEXT")], table: "t\0x"),
        "resource 'R': output table 't\\0x' has a name holding a NUL character (U+0000); nothing was created"
      ),
      (
        .table([("a", "TEXT")], resource: "R\0S"), "resource 'R\\0S': the resource name holds a NUL character (U+0000); nothing was created"
      ),
      (
        .table([("ID", "BIGINT"), ("id", "TEXT")]),
        "resource 'R': output table 't' has columns 'ID' and 'id', which SQLite cannot tell apart (names differ only in letter case); nothing was created"
      ),
      (
        .table([("HHIVE_ID", "BIGINT")], lifetime: 60),
        "resource 'R': output table 't' has a column 'HHIVE_ID', which clashes with the row id column 'hhive_id' of a cached resource; nothing was created"
      ),
      (
        .table((1...2001).map { ("c\($0)", "TEXT") }),
        "resource 'R': output table 't' has 2001 columns; SQLite allows at most 2000; nothing was created"
      ),
      (
        .table((1...2000).map { ("c\($0)", "TEXT") }, lifetime: 60),
        "resource 'R': output table 't' has 2000 columns; SQLite allows at most 1999; nothing was created"
      ),
      (
        .table([("a", "TEXT")], resource: "sqlite"),
        "resource 'sqlite': SQLite reserves table names that start with 'sqlite_'; nothing was created"
      ),
    ]
    for (scheme, message) in cases {
      // Both ways in: the schemes step, and a load that creates what is missing.
      let attempts: [() throws -> Void] = [
        { try fixture.store.createTables(for: scheme) },
        { try fixture.load(scheme, #"[{"name":"t","data":[]}]"#) },
      ]
      for attempt in attempts {
        do {
          try attempt()
          Issue.record("accepted: \(message)")
        } catch let error as StoreError {
          #expect(error.description == message)
        }
      }
    }
    #expect(
      try fixture.rows("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_dray\\_%' ESCAPE '\\'") == [
        [.integer(0)]
      ])
  }

  @Test func theWidestTableSQLiteAllowsLoads() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table((1...2000).map { ("c\($0)", "BIGINT") })
    let row = (1...2000).map(String.init).joined(separator: ",")
    let result = try fixture.load(scheme, #"[{"name":"t","data":[[\#(row)]]}]"#)
    #expect(result.rowCounts == ["t": 1])
    #expect(try fixture.rows("SELECT c1, c2000 FROM R__t") == [[.integer(1), .integer(2000)]])
  }

  @Test func resourcesWhoseNamesCollideInSQLiteAreRefused() throws {
    let fixture = try StoreFixture()
    try fixture.store.createTables(for: .table([("a", "TEXT")], resource: "FRUITS", table: "output_table"))
    #expect(throws: StoreError.self) {
      try fixture.store.createTables(for: .table([("a", "TEXT")], resource: "fruits", table: "output_table"))
    }
    do {
      try fixture.store.createTables(for: .table([("a", "TEXT")], resource: "FRUITS__output", table: "table"))
    } catch {
      #expect(
        "\(error)"
          == #"resource 'FRUITS__output': output table 'table' would be stored as "FRUITS__output__table", which already holds output table 'output_table' of resource 'FRUITS' (params {}); SQLite table names ignore ASCII case, so the two cannot share the database; nothing was created"#
      )
    }
  }

  @Test func aSecondLoadReplacesRowsInsteadOfAddingThem() throws {
    let fixture = try StoreFixture()
    let scheme = ResourceScheme.table([("id", "BIGINT")])
    try fixture.load(scheme, #"[{"name":"t","data":[[1],[2],[3]]}]"#)
    let again = try fixture.load(scheme, #"[{"name":"t","data":[[1],[2],[3]]}]"#)
    #expect(again.rowCounts == ["t": 3])
  }
}

extension SQLValue {
  /// The value as an SQL literal, for tests that must name a table in a function argument.
  var sqlLiteral: String {
    switch self {
    case .text(let s): "'" + s.replacing("'", with: "''") + "'"
    default: description
    }
  }
}

@Suite struct IdentifierKeyTests {
  @Test func namesCompareAsSQLiteComparesThem() throws {
    #expect(IdentifierKey("Name") == IdentifierKey("name"))
    #expect(IdentifierKey("\u{e9}") != IdentifierKey("e\u{301}"))
    #expect(IdentifierKey("\u{c9}") != IdentifierKey("\u{e9}"))  // SQLite folds ASCII letters only
    let fixture = try StoreFixture()
    // Columns `é` and `e` + U+0301 are two columns to SQLite: accepted, both created.
    let scheme = ResourceScheme.table([("\u{e9}", "TEXT"), ("e\u{301}", "INTEGER")])
    let names = try fixture.store.createTables(for: scheme)
    let columns = try fixture.store.database.rows("SELECT name FROM pragma_table_info(?)", [.text(names["t"]!)])
    #expect(try columns.map { Array(try $0["name"].description.utf8) } == [Array("\u{e9}".utf8), Array("e\u{301}".utf8)])
    // Two output tables spelt that way are refused by their real reason.
    let tables = ResourceScheme(
      name: "R",
      outputs: [
        .init(name: "\u{e9}", columns: [.init(name: "a", type: "TEXT")]),
        .init(name: "e\u{301}", columns: [.init(name: "a", type: "TEXT")]),
      ])
    #expect(throws: StoreError.self) { try fixture.store.createTables(for: tables) }
    do {
      try fixture.store.createTables(for: tables)
    } catch {
      #expect("\(error)".contains("which differ only in Unicode normalization"), "\(error)")
    }
  }
}

/// The naming rule under a database's identifier limit (PostgreSQL keeps 63 bytes).
@Suite struct TableNamingTests {
  let postgres = TableNaming(maxIdentifierBytes: 63)

  @Test func namesWithinTheLimitAreTheRulesNames() {
    let params = JSONValue.object([("region", .string("EU"))])
    #expect(
      postgres.physicalName(resource: "FRUITS", table: "output_table", params: params)
        == Store.tableName(resource: "FRUITS", table: "output_table", params: params))
    let long = String(repeating: "r", count: 200)
    #expect(Store.naming.physicalName(resource: long, table: "t", params: .object([])) == long + "__t")
  }

  @Test func aQuarantinesDerivedNameFollowsTheLongNameRule() {
    #expect(postgres.quarantine(of: "orders", named: nil) == "orders_rejected")
    #expect(postgres.quarantine(of: "orders", named: "rejects") == "rejects")
    let table = String(repeating: "t", count: 60)
    let name = postgres.quarantine(of: table, named: nil)
    #expect(name == String(repeating: "t", count: 53) + "__" + SHA256.hex(table + "_rejected").prefix(8))
    #expect(Store.naming.quarantine(of: table, named: nil) == table + "_rejected")
  }

  @Test func aLongerNameIsCutAndEndsInTheWholeNamesHash() {
    let resource = String(repeating: "R", count: 70)
    let name = postgres.physicalName(resource: resource, table: "t", params: .object([]))
    let hash = SHA256.hex(resource + "__t").prefix(8)
    #expect(name == String(repeating: "R", count: 53) + "__" + hash)
    #expect(name.utf8.count == 63)
    // Names that differ only past the cut stay apart.
    #expect(postgres.physicalName(resource: resource, table: "u", params: .object([])) != name)
  }

  @Test func aCutFallsBetweenCharacters() {
    // "é" is 2 bytes in UTF-8: 26 of them are 52 bytes, a 27th would pass the 53 left.
    let resource = String(repeating: "é", count: 40)
    let name = postgres.physicalName(resource: resource, table: "t", params: .object([]))
    #expect(name.hasPrefix(String(repeating: "é", count: 26) + "__"))
    #expect(name.utf8.count == 62)
  }
}

/// `Folders.create(holding:)`, the one `mkdir -p` of the database, the journal, the lock and
/// the files a run writes: a failure names the folder it met and the system's reason.
@Suite struct FoldersTests {
  @Test func missingFoldersAreCreatedAndOneInTheWayIsNamed() throws {
    let folder = TemporaryDirectory()
    try Folders.create(holding: folder.path + "/a/b/c.sqlite")
    var info = stat()
    #expect(stat(folder.path + "/a/b", &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
    try folder.write("file", "")
    let error = #expect(throws: FolderError.self) { try Folders.create(holding: folder.path + "/file/x/db.sqlite") }
    #expect(error?.description == "\(folder.path)/file is not a folder: Not a directory")
    let store = #expect(throws: StoreError.self) { try Store(path: folder.path + "/file/db.sqlite") }
    #expect(store?.description == "\(folder.path)/file is not a folder: Not a directory, for the database; check the path and permissions")
  }
}
