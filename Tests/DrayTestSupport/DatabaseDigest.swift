internal import DrayModel
internal import DrayStore
internal import Foundation

/// What an SQLite database holds, table by table, for comparing two databases: each table's
/// schema, row count, count of distinct rows, and SHA-256 of its rows sorted by every
/// column and rendered canonically (typed values, so `1`, `1.0` and `'1'` differ).
public struct DatabaseDigest: Equatable, Sendable, CustomStringConvertible {
  public struct Table: Equatable, Sendable {
    public var schema: String
    public var rows: Int
    public var distinctRows: Int
    public var sha256: String
  }

  /// Digests by table name.
  public var tables: [String: Table]

  /// Tables that differ between any two runs by design: the run journal.
  public static let journalTables: Set<String> = ["_dray_runs", "_dray_checkpoints"]
  /// Columns that hold the time of a load or fetch.
  public static let timeColumns: [String: Set<String>] = ["_dray_tables": ["loaded_at"], "_dray_resources": ["fetched_at"]]

  /// Reads the database at `path` (read-only).
  /// - Parameters:
  ///   - skipping: tables left out (and `sqlite_*` tables always).
  ///   - ignoringColumns: columns left out, by table.
  public init(
    path: String, skipping: Set<String> = DatabaseDigest.journalTables,
    ignoringColumns: [String: Set<String>] = DatabaseDigest.timeColumns
  ) throws {
    let database = try Database(path: path, create: false, readOnly: true)
    tables = [:]
    let names = try database.rows("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
    for row in names {
      guard case .text(let name) = row[0].1, !name.hasPrefix("sqlite_"), !skipping.contains(name) else { continue }
      let schema = if case .text(let sql) = row[1].1 { sql } else { "" }
      let ignored = ignoringColumns[name] ?? []
      let columns = try database.rows("SELECT name FROM pragma_table_info(?)", [.text(name)]).compactMap {
        if case .text(let column) = $0[0].1, !ignored.contains(column) { Database.quote(column) } else { nil }
      }
      let list = columns.joined(separator: ", ")
      let order = (1...max(1, columns.count)).map(String.init).joined(separator: ", ")
      let statement = try database.prepare("SELECT \(list) FROM \(Database.quote(name)) ORDER BY \(order)")
      var text = ""
      var count = 0
      while try statement.step() {
        count += 1
        for index in 0..<columns.count {
          if index > 0 { text += "|" }
          text += DatabaseDigest.render(statement.value(index))
        }
        text += "\n"
      }
      let distinct = try database.rows("SELECT count(*) FROM (SELECT DISTINCT \(list) FROM \(Database.quote(name)))")
      let distinctRows = if case .integer(let n)? = distinct.first?.first?.1 { Int(n) } else { -1 }
      tables[name] = Table(schema: schema, rows: count, distinctRows: distinctRows, sha256: SHA256.hex(text))
    }
  }

  static func render(_ value: SQLValue) -> String {
    switch value {
    case .null: "n"
    case .integer(let i): "i\(i)"
    case .real(let d): "r\(String(d.bitPattern, radix: 16))"
    case .text(let s): "t\(s.utf8.count):\(s)"
    case .blob(let b): "b" + b.map { String(format: "%02x", $0) }.joined()
    }
  }

  /// Lines naming each table that is missing on one side or differs, with how.
  public func differences(from expected: DatabaseDigest) -> [String] {
    var out: [String] = []
    for name in Set(tables.keys).union(expected.keys).sorted() {
      switch (tables[name], expected.tables[name]) {
      case (nil, _): out.append("\(name): missing")
      case (_, nil): out.append("\(name): not expected")
      case (let got?, let want?) where got != want:
        var what: [String] = []
        if got.schema != want.schema { what.append("schema differs") }
        if got.rows != want.rows { what.append("\(got.rows) rows, expected \(want.rows)") }
        if got.distinctRows != got.rows { what.append("\(got.rows - got.distinctRows) duplicate rows") }
        if got.sha256 != want.sha256 { what.append("checksum \(got.sha256.prefix(12)), expected \(want.sha256.prefix(12))") }
        out.append("\(name): " + what.joined(separator: "; "))
      default: break
      }
    }
    return out
  }

  public var description: String {
    tables.keys.sorted().map { "\($0): \(tables[$0]!.rows) rows, sha256 \(tables[$0]!.sha256.prefix(12))" }.joined(separator: "\n")
  }
}

extension DatabaseDigest {
  fileprivate var keys: Dictionary<String, Table>.Keys { tables.keys }
}
