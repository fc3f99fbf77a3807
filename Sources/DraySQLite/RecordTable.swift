public import DrayModel
public import DrayTarget

/// SQLite's staging table (`StagedTable`): a table that records are loaded into, and the
/// columns it holds.
///
/// Every method works inside the caller's transaction; nothing here commits. Identifiers are
/// quoted, values bound. Column names match as SQLite matches identifiers (`IdentifierKey`):
/// byte for byte, without regard to ASCII case; `é` and `e` with a combining accent are two
/// columns.
///
/// Types only widen: a column created INTEGER that meets REAL values becomes REAL (NUMERIC
/// when it holds an integer a double cannot hold exactly, and a REAL column becomes NUMERIC
/// when such an integer arrives), and one that meets any other mix becomes TEXT (`ColumnType.join`). SQLite cannot change a column's
/// declared type in place, so widening rebuilds the table (copy out, recreate, copy back). A
/// column that has held only nulls is declared without a type until a value arrives.
public final class RecordTable: StagedTable {
  public let database: Database
  public let name: String
  /// The table's columns and declared types (nil: no type yet), in order; empty when the
  /// table does not exist.
  public private(set) var columns: [(name: String, type: ColumnType?)] = []
  private var positions: [IdentifierKey: Int] = [:]
  private var insert: Statement?

  /// Most columns SQLite allows in a table by default (SQLITE_MAX_COLUMN).
  public static let maxColumns = 2000

  /// Reads the shape of table `name` in `database`, if it exists.
  public init(database: Database, name: String) throws {
    self.database = database
    self.name = name
    try readShape()
  }

  public var exists: Bool { !columns.isEmpty }

  private func readShape() throws {
    columns = try database.rows("SELECT name, type FROM pragma_table_info(?)", [.text(name)]).map { row in
      let columnName = if case .text(let s) = try row["name"] { s } else { "" }
      let declared = if case .text(let s) = try row["type"] { s.uppercased() } else { "" }
      return (columnName, ColumnType(rawValue: declared))
    }
    positions = [:]
    for (i, column) in columns.enumerated() { positions[IdentifierKey(column.name)] = i }
    insert = nil
  }

  /// Makes the table hold `wanted`: creates it, adds missing columns, and (when `widen`)
  /// widens a column whose type cannot hold the wanted one.
  /// - Throws: `StagingRefusal` past SQLite's column limit; `SQLiteError`.
  public func prepare(_ wanted: [(name: String, type: ColumnType?)], widen: Bool = true) throws {
    if !exists {
      guard !wanted.isEmpty else { return }
      try create(wanted)
      return
    }
    var target = columns
    var rebuild = false
    for column in wanted {
      let key = IdentifierKey(column.name)
      if let i = positions[key] {
        var joined = ColumnType.join(target[i].type, column.type)
        // Staged integers a double cannot hold exactly make it NUMERIC, never REAL (which rounds them).
        if joined == .real && target[i].type == .integer, try holdsInexactIntegers(target[i].name) { joined = .numeric }
        if widen && joined != target[i].type {
          target[i].type = joined
          rebuild = true
        }
      } else {
        target.append(column)
        positions[key] = target.count - 1
      }
    }
    guard target.count <= RecordTable.maxColumns else {
      throw StagingRefusal("the records have \(target.count) columns; SQLite allows at most \(RecordTable.maxColumns) in table '\(name)'")
    }
    if rebuild {
      try self.rebuild(as: target)
    } else {
      for column in target.dropFirst(columns.count) {
        try database.execute("ALTER TABLE \(Database.quote(name)) ADD COLUMN \(RecordTable.definition(column))")
      }
    }
    try readShape()
  }

  private func create(_ wanted: [(name: String, type: ColumnType?)]) throws {
    var seen: Set<IdentifierKey> = []
    var unique: [(name: String, type: ColumnType?)] = []
    for column in wanted where seen.insert(IdentifierKey(column.name)).inserted { unique.append(column) }
    guard unique.count <= RecordTable.maxColumns else {
      throw StagingRefusal("the records have \(unique.count) columns; SQLite allows at most \(RecordTable.maxColumns) in table '\(name)'")
    }
    try database.execute("CREATE TABLE \(Database.quote(name)) (\(unique.map(RecordTable.definition).joined(separator: ", ")))")
    try readShape()
  }

  /// Recreates the table with `target`'s columns and types, keeping its rows.
  private func rebuild(as target: [(name: String, type: ColumnType?)]) throws {
    let copy = Database.quote("_dray_widen")
    let names = columns.map { Database.quote($0.name) }.joined(separator: ", ")
    try database.execute(
      """
      DROP TABLE IF EXISTS temp.\(copy);
      CREATE TEMP TABLE \(copy) AS SELECT \(names) FROM main.\(Database.quote(name));
      DROP TABLE main.\(Database.quote(name));
      CREATE TABLE main.\(Database.quote(name)) (\(target.map(RecordTable.definition).joined(separator: ", ")));
      INSERT INTO main.\(Database.quote(name)) (\(names)) SELECT \(names) FROM temp.\(copy);
      DROP TABLE temp.\(copy);
      """)
  }

  /// Whether column `column` holds an integer beyond ±2^53 (`ColumnType.doubleHolds`).
  private func holdsInexactIntegers(_ column: String) throws -> Bool {
    let quoted = Database.quote(column)
    let bound = ColumnType.exactDoubleIntegers
    let rows = try database.rows(
      "SELECT 1 AS found FROM \(Database.quote(name)) WHERE typeof(\(quoted)) = 'integer' AND (\(quoted) > \(bound) OR \(quoted) < -\(bound)) LIMIT 1"
    )
    return !rows.isEmpty
  }

  static func definition(_ column: (name: String, type: ColumnType?)) -> String {
    Database.quote(column.name) + (column.type.map { " " + $0.rawValue } ?? "")
  }

  /// Inserts one record; its columns must be in the table (see `prepare`). A column the
  /// record does not name is NULL. The readers never hand over a record with two names that
  /// differ only in case (`RecordNames`).
  /// - Throws: `StagingRefusal` when the table does not exist: no record so far gave a value
  ///   (`{}`, an empty element) and no columns were declared, so there is no column to load.
  public func insert(_ record: [(name: String, value: SQLValue)]) throws {
    guard exists else {
      throw StagingRefusal(
        "the records have no values (such as {} or an empty element), so there is no column to load them into; "
          + "declare 'columns' under 'load' to load such records as rows of NULLs")
    }
    // An integer a double cannot hold exactly widens a REAL column to NUMERIC: REAL would round it.
    for (columnName, value) in record {
      guard case .integer(let v) = value, !ColumnType.doubleHolds(v), let i = positions[IdentifierKey(columnName)],
        columns[i].type == .real
      else { continue }
      try prepare([(columns[i].name, .numeric)], widen: true)
    }
    let statement: Statement
    if let insert {
      statement = insert
      statement.reset()
    } else {
      let names = columns.map { Database.quote($0.name) }.joined(separator: ", ")
      let marks = Array(repeating: "?", count: columns.count).joined(separator: ", ")
      statement = try database.prepare("INSERT INTO \(Database.quote(name)) (\(names)) VALUES (\(marks))")
      insert = statement
    }
    for (columnName, value) in record {
      guard let i = positions[IdentifierKey(columnName)] else {
        throw StagingRefusal("column '\(columnName)' is not in table '\(name)'")
      }
      let index = Int32(i + 1)
      switch value {
      case .null: try statement.bindNull(at: index)
      case .integer(let v): try statement.bindInteger(v, at: index)
      // Into TEXT, a real keeps its shortest digits that read back as the same double:
      // SQLite's own conversion keeps 15 (0.30000000000000004 would become 0.3).
      case .real(let v) where columns[i].type == .text: try statement.bind(.text("\(v)"), at: index)
      case .real(let v): try statement.bindReal(v, at: index)
      case .text, .blob: try statement.bind(value, at: index)
      }
    }
    _ = try statement.step()
  }

  public func forEachRow(_ body: ([SQLValue]) throws -> Void) throws {
    guard exists else { return }
    let names = columns.map { Database.quote($0.name) }.joined(separator: ", ")
    let select = try database.prepare("SELECT \(names) FROM \(Database.quote(name)) ORDER BY rowid")
    while try select.step() { try body((0..<columns.count).map(select.value)) }
  }

  /// Rows in the table.
  public func count() throws -> Int {
    guard exists else { return 0 }
    guard case .integer(let n)? = try database.rows("SELECT count(*) AS n FROM \(Database.quote(name))").first?["n"] else { return 0 }
    return Int(n)
  }

  /// Replaces the rows of table `target` with this table's and drops this table.
  ///
  /// When `target` has the same columns and types, its rows are deleted and this table's
  /// copied in, so its indexes, triggers and the views on it stay; otherwise it is dropped
  /// and created again with this table's columns (columns without a type become TEXT).
  /// When this table does not exist (no records, no declared columns), `target` is emptied
  /// if it exists and left alone otherwise.
  /// - Returns: the rows `target` holds.
  @discardableResult
  public func publish(into target: String) throws -> Int {
    let destination = try RecordTable(database: database, name: target)
    guard exists else {
      if destination.exists { try database.execute("DELETE FROM \(Database.quote(target))") }
      return 0
    }
    let shape = columns.map { (name: $0.name, type: $0.type ?? .text) }
    let same =
      destination.columns.count == shape.count
      && zip(destination.columns, shape).allSatisfy { IdentifierKey($0.name) == IdentifierKey($1.name) && $0.type == $1.type }
    let names = columns.map { Database.quote($0.name) }.joined(separator: ", ")
    if same {
      try database.execute("DELETE FROM \(Database.quote(target))")
    } else {
      try database.execute(
        """
        DROP TABLE IF EXISTS \(Database.quote(target));
        CREATE TABLE \(Database.quote(target)) (\(shape.map { RecordTable.definition(($0.name, $0.type)) }.joined(separator: ", ")));
        """)
    }
    try database.execute("INSERT INTO \(Database.quote(target)) (\(names)) SELECT \(names) FROM \(Database.quote(name))")
    try drop()
    return try RecordTable(database: database, name: target).count()
  }

  /// Deletes every row of the table, if it exists.
  public func deleteRows() throws {
    guard exists else { return }
    try database.execute("DELETE FROM \(Database.quote(name))")
  }

  /// Drops the table if it exists.
  public func drop() throws {
    insert = nil
    try database.execute("DROP TABLE IF EXISTS \(Database.quote(name))")
    columns = []
    positions = [:]
  }
}
