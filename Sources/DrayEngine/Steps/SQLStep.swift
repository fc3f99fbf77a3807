internal import DrayJSON
internal import DrayModel
internal import DrayTarget
internal import Foundation

extension StepRunner {
  /// `sql`: renders `{{ table ... }}` references and runs the statements in one
  /// transaction with the step's checkpoint.
  func runSQL(_ options: SQLStep, _ report: inout StepReport) throws {
    let store = try openStore()
    let sql = try render(options.sql, store: store)
    var statements: [(sql: String, changes: Int)] = []
    let finished = report
    do {
      try context.databaseWrites.withLock { _ in
        try store.write { transaction in
          statements = try transaction.execute(userSQL: sql)
          var done = finished
          done.statements = statements
          try transaction.record(checkpoint(done, status: .succeeded))
          CrashPoint.reach("before-commit:\(step.id)")
        }
      }
    } catch let refusal as UserSQLError {
      throw StepError(refusal)
    }
    report.statements = statements
  }

  /// The SQL with each `{{ table "R" "T" [params] }}` replaced by the store's quoted name
  /// of the physical table.
  /// - Throws: `StepError.tableNotLoaded` when the table does not exist.
  func render(_ sql: String, store: any TargetStore) throws -> String {
    let template = try SQLTemplate(parsing: sql)
    return try template.render { reference in
      let params = try reference.paramsJSON.map { try JSONValue(parsing: $0) } ?? .object([])
      guard let name = try store.tableReference(resource: reference.resource, table: reference.table, params: params) else {
        // A table the resource's stored scheme does not list is a misspelt name, not a load to run first.
        if let outputs = try store.scheme(for: reference.resource)?.outputs.map(\.name), !outputs.contains(reference.table) {
          throw StepError.unknownTable(resource: reference.resource, table: reference.table, tables: outputs)
        }
        let physical = store.naming.physicalName(resource: reference.resource, table: reference.table, params: params)
        throw StepError.tableNotLoaded(resource: reference.resource, table: reference.table, physical: physical)
      }
      return name
    }
  }
}
