internal import DrayModel
internal import DrayTarget
internal import Foundation

extension StepRunner {
  /// The partitions of the step, in order: the `list` given, one per row of the `rows` query
  /// (run on `store`, the job's database, with `{{ table ... }}` as in `sql` steps; each
  /// column's name is a placeholder name), or the `window`s.
  /// - Throws: `PartitionError.rowsQuery` for a query that fails, `.rowsNoColumn` for one
  ///   without a column, `.rowsValue` for a NULL or a blob, `.window` for a window that
  ///   gives none.
  func partitionList(_ partitions: Partitions, store: (any TargetStore)?) throws -> [Partition] {
    switch partitions.source {
    case .list(let list): return list
    case .window(let window): return try PartitionWindows.partitions(window, step: step.id)
    case .rows(let sql):
      guard let store else { throw StepError.settingMissing("step '\(step.id)' needs a 'database' for partitions.rows") }
      var names: [String] = []
      var list: [Partition] = []
      do {
        let rendered = try render(sql, store: store)
        try store.query(
          rendered, columns: { names = $0 },
          row: { row in
            var values: [(name: String, value: String)] = []
            for (name, value) in zip(names, row) {
              switch value {
              case .text(let text): values.append((name, text))
              case .integer(let number): values.append((name, String(number)))
              case .real(let number):
                values.append((name, number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)))
              case .null, .blob:
                throw PartitionError.rowsValue(step: step.id, row: list.count + 1, column: name, value: value == .null ? "NULL" : "a blob")
              }
            }
            list.append(Partition(values))
          })
      } catch let error as PartitionError {
        throw error
      } catch let refusal as UserSQLError {
        throw PartitionError.rowsQuery(step: step.id, message: StepError(refusal).description)
      } catch {
        throw PartitionError.rowsQuery(step: step.id, message: context.database.failure(error)?.message ?? "\(error)")
      }
      if names.isEmpty { throw PartitionError.rowsNoColumn(step: step.id) }
      return list
    }
  }
}

/// The windows of `partitions.window`: consecutive half-open `[window_start, window_end)`,
/// from `start`, each `every` long, the last cut at `end`; bounds written in the form
/// `start` and `end` are given in (a date `2024-01-01`, or an RFC 3339 instant written in
/// UTC). Months are calendar months: a window from January 31 ends on the last day of
/// February.
enum PartitionWindows {
  static func partitions(_ window: Partitions.Window, step: String) throws -> [Partition] {
    let dateOnly = !window.start.contains("T") && !window.end.contains("T")
    guard let start = parse(window.start), let end = parse(window.end) else {
      throw PartitionError.window(step: step, message: "start and end must be dates (2024-01-01) or RFC 3339 instants")
    }
    guard start < end else { throw PartitionError.window(step: step, message: "start \(window.start) is not before end \(window.end)") }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
    var list: [Partition] = []
    var index = 0
    var lower = start
    while lower < end {
      index += 1
      let next: Date? =
        switch window.every {
        case .days(let days) where days > 0: calendar.date(byAdding: .day, value: days * index, to: start)
        case .months(let months) where months > 0: calendar.date(byAdding: .month, value: months * index, to: start)
        default: nil
        }
      guard let next, next > lower else { throw PartitionError.window(step: step, message: "every must be longer than zero") }
      let upper = min(next, end)
      list.append(Partition([("window_start", format(lower, dateOnly: dateOnly)), ("window_end", format(upper, dateOnly: dateOnly))]))
      lower = upper
    }
    return list
  }

  private static func parse(_ text: String) -> Date? {
    if !text.contains("T") {
      let formatter = DateFormatter()
      formatter.locale = Locale(identifier: "en_US_POSIX")
      formatter.timeZone = TimeZone(identifier: "UTC")
      formatter.dateFormat = "yyyy-MM-dd"
      return formatter.date(from: text)
    }
    let formatter = ISO8601DateFormatter()
    if let date = formatter.date(from: text) { return date }
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
  }

  private static func format(_ date: Date, dateOnly: Bool) -> String {
    if dateOnly {
      let formatter = DateFormatter()
      formatter.locale = Locale(identifier: "en_US_POSIX")
      formatter.timeZone = TimeZone(identifier: "UTC")
      formatter.dateFormat = "yyyy-MM-dd"
      return formatter.string(from: date)
    }
    return ISO8601DateFormatter().string(from: date)
  }
}
