import DrayModel
import DrayStore
import DrayTestSupport
import Foundation
import Testing

@Suite struct StoreTests {
  @Test func physicalNamesFollowThePlatformRule() {
    #expect(Store.tableName(resource: "FRUITS", table: "output_table", params: .object([])) == "FRUITS__output_table")
    let params = JSONValue.object([("region", .string("EU")), ("a", .integer(1))])
    let digest = SHA256.hex(#"{"a":1,"region":"EU"}"#).prefix(8)
    #expect(Store.tableName(resource: "FRUITS", table: "output_table", params: params) == "FRUITS__output_table__\(digest)")
  }

  @Test func createsTablesWithOddColumnNamesAndLoadsThem() throws {
    let folder = TemporaryDirectory()
    let store = try Store(path: folder.path + "/odd.sqlite")
    let scheme = ResourceScheme(
      name: "ODD \"names\"",
      outputs: [
        .init(
          name: "output_table",
          columns: [
            .init(name: "order", type: "BIGINT"), .init(name: "say \"hi\"", type: "TEXT"),
            .init(name: "with space", type: "DOUBLE"), .init(name: "страна", type: "TEXT"),
          ])
      ])
    let names = try store.createTables(for: scheme)
    #expect(names == ["output_table": "ODD \"names\"__output_table"])
    let answer = try folder.write("answer.json", #"[{"name":"output_table","data":[[1,"a",1.5,"Россия"],[2,null,null,"Франция"]]}]"#)
    let result = try store.load(
      file: answer, scheme: scheme, params: .object([]), delta: false, info: .init(contentVersion: "v1", etag: "\"e\""))
    #expect(result.rowCounts == ["output_table": 2])
    let rows = try store.database.rows(
      #"SELECT "order", "say ""hi""", "with space", "страна" FROM "ODD ""names""__output_table" ORDER BY 1"#)
    #expect(
      rows.map { $0.map(\.1) } == [[.integer(1), .text("a"), .real(1.5), .text("Россия")], [.integer(2), .null, .null, .text("Франция")]])
    let columns = try store.database.rows(#"SELECT name, type FROM pragma_table_info('ODD "names"__output_table')"#).map { $0.map(\.1) }
    #expect(
      columns == [
        [.text("order"), .text("INTEGER")], [.text("say \"hi\""), .text("TEXT")], [.text("with space"), .text("REAL")],
        [.text("страна"), .text("TEXT")],
      ])
  }

  @Test func aSecondLoadReplacesRowsInsteadOfAddingThem() throws {
    let folder = TemporaryDirectory()
    let store = try Store(path: folder.path + "/db.sqlite")
    let scheme = ResourceScheme(name: "R", outputs: [.init(name: "t", columns: [.init(name: "id", type: "BIGINT")])])
    let answer = try folder.write("a.json", #"[{"name":"t","data":[[1],[2],[3]]}]"#)
    _ = try store.load(file: answer, scheme: scheme, params: .object([]), delta: false, info: .init())
    let again = try store.load(file: answer, scheme: scheme, params: .object([]), delta: false, info: .init())
    #expect(again.rowCounts == ["t": 3])
  }

  @Test func namesEqualApartFromCaseAreRefusedBeforeAnythingIsCreated() throws {
    let folder = TemporaryDirectory()
    let store = try Store(path: folder.path + "/db.sqlite")
    let scheme = ResourceScheme(
      name: "R", outputs: [.init(name: "t", columns: [.init(name: "ID", type: "BIGINT"), .init(name: "id", type: "TEXT")])])
    #expect(
      throws: StoreError.badScheme(
        resource: "R",
        reason: "output table 't' has columns 'ID' and 'id', which SQLite cannot tell apart (names differ only in letter case)")
    ) {
      try store.createTables(for: scheme)
    }
    #expect(try store.database.tableExists("R__t") == false)
  }

  @Test func aFailedLoadLeavesThePreviousRows() throws {
    let folder = TemporaryDirectory()
    let store = try Store(path: folder.path + "/db.sqlite")
    let scheme = ResourceScheme(
      name: "R", outputs: [.init(name: "t", columns: [.init(name: "id", type: "BIGINT"), .init(name: "v", type: "TEXT")])])
    let good = try folder.write("good.json", #"[{"name":"t","data":[[1,"a"],[2,"b"]]}]"#)
    _ = try store.load(file: good, scheme: scheme, params: .object([]), delta: false, info: .init())
    let bad = try folder.write("bad.json", #"[{"name":"t","data":[[1,"a"],[2]]}]"#)
    do {
      _ = try store.load(file: bad, scheme: scheme, params: .object([]), delta: false, info: .init())
      Issue.record("the short row was accepted")
    } catch let error as LoadError {
      #expect(error.description == "resource R, table t, row 2, column 2: the row has 1 values; the table has 2 columns")
    }
    let count = try store.database.rows("SELECT count(*) FROM R__t").first?.first?.1
    #expect(count == .integer(2))
  }
}
