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
    var prepared: [Statement] = []
    try store.database.forEachStatement(sql) { prepared.append($0) }
    guard prepared.count == 1, let statement = prepared.first else {
      throw StepError.unsupported(
        prepared.isEmpty
          ? "the query holds no SQL statement"
          : "a query runs one statement; this one holds \(prepared.count): use a sql step for the others")
    }
    let columns = (0..<statement.columnCount).map { statement.columnName($0) }
    var writer = try destination.map { try RowWriter(format: options.format, columns: columns, file: OutputFile(path: $0)) }
    var first: [(String, JSONValue)]?
    var count = 0
    while try statement.step() {
      let values = (0..<statement.columnCount).map { RowWriter.json(statement.value($0)) }
      if first == nil { first = Array(zip(columns, values)) }
      count += 1
      try writer?.write(values)
    }
    try writer?.finish()
    report.rows = [options.output ?? "query": count]
    if let output = options.output { report.outputs = [try folder.check(output, role: "output")] }
    let failures = Expectations.check(options.expect, firstRow: first, columns: columns)
    if failures.count == 1 { throw StepError.expectation("expectation failed: \(failures[0])") }
    if failures.count > 1 { throw StepError.expectation("\(failures.count) expectations failed: \(failures.joined(separator: "; "))") }
    try recordCheckpoint(report, status: .succeeded)
  }
}

/// The `expect` conditions of a query step.
enum Expectations {
  /// What fails, one sentence per condition: `n = 12, expected at least 200`.
  static func check(_ expectations: [Expectation], firstRow: [(String, JSONValue)]?, columns: [String]) -> [String] {
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
      if let min = expectation.min {
        if let n = number(value) {
          if n < min { failures.append("\(column) = \(show(value)), expected at least \(show(min))") }
        } else {
          failures.append("\(column) = \(show(value)) is not a number, expected at least \(show(min))")
        }
      }
      if let max = expectation.max {
        if let n = number(value) {
          if n > max { failures.append("\(column) = \(show(value)), expected at most \(show(max))") }
        } else {
          failures.append("\(column) = \(show(value)) is not a number, expected at most \(show(max))")
        }
      }
      if let equals = expectation.equals, !same(value, equals) {
        failures.append("\(column) = \(show(value)), expected \(show(equals))")
      }
    }
    return failures
  }

  /// `at least 200 and at most 300`.
  static func conditions(_ e: Expectation) -> String {
    var parts: [String] = []
    if let min = e.min { parts.append("at least \(show(min))") }
    if let max = e.max { parts.append("at most \(show(max))") }
    if let equals = e.equals { parts.append("= \(show(equals))") }
    return parts.joined(separator: " and ")
  }

  /// A value's number: integers and reals, and text that reads as a number.
  static func number(_ value: JSONValue) -> Double? {
    switch value {
    case .integer(let i): Double(i)
    case .number(let text): Double(text)
    case .string(let s): Double(s.trimmingCharacters(in: .whitespaces))
    case .bool(let b): b ? 1 : 0
    default: nil
    }
  }

  /// Whether a query value equals an expected JSON value: numbers by value (SQLite has no
  /// booleans, so `true` is 1), everything else exactly.
  static func same(_ value: JSONValue, _ expected: JSONValue) -> Bool {
    switch (value, expected) {
    case (.integer, .integer), (.integer, .number), (.number, .integer), (.number, .number), (.integer, .bool), (.number, .bool):
      return number(value) == number(expected)
    default:
      return value == expected
    }
  }

  static func show(_ value: JSONValue) -> String { value.json }

  static func show(_ number: Double) -> String {
    number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : "\(number)"
  }
}
