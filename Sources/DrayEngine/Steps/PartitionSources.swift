internal import DrayModel
internal import DrayTarget
internal import Foundation

extension StepRunner {
  /// The partitions of the step, in order: the `list` given, one per row of the `rows` query
  /// (run on `store`, the job's database, with `{{ table ... }}` as in `sql` steps; each
  /// column's name is a placeholder name), or the `window`s.
  /// - Throws: `PartitionError.rowsQuery` for a query that fails, `.rowsNoColumn` for one
  ///   without a column, `.rowsColumnTwice` for two columns of one name, `.rowsColumnUnused`
  ///   for a column no placeholder of the step uses, `.rowsValue` for a NULL or a blob,
  ///   `.window` for a window that gives none.
  func partitionList(_ partitions: Partitions, store: (any TargetStore)?) throws -> [Partition] {
    switch partitions.source {
    case .list(let list): return list
    case .window(let window):
      do {
        return try window.bounds().map { Partition([("window_start", $0.start), ("window_end", $0.end)]) }
      } catch {
        throw PartitionError.window(step: step.id, message: error.description)
      }
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
      if let twice = names.enumerated().first(where: { names[..<$0.offset].contains($0.element) })?.element {
        throw PartitionError.rowsColumnTwice(step: step.id, column: twice)
      }
      if let first = list.first, let unused = unusedNames(first).first {
        throw PartitionError.rowsColumnUnused(step: step.id, column: unused, columns: names)
      }
      return list
    }
  }

  /// The names of `partition` that no placeholder of the step uses: another value for the
  /// name fills the step's settings alike. Empty when the step cannot be filled with
  /// `partition` (`memberStep` says why).
  func unusedNames(_ partition: Partition) -> [String] {
    partition.values.map(\.name).filter { name in
      let other = Partition(partition.values.map { (name: $0.name, value: $0.name == name ? $0.value + "\u{1}" : $0.value) })
      switch step.kind {
      case .http(let options):
        guard let filled = try? options.filled(with: partition) else { return false }
        return (try? options.filled(with: other)) == filled
      case .tableStream(let options):
        guard let filled = try? options.filled(with: partition) else { return false }
        return (try? options.filled(with: other)) == filled
      default: return false
      }
    }
  }
}
