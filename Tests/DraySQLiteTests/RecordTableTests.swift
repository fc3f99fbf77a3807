import DrayModel
import DraySQLite
import DrayTarget
import DrayTestSupport
import Testing

@Suite struct RecordTableTests {
  let folder = TemporaryDirectory()

  func shape(_ database: Database, _ table: String) throws -> [String] {
    try database.rows("SELECT name, type FROM pragma_table_info(?)", [.text(table)]).map { "\(try $0["name"]) \(try $0["type"])" }
  }

  func rows(_ database: Database, _ sql: String) throws -> [[SQLValue]] {
    try database.rows(sql).map(\.values)
  }

  @Test func typesOnlyWidenAndRowsSurviveARebuild() throws {
    let database = try Database(path: folder.path + "/t.sqlite")
    let table = try RecordTable(database: database, name: "odd \"name\"")
    try table.prepare([("id", .integer), ("price", .integer), ("note", nil)])
    try table.insert([("id", .integer(1)), ("price", .integer(2)), ("note", .null)])
    #expect(try shape(database, "odd \"name\"") == ["id INTEGER", "price INTEGER", "note "])
    // Page 2: a decimal price, a text note, a new column, a name in other case.
    try table.prepare([("ID", .integer), ("price", .real), ("note", .text), ("code", .text)])
    try table.insert([("ID", .integer(2)), ("price", .real(2.5)), ("note", .text("n")), ("code", .text("C-2"))])
    #expect(try shape(database, "odd \"name\"") == ["id INTEGER", "price REAL", "note TEXT", "code TEXT"])
    #expect(
      try rows(database, #"SELECT id, price, typeof(price), note, code FROM "odd ""name""" ORDER BY id"#) == [
        [.integer(1), .real(2), .text("real"), .null, .null], [.integer(2), .real(2.5), .text("real"), .text("n"), .text("C-2")],
      ])
    // Declared columns are not widened.
    try table.prepare([("price", .text)], widen: false)
    #expect(try shape(database, "odd \"name\"")[1] == "price REAL")
  }

  @Test func publishingKeepsTheTargetsIndexesWhenItsShapeIsTheSame() throws {
    let database = try Database(path: folder.path + "/t.sqlite")
    let first = try RecordTable(database: database, name: "_stage")
    try first.prepare([("id", .integer), ("name", nil)])
    try first.insert([("id", .integer(1)), ("name", .null)])
    #expect(try first.publish(into: "items") == 1)
    #expect(try shape(database, "items") == ["id INTEGER", "name TEXT"])
    #expect(try !database.tableExists("_stage"))
    try database.execute("CREATE INDEX items_id ON items(id)")

    let second = try RecordTable(database: database, name: "_stage")
    try second.prepare([("id", .integer), ("name", .text)])
    for i in 2...3 { try second.insert([("id", .integer(Int64(i))), ("name", .text("n\(i)"))]) }
    #expect(try second.publish(into: "items") == 2)
    #expect(try rows(database, "SELECT id FROM items ORDER BY id") == [[.integer(2)], [.integer(3)]])
    #expect(try rows(database, "SELECT count(*) FROM sqlite_schema WHERE name = 'items_id'") == [[.integer(1)]])

    // Another shape: the target is made again.
    let third = try RecordTable(database: database, name: "_stage")
    try third.prepare([("id", .integer), ("name", .text), ("extra", .real)])
    try third.insert([("id", .integer(4)), ("extra", .real(1))])
    #expect(try third.publish(into: "items") == 1)
    #expect(try shape(database, "items") == ["id INTEGER", "name TEXT", "extra REAL"])

    // Nothing staged: the target is emptied, its shape kept.
    #expect(try RecordTable(database: database, name: "_stage").publish(into: "items") == 0)
    #expect(try shape(database, "items") == ["id INTEGER", "name TEXT", "extra REAL"])
  }
}
