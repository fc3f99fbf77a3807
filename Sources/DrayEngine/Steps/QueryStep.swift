internal import DrayModel
internal import DrayStore
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
    let failures = Expectations.check(options.expect, firstRow: firstRow, columns: columns)
    if failures.count == 1 { throw StepError.expectation("expectation failed: \(failures[0])") }
    if failures.count > 1 { throw StepError.expectation("\(failures.count) expectations failed: \(failures.joined(separator: "; "))") }
    try recordCheckpoint(report, status: .succeeded)
  }
}

/// The `expect` conditions of a query step.
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
        if order == nil || order! == (isMin ? -1 : 1) { failures.append("\(column) = \(show(value)), \(wanted)") }
      }
      if let equals = expectation.equals, !same(value, equals) {
        failures.append("\(column) = \(show(value)), expected \(equals.json)")
      }
    }
    return failures
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
