internal import DrayModel
internal import DrayTarget
internal import Foundation

extension StepRunner {
  /// `query`: runs one SQL statement (with `{{ table ... }}` references), writes its rows to
  /// `output` in the step's format (`RowWriter`), then checks `expect` against the first
  /// row. The file is written before the check, so a failed expectation leaves the rows to
  /// look at; the step then fails naming the column, the condition and the value:
  /// `expectation failed: n = 12, expected at least 200`.
  func runQuery(_ options: QueryStep, _ report: inout StepReport) throws {
    let folder = try jobFolder()
    let destination = try options.output.map { try folder.output($0, role: "output") }
    let store = try openStore()
    let sql = try render(options.sql, store: store)
    // Statements that would change dray's own tables are refused when prepared; what
    // follows the first statement is never run.
    var count = 0
    var columns: [String] = []
    var firstRow: [(String, SQLValue)]?
    var writer: RowWriter?
    do {
      try store.query(
        sql,
        columns: { names in
          columns = names
          writer = try destination.map { try RowWriter(format: options.format, columns: names, file: OutputFile(path: $0)) }
        },
        row: { row in
          if firstRow == nil { firstRow = Array(zip(columns, row)) }
          count += 1
          try writer?.write(row.map(RowWriter.json))
        })
    } catch let refusal as UserSQLError {
      throw StepError(refusal)
    }
    try writer?.finish()
    // Rows count as written only when they go to a file; otherwise the count is a note, so
    // that the run's total stays the rows it wrote.
    if let output = options.output {
      report.rows = [output: count]
      report.outputs = [try folder.check(output, role: "output")]
    } else {
      report.notes.append("the query returned \(HumanUnits.counted(count, "row"))")
    }
    if let error = Expectations.error(Expectations.check(options.expect, firstRow: firstRow, columns: columns)) { throw error }
    try recordCheckpoint(report, status: .succeeded)
  }
}

/// The `expect` conditions of a query step, and of a load (`table_stream`, `http`).
///
/// Numbers compare by their exact value (`ExactNumber`): an INTEGER with an integer bound
/// as integers, so 9223372036854775807 is not "at most 9223372036854775806"; a REAL with an
/// integer without rounding either. A REAL infinity is a number, shown `Infinity`.
enum Expectations {
  /// What fails, one sentence per condition: `n = 12, expected at least 200`.
  static func check(_ expectations: [Expectation], firstRow: [(String, SQLValue)]?, columns: [String]) -> [String] {
    var failures: [String] = []
    for expectation in expectations {
      let column = expectation.column
      guard let row = firstRow else {
        failures.append("the query returned no rows, expected \(column) \(conditions(expectation))")
        continue
      }
      guard let value = row.first(where: { $0.0 == column })?.1 else {
        failures.append("the query has no column '\(column)' (its columns: \(columns.joined(separator: ", ")))")
        continue
      }
      for (bound, isMin) in [(expectation.min, true), (expectation.max, false)] {
        guard let bound else { continue }
        let wanted = "expected \(isMin ? "at least" : "at most") \(bound)"
        guard let n = number(value) else {
          failures.append("\(column) = \(show(value)) is not a number, \(wanted)")
          continue
        }
        let order = ExactNumber.compare(n, bound)
        if order == nil || order == (isMin ? -1 : 1) { failures.append("\(column) = \(show(value)), \(wanted)") }
      }
      if let equals = expectation.equals, !same(value, equals) {
        failures.append("\(column) = \(show(value)), expected \(equals.json)")
      }
    }
    return failures
  }

  /// The step's error for `failures`, nil when there are none:
  /// `expectation failed: n = 12, expected at least 200`, or `2 expectations failed: …; …`,
  /// between `prefix` and `suffix`.
  static func error(_ failures: [String], prefix: String = "", suffix: String = "") -> StepError? {
    switch failures.count {
    case 0: nil
    case 1: .expectation("\(prefix)expectation failed: \(failures[0])\(suffix)")
    default: .expectation("\(prefix)\(failures.count) expectations failed: \(failures.joined(separator: "; "))\(suffix)")
    }
  }

  /// Checks a load's `expect` against `table` as the load's own transaction sees it, before
  /// it commits (write, audit, publish): `rows` against the table's row count (for a delta,
  /// the rows after applying it); any other name against the table's column of that name,
  /// `min` its smallest value, `max` its largest, `equals` both (SQL's `min()` and `max()`,
  /// which skip NULLs; a column with no value gives null, which meets no bound).
  /// - Returns: what fails, one sentence per condition: `rows = 3, expected at least 1000`,
  ///   `min(price) = -2, expected at least 0`, `the table has no column 'prise' (its
  ///   columns: id, price)`.
  /// - Throws: `SQLiteError`.
  static func check(_ expectations: [Expectation], table: String, in transaction: any StoreTransaction) throws -> [String] {
    guard !expectations.isEmpty else { return [] }
    let columns = try transaction.columns(ofTable: table)
    var failures: [String] = []
    // Each condition on one figure: `rows`, `min(price)`, `max(price)`, with its aggregate.
    var figures: [(label: String, aggregate: TableAggregate)] = [("rows", TableAggregate(.count, of: nil))]
    var conditions: [Expectation] = []
    func figure(_ function: TableAggregate.Function, _ column: String) -> String {
      let label = "\(function.rawValue)(\(column))"
      if !figures.contains(where: { $0.label == label }) { figures.append((label, TableAggregate(function, of: column))) }
      return label
    }
    for e in expectations {
      if e.column == "rows" {
        conditions.append(e)
        continue
      }
      guard let column = columns.first(where: { IdentifierKey($0) == IdentifierKey(e.column) }) else {
        let found = columns.isEmpty ? "the load had no records, so there is no table" : "its columns: \(columns.joined(separator: ", "))"
        failures.append("the table has no column '\(e.column)' (\(found))")
        continue
      }
      if e.min != nil || e.equals != nil { conditions.append(Expectation(column: figure(.min, column), min: e.min, equals: e.equals)) }
      if e.max != nil || e.equals != nil { conditions.append(Expectation(column: figure(.max, column), max: e.max, equals: e.equals)) }
    }
    // A table a load did not create (no records, no declared columns) has no rows.
    let row = columns.isEmpty ? [SQLValue.integer(0)] : try transaction.aggregates(ofTable: table, figures.map(\.aggregate))
    let values = zip(figures, row).map { ($0.label, $1) }
    return failures + check(conditions, firstRow: values, columns: figures.map(\.label))
  }

  /// The error for a load whose `tables` fail `expectations`, checked inside the load's
  /// transaction; nil when every table passes. The caller throws it there, so the load rolls
  /// back and readers keep the old tables:
  /// `table items: expectation failed: rows = 3, expected at least 1000; nothing was published: …`.
  /// - Throws: `SQLiteError`.
  static func audit(_ expectations: [Expectation], tables: [String], in transaction: any StoreTransaction) throws -> StepError? {
    for table in tables {
      let failures = try check(expectations, table: table, in: transaction)
      if let error = error(
        failures, prefix: "table \(table): ",
        suffix: "; nothing was published: the load was rolled back and the table keeps its previous rows")
      {
        return error
      }
    }
    return nil
  }

  /// `at least 200 and at most 300`.
  static func conditions(_ e: Expectation) -> String {
    var parts: [String] = []
    if let min = e.min { parts.append("at least \(min)") }
    if let max = e.max { parts.append("at most \(max)") }
    if let equals = e.equals { parts.append("= \(equals.json)") }
    return parts.joined(separator: " and ")
  }

  /// A value's number: INTEGER and REAL values, and TEXT that is a JSON number (RFC 8259)
  /// once ASCII spaces around it are trimmed (`' 12 '` is 12; `'inf'`, `'0x10'`, `'1e'` are
  /// not numbers).
  static func number(_ value: SQLValue) -> ExactNumber? {
    switch value {
    case .integer(let i): .integer(i)
    case .real(let d): .real(d)
    case .text(let s):
      ExactNumber(jsonNumber: String(Substring(s).drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()))
    case .null, .blob: nil
    }
  }

  /// Whether a query value equals an expected JSON value: numbers by their exact value
  /// (SQLite has no booleans, so `true` is 1), everything else as its JSON form exactly.
  static func same(_ value: SQLValue, _ expected: JSONValue) -> Bool {
    switch (value, expected) {
    case (.integer, .integer), (.integer, .number), (.integer, .bool), (.real, .integer), (.real, .number), (.real, .bool):
      guard let a = number(value), let b = ExactNumber(expected) else { return false }
      return ExactNumber.compare(a, b) == 0
    default:
      return RowWriter.json(value) == expected
    }
  }

  /// A value as the output file shows it (`3`, `"apple"`, `null`), with a REAL infinity,
  /// which JSON cannot hold, as `Infinity` or `-Infinity`.
  static func show(_ value: SQLValue) -> String {
    if case .real(let d) = value, d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
    return RowWriter.json(value).json
  }
}
